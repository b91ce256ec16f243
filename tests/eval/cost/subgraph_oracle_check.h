// One subgraph priced by a fast path, checked against the oracle in the same
// context: verdict, broken rule and its message, latency, compute and memory
// time, peak working set, tiles and k-steps. Shared by the property tests of
// the fast subgraph cost and of context reuse, so that "agrees with the oracle"
// means the same thing in both.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "eval/oracle.h"
#include "eval/cost/subgraph_cost.h"

namespace annealer::testing {

inline bool Close(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b));
}

// Returns whether the oracle found the subgraph valid.
inline bool ExpectSameAsOracle(const Problem &problem, const Subgraph &subgraph,
                               const std::vector<TensorId> &retained_in,
                               const SubgraphResult &fast,
                               const std::string &what) {
  const SubgraphResult oracle =
      EvaluateSubgraphOracle(problem, subgraph, retained_in);
  INFO(what);
  INFO("oracle: " << oracle.violation.Message() << " latency "
                  << oracle.report.latency);
  INFO("fast:   " << fast.violation.Message() << " latency "
                  << fast.report.latency);
  CHECK(fast.verdict == oracle.verdict);
  CHECK(fast.violation.rule == oracle.violation.rule);
  CHECK(fast.violation.detail == oracle.violation.detail);
  CHECK(Close(fast.report.latency, oracle.report.latency));
  CHECK(Close(fast.report.compute_time, oracle.report.compute_time));
  CHECK(Close(fast.report.memory_time, oracle.report.memory_time));
  CHECK(fast.report.peak_working_set == oracle.report.peak_working_set);
  CHECK(fast.report.tiles == oracle.report.tiles);
  CHECK(fast.report.k_steps == oracle.report.k_steps);
  return oracle.ok();
}

} // namespace annealer::testing
