// The split-recompute move (search/moves/split_recompute.cc): on attention heads merged with
// their normalisation it cuts the scores from the values, both parts computing the
// normalisation again; on random fan-outs every edit it makes is priced as the
// oracle prices it, keeps every op, and is the same edit for the same seed.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "eval/cost/cost_cache.h"
#include "eval/cost/incremental.h"
#include "eval/oracle.h"
#include "search/moves/moves.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"
#include "tests/support/graph_builder.h"
#include "tests/support/problem_maker.h"

namespace annealer {
namespace {

// A LayerNorm N of X (128 x 384) read by `heads` heads: Q_h = N Wq_h, V_h = N Wv_h (128 x 64),
// S_h = Q_h Kt_h (Kt_h a graph input, 64 x 128), P_h = softmax(S_h), O_h = P_h V_h. Op ids: N 0,
// then per head Q, V, S, P, O.
Problem NormalisedHeads(int heads) {
  testing::GraphBuilder b(Elements{1} << 26, 273);
  const TensorId x = b.Tensor(128, 384);
  const TensorId n = b.Tensor(128, 384);
  b.Op(OpKind::Pointwise, {x}, n, 64);
  for (int h = 0; h < heads; ++h) {
    const TensorId wq = b.Tensor(384, 64), wv = b.Tensor(384, 64), kt = b.Tensor(64, 128);
    const TensorId q = b.Tensor(128, 64), v = b.Tensor(128, 64), s = b.Tensor(128, 128), p = b.Tensor(128, 128),
                   o = b.Tensor(128, 64);
    b.Op(OpKind::MatMul, {n, wq}, q, 96);
    b.Op(OpKind::MatMul, {n, wv}, v, 96);
    b.Op(OpKind::MatMul, {q, kt}, s, 32);
    b.Op(OpKind::Pointwise, {s}, p, 40);
    b.Op(OpKind::MatMul, {p, v}, o, 32);
  }
  return b.Build();
}

Subgraph Fitted(const SubgraphPricer& pricer, const std::vector<OpId>& ops) {
  return FitSubgraph(pricer, ops, {}, {}, nullptr, true, [] { return false; })->subgraph;
}

TEST_CASE("split-recompute: merged heads split into scores and values, both computing the norm again") {
  constexpr int kHeads = 4;
  const Problem problem = NormalisedHeads(kHeads);
  CHECK(MergeReadersApplies(problem));
  CostCache cache(1 << 16);
  SubgraphPricer pricer(problem, &cache);
  const std::vector<int> rank = TopologicalRanks(problem);
  const MoveContext context{problem, rank, pricer, [] { return false; }};
  std::vector<OpId> all(problem.ops.size());
  for (size_t op = 0; op < all.size(); ++op) all[op] = static_cast<OpId>(op);
  Schedule whole;
  whole.subgraphs.push_back(Fitted(pricer, SortTopologically(rank, all)));
  IncrementalEvaluator evaluator(problem, &cache);
  REQUIRE(evaluator.Reset(whole).valid);
  const Latency before = evaluator.committed().total;

  const SplitRecomputeShape shape = SplitRecomputeShapeOf(problem, whole.subgraphs[0].ops);
  CHECK(shape.head_ops == 1);  // N: the only Pointwise op whose producers inside are all head ops
  CHECK(shape.body.size() == 5 * kHeads);

  // Pivot: head 2's softmax. Its class is every head's softmax; with their ancestors in the body
  // (Q_h, S_h) they are the first part, V_h and O_h the second.
  const OpId softmax2 = 1 + 5 * 2 + 3;
  for (bool retain : {false, true}) {
    auto edit = SplitRecomputeAt(context, evaluator.schedule(), 0, softmax2, retain);
    REQUIRE(edit.has_value());
    const Schedule split = ApplyEdit(evaluator.schedule(), *edit);
    REQUIRE(split.subgraphs.size() == 2);
    std::vector<OpId> scores{0}, values{0};
    for (int h = 0; h < kHeads; ++h) {
      const OpId q = 1 + 5 * h;
      scores.insert(scores.end(), {q, q + 2, q + 3});
      values.insert(values.end(), {q + 1, q + 4});
    }
    CHECK(split.subgraphs[0].ops == SortTopologically(rank, scores));
    CHECK(split.subgraphs[1].ops == SortTopologically(rank, values));
    const Evaluation truth = EvaluateOracle(problem, split);
    REQUIRE(truth.ok());
    const Candidate candidate = evaluator.Propose(*edit);
    REQUIRE(candidate.valid);
    CHECK(candidate.total == doctest::Approx(truth.total).epsilon(1e-9));
    // The whole subgraph's k-loop is a head's size (64: S's reduction), so P V's 128 tokens take
    // two steps and every projection is charged on both; the parts each have one reduction.
    CHECK(candidate.total < before);
    evaluator.Revert();
  }

  // A pivot in the norm (a head op) is no split. O_0's class (every O_h) has the whole body
  // for ancestors: then O_0 alone with its ancestors, head 0, is the first part.
  CHECK_FALSE(SplitRecomputeAt(context, evaluator.schedule(), 0, 0, false).has_value());
  auto peel = SplitRecomputeAt(context, evaluator.schedule(), 0, 1 + 4, false);
  REQUIRE(peel.has_value());
  const Schedule peeled = ApplyEdit(evaluator.schedule(), *peel);
  REQUIRE(peeled.subgraphs.size() == 2);
  CHECK(peeled.subgraphs[0].ops == std::vector<OpId>{0, 1, 2, 3, 4, 5});
  CHECK(peeled.subgraphs[1].ops.size() == 1 + 5 * (kHeads - 1));
  CHECK(EvaluateOracle(problem, peeled).ok());
}

TEST_CASE("split-recompute: not drawn without a three-reader tensor, alike branches peel one off") {
  // MergeReadersApplies is false on every bundled contest problem (moves/pattern_moves_test.cc checks it), so
  // RandomMove draws there exactly the kinds of before; here a norm read by two MatMuls.
  testing::GraphBuilder b(Elements{1} << 20, 10);
  const TensorId x = b.Tensor(64, 64), y = b.Tensor(64, 64), w1 = b.Tensor(64, 64), w2 = b.Tensor(64, 64),
                 z1 = b.Tensor(64, 64), z2 = b.Tensor(64, 64);
  b.Op(OpKind::Pointwise, {x}, y, 8);
  b.Op(OpKind::MatMul, {y, w1}, z1, 32);
  b.Op(OpKind::MatMul, {y, w2}, z2, 32);
  const Problem problem = b.Build();
  CHECK_FALSE(MergeReadersApplies(problem));
  CostCache cache(1 << 12);
  SubgraphPricer pricer(problem, &cache);
  const std::vector<int> rank = TopologicalRanks(problem);
  const MoveContext context{problem, rank, pricer, [] { return false; }};
  Schedule one;
  one.subgraphs.push_back(Fitted(pricer, {0, 1, 2}));
  WorkerParams weights;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 500; ++i) {
    MoveKind kind = MoveKind::kSwap;
    RandomMove(context, weights, one, rng, &kind);
    CHECK(kind != MoveKind::kSplitRecompute);
  }
  // Called directly it applies. Both MatMuls are one class, whose ancestors are the whole body:
  // the pivot's branch alone is the first part, and each part computes y again.
  for (OpId pivot : {1, 2}) {
    auto edit = SplitRecomputeAt(context, one, 0, pivot, false);
    REQUIRE(edit.has_value());
    const Schedule split = ApplyEdit(one, *edit);
    REQUIRE(split.subgraphs.size() == 2);
    CHECK(split.subgraphs[0].ops == std::vector<OpId>{0, pivot});
    CHECK(split.subgraphs[1].ops == std::vector<OpId>{0, pivot == 1 ? 2 : 1});
    CHECK(EvaluateOracle(problem, split).ok());
  }
}

// Every edit SplitRecomputeAt makes on subgraph i of the evaluator's schedule, over every pivot
// and both retain choices: it keeps every op, the evaluator prices it as the oracle does, and
// it is valid exactly when the oracle says so. Returns the number of edits made; `valid` counts
// the valid ones.
int CheckEveryEdit(const Problem& problem, IncrementalEvaluator& evaluator, const MoveContext& context, int i,
                   int& valid) {
  const Schedule& s = evaluator.schedule();
  std::set<OpId> before_ops;
  for (const Subgraph& sg : s.subgraphs) before_ops.insert(sg.ops.begin(), sg.ops.end());
  int made = 0;
  for (OpId pivot : s.subgraphs[i].ops) {
    for (bool retain : {false, true}) {
      auto edit = SplitRecomputeAt(context, s, i, pivot, retain);
      if (!edit) continue;
      ++made;
      const Schedule next = ApplyEdit(s, *edit);
      std::set<OpId> after_ops;
      for (const Subgraph& sg : next.subgraphs) after_ops.insert(sg.ops.begin(), sg.ops.end());
      CHECK(before_ops == after_ops);
      CHECK(next.subgraphs.size() > s.subgraphs.size());
      const Evaluation truth = EvaluateOracle(problem, next);
      const Candidate candidate = evaluator.Propose(*edit);
      CHECK(candidate.valid == truth.ok());
      if (candidate.valid && truth.ok()) {
        CHECK(candidate.total == doctest::Approx(truth.total).epsilon(1e-9));
        ++valid;
      }
      evaluator.Revert();
    }
  }
  return made;
}

TEST_CASE("split-recompute: on random fan-outs every edit keeps every op and is priced as the oracle prices it") {
  // A Pointwise head (one or two ops) read by 2-6 branches: a MatMul with its own weight (or a
  // Pointwise op), then up to two Pointwise ops or MatMuls, sometimes two branches joined; every
  // branch ends in one shape (V12), K at most native (V11), at the property tests' real-chip
  // ratios. Everything in one subgraph.
  std::mt19937_64 rng(2026);
  int made = 0, valid = 0, fitted = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    testing::ProblemMaker m{rng};
    m.problem.native = 16;
    m.AtRealRatios();
    const Elements rows = m.Pick({8, 16, 32}), d = m.Pick({8, 16}), e = m.Pick({4, 8, 16});
    TensorId shared = m.Op(OpKind::Pointwise, {m.Tensor(rows, d)}, rows, d, m.PickReal({1, 8, 64}));
    if (m.Coin(2)) shared = m.Op(OpKind::Pointwise, {shared}, rows, d, m.PickReal({0, 8}));
    const int branches = static_cast<int>(m.Pick({2, 3, 4, 6}));
    std::vector<TensorId> ends;
    for (int branch = 0; branch < branches; ++branch) {
      TensorId z = e == d && m.Coin(4) ? m.Op(OpKind::Pointwise, {shared}, rows, d, 2)
                                       : m.Op(OpKind::MatMul, {shared, m.Tensor(d, e)}, rows, e, m.PickReal({0.5, 4, 16}));
      const int steps = static_cast<int>(m.Pick({0, 1, 2}));
      for (int step = 0; step < steps; ++step) {
        z = m.Coin(2) ? m.Op(OpKind::Pointwise, {z}, rows, e, m.PickReal({0, 2}))
                      : m.Op(OpKind::MatMul, {z, m.Tensor(e, e)}, rows, e, m.PickReal({0.5, 4}));
      }
      ends.push_back(z);
    }
    if (m.Coin(3)) {
      // Two branches joined inside the body: the class's ancestors then reach across them.
      const TensorId joined = m.Op(OpKind::Pointwise, {ends[0], ends[1]}, rows, e, 2);
      ends.erase(ends.begin(), ends.begin() + 2);
      ends.push_back(joined);
    }
    Problem problem = m.problem;
    REQUIRE(problem.Finalize().empty());
    CostCache cache(1 << 14);
    SubgraphPricer pricer(problem, &cache);
    const std::vector<int> rank = TopologicalRanks(problem);
    std::vector<OpId> fused;
    Schedule start;
    for (OpId op = 0; op < static_cast<OpId>(problem.ops.size()); ++op) fused.push_back(op);
    auto whole = FitSubgraph(pricer, SortTopologically(rank, fused), {}, {}, nullptr, true, [] { return false; });
    if (!whole) continue;  // no configuration by the structural rules (V11 with K above the sinks' width)
    ++fitted;
    start.subgraphs.push_back(whole->subgraph);
    IncrementalEvaluator evaluator(problem, &cache);
    REQUIRE(evaluator.Reset(start).valid);
    const MoveContext context{problem, rank, pricer, [] { return false; }, &evaluator};
    made += CheckEveryEdit(problem, evaluator, context, 0, valid);
    // The move's own draws: the same seed gives the same edit and leaves the same generator.
    std::mt19937_64 a(trial), b(trial);
    auto first = MakeMove(context, MoveKind::kSplitRecompute, evaluator.schedule(), a);
    auto second = MakeMove(context, MoveKind::kSplitRecompute, evaluator.schedule(), b);
    REQUIRE(first.has_value() == second.has_value());
    if (first) CHECK(ApplyEdit(evaluator.schedule(), *first) == ApplyEdit(evaluator.schedule(), *second));
    CHECK(a == b);
  }
  CHECK(fitted > 500);
  CHECK(made > 1000);
  CHECK(valid > 500);
  MESSAGE("split-recompute on " << fitted << " fan-outs: " << made << " edits, valid and oracle-checked " << valid);
}

}  // namespace
}  // namespace annealer
