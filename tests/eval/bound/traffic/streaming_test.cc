// P13-P15 and P19, the streaming part of the lower bound (eval/bound/traffic/streaming.h,
// docs/lower-bound.md): streamed weights (P14) and streamed activations (P19) never above the
// oracle, and P13's, P15's and P19's cases by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "eval/bound/analysis.h"
#include "eval/bound/bounds.h"
#include "eval/bound/traffic/streaming.h"
#include "eval/oracle.h"
#include "eval/random_schedule.h"
#include "tests/support/bound_checks.h"
#include "tests/support/bound_nets.h"
#include "tests/support/problem_maker.h"

namespace annealer {
namespace {

using testing::CheckValidSchedule;
using testing::RandomBlocks;
using testing::RandomLayers;
using testing::RealRatioSchedules;
using testing::ValidRandomOptions;
using testing::kSlack;

// P14 at real-chip ratios: transformer blocks, random layered networks and random DAGs, a fifth
// of them with a weight path (H6); random schedules, both baselines, short searches, the exact
// solver's best; the streaming part and every suffix bound (through CheckValidSchedule) against
// the oracle.
TEST_CASE("bound: streamed weights (P14) never above the oracle at real-chip ratios") {
  int valid = 0, decided = 0, gained = 0;
  double tightest = 0;
  std::mt19937_64 rng(9300);
  for (int trial = 0; trial < 600; ++trial) {
    Problem problem;
    if (trial % 3 != 2) {
      problem = RandomBlocks(rng);
    } else if (trial % 2 == 0) {
      problem = RandomLayers(rng);
    } else {
      RandomProblemOptions problem_options;
      problem_options.max_ops = 3 + trial % 10;
      problem_options.native = 4;
      problem_options.layout_probability = trial % 4 == 1 ? 0.2 : 0;
      problem = RandomProblem(rng, kAllDagShapes[trial % 7], problem_options);
      problem.fast_memory_capacity = 16 * 4096;
    }
    // H6 on a fifth of them: the weights on a path of their own (P14 counts loads at B + Bw).
    if (trial % 5 == 3) problem.chip.weight_bandwidth = problem.slow_memory_bandwidth * (trial % 2 == 0 ? 0.5 : 2);
    const std::vector<Schedule> schedules = RealRatioSchedules(
        problem, rng, trial, 3,
        [](int s) { return ValidRandomOptions(0.2 + 0.35 * s, 0.2, 0.3); },
        6, 3);
    const LowerBound bound = ComputeLowerBound(problem);
    gained += bound.streaming > bound.compute * (1 + 1e-9) ? 1 : 0;
    const bool streaming_decides =
        bound.streaming > std::max({bound.compute, bound.graph_io, bound.traffic, bound.combined}) * (1 + 1e-9);
    for (const Schedule& schedule : schedules) {
      CAPTURE(trial);
      if (!CheckValidSchedule(problem, schedule, "P14 trial " + std::to_string(trial))) continue;
      const Evaluation e = EvaluateOracle(problem, schedule);
      ++valid;
      CHECK(bound.streaming <= e.total * (1 + kSlack));
      CHECK(bound.crossing <= e.total * (1 + kSlack));
      decided += streaming_decides ? 1 : 0;
      if (streaming_decides) tightest = std::max(tightest, bound.streaming / e.total);
    }
  }
  MESSAGE("valid schedules " << valid << ", problems with a streaming gain " << gained
                              << ", schedules where it is above the parts before P12 " << decided
                              << ", tightest streaming/latency " << tightest);
  CHECK(valid > 1200);
  CHECK(decided > 100);
}

// P19's pattern at a small scale: a Pointwise op makes A (M x K, K > n) that one to three
// MatMuls read on one side (A @ W_j, or V_j @ A' with A' of K x N), with weights as graph inputs,
// outputs summed by Pointwise ops, read by a transpose or left as graph outputs; sometimes a
// reader of the other kind (a Pointwise op, a MatMul on the other side) or a MatMul producer,
// which P19 must refuse. Capacities mostly below |A| + 1 (never retained), some above.
Problem StreamedActivationNet(std::mt19937_64& rng) {
  testing::ProblemMaker make{rng};
  Problem& problem = make.problem;
  problem.native = make.Pick({2, 4});
  const Elements n = problem.native;
  auto mm_cost = [&]() { return make.PickReal({0.25, 1, 4}); };
  auto pw_cost = [&]() { return make.PickReal({0, 0.5, 2, 8}); };
  const Elements m = make.Pick({8, 12, 16}), k = make.Pick({2 * n, 3 * n, 4 * n + 1, 6 * n}), cols = make.Pick({n, 2 * n, 3 * n});
  const bool rhs = make.Chance(0.3);  // A is the readers' RHS (K x cols) instead of their LHS (m x K)
  const Elements ah = rhs ? k : m, aw = rhs ? cols : k;
  TensorId a;
  if (make.Chance(0.15)) {
    a = make.Op(OpKind::MatMul, {make.Tensor(ah, n), make.Tensor(n, aw)}, ah, aw, mm_cost());  // refused: may be ephemeral
  } else {
    a = make.Op(OpKind::Pointwise, {make.Tensor(ah, aw)}, ah, aw, pw_cost());
    if (make.Chance(0.3)) a = make.Op(OpKind::Pointwise, {a}, ah, aw, pw_cost());
  }
  const int readers = static_cast<int>(make.Pick({1, 1, 2, 3}));
  const Elements out_w = rhs ? cols : make.Pick({n, 2 * n});
  std::vector<TensorId> outs;
  for (int j = 0; j < readers; ++j) {
    const TensorId other = rhs ? make.Tensor(m, k) : make.Tensor(k, out_w);
    outs.push_back(make.Op(OpKind::MatMul, rhs ? std::vector<TensorId>{other, a} : std::vector<TensorId>{a, other}, m,
                      out_w, mm_cost()));
  }
  if (make.Chance(0.1)) make.Op(OpKind::Pointwise, {a}, ah, aw, pw_cost());  // refused: a Pointwise reader
  if (make.Chance(0.1)) {                                                  // refused: read on the other side
    if (rhs) {
      make.Op(OpKind::MatMul, {a, make.Tensor(cols, n)}, k, n, mm_cost());
    } else {
      make.Op(OpKind::MatMul, {make.Tensor(n, m), a}, n, k, mm_cost());
    }
  }
  const int tail = static_cast<int>(make.Pick({0, 1, 2, 3, 3}));
  if (tail == 1 && outs.size() > 1) {
    TensorId sum = outs[0];
    for (size_t j = 1; j < outs.size(); ++j) sum = make.Op(OpKind::Pointwise, {sum, outs[j]}, m, out_w, pw_cost());
  } else if (tail == 2) {
    make.Op(OpKind::Layout, {outs[0]}, out_w, m, 0);
  } else if (tail == 3) {
    // A compute-heavy MatMul y behind an epilogue, its output added to a reader's: with
    // out_w > n (a Pointwise op into y is illegal, V11) in the readers' island through the add,
    // never in their class unless its reduction is theirs, so its compute cannot hide their loads.
    const TensorId e = make.Op(OpKind::Pointwise, {outs[0]}, m, out_w, pw_cost());
    const TensorId y = make.Op(OpKind::MatMul, {e, make.Tensor(out_w, out_w)}, m, out_w, make.PickReal({8, 32, 128}));
    make.Op(OpKind::Pointwise, {y, outs[0]}, m, out_w, pw_cost());
  }
  const Elements size = ah * aw, floor = 6 * n * n;
  problem.fast_memory_capacity = std::max(floor, make.Pick({size / 2, size - 1, size, size + 1, size * 4}));
  problem.slow_memory_bandwidth = make.PickReal({0.25, 1, 4});
  REQUIRE(problem.Finalize() == "");
  return problem;
}

// P19 at real-chip ratios and tight capacities: the bound (and every suffix bound, through
// CheckValidSchedule) against the oracle on random valid schedules, both baselines, short
// searches and the exact solver's best; P19's gain measured against the same bound without it.
TEST_CASE("bound: streamed activations (P19) never above the oracle") {
  int valid = 0, problems_gained = 0, schedules_decided = 0, shares = 0;
  double tightest = 0;
  std::mt19937_64 rng(1919);
  for (int trial = 0; trial < 3000; ++trial) {
    const Problem problem = StreamedActivationNet(rng);
    for (OpId x = 0; x < static_cast<OpId>(problem.ops.size()); ++x) {
      shares += bound_internal::StreamedActivations(problem, x) > 0 ? 1 : 0;
    }
    const std::vector<Schedule> schedules = RealRatioSchedules(
        problem, rng, trial, 4,
        [](int s) { return ValidRandomOptions(0.15 + 0.25 * s, s % 2 == 0 ? 0.2 : 0.5, 0.3); },
        10, 6);
    const LowerBound bound = ComputeLowerBound(problem);
    bound_internal::g_streamed_activations = false;
    const LowerBound before = ComputeLowerBound(problem);
    bound_internal::g_streamed_activations = true;
    CHECK(bound.total() >= before.total() * (1 - 1e-12));
    const bool gains = bound.total() > before.total() * (1 + 1e-9);
    problems_gained += gains ? 1 : 0;
    for (const Schedule& schedule : schedules) {
      CAPTURE(trial);
      if (!CheckValidSchedule(problem, schedule, "P19 trial " + std::to_string(trial))) continue;
      const Evaluation e = EvaluateOracle(problem, schedule);
      ++valid;
      CHECK(bound.streaming <= e.total * (1 + kSlack));
      CHECK(bound.islands <= e.total * (1 + kSlack));
      CHECK(bound.crossing <= e.total * (1 + kSlack));
      if (gains) {
        ++schedules_decided;
        tightest = std::max(tightest, bound.total() / e.total);
      }
    }
  }
  MESSAGE("P19: valid schedules " << valid << ", ops with a streamed share " << shares
                                  << ", problems whose bound P19 raises " << problems_gained
                                  << ", schedules checked against a raised bound " << schedules_decided
                                  << ", tightest bound/latency there " << tightest);
  CHECK(valid > 7500);
  CHECK(problems_gained > 50);
}

// P19 by hand: P (Pointwise, base 40) makes A = P(X), 8 x 16, that only M = A @ W reads
// (K = 16 > n = 4, N = 8, base 1, a graph output); capacity 100 < |A| + 1. Every T instance of
// M streams A once per column tile (2 x 128) and W once per row tile (2 x 128) and writes its
// 64 outputs: 576 at B = 1 against 4 of compute, and no op can sit beside M (P, Pointwise, is
// illegal into K > n, V11). P alone: 320 of compute against 256 of traffic. The bound is
// 320 + 576 = 896, what the two-subgraph schedule costs; without P19 (A's loads unclaimed) 640.
TEST_CASE("bound: P19 by hand, met by a schedule") {
  Problem p;
  p.native = 4;
  p.tensors.push_back({16, 8});  // X (width 16, height 8)
  p.tensors.push_back({16, 8});  // A
  p.tensors.push_back({8, 16});  // W
  p.tensors.push_back({8, 8});   // Y
  p.ops.push_back({OpKind::Pointwise, {0}, 1, 40});
  p.ops.push_back({OpKind::MatMul, {1, 2}, 3, 1});
  p.fast_memory_capacity = 100;
  p.slow_memory_bandwidth = 1;
  REQUIRE(p.Finalize() == "");
  CHECK(bound_internal::StreamedActivations(p, 1) == doctest::Approx(256));
  const LowerBound bound = ComputeLowerBound(p);
  CHECK(bound.streaming == doctest::Approx(896));
  CHECK(bound.total() == doctest::Approx(896));
  Schedule schedule;
  schedule.subgraphs.push_back({{0}, {4, 4, 1}, std::nullopt, {}});
  schedule.subgraphs.push_back({{1}, {4, 4, 4}, std::nullopt, {}});
  const Evaluation e = EvaluateOracle(p, schedule);
  REQUIRE(e.ok());
  CHECK(e.total == doctest::Approx(896));
  bound_internal::g_streamed_activations = false;
  const LowerBound before = ComputeLowerBound(p);
  bound_internal::g_streamed_activations = true;
  CHECK(before.streaming == doctest::Approx(640));
}

// P15 by hand: Z = X @ V (small operands, K = 2) and a Pointwise op Z -> A feed `heads`
// MatMuls A @ W_j (K = 48 > n = 4), each read only by a transpose (a Layout op), so each sits
// alone and loads A unless the subgraph before retains it. Recomputing Z and A before every head
// loads 112 elements instead of A's 384: at low costs of the two producers it beats loading A.
// The bound never exceeds either schedule, at any of those costs (a bound that ignored the
// recomputing hosts, charging every head but one A's load, would exceed the first).
TEST_CASE("bound: P15's reloads by hand, against recomputing and retaining the input") {
  int active = 0;
  for (double producer_cost : {0.0, 1.0, 20.0, 400.0}) {
    for (int heads : {2, 3, 5}) {
      Problem p;
      p.native = 4;
      p.tensors.push_back({2, 8});   // X (width 2, height 8)
      p.tensors.push_back({48, 2});  // V
      p.tensors.push_back({48, 8});  // Z
      p.tensors.push_back({48, 8});  // A
      p.ops.push_back({OpKind::MatMul, {0, 1}, 2, producer_cost});
      p.ops.push_back({OpKind::Pointwise, {2}, 3, producer_cost});
      std::vector<TensorId> products;
      for (int j = 0; j < heads; ++j) {
        p.tensors.push_back({4, 48});  // W_j
        p.tensors.push_back({4, 8});   // K_j
        const auto w = static_cast<TensorId>(p.tensors.size() - 2), k = w + 1;
        p.ops.push_back({OpKind::MatMul, {3, w}, k, 2});
        products.push_back(k);
      }
      for (int j = 0; j < heads; ++j) {
        p.tensors.push_back({8, 4});  // K_j transposed
        p.ops.push_back({OpKind::Layout, {products[j]}, static_cast<TensorId>(p.tensors.size() - 1), 0});
      }
      p.fast_memory_capacity = 4096;
      p.slow_memory_bandwidth = 1;
      REQUIRE(p.Finalize() == "");
      const LowerBound bound = ComputeLowerBound(p);
      CAPTURE(producer_cost);
      CAPTURE(heads);
      active += bound.streaming > std::max({bound.compute, bound.graph_io, bound.traffic, bound.combined}) ? 1 : 0;
      for (bool recompute : {true, false}) {
        Schedule schedule;
        const Granularity tile{4, 4, 1}, reduction{4, 4, 4}, small{4, 4, 2};
        if (!recompute) schedule.subgraphs.push_back({{0, 1}, small, std::nullopt, {}});
        for (int j = 0; j < heads; ++j) {
          if (recompute) schedule.subgraphs.push_back({{0, 1}, small, std::nullopt, {3}});
          schedule.subgraphs.push_back({{static_cast<OpId>(2 + j)}, reduction, std::nullopt, {}});
        }
        for (int j = 0; j < heads; ++j) {
          schedule.subgraphs.push_back({{static_cast<OpId>(2 + heads + j)}, tile, std::nullopt, {}});
        }
        CAPTURE(recompute);
        REQUIRE(EvaluateOracle(p, schedule).ok());
        CHECK(CheckValidSchedule(p, schedule, "P15 by hand"));
      }
    }
  }
  CHECK(active > 0);  // the case has teeth: P15 decides some of these bounds
}

// P13's cases by hand: out = P @ Wo (K = 4 = n), P = A @ V upstream of it (its strip, full
// reduction), V = X @ Wv the RHS of P: V's region is every row by the k-range of out's tile, so
// the whole of V is made once per tile of out (2 x 2 tiles): 4 passes, where the least over the
// three cases of P13 (rows x columns 4, rows x k-steps 2, columns x k-steps 2) gave 2. The
// oracle charges exactly that, and the bound's factor for V in FR says so.
TEST_CASE("bound: P13's cases by hand, a k-range region is made once per tile") {
  Problem p;
  p.native = 4;
  p.tensors = {{8, 8}, {8, 8}, {4, 8}, {4, 8}, {4, 8}, {8, 4}, {8, 8}};  // A X Wv V P Wo out
  p.ops.push_back({OpKind::MatMul, {1, 2}, 3, 10});  // V = X @ Wv
  p.ops.push_back({OpKind::MatMul, {0, 3}, 4, 1});   // P = A @ V (K = 8)
  p.ops.push_back({OpKind::MatMul, {4, 5}, 6, 1});   // out = P @ Wo (K = 4)
  p.fast_memory_capacity = 4096;
  p.slow_memory_bandwidth = 1000;
  REQUIRE(p.Finalize() == "");
  const bound_internal::Analysis a(p);
  REQUIRE(a.HasMode(0, bound_internal::kFR));
  CHECK(a.Factor(0, bound_internal::kFR) == 4);
  Schedule schedule;
  schedule.subgraphs.push_back({{0, 1, 2}, Granularity{4, 4, 4}, std::nullopt, {}});
  const Evaluation e = EvaluateOracle(p, schedule);
  REQUIRE(e.ok());
  // V: 4 tiles x its 2 native tiles x 10; P: its strip once per tile (1); out: 1 per tile.
  CHECK(e.subgraphs[0].compute_time == doctest::Approx(4 * 20 + 4 + 4));
  CHECK(CheckValidSchedule(p, schedule, "P13 cases by hand"));
}

}  // namespace
}  // namespace annealer
