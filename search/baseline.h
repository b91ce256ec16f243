// The baseline schedule: every op in its own subgraph, in topological order, at the
// granularity and traversal that price it lowest, retaining nothing.
#pragma once

#include "eval/problem.h"
#include "eval/schedule.h"

namespace annealer {

class CostCache;

// Always valid when the problem admits any schedule of single-op subgraphs; throws
// std::runtime_error naming the op when some op fits at no granularity. With `cache` the
// candidates are priced through it (the same answers as CostSubgraph): on a graph of repeated
// layers each layer's ops are then priced once, by their shapes (a hundred pricings per op,
// which at 10,000 ops delayed the first schedule on disk by a third of a second).
Schedule BuildBaseline(const Problem& problem, CostCache* cache = nullptr);

}  // namespace annealer
