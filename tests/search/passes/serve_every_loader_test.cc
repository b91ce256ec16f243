// ServeEveryLoader (search/passes/serve_every_loader.h): a writer of a shared tensor dropped once
// every loader of it is served by a copy of its producer run right before it.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <vector>

#include "eval/cost/cost_cache.h"
#include "eval/oracle.h"
#include "search/moves/moves.h"
#include "search/starts/baseline.h"
#include "search/starts/constructive.h"
#include "search/passes/retain_for_next.h"
#include "search/passes/serve_every_loader.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"
#include "tests/search/passes/fitted_schedule.h"
#include "tests/support/graph_builder.h"
#include "tests/support/test_files.h"

namespace annealer {
namespace {

const std::function<bool()> kNever = [] { return false; };

// A norm p = f(s) of a rows x cols tensor s read by `heads` projections t @ W_h (K = cols, split
// in k where cols exceeds the native side, so p cannot join them: V11), as ViT's LayerNorm and its
// key projections. s is a graph input, or made from one by a MatMul when `made`; `reader` adds a
// Pointwise reader of t (which may hold p).
Problem Heads(Elements capacity, double bandwidth, Elements rows, Elements cols, int heads, bool made, bool reader,
              double norm_base) {
  testing::GraphBuilder b(capacity, bandwidth);
  TensorId s = b.Tensor(rows, cols);
  if (made) {
    const TensorId m = b.Tensor(rows, cols);
    b.Op(OpKind::MatMul, {s, b.Tensor(cols, cols)}, m, 1024);
    s = m;
  }
  const TensorId t = b.Tensor(rows, cols);
  b.Op(OpKind::Pointwise, {s}, t, norm_base);
  std::vector<TensorId> outs;
  for (int h = 0; h < heads; ++h) {
    outs.push_back(b.Tensor(rows, 128));
    b.Op(OpKind::MatMul, {t, b.Tensor(cols, 128)}, outs.back(), 1024);
  }
  if (reader) b.Op(OpKind::Pointwise, {t}, b.Tensor(rows, cols), 16);
  return b.Build();
}

TEST_CASE("starts: ServeEveryLoader drops the norm's writer and serves each head from a copy") {
  // s (graph input, 128 x 256) -> p -> t, read by four heads with K = 256 > 128. Layer by layer p
  // loads s and writes t (8,192), each head loads t, its weight and writes its output (10,240):
  // 49,152. Served, p runs alone before each head, loading s and retaining t (4,096), and each head
  // loads no t (6,144): 40,960, the same schedule fitted by hand.
  const Problem problem = Heads(Elements{1} << 22, 8, 128, 256, 4, false, false, 8);
  REQUIRE(MergeReadersApplies(problem));
  CostCache cache(1 << 16);
  SubgraphPricer pricer(problem, &cache);
  const TensorId t = problem.ops[0].output;
  const Schedule start = BuildBaseline(problem);
  const Evaluation before = EvaluateOracle(problem, start);
  REQUIRE_MESSAGE(before.ok(), before.violation.Message());
  const Schedule after = ServeEveryLoader(problem, pricer, start, kNever);
  const Evaluation e = EvaluateOracle(problem, after);
  REQUIRE_MESSAGE(e.ok(), e.violation.Message());
  REQUIRE(after.subgraphs.size() == 8);
  for (int h = 0; h < 4; ++h) {
    CHECK(after.subgraphs[2 * h].ops == std::vector<OpId>{0});
    CHECK(after.subgraphs[2 * h].retain == std::vector<TensorId>{t});
    CHECK(after.subgraphs[2 * h + 1].ops == std::vector<OpId>{1 + h});
  }
  const Evaluation expected = EvaluateOracle(
      problem, testing::FittedSchedule(pricer, {{0}, {1}, {0}, {2}, {0}, {3}, {0}, {4}}, {{t}, {}, {t}, {}, {t}, {}, {t}, {}}, false));
  REQUIRE(expected.ok());
  CHECK(e.total == doctest::Approx(expected.total));
  CHECK(before.total == doctest::Approx(49152));
  CHECK(e.total == doctest::Approx(40960));
  CHECK(ServeEveryLoader(problem, pricer, start, kNever) == after);  // deterministic
}

TEST_CASE("starts: ServeEveryLoader keeps the writer where a copy costs more than the loads it saves") {
  // The same heads with a norm whose compute (base 4096 a tile) dwarfs a load of t: a copy before
  // each head costs more than the write and loads it saves, so the schedule stays.
  const Problem problem = Heads(Elements{1} << 22, 8, 128, 256, 4, false, false, 4096);
  CostCache cache(1 << 16);
  SubgraphPricer pricer(problem, &cache);
  const Schedule start = BuildBaseline(problem);
  CHECK(ServeEveryLoader(problem, pricer, start, kNever) == start);
}

TEST_CASE("starts: ServeEveryLoader and RetainForNext keep every schedule valid and never raise it on random heads") {
  // 3-8 heads of K = 128-384 over 64-320 rows, s a graph input or made by a MatMul, a Pointwise
  // reader of t now and then, norms from cheap to dear, scratchpads from a few tensors to ample,
  // bandwidths 2-64; from the baseline, the greedy start and random fused runs: whatever the pass
  // commits, the oracle accepts, it never raises the total and it is the same on a second call.
  std::mt19937_64 rng(47);
  int changed = 0, retained = 0, cases = 0;
  for (int round = 0; round < 500; ++round) {
    const Elements rows = 64 * (1 + static_cast<Elements>(rng() % 5));
    const Elements cols = 128 * (1 + static_cast<Elements>(rng() % 3));
    const int heads = 3 + static_cast<int>(rng() % 6);
    const Elements capacity =
        (rng() % 4 == 0) ? (Elements{1} << 24) : rows * cols * (3 + static_cast<Elements>(rng() % 6));
    const double bandwidth = 2.0 * (1 << (rng() % 6));
    const double norm_base = 4.0 * (1 << (rng() % 8));
    const Problem problem = Heads(capacity, bandwidth, rows, cols, heads, rng() % 2 == 0, rng() % 3 == 0, norm_base);
    CostCache cache(1 << 16);
    SubgraphPricer pricer(problem, &cache);
    for (const Schedule& start : testing::PassStarts(problem, pricer, rng, 3)) {
      const Evaluation before = EvaluateOracle(problem, start);
      if (!before.ok()) continue;
      ++cases;
      const Schedule after = ServeEveryLoader(problem, pricer, start, kNever);
      const Evaluation e = EvaluateOracle(problem, after);
      REQUIRE_MESSAGE(e.ok(), e.violation.Message());
      CHECK(e.total <= before.total * (1 + 1e-12));
      CHECK(ServeEveryLoader(problem, pricer, start, kNever) == after);
      changed += !(after == start);
      // RetainForNext runs after it in the search, and on the start as well.
      for (const Schedule* from : std::vector<const Schedule*>{&start, &after}) {
        const Evaluation at = EvaluateOracle(problem, *from);
        const Schedule kept = RetainForNext(problem, pricer, *from, kNever);
        const Evaluation k = EvaluateOracle(problem, kept);
        REQUIRE_MESSAGE(k.ok(), k.violation.Message());
        CHECK(k.total <= at.total * (1 + 1e-12));
        CHECK(RetainForNext(problem, pricer, *from, kNever) == kept);
        retained += !(kept == *from);
      }
    }
  }
  MESSAGE(cases << " schedules, " << changed << " changed, " << retained << " of twice as many kept more for the next");
  CHECK(cases > 1000);
  CHECK(changed > 100);
  CHECK(retained > 50);
}

TEST_CASE("starts: ServeEveryLoader and RetainForNext leave a contest problem as it is") {
  const Problem five = testing::ReadBundledProblem("mlsys-2026-5.json");
  CostCache cache(1 << 16);
  SubgraphPricer pricer(five, &cache);
  const Schedule start = GreedyFusion(five, pricer, BuildBaseline(five), kNever);
  CHECK(ServeEveryLoader(five, pricer, start, kNever) == start);
  CHECK(RetainForNext(five, pricer, start, kNever) == start);
}

}  // namespace
}  // namespace annealer
