// The constructive starts (search/starts/constructive.h): greedy fusion, pattern grouping and the
// polish on the bundled problems, and the passes that regroup readers and gather taps, on hand
// problems and random ones.
#include <doctest/doctest.h>

#include <array>
#include <initializer_list>
#include <iomanip>
#include <random>
#include <string>
#include <vector>

#include "eval/cost/cost_cache.h"
#include "eval/cost/incremental.h"
#include "eval/model/subgraph_structure.h"
#include "eval/oracle.h"
#include "search/moves/moves.h"
#include "search/starts/baseline.h"
#include "search/starts/constructive.h"
#include "search/subgraph_tools.h"
#include "src/io/contest/problem_stack.h"
#include "tests/search/hand_cases.h"
#include "tests/support/graph_builder.h"
#include "tests/support/test_files.h"

namespace annealer {
namespace {

using testing::BestInOneMove;
using testing::FanOutHeads;
using testing::FittedGroups;
using testing::QueryValueHeads;
using testing::ReadBundledProblem;

TEST_CASE("starts: MergeReaderGroups merges the heads that each load one tensor, where greedy fusion stops") {
  const Problem problem = FanOutHeads();
  CostCache cache(1 << 16);
  SubgraphPricer pricer(problem, &cache);
  const auto never = [] { return false; };
  // The baseline (each op alone, 4,320.1 per its own fits) and the greedy's pairwise merges:
  // each head's two MatMuls fuse, but N never joins one head alone (its recompute there costs
  // more than the one load of T it saves).
  const Schedule baseline = BuildBaseline(problem);
  const Schedule fused = GreedyFusion(problem, pricer, baseline, never);
  const Evaluation fused_eval = EvaluateOracle(problem, fused);
  REQUIRE(fused_eval.ok());
  CHECK(fused_eval.total == doctest::Approx(131072.0 / 273 + 4 * 122880.0 / 273));  // 2,280.557
  // From there the readers' merge at each place: N and the four heads in one subgraph, every
  // graph input loaded once and every output written once (294,912 elements, 1,080.264).
  const Schedule merged = MergeReaderGroups(problem, pricer, fused, never);
  const Evaluation merged_eval = EvaluateOracle(problem, merged);
  REQUIRE_MESSAGE(merged_eval.ok(), merged_eval.violation.Message());
  CHECK(merged_eval.total == doctest::Approx(294912.0 / 273));
  CHECK(merged.subgraphs.size() == 1);
  // Deterministic, and a no-op where no tensor has three readers (problem 5).
  CHECK(MergeReaderGroups(problem, pricer, fused, never) == merged);
  const Problem five = ReadBundledProblem("mlsys-2026-5.json");
  CostCache five_cache(1 << 16);
  SubgraphPricer five_pricer(five, &five_cache);
  const Schedule five_start = GreedyFusion(five, five_pricer, BuildBaseline(five), never);
  CHECK(MergeReaderGroups(five, five_pricer, five_start, never) == five_start);
}

TEST_CASE("starts: RegroupReaderParts splits heads into query and value parts and regroups them, which no move does in one step") {
  // 140,000 elements: one head's query and value parts with N fit, and so do two heads' query
  // parts or two heads' value parts with N, but not all of a head and N at the sides that keep
  // the start's heads cheap.
  const Problem problem = QueryValueHeads(140000, 4);
  CostCache cache(1 << 16);
  SubgraphPricer pricer(problem, &cache);
  const std::vector<int> rank = TopologicalRanks(problem);
  const auto never = [] { return false; };
  std::vector<std::vector<OpId>> groups{{0}};
  for (OpId h = 0; h < 4; ++h) groups.push_back({1 + 5 * h, 2 + 5 * h, 3 + 5 * h, 4 + 5 * h, 5 + 5 * h});
  const Schedule start = FittedGroups(pricer, groups);
  IncrementalEvaluator evaluator(problem, &cache);
  REQUIRE(evaluator.Reset(start).valid);
  const Latency start_total = evaluator.committed().total;
  const Schedule regrouped = RegroupReaderParts(problem, pricer, start, never);
  const Evaluation e = EvaluateOracle(problem, regrouped);
  REQUIRE_MESSAGE(e.ok(), e.violation.Message());
  MESSAGE(std::setprecision(12) << "start " << start_total << " regrouped " << e.total);
  // N alone (it writes T for nobody now), then per pair of heads a query group (N run again, two
  // query parts, P written) and a value group (N again, two value projections and P @ V).
  const std::vector<std::vector<OpId>> expected{
      {0}, {0, 1, 2, 3, 6, 7, 8}, {0, 4, 5, 9, 10}, {0, 11, 12, 13, 16, 17, 18}, {0, 14, 15, 19, 20}};
  REQUIRE(regrouped.subgraphs.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) CHECK(regrouped.subgraphs[i].ops == expected[i]);
  // The start's heads at their thorough fits (11,108.1 before the fit bisected the widest side at
  // k = K*, which now gives every head its tallest tiles beside the whole weight strips).
  CHECK(start_total == doctest::Approx(5148.48351648).epsilon(1e-5));
  CHECK(e.total == doctest::Approx(4163.63).epsilon(1e-5));
  // No move kind gets below 4,761 in one move from the start, 14 % above the regrouped schedule
  // (merge-readers cannot merge a head whole with N at all here; 9,231 from the old start).
  const MoveContext context{problem, rank, pricer, never, &evaluator};
  const std::array<Latency, kNumMoveKinds> best = BestInOneMove(problem, context, evaluator);
  for (int kind = 0; kind < kNumMoveKinds; ++kind) {
    CHECK_MESSAGE(best[kind] > 4761, MoveName(static_cast<MoveKind>(kind)));
  }
  // Deterministic, and a no-op on a contest problem (no tensor with three readers).
  CHECK(RegroupReaderParts(problem, pricer, start, never) == regrouped);
  const Problem five = ReadBundledProblem("mlsys-2026-5.json");
  CHECK(RegroupReaderTensors(five).empty());
  CostCache five_cache(1 << 16);
  SubgraphPricer five_pricer(five, &five_cache);
  const Schedule five_start = GreedyFusion(five, five_pricer, BuildBaseline(five), never);
  CHECK(RegroupReaderParts(five, five_pricer, five_start, never) == five_start);
}

TEST_CASE("starts: RegroupReaderParts keeps every schedule valid on 2-6 query/value heads and five scratchpads") {
  // 2-6 query/value heads on scratchpads from ample to tight, from the greedy start and from the
  // baseline: whatever the pass commits, the oracle accepts, and it never raises the total.
  int changed = 0;
  for (int heads = 2; heads <= 6; ++heads) {
    for (Elements capacity : {Elements{1} << 26, Elements{300000}, Elements{200000}, Elements{140000}, Elements{100000}}) {
      const Problem problem = QueryValueHeads(capacity, heads);
      CostCache cache(1 << 16);
      SubgraphPricer pricer(problem, &cache);
      const auto never = [] { return false; };
      for (int mode = 0; mode < 2; ++mode) {
        const Schedule start = mode == 0 ? GreedyFusion(problem, pricer, BuildBaseline(problem), never)
                                         : BuildBaseline(problem);
        const Evaluation before = EvaluateOracle(problem, start);
        REQUIRE(before.ok());
        const Schedule after = RegroupReaderParts(problem, pricer, start, never);
        const Evaluation e = EvaluateOracle(problem, after);
        REQUIRE_MESSAGE(e.ok(), e.violation.Message());
        CHECK(e.total <= before.total);
        changed += !(after == start);
      }
    }
  }
  MESSAGE("schedules changed: " << changed);
}

// A convolution's taps on a small scratchpad, as U-Net's decoder convolutions on mlsys-2026: `lhs`
// LHS tensors A_j (1024x32, each larger than the fast memory of 30,000 elements), `per_lhs` taps
// M = A_j @ W (W 32x32, K = 32, base 1,000) of each, summed by one Pointwise op S (base 200) into
// Z (1024x32, a graph output). Bandwidth 10.
Problem SmallTaps(int lhs, int per_lhs) {
  testing::GraphBuilder b(30000, 10);
  std::vector<TensorId> parts;
  for (int j = 0; j < lhs; ++j) {
    const TensorId a = b.Tensor(1024, 32);
    for (int i = 0; i < per_lhs; ++i) {
      const TensorId m = b.Tensor(1024, 32);
      b.Op(OpKind::MatMul, {a, b.Tensor(32, 32)}, m, 1000);
      parts.push_back(m);
    }
  }
  b.Op(OpKind::Pointwise, parts, b.Tensor(1024, 32), 200);
  return b.Build();
}

TEST_CASE("starts: GatherTapGroups gathers a sum's taps into its subgraph at a polished fit") {
  const auto never = [] { return false; };
  {
    // Nine taps of one A: each alone is compute-bound (8 tiles of 1,000 against 66,560 elements
    // moved, 6,656), the sum alone loads nine 32,768-element outputs. Gathered at [32, 128, 32]
    // (9 weights 9,216 + a 128x32 strip of A and the output tile: 17,408) every op runs at its
    // native tiles, 8 x (9 x 1,000 + 200) = 73,600, which the bound (compute) meets.
    const Problem problem = SmallTaps(1, 9);
    REQUIRE(GatherKLoopApplies(problem));
    CostCache cache(1 << 16);
    SubgraphPricer pricer(problem, &cache);
    std::vector<std::vector<OpId>> alone;
    for (OpId op = 0; op < 10; ++op) alone.push_back({op});
    const Schedule start = FittedGroups(pricer, alone);
    const Evaluation before = EvaluateOracle(problem, start);
    REQUIRE(before.ok());
    CHECK(before.total > 73600 + 10000);
    const Schedule gathered = GatherTapGroups(problem, pricer, start, never, false);
    const Evaluation e = EvaluateOracle(problem, gathered);
    REQUIRE_MESSAGE(e.ok(), e.violation.Message());
    CHECK(e.total == doctest::Approx(73600));
    CHECK(gathered.subgraphs.size() == 1);
    CHECK(GatherTapGroups(problem, pricer, start, never, false) == gathered);  // deterministic
  }
  {
    // Nine taps of each of two A (U-Net's 18 taps over a concatenation): beside the sum they
    // fit at [32, h, 32] only while 18 x 1,024 + 3 x 32h <= 30,000, h <= 120, which no power
    // of two and no divisor of 1,024 above 64 meets. Apart: 17 taps alone (8,000 each) and
    // the sum with one loading 17 outputs. At h = 64 (16 tiles) the gathered subgraph costs
    // 16 x 18,200 = 291,200, more than apart, so the move's own fit never pays; at h = 120
    // (9 tiles, the last one partial, spec O9) it costs 9 x 18,200 = 163,800.
    const Problem problem = SmallTaps(2, 9);
    REQUIRE(GatherKLoopApplies(problem));
    CostCache cache(1 << 16);
    SubgraphPricer pricer(problem, &cache);
    std::vector<std::vector<OpId>> groups;
    for (OpId op = 0; op < 17; ++op) groups.push_back({op});
    groups.push_back({17, 18});
    const Schedule start = FittedGroups(pricer, groups);
    const Evaluation before = EvaluateOracle(problem, start);
    REQUIRE(before.ok());
    CHECK(before.total > 163800 + 10000);
    CHECK(before.total < 291200);
    const Schedule partial = GatherTapGroups(problem, pricer, start, never, true);
    const Evaluation e = EvaluateOracle(problem, partial);
    REQUIRE_MESSAGE(e.ok(), e.violation.Message());
    CHECK(e.total == doctest::Approx(163800));
    REQUIRE(partial.subgraphs.size() == 1);
    CHECK((1024 + partial.subgraphs[0].granularity.h - 1) / partial.subgraphs[0].granularity.h == 9);
    // Sides that divide their dimension only: nothing gathered pays, the start stays.
    CHECK(GatherTapGroups(problem, pricer, start, never, false) == start);
  }
  {
    // Problem 5 (where the driver never runs the pass: GatherKLoopApplies is false there) has
    // subgraphs whose Pointwise ops load three MatMuls of one K between them: the pass keeps
    // only what lowers the total, and the result is valid.
    const Problem five = ReadBundledProblem("mlsys-2026-5.json");
    CostCache cache(1 << 16);
    SubgraphPricer pricer(five, &cache);
    const Schedule start = GreedyFusion(five, pricer, BuildBaseline(five), never);
    const Evaluation before = EvaluateOracle(five, start);
    const Schedule after = GatherTapGroups(five, pricer, start, never, true);
    const Evaluation e = EvaluateOracle(five, after);
    REQUIRE_MESSAGE(e.ok(), e.violation.Message());
    CHECK(e.total <= before.total);
    MESSAGE("mlsys-2026-5 greedy start " << before.total << ", gathered " << e.total);
  }
}

TEST_CASE("starts: GatherTapGroups keeps schedules valid and never worse, on random convolutions with their taps") {
  // Random convolutions as the importer lowers them: one or two LHS tensors (a Pointwise op of
  // a graph input, or a graph input), each read by 2-9 tap MatMuls of one K, their sum, an
  // optional Pointwise epilogue chain, at capacities from below one LHS to several native tiles.
  std::mt19937_64 rng(2026);
  const auto never = [] { return false; };
  auto pick = [&](std::initializer_list<Elements> values) {
    return *(values.begin() + std::uniform_int_distribution<int>(0, static_cast<int>(values.size()) - 1)(rng));
  };
  int changed = 0, cases = 0;
  for (int round = 0; round < 2000; ++round) {
    const Elements rows = pick({64, 96, 128, 200, 256, 512}), cols = pick({16, 32, 48, 64, 128});
    const Elements k = pick({8, 16, 32, 64});
    const int lhs = std::uniform_int_distribution<int>(1, 2)(rng);
    const Elements capacity = pick({4000, 8000, 12000, 20000, 30000, 50000});
    testing::GraphBuilder b(capacity, pick({1, 5, 10, 40}));
    b.problem.native = 32;
    std::vector<TensorId> parts;
    for (int j = 0; j < lhs; ++j) {
      TensorId a = b.Tensor(rows, k);
      if (std::uniform_int_distribution<int>(0, 1)(rng)) {
        const TensorId made = b.Tensor(rows, k);
        b.Op(OpKind::Pointwise, {a}, made, pick({10, 50, 200}));
        a = made;
      }
      const int taps = std::uniform_int_distribution<int>(2, 9)(rng);
      for (int i = 0; i < taps; ++i) {
        const TensorId m = b.Tensor(rows, cols);
        b.Op(OpKind::MatMul, {a, b.Tensor(k, cols)}, m, pick({100, 500, 1000}));
        parts.push_back(m);
      }
    }
    TensorId z = b.Tensor(rows, cols);
    b.Op(OpKind::Pointwise, parts, z, pick({10, 100, 200}));
    for (int e = std::uniform_int_distribution<int>(0, 2)(rng); e > 0; --e) {
      const TensorId next = b.Tensor(rows, cols);
      b.Op(OpKind::Pointwise, {z}, next, pick({10, 100, 800}));
      z = next;
    }
    const Problem problem = b.Build();
    CostCache cache(1 << 14);
    SubgraphPricer pricer(problem, &cache);
    const Schedule baseline = BuildBaseline(problem);
    if (!EvaluateOracle(problem, baseline).ok()) continue;
    const Schedule start = round % 2 == 0 ? baseline : GreedyFusion(problem, pricer, baseline, never);
    const Evaluation before = EvaluateOracle(problem, start);
    REQUIRE(before.ok());
    const bool partial = round % 3 != 0;
    const Schedule after = GatherTapGroups(problem, pricer, start, never, partial);
    const Evaluation e = EvaluateOracle(problem, after);
    REQUIRE_MESSAGE(e.ok(), "round " << round << ": " << e.violation.Message());
    CHECK(e.total <= before.total);
    CHECK(GatherTapGroups(problem, pricer, start, never, partial) == after);
    ++cases;
    changed += !(after == start);
  }
  MESSAGE(cases << " problems, " << changed << " schedules changed");
  CHECK(cases > 1500);
  CHECK(changed > 200);
}

TEST_CASE("constructive starts are valid on all five problems and never worse than the baseline") {
  for (std::string name : {"mlsys-2026-1.json", "mlsys-2026-5.json", "mlsys-2026-9.json",
                           "mlsys-2026-13.json", "mlsys-2026-17.json"}) {
    CAPTURE(name);
    const Problem problem = ReadBundledProblem(name);
    CostCache cache(1 << 18);
    SubgraphPricer pricer(problem, &cache);
    const Schedule baseline = BuildBaseline(problem);
    const Evaluation base = EvaluateOracle(problem, baseline);
    REQUIRE(base.ok());
    const Schedule fused = GreedyFusion(problem, pricer, baseline, [] { return false; });
    const Evaluation fused_eval = EvaluateOracle(problem, fused);
    CHECK(fused_eval.ok());
    CHECK(fused_eval.total <= base.total);
    const Schedule grouped = PatternGrouping(problem, pricer, [] { return false; });
    const Evaluation grouped_eval = EvaluateOracle(problem, grouped);
    CHECK_MESSAGE(grouped_eval.ok(), grouped_eval.violation.Message());
    if (grouped_eval.ok()) {
      // Whole tiles only (the default) and with partial edge tiles allowed: both valid and no
      // worse than the start; only the second may leave partial tiles.
      const Schedule polished = Polish(problem, pricer, grouped, [] { return false; }, false);
      const Evaluation polished_eval = EvaluateOracle(problem, polished);
      CHECK(polished_eval.ok());
      CHECK(polished_eval.total <= grouped_eval.total * (1 + 1e-12));
      CHECK(SubgraphsWithPartialEdgeTiles(problem, polished).empty());
      const Schedule partial = Polish(problem, pricer, grouped, [] { return false; }, true);
      const Evaluation partial_eval = EvaluateOracle(problem, partial);
      CHECK(partial_eval.ok());
      CHECK(partial_eval.total <= grouped_eval.total * (1 + 1e-12));
      if (name == "mlsys-2026-5.json") {
        // Its tight memory rewards sides between powers of two that leave partial tiles.
        CHECK(!SubgraphsWithPartialEdgeTiles(problem, partial).empty());
        CHECK(partial_eval.total < polished_eval.total);
      }
    }
  }
}

TEST_CASE("greedy fusion: batched rounds on a long schedule, valid by the oracle, against one merge per round") {
  // 4 chained copies of problem 17 (412 ops, 412 subgraphs in the baseline): from 256
  // subgraphs on, a round commits every disjoint merge that pays instead of the best one.
  const Problem one = ReadBundledProblem("mlsys-2026-17.json");
  const Problem problem = StackProblem(one, PlanStack(one, std::nullopt), 4);
  CostCache cache(1 << 18);
  SubgraphPricer pricer(problem, &cache);
  const Schedule baseline = BuildBaseline(problem);
  const Evaluation base = EvaluateOracle(problem, baseline);
  REQUIRE(base.ok());
  REQUIRE(baseline.subgraphs.size() >= static_cast<size_t>(kGreedyBatchFrom));
  const auto never = [] { return false; };
  const Schedule batched = GreedyFusion(problem, pricer, baseline, never);
  const Evaluation batched_eval = EvaluateOracle(problem, batched);
  REQUIRE_MESSAGE(batched_eval.ok(), batched_eval.violation.Message());
  // One merge per round, as below the threshold.
  const Schedule single = GreedyFusion(problem, pricer, baseline, never, 1 << 30);
  const Evaluation single_eval = EvaluateOracle(problem, single);
  REQUIRE(single_eval.ok());
  CAPTURE(base.total);
  CAPTURE(single_eval.total);
  CAPTURE(batched_eval.total);
  CAPTURE(batched.subgraphs.size());
  // Both reach 4 x 4,966,400, problem 17's optimum (its lower bound) per copy, in 292 subgraphs.
  CHECK(batched_eval.total == doctest::Approx(4 * 4966400.0).epsilon(1e-9));
  CHECK(single_eval.total == doctest::Approx(4 * 4966400.0).epsilon(1e-9));
  CHECK(batched.subgraphs.size() == 292);
  // Deterministic: the same start gives the same schedule.
  CHECK(GreedyFusion(problem, pricer, baseline, never) == batched);
  // On one copy (103 subgraphs, below the threshold) the rounds are one merge each.
  CostCache one_cache(1 << 16);
  SubgraphPricer one_pricer(one, &one_cache);
  const Schedule one_base = BuildBaseline(one);
  CHECK(GreedyFusion(one, one_pricer, one_base, never) == GreedyFusion(one, one_pricer, one_base, never, 1 << 30));
}

}  // namespace
}  // namespace annealer
