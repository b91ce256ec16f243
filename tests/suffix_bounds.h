// The suffix check of RemainingLowerBound (the exact solver's A* heuristic, eval/bound/bounds.h), shared
// by the bound's property tests: after every prefix of a valid schedule, the ops not yet run are
// bounded by the latency of the subgraphs left (the empty suffix included).
#pragma once

#include <doctest/doctest.h>

#include <vector>

#include "eval/bound/bounds.h"
#include "eval/oracle.h"
#include "eval/model/problem.h"
#include "eval/model/schedule.h"

namespace annealer::testing {

inline void CheckSuffixBounds(const BoundModel& model, const Problem& problem, const Schedule& schedule,
                              const Evaluation& evaluation, double slack = 1e-9) {
  const size_t count = schedule.subgraphs.size();
  std::vector<Latency> suffix(count + 1, 0);
  for (size_t i = count; i-- > 0;) suffix[i] = suffix[i + 1] + evaluation.subgraphs[i].latency;
  std::vector<char> remaining(problem.ops.size(), 1);
  for (size_t i = 0; i <= count; ++i) {
    CAPTURE(i);
    CHECK(RemainingLowerBound(model, remaining) <= suffix[i] * (1 + slack));
    if (i < count) {
      for (OpId op : schedule.subgraphs[i].ops) remaining[op] = 0;
    }
  }
}

}  // namespace annealer::testing
