// A start pass that keeps for the next subgraph what it reads from the one before (docs/search.md,
// "Serve every loader and drop the writer").
//
// After the serve passes ViT-B/16's last value group on tpu-v1 runs right before the subgraph of
// the output projection, which reads the group's attention outputs: written by one, loaded by the
// other. Retaining them ([R1], [V8]) drops both transfers but asks the group for narrower tiles
// (the retained outputs share its fast memory), and the walk's retention toggle, which keeps the
// tiles, finds it only now and then.
#pragma once

#include <functional>

#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"

namespace annealer {

// For every subgraph i, the tensors it makes that subgraph i + 1 reads (not made there, not graph
// outputs, not retained yet) are added to i's retain set, both subgraphs refitted (i with the
// larger retain set, i + 1 with it retained in), and the same with subgraphs i + 1 and i + 2 merged
// into one; the better is committed where the whole schedule's total falls.
// Schedule order; `stop` is polled. Only where MergeReadersApplies (never on a contest problem).
Schedule RetainForNext(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                       const std::function<bool()>& stop);

}  // namespace annealer
