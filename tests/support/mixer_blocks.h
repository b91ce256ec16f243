// Transformer- and mixer-like blocks at a small scale, the random problems of P24's and P48's
// property tests (tests/eval/bound/traffic/perstep_test.cc), P50's (tests/eval/bound/islands/gather_windows_test.cc) and, for the token
// mixing, P26's (tests/eval/bound/traffic/first_instance_test.cc).
#pragma once

#include <doctest/doctest.h>

#include <random>

#include "eval/model/chip_rules.h"
#include "eval/model/problem.h"
#include "tests/support/problem_maker.h"

namespace annealer::testing {

// MLP-Mixer's token mixing on the residual stream x (m x d): a LayerNorm-like op, a transpose (a
// Layout op), a Pointwise op or a MatMul over the tokens, the transpose back and the residual add;
// returns the new stream. Draws in this order whatever it builds, so that callers' draws stay put.
inline TensorId TokenMixing(ProblemMaker& make, TensorId x, Elements m, Elements d) {
  const TensorId ln = make.Op(OpKind::Pointwise, {x}, m, d, make.PickReal({0, 4}));
  TensorId t = make.Op(OpKind::Layout, {ln}, d, m, 0);
  t = make.Coin(2) ? make.Op(OpKind::Pointwise, {t}, d, m, make.PickReal({1, 6}))
                   : make.Op(OpKind::MatMul, {t, make.Tensor(m, m)}, d, m, make.PickReal({1, 6}));
  t = make.Op(OpKind::Layout, {t}, m, d, 0);
  return make.Op(OpKind::Pointwise, {x, t}, m, d, make.PickReal({0, 1}));
}

// Transformer- and mixer-like blocks at a small scale (native 4): a residual stream X (M x d),
// per block an optional token mixing through two transposes (Layout ops) and a Pointwise op, a
// LayerNorm-like op, fc1 = LN(X) @ W1 (K = d > n) with one to three epilogue ops (some reading a
// bias, a graph input), fc2 = G @ W2 (K = h > n) with a bias and the residual add; blocks share
// their bases sometimes (fc2s of one class are then twins). A head sometimes: a mean over the rows
// (1 x M @ X, K = M <= n: every residual op and fc2 gets a strip mode, P13) and a classifier with a
// weight. The weight path at 0.3 to 3 times B, a FIFO unchecked, just large enough for strips, or
// below the whole weights; compute scaled by 0.1 to 10.
// With `stem` (P48's tests) the stream starts at X = P @ W0, P a graph input that only the stem
// reads (M x K0, K0 > n sometimes), with a bias epilogue sometimes: MLP-Mixer's patch embedding.
inline Problem Blocks(std::mt19937_64& rng, bool stem = false) {
  ProblemMaker make{rng};
  Problem& problem = make.problem;
  problem.native = 4;
  const Elements m = make.Pick({3, 4, 6, 8}), d = make.Pick({5, 8, 12}), h = make.Pick({6, 8, 16});
  const int blocks = static_cast<int>(make.Pick({1, 2, 3}));
  const bool same = make.Coin(2);
  const double b1 = make.PickReal({1, 8, 32}), b2 = make.PickReal({1, 8, 32});
  TensorId x = -1;
  if (stem) {
    const Elements k0 = make.Pick({3, 6, 8, 12});
    x = make.Op(OpKind::MatMul, {make.Tensor(m, k0), make.Tensor(k0, d)}, m, d, make.PickReal({1, 8, 32}));
    if (make.Coin(2)) x = make.Op(OpKind::Pointwise, {x, make.Tensor(m, d)}, m, d, make.PickReal({0, 2, 16}));
  } else {
    x = make.Tensor(m, d);
  }
  const bool tied = same && make.Coin(3);
  TensorId w2 = -1;
  for (int b = 0; b < blocks; ++b) {
    const double f1 = same ? b1 : make.PickReal({1, 8, 32}), f2 = same ? b2 : make.PickReal({1, 8, 32});
    if (make.Coin(2)) x = TokenMixing(make, x, m, d);
    const TensorId ln2 = make.Op(OpKind::Pointwise, {x}, m, d, make.PickReal({0, 4, 16}));
    TensorId g = make.Op(OpKind::MatMul, {ln2, make.Tensor(d, h)}, m, h, f1);
    const int epilogues = static_cast<int>(make.Pick({0, 1, 2, 3}));
    for (int e = 0; e < epilogues; ++e) {
      std::vector<TensorId> in = {g};
      if (make.Coin(3)) in.push_back(make.Tensor(m, h));  // a bias
      g = make.Op(OpKind::Pointwise, in, m, h, make.PickReal({0, 2, 16, 64}));
    }
    // Tied weights now and then: every fc2 reads one RHS (then no candidate: D5 would share it).
    if (b == 0 || !tied) w2 = make.Tensor(h, d);
    TensorId y = make.Op(OpKind::MatMul, {g, w2}, m, d, f2);
    if (make.Coin(2)) y = make.Op(OpKind::Pointwise, {y, make.Tensor(m, d)}, m, d, make.PickReal({0, 2}));
    x = make.Op(OpKind::Pointwise, {x, y}, m, d, make.PickReal({0, 1, 8}));
  }
  if (make.Coin(2)) {  // the head
    const TensorId ln = make.Op(OpKind::Pointwise, {x}, m, d, make.PickReal({0, 4}));
    const TensorId mean = make.Op(OpKind::MatMul, {make.Tensor(1, m), ln}, 1, d, make.PickReal({1, 4}));
    const Elements classes = make.Pick({4, 6});
    if (make.Coin(2)) make.Op(OpKind::MatMul, {mean, make.Tensor(d, classes)}, 1, classes, make.PickReal({1, 8}));
  }
  make.AtRealRatios();
  problem.chip.weight_bandwidth = problem.slow_memory_bandwidth * make.PickReal({0.3, 1, 3});
  problem.chip.weight_fifo_capacity = make.Pick({0, 16, 24, 40});
  REQUIRE(problem.Finalize() == "");
  REQUIRE(CheckChipRules(problem.chip, problem.native, problem.fast_memory_capacity).empty());
  return problem;
}

}  // namespace annealer::testing
