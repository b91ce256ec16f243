// GatherPartials (search/passes/gather_partials.h): a sum's partial products that sit in
// subgraphs of their own are gathered into the subgraph that runs the sum.
#include <doctest/doctest.h>

#include <functional>
#include <iomanip>
#include <random>
#include <vector>

#include "eval/cost/cost_cache.h"
#include "eval/cost/incremental.h"
#include "eval/oracle.h"
#include "search/moves/moves.h"
#include "search/passes/gather_partials.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"
#include "tests/search/passes/fitted_schedule.h"
#include "tests/support/graph_builder.h"
#include "tests/support/sample_schedules.h"

namespace annealer {
namespace {

const std::function<bool()> kNever = [] { return false; };

// An inception module's 1×1 convolution over a concatenation, then a 3×3 one: P_i = X_i W_i
// (X_i a graph input, rows × K[i]; P_i rows × m), S = the sum of the P_i, R = relu(S), `taps`
// taps T_j = R V_j (rows × m2) and Z = their sum. Op ids: P_i i, S parts, R parts + 1, T_j
// parts + 2 + j, Z last.
Problem Module(const std::vector<Elements>& k, int taps, Elements capacity, double bandwidth, Elements rows,
               Elements m, Elements m2) {
  testing::GraphBuilder b(capacity, bandwidth);
  std::vector<TensorId> parts;
  for (Elements ki : k) {
    const TensorId p = b.Tensor(rows, m);
    b.Op(OpKind::MatMul, {b.Tensor(rows, ki), b.Tensor(ki, m)}, p, 64);
    parts.push_back(p);
  }
  const TensorId s = b.Tensor(rows, m), r = b.Tensor(rows, m);
  b.Op(OpKind::Pointwise, parts, s, 16);
  b.Op(OpKind::Pointwise, {s}, r, 16);
  std::vector<TensorId> outs;
  for (int j = 0; j < taps; ++j) {
    const TensorId t = b.Tensor(rows, m2);
    b.Op(OpKind::MatMul, {r, b.Tensor(m, m2)}, t, 64);
    outs.push_back(t);
  }
  if (taps > 1) b.Op(OpKind::Pointwise, outs, b.Tensor(rows, m2), 16);
  return b.Build();
}

TEST_CASE("gather-partials: the partial products of a sum, and only those") {
  const Problem problem = Module({32, 48, 16, 64}, 3, Elements{1} << 20, 4, 64, 32, 64);
  CHECK(PartialProducts(problem, 4) == std::vector<OpId>{0, 1, 2, 3});
  CHECK(PartialProducts(problem, 9) == std::vector<OpId>{6, 7, 8});   // the taps' sum too
  CHECK(PartialProducts(problem, 5).empty());                        // one input
  CHECK(PartialProducts(problem, 0).empty());                        // a MatMul
}

TEST_CASE("gather-partials: three partial products alone are gathered into the sum's subgraph") {
  const Problem problem = Module({32, 48, 16, 64}, 3, Elements{1} << 20, 4, 64, 32, 64);
  REQUIRE(MergeReadersApplies(problem));
  CostCache cache(1 << 16);
  SubgraphPricer pricer(problem, &cache);
  const std::vector<OpId> rest{0, 4, 5, 6, 7, 8, 9};
  const Schedule start = testing::FittedSchedule(pricer, {{1}, {2}, {3}, rest}, {{}, {}, {}, {}}, false);
  const Evaluation before = EvaluateOracle(problem, start);
  REQUIRE(before.ok());
  const Schedule after = GatherPartials(problem, pricer, start, kNever);
  const Evaluation e = EvaluateOracle(problem, after);
  REQUIRE(e.ok());
  MESSAGE(std::setprecision(10) << "partials alone " << before.total << " -> gathered " << e.total);
  REQUIRE(after.subgraphs.size() == 1);
  CHECK(after.subgraphs[0].ops == std::vector<OpId>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  // The one subgraph fitted by hand costs what the pass's does.
  const Schedule hand = testing::FittedSchedule(pricer, {{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}, {{}}, false);
  CHECK(e.total == doctest::Approx(EvaluateOracle(problem, hand).total).epsilon(1e-9));
  CHECK(before.total == doctest::Approx(9472).epsilon(1e-9));
  CHECK(e.total == doctest::Approx(6400).epsilon(1e-9));
  CHECK(GatherPartials(problem, pricer, start, kNever) == after);
  // The sum as the sink (no taps): its k-loop MatMuls would have four reduction lengths (G3), so
  // the gather has no valid fit.
  const Problem sink = Module({32, 48, 16, 64}, 0, Elements{1} << 20, 4, 64, 32, 64);
  CostCache sink_cache(1 << 16);
  SubgraphPricer sink_pricer(sink, &sink_cache);
  const Schedule sink_start = testing::FittedSchedule(sink_pricer, {{1}, {2}, {3}, {0, 4, 5}}, {{}, {}, {}, {}}, false);
  IncrementalEvaluator evaluator(sink, &sink_cache);
  REQUIRE(evaluator.Reset(sink_start).valid);
  const std::vector<int> rank = TopologicalRanks(sink);
  const MoveContext context{sink, rank, sink_pricer, kNever, &evaluator, true, false};
  auto edit = GatherPartialsAt(context, sink_start, 3, 4, false);
  CHECK((!edit || !evaluator.Propose(*edit).valid));
}

TEST_CASE("gather-partials: on random modules and schedules, never invalid, never higher, the same twice") {
  std::mt19937_64 rng(2029);
  auto pick = [&](std::initializer_list<Elements> values) {
    return *(values.begin() + std::uniform_int_distribution<int>(0, static_cast<int>(values.size()) - 1)(rng));
  };
  int cases = 0, edits = 0, changed = 0, lower = 0;
  for (int round = 0; round < 200; ++round) {
    const int parts = static_cast<int>(pick({2, 3, 4}));
    std::vector<Elements> k;
    for (int i = 0; i < parts; ++i) k.push_back(pick({16, 32, 48, 64, 96}));
    const int taps = static_cast<int>(pick({0, 3, 4}));
    const Problem problem = Module(k, taps, pick({6000, 20000, 60000, Elements{1} << 20}), pick({1, 4, 16, 64}),
                                   pick({16, 32, 64}), pick({16, 32, 64}), pick({16, 32}));
    CostCache cache(1 << 14);
    SubgraphPricer pricer(problem, &cache);
    const std::vector<int> rank = TopologicalRanks(problem);
    const OpId sum = static_cast<OpId>(parts);
    std::vector<Schedule> starts;
    // Each partial product alone, with another, or with the sum; the rest with the sum, or each
    // op alone where that has no fit.
    for (int draw = 0; draw < 3; ++draw) {
      std::vector<std::vector<OpId>> groups;
      std::vector<OpId> home;
      for (OpId p = 0; p < parts; ++p) {
        const int where = std::uniform_int_distribution<int>(0, 2)(rng);
        if (where == 0 || (where == 1 && groups.empty())) {
          groups.push_back({p});
        } else if (where == 1) {
          groups.back().push_back(p);
        } else {
          home.push_back(p);
        }
      }
      for (OpId op = sum; op < static_cast<OpId>(problem.ops.size()); ++op) home.push_back(op);
      groups.push_back(home);
      Schedule s;
      for (const auto& ops : groups) {
        auto fit = FitSubgraph(pricer, ops, {}, {}, nullptr, false, kNever);
        if (!fit) break;
        s.subgraphs.push_back(fit->subgraph);
      }
      if (s.subgraphs.size() == groups.size()) starts.push_back(std::move(s));
    }
    if (round % 5 == 0) {
      for (Schedule& s : testing::SampleSchedules(problem, rng, false)) starts.push_back(std::move(s));
    }
    for (const Schedule& start : starts) {
      const Evaluation before = EvaluateOracle(problem, start);
      if (!before.ok()) continue;
      IncrementalEvaluator evaluator(problem, &cache);
      REQUIRE(evaluator.Reset(start).valid);
      const MoveContext context{problem, rank, pricer, kNever, &evaluator, true, false};
      // Every edit at the sum's subgraphs priced as the oracle prices it, keeping every op.
      for (int x = 0; x < static_cast<int>(start.subgraphs.size()); ++x) {
        const auto& ops = start.subgraphs[x].ops;
        if (std::find(ops.begin(), ops.end(), sum) == ops.end()) continue;
        for (bool retain_next : {false, true}) {
          auto edit = GatherPartialsAt(context, start, x, sum, retain_next);
          if (!edit) continue;
          ++edits;
          testing::CheckEditAgainstOracle(problem, start, *edit, evaluator);
        }
      }
      const Schedule after = GatherPartials(problem, pricer, start, kNever);
      const Evaluation e = EvaluateOracle(problem, after);
      REQUIRE_MESSAGE(e.ok(), "round " << round << ": " << e.violation.Message());
      CHECK(e.total <= before.total);
      CHECK(GatherPartials(problem, pricer, start, kNever) == after);
      ++cases;
      changed += !(after == start);
      lower += e.total < before.total;
    }
  }
  MESSAGE(cases << " schedules, " << edits << " edits, " << changed << " changed, " << lower << " lower");
  CHECK(cases > 400);
  CHECK(edits > 200);
  CHECK(lower > 50);
}

}  // namespace
}  // namespace annealer
