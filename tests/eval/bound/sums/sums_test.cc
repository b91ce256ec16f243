// P23, a sum that cannot hold its producers (eval/bound/sums/sums.h, docs/lower-bound.md "A sum
// that cannot hold its producers (P23)"): by hand, with and without a chip's rules, and never
// above the oracle.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "eval/bound/bounds.h"
#include "eval/bound/sums/sums.h"
#include "eval/bound/sums/written_sums.h"
#include "eval/model/chip_rules.h"
#include "eval/oracle.h"
#include "eval/random_schedule.h"
#include "search/exact/exact.h"
#include "tests/eval/bound/sums/sum_drivers.h"
#include "tests/support/bound_checks.h"
#include "tests/support/bound_nets.h"

namespace annealer {
namespace {

using testing::BoundAndWithout;
using testing::ForEachFusedSum;
using testing::ForEachValidAndAtPeak;
using testing::HandTapSum;
using testing::PeakRoles;
using testing::RealRatioSchedules;
using testing::SumNets;
using testing::ValidRandomOptions;
using testing::kSlack;

// P23 by hand: five MatMuls x_i = A @ W_i (8x4 @ 4x4, n = 4, base 100) summed by s (base 1, a
// graph output), capacity 24, B = 1. Each x_i's output (32) is too large to retain. A subgraph
// holding s holds its 8x4 tile, the unfused outputs' slices and, per fused x_i, min(r, 4) c of
// its weight or accumulator: every such grid has 8 tiles of 4 elements (tau = 8 / 2 = 4), so
// every op there is charged 4 times its native tiles, or the outputs it does not make (32 each)
// and s's write (32) are loaded: the excess is the best lambda of the least over j (fused) of
// lambda (3/4) (32 (5 - j) + 32) + (1 - lambda) 3 (2 + 200 j), 6 + 138 x 25/26 at lambda =
// 25/26. The bound is 1,002 + 138.69 (compute alone 1,002); the exact solver's best, each x_i
// alone at [4, 4, 1] (200, compute-bound) and s alone at [1, 4, 1] (192: 8 tiles of 24), costs
// 1,192.
TEST_CASE("bound: P23 by hand, five MatMuls summed, near the exact solver's best") {
  Problem problem;
  HandTapSum(problem, 5);
  problem.fast_memory_capacity = 24;
  problem.slow_memory_bandwidth = 1;
  REQUIRE(problem.Finalize().empty());
  const LowerBound bound = ComputeLowerBound(problem);
  CHECK(bound.sum_count == 1);
  CHECK(bound.sums == doctest::Approx(1002 + 6 + 138.0 * 25 / 26));
  // P28 prices the one sum of its shape at each subgraph's larger weight: max(6, 144) at j = 0.
  CHECK(bound.total() == doctest::Approx(bound.sole_sums));
  CHECK(bound.sole_sums == doctest::Approx(1146));
  CHECK(std::max({bound.compute, bound.graph_io, bound.traffic, bound.combined, bound.streaming, bound.tiles,
                  bound.memory_floor}) == doctest::Approx(1002));
  Schedule schedule;
  for (OpId o = 0; o < 6; ++o) {
    Subgraph sg;
    sg.ops = {o};
    sg.granularity = o < 5 ? Granularity{4, 4, 1} : Granularity{1, 4, 1};
    schedule.subgraphs.push_back(sg);
  }
  const Evaluation e = EvaluateOracle(problem, schedule);
  REQUIRE(e.ok());
  CHECK(e.total == doctest::Approx(1192));
  ExactOptions exact;
  exact.max_states = 3000;
  const ExactResult best = SolveExact(problem, exact);
  REQUIRE(best.best);
  CHECK(EvaluateOracle(problem, *best.best).total == doctest::Approx(1192));
  bound_internal::g_sum_excess = false;
  // P38 alone (eval/bound/sums/written_sums.h): at lambda = 1, C_I plus the least (tau_j - 1) X0_j, j = 0's
  // 3 x 2: 1,008 (its lines rise all the way to lambda = 1); without it the compute part.
  CHECK(ComputeLowerBound(problem).total() == doctest::Approx(1008));
  bound_internal::g_written_sums = false;
  CHECK(ComputeLowerBound(problem).total() == doctest::Approx(1002));
  bound_internal::g_written_sums = true;
  bound_internal::g_sum_excess = true;
}

// P23 claims nothing for a sum that may make the strips of a k-loop operand: the five MatMuls
// above with 16 rows (base 100, 64-element outputs), capacity 48, their sum s and a Pointwise op
// p feeding f = p @ V (K = 4 = n, base 100, a graph output). Beside s, 6 tiles of 4 rows fit, and
// the excess would be 148.44 (bound 2,556.44); but s, p and f in one subgraph at [4, 4, 1] run
// native tiles in 4 k-steps, s loading 4 x 1 slices of its five inputs (320) under f's 400 of
// compute: with each MatMul alone (400, compute-bound), 2,466 in all. The bound stays the
// compute, 2,408.
TEST_CASE("bound: P23 claims nothing for a sum upstream of a k-loop, where a schedule hides its loads") {
  Problem problem;
  problem.native = 4;
  problem.tensors.push_back({4, 16});  // A
  std::vector<TensorId> outs;
  for (int i = 0; i < 5; ++i) {
    problem.tensors.push_back({4, 4});
    problem.tensors.push_back({4, 16});
    const auto w = static_cast<TensorId>(problem.tensors.size() - 2);
    outs.push_back(w + 1);
    problem.ops.push_back({OpKind::MatMul, {0, w}, w + 1, 100});
  }
  const auto add = [&](Elements h, Elements w) {
    problem.tensors.push_back({w, h});
    return static_cast<TensorId>(problem.tensors.size() - 1);
  };
  const TensorId sum = add(16, 4), act = add(16, 4), v = add(4, 4), out = add(16, 4);
  problem.ops.push_back({OpKind::Pointwise, outs, sum, 1});
  problem.ops.push_back({OpKind::Pointwise, {sum}, act, 1});
  problem.ops.push_back({OpKind::MatMul, {act, v}, out, 100});
  problem.fast_memory_capacity = 48;
  problem.slow_memory_bandwidth = 1;
  REQUIRE(problem.Finalize().empty());
  const LowerBound bound = ComputeLowerBound(problem);
  CHECK(bound.sum_count == 0);
  CHECK(bound.total() == doctest::Approx(2408));
  Schedule schedule;
  for (OpId o = 0; o < 5; ++o) {
    Subgraph sg;
    sg.ops = {o};
    sg.granularity = {4, 4, 4};
    schedule.subgraphs.push_back(sg);
  }
  Subgraph tail;
  tail.ops = {5, 6, 7};
  tail.granularity = {4, 4, 1};
  schedule.subgraphs.push_back(tail);
  const Evaluation e = EvaluateOracle(problem, schedule);
  REQUIRE(e.ok());
  CHECK(e.total == doctest::Approx(2466));
  CHECK(e.subgraphs[5].compute_time == doctest::Approx(408));
}

// P23 against the oracle: SumNets, every schedule of RealRatioSchedules, each again at the
// capacity of its own peak working set, and the sum with its first j MatMuls (j = 0 to m) at every
// tile shape (w, h up to n, three k), the other MatMuls as the baseline runs them.
TEST_CASE("bound: P23's sums never above the oracle") {
  int valid = 0, tight = 0, enumerated = 0, decided = 0, raised = 0, designated = 0;
  double tightest = 0;
  std::mt19937_64 rng(2323);
  for (int trial = 0; trial < 600; ++trial) {
    const Problem problem = SumNets(rng);
    CAPTURE(trial);
    LowerBound without;
    const LowerBound bound = BoundAndWithout(problem, bound_internal::g_sum_excess, without);
    designated += bound.sum_count > 0 ? 1 : 0;
    const bool rises = bound.total() > without.total() * (1 + 1e-9);
    raised += rises ? 1 : 0;
    const std::vector<Schedule> schedules = RealRatioSchedules(
        problem, rng, trial, 4, [](int s) { return ValidRandomOptions(0.2 + 0.25 * s, 0.3, 0.2); }, 8, 5);
    const auto check = [&](const Evaluation& e) {
      CHECK(bound.sums <= e.total * (1 + kSlack));
      if (rises) tightest = std::max(tightest, bound.total() / e.total);
      decided += rises ? 1 : 0;
    };
    tight += ForEachValidAndAtPeak(
        problem, schedules, "P23 trial " + std::to_string(trial),
        [&](const Evaluation& e) {
          ++valid;
          check(e);
        },
        [&](const Problem& squeezed, const Evaluation& e) {
          CHECK(ComputeLowerBound(squeezed).sums <= e.total * (1 + kSlack));
        });
    enumerated += ForEachFusedSum(problem, [&](const Schedule&, const Evaluation& e) {
      CHECK(bound.total() <= e.total * (1 + kSlack));
      check(e);
    });
  }
  MESSAGE("P23: problems with a priced sum " << designated << ", bound raised on " << raised
                                            << ", valid schedules " << valid << ", at their peak " << tight
                                            << ", enumerated " << enumerated << ", checked against a raised bound "
                                            << decided << ", tightest bound/latency there " << tightest);
  CHECK(valid > 1500);
  CHECK(enumerated > 5000);
  CHECK(raised > 20);
}

// P23 with a chip's rules by hand: three MatMuls x_i = A @ W_i (8x4 @ 4x4, n = 4, base 100) summed
// by s (base 1, a graph output), capacity 32 (each x_i's output, 32, too large to retain), B = 1,
// a vector buffer of 8 and an accumulator of 32 at factor 2. A subgraph holding s with j of the
// x_i holds the 3 - j loaded slices and s's tile in the vector buffer, (4 - j) r c <= 8, and the
// j accumulators, 2 j r c <= 32: tau_j = 8, 8, 4, 4 (rules off, W alone: 4, 4, 2, 2). With
// U_j = 32 (3 - j) + 32 (s's write) and X_j = 2 + 200 j, the lines of j = 0 (98 lambda + 14) and
// j = 2 (1206 - 1158 lambda) cross at lambda = 1192 / 1256: e_s = 14 + 98 x 1192 / 1256, the bound
// 602 + 107.006 = 709.006 (661.41 without the rules). The best schedule, each x_i alone at
// [4, 4, 2] (200, compute-bound) and s alone at [2, 1, 1] (16 tiles of 2 elements, 96 loaded
// and 32 written: 128), costs 728.
TEST_CASE("bound: P23 with a chip's rules by hand, three MatMuls summed, the vector buffer binding") {
  Problem problem;
  HandTapSum(problem, 3);
  problem.fast_memory_capacity = 32;
  problem.slow_memory_bandwidth = 1;
  problem.chip.vector_capacity = 8;
  problem.chip.accumulator_capacity = 32;
  problem.chip.accumulator_factor = 2;
  REQUIRE(problem.Finalize().empty());
  const LowerBound bound = ComputeLowerBound(problem);
  CHECK(bound.sum_count == 1);
  CHECK(bound.sums == doctest::Approx(602 + 14 + 98.0 * 1192 / 1256));
  // P28: the one sum of its shape at each subgraph's larger weight, max(B_0, A_0) = max(14, 112),
  // each MatMul alone compute-bound (e_x = 0): 602 + 112, below the best schedule's 728.
  CHECK(bound.total() == doctest::Approx(bound.sole_sums));
  CHECK(bound.sole_sums == doctest::Approx(714));
  Problem rules_off = problem;
  rules_off.chip = {};
  CHECK(ComputeLowerBound(rules_off).sums == doctest::Approx(661.4074055451897));
  Schedule schedule;
  for (OpId o = 0; o < 4; ++o) {
    Subgraph sg;
    sg.ops = {o};
    sg.granularity = o < 3 ? Granularity{4, 4, 2} : Granularity{2, 1, 1};
    schedule.subgraphs.push_back(sg);
  }
  const Evaluation e = EvaluateOracle(problem, schedule);
  REQUIRE(e.ok());
  CHECK(e.total == doctest::Approx(728));
  // s beside two of the x_i at its largest tile (1 x 4, k = 1: vector 2 x 4, accumulator 2 x 2 x 4) pays
  // tau = 4 on 402 of compute: the trade the line of j = 2 prices.
  Schedule fused = schedule;
  fused.subgraphs.erase(fused.subgraphs.begin() + 1, fused.subgraphs.end());
  Subgraph both;
  both.ops = {1, 2, 3};
  both.granularity = {4, 1, 1};
  fused.subgraphs.push_back(both);
  const Evaluation f = EvaluateOracle(problem, fused);
  REQUIRE(f.ok());
  CHECK(f.subgraphs[1].compute_time == doctest::Approx(4 * 402));
  bound_internal::g_sum_excess = false;
  // P38 alone: C_I plus j = 0's (tau - 1) X0 = 7 x 2 at lambda = 1; without it the compute part.
  CHECK(ComputeLowerBound(problem).total() == doctest::Approx(616));
  bound_internal::g_written_sums = false;
  CHECK(ComputeLowerBound(problem).total() == doctest::Approx(602));
  bound_internal::g_written_sums = true;
  bound_internal::g_sum_excess = true;
}

// The same with outputs 8 x 3, H3's base 2 on w (c = 3 covers the width, c = 2 is a multiple),
// capacity 24 (each output, 24, too large to retain), a vector buffer of 12 and an accumulator of
// 24 at factor 2: tau_j = 4, 4, 2, 4 (j = 0: 4 r c <= 12 at c = 3, r = 1; j = 2: r c <= 6 at 2 x 3).
// U_j = 24 (3 - j) + 24, X_j = 2 + 200 j: the lines of j = 0 (6 + 66 lambda) and j = 2
// (402 - 378 lambda) cross at lambda = 396 / 444, e_s = 6 + 66 x 396 / 444 and the bound 666.86.
// Each x_i alone at [3, 4, 1] (200) and s alone at [3, 1, 1] (8 tiles, 72 loaded, 24 written)
// cost 696. Transposed (outputs 3 x 8, the base on h), the same.
TEST_CASE("bound: P23 with a chip's rules by hand, a side that covers the width (or height) under H3") {
  for (const bool transposed : {false, true}) {
    CAPTURE(transposed);
    // Transposed: A 3x4, outputs 3 x 8, the base 2 on h (r = 3 covers the height): the same tau_j.
    const auto shape = [&](Elements rows, Elements cols) {
      return transposed ? Tensor{rows, cols} : Tensor{cols, rows};
    };
    Problem problem;
    problem.native = 4;
    problem.tensors.push_back(transposed ? Tensor{4, 3} : Tensor{4, 8});  // A
    std::vector<TensorId> outs;
    for (int i = 0; i < 3; ++i) {
      problem.tensors.push_back(transposed ? Tensor{8, 4} : Tensor{3, 4});  // W_i
      problem.tensors.push_back(shape(8, 3));                                // x_i's output
      const auto w = static_cast<TensorId>(problem.tensors.size() - 2);
      outs.push_back(w + 1);
      problem.ops.push_back({OpKind::MatMul, {0, w}, w + 1, 100});
    }
    problem.tensors.push_back(shape(8, 3));
    problem.ops.push_back({OpKind::Pointwise, outs, static_cast<TensorId>(problem.tensors.size() - 1), 1});
    problem.fast_memory_capacity = 24;
    problem.slow_memory_bandwidth = 1;
    problem.chip.vector_capacity = 12;
    problem.chip.accumulator_capacity = 24;
    problem.chip.accumulator_factor = 2;
    (transposed ? problem.chip.base_h : problem.chip.base_w) = 2;
    REQUIRE(problem.Finalize().empty());
    const LowerBound bound = ComputeLowerBound(problem);
    CHECK(bound.sum_count == 1);
    CHECK(bound.sums == doctest::Approx(602 + 6 + 66.0 * 396 / 444));
    Schedule schedule;
    for (OpId o = 0; o < 4; ++o) {
      Subgraph sg;
      sg.ops = {o};
      if (transposed) {
        sg.granularity = o < 3 ? Granularity{4, 3, 1} : Granularity{1, 3, 1};
      } else {
        sg.granularity = o < 3 ? Granularity{3, 4, 1} : Granularity{3, 1, 1};
      }
      schedule.subgraphs.push_back(sg);
    }
    const Evaluation e = EvaluateOracle(problem, schedule);
    REQUIRE(e.ok());
    CHECK(e.total == doctest::Approx(696));
    CHECK(bound.total() <= e.total);
  }
}

// P23 with a chip's rules against the oracle: SumNets (every other one with odd sides) with random
// rules (H1-H5: RandomChipRules, no weight path), every valid schedule of RealRatioSchedules and
// the first sum with its first j MatMuls at every tile shape (as above), each also with its
// accumulator, vector and staging capacities squeezed to its own peaks, where H1 binds exactly.
TEST_CASE("bound: P23 with a chip's rules never above the oracle") {
  int valid = 0, squeezed_valid = 0, enumerated = 0, designated = 0, raised = 0, decided = 0;
  double tightest = 0;
  std::mt19937_64 rng(2324);
  for (int trial = 0; trial < 800; ++trial) {
    Problem problem = SumNets(rng, trial % 2 == 1);
    problem.chip = RandomChipRules(problem, rng);
    problem.chip.weight_bandwidth = 0;
    if (trial % 4 >= 2) {  // roles that hold 1 to 3 native accumulators and 2 to 4 native vector tiles
      const Elements tile = problem.native * problem.native;
      const ChipRules& r = problem.chip;
      problem.chip.accumulator_capacity =
          tile * r.accumulator_factor * (r.double_accumulator ? 2 : 1) * static_cast<Elements>(1 + rng() % 3);
      problem.chip.vector_capacity = tile * (r.double_vector ? 2 : 1) * static_cast<Elements>(2 + rng() % 3);
    }
    CAPTURE(trial);
    const LowerBound bound = ComputeLowerBound(problem);
    Problem rules_off = problem;
    rules_off.chip = {};
    const double sums_off = ComputeLowerBound(rules_off).sums;
    designated += bound.sum_count > 0 ? 1 : 0;
    const bool rises = bound.sums > sums_off * (1 + 1e-9);
    raised += rises ? 1 : 0;
    const auto check = [&](const Schedule& schedule, const Evaluation& e) {
      CHECK(bound.total() <= e.total * (1 + kSlack));
      CHECK(bound.sums <= e.total * (1 + kSlack));
      if (rises) {
        tightest = std::max(tightest, bound.sums / e.total);
        ++decided;
      }
      const RoleFootprints peak = PeakRoles(problem, schedule);
      Problem squeezed = problem;
      if (peak.accumulator > 0) squeezed.chip.accumulator_capacity = peak.accumulator;
      if (peak.vector > 0) squeezed.chip.vector_capacity = peak.vector;
      if (peak.staging > 0) squeezed.chip.staging_capacity = peak.staging;
      const Evaluation s = EvaluateOracle(squeezed, schedule);
      REQUIRE(s.ok());
      ++squeezed_valid;
      const LowerBound tight = ComputeLowerBound(squeezed);
      CHECK(tight.total() <= s.total * (1 + kSlack));
      CHECK(tight.sums <= s.total * (1 + kSlack));
    };
    std::vector<Schedule> schedules;
    try {  // a role capacity may leave an op no granularity at all: the problem has no schedule
      schedules = RealRatioSchedules(
          problem, rng, trial, 4, [](int s) { return ValidRandomOptions(0.2 + 0.25 * s, 0.3, 0.2); }, 8, 0);
    } catch (const std::runtime_error&) {
      continue;
    }
    for (const Schedule& schedule : schedules) {
      const Evaluation e = EvaluateOracle(problem, schedule);
      if (!e.ok()) continue;
      ++valid;
      INFO("random schedule");
      check(schedule, e);
    }
    enumerated += ForEachFusedSum(problem, check);
  }
  MESSAGE("P23 with rules: problems with a priced sum " << designated << ", the rules raise sums on " << raised
                                                       << ", valid schedules " << valid << ", enumerated " << enumerated
                                                       << " (and " << squeezed_valid << " squeezed), checked against a raised bound "
                                                       << decided << ", tightest sums/latency there " << tightest);
  CHECK(valid > 500);
  CHECK(enumerated > 2000);
  CHECK(raised > 20);
}

}  // namespace
}  // namespace annealer
