// Hand-made schedules for the start passes' tests: subgraphs of the given ops in order, each
// fitted in the context the retention before it gives.
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <vector>

#include "eval/model/schedule.h"
#include "search/subgraph_tools.h"

namespace annealer::testing {

// Subgraph g holds groups[g] and retains retain[g] (what g + 1 finds retained), fitted by
// FitSubgraph (`thorough` as the polish's fit); the test fails where a group has no valid fit.
inline Schedule FittedSchedule(const SubgraphPricer& pricer, const std::vector<std::vector<OpId>>& groups,
                               const std::vector<std::vector<TensorId>>& retain, bool thorough) {
  const std::function<bool()> never = [] { return false; };
  Schedule schedule;
  std::vector<TensorId> in;
  for (size_t g = 0; g < groups.size(); ++g) {
    auto fit = FitSubgraph(pricer, groups[g], in, retain[g], nullptr, thorough, never);
    INFO("group " << g);
    REQUIRE(fit.has_value());
    schedule.subgraphs.push_back(fit->subgraph);
    in = retain[g];
  }
  return schedule;
}

}  // namespace annealer::testing
