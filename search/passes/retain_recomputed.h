// A pass that retains a tensor where the next subgraph makes it again (docs/search.md, "Retain
// what the next subgraph recomputes").
//
// Where the readers of one tensor t are split between two adjacent subgraphs i-1 and i (a
// convolution's taps: some with the convolution before them, the rest with their sum), i runs t's
// producer again, or takes t retained from i-1 (t is read inside i-1, so nothing writes it to slow
// memory). No single move goes from the first to the second: a drop of the recomputed ops leaves
// t unavailable and the repair puts them back, and the retention toggle has no t to retain while
// i makes it. On ResNet-50's bottlenecks (ascend910-core) a block searched alone ended in either
// basin by its seed, 126k or 165k, with nothing between.
#pragma once

#include <functional>

#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"

namespace annealer {

// For each subgraph i > 0 (schedule order) that holds ops the subgraph before it holds too: those
// ops dropped from i, and every tensor that i then reads and i-1 makes retained by i-1 (both
// subgraphs fitted again, then polished as a pair: `partial_edge_tiles` as in Polish); committed
// when the whole schedule's total falls. Where that does not commit, all but the last of i-1's
// other readers of what the shared ops make (the taps i-1 runs) move to i as well, and i keeps
// its own retention or, where that does not fit or pay, writes it (the subgraph after i fitted
// again to load it; docs/search.md, "Move the taps where t and their outputs do not fit").
// Leaves the schedule as
// it is where no tensor has three or more reading ops (MergeReadersApplies: never on a contest
// problem). Deterministic; `stop` is polled between tries.
Schedule RetainRecomputed(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                          const std::function<bool()>& stop, bool partial_edge_tiles);

}  // namespace annealer
