// Random fanned sums of taps (P40's and P46's property tests, tests/eval/bound/sums/lhs_strip_sums_test.cc and
// tests/eval/bound/sums/target_instances_test.cc).
#pragma once

#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "eval/model/problem.h"

namespace annealer::testing {

// A sum of taps whose output fans out (n = 4): A (M x Ka, a graph input or Pointwise-made) -> m
// taps A @ W_i (Ka x K) -> their sum s (sometimes with a residual graph input) -> 0 to 2
// Pointwise ops -> p, then one of
//  - SL fan-out: 1 to 3 MatMuls p @ V_i (K <= n, a V sometimes shared), sometimes also a residual
//    add of p and a graph input, its ReLU the LHS of one more MatMul;
//  - FL: p @ W' (K x K2, K up to 2n) -> a Pointwise op -> F = . @ V (K2 <= n x NF), so that the
//    sum may run FL through W''s MatMul upstream of F's k-loop (and SL when K <= n), sometimes
//    with a pooling MatMul reading the Pointwise op's output as RHS (rows not the tile's);
//  - with `chained` (P47's test, half the draws): the next convolution, 2 or 3 taps p @ V_i
//    (K <= n x K2) summed, 0 or 1 Pointwise op, the LHS of F (K2 x NF), so that the taps, the
//    sum's targets, may run upstream of F's k-loop and the sum FL;
// every MatMul's output through 0 or 1 Pointwise op to a graph output. Topological ids.
// With `wide` (P55's test) A is 4 to 12 rows of 2 to 8 columns and an FL sum 4 to 8 wide, so that
// some taps have K > n, some such A fit the memory (a tap may find it retained) beside tap outputs
// that do not.
inline Problem FannedNets(std::mt19937_64& rng, bool chained = false, bool wide = false) {
  auto pick = [&](std::vector<Elements> v) { return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)]; };
  auto coin = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  Problem problem;
  problem.native = 4;
  auto tensor = [&](Elements h, Elements w) {
    problem.tensors.push_back({w, h});
    return static_cast<TensorId>(problem.tensors.size() - 1);
  };
  const double mm_base = static_cast<double>(pick({8, 14, 20})), pw_base = static_cast<double>(pick({1, 3, 5}));
  auto op = [&](OpKind kind, std::vector<TensorId> in, TensorId out) {
    problem.ops.push_back({kind, std::move(in), out, kind == OpKind::MatMul ? mm_base : pw_base});
  };
  const auto tail = [&](TensorId y, Elements h, Elements w) {
    if (coin(0.5)) op(OpKind::Pointwise, {y}, tensor(h, w));
  };
  const bool full_left = coin(0.5);
  const bool chain = chained && coin(0.5);
  const Elements M = wide ? pick({4, 4, 6, 8, 12}) : pick({8, 12, 16, 20}), Ka = wide ? pick({2, 4, 5, 6, 8}) : pick({2, 4}),
                 K = full_left && !chain ? (wide ? pick({4, 6, 8}) : pick({2, 4, 6, 8})) : pick({2, 3, 4});
  TensorId a = tensor(M, Ka);
  if (coin(wide ? 0.8 : 0.5)) {
    const TensorId made = tensor(M, Ka);
    op(OpKind::Pointwise, {a}, made);
    a = made;
  }
  const int m = static_cast<int>(pick({1, 2, 3, 4, 6}));
  std::vector<TensorId> outs;
  for (int i = 0; i < m; ++i) {
    const TensorId w = tensor(Ka, K), o = tensor(M, K);
    op(OpKind::MatMul, {a, w}, o);
    outs.push_back(o);
  }
  if (coin(0.2)) outs.push_back(tensor(M, K));
  TensorId p = tensor(M, K);
  op(OpKind::Pointwise, outs, p);
  for (int c = static_cast<int>(pick({0, 1, 2})); c > 0; --c) {
    const TensorId q = tensor(M, K);
    op(OpKind::Pointwise, {p}, q);
    p = q;
  }
  if (chain) {
    const Elements k2 = pick({2, 3, 4}), nf = pick({2, 4, 8});
    std::vector<TensorId> taps;
    for (int i = static_cast<int>(pick({2, 3})); i > 0; --i) {
      taps.push_back(tensor(M, k2));
      op(OpKind::MatMul, {p, tensor(K, k2)}, taps.back());
    }
    TensorId q = tensor(M, k2);
    op(OpKind::Pointwise, taps, q);
    if (coin(0.5)) {
      const TensorId relu = tensor(M, k2);
      op(OpKind::Pointwise, {q}, relu);
      q = relu;
    }
    const TensorId f = tensor(M, nf);
    op(OpKind::MatMul, {q, tensor(k2, nf)}, f);
    tail(f, M, nf);
  } else if (!full_left) {
    const int fans = static_cast<int>(pick({1, 2, 3}));
    TensorId shared = -1;
    for (int i = 0; i < fans; ++i) {
      const Elements nf = pick({2, 4, 8});
      TensorId v = tensor(K, nf);
      if (i > 0 && coin(0.3) && problem.tensors[shared].width == nf) v = shared;
      shared = v;
      const TensorId f = tensor(M, nf);
      op(OpKind::MatMul, {p, v}, f);
      tail(f, M, nf);
    }
    if (fans == 1 || coin(0.5)) {
      const TensorId r = tensor(M, K), relu = tensor(M, K);
      op(OpKind::Pointwise, {p, tensor(M, K)}, r);
      op(OpKind::Pointwise, {r}, relu);
      const Elements nf = pick({2, 4});
      const TensorId f = tensor(M, nf);
      op(OpKind::MatMul, {relu, tensor(K, nf)}, f);
      tail(f, M, nf);
    }
  } else {
    const Elements k2 = pick({2, 4}), nf = pick({2, 4, 8});
    const TensorId x = tensor(M, k2), q = tensor(M, k2);
    op(OpKind::MatMul, {p, tensor(K, k2)}, x);
    op(OpKind::Pointwise, {x}, q);
    const TensorId f = tensor(M, nf);
    op(OpKind::MatMul, {q, tensor(k2, nf)}, f);
    tail(f, M, nf);
    if (coin(0.3)) {
      const TensorId pooled = tensor(1, k2);
      op(OpKind::MatMul, {tensor(1, M), q}, pooled);
    }
  }
  problem.fast_memory_capacity =
      static_cast<Elements>(std::uniform_real_distribution<double>(1.5, 2.5)(rng) * problem.native * problem.native);
  problem.slow_memory_bandwidth = static_cast<double>(pick({1, 1, 2}));
  REQUIRE(problem.Finalize().empty());
  return problem;
}

}  // namespace annealer::testing
