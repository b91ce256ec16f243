// The baseline schedule: every op in its own subgraph, in topological order, at the
// granularity and traversal that price it lowest, retaining nothing.
#pragma once

#include "eval/problem.h"
#include "eval/schedule.h"

namespace annealer {

// Always valid when the problem admits any schedule of single-op subgraphs; throws
// std::runtime_error naming the op when some op fits at no granularity.
Schedule BuildBaseline(const Problem& problem);

}  // namespace annealer
