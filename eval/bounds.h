// Lower bounds on the total latency of any valid schedule of a problem.
#pragma once

#include "eval/problem.h"

namespace annealer {

struct LowerBound {
  // Sum over ops of base_cost x native tiles of its output: no schedule computes less (spec C3).
  Latency compute = 0;
  // Every graph input must be loaded and every graph output written at least once.
  Latency graph_io = 0;
  // Each step costs max(compute, memory) >= either term, so the total is at least the larger.
  Latency total() const { return compute > graph_io ? compute : graph_io; }
};

LowerBound ComputeLowerBound(const Problem& problem);

}  // namespace annealer
