// P21, a MatMul that sits alone (eval/bound/traffic/alone.h, docs/lower-bound.md "A MatMul that sits
// alone (P21)"): its floor against the oracle's best over every tile shape, by hand, and the
// bound with it never above the oracle on random problems at real-chip ratios, one path or two.
// P30, a MatMul with its epilogue: loads and tiles (the same header, docs/lower-bound.md "A MatMul with
// its epilogue: loads and tiles (P30)"): never above the oracle on MlpIslands.
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "eval/bound/traffic/alone.h"
#include "eval/bound/traffic/perstep.h"
#include "eval/bound/bounds.h"
#include "eval/oracle.h"
#include "eval/random_schedule.h"
#include "search/exact/exact.h"
#include "search/starts/baseline.h"
#include "tests/support/bound_checks.h"
#include "tests/support/problem_maker.h"
#include "tests/support/sample_schedules.h"
#include "tests/support/suffix_bounds.h"

namespace annealer {
namespace {

using testing::ScaleComputeToTraffic;
using bound_internal::g_lone_matmul_floor;
using bound_internal::g_per_step_excess;
using bound_internal::LoneMatMulLatency;
using testing::BoundAndWithout;
using testing::ForEachGroupShape;
using testing::ForEachValidAndAtPeak;
using testing::RealRatioSchedules;
using testing::ValidRandomOptions;
using testing::kSlack;

std::vector<char> Weights(const Problem& p) {
  std::vector<char> w(p.tensors.size(), 0);
  for (TensorId t = 0; t < static_cast<TensorId>(p.tensors.size()); ++t) w[t] = p.OnWeightPath(t);
  return w;
}

// The bound with P21 switched off (as before it).
// The bound as before P21 (and P24, which prices some of the same subgraphs step by step under H6).
LowerBound WithoutP21(const Problem& p) {
  g_lone_matmul_floor = false;
  g_per_step_excess = false;
  LowerBound b = ComputeLowerBound(p);
  g_lone_matmul_floor = true;
  g_per_step_excess = true;
  return b;
}

// X -> (P, Pointwise) -> A (rows x K); V -> (Q, Pointwise) -> R (K x cols) or R a graph input;
// Y = A @ R (op 2 or 1), a graph output. Native 4, K > 4, a capacity every shape fits.
Problem LoneProduct(std::mt19937_64& rng, bool rhs_made, double weight_bandwidth) {
  testing::ProblemMaker make{rng};
  Problem& p = make.problem;
  p.native = 4;
  const Elements rows = make.Pick({1, 3, 4, 6, 9}), k = make.Pick({5, 7, 8, 12}), cols = make.Pick({2, 4, 5, 10});
  const TensorId a = make.Op(OpKind::Pointwise, {make.Tensor(rows, k)}, rows, k, make.PickReal({0, 3}));
  const TensorId r = rhs_made ? make.Op(OpKind::Pointwise, {make.Tensor(k, cols)}, k, cols, 1) : make.Tensor(k, cols);
  make.Op(OpKind::MatMul, {a, r}, rows, cols, make.PickReal({0, 1, 8, 40}));
  p.fast_memory_capacity = 1 << 20;
  p.slow_memory_bandwidth = make.PickReal({0.5, 1, 3});
  p.chip.weight_bandwidth = weight_bandwidth;
  REQUIRE(p.Finalize() == "");
  return p;
}

// LoneProduct's schedule with the product alone at `g`: its operands made before it, at native
// tiles, the one kept for it (if any) made last and retained into it.
Schedule LoneProductSchedule(const Problem& p, OpId x, bool rhs_made, bool lhs_kept, bool rhs_kept, Granularity g) {
  Schedule s;
  const Subgraph make_a{{0}, Granularity{4, 4, 1}, std::nullopt,
                        lhs_kept ? std::vector<TensorId>{p.ops[0].output} : std::vector<TensorId>{}};
  if (rhs_made) {
    const Subgraph make_r{{1}, Granularity{4, 4, 1}, std::nullopt,
                          rhs_kept ? std::vector<TensorId>{p.ops[1].output} : std::vector<TensorId>{}};
    s.subgraphs = rhs_kept ? std::vector<Subgraph>{make_a, make_r} : std::vector<Subgraph>{make_r, make_a};
  } else {
    s.subgraphs = {make_a};
  }
  s.subgraphs.push_back({{x}, g, std::nullopt, {}});
  return s;
}

TEST_CASE("P21: a lone MatMul's floor is the oracle's least over every tile shape and retention") {
  std::mt19937_64 rng(2121);
  int compared = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const bool rhs_made = trial % 3 == 0;
    Problem p = LoneProduct(rng, rhs_made, trial % 2 == 0 ? 0.0 : 1.7);
    const OpId x = static_cast<OpId>(p.ops.size() - 1);
    const std::vector<char> weights = Weights(p);
    for (int lhs_kept = 0; lhs_kept <= 1; ++lhs_kept) {
      for (int rhs_kept = 0; rhs_kept <= (rhs_made ? 1 : 0); ++rhs_kept) {
        // Subgraph 0 makes A (and R); the last one is the MatMul alone, retaining in what it may.
        double least = std::numeric_limits<double>::infinity();
        for (Elements w = 1; w <= 4; ++w) {
          for (Elements h = 1; h <= 4; ++h) {
            for (Elements k = 1; k <= 4; ++k) {
              if (lhs_kept && rhs_kept) continue;  // one subgraph before cannot make both here
              // The op whose output is retained runs just before the MatMul.
              const Schedule s = LoneProductSchedule(p, x, rhs_made, lhs_kept, rhs_kept, {w, h, k});
              const Evaluation e = EvaluateOracle(p, s);
              REQUIRE(e.ok());
              least = std::min(least, e.subgraphs.back().latency);
            }
          }
        }
        if (least == std::numeric_limits<double>::infinity()) continue;
        CAPTURE(trial);
        CHECK(LoneMatMulLatency(p, x, weights, lhs_kept, rhs_kept, false) == doctest::Approx(least));
        ++compared;
      }
    }
  }
  MESSAGE("P21: floors compared with the oracle's least: " << compared);
  CHECK(compared > 100);
}

// Chip rules H1-H4 (and H5 without double-buffered staging) on the lone product: the floor
// still equals the oracle's least over every w, h, k that the oracle accepts (H3's sides, the
// staging of the loaded operand slices and the accumulator of the tile, doubled by H2, times H4's
// factor, the write widened by H4). Capacities small enough to forbid shapes at native 4.
TEST_CASE("P21: with a chip's rules the floor is the oracle's least over the shapes it accepts") {
  std::mt19937_64 rng(2124);
  int compared = 0, restricted = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const bool rhs_made = trial % 3 == 0;
    Problem p = LoneProduct(rng, rhs_made, 0.0);
    testing::ProblemMaker draw{rng};
    const auto pick = [&](const std::vector<Elements>& values) { return draw.Pick(values); };
    ChipRules& rules = p.chip;
    rules.staging_capacity = pick({0, 8, 12, 16, 20, 24, 32, 48});
    rules.accumulator_capacity = pick({0, 4, 6, 8, 12, 16, 32});
    rules.double_staging = pick({0, 1}) == 1;
    rules.double_accumulator = pick({0, 1}) == 1;
    rules.double_vector = pick({0, 1}) == 1;
    rules.base_w = pick({1, 2, 4});
    rules.base_h = pick({1, 2, 4});
    rules.base_k = pick({1, 2, 4});
    rules.accumulator_factor = pick({1, 2});
    rules.wide_writeback = pick({0, 1}) == 1;
    // H5 hides loads only of double-buffered roles: here the staging is not, so P21 applies.
    rules.prefetch = !rules.double_staging && rules.double_vector && pick({0, 1}) == 1;
    REQUIRE(CheckChipRules(rules, p.native, p.fast_memory_capacity).empty());
    const OpId x = static_cast<OpId>(p.ops.size() - 1);
    const std::vector<char> weights = Weights(p);
    for (int lhs_kept = 0; lhs_kept <= 1; ++lhs_kept) {
      for (int rhs_kept = 0; rhs_kept <= (rhs_made ? 1 : 0); ++rhs_kept) {
        if (lhs_kept && rhs_kept) continue;  // one subgraph before cannot make both here
        double least = std::numeric_limits<double>::infinity();
        int rejected = 0;
        for (Elements w = 1; w <= 4; ++w) {
          for (Elements h = 1; h <= 4; ++h) {
            for (Elements k = 1; k <= 4; ++k) {
              const Schedule s = LoneProductSchedule(p, x, rhs_made, lhs_kept, rhs_kept, {w, h, k});
              const Evaluation e = EvaluateOracle(p, s);
              if (!e.ok()) {
                ++rejected;
                continue;
              }
              least = std::min(least, e.subgraphs.back().latency);
            }
          }
        }
        CAPTURE(trial);
        CAPTURE(lhs_kept);
        CAPTURE(rhs_kept);
        const double floor = LoneMatMulLatency(p, x, weights, lhs_kept, rhs_kept, false);
        if (least == std::numeric_limits<double>::infinity()) {
          CHECK(floor == 0);  // no shape: no claim
          continue;
        }
        CHECK(floor == doctest::Approx(least));
        ++compared;
        restricted += rejected > 0 ? 1 : 0;
      }
    }
  }
  MESSAGE("P21 with chip rules: floors compared with the oracle's least: " << compared << ", " << restricted
                                                                            << " with shapes the rules forbid");
  CHECK(compared > 250);
  CHECK(restricted > 150);
}

// With prefetch of double-buffered staging (H5), a step's loads may hide in the previous step's
// slack, so a lone MatMul can cost less than its steps' maxima: P21 stays off, and the bound stays
// at or below every shape's schedule. Shows that the step-by-step price would be too high there.
TEST_CASE("P21: off under prefetch of double-buffered staging") {
  std::mt19937_64 rng(2125);
  int below = 0, schedules = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const bool rhs_made = trial % 3 == 0;
    Problem p = LoneProduct(rng, rhs_made, 0.0);
    p.chip.double_staging = true;
    p.chip.double_vector = trial % 2 == 0;
    p.chip.prefetch = true;
    const OpId x = static_cast<OpId>(p.ops.size() - 1);
    const LowerBound bound = ComputeLowerBound(p);
    const bound_internal::AloneFloor floor = bound_internal::LoneMatMulFloor(p, x, Weights(p));
    CHECK_FALSE(floor.valid);
    // The least over every shape and retention, as in the first test.
    double least = std::numeric_limits<double>::infinity();
    for (int lhs_kept = 0; lhs_kept <= 1; ++lhs_kept) {
      for (int rhs_kept = 0; rhs_kept <= (rhs_made ? 1 - lhs_kept : 0); ++rhs_kept) {
        double alone = std::numeric_limits<double>::infinity();
        for (Elements w = 1; w <= 4; ++w) {
          for (Elements h = 1; h <= 4; ++h) {
            for (Elements k = 1; k <= 4; ++k) {
              const Schedule s = LoneProductSchedule(p, x, rhs_made, lhs_kept, rhs_kept, {w, h, k});
              const Evaluation e = EvaluateOracle(p, s);
              REQUIRE(e.ok());
              CAPTURE(trial);
              CHECK(bound.total() <= e.total * (1 + 1e-9));
              alone = std::min(alone, e.subgraphs.back().latency);
              ++schedules;
            }
          }
        }
        least = std::min(least, alone);
      }
    }
    // What P21 would claim without its H5 check: the least step-by-step price over retentions.
    double price = std::numeric_limits<double>::infinity();
    for (int lhs_kept = 0; lhs_kept <= 1; ++lhs_kept) {
      for (int rhs_kept = 0; rhs_kept <= (rhs_made ? 1 - lhs_kept : 0); ++rhs_kept) {
        price = std::min(price, LoneMatMulLatency(p, x, Weights(p), lhs_kept, rhs_kept, false));
      }
    }
    below += least < price * (1 - 1e-9) ? 1 : 0;
  }
  MESSAGE("P21 under prefetch: " << schedules << " schedules at or above the bound; " << below
                                 << " products whose least is below the step-by-step price");
  CHECK(below > 5);
}

// The hand case: P (X -> A, 4x8, base 10) and Y = A @ W (W 8x16 a weight, base 8, K = 8 > n = 4),
// B = 1, Bw = 2. Alone, Y's best is to find A retained: one row tile, four column tiles of two
// k-steps; step 0 computes 4 and loads a 4x4 slice of W (8), step 1 the same and writes its 4x4
// tile (16): 24 a tile, 96. P retaining A loads X (2 x 16) for 32. The islands part was 32 + 64
// (Y's weights 128 / 2, or its write); with P21 32 + 96 = 128, which that schedule meets.
TEST_CASE("P21: a lone MatMul by hand, met by a schedule") {
  Problem p;
  p.native = 4;
  p.tensors = {{8, 4}, {8, 4}, {16, 8}, {16, 4}};  // X, A (4 high, 8 wide), W (8 high, 16 wide), Y
  p.ops = {{OpKind::Pointwise, {0}, 1, 10}, {OpKind::MatMul, {1, 2}, 3, 8}};
  p.fast_memory_capacity = 4096;
  p.slow_memory_bandwidth = 1;
  p.chip.weight_bandwidth = 2;
  REQUIRE(p.Finalize() == "");
  REQUIRE(p.OnWeightPath(2));
  CHECK(LoneMatMulLatency(p, 1, Weights(p), true, false, false) == doctest::Approx(96));
  CHECK(LoneMatMulLatency(p, 1, Weights(p), false, false, false) == doctest::Approx(192));
  const LowerBound before = WithoutP21(p);
  const LowerBound bound = ComputeLowerBound(p);
  CHECK(before.islands == doctest::Approx(96));
  CHECK(bound.islands == doctest::Approx(128));
  CHECK(bound.total() == doctest::Approx(128));
  Schedule s;
  s.subgraphs.push_back({{0}, Granularity{4, 4, 1}, std::nullopt, {1}});
  s.subgraphs.push_back({{1}, Granularity{4, 4, 4}, std::nullopt, {}});
  const Evaluation e = EvaluateOracle(p, s);
  REQUIRE(e.ok());
  CHECK(e.subgraphs[0].latency == doctest::Approx(32));
  CHECK(e.subgraphs[1].latency == doctest::Approx(96));
  CHECK(e.total == doctest::Approx(128));  // optimal: it meets the bound
}

// P21's second form by hand: the same P and Y, and G = g(Y) (Pointwise, base 20), a graph output.
// Every subgraph holding Y has G as its epilogue or not at all. At four column tiles of two
// k-steps, with A retained, step 0 waits for its 4x4 slice of W (8) and step 1 computes 4 + gamma
// of G's base beside the same slice; G's other 20 - gamma per tile runs elsewhere on its 4 native
// tiles: 4 (8 + max(4 + gamma, 8)) + 4 (20 - gamma), 128 for any gamma from 4 to 20. The bound
// is 32 + 128 = 160 (the islands part was 32 + 112, G's and Y's compute), which the schedule
// [P retaining A], [Y, G at (4, 4, 4)] meets: its steps cost 8 and max(24, 8, 16 written).
TEST_CASE("P21: a MatMul with its epilogue by hand, met by a schedule") {
  Problem p;
  p.native = 4;
  p.tensors = {{8, 4}, {8, 4}, {16, 8}, {16, 4}, {16, 4}};  // X, A, W, Y, G
  p.ops = {{OpKind::Pointwise, {0}, 1, 10}, {OpKind::MatMul, {1, 2}, 3, 8}, {OpKind::Pointwise, {3}, 4, 20}};
  p.fast_memory_capacity = 4096;
  p.slow_memory_bandwidth = 1;
  p.chip.weight_bandwidth = 2;
  REQUIRE(p.Finalize() == "");
  CHECK(LoneMatMulLatency(p, 1, Weights(p), true, false, true, 20) == doctest::Approx(128));
  const LowerBound before = WithoutP21(p);
  const LowerBound bound = ComputeLowerBound(p);
  CHECK(before.islands == doctest::Approx(144));
  CHECK(bound.islands == doctest::Approx(160));
  CHECK(bound.total() == doctest::Approx(160));
  Schedule s;
  s.subgraphs.push_back({{0}, Granularity{4, 4, 1}, std::nullopt, {1}});
  s.subgraphs.push_back({{1, 2}, Granularity{4, 4, 4}, std::nullopt, {}});
  const Evaluation e = EvaluateOracle(p, s);
  REQUIRE(e.ok());
  CHECK(e.subgraphs[1].latency == doctest::Approx(128));
  CHECK(e.total == doctest::Approx(160));  // optimal: it meets the bound
}

// Lone MatMuls at real-chip ratios: a Pointwise-made activation (after a trunk MatMul with a
// weight, sometimes) read by 1 to 4 MatMuls with K > n (P1 keeps the Pointwise op out of their
// subgraphs), each with a weight or a Pointwise-made RHS, each followed by nothing (a graph
// output), a transpose (Layout: written, L1), one or two epilogue ops (P21's second form; their
// output read by a MatMul sometimes, with K > n another island) or a MatMul (joins its island);
// sometimes a lone MatMul reading a graph input. One path, or a weight path.
Problem LoneHeads(std::mt19937_64& rng) {
  testing::ProblemMaker make{rng};
  Problem& problem = make.problem;
  problem.native = 4;
  const Elements rows = make.Pick({3, 4, 8, 12}), d = make.Pick({4, 6, 8, 12});
  TensorId shared = make.Tensor(rows, d);
  if (!make.Coin(3)) shared = make.Op(OpKind::MatMul, {shared, make.Tensor(d, d)}, rows, d, make.PickReal({0.5, 4, 40}));
  shared = make.Op(OpKind::Pointwise, {shared}, rows, d, make.PickReal({0, 1, 8, 50}));
  const int readers = static_cast<int>(make.Pick({1, 2, 3, 4}));
  for (int r = 0; r < readers; ++r) {
    const Elements width = make.Pick({2, 4, 5, 8});
    const TensorId lhs = make.Coin(6) ? make.Tensor(rows, d) : shared;
    const TensorId rhs =
        make.Coin(4) ? make.Op(OpKind::Pointwise, {make.Tensor(d, width)}, d, width, make.PickReal({0, 2})) : make.Tensor(d, width);
    TensorId z = make.Op(OpKind::MatMul, {lhs, rhs}, rows, width, make.PickReal({0, 0.5, 4, 16, 60}));
    const int what = std::uniform_int_distribution<int>(0, 5)(make.rng);
    if (what == 1 || what == 2) z = make.Op(OpKind::Layout, {z}, width, rows, 0);
    if (what == 3) {  // an epilogue (P21's second form), sometimes two ops, sometimes read by a MatMul
      const TensorId e = make.Op(OpKind::Pointwise, {z}, rows, width, make.PickReal({0, 2, 20}));
      z = make.Coin(2) ? make.Op(OpKind::Pointwise, {e, z}, rows, width, make.PickReal({1, 10})) : e;
      if (make.Coin(3)) make.Op(OpKind::MatMul, {z, make.Tensor(width, 4)}, rows, 4, make.PickReal({1, 8}));
    }
    if (what == 4) make.Op(OpKind::MatMul, {z, make.Tensor(width, 4)}, rows, 4, make.PickReal({1, 8}));
  }
  make.AtRealRatios();
  if (make.Coin(2)) {
    problem.chip.weight_bandwidth = problem.slow_memory_bandwidth * make.PickReal({0.5, 2.3, 10});
    problem.chip.weight_fifo_capacity = make.Coin(2) ? 0 : problem.fast_memory_capacity / make.Pick({1, 4});
  }
  REQUIRE(problem.Finalize() == "");
  return problem;
}

TEST_CASE("P21: lone MatMuls priced step by step never above the oracle at real-chip ratios") {
  std::mt19937_64 rng(212100);
  int valid = 0, raised = 0, raised_schedules = 0, met = 0;
  double tightest = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    Problem problem = LoneHeads(rng);
    const double ratio[] = {0.1, 0.5, 2, 10};
    for (Op& op : problem.ops) op.base_cost *= ratio[trial % 4];
    const LowerBound bound = ComputeLowerBound(problem);
    const LowerBound before = WithoutP21(problem);
    const BoundModel model = BuildBoundModel(problem);
    const bool raises = bound.total() > before.total() * (1 + 1e-9);
    raised += raises ? 1 : 0;
    const std::vector<Schedule> schedules = testing::SampleSchedules(problem, rng, trial % 3 == 0);
    for (const Schedule& schedule : schedules) {
      const Evaluation evaluation = EvaluateOracle(problem, schedule);
      if (!evaluation.ok()) continue;
      ++valid;
      raised_schedules += raises ? 1 : 0;
      INFO("trial " << trial << ": islands " << bound.islands << " crossing " << bound.crossing << " (before "
                    << before.islands << ", " << before.crossing << "), oracle " << evaluation.total);
      CHECK(bound.islands <= evaluation.total * (1 + 1e-9));
      CHECK(bound.crossing <= evaluation.total * (1 + 1e-9));
      CHECK(bound.total() <= evaluation.total * (1 + 1e-9));
      if (raises) {
        tightest = std::max(tightest, bound.total() / evaluation.total);
        met += bound.total() >= evaluation.total * (1 - 1e-9) ? 1 : 0;
      }
      testing::CheckSuffixBounds(model, problem, schedule, evaluation);
    }
  }
  MESSAGE("P21: valid schedules " << valid << ", problems whose bound P21 raises " << raised << " ("
                                  << raised_schedules << " schedules, " << met
                                  << " meeting it), tightest raised bound / latency " << tightest);
  CHECK(valid > 2500);
  CHECK(raised > 250);
}

// P30's pattern: an island of one MatMul x = A @ W (K > n, W a graph input only x reads) and
// Pointwise ops E made from it: A made by a Pointwise op (another island: it cannot feed K > n,
// P1), E a chain of 1 to 3 ops with a branch summed back sometimes, its end read by a MatMul with
// K > n (another island), written as a graph output, or both. Tensor sizes around the capacity
// (A and E's outputs too large to retain or not), capacities from 1.5 to 16 native tiles, compute
// (at native tiles) from a tenth to ten times the time to move every tensor once.
Problem MlpIslands(std::mt19937_64& rng) {
  testing::ProblemMaker make{rng};
  Problem& problem = make.problem;
  problem.native = make.Pick({4, 8});
  const Elements n = problem.native;
  const Elements rows = make.Pick({n / 2, n, n + 3, 2 * n});
  const Elements k = make.Pick({n + 1, n + 3, 2 * n, 3 * n});
  const Elements cols = make.Pick({n / 2, n, n + 2, 2 * n, 3 * n});
  const TensorId a = make.Op(OpKind::Pointwise, {make.Tensor(rows, k)}, rows, k, make.PickReal({1, 4}));
  TensorId z = make.Op(OpKind::MatMul, {a, make.Tensor(k, cols)}, rows, cols, make.PickReal({4, 16}));
  const TensorId first = z;
  const int chain = static_cast<int>(make.Pick({1, 2, 3}));
  for (int i = 0; i < chain; ++i) {
    z = make.Op(OpKind::Pointwise, {z}, rows, cols, make.PickReal({0, 1, 4, 8}));
    if (i == 1 && make.Coin(2)) z = make.Op(OpKind::Pointwise, {first, z}, rows, cols, make.PickReal({1, 2}));
  }
  const int end = std::uniform_int_distribution<int>(0, 2)(rng);
  if (end != 1 && cols > n) {
    const Elements out_cols = make.Pick({n, n + 2});
    make.Op(OpKind::MatMul, {z, make.Tensor(cols, out_cols)}, rows, out_cols, make.PickReal({2, 8}));
  }
  if (end == 2 || cols <= n) make.Op(OpKind::Pointwise, {z}, rows, cols, 0);  // a second reader
  const Elements big = rows * std::max(k, cols);
  problem.fast_memory_capacity = std::max<Elements>(
      3 * n * n / 2, make.Pick({3 * n * n / 2, 2 * n * n, 5 * n * n / 2, 3 * n * n, 4 * n * n, 16 * n * n, big - 1, big}));
  problem.slow_memory_bandwidth = make.PickReal({0.25, 1, 4});
  REQUIRE(problem.Finalize() == "");
  ScaleComputeToTraffic(problem, make.PickReal({0.1, 0.5, 1, 2, 10}));
  return problem;
}

// P30 against the oracle: MlpIslands, every schedule of RealRatioSchedules (also at the capacity
// of its own peak working set), and, per problem, x with its chain, x alone and the chain alone
// at every tile shape. Counts the problems where P30 raises the bound (against the test-only
// switch g_alone_loads = false).
TEST_CASE("bound: P30's MatMul with its epilogue, loads and tiles, never above the oracle") {
  int valid = 0, tight = 0, enumerated = 0, raised = 0, decided = 0, met = 0;
  double tightest = 0;
  std::mt19937_64 rng(2828);
  for (int trial = 0; trial < 600; ++trial) {
    const Problem problem = MlpIslands(rng);
    CAPTURE(trial);
    LowerBound without;
    const LowerBound bound = BoundAndWithout(problem, bound_internal::g_alone_loads, without);
    CHECK(bound.total() >= without.total() * (1 - kSlack));
    const bool rises = bound.total() > without.total() * (1 + 1e-9);
    raised += rises ? 1 : 0;
    const auto check = [&](const Evaluation& e) {
      CHECK(bound.total() <= e.total * (1 + kSlack));
      CHECK(bound.islands <= e.total * (1 + kSlack));
      CHECK(bound.crossing <= e.total * (1 + kSlack));
      if (!rises) return;
      ++decided;
      tightest = std::max(tightest, bound.total() / e.total);
      met += bound.total() >= e.total * (1 - 1e-9) ? 1 : 0;
    };
    const std::vector<Schedule> schedules = RealRatioSchedules(
        problem, rng, trial, 4, [](int s) { return ValidRandomOptions(0.2 + 0.25 * s, 0.3, 0.3); }, 8, 4);
    tight += ForEachValidAndAtPeak(
        problem, schedules, "P30 trial " + std::to_string(trial),
        [&](const Evaluation& e) {
          ++valid;
          check(e);
        },
        [&](const Problem& squeezed, const Evaluation& e) {
          CHECK(ComputeLowerBound(squeezed).total() <= e.total * (1 + kSlack));
        });
    // x is op 1; its chain the Pointwise ops made from it and from each other (up to the first
    // op outside the island).
    std::vector<OpId> chain;
    for (OpId o = 2; o < static_cast<OpId>(problem.ops.size()); ++o) {
      if (problem.ops[o].kind != OpKind::Pointwise || problem.ops[o].base_cost == 0) break;
      chain.push_back(o);
    }
    std::vector<OpId> with_x = {1};
    with_x.insert(with_x.end(), chain.begin(), chain.end());
    enumerated += ForEachGroupShape(problem, with_x, check);
    enumerated += ForEachGroupShape(problem, {1}, check);
    if (!chain.empty()) enumerated += ForEachGroupShape(problem, chain, check);
  }
  MESSAGE("P30: bound raised on " << raised << " problems, valid schedules " << valid << ", at their peak " << tight
                                  << ", enumerated " << enumerated << ", checked against a raised bound " << decided
                                  << " (met " << met << "), tightest bound/latency there " << tightest);
  CHECK(valid > 1500);
  CHECK(enumerated > 5000);
  CHECK(raised > 50);
}

}  // namespace
}  // namespace annealer
