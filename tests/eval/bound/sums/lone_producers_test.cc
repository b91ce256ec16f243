// P55 (eval/bound/sums/upstream/lone_producers.h): P40's part with its claimants' lone producers never
// exceeds the oracle latency of a valid schedule on random problems at real-chip ratios (P40's
// fanned sums with taps of K up to 2n, some LHS made by a Pointwise op and small enough to retain),
// plus its value by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "eval/bound/analysis.h"
#include "eval/bound/bounds.h"
#include "eval/bound/sums/upstream/lhs_strip_sums.h"
#include "eval/bound/sums/upstream/lone_producers.h"
#include "eval/bound/sums/upstream/strip_sink_writes.h"
#include "eval/bound/sums/upstream/target_instances.h"
#include "eval/bound/sums/upstream/upstream_sums.h"
#include "eval/oracle.h"
#include "search/starts/baseline.h"
#include "tests/eval/bound/sums/fanned_nets.h"
#include "tests/support/sample_schedules.h"
#include "tests/eval/bound/sums/strip_sums_driver.h"

namespace annealer {
namespace {

TEST_CASE("bound: P55's sink writes never above the oracle") {
  bound_internal::g_target_instances = false;
  int written = 0;
  std::mt19937_64 rng(5556);
  const auto per_problem = [&](const Problem& problem, const LowerBound&) {
    const bound_internal::Analysis analysis(problem);
    for (const auto& cl : bound_internal::LhsStripSumFloor(problem, analysis).claimants) {
      if (cl.sink_write > 0) {
        ++written;
        break;
      }
    }
  };
  const testing::StripSumCounts c = testing::StripSumsAgainstOracle(
      rng, 2000, [](std::mt19937_64& r) { return testing::FannedNets(r, r() % 2 == 0, false); }, bound_internal::g_strip_sink_writes,
      [](const LowerBound& bound, const LowerBound& without) { return bound.lhs_strip_sums > without.lhs_strip_sums * (1 + 1e-9); },
      per_problem, false);
  MESSAGE("P55 writes: problems with a written sink " << written << ", bound raised on " << c.raised << ", valid schedules " << c.valid
                                                     << ", at their peak " << c.tight << ", enumerated " << c.enumerated
                                                     << ", checked where the writes raise the part " << c.decided
                                                     << ", tightest part/latency there " << c.tightest
                                                     << "; schedules below the bound without them (another part) " << c.earlier);
  bound_internal::g_target_instances = true;
  CHECK(written > 1000);
  CHECK(c.valid > 4000);
}

TEST_CASE("bound: P55's lone producers never above the oracle") {
  bound_internal::g_target_instances = false;
  int floored = 0, retained = 0, discounted = 0;
  std::mt19937_64 rng(5555);
  const auto per_problem = [&](const Problem& problem, const LowerBound&) {
    const bound_internal::Analysis analysis(problem);
    for (const auto& cl : bound_internal::LhsStripSumFloor(problem, analysis).claimants) {
      if (cl.lone_floors.empty()) continue;
      ++floored;
      retained += cl.lone_retained != cl.lone_floors ? 1 : 0;
      discounted += cl.lone_discount > 0 ? 1 : 0;
      break;
    }
  };
  const testing::StripSumCounts c = testing::StripSumsAgainstOracle(
      rng, 3000, [](std::mt19937_64& r) { return testing::FannedNets(r, false, true); }, bound_internal::g_lone_producers,
      [](const LowerBound& bound, const LowerBound& without) { return bound.lhs_strip_sums > without.lhs_strip_sums * (1 + 1e-9); },
      per_problem, true);
  MESSAGE("P55: problems with a floored claimant " << floored << " (some LHS retainable " << retained << ", a discount "
                                                 << discounted << "), bound raised on " << c.raised << ", valid schedules " << c.valid
                                                 << ", at their peak " << c.tight << ", enumerated " << c.enumerated
                                                 << ", checked where P55 raises the part " << c.decided << ", tightest part/latency there "
                                                 << c.tightest << "; schedules below the bound without P55 (another part) " << c.earlier);
  bound_internal::g_target_instances = true;
  CHECK(floored > 600);
  CHECK(discounted > 40);
  CHECK(c.raised > 200);
  CHECK(c.valid > 6000);
  CHECK(c.enumerated > 150000);
}

// P55 by hand: two taps x_i = A @ W_i (A 8x8 a graph input, W_i 8x4 their own graph inputs, K = 8 >
// n = 4, base 20, c = 40 each) summed by s (base 1, c_s = 2), whose output is the LHS of y = s @ W'
// (4x4, base 20), ReLU'd (base 1) into F = g @ V (4x4, base 20, a graph output); capacity 24, B = 1,
// compute 164. A tap alone costs at least 160 (at [4, 4, 1]: two tiles of eight k-steps, each loading
// A's 4 x 1 and W's 1 x 4, the last writing the 16-element tile: 7 x 8 + 24 per tile, against 2.5 of
// compute a step), so each unfused tap's lone instance claims 120. Every configuration of s with
// j = 0 or 1 fused taps has v1 >= 1 or >= 42 (P40's least, SL and T), now +240 or +120 at all
// three weights, so the least is T with both fused: r c + 2 min(r, 8) c <= 24 at r = 4, c = 2, four
// tiles against two (tau = 2), X_2 = 2 + 80: (82, 0, 0). The part at lambda = (1, 0, 0) is 164 + 82
// (the other claimant, the ReLU of y, claims 0 there); P40 alone gave 181.06, the bound 195.43 (P18).
// The exact solver's optimum (no recomputation) is 576.
TEST_CASE("bound: P55 by hand, two taps of K > n into an LHS strip") {
  Problem problem;
  problem.native = 4;
  // {width, height}: A W1 o1 W2 o2 s W' y g V out
  problem.tensors = {{8, 8}, {4, 8}, {4, 8}, {4, 8}, {4, 8}, {4, 8}, {4, 4}, {4, 8}, {4, 8}, {4, 4}, {4, 8}};
  problem.ops.push_back({OpKind::MatMul, {0, 1}, 2, 20});
  problem.ops.push_back({OpKind::MatMul, {0, 3}, 4, 20});
  problem.ops.push_back({OpKind::Pointwise, {2, 4}, 5, 1});
  problem.ops.push_back({OpKind::MatMul, {5, 6}, 7, 20});
  problem.ops.push_back({OpKind::Pointwise, {7}, 8, 1});
  problem.ops.push_back({OpKind::MatMul, {8, 9}, 10, 20});
  problem.fast_memory_capacity = 24;
  problem.slow_memory_bandwidth = 1;
  REQUIRE(problem.Finalize().empty());
  const bound_internal::Analysis analysis(problem);
  const bound_internal::UpstreamSums part = bound_internal::LhsStripSumFloor(problem, analysis);
  const bound_internal::UpstreamSums::Claimant* s = nullptr;
  for (const auto& cl : part.claimants) {
    if (cl.sum == 2) s = &cl;
  }
  REQUIRE(s != nullptr);
  CHECK(s->upstream);
  CHECK(s->lone_floors == std::vector<double>{120, 120});
  CHECK(s->lone_retained == std::vector<double>{120, 120});
  CHECK(s->lone_discount == 0);
  // The floor is the oracle's: a tap alone at its best shape, the rest as the baseline runs it.
  const Schedule base = BuildBaseline(problem);
  double alone = 1e300;
  for (Elements h = 1; h <= 4; ++h) {
    for (Elements w = 1; w <= 4; ++w) {
      for (Elements k = 1; k <= 4; ++k) {
        Subgraph tap;
        tap.ops = {0};
        tap.granularity = {w, h, k};
        const Schedule schedule = testing::WithGroup(base, tap);
        const Evaluation e = EvaluateOracle(problem, schedule);
        if (!e.ok()) continue;
        for (size_t i = 0; i < schedule.subgraphs.size(); ++i) {
          if (schedule.subgraphs[i].ops == std::vector<OpId>{0}) alone = std::min(alone, e.subgraphs[i].latency);
        }
      }
    }
  }
  CHECK(alone == doctest::Approx(160));
  const LowerBound bound = ComputeLowerBound(problem);
  CHECK(bound.compute == doctest::Approx(164));
  CHECK(bound.lhs_strip_sums == doctest::Approx(246));
  CHECK(bound.total() == doctest::Approx(246));
  const Latency optimum = testing::ExactOptimum(problem);
  CHECK(optimum == doctest::Approx(576));
  CHECK(bound.total() <= optimum);
  // The sink writes: s's and the ReLU's closures ({s}, {g}) are disjoint, both 8 x 4 > 24, so each
  // mode-T subgraph of either writes its own sink's 32; at lambda = (1, 0, 0) they add nothing here.
  CHECK(s->sink_write == 32);
  bound_internal::g_lone_producers = false;
  const LowerBound writes_only = ComputeLowerBound(problem);
  bound_internal::g_strip_sink_writes = false;
  const LowerBound without = ComputeLowerBound(problem);
  bound_internal::g_lone_producers = true;
  bound_internal::g_strip_sink_writes = true;
  CHECK(writes_only.lhs_strip_sums == doctest::Approx(182.893).epsilon(1e-5));
  CHECK(without.lhs_strip_sums == doctest::Approx(181.0625));
  CHECK(without.total() == doctest::Approx(195.428571).epsilon(1e-6));
}

// P55's sink writes need the claimant's Pointwise closure to meet no other claimant's of its shape:
// two sums s1 = x1 + x2 and s2 = x3 + x4 of 8x4 MatMul outputs (capacity 24), each the LHS of a
// MatMul, claim a write each; added together by z = s1 + s2 they may share z as their one sink in
// mode T, and neither claims it.
TEST_CASE("bound: P55's sink writes by hand, two sums that may share a sink claim none") {
  for (const bool shared : {false, true}) {
    Problem problem;
    problem.native = 4;
    // A, W1..W4 (4x4), o1..o4 (8x4), s1, s2, V1, V2, f1, f2, then z
    problem.tensors = {{4, 8}};
    for (int i = 0; i < 4; ++i) problem.tensors.push_back({4, 4});
    for (int i = 0; i < 4; ++i) problem.tensors.push_back({4, 8});
    problem.tensors.push_back({4, 8});  // 9: s1
    problem.tensors.push_back({4, 8});  // 10: s2
    problem.tensors.push_back({4, 4});  // 11: V1
    problem.tensors.push_back({4, 4});  // 12: V2
    problem.tensors.push_back({4, 8});  // 13: f1
    problem.tensors.push_back({4, 8});  // 14: f2
    for (int i = 0; i < 4; ++i) problem.ops.push_back({OpKind::MatMul, {0, 1 + i}, 5 + i, 10});
    problem.ops.push_back({OpKind::Pointwise, {5, 6}, 9, 1});
    problem.ops.push_back({OpKind::Pointwise, {7, 8}, 10, 1});
    problem.ops.push_back({OpKind::MatMul, {9, 11}, 13, 10});
    problem.ops.push_back({OpKind::MatMul, {10, 12}, 14, 10});
    if (shared) {
      problem.tensors.push_back({4, 8});  // 15: z
      problem.ops.push_back({OpKind::Pointwise, {9, 10}, 15, 1});
    }
    problem.fast_memory_capacity = 24;
    problem.slow_memory_bandwidth = 1;
    REQUIRE(problem.Finalize().empty());
    const bound_internal::Analysis analysis(problem);
    const bound_internal::UpstreamSums part = bound_internal::LhsStripSumFloor(problem, analysis);
    int sums = 0;
    for (const auto& cl : part.claimants) {
      if (cl.sum != 4 && cl.sum != 5) continue;
      ++sums;
      CHECK(cl.sink_write == (shared ? 0 : 32));
    }
    CHECK(sums == 2);
  }
}

}  // namespace
}  // namespace annealer
