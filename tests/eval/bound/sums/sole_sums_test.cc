// P28, a priced sum alone in its shape, and P52, the write of its sink (eval/bound/sums/sole_sums.h,
// docs/lower-bound.md): by hand and never above the oracle, also with P31's floor for an isolated
// producer in P28 and P29.
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "eval/bound/bounds.h"
#include "eval/bound/sums/sole_sums.h"
#include "eval/oracle.h"
#include "search/exact/exact.h"
#include "tests/eval/bound/sums/sum_drivers.h"
#include "tests/support/bound_checks.h"

namespace annealer {
namespace {

using testing::AsppTaps;
using testing::BoundAndWithout;
using testing::ForEachAsppConfiguration;
using testing::ForEachFusedSum;
using testing::ForEachSumTwice;
using testing::ForEachValidAndAtPeak;
using testing::HandTapSum;
using testing::RealRatioSchedules;
using testing::SoleSumRun;
using testing::SoleSumsAgainstOracle;
using testing::ValidRandomOptions;
using testing::kSlack;

TEST_CASE("bound: P28's sole sums never above the oracle") {
  const SoleSumRun run = SoleSumsAgainstOracle(2828, 700, bound_internal::g_sole_sums, false);
  MESSAGE("P28: problems with a sole shape priced " << run.priced << ", bound raised on " << run.raised
                                                    << ", valid schedules " << run.valid << ", at their peak " << run.tight
                                                    << ", enumerated " << run.enumerated << " (the sum twice " << run.twice
                                                    << "), checked against a raised bound " << run.decided
                                                    << ", tightest bound/latency there " << run.tightest);
  CHECK(run.valid > 1500);
  CHECK(run.enumerated > 5000);
  CHECK(run.raised > 20);
}

// P52 against the oracle: P28's driver with the write of S_1's sink counted or not, 2,100 problems,
// a third at the chip's ratios.
TEST_CASE("bound: P52's written sink of a sole sum never above the oracle") {
  const SoleSumRun run = SoleSumsAgainstOracle(5252, 2100, bound_internal::g_sole_sum_write, true);
  MESSAGE("P52: problems with a sole shape priced " << run.priced << ", bound raised on " << run.raised
                                                    << ", valid schedules " << run.valid << ", at their peak " << run.tight
                                                    << ", enumerated " << run.enumerated << " (the sum twice " << run.twice
                                                    << "), checked against a raised bound " << run.decided
                                                    << ", tightest bound/latency there " << run.tightest);
  CHECK(run.valid > 4500);
  CHECK(run.enumerated > 15000);
  CHECK(run.raised > 20);
}

// P52 by hand: P28's five MatMuls (x_i = A @ W_i, 8x4 @ 4x4, n = 4, base 100, c_x = 200) summed by
// s (base 1, c_s = 2), now followed by a ReLU r (base 1, c_r = 2) whose output is the graph output;
// capacity 24, B = 1. s's output (32 elements) is no graph output, so P23's U_0 is the five loads,
// 160, and P28 claims max(B_0, A_0) = max(6, (3/4) 160) = 120 beside the compute 1,004: 1,124.
// Whatever runs s (tau = 4 at every j), some sink of its 8 x 4 shape writes all 32 elements (it
// cannot be kept: 32 > 24), so A_0 = (3/4)(160 + 32) = 144 and the bound is 1,148, against the
// exact solver's optimum 1,192 (s and r with the five outputs loaded at 2 x 1 tiles).
TEST_CASE("bound: P52 by hand, five MatMuls summed and a ReLU, the sink's write") {
  Problem problem;
  const TensorId sum = HandTapSum(problem, 5);
  problem.tensors.push_back({4, 8});
  problem.ops.push_back({OpKind::Pointwise, {sum}, static_cast<TensorId>(problem.tensors.size() - 1), 1});
  problem.fast_memory_capacity = 24;
  problem.slow_memory_bandwidth = 1;
  REQUIRE(problem.Finalize().empty());
  LowerBound without;
  const LowerBound bound = BoundAndWithout(problem, bound_internal::g_sole_sum_write, without);
  CHECK(without.sole_sums == doctest::Approx(1124));
  CHECK(without.total() == doctest::Approx(1124));
  CHECK(bound.sole_sum_count == 1);
  CHECK(bound.sole_sums == doctest::Approx(1148));
  CHECK(bound.total() == doctest::Approx(1148));
  ExactOptions exact;
  exact.max_states = 3000;
  const ExactResult best = SolveExact(problem, exact);
  REQUIRE(best.best);
  CHECK(best.status == ExactStatus::kOptimal);
  CHECK(EvaluateOracle(problem, *best.best).total == doctest::Approx(1192));
  // s with j of the MatMuls at every shape, the rest as the baseline runs them: never below.
  const int checked = ForEachFusedSum(problem, [&](const Schedule&, const Evaluation& e) {
    CHECK(bound.total() <= e.total * (1 + kSlack));
  });
  CHECK(checked > 50);
}

// P28 by hand, P23's five MatMuls: x_i = A @ W_i (8x4 @ 4x4, n = 4, base 100, c_x = 200) summed by
// s (base 1, c_s = 2, a graph output), capacity 24, B = 1. Every grid holding s has tau = 4
// (P23 by hand): A_j = (3/4)(32 (5 - j) + 32) = 24 (6 - j), B_j = 3 (2 + 200 j). Each x_i alone is
// compute-bound at native tiles (k = 1: 200 of compute against 96 of transfers), so e_x = 0, and
// the one sum of its shape claims min over j of max(B_j, A_j) + 0 = max(6, 144) = 144 (j = 0),
// above P23's lambda mix 6 + 138 x 25/26: the bound 1,002 + 144 = 1,146 (1,140.69 before) against
// the exact solver's 1,192. With base 10 (c_x = 20) each x_i alone claims e_x = 60 (8 row tiles at
// k = 4, tau = 4: (tau - 1) c_x, its transfers 80 below 4 x 20), and every j gives 6 + 60 j +
// (5 - j) 60 = 306 (j = 0: 144 + 300): sole_sums = 102 + 306 = 408 (P25: 268.79), below P18's
// 426.92 there; the exact solver's best is 612.
TEST_CASE("bound: P28 by hand, five MatMuls summed, each subgraph at its larger weight") {
  for (const double base : {100.0, 10.0}) {
    CAPTURE(base);
    Problem problem;
    HandTapSum(problem, 5, base);
    problem.fast_memory_capacity = 24;
    problem.slow_memory_bandwidth = 1;
    REQUIRE(problem.Finalize().empty());
    const LowerBound bound = ComputeLowerBound(problem);
    CHECK(bound.sole_sum_count == 1);
    if (base == 100) {
      CHECK(bound.taps == doctest::Approx(1002 + 6 + 138.0 * 25 / 26));
      CHECK(bound.sole_sums == doctest::Approx(1146));
      CHECK(bound.total() == doctest::Approx(1146));
    } else {
      CHECK(bound.taps == doctest::Approx(268.785).epsilon(1e-5));
      CHECK(bound.sole_sums == doctest::Approx(408));
      CHECK(bound.total() == doctest::Approx(426.919).epsilon(1e-5));
    }
    bound_internal::g_sole_sums = false;
    CHECK(ComputeLowerBound(problem).sole_sums == doctest::Approx(bound.taps));
    bound_internal::g_sole_sums = true;
    // Each x_i alone at every shape and s with j of them at every shape: never below.
    int valid = 0;
    double best = std::numeric_limits<double>::infinity();
    for (size_t j = 0; j <= 5; ++j) {
      for (Elements w = 1; w <= 4; ++w) {
        for (Elements h = 1; h <= 4; ++h) {
          for (Elements k = 1; k <= 4; ++k) {
            for (Elements k2 : {Elements{1}, Elements{4}}) {
              Schedule schedule;
              for (OpId o = static_cast<OpId>(j); o < 5; ++o) {
                Subgraph sg;
                sg.ops = {o};
                sg.granularity = {4, 1, k2};
                schedule.subgraphs.push_back(sg);
              }
              Subgraph last;
              for (OpId o = 0; o < static_cast<OpId>(j); ++o) last.ops.push_back(o);
              last.ops.push_back(5);
              last.granularity = {w, h, k};
              schedule.subgraphs.push_back(last);
              const Evaluation e = EvaluateOracle(problem, schedule);
              if (!e.ok()) continue;
              ++valid;
              CHECK(bound.sole_sums <= e.total * (1 + kSlack));
              best = std::min(best, e.total);
            }
          }
        }
      }
    }
    CHECK(valid > 50);
    CHECK(best >= bound.total());
  }
}

// P28 and P29 with P31's floor for an isolated producer (sole_sums.h, g_isolated_in_sole): AsppTaps,
// every schedule of RealRatioSchedules (also at its own peak), every tap alone at every tile shape,
// the taps grouped with the sum and as co-sinks. Counts the problems where the floor raises P28's
// or P29's part.
TEST_CASE("bound: P28 and P29 with P31's isolated producers never above the oracle") {
  int valid = 0, enumerated = 0, raised = 0, decided = 0;
  double tightest = 0;
  std::mt19937_64 rng(3131);
  for (int trial = 0; trial < 600; ++trial) {
    const Problem problem = AsppTaps(rng);
    CAPTURE(trial);
    LowerBound without;
    const LowerBound bound = BoundAndWithout(problem, bound_internal::g_isolated_in_sole, without);
    CHECK(bound.sole_sums >= without.sole_sums * (1 - kSlack));
    CHECK(bound.shared_sums >= without.shared_sums * (1 - kSlack));
    CHECK(bound.total() >= without.total() * (1 - kSlack));
    const bool rises = bound.sole_sums > without.sole_sums * (1 + 1e-9) || bound.shared_sums > without.shared_sums * (1 + 1e-9);
    raised += rises ? 1 : 0;
    const auto check = [&](const Evaluation& e) {
      CHECK(bound.total() <= e.total * (1 + kSlack));
      CHECK(bound.sole_sums <= e.total * (1 + kSlack));
      CHECK(bound.shared_sums <= e.total * (1 + kSlack));
      if (!rises) return;
      ++decided;
      tightest = std::max(tightest, std::max(bound.sole_sums, bound.shared_sums) / e.total);
    };
    const std::vector<Schedule> schedules = RealRatioSchedules(
        problem, rng, trial, 4, [](int s) { return ValidRandomOptions(0.2 + 0.25 * s, 0.3, 0.3); }, 8, 5);
    ForEachValidAndAtPeak(
        problem, schedules, "P28/P31 trial " + std::to_string(trial),
        [&](const Evaluation& e) {
          ++valid;
          check(e);
        },
        [&](const Problem& squeezed, const Evaluation& e) {
          const LowerBound at_peak = ComputeLowerBound(squeezed);
          CHECK(at_peak.total() <= e.total * (1 + kSlack));
          CHECK(at_peak.sole_sums <= e.total * (1 + kSlack));
          CHECK(at_peak.shared_sums <= e.total * (1 + kSlack));
        });
    enumerated += ForEachAsppConfiguration(problem, check);
    enumerated += ForEachSumTwice(problem, [&](const Schedule&, const Evaluation& e) { check(e); });
  }
  MESSAGE("P28/P29 with P31's floor: raised on " << raised << " problems, valid schedules " << valid << ", enumerated "
                                                 << enumerated << ", checked against a raised part " << decided
                                                 << ", tightest part/latency there " << tightest);
  CHECK(valid > 1500);
  CHECK(enumerated > 5000);
  CHECK(raised > 10);
}

}  // namespace
}  // namespace annealer
