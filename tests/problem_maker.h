// Random problems for the bound's property tests (bounds_test, weight_path_test): the choices a
// generator draws and the tensors and ops it adds, each op with a fresh output tensor.
#pragma once

#include <random>
#include <utility>
#include <vector>

#include "eval/problem.h"

namespace annealer::testing {

struct ProblemMaker {
  std::mt19937_64& rng;
  Problem problem{};

  template <typename T>
  T Pick(const std::vector<T>& values) {
    return values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng)];
  }
  Elements Pick(const std::vector<Elements>& values) { return Pick<Elements>(values); }
  double PickReal(const std::vector<double>& values) { return Pick<double>(values); }
  bool Coin(int in) { return std::uniform_int_distribution<int>(0, in - 1)(rng) == 0; }  // 1 in `in`
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
  TensorId Tensor(Elements height, Elements width) {
    problem.tensors.push_back({width, height});
    return static_cast<TensorId>(problem.tensors.size() - 1);
  }
  // The op and its output, a new height x width tensor.
  TensorId Op(OpKind kind, std::vector<TensorId> inputs, Elements height, Elements width, double base) {
    const TensorId out = Tensor(height, width);
    problem.ops.push_back({kind, std::move(inputs), out, base});
    return out;
  }
};

}  // namespace annealer::testing
