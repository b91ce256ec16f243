// GatherStrays (search/passes/gather_strays.h): where a subgraph runs alike branches (attention
// heads) and one branch's ops sit elsewhere, the pass gathers them into it.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <iomanip>
#include <random>
#include <vector>

#include "eval/cost/cost_cache.h"
#include "eval/cost/incremental.h"
#include "eval/oracle.h"
#include "search/moves/moves.h"
#include "search/passes/gather_strays.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"
#include "tests/search/passes/fitted_schedule.h"
#include "tests/support/graph_builder.h"
#include "tests/support/sample_schedules.h"

namespace annealer {
namespace {

const std::function<bool()> kNever = [] { return false; };

// A norm N of X (rows x d) read by `heads` heads: Q_h = N Wq_h, V_h = N Wv_h (rows x e),
// S_h = Q_h Kt_h (Kt_h a graph input, e x rows), P_h = softmax(S_h), O_h = P_h V_h, Y_h = O_h Wo_h
// (rows x d), and Z = X + the sum of the Y_h (one Pointwise op, each head at its own input).
// Op ids: N 0, then per head Q, V, S, P, O, Y (1 + 6h ...), Z last.
Problem Heads(int heads, Elements capacity, double bandwidth, Elements rows, Elements d, Elements e) {
  testing::GraphBuilder b(capacity, bandwidth);
  const TensorId x = b.Tensor(rows, d);
  const TensorId n = b.Tensor(rows, d);
  b.Op(OpKind::Pointwise, {x}, n, 64);
  std::vector<TensorId> sum{x};
  for (int h = 0; h < heads; ++h) {
    const TensorId q = b.Tensor(rows, e), v = b.Tensor(rows, e), s = b.Tensor(rows, rows), p = b.Tensor(rows, rows),
                   o = b.Tensor(rows, e), y = b.Tensor(rows, d);
    b.Op(OpKind::MatMul, {n, b.Tensor(d, e)}, q, 96);
    b.Op(OpKind::MatMul, {n, b.Tensor(d, e)}, v, 96);
    b.Op(OpKind::MatMul, {q, b.Tensor(e, rows)}, s, 32);
    b.Op(OpKind::Pointwise, {s}, p, 40);
    b.Op(OpKind::MatMul, {p, v}, o, 32);
    b.Op(OpKind::MatMul, {o, b.Tensor(e, d)}, y, 64);
    sum.push_back(y);
  }
  const TensorId z = b.Tensor(rows, d);
  b.Op(OpKind::Pointwise, sum, z, 16);
  return b.Build();
}

OpId HeadOp(int h, int k) { return static_cast<OpId>(1 + 6 * h + k); }  // k: Q 0, V 1, S 2, P 3, O 4, Y 5

std::optional<Subgraph> Fitted(const SubgraphPricer& pricer, const std::vector<OpId>& ops) {
  auto fit = FitSubgraph(pricer, ops, {}, {}, nullptr, true, kNever);
  if (!fit) return std::nullopt;
  return fit->subgraph;
}

TEST_CASE("gather-strays: sibling classes tell the heads' ops apart, not the heads") {
  const Problem problem = Heads(4, Elements{1} << 26, 273, 128, 384, 64);
  const std::vector<int> classes = SiblingClasses(problem);
  REQUIRE(classes.size() == problem.ops.size());
  for (int k = 0; k < 6; ++k) {
    for (int h = 1; h < 4; ++h) CHECK(classes[HeadOp(h, k)] == classes[HeadOp(0, k)]);
    for (int l = 0; l < k; ++l) CHECK(classes[HeadOp(0, k)] != classes[HeadOp(0, l)]);
    CHECK(classes[HeadOp(0, k)] != classes[0]);
  }
  // Q and V have one kind, shape, depth and producers: their consumers (S's LHS, O's RHS) differ.
  CHECK(classes[HeadOp(0, 0)] != classes[HeadOp(0, 1)]);
  CHECK(SiblingClasses(problem) == classes);
}

TEST_CASE("gather-strays: a head split off around the merged ones is gathered back") {
  constexpr int kHeads = 4;
  const Problem problem = Heads(kHeads, Elements{1} << 26, 273, 128, 384, 64);
  REQUIRE(MergeReadersApplies(problem));
  CostCache cache(1 << 16);
  SubgraphPricer pricer(problem, &cache);
  const std::vector<int> rank = TopologicalRanks(problem);
  // N alone; heads 1-3 (Q, V, S, P, O) with N again; head 0's Q and V alone, loading N; head 0's
  // S, P, O with every Y and Z (the GPT decoder's stray head beside the output projection).
  std::vector<OpId> merged{0}, tail;
  for (int h = 1; h < kHeads; ++h) {
    for (int k = 0; k < 5; ++k) merged.push_back(HeadOp(h, k));
  }
  tail = {HeadOp(0, 2), HeadOp(0, 3), HeadOp(0, 4)};
  for (int h = 0; h < kHeads; ++h) tail.push_back(HeadOp(h, 5));
  tail.push_back(static_cast<OpId>(problem.ops.size() - 1));
  Schedule start;
  for (const std::vector<OpId>& ops :
       {std::vector<OpId>{0}, SortTopologically(rank, merged), std::vector<OpId>{HeadOp(0, 0)},
        std::vector<OpId>{HeadOp(0, 1)}, SortTopologically(rank, tail)}) {
    auto sg = Fitted(pricer, ops);
    REQUIRE(sg.has_value());
    start.subgraphs.push_back(*sg);
  }
  const Evaluation before = EvaluateOracle(problem, start);
  REQUIRE(before.ok());

  // The edit at the merged subgraph: every op of head 0 but Y_0 joins it, the subgraphs of Q_0
  // and V_0 are gone, the tail keeps the Ys and Z; priced as the oracle prices it.
  const std::vector<int> classes = SiblingClasses(problem);
  IncrementalEvaluator evaluator(problem, &cache);
  REQUIRE(evaluator.Reset(start).valid);
  const MoveContext context{problem, rank, pricer, kNever, &evaluator, true, false};
  CHECK_FALSE(GatherStraysAt(context, start, 0, classes, false).has_value());  // N alone: no branch
  for (bool retain_next : {false, true}) {
    auto edit = GatherStraysAt(context, start, 1, classes, retain_next);
    REQUIRE(edit.has_value());
    const Schedule gathered = ApplyEdit(start, *edit);
    REQUIRE(gathered.subgraphs.size() == 3);
    std::vector<OpId> all_heads{0};
    for (int h = 0; h < kHeads; ++h) {
      for (int k = 0; k < 5; ++k) all_heads.push_back(HeadOp(h, k));
    }
    CHECK(gathered.subgraphs[1].ops == SortTopologically(rank, all_heads));
    CHECK(gathered.subgraphs[2].ops.size() == kHeads + 1);
    const Evaluation truth = EvaluateOracle(problem, gathered);
    REQUIRE(truth.ok());
    const Candidate candidate = evaluator.Propose(*edit);
    REQUIRE(candidate.valid);
    CHECK(candidate.total == doctest::Approx(truth.total).epsilon(1e-9));
    evaluator.Revert();
    // Retaining the heads' outputs into the projections saves their write and load.
    if (retain_next) CHECK(!gathered.subgraphs[1].retain.empty());
  }

  const Schedule after = GatherStrays(problem, pricer, start, kNever);
  const Evaluation e = EvaluateOracle(problem, after);
  REQUIRE(e.ok());
  MESSAGE(std::setprecision(10) << "stray head " << before.total << " -> gathered " << e.total);
  // All four heads in one subgraph, N alone before it (written, read by no one now: a
  // drop-duplicate move takes it later), the projections and Z after it.
  CHECK(before.total == doctest::Approx(4076.337).epsilon(1e-6));
  CHECK(e.total == doctest::Approx(3512.0879).epsilon(1e-6));
  CHECK(after.subgraphs.size() == 3);
  CHECK(GatherStrays(problem, pricer, start, kNever) == after);
}

// Heads in M merged with N, the other heads' ops (Q, V, S, P, O) each alone or with the Ys and Z;
// subgraphs ordered by their last op's rank, the tail cut into its components. Empty when a
// piece has no fit (the caller then samples others).
Schedule StraySchedule(const Problem& problem, const SubgraphPricer& pricer, int heads, std::mt19937_64& rng) {
  const std::vector<int> rank = TopologicalRanks(problem);
  std::vector<int> order(heads);
  for (int h = 0; h < heads; ++h) order[h] = h;
  std::shuffle(order.begin(), order.end(), rng);
  const int in_merged = std::uniform_int_distribution<int>(2, heads)(rng);
  std::vector<OpId> merged{0}, tail;
  std::vector<std::vector<OpId>> groups;
  for (int i = 0; i < heads; ++i) {
    const int h = order[i];
    for (int k = 0; k < 5; ++k) {
      if (i < in_merged) {
        merged.push_back(HeadOp(h, k));
      } else if (std::uniform_int_distribution<int>(0, 1)(rng) == 0) {
        groups.push_back({HeadOp(h, k)});
      } else {
        tail.push_back(HeadOp(h, k));
      }
    }
    tail.push_back(HeadOp(h, 5));
  }
  tail.push_back(static_cast<OpId>(problem.ops.size() - 1));
  groups.push_back(SortTopologically(rank, merged));
  for (auto& part : Components(problem, tail)) groups.push_back(SortTopologically(rank, part));
  if (std::uniform_int_distribution<int>(0, 1)(rng) == 0) groups.push_back({0});
  std::stable_sort(groups.begin(), groups.end(), [&](const auto& a, const auto& b) {
    return rank[a.back()] < rank[b.back()];
  });
  Schedule s;
  for (const auto& ops : groups) {
    auto sg = Fitted(pricer, ops);
    if (!sg) return {};
    s.subgraphs.push_back(*sg);
  }
  return s;
}

TEST_CASE("gather-strays: on random heads and schedules, never invalid, never higher, the same twice") {
  std::mt19937_64 rng(2028);
  auto pick = [&](std::initializer_list<Elements> values) {
    return *(values.begin() + std::uniform_int_distribution<int>(0, static_cast<int>(values.size()) - 1)(rng));
  };
  int cases = 0, changed = 0, edits = 0, lower = 0;
  for (int round = 0; round < 300; ++round) {
    const int heads = static_cast<int>(pick({2, 3, 4, 6}));
    const Problem problem = Heads(heads, pick({20000, 60000, 200000, Elements{1} << 22}), pick({5, 20, 64, 273}),
                                  pick({16, 32, 64}), pick({16, 32, 64}), pick({8, 16, 32}));
    CostCache cache(1 << 14);
    SubgraphPricer pricer(problem, &cache);
    const std::vector<int> rank = TopologicalRanks(problem);
    const std::vector<int> classes = SiblingClasses(problem);
    std::vector<Schedule> starts;
    for (int k = 0; k < 3; ++k) starts.push_back(StraySchedule(problem, pricer, heads, rng));
    if (round % 10 == 0) {
      for (Schedule& s : testing::SampleSchedules(problem, rng, false)) starts.push_back(std::move(s));
    }
    for (const Schedule& start : starts) {
      if (start.subgraphs.empty()) continue;
      const Evaluation before = EvaluateOracle(problem, start);
      if (!before.ok()) continue;
      // Every edit priced as the oracle prices it, and keeping every op.
      IncrementalEvaluator evaluator(problem, &cache);
      REQUIRE(evaluator.Reset(start).valid);
      const MoveContext context{problem, rank, pricer, kNever, &evaluator, true, false};
      for (int x = 0; x < static_cast<int>(start.subgraphs.size()); ++x) {
        for (bool retain_next : {false, true}) {
          auto edit = GatherStraysAt(context, start, x, classes, retain_next);
          if (!edit) continue;
          ++edits;
          testing::CheckEditAgainstOracle(problem, start, *edit, evaluator);
        }
      }
      const Schedule after = GatherStrays(problem, pricer, start, kNever);
      const Evaluation e = EvaluateOracle(problem, after);
      REQUIRE_MESSAGE(e.ok(), "round " << round << ": " << e.violation.Message());
      CHECK(e.total <= before.total);
      CHECK(GatherStrays(problem, pricer, start, kNever) == after);
      ++cases;
      changed += !(after == start);
      lower += e.total < before.total;
    }
  }
  MESSAGE(cases << " schedules, " << edits << " edits, " << changed << " changed, " << lower << " lower");
  CHECK(cases > 600);
  CHECK(edits > 400);
  CHECK(lower > 80);
}

}  // namespace
}  // namespace annealer
