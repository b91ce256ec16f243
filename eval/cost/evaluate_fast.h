// A whole schedule by the fast path: each subgraph priced by CostSubgraph
// (eval/cost/subgraph_cost.h) or answered by the cost cache, then the rules of the sequence.
#pragma once

#include "eval/model/evaluation.h"
#include "eval/model/problem.h"
#include "eval/model/schedule.h"

namespace annealer {

class CostCache;

// A whole schedule by the fast path: every subgraph by CostSubgraph (or from `cache` when not
// null), then the sequence rules (V7, V1 coverage, V9) and the V13 warnings exactly as
// EvaluateOracle does. Same Evaluation as EvaluateOracle, latencies to rounding.
Evaluation EvaluateFast(const Problem& problem, const Schedule& schedule, CostCache* cache = nullptr);

}  // namespace annealer
