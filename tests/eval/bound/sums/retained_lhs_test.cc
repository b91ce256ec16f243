// P39, a lone tap that reads its LHS retained (eval/bound/sums/taps/retained_lhs.h, docs/lower-bound.md
// "A lone tap with its LHS retained (P39)"): the price by hand and its effect on P33, the price
// never above the oracle's latency of such a tap's subgraph at every tile shape, and the bound
// with it never above the oracle on random sums of k-split taps at mlsys-2026-like ratios (a fast
// memory of about two native tiles, a native tile's load about one MatMul base).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include "eval/bound/bounds.h"
#include "eval/bound/sums/taps/lone_taps.h"
#include "eval/bound/sums/taps/retained_lhs.h"
#include "eval/oracle.h"
#include "eval/random_schedule.h"
#include "search/starts/baseline.h"
#include "tests/support/problem_maker.h"
#include "tests/support/sample_schedules.h"

namespace annealer {
namespace {

using bound_internal::g_retained_lhs;
using bound_internal::g_upstream_lone_sums;
using bound_internal::RetainedLhsAlone;
using bound_internal::UpstreamTapCompute;

// A0 (4 x 8, a graph input) -> ReLU p (base 1) -> A; three taps A @ W_i (W_i 8 x 4 graph inputs,
// K = 8 > n = 4, base 30) summed by s (base 1, 4 x 4, a graph output). Capacity 40, bandwidth 1:
// A (32) fits, so a tap alone may read it retained, but then only 8 elements are left for the
// RHS row and the output tile.
Problem RetainedTaps() {
  std::mt19937_64 rng(1);
  testing::ProblemMaker make{rng};
  make.problem.native = 4;
  const TensorId a = make.Op(OpKind::Pointwise, {make.Tensor(4, 8)}, 4, 8, 1);
  std::vector<TensorId> taps;
  for (int i = 0; i < 3; ++i) taps.push_back(make.Op(OpKind::MatMul, {a, make.Tensor(8, 4)}, 4, 4, 30));
  make.Op(OpKind::Pointwise, taps, 4, 4, 1);
  make.problem.fast_memory_capacity = 40;
  make.problem.slow_memory_bandwidth = 1;
  REQUIRE(make.problem.Finalize().empty());
  return make.problem;
}

TEST_CASE("P39 by hand: a tap whose retained LHS leaves 8 elements") {
  const Problem p = RetainedTaps();
  // r rows leave c = min(4, 8 / (r + 1)) columns: r = 1: 4 tiles (120), the RHS 4 times + the
  // output, 144; r = 2, 3: 2 x 2 tiles, 120, memory 80; r = 4: 1 x 4 tiles, 120, memory 48.
  CHECK(RetainedLhsAlone(p, 1) == doctest::Approx(120));
  // Capacity 45 leaves 13: r = 4, c = 2, 2 tiles, max(60, 48) = 60.
  Problem roomier = p;
  roomier.fast_memory_capacity = 45;
  REQUIRE(roomier.Finalize().empty());
  CHECK(RetainedLhsAlone(roomier, 1) == doctest::Approx(60));
  // Capacity 32: nothing beside A, no tile shape.
  Problem full = p;
  full.fast_memory_capacity = 32;
  REQUIRE(full.Finalize().empty());
  CHECK(std::isinf(RetainedLhsAlone(full, 1)));

  // P33: a tap alone at native tiles loading A costs max(30, 32 + 32 + 16) = 80, with A retained
  // 120, so 80 (P33 alone took A as read free: max(30, 48) = 48). Own loads: p 32 (A0), each tap
  // 32 (its W), s none (its write is its first instance's only if it writes it). The sum's lines
  // (one output may come retained, e = 1; P23's tile ratio 2 for every j at capacity 40):
  //   j = 0: a = 1: 1 + 1 + 2 x 50 = 102, a = 0: 2 x 16 + 2 x 48 = 128
  //   j = 1: 1 + 31 + 50 = 82, 16 + 48 = 64;  j = 2: 1 + 61 = 62, 0;  j = 3 (ratio 2): 92, 0.
  // With the other ops (a = 1: 2 + 90; a = 0: 32 + 96) the least line is j = 2's, 128 + 26 a:
  // 154 at a = 1. Without P39 (excesses 18 and 16): j = 0 is 192 - 62 a, crossing j = 2's at
  // a = 64 / 88: 128 + 26 x 64 / 88 = 146.909.
  const LowerBound bound = ComputeLowerBound(p);
  CHECK(bound.lone_tap_sums == 1);
  CHECK(bound.lone_taps == doctest::Approx(154));
  g_retained_lhs = false;
  const LowerBound before = ComputeLowerBound(p);
  g_retained_lhs = true;
  CHECK(before.lone_taps == doctest::Approx(128 + 26.0 * 64 / 88));
  // The baseline (every op alone, A written and loaded by each tap) is above both.
  const Evaluation b = EvaluateOracle(p, BuildBaseline(p));
  REQUIRE(b.ok());
  CHECK(b.total >= bound.total());
}

// Three taps A @ W_i (A 4 x 8 a graph input, W_i 8 x 4 each its own, K = 8 > n = 4, base 30)
// summed by s (base 1) whose ReLU r (base 1) is the RHS of a pooling MatMul y = P @ r (P 1 x 4,
// K = 4 = n, base 1; y's 1 x 4 output a graph output): s may make y's RHS strips (SR), never an
// LHS strip. Capacity 40, bandwidth 1.
Problem PooledTaps() {
  std::mt19937_64 rng(1);
  testing::ProblemMaker make{rng};
  make.problem.native = 4;
  const TensorId a = make.Tensor(4, 8);
  std::vector<TensorId> taps;
  for (int i = 0; i < 3; ++i) taps.push_back(make.Op(OpKind::MatMul, {a, make.Tensor(8, 4)}, 4, 4, 30));
  const TensorId sum = make.Op(OpKind::Pointwise, taps, 4, 4, 1);
  const TensorId relu = make.Op(OpKind::Pointwise, {sum}, 4, 4, 1);
  make.Op(OpKind::MatMul, {make.Tensor(1, 4), relu}, 1, 4, 1);
  make.problem.fast_memory_capacity = 40;
  make.problem.slow_memory_bandwidth = 1;
  REQUIRE(make.problem.Finalize().empty());
  return make.problem;
}

TEST_CASE("P39 by hand: a sum that may make a pooling MatMul's RHS strips") {
  const Problem p = PooledTaps();
  // j fused taps upstream of y hold j RHS slices 8 deep: columns <= floor(40 / 8j) = 5, 2, 1, so
  // a tap pays 30 (1 x 1 tiles), 60 (2 column tiles) or 120 (4).
  CHECK(UpstreamTapCompute(p, 0, 5) == doctest::Approx(30));
  CHECK(UpstreamTapCompute(p, 0, 2) == doctest::Approx(60));
  CHECK(UpstreamTapCompute(p, 0, 1) == doctest::Approx(120));
  // A tap alone: max(30, 32 + 32 + 16) = 80; own loads 32 (its W), y's 8 (P and its output), the
  // others none. P33's lines (a = 1, a = 0 beside the other ops' 92 and 104; ratio 2 for every j):
  // j = 0: 102, 128; j = 1: 82, 64; j = 2: 62, 0; j = 3: 92, 0. P39's (no ratio, fused taps'
  // excess 0, 30, 90 each): j = 0: 101, 128; j = 1: 51, 64; j = 2: 61, 0; j = 3: 271, 0. The
  // least is P39's j = 2 line, 104 + 49 a, up to where P39's j = 1 line, 168 - 25 a, crosses it:
  // a = 64 / 74, 104 + 49 x 64 / 74 = 146.378.
  const LowerBound bound = ComputeLowerBound(p);
  CHECK(bound.lone_tap_sums == 1);
  CHECK(bound.lone_taps == doctest::Approx(104 + 49.0 * 64 / 74));
  // Unpriced (P33 alone): every op at its compute and own loads, best at a = 0: 104.
  g_upstream_lone_sums = false;
  const LowerBound before = ComputeLowerBound(p);
  g_upstream_lone_sums = true;
  CHECK(before.lone_tap_sums == 0);
  CHECK(before.lone_taps == doctest::Approx(104));
  // The baseline and the schedule with every tap, the sum, the ReLU and y in one subgraph are above.
  const Evaluation b = EvaluateOracle(p, BuildBaseline(p));
  REQUIRE(b.ok());
  CHECK(b.total >= bound.total());
  Schedule fused;
  fused.subgraphs.push_back({{0, 1, 2, 3, 4, 5}, {1, 1, 4}, std::nullopt, {}});
  const Evaluation f = EvaluateOracle(p, fused);
  if (f.ok()) CHECK(f.total >= bound.total());
}

// A sum of 1 to 4 k-split taps whose LHS is made by a Pointwise op (shared, or one per tap), at
// mlsys-2026-like ratios: the fast memory is the LHS plus a little (one row to two native tiles)
// or about two native tiles, the bandwidth such that a native tile loads in about one MatMul base.
Problem RetainedLhsNet(std::mt19937_64& rng) {
  testing::ProblemMaker make{rng};
  Problem& problem = make.problem;
  problem.native = make.Pick({4, 8});
  const Elements n = problem.native;
  const Elements rows = make.Pick({1, 2, n / 2, n, n + 1, 2 * n});
  const Elements cols = make.Pick({n / 2, n, 2 * n, 2 * n + 2});
  const Elements k = make.Pick({n + 1, n + 2, 2 * n, 3 * n});
  const double mm = make.PickReal({1, 4, 10, 30}), pw = make.PickReal({0, 0.2, 1, 3});
  const bool own_lhs = make.Coin(3);
  const TensorId shared = make.Op(OpKind::Pointwise, {make.Tensor(rows, k)}, rows, k, pw);
  const int m = static_cast<int>(make.Pick({1, 2, 3, 4}));
  std::vector<TensorId> parts;
  for (int i = 0; i < m; ++i) {
    const TensorId lhs = own_lhs ? make.Op(OpKind::Pointwise, {make.Tensor(rows, k)}, rows, k, pw) : shared;
    parts.push_back(make.Op(OpKind::MatMul, {lhs, make.Tensor(k, cols)}, rows, cols, mm));
  }
  if (make.Coin(5)) parts.push_back(make.Tensor(rows, cols));
  TensorId z = make.Op(OpKind::Pointwise, parts, rows, cols, pw);
  // After the sum: nothing, a ReLU, an LHS-side MatMul, or (as ResNet's last blocks) a ReLU that
  // is the RHS of a pooling MatMul (K = rows: SR when rows <= n), sometimes also the LHS of k-split
  // taps of a next sum, sometimes with a residual add between.
  const int after = static_cast<int>(make.Pick({0, 1, 2, 3, 3, 4}));
  if (after == 1) z = make.Op(OpKind::Pointwise, {z}, rows, cols, pw);
  if (after == 2) make.Op(OpKind::MatMul, {z, make.Tensor(cols, n)}, rows, n, mm);
  if (after >= 3) {
    if (make.Coin(2)) z = make.Op(OpKind::Pointwise, {z, make.Tensor(rows, cols)}, rows, cols, pw);
    z = make.Op(OpKind::Pointwise, {z}, rows, cols, pw);
    if (after == 4) {
      std::vector<TensorId> next;
      for (int i = 0; i < 2; ++i) next.push_back(make.Op(OpKind::MatMul, {z, make.Tensor(cols, cols)}, rows, cols, mm));
      next.push_back(z);
      z = make.Op(OpKind::Pointwise, next, rows, cols, pw);
    }
    const Elements pooled = make.Pick({1, 2});
    make.Op(OpKind::MatMul, {make.Tensor(pooled, rows), z}, pooled, cols, pw + 1);
  }
  const Elements lhs_size = rows * k;
  if (make.Coin(4)) {
    problem.fast_memory_capacity = static_cast<Elements>(std::ceil(1.83 * static_cast<double>(n * n)));
  } else {
    problem.fast_memory_capacity = lhs_size + make.Pick({cols + 1, n + 2, 2 * n, n * n / 2, n * n, 2 * n * n});
  }
  problem.slow_memory_bandwidth = static_cast<double>(n * n) / (make.PickReal({0.5, 1.09, 2}) * mm);
  REQUIRE(problem.Finalize().empty());
  return problem;
}

// Every tap of `p` with K > n whose LHS is made by a Pointwise op, at every tile shape
// (w, h in 1..n, k in {1, n/2, n}), right after a subgraph that runs its LHS's producer again and
// retains the LHS into it; the rest of the baseline as it is. `check` sees every valid one with the
// tap's subgraph index; returns how many.
int ForEachRetainedTap(const Problem& p, const std::function<void(OpId, const Evaluation&, size_t)>& check) {
  Schedule base;
  try {
    base = BuildBaseline(p);
  } catch (const std::runtime_error&) {
    return 0;
  }
  const Elements n = p.native;
  int checked = 0;
  for (OpId x = 0; x < static_cast<OpId>(p.ops.size()); ++x) {
    if (p.ops[x].kind != OpKind::MatMul || p.ReductionLength(x) <= n) continue;
    const TensorId lhs = p.ops[x].inputs[0];
    const OpId producer = p.producer[lhs];
    if (producer == kNoOp || p.ops[producer].kind != OpKind::Pointwise) continue;
    size_t at = base.subgraphs.size(), made = base.subgraphs.size();
    for (size_t i = 0; i < base.subgraphs.size(); ++i) {
      if (base.subgraphs[i].ops == std::vector<OpId>{x}) at = i;
      if (base.subgraphs[i].ops == std::vector<OpId>{producer}) made = i;
    }
    if (at == base.subgraphs.size() || made == base.subgraphs.size()) continue;
    for (Elements w = 1; w <= n; ++w) {
      for (Elements h = 1; h <= n; ++h) {
        for (Elements kk : {Elements{1}, std::max<Elements>(1, n / 2), n}) {
          Schedule schedule = base;
          Subgraph again = base.subgraphs[made];
          again.retain = {lhs};
          schedule.subgraphs[at].granularity = {w, h, kk};
          schedule.subgraphs[at].traversal = std::nullopt;
          schedule.subgraphs.insert(schedule.subgraphs.begin() + static_cast<std::ptrdiff_t>(at), again);
          const Evaluation e = EvaluateOracle(p, schedule);
          if (!e.ok()) continue;
          check(x, e, at + 1);
          ++checked;
        }
      }
    }
  }
  return checked;
}

// The first sum s of k-split taps whose chain of Pointwise ops ends in an operand of a MatMul y
// (the RHS of a pooling MatMul: SR; the LHS of a MatMul: SL, where P39 must not price s): the
// first j taps, s, the chain and y in one subgraph (s upstream of y's k-loop) at tile shapes w, h
// in {1, 2, n/2, n}, k in {1, 2, n/2, n} up to y's K, the other taps alone as the
// baseline runs them, the last of them just before and retained into it or not. `check` sees
// every valid one; returns how many.
int ForEachUpstreamGrouping(const Problem& p, const std::function<void(const Evaluation&)>& check) {
  const auto num_ops = static_cast<OpId>(p.ops.size());
  OpId s = kNoOp;
  std::vector<OpId> taps;
  for (OpId o = 0; o < num_ops && s == kNoOp; ++o) {
    if (p.ops[o].kind != OpKind::Pointwise) continue;
    taps.clear();
    for (TensorId t : p.ops[o].inputs) {
      const OpId x = p.producer[t];
      if (x != kNoOp && p.ops[x].kind == OpKind::MatMul && p.ReductionLength(x) > p.native) taps.push_back(x);
    }
    if (!taps.empty()) s = o;
  }
  if (s == kNoOp) return 0;
  // The chain: Pointwise ops after s, each reading the one before, up to a MatMul reading it as RHS.
  std::vector<OpId> chain{s};
  OpId y = kNoOp;
  for (OpId o = s + 1; o < num_ops && y == kNoOp; ++o) {
    const Op& op = p.ops[o];
    const TensorId last = p.ops[chain.back()].output;
    if (std::find(op.inputs.begin(), op.inputs.end(), last) == op.inputs.end()) continue;
    if (op.kind == OpKind::Pointwise) {
      chain.push_back(o);
    } else if (op.kind == OpKind::MatMul && (op.inputs[1] == last) != (op.inputs[0] == last)) {
      y = o;
    } else {
      return 0;
    }
  }
  if (y == kNoOp) return 0;
  for (OpId c : chain) {
    for (OpId reader : p.consumers[p.ops[c].output]) {
      if (reader != y && std::find(chain.begin(), chain.end(), reader) == chain.end()) return 0;
    }
  }
  Schedule base;
  try {
    base = BuildBaseline(p);
  } catch (const std::runtime_error&) {
    return 0;
  }
  const Elements n = p.native;
  const Elements ky = std::min(p.ReductionLength(y), n);
  int checked = 0;
  for (size_t j = 0; j <= taps.size(); ++j) {
    for (Elements w : {Elements{1}, Elements{2}, n / 2, n}) {
      for (Elements h : {Elements{1}, Elements{2}, n / 2, n}) {
        for (Elements kk : {Elements{1}, Elements{2}, n / 2, n}) {
          if (kk > ky) continue;
          for (int retain = 0; retain < 2; ++retain) {
            Subgraph first;
            first.ops.assign(taps.begin(), taps.begin() + static_cast<std::ptrdiff_t>(j));
            first.ops.insert(first.ops.end(), chain.begin(), chain.end());
            first.ops.push_back(y);
            first.granularity = {w, h, kk};
            const bool escape = retain == 1 && j < taps.size();
            const OpId last = escape ? taps.back() : kNoOp;
            Schedule schedule;
            for (const Subgraph& sg : base.subgraphs) {
              const OpId o = sg.ops[0];
              if (o == last) continue;
              if (std::find(first.ops.begin(), first.ops.end(), o) != first.ops.end() && o != y) continue;
              if (o == y) {
                if (escape) schedule.subgraphs.push_back({{last}, {n, n, 1}, std::nullopt, {p.ops[last].output}});
                schedule.subgraphs.push_back(first);
                continue;
              }
              schedule.subgraphs.push_back(sg);
            }
            const Evaluation e = EvaluateOracle(p, schedule);
            if (!e.ok()) continue;
            check(e);
            ++checked;
          }
        }
      }
    }
  }
  return checked;
}

TEST_CASE("P39: a tap with its LHS retained never costs less than its price, nor any schedule less than the bound (property)") {
  std::mt19937_64 rng(3939);
  int problems = 0, tap_subgraphs = 0, valid = 0, raised = 0, finite = 0, upstream = 0, grouped = 0;
  int upstream_priced = 0, upstream_raised = 0;
  double closest_tap = 0, closest = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const Problem p = RetainedLhsNet(rng);
    ++problems;
    const LowerBound bound = ComputeLowerBound(p);
    g_retained_lhs = false;
    g_upstream_lone_sums = false;
    const LowerBound before = ComputeLowerBound(p);
    g_retained_lhs = true;
    g_upstream_lone_sums = true;
    if (bound.total() > before.total() * (1 + 1e-9)) ++raised;
    if (bound.lone_tap_sums > before.lone_tap_sums) {
      ++upstream_priced;
      if (bound.total() > before.total() * (1 + 1e-9)) ++upstream_raised;
    }
    // Schedules with the sum upstream of a pooling MatMul's k-loop.
    grouped += ForEachUpstreamGrouping(p, [&](const Evaluation& e) {
      ++upstream;
      CHECK(e.total >= bound.total() * (1 - 1e-9));
      CHECK(e.total >= bound.lone_taps * (1 - 1e-9));
      closest = std::max(closest, bound.total() / e.total);
    });
    // The price itself, subgraph by subgraph.
    tap_subgraphs += ForEachRetainedTap(p, [&](OpId x, const Evaluation& e, size_t index) {
      const double price = RetainedLhsAlone(p, x);
      REQUIRE(!std::isinf(price));  // a valid subgraph holds it, so some tile shape fits
      ++finite;
      CHECK(e.subgraphs[index].latency >= price * (1 - 1e-9));
      closest_tap = std::max(closest_tap, price / e.subgraphs[index].latency);
      CHECK(e.total >= bound.total() * (1 - 1e-9));
    });
    // The bound over random, baseline and exact schedules.
    std::vector<Schedule> schedules;
    try {
      schedules = testing::RealRatioSchedules(
          p, rng, trial, 4,
          [](int s) { return testing::ValidRandomOptions(0.2 + 0.2 * s, s % 2 == 0 ? 0.1 : 0.4, 0.3 + 0.2 * (s % 2)); },
          0, 10);
    } catch (const std::runtime_error&) {
      continue;  // some op fits the fast memory at no granularity alone: no valid schedule
    }
    for (const Schedule& schedule : schedules) {
      const Evaluation e = EvaluateOracle(p, schedule);
      if (!e.ok()) continue;
      ++valid;
      CHECK(e.total >= bound.total() * (1 - 1e-9));
      closest = std::max(closest, bound.total() / e.total);
    }
  }
  MESSAGE("P39 property: ", problems, " problems, ", tap_subgraphs, " retained-LHS tap subgraphs (", finite,
          " priced), ", valid, " valid schedules, ", upstream, " with the sum upstream of a pooling MatMul, ",
          raised, " bounds raised, ", upstream_priced, " sums priced that may run upstream (", upstream_raised,
          " raising the bound), closest tap ", closest_tap, ", closest schedule ", closest);
  CHECK(tap_subgraphs > 2000);
  CHECK(valid > 1000);
  CHECK(upstream > 1000);
  CHECK(raised > 10);
  CHECK(upstream_raised > 5);
}

}  // namespace
}  // namespace annealer
