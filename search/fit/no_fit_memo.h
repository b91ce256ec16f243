// NoGranularityFits of an op list alone (no retained-in set, no retain set), remembered per
// thread. The reader-merging edits (MergeReadersAt, RegroupReaderPartsAt) ask it of every union
// they consider, and an annealing walk, whose moves are mostly rejected, draws the same subgraph
// and tensor again and again: on ViT-B/16 those questions cost ~5k instructions per move, most
// of them repeats. The answer is a function of the problem and the list, so a repeat is answered
// from the memo exactly; the walks stay the same.
#pragma once

#include <vector>

#include "search/fit/fit.h"

namespace annealer {

// NoGranularityFits(problem, ops, {}, {}), with `pricer` (a pricer of `problem`) naming the
// problem in the memo: a pricer's serial is never reused, whereas another problem may later sit
// at the same address.
bool NoGranularityFitsAlone(const SubgraphPricer& pricer, const Problem& problem, const std::vector<OpId>& ops);

}  // namespace annealer
