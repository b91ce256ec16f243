// P33, taps that sit alone when their sum leaves them out (eval/bound/sums/taps/lone_taps.h,
// docs/lower-bound.md "Taps that sit alone (P33)"): the part by hand, and the bound with it never
// above the oracle on random sums of k-split taps at real-chip ratios, with and without chip
// rules and prefetch, over random, baseline, searched and exact schedules and every grouping of
// the taps (fused beside the sum at every tile shape, the others alone, one of them retained).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <stdexcept>

#include "eval/bound/bounds.h"
#include "eval/bound/sums/taps/lone_taps.h"
#include "eval/oracle.h"
#include "eval/random_schedule.h"
#include "search/driver.h"
#include "search/starts/baseline.h"
#include "tests/support/problem_maker.h"
#include "tests/support/sample_schedules.h"

namespace annealer {
namespace {

using bound_internal::g_lone_taps;

// Three taps A @ W (A 4 x 8 and W 8 x 4 graph inputs read by all three, K = 8 > n = 4, base 10)
// summed by s (base 1, 4 x 4, a graph output); an accumulator of one native tile.
// Three taps A @ W summed; with `gathered`, A is a Layout op's gather of a graph input.
Problem ThreeTaps(bool gathered = false) {
  std::mt19937_64 rng(1);
  testing::ProblemMaker make{rng};
  make.problem.native = 4;
  const TensorId w = make.Tensor(8, 4);
  const TensorId a = gathered ? make.Op(OpKind::Layout, {make.Tensor(8, 4)}, 4, 8, 0) : make.Tensor(4, 8);
  std::vector<TensorId> taps;
  for (int i = 0; i < 3; ++i) taps.push_back(make.Op(OpKind::MatMul, {a, w}, 4, 4, 10));
  make.Op(OpKind::Pointwise, taps, 4, 4, 1);
  make.problem.fast_memory_capacity = 1000;
  make.problem.slow_memory_bandwidth = 1;
  make.problem.chip.accumulator_capacity = 16;
  REQUIRE(make.problem.Finalize().empty());
  return make.problem;
}

TEST_CASE("P33 by hand: three taps whose sum holds one accumulator") {
  // A tap alone loads A (32) and W (32) and writes its output (16): 80 against its compute 10.
  // The sum's first subgraph with j taps: j = 0, 1 at native tiles (one tap's output may come
  // retained from the subgraph before, so 2 and 1 taps alone, 141 and 71 at a = 1); j = 2 in
  // two tiles (tau 2: 1 + 21 = 22); j = 3 in four (1 + 3 x 31 = 94). No op has loads of its own
  // (A and W are shared, the output's write is the sum's first instance's only if it writes it),
  // so a = 1 is best: 3 x 10 + 22 = 52, against the compute part's 31.
  const Problem p = ThreeTaps();
  const LowerBound bound = ComputeLowerBound(p);
  CHECK(bound.compute == doctest::Approx(31));
  CHECK(bound.lone_tap_sums == 1);
  CHECK(bound.lone_taps == doctest::Approx(52));
  // Every tap beside the sum at [4, 1, 4] (four tiles: 4 x 31 = 124 of compute) and the taps
  // alone (3 x 80 + the sum loading three outputs) are both above it.
  Schedule fused;
  fused.subgraphs.push_back({{0, 1, 2, 3}, {4, 1, 4}, std::nullopt, {}});
  const Evaluation e = EvaluateOracle(p, fused);
  REQUIRE(e.ok());
  CHECK(e.total >= 52);
  const Schedule baseline = BuildBaseline(p);
  const Evaluation b = EvaluateOracle(p, baseline);
  REQUIRE(b.ok());
  CHECK(b.total >= bound.total());
  g_lone_taps = false;
  const LowerBound off = ComputeLowerBound(p);
  g_lone_taps = true;
  CHECK(off.lone_taps == doctest::Approx(31));
}

TEST_CASE("P33 by hand: prefetch and the chip's tile bases leave the part as it is") {
  Problem p = ThreeTaps();
  p.chip.double_staging = true;
  p.chip.staging_capacity = 1000;
  p.chip.prefetch = true;
  REQUIRE(p.Finalize().empty());
  CHECK(ComputeLowerBound(p).lone_taps == doctest::Approx(52));
  // A Layout-made LHS can sit beside its tap (a gather, L2): no tap is lone, nothing priced.
  CHECK(ComputeLowerBound(ThreeTaps(true)).lone_tap_sums == 0);
}

// A sum of 1 to 6 k-split taps at a small scale: one LHS A (a graph input, or made by a Pointwise
// op), each tap's RHS a graph input (sometimes shared), the sum sometimes reading a graph input or
// a tap with K <= n too, followed by nothing, a Pointwise op, a transpose or a MatMul; sometimes a
// second sum of the same shape on A. Half at ascend910-core's ratios (a fast memory of 32 native
// tiles, an accumulator of 8 at factor 2, a vector buffer of 8, double-buffered staging with
// prefetch, a native tile's load about 1.7 MatMul bases), the rest at random ratios and rules.
Problem LoneTapNet(std::mt19937_64& rng, bool ascend) {
  testing::ProblemMaker make{rng};
  Problem& problem = make.problem;
  problem.native = make.Pick({4, 8});
  const Elements n = problem.native;
  const Elements rows = make.Pick({n / 2, n, n + 1, 2 * n, 3 * n});
  const Elements cols = make.Pick({n / 2, n, 2 * n, 2 * n + 2});
  const Elements k = make.Pick({n + 2, 2 * n, 2 * n, 3 * n});
  const double mm = make.PickReal({1, 4, 10, 30}), pw = make.PickReal({0, 1, 3});
  TensorId a = make.Tensor(rows, k);
  const bool lhs_made = make.Coin(2);
  if (lhs_made) a = make.Op(OpKind::Pointwise, {a}, rows, k, pw);
  // Sometimes each tap reads an LHS of its own, made by a Pointwise op (retainable into it alone).
  const bool own_lhs = lhs_made && make.Coin(3);
  const int m = static_cast<int>(make.Pick({1, 2, 3, 4, 5, 6}));
  std::vector<TensorId> parts;
  TensorId shared = -1;
  for (int i = 0; i < m; ++i) {
    TensorId w = make.Tensor(k, cols);
    if (i > 0 && make.Coin(5)) w = shared;
    shared = w;
    const TensorId lhs = own_lhs ? make.Op(OpKind::Pointwise, {make.Tensor(rows, k)}, rows, k, pw) : a;
    parts.push_back(make.Op(OpKind::MatMul, {lhs, w}, rows, cols, mm));
  }
  // Sometimes a MatMul with K <= n among the sum's inputs (no lone tap: a prologue is legal).
  if (make.Coin(4)) {
    const Elements small = make.Pick({n / 2, n});
    const TensorId lhs = make.Op(OpKind::Pointwise, {make.Tensor(rows, small)}, rows, small, pw);
    parts.push_back(make.Op(OpKind::MatMul, {lhs, make.Tensor(small, cols)}, rows, cols, mm));
  }
  if (make.Coin(5)) parts.push_back(make.Tensor(rows, cols));
  if (make.Coin(5)) parts.push_back(make.Op(OpKind::MatMul, {make.Tensor(rows, n), make.Tensor(n, cols)}, rows, cols, mm));
  TensorId z = make.Op(OpKind::Pointwise, parts, rows, cols, pw);
  if (make.Coin(4)) {
    std::vector<TensorId> group;
    const int m2 = static_cast<int>(make.Pick({2, 3}));
    for (int i = 0; i < m2; ++i) group.push_back(make.Op(OpKind::MatMul, {a, make.Tensor(k, cols)}, rows, cols, mm));
    make.Op(OpKind::Pointwise, group, rows, cols, pw);
  }
  const int after = static_cast<int>(make.Pick({0, 1, 2, 3}));
  if (after == 1) z = make.Op(OpKind::Pointwise, {z}, rows, cols, pw);
  if (after == 2) z = make.Op(OpKind::Layout, {z}, cols, rows, 0);
  if (after == 3) make.Op(OpKind::MatMul, {z, make.Tensor(cols, n)}, rows, n, mm);
  if (ascend) {
    problem.fast_memory_capacity = 32 * n * n;
    problem.slow_memory_bandwidth = static_cast<double>(n * n) / (1.7 * mm);
    problem.chip.staging_capacity = 32 * n * n;
    problem.chip.double_staging = true;
    problem.chip.accumulator_capacity = 8 * n * n;
    problem.chip.accumulator_factor = 2;
    problem.chip.vector_capacity = 8 * n * n;
    problem.chip.base_w = problem.chip.base_h = problem.chip.base_k = n / 4;
    problem.chip.prefetch = true;
  } else {
    problem.fast_memory_capacity = n * n * make.Pick({3, 4, 6, 8, 16});
    problem.slow_memory_bandwidth = make.PickReal({0.25, 0.5, 1, 4});
    if (!make.Coin(4)) problem.chip = RandomChipRules(problem, rng);
  }
  REQUIRE(problem.Finalize().empty());
  return problem;
}

// Every grouping of the first priced sum's taps: the first j beside the sum (j = 0 to all) at
// tile shapes w, h in {1, n/2, n} and k in {base, n}, the others alone as the baseline runs them
// (at native tiles or halved), the last of them just before the sum's subgraph and retained into
// it or not; the rest of the baseline as it is. `check` sees every valid one; returns how many.
int ForEachTapGrouping(const Problem& p, const std::function<void(const Evaluation&)>& check) {
  OpId s = kNoOp;
  std::vector<OpId> taps;
  for (OpId o = 0; o < static_cast<OpId>(p.ops.size()) && s == kNoOp; ++o) {
    if (p.ops[o].kind != OpKind::Pointwise) continue;
    for (TensorId t : p.ops[o].inputs) {
      const OpId x = p.producer[t];
      if (x != kNoOp && p.ops[x].kind == OpKind::MatMul && p.ReductionLength(x) > p.native) taps.push_back(x);
    }
    if (!taps.empty()) s = o;
  }
  if (s == kNoOp) return 0;
  Schedule base;
  try {
    base = BuildBaseline(p);
  } catch (const std::runtime_error&) {
    return 0;
  }
  const Elements n = p.native;
  int checked = 0;
  for (size_t j = 0; j <= taps.size(); ++j) {
    for (Elements w : {Elements{1}, n / 2, n}) {
      for (Elements h : {Elements{1}, n / 2, n}) {
        for (Elements kk : {std::max<Elements>(1, p.chip.base_k), n}) {
          for (int lone_shape = 0; lone_shape < 3; ++lone_shape) {
            for (int retain = 0; retain < 2; ++retain) {
              Subgraph first;
              first.ops.assign(taps.begin(), taps.begin() + static_cast<std::ptrdiff_t>(j));
              first.ops.push_back(s);
              first.granularity = {w, h, kk};
              const bool escape = retain == 1 && j < taps.size();
              const OpId last = escape ? taps.back() : kNoOp;
              Schedule schedule;
              for (const Subgraph& sg : base.subgraphs) {
                const OpId o = sg.ops[0];
                const bool fused = std::find(first.ops.begin(), first.ops.end(), o) != first.ops.end() && o != s;
                if (fused || o == last) continue;
                if (o == s) {
                  if (escape) {
                    Subgraph alone{{last}, {n, n, kk}, std::nullopt, {p.ops[last].output}};
                    schedule.subgraphs.push_back(alone);
                  }
                  schedule.subgraphs.push_back(first);
                  continue;
                }
                Subgraph copy = sg;
                if (lone_shape >= 1 && std::find(taps.begin(), taps.end(), o) != taps.end()) {
                  copy.granularity = {std::max<Elements>(1, n / 2), std::max<Elements>(1, n / 2), kk};
                }
                schedule.subgraphs.push_back(copy);
              }
              // lone_shape 2: every subgraph that makes a tap's LHS read by that tap alone retains
              // it into the tap's subgraph just after it (a retained LHS, loaded by no one).
              if (lone_shape == 2) {
                for (size_t i = 0; i + 1 < schedule.subgraphs.size(); ++i) {
                  const Subgraph& next = schedule.subgraphs[i + 1];
                  for (OpId o : schedule.subgraphs[i].ops) {
                    const TensorId t = p.ops[o].output;
                    if (p.consumers[t].size() == 1 && next.ops.size() == 1 && p.consumers[t][0] == next.ops[0]) {
                      schedule.subgraphs[i].retain.push_back(t);
                    }
                  }
                }
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
  }
  return checked;
}


TEST_CASE("P33: the bound is never above the oracle on sums of k-split taps (property)") {
  std::mt19937_64 rng(3333);
  int valid = 0, enumerated = 0, priced = 0, raised = 0;
  double closest = 0, closest_raised = 0;
  for (int trial = 0; trial < 500; ++trial) {
    const bool ascend = trial % 2 == 0;
    const Problem p = LoneTapNet(rng, ascend);
    const LowerBound bound = ComputeLowerBound(p);
    CHECK(bound.lone_taps >= bound.compute - 1e-9);
    if (bound.lone_tap_sums > 0) ++priced;
    g_lone_taps = false;
    const double before = ComputeLowerBound(p).total();
    g_lone_taps = true;
    const bool raises = bound.total() > before * (1 + 1e-9);
    if (raises) ++raised;
    std::vector<Schedule> schedules;
    try {
      schedules = testing::RealRatioSchedules(
          p, rng, trial, 6,
          [](int s) { return testing::ValidRandomOptions(0.2 + 0.15 * s, s % 2 == 0 ? 0.1 : 0.4, 0.3 + 0.2 * (s % 2)); },
          25, 10);
    } catch (const std::runtime_error&) {
      continue;  // some op fits the fast memory at no granularity alone: no valid schedule
    }
    const auto check = [&](const Evaluation& e) {
      CHECK(e.total >= bound.total() * (1 - 1e-9));
      CHECK(e.total >= bound.lone_taps * (1 - 1e-9));
      closest = std::max(closest, bound.lone_taps / e.total);
      if (raises) closest_raised = std::max(closest_raised, bound.total() / e.total);
    };
    for (const Schedule& schedule : schedules) {
      const Evaluation e = EvaluateOracle(p, schedule);
      if (!e.ok()) continue;
      ++valid;
      check(e);
    }
    enumerated += ForEachTapGrouping(p, check);
  }
  MESSAGE("P33 property: ", valid, " valid schedules, ", enumerated, " enumerated groupings, ", priced,
          " problems priced, ", raised, " bounds raised, closest ", closest, " (", closest_raised, " where P33 raises it)");
  CHECK(valid > 1000);
  CHECK(enumerated > 5000);
  CHECK(priced > 100);
  CHECK(raised > 10);
}

}  // namespace
}  // namespace annealer
