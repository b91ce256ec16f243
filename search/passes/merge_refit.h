// A pass over a finished schedule: each subgraph refitted thoroughly in its context, and each
// pair of neighbours tried as one subgraph at a thorough fit (docs/search.md, "Refit and merge
// at every tile side").
//
// The workers' fits try tile sides that are powers of two; the thorough fit of the starts' polish
// also tries the sides between them that divide their dimension (FCN-ResNet50's 784 rows: 196).
// Two neighbours that cost more merged at powers of two may cost less merged at such a side
// (FCN-ResNet50's `conv3` with its residual sum on `tpu-v1`: 86,353 + 149,536 apart, 192,713
// merged at [256, 196, 256]), and a merge move never sees it. Polish would re-decide every
// retention, undoing what the serving passes built; this pass keeps each subgraph's retained-in
// and retain sets (the merged pair keeps the first's retained-in and the second's retain).
#pragma once

#include <functional>

#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"

namespace annealer {

// In schedule order: subgraph i refitted (thorough, from its granularity), committed if the total
// falls; then i and i + 1 merged (their ops in topological order) and fitted thorough, committed
// if the total falls (and i tried again with its new neighbour). Only where MergeReadersApplies
// (never on a contest problem); `stop` is polled between subgraphs.
Schedule MergeAndRefit(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                       const std::function<bool()>& stop);

}  // namespace annealer
