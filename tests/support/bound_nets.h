// Random problems that more than one of the lower bound's test files draw: layered networks,
// transformer blocks, convolutions, upstream weights, sums of MatMuls and taps (the parts' tests
// under tests/eval/bound/ and the sharing test of tests/eval/bound/bounds_test.cc).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "eval/model/problem.h"
#include "tests/support/problem_maker.h"

namespace annealer::testing {

// Layers as a network lowers them: per layer a Pointwise op (an activation) and a MatMul with a
// weight, K above native (so the Pointwise op cannot feed it inside one subgraph, P1) and base
// costs that make some layers compute-heavy and others weight-heavy: islands of every balance.
inline Problem RandomLayers(std::mt19937_64& rng) {
  auto pick = [&](std::vector<Elements> v) {
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  };
  Problem problem;
  problem.native = 4;
  auto tensor = [&](Elements h, Elements w) {
    problem.tensors.push_back({w, h});
    return static_cast<TensorId>(problem.tensors.size() - 1);
  };
  const Elements rows = pick({4, 8, 12});
  Elements cols = pick({8, 12});
  TensorId x = tensor(rows, cols);
  const int layers = static_cast<int>(pick({1, 2, 3, 4}));
  for (int l = 0; l < layers; ++l) {
    const TensorId y = tensor(rows, cols);
    problem.ops.push_back({OpKind::Pointwise, {x}, y, static_cast<double>(pick({1, 10, 50, 200}))});
    const Elements next = pick({4, 8, 12});
    const TensorId w = tensor(cols, next);
    const TensorId z = tensor(rows, next);
    problem.ops.push_back({OpKind::MatMul, {y, w}, z, static_cast<double>(pick({1, 5, 40}))});
    x = z;
    cols = next;
  }
  problem.fast_memory_capacity = 16 * pick({64, 4096});
  problem.slow_memory_bandwidth = static_cast<double>(pick({1, 2, 8}));
  REQUIRE(problem.Finalize() == "");
  return problem;
}

// Transformer blocks at a small scale: LayerNorm-like Pointwise ops, Q/V projections and an MLP
// whose weights are graph inputs with reductions above native (few row tiles: rows up to twice
// native), attention MatMuls with short reductions, residual adds joining the blocks; base costs
// and bandwidth mixed so that some MatMuls stream more weight than they compute (P14's heavy ops)
// and others hide it. Optionally a Layout op (a transpose) on the way to K^T.
inline Problem RandomBlocks(std::mt19937_64& rng) {
  testing::ProblemMaker make{rng};
  Problem& problem = make.problem;
  problem.native = 4;
  const Elements rows = make.Pick({3, 4, 6, 8});
  const Elements d = make.Pick({8, 12});
  const Elements dh = make.Pick({2, 4, 6});
  const Elements hidden = d * make.Pick({2, 3});
  const double mm[] = {make.PickReal({0.5, 2, 8}), make.PickReal({1, 4, 16, 64})};
  auto mm_cost = [&]() { return mm[std::uniform_int_distribution<int>(0, 1)(rng)]; };
  auto pw_cost = [&]() { return make.PickReal({0, 0.5, 2, 8}); };
  TensorId x = make.Tensor(rows, d);
  const int blocks = static_cast<int>(make.Pick({1, 2, 3}));
  const bool layout = std::uniform_int_distribution<int>(0, 2)(rng) == 0;
  for (int b = 0; b < blocks; ++b) {
    const TensorId ln1 = make.Op(OpKind::Pointwise, {x}, rows, d, pw_cost());
    const TensorId q = make.Op(OpKind::MatMul, {ln1, make.Tensor(d, dh)}, rows, dh, mm_cost());
    TensorId kt;
    if (layout) {
      const TensorId k = make.Op(OpKind::MatMul, {ln1, make.Tensor(d, dh)}, rows, dh, mm_cost());
      kt = make.Op(OpKind::Layout, {k}, dh, rows, 0);
    } else {
      kt = make.Tensor(dh, rows);  // a graph input
    }
    const TensorId s = make.Op(OpKind::MatMul, {q, kt}, rows, rows, mm_cost());
    const TensorId p = make.Op(OpKind::Pointwise, {s}, rows, rows, pw_cost());
    const TensorId v = make.Op(OpKind::MatMul, {ln1, make.Tensor(d, dh)}, rows, dh, mm_cost());
    const TensorId o = make.Op(OpKind::MatMul, {p, v}, rows, dh, mm_cost());
    const TensorId proj = make.Op(OpKind::MatMul, {o, make.Tensor(dh, d)}, rows, d, mm_cost());
    const TensorId r1 = make.Op(OpKind::Pointwise, {x, proj}, rows, d, pw_cost());
    const TensorId ln2 = make.Op(OpKind::Pointwise, {r1}, rows, d, pw_cost());
    const TensorId h = make.Op(OpKind::MatMul, {ln2, make.Tensor(d, hidden)}, rows, hidden, mm_cost());
    const TensorId g = make.Op(OpKind::Pointwise, {h}, rows, hidden, pw_cost());
    const TensorId y = make.Op(OpKind::MatMul, {g, make.Tensor(hidden, d)}, rows, d, mm_cost());
    x = make.Op(OpKind::Pointwise, {r1, y}, rows, d, pw_cost());
  }
  make.AtRealRatios();
  REQUIRE(problem.Finalize() == "");
  return problem;
}

// P18's pattern at a small scale: convolution-like layers, g MatMuls X @ W_j (W_j graph inputs)
// sharing one LHS X, summed by one Pointwise op (an optional residual), an activation that makes
// the next layer's X; reductions below, at or above native; a memory of 1.5 to 4 native tiles.
inline Problem RandomConvs(std::mt19937_64& rng) {
  testing::ProblemMaker make{rng};
  Problem& problem = make.problem;
  problem.native = make.Pick({4, 8});
  const Elements n = problem.native;
  const Elements rows = n * make.Pick({1, 2, 3}) + make.Pick({0, 0, 1, 3});
  const double mm = make.PickReal({0.2, 2, 10, 40}), pw = make.PickReal({0, 1, 5});
  Elements k = make.Pick({n / 2, n, 2 * n, 3 * n});
  TensorId x = make.Tensor(rows, k);
  const int layers = static_cast<int>(make.Pick({1, 1, 2}));
  for (int l = 0; l < layers; ++l) {
    const Elements cols = make.Pick({n / 2, n, 2 * n});
    const int g = static_cast<int>(make.Pick({1, 2, 3, 4}));
    std::vector<TensorId> parts;
    for (int j = 0; j < g; ++j) parts.push_back(make.Op(OpKind::MatMul, {x, make.Tensor(k, cols)}, rows, cols, mm));
    if (g == 1 && l + 1 == layers) break;  // the MatMul's output is a graph output
    if (std::uniform_int_distribution<int>(0, 2)(rng) == 0) parts.push_back(make.Tensor(rows, cols));  // a residual
    // Sometimes an activation of one part read by the sum as well: made in the subgraph from a
    // tensor already there, it may cost the working set nothing.
    if (std::uniform_int_distribution<int>(0, 2)(rng) == 0) parts.push_back(make.Op(OpKind::Pointwise, {parts[0]}, rows, cols, pw));
    const TensorId sum = make.Op(OpKind::Pointwise, parts, rows, cols, pw);
    x = l + 1 == layers ? sum : make.Op(OpKind::Pointwise, {sum}, rows, cols, pw);
    k = cols;
  }
  const Elements tile = n * n;
  problem.fast_memory_capacity = tile * make.Pick({3, 4, 6, 8}) / 2;
  problem.slow_memory_bandwidth = make.PickReal({0.5, 1, 4});
  REQUIRE(problem.Finalize() == "");
  return problem;
}

// P22's pattern: a MatMul x = A @ W whose weight W (a graph input only x reads) may be too large
// to hold whole, its output through 0 to 2 Pointwise ops into the LHS of 1 or 2 k-loop MatMuls
// f = P @ V (reduction = x's width: below, at or above native), sometimes with an epilogue;
// sometimes x's output has a Pointwise reader or an RHS reader too (then x has other modes and
// P22 must claim nothing); A a graph input or made by a Pointwise op; a memory from half of |W|
// to four times it, at least 1.5 native tiles.
inline Problem UpstreamWeightNets(std::mt19937_64& rng) {
  testing::ProblemMaker make{rng};
  Problem& problem = make.problem;
  problem.native = make.Pick({4, 8});
  const Elements n = problem.native;
  const Elements rows = n * make.Pick({1, 2, 3}) + make.Pick({0, 0, 1, 3});
  const Elements kx = make.Pick({n / 2, n, 2 * n});
  const Elements d = make.Pick({n / 2, n, n + 2, 2 * n});
  const double mm = make.PickReal({0.5, 4, 20}), pw = make.PickReal({0, 1, 5});
  TensorId a = make.Tensor(rows, kx);
  if (make.Coin(3)) a = make.Op(OpKind::Pointwise, {a}, rows, kx, pw);
  const TensorId w = make.Tensor(kx, d);
  const TensorId x = make.Op(OpKind::MatMul, {a, w}, rows, d, mm);
  TensorId z = x;
  // Sometimes a second MatMul reads the same weight and their sum feeds the chain: both may make
  // the same strip in one subgraph and share each load of W (P22 must then claim nothing).
  if (make.Coin(4)) {
    const TensorId y = make.Op(OpKind::MatMul, {make.Tensor(rows, kx), w}, rows, d, mm);
    z = make.Op(OpKind::Pointwise, {x, y}, rows, d, pw);
  }
  const int chain = static_cast<int>(make.Pick({0, 1, 1, 2}));
  for (int i = 0; i < chain; ++i) z = make.Op(OpKind::Pointwise, {z}, rows, d, pw);
  const int readers = static_cast<int>(make.Pick({1, 2, 2}));
  for (int r = 0; r < readers; ++r) {
    const Elements cols = make.Pick({n / 2, n, 2 * n});
    const TensorId f = make.Op(OpKind::MatMul, {z, make.Tensor(d, cols)}, rows, cols, mm);
    if (make.Coin(3)) make.Op(OpKind::Pointwise, {f}, rows, cols, pw);
  }
  if (make.Coin(6)) make.Op(OpKind::Pointwise, {x}, rows, d, pw);
  if (make.Coin(6)) {
    const Elements q = make.Pick({2, n});
    make.Op(OpKind::MatMul, {make.Tensor(q, rows), x}, q, d, mm);
  }
  const Elements weight = kx * d;
  problem.fast_memory_capacity =
      std::max<Elements>(3 * n * n / 2, make.Pick({weight / 2, weight - 1, weight, weight + 1, 2 * weight, 4 * weight}));
  problem.slow_memory_bandwidth = make.PickReal({0.25, 1, 4});
  REQUIRE(problem.Finalize() == "");
  return problem;
}

// P23's pattern: MatMuls x_i = A @ W_i (1 to 6, reductions half, one or two native; W_i a weight
// of its own, sometimes shared by two or made by a Pointwise op; A a graph input or made by a
// Pointwise op) summed by a Pointwise op s, sometimes with a residual input or an activation of
// x_0 (then x_0's output has two readers); s's output a graph output, through a Pointwise op, or
// the LHS of a MatMul with K above native (s can only be T) or at most native (s may be an
// upstream strip producer, where P23 claims nothing); memories of 1.5 to 4 native tiles, so that
// the x_i's outputs are too large to retain in most problems. With `odd_sides`, heights and widths
// off every power of two, some below n (covering sides under H3).
inline Problem SumNets(std::mt19937_64& rng, bool odd_sides = false) {
  testing::ProblemMaker make{rng};
  Problem& problem = make.problem;
  problem.native = make.Pick({4, 8});
  const Elements n = problem.native;
  Elements rows = n * make.Pick({1, 2, 3, 3}) + make.Pick({0, 0, 1, 3});
  Elements cols = make.Pick({n / 2, n, 2 * n, 2 * n});
  if (odd_sides) {  // sides off the chip's bases, some within n (H3's covering sides)
    rows = make.Pick({n / 2 + 1, n - 1, n + 1, 2 * n + 3});
    cols = make.Pick({n / 2 + 1, n - 1, n - 2, n + 2, 2 * n + 1});
  }
  const Elements k = make.Pick({n / 2, n, n, 2 * n});
  const double mm = make.PickReal({0.2, 2, 10, 40, 40}), pw = make.PickReal({0, 1, 5});
  TensorId a = make.Tensor(rows, k);
  if (make.Coin(3)) a = make.Op(OpKind::Pointwise, {a}, rows, k, pw);
  const int m = static_cast<int>(make.Pick({1, 2, 3, 4, 5, 6}));
  std::vector<TensorId> parts;
  TensorId shared = -1;
  for (int i = 0; i < m; ++i) {
    TensorId w = make.Tensor(k, cols);
    if (make.Coin(8)) w = make.Op(OpKind::Pointwise, {w}, k, cols, pw);
    if (i > 0 && make.Coin(6)) w = shared;
    shared = w;
    parts.push_back(make.Op(OpKind::MatMul, {a, w}, rows, cols, mm));
  }
  if (make.Coin(3)) parts.push_back(make.Tensor(rows, cols));
  if (make.Coin(4)) parts.push_back(make.Op(OpKind::Pointwise, {parts[0]}, rows, cols, pw));
  TensorId z = make.Op(OpKind::Pointwise, parts, rows, cols, pw);
  // Sometimes a second group on the same A with a sum of its own, of the same shape: both sums
  // may be in mode T in one subgraph (two sinks), where their excesses share one weight.
  if (make.Coin(3)) {
    std::vector<TensorId> group;
    const int m2 = static_cast<int>(make.Pick({2, 3, 4}));
    for (int i = 0; i < m2; ++i) group.push_back(make.Op(OpKind::MatMul, {a, make.Tensor(k, cols)}, rows, cols, mm));
    make.Op(OpKind::Pointwise, group, rows, cols, pw);
  }
  const int after = static_cast<int>(make.Pick({0, 1, 2, 2, 3}));
  if (after == 1 || after == 3) z = make.Op(OpKind::Pointwise, {z}, rows, cols, pw);
  if (after >= 2) {
    const Elements width = make.Pick({n / 2, n});
    make.Op(OpKind::MatMul, {z, make.Tensor(cols, width)}, rows, width, mm);
  }
  problem.fast_memory_capacity = n * n * make.Pick({3, 3, 4, 6, 8}) / 2;
  problem.slow_memory_bandwidth = make.PickReal({0.5, 1, 4});
  REQUIRE(problem.Finalize() == "");
  return problem;
}

// P25's problems: a convolution's taps x_i = A @ W_i (a weight each, sometimes one shared: then no
// tap), summed by a Pointwise op (P23's priced sum when the sum can only be T), or some or all of
// them graph outputs read by nothing; A a graph input, a Pointwise chain (the hiders: one or two
// ops, sometimes with a second input) or a Pointwise op over an upstream MatMul; sometimes a second
// convolution on A of the same shape (co-sinks of another group); the sum's output a graph output,
// through a Pointwise op, or the LHS of a MatMul with K above native or at most native. Memories of
// 1.5 to 4 native tiles and cheap MatMuls, so that the taps' outputs are too large to retain and
// their writes and weight loads often outweigh their compute.
inline Problem TapNets(std::mt19937_64& rng) {
  testing::ProblemMaker make{rng};
  Problem& problem = make.problem;
  problem.native = make.Pick({4, 8});
  const Elements n = problem.native;
  const Elements rows = n * make.Pick({1, 2, 3}) + make.Pick({0, 0, 1, 3});
  const Elements cols = make.Pick({n / 2, n, n, 2 * n});
  const Elements k = make.Pick({n / 2, n, n, 2 * n});
  const double mm = make.PickReal({0.5, 2, 8, 30}), pw = make.PickReal({0, 5, 50, 200});
  problem.slow_memory_bandwidth = make.PickReal({0.5, 1, 4});
  // A base whose compute over the taps' shape is `ratio` times their output's transfer: hiders
  // that can just cover a tap's write and weight, or not.
  const auto matched = [&](double ratio) {
    const double tiles = static_cast<double>(((rows + n - 1) / n) * ((cols + n - 1) / n));
    return ratio * static_cast<double>(rows * cols) / problem.slow_memory_bandwidth / tiles;
  };
  TensorId a = make.Tensor(rows, k);
  const int lhs_kind = static_cast<int>(make.Pick({0, 1, 1, 2}));
  if (lhs_kind == 2) a = make.Op(OpKind::MatMul, {make.Tensor(rows, n / 2), make.Tensor(n / 2, k)}, rows, k, mm);
  if (lhs_kind >= 1) {
    std::vector<TensorId> in = {a};
    if (make.Coin(3)) in.push_back(make.Tensor(rows, k));
    a = make.Op(OpKind::Pointwise, in, rows, k, pw);
    if (make.Coin(2)) a = make.Op(OpKind::Pointwise, {a}, rows, k, pw);
  }
  const int m = static_cast<int>(make.Pick({1, 2, 3, 4}));
  std::vector<TensorId> parts;
  TensorId shared = -1;
  for (int i = 0; i < m; ++i) {
    TensorId w = make.Tensor(k, cols);
    if (i > 0 && make.Coin(6)) w = shared;
    shared = w;
    parts.push_back(make.Op(OpKind::MatMul, {a, w}, rows, cols, mm));
  }
  const int ending = static_cast<int>(make.Pick({0, 0, 1, 2}));
  if (ending == 2 && m > 1) parts.pop_back();  // the last tap a graph output
  if (ending != 1) {
    if (make.Coin(4)) parts.push_back(make.Tensor(rows, cols));
    TensorId z = make.Op(OpKind::Pointwise, parts, rows, cols, pw);
    const int after = static_cast<int>(make.Pick({0, 1, 2, 2, 3}));
    if (after == 1 || after == 3) z = make.Op(OpKind::Pointwise, {z}, rows, cols, pw);
    if (after >= 2) {
      const Elements width = make.Pick({n / 2, n});
      make.Op(OpKind::MatMul, {z, make.Tensor(cols, width)}, rows, width, mm);
    }
  }
  if (make.Coin(3)) {
    std::vector<TensorId> group;
    const int m2 = static_cast<int>(make.Pick({1, 2, 3}));
    const double mm2 = make.Coin(2) ? mm : matched(make.PickReal({0.5, 1, 1.5, 2, 3}));  // compute-heavy co-sinks, sometimes
    TensorId w2 = make.Tensor(k, cols);
    for (int i = 0; i < m2; ++i) {
      if (i == 0 || !make.Coin(3)) w2 = make.Tensor(k, cols);  // sometimes a weight two read
      group.push_back(make.Op(OpKind::MatMul, {a, w2}, rows, cols, mm2));
    }
    make.Op(OpKind::Pointwise, group, rows, cols, pw);
  }
  // A compute-heavy Pointwise reader of A of the taps' shape: a sink that may sit beside them.
  if (k == cols && make.Coin(2)) make.Op(OpKind::Pointwise, {a}, rows, k, matched(make.PickReal({0.5, 1, 1.5, 2, 3})));
  problem.fast_memory_capacity = n * n * make.Pick({3, 3, 4, 6, 8}) / 2;
  REQUIRE(problem.Finalize() == "");
  return problem;
}

}  // namespace annealer::testing
