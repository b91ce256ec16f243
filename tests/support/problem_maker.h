// Random problems for the bound's property tests (tests/eval/bound/, weight_path_test): the choices a
// generator draws and the tensors and ops it adds, each op with a fresh output tensor.
#pragma once

#include <random>
#include <utility>
#include <vector>

#include "eval/model/problem.h"

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
  // The property tests' real-chip ratios: a fast memory of 16, 64 or 4,096 native tiles and a
  // bandwidth of 0.25, 1 or 4 elements per time unit (drawn in that order).
  void AtRealRatios() {
    problem.fast_memory_capacity = problem.native * problem.native * Pick({16, 64, 4096});
    problem.slow_memory_bandwidth = PickReal({0.25, 1, 4});
  }
  // P16's fan-out (rows x d tensor `shared`): 2 to 6 readers, one in `pointwise_one_in` a
  // Pointwise op (it may share the producer's subgraph), the others MatMuls with a weight of
  // their own, each followed by nothing, a transpose (Layout) or a Pointwise op. Their outputs.
  std::vector<TensorId> Readers(TensorId shared, Elements rows, Elements d, int pointwise_one_in) {
    const int readers = static_cast<int>(Pick({2, 3, 4, 6}));
    std::vector<TensorId> outs;
    for (int r = 0; r < readers; ++r) {
      if (Coin(pointwise_one_in)) {
        outs.push_back(Op(OpKind::Pointwise, {shared}, rows, d, PickReal({0, 2})));
        continue;
      }
      const Elements width = Pick({4, 8});
      TensorId z = Op(OpKind::MatMul, {shared, Tensor(d, width)}, rows, width, PickReal({0, 0.5, 4, 16}));
      const int what = std::uniform_int_distribution<int>(0, 3)(rng);
      if (what == 1) z = Op(OpKind::Layout, {z}, width, rows, 0);
      if (what == 2) z = Op(OpKind::Pointwise, {z}, rows, width, PickReal({0, 2}));
      outs.push_back(z);
    }
    return outs;
  }
};

// Scales every op's base so that the problem's compute at native tiles is `ratio` times the time
// to move each of its tensors once (the real-chip ratios the bound tests draw); a problem
// without compute stays as it is. `problem` must be finalized.
inline void ScaleComputeToTraffic(Problem& problem, double ratio) {
  double moved = 0, compute = 0;
  for (const annealer::Tensor& t : problem.tensors) moved += static_cast<double>(t.size());
  for (OpId o = 0; o < static_cast<OpId>(problem.ops.size()); ++o) {
    compute += problem.ops[o].base_cost * static_cast<double>(problem.NativeTiles(o));
  }
  if (compute <= 0) return;
  for (annealer::Op& op : problem.ops) op.base_cost *= ratio * moved / problem.slow_memory_bandwidth / compute;
}

// P16's hand case (tests/eval/bound/islands/crossing_test.cc, weight_path_test): a Pointwise op P
// (X -> A, 8x8, base 100) read by `heads` MatMuls A @ W_j -> K_j (W_j graph inputs 8 high, 4 wide;
// base 0), native 4, capacity 4096, bandwidth 1, a weight path of `weight_bandwidth` when positive.
// Not finalized.
inline Problem SharedInputHeads(int heads, double weight_bandwidth = 0) {
  Problem p;
  p.native = 4;
  p.tensors.push_back({8, 8});  // X
  p.tensors.push_back({8, 8});  // A
  p.ops.push_back({OpKind::Pointwise, {0}, 1, 100});
  for (int j = 0; j < heads; ++j) {
    p.tensors.push_back({4, 8});  // W_j (width 4, height 8)
    p.tensors.push_back({4, 8});  // K_j
    const auto w = static_cast<TensorId>(p.tensors.size() - 2);
    p.ops.push_back({OpKind::MatMul, {1, w}, w + 1, 0});
  }
  p.fast_memory_capacity = 4096;
  p.slow_memory_bandwidth = 1;
  p.chip.weight_bandwidth = weight_bandwidth;
  return p;
}

}  // namespace annealer::testing
