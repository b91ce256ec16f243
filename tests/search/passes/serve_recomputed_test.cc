// ServeLoadsByRecompute (search/passes/serve_retained.h): a loader of a written tensor t = p(s)
// takes t made again by p from s, which the subgraph that made t keeps for it; and MergeAndRefit
// (search/passes/merge_refit.h), which runs after it, on the same residual chains.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "eval/cost/cost_cache.h"
#include "eval/oracle.h"
#include "search/moves/moves.h"
#include "search/starts/baseline.h"
#include "search/starts/constructive.h"
#include "search/passes/merge_refit.h"
#include "search/passes/serve_retained.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"
#include "tests/search/passes/fitted_schedule.h"
#include "tests/support/graph_builder.h"
#include "tests/support/test_files.h"

namespace annealer {
namespace {

using testing::ReadBundledProblem;

const std::function<bool()> kNever = [] { return false; };

// Residual blocks as the importer lowers ResNet's: block b reads T_{b-1} (X for the first, a
// graph input) with two MatMuls, M = T @ W1 (its epilogue E) then G = E @ W2, and a shortcut
// Q = T @ Wq; the sum S = G + Q + T and the ReLU T_b = relu(S). Ops of block b from 6b: M, E, G,
// Q, S, R. T_b has three readers in block b + 1 (so MergeReadersApplies), two of them MatMuls
// with K = cols, which split in k when cols exceeds the native side (V11 then keeps R out of
// their subgraph).
Problem Residual(Elements capacity, double bandwidth, Elements rows, Elements cols, int blocks) {
  testing::GraphBuilder b(capacity, bandwidth);
  TensorId t = b.Tensor(rows, cols);
  for (int i = 0; i < blocks; ++i) {
    const TensorId m = b.Tensor(rows, cols), e = b.Tensor(rows, cols), g = b.Tensor(rows, cols);
    const TensorId q = b.Tensor(rows, cols), s = b.Tensor(rows, cols), r = b.Tensor(rows, cols);
    b.Op(OpKind::MatMul, {t, b.Tensor(cols, cols)}, m, 1024);
    b.Op(OpKind::Pointwise, {m}, e, 8);
    b.Op(OpKind::MatMul, {e, b.Tensor(cols, cols)}, g, 1024);
    b.Op(OpKind::MatMul, {t, b.Tensor(cols, cols)}, q, 1024);
    b.Op(OpKind::Pointwise, {g, q, t}, s, 16);
    b.Op(OpKind::Pointwise, {s}, r, 8);
    t = r;
  }
  return b.Build();
}

Schedule Fitted(const SubgraphPricer& pricer, const std::vector<std::vector<OpId>>& groups,
                const std::vector<std::vector<TensorId>>& retain) {
  return testing::FittedSchedule(pricer, groups, retain, false);
}

// A random chain of 2-4 blocks: rows of 196-784 where `between` (sides between powers of two
// divide them) else 128-384, columns 128-384, a scratchpad from a few tensors to ample,
// bandwidths 2-64.
Problem RandomResidual(std::mt19937_64& rng, bool between) {
  const int blocks = 2 + static_cast<int>(rng() % 3);
  const Elements rows = between && rng() % 2 == 0 ? 196 * (1 + static_cast<Elements>(rng() % 4))
                                                  : 128 * (1 + static_cast<Elements>(rng() % 3));
  const Elements cols = 128 * (1 + static_cast<Elements>(rng() % 3));
  const Elements capacity =
      (rng() % 4 == 0) ? (Elements{1} << 24) : rows * cols * (3 + static_cast<Elements>(rng() % 6));
  const double bandwidth = 2.0 * (1 << (rng() % 6));
  return Residual(capacity, bandwidth, rows, cols, blocks);
}

TEST_CASE("starts: ServeLoadsByRecompute keeps the sum for a loader of the ReLU's output") {
  // Two blocks of 256 x 128 tensors. Block 0 (ops 0-5) writes T_0 and block 1 loads it in three
  // ops; served, block 0 keeps S_0 (which only the ReLU reads) and block 1 runs the ReLU again
  // from it, loading nothing of T_0: 28,672 -> 25,640.
  const Problem problem = Residual(Elements{1} << 22, 8, 256, 128, 2);
  REQUIRE(MergeReadersApplies(problem));
  CostCache cache(1 << 16);
  SubgraphPricer pricer(problem, &cache);
  const TensorId s0 = problem.ops[4].output;
  const Schedule start = Fitted(pricer, {{0, 1, 2, 3, 4, 5}, {6, 7, 8, 9, 10, 11}}, {{}, {}});
  const Evaluation before = EvaluateOracle(problem, start);
  REQUIRE_MESSAGE(before.ok(), before.violation.Message());
  const Schedule after = ServeLoadsByRecompute(problem, pricer, start, kNever);
  const Evaluation e = EvaluateOracle(problem, after);
  REQUIRE_MESSAGE(e.ok(), e.violation.Message());
  REQUIRE(after.subgraphs.size() == 2);
  CHECK(after.subgraphs[0].ops == std::vector<OpId>{0, 1, 2, 3, 4, 5});
  CHECK(after.subgraphs[0].retain == std::vector<TensorId>{s0});
  CHECK(after.subgraphs[1].ops == std::vector<OpId>{5, 6, 7, 8, 9, 10, 11});
  // The price of the same schedule fitted by hand.
  const Evaluation expected =
      EvaluateOracle(problem, Fitted(pricer, {{0, 1, 2, 3, 4, 5}, {5, 6, 7, 8, 9, 10, 11}}, {{s0}, {}}));
  REQUIRE(expected.ok());
  CHECK(e.total <= expected.total + 1e-9);
  CHECK(e.total < before.total);
  CHECK(before.total == doctest::Approx(28672));
  CHECK(e.total == doctest::Approx(25640));
  CHECK(ServeLoadsByRecompute(problem, pricer, start, kNever) == after);  // deterministic
}

TEST_CASE("starts: ServeLoadsByRecompute folds the ReLU run again in later subgraphs into the sum's") {
  // The search's form: the sum's subgraph writes S_0, and the ReLU runs in each of the next two
  // subgraphs from it (with block 1's M, E, G; with its Q, sum and ReLU). Folded: the sum's
  // subgraph runs the ReLU too, writes T_0 and keeps S_0 for the next; the last one loads T_0.
  const Problem problem = Residual(Elements{1} << 22, 8, 256, 128, 2);
  CostCache cache(1 << 16);
  SubgraphPricer pricer(problem, &cache);
  const TensorId s0 = problem.ops[4].output;  // S_0, which the folded maker keeps
  const TensorId g1 = problem.ops[8].output;
  const Schedule start = Fitted(pricer, {{0, 1, 2, 3, 4}, {5, 6, 7, 8}, {5, 9, 10, 11}}, {{}, {g1}, {}});
  const Evaluation before = EvaluateOracle(problem, start);
  REQUIRE_MESSAGE(before.ok(), before.violation.Message());
  const Schedule after = ServeLoadsByRecompute(problem, pricer, start, kNever);
  const Evaluation e = EvaluateOracle(problem, after);
  REQUIRE_MESSAGE(e.ok(), e.violation.Message());
  REQUIRE(after.subgraphs.size() == 3);
  CHECK(after.subgraphs[0].ops == std::vector<OpId>{0, 1, 2, 3, 4, 5});
  CHECK(after.subgraphs[0].retain == std::vector<TensorId>{s0});
  CHECK(after.subgraphs[1].ops == std::vector<OpId>{5, 6, 7, 8});
  CHECK(after.subgraphs[2].ops == std::vector<OpId>{9, 10, 11});
  const Evaluation expected =
      EvaluateOracle(problem, Fitted(pricer, {{0, 1, 2, 3, 4, 5}, {5, 6, 7, 8}, {9, 10, 11}}, {{s0}, {g1}, {}}));
  REQUIRE(expected.ok());
  CHECK(e.total <= expected.total + 1e-9);
  CHECK(e.total < before.total);
  CHECK(before.total == doctest::Approx(32784));
  CHECK(e.total == doctest::Approx(30736));
}

TEST_CASE("starts: ServeLoadsByRecompute keeps every schedule valid and never raises it on random residual chains") {
  // 2-4 blocks, sides 128-384, scratchpads from ample to a few tensors, bandwidths 2-64; from the
  // baseline, the greedy start and random fused groups: whatever the pass commits, the oracle
  // accepts, it never raises the total and it is the same on a second call.
  std::mt19937_64 rng(14);
  int changed = 0, cases = 0;
  for (int round = 0; round < 400; ++round) {
    const Problem problem = RandomResidual(rng, false);
    CostCache cache(1 << 16);
    SubgraphPricer pricer(problem, &cache);
    for (const Schedule& start : testing::PassStarts(problem, pricer, rng, 6)) {
      const Evaluation before = EvaluateOracle(problem, start);
      if (!before.ok()) continue;
      ++cases;
      const Schedule after = ServeLoadsByRecompute(problem, pricer, start, kNever);
      const Evaluation e = EvaluateOracle(problem, after);
      REQUIRE_MESSAGE(e.ok(), e.violation.Message());
      CHECK(e.total <= before.total * (1 + 1e-12));
      CHECK(ServeLoadsByRecompute(problem, pricer, start, kNever) == after);
      changed += !(after == start);
    }
  }
  MESSAGE(cases << " schedules, " << changed << " changed");
  CHECK(cases > 1000);
  CHECK(changed > 300);
}

TEST_CASE("starts: MergeAndRefit keeps every schedule valid and never raises it on random residual chains") {
  // Rows of 196-784 (sides between powers of two that divide them: 196, 392) beside powers of
  // two, from the baseline, the greedy start and the greedy start served: whatever the pass
  // commits, the oracle accepts, it never raises the total, it is the same on a second call, and
  // every subgraph keeps the retained-in and retain sets of the ops it holds.
  std::mt19937_64 rng(15);
  int changed = 0, merged = 0, cases = 0;
  for (int round = 0; round < 150; ++round) {
    const Problem problem = RandomResidual(rng, true);
    CostCache cache(1 << 16);
    SubgraphPricer pricer(problem, &cache);
    for (int mode = 0; mode < 3; ++mode) {
      Schedule start = BuildBaseline(problem);
      if (mode >= 1) start = GreedyFusion(problem, pricer, start, kNever);
      if (mode == 2) start = ServeLoadsByRecompute(problem, pricer, start, kNever);
      const Evaluation before = EvaluateOracle(problem, start);
      if (!before.ok()) continue;
      ++cases;
      const Schedule after = MergeAndRefit(problem, pricer, start, kNever);
      const Evaluation e = EvaluateOracle(problem, after);
      REQUIRE_MESSAGE(e.ok(), e.violation.Message());
      CHECK(e.total <= before.total * (1 + 1e-12));
      CHECK(MergeAndRefit(problem, pricer, start, kNever) == after);
      changed += !(after == start);
      merged += after.subgraphs.size() < start.subgraphs.size();
    }
  }
  MESSAGE(cases << " schedules, " << changed << " changed, " << merged << " with neighbours merged");
  CHECK(cases > 400);
  CHECK(changed > 50);
  CHECK(merged > 10);
}

TEST_CASE("starts: ServeLoadsByRecompute and MergeAndRefit leave a contest problem as it is") {
  const Problem five = ReadBundledProblem("mlsys-2026-5.json");
  CostCache cache(1 << 16);
  SubgraphPricer pricer(five, &cache);
  const Schedule start = GreedyFusion(five, pricer, BuildBaseline(five), kNever);
  CHECK(ServeLoadsByRecompute(five, pricer, start, kNever) == start);
  CHECK(MergeAndRefit(five, pricer, start, kNever) == start);
}

}  // namespace
}  // namespace annealer
