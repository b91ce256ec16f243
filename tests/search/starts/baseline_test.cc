// The baselines (search/starts/baseline.h): the resident one on hand-priced chains, its order, and on
// random problems and the bundled ones valid for the oracle, never worse than the spilling one,
// retaining only tensors whose every consumer is the next subgraph; both baselines the same
// whether ops share candidates by context shape or each tries its own.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "eval/cost/cost_cache.h"
#include "eval/oracle.h"
#include "eval/random_schedule.h"
#include "search/starts/baseline.h"
#include "tests/support/test_files.h"

namespace annealer {
namespace {

// T0 -> op 0 -> T1 -> op 1 -> T2, all 128 x 128 Pointwise with base cost 1000, bandwidth 10.
Problem PointwiseChain(Elements capacity) {
  Problem p;
  p.tensors.assign(3, Tensor{128, 128});
  p.ops.push_back({OpKind::Pointwise, {0}, 1, 1000});
  p.ops.push_back({OpKind::Pointwise, {1}, 2, 1000});
  p.fast_memory_capacity = capacity;
  p.slow_memory_bandwidth = 10;
  REQUIRE(p.Finalize() == "");
  return p;
}

// Every tensor the schedule retains is consumed by the next subgraph's op, and only by it.
void CheckRetentionRule(const Problem& problem, const Schedule& schedule) {
  for (size_t i = 0; i < schedule.subgraphs.size(); ++i) {
    const Subgraph& sg = schedule.subgraphs[i];
    REQUIRE(sg.ops.size() == 1);
    for (TensorId t : sg.retain) {
      REQUIRE(i + 1 < schedule.subgraphs.size());
      const OpId next = schedule.subgraphs[i + 1].ops[0];
      CHECK(!problem.consumers[t].empty());
      for (OpId user : problem.consumers[t]) CHECK(user == next);
    }
  }
}

TEST_CASE("resident baseline: a chain keeps its activation when it fits") {
  // Spilling: each op loads 16384 and writes 16384 in one 128 x 128 tile: 3276.8 twice.
  const Problem roomy = PointwiseChain(50000);
  const Evaluation spilling = EvaluateOracle(roomy, BuildBaseline(roomy));
  REQUIRE(spilling.ok());
  CHECK(spilling.total == doctest::Approx(6553.6));
  // Resident: op 0 retains T1 (no write, 1638.4 to load T0), op 1 reads it free and writes T2.
  const Schedule resident = BuildResidentBaseline(roomy);
  const Evaluation e = EvaluateOracle(roomy, resident);
  REQUIRE(e.ok());
  CHECK(e.total == doctest::Approx(3276.8));
  CHECK(resident.subgraphs[0].retain == std::vector<TensorId>{1});
  CHECK(resident.subgraphs[1].retain.empty());

  // At 30000 the 128 x 128 tile no longer fits beside T1 whole (R5): 128 x 64 tiles, two steps
  // of max(1000, 819.2) per op, 4000 against the spilling 6553.6.
  const Problem medium = PointwiseChain(30000);
  const Evaluation m = EvaluateOracle(medium, BuildResidentBaseline(medium));
  REQUIRE(m.ok());
  CHECK(m.total == doctest::Approx(4000));
  CHECK(EvaluateOracle(medium, BuildBaseline(medium)).total == doctest::Approx(6553.6));

  // At 20000 retaining T1 forces tiles of 2048 elements (8 steps of 1000 per op): spilling wins
  // and the DP keeps it.
  const Problem tight = PointwiseChain(20000);
  const Schedule kept = BuildResidentBaseline(tight);
  CHECK(kept == BuildBaseline(tight));
  CHECK(EvaluateOracle(tight, kept).total == doctest::Approx(6553.6));
}

TEST_CASE("resident baseline: a tensor with two consumers or a graph output is written") {
  // T0 -> op 0 -> T1, consumed by op 1 (-> T2) and op 2 (-> T3): T1 has two consumers.
  Problem p;
  p.tensors.assign(4, Tensor{128, 128});
  p.ops.push_back({OpKind::Pointwise, {0}, 1, 1000});
  p.ops.push_back({OpKind::Pointwise, {1}, 2, 1000});
  p.ops.push_back({OpKind::Pointwise, {1}, 3, 1000});
  p.fast_memory_capacity = 1 << 20;
  p.slow_memory_bandwidth = 10;
  REQUIRE(p.Finalize() == "");
  const Schedule s = BuildResidentBaseline(p);
  for (const Subgraph& sg : s.subgraphs) CHECK(sg.retain.empty());
  CHECK(EvaluateOracle(p, s).ok());
}

TEST_CASE("resident order: the producer of an op's largest sole-consumer input runs just before it") {
  // a: T0 -> T1, b: T1 -> T2 (Pointwise, `rows` x 64); c: T5 -> T3 (Pointwise, 64 x 256);
  // d = T2 @ T3 -> T4. Both inputs of d have d as their only consumer; the larger one's
  // producer is visited last and so runs immediately before d.
  const auto diamond = [](Elements rows) {
    Problem p;
    p.tensors = {{64, rows}, {64, rows}, {64, rows}, {256, 64}, {256, rows}, {256, 64}};
    p.ops.push_back({OpKind::Pointwise, {0}, 1, 10});
    p.ops.push_back({OpKind::Pointwise, {1}, 2, 10});
    p.ops.push_back({OpKind::Pointwise, {5}, 3, 10});
    p.ops.push_back({OpKind::MatMul, {2, 3}, 4, 10});
    REQUIRE(p.Finalize() == "");
    return p;
  };
  // |T2| = 8192 < |T3| = 16384: c next to d; Kahn's order would be 0, 1, 2, 3 as well.
  CHECK(ResidentOrder(diamond(128)) == std::vector<OpId>{0, 1, 2, 3});
  // |T2| = 32768 > |T3|: the chain a, b goes last, c first.
  CHECK(ResidentOrder(diamond(512)) == std::vector<OpId>{2, 0, 1, 3});
}

// `rounds` rounds of a random problem of each DAG shape with up to `max_ops` ops, every other
// round with a roomy memory, where retention fits, as on a real chip: visit(problem, round).
template <typename Visit>
void ForRandomProblems(uint64_t seed, int rounds, int max_ops, Visit visit) {
  std::mt19937_64 rng(seed);
  for (int round = 0; round < rounds; ++round) {
    for (DagShape shape : kAllDagShapes) {
      RandomProblemOptions options;
      options.max_ops = max_ops;
      Problem problem = RandomProblem(rng, shape, options);
      if (round % 2 == 0) problem.fast_memory_capacity *= 8;
      visit(problem, round);
    }
  }
}

TEST_CASE("resident baseline: valid, never worse than spilling, on random problems") {
  int cases = 0;
  int retaining = 0;
  int better = 0;
  ForRandomProblems(20260424, 300, 10, [&](const Problem& problem, int round) {
    Schedule spilling;
    try {
      spilling = BuildBaseline(problem);
    } catch (const std::runtime_error&) {
      CHECK_THROWS_AS(BuildResidentBaseline(problem), std::runtime_error);
      return;
    }
    ++cases;
    const Evaluation base = EvaluateOracle(problem, spilling);
    REQUIRE(base.ok());
    CostCache cache(1 << 12);
    const Schedule resident = BuildResidentBaseline(problem, &cache);
    CHECK(resident == BuildResidentBaseline(problem));  // the cache changes nothing
    const Evaluation e = EvaluateOracle(problem, resident);
    CAPTURE(round);
    REQUIRE_MESSAGE(e.ok(), e.violation.Message());
    CHECK(e.total <= base.total * (1 + 1e-12));
    CheckRetentionRule(problem, resident);
    // The order is a permutation of the ops.
    std::vector<OpId> order = ResidentOrder(problem);
    std::sort(order.begin(), order.end());
    for (size_t i = 0; i < order.size(); ++i) CHECK(order[i] == static_cast<OpId>(i));
    bool any = false;
    for (const Subgraph& sg : resident.subgraphs) any = any || !sg.retain.empty();
    retaining += any ? 1 : 0;
    better += e.total < base.total * (1 - 1e-9) ? 1 : 0;
  });
  // The test has teeth only if retention happens and pays on a good share of the problems.
  MESSAGE("cases " << cases << ", retaining " << retaining << ", better " << better);
  CHECK(retaining > cases / 4);
  CHECK(better > cases / 4);
}

// `problem` twice over, the second copy's ids after the first's: every op of the copy has the
// context shape of its original.
Problem TwoCopies(const Problem& problem) {
  Problem twice = problem;
  const auto shift = static_cast<TensorId>(problem.tensors.size());
  twice.tensors.insert(twice.tensors.end(), problem.tensors.begin(), problem.tensors.end());
  for (Op op : problem.ops) {
    for (TensorId& t : op.inputs) t += shift;
    op.output += shift;
    twice.ops.push_back(op);
  }
  REQUIRE(twice.Finalize() == "");
  return twice;
}

TEST_CASE("baselines: sharing candidates by context shape gives the schedules of trying every op") {
  int cases = 0;
  ForRandomProblems(20261128, 150, 8, [&](const Problem& problem, int round) {
    for (const Problem& p : {problem, TwoCopies(problem)}) {
      CAPTURE(round);
      const Schedule every = BuildBaseline(p, nullptr, BaselineSharing::kEveryOp);
      ++cases;
      CHECK(BuildBaseline(p) == every);
      CostCache cache(1 << 12);
      CHECK(BuildBaseline(p, &cache) == every);
      CHECK(BuildResidentBaseline(p, &cache) == BuildResidentBaseline(p, nullptr, BaselineSharing::kEveryOp));
    }
  });
  CHECK(cases == 2100);
}

TEST_CASE("resident baseline: the bundled problems") {
  for (const char* name : {"mlsys-2026-1.json", "mlsys-2026-5.json", "mlsys-2026-9.json",
                           "mlsys-2026-13.json", "mlsys-2026-17.json"}) {
    CAPTURE(name);
    const Problem problem = testing::ReadBundledProblem(name);
    CostCache cache(1 << 16);
    const Evaluation base = EvaluateOracle(problem, BuildBaseline(problem, &cache));
    const Schedule resident = BuildResidentBaseline(problem, &cache);
    const Evaluation e = EvaluateOracle(problem, resident);
    REQUIRE(e.ok());
    CHECK(e.total <= base.total);
    CheckRetentionRule(problem, resident);
  }
}

}  // namespace
}  // namespace annealer
