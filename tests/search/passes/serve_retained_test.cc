// ServeLoadsByRetention (search/passes/serve_retained.h): a subgraph that loads a tensor of three
// or more readers moves right after the subgraph that makes it, which retains it for it; on
// query/key/value heads.
#include <doctest/doctest.h>

#include <vector>

#include "eval/cost/cost_cache.h"
#include "eval/oracle.h"
#include "search/passes/serve_retained.h"
#include "search/starts/baseline.h"
#include "search/starts/constructive.h"
#include "tests/search/hand_cases.h"
#include "tests/support/graph_builder.h"
#include "tests/support/test_files.h"

namespace annealer {
namespace {

using testing::FittedGroups;
using testing::ReadBundledProblem;

// QueryValueHeads with a key projection per head, as ViT's: K_i = T @ Wk_i (512x64, so N cannot
// run in its subgraph, V11) transposed by a Layout op that the query part reads (L1: K_i must be
// in slow memory first). Ops: N = 0, then per head h from 1 + 7h: Q, K, K^T, S, P, V, O.
Problem QueryKeyValueHeads(Elements capacity, int heads) {
  testing::GraphBuilder b(capacity, 273);
  const TensorId x = b.Tensor(128, 512);
  const TensorId t = b.Tensor(128, 512);
  b.Op(OpKind::Pointwise, {x}, t, 8);
  for (int i = 0; i < heads; ++i) {
    const TensorId wq = b.Tensor(512, 64), q = b.Tensor(128, 64);
    const TensorId wk = b.Tensor(512, 64), k = b.Tensor(128, 64), kt = b.Tensor(64, 128);
    const TensorId sc = b.Tensor(128, 128), pr = b.Tensor(128, 128);
    const TensorId wv = b.Tensor(512, 64), v = b.Tensor(128, 64), o = b.Tensor(128, 64);
    b.Op(OpKind::MatMul, {t, wq}, q, 128);
    b.Op(OpKind::MatMul, {t, wk}, k, 128);
    b.Op(OpKind::Layout, {k}, kt, 0);
    b.Op(OpKind::MatMul, {q, kt}, sc, 64);
    b.Op(OpKind::Pointwise, {sc}, pr, 16);
    b.Op(OpKind::MatMul, {t, wv}, v, 128);
    b.Op(OpKind::MatMul, {pr, v}, o, 64);
  }
  return b.Build();
}

TEST_CASE("starts: ServeLoadsByRetention moves key projections after the groups that run N again") {
  const Problem problem = QueryKeyValueHeads(Elements{1} << 26, 4);
  CostCache cache(1 << 16);
  SubgraphPricer pricer(problem, &cache);
  const auto never = [] { return false; };
  // N alone (it writes T), the four key projections alone (each loads T), then per pair of heads
  // a query group and a value group that each run N again, as the regrouping makes them.
  std::vector<std::vector<OpId>> groups{{0}, {2}, {9}, {16}, {23}};
  for (OpId h : {0, 2}) {
    groups.push_back({0, 1 + 7 * h, 3 + 7 * h, 4 + 7 * h, 5 + 7 * h, 8 + 7 * h, 10 + 7 * h, 11 + 7 * h, 12 + 7 * h});
    groups.push_back({0, 6 + 7 * h, 7 + 7 * h, 13 + 7 * h, 14 + 7 * h});
  }
  const Schedule start = FittedGroups(pricer, groups);
  const Evaluation before = EvaluateOracle(problem, start);
  REQUIRE(before.ok());
  const Schedule served = ServeLoadsByRetention(problem, pricer, start, never);
  const Evaluation after = EvaluateOracle(problem, served);
  REQUIRE_MESSAGE(after.ok(), after.violation.Message());
  // The keys of the second pair (16, 23) each go right after a group of the first pair, which
  // retains T (tensor 1) for it: two loads of T fewer. The first pair's keys must precede its
  // query group (L1), where nothing before them makes T but N alone, which writes it.
  REQUIRE(served.subgraphs.size() == start.subgraphs.size());
  CHECK(served.subgraphs[3].ops == groups[5]);
  CHECK(served.subgraphs[3].retain == std::vector<TensorId>{1});
  CHECK(served.subgraphs[4].ops == std::vector<OpId>{16});
  CHECK(served.subgraphs[5].ops == groups[6]);
  CHECK(served.subgraphs[5].retain == std::vector<TensorId>{1});
  CHECK(served.subgraphs[6].ops == std::vector<OpId>{23});
  CHECK(before.total == doctest::Approx(4681.14285714).epsilon(1e-9));
  CHECK(after.total == doctest::Approx(4212.98168498).epsilon(1e-9));
  // Deterministic, and a no-op on a contest problem (no tensor with three readers).
  CHECK(ServeLoadsByRetention(problem, pricer, start, never) == served);
  const Problem five = ReadBundledProblem("mlsys-2026-5.json");
  CostCache five_cache(1 << 16);
  SubgraphPricer five_pricer(five, &five_cache);
  const Schedule five_start = GreedyFusion(five, five_pricer, BuildBaseline(five), never);
  CHECK(ServeLoadsByRetention(five, five_pricer, five_start, never) == five_start);
}

TEST_CASE("starts: ServeLoadsByRetention keeps every schedule valid on 2-6 query/key/value heads and five scratchpads") {
  int changed = 0;
  for (int heads = 2; heads <= 6; ++heads) {
    for (Elements capacity : {Elements{1} << 26, Elements{300000}, Elements{200000}, Elements{140000}, Elements{100000}}) {
      const Problem problem = QueryKeyValueHeads(capacity, heads);
      CostCache cache(1 << 16);
      SubgraphPricer pricer(problem, &cache);
      const auto never = [] { return false; };
      for (int mode = 0; mode < 3; ++mode) {
        Schedule start = mode == 2 ? BuildBaseline(problem) : GreedyFusion(problem, pricer, BuildBaseline(problem), never);
        if (mode == 1) start = RegroupReaderParts(problem, pricer, start, never);
        const Evaluation before = EvaluateOracle(problem, start);
        REQUIRE(before.ok());
        const Schedule after = ServeLoadsByRetention(problem, pricer, start, never);
        const Evaluation e = EvaluateOracle(problem, after);
        REQUIRE_MESSAGE(e.ok(), e.violation.Message());
        CHECK(e.total <= before.total);
        changed += !(after == start);
      }
    }
  }
  MESSAGE("schedules changed: " << changed);
}

}  // namespace
}  // namespace annealer
