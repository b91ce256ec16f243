// Hand-built problems and subgraphs for the evaluator's tests (oracle_test, layout_test): tensors
// and ops added one by one, finalized with a check.
#pragma once

#include <doctest/doctest.h>

#include <utility>
#include <vector>

#include "eval/model/problem.h"
#include "eval/model/schedule.h"

namespace annealer::testing {

struct GraphBuilder {
  Problem problem;
  GraphBuilder(Elements capacity, double bandwidth) {
    problem.fast_memory_capacity = capacity;
    problem.slow_memory_bandwidth = bandwidth;
  }
  TensorId Tensor(Elements height, Elements width) {
    problem.tensors.push_back({width, height});
    return static_cast<TensorId>(problem.tensors.size() - 1);
  }
  OpId Op(OpKind kind, std::vector<TensorId> inputs, TensorId output, double base) {
    problem.ops.push_back({kind, std::move(inputs), output, base});
    return static_cast<OpId>(problem.ops.size() - 1);
  }
  Problem Build() {
    REQUIRE(problem.Finalize().empty());
    return problem;
  }
};

inline Subgraph Sg(std::vector<OpId> ops, Granularity g, std::vector<TensorId> retain = {}) {
  Subgraph s;
  s.ops = std::move(ops);
  s.granularity = g;
  s.retain = std::move(retain);
  return s;
}

}  // namespace annealer::testing
