// RetainRecomputed (search/passes/retain_recomputed.h): where the subgraph after another runs its
// ops again, the pass drops them and retains what they made.
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
#include "search/passes/retain_recomputed.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"
#include "tests/search/passes/fitted_schedule.h"
#include "tests/support/graph_builder.h"

namespace annealer {
namespace {

const std::function<bool()> kNever = [] { return false; };

// A convolution after a 1x1 convolution, as the importer lowers ResNet's bottlenecks: C = X @ Wc
// (X a graph input, rows x k), its epilogue P (Pointwise) making T (rows x cols), `taps` tap
// MatMuls T @ W_i (cols x cols) and their sum S (Pointwise) making Z, a graph output, or with
// `tail` read by one more Pointwise op R (the block's ReLU) making the graph output.
Problem Bottleneck(Elements capacity, double bandwidth, Elements rows, Elements k, Elements cols, int taps,
                   double conv_base, double tap_base, bool tail = false) {
  testing::GraphBuilder b(capacity, bandwidth);
  const TensorId x = b.Tensor(rows, k);
  const TensorId c = b.Tensor(rows, cols);
  b.Op(OpKind::MatMul, {x, b.Tensor(k, cols)}, c, conv_base);
  const TensorId t = b.Tensor(rows, cols);
  b.Op(OpKind::Pointwise, {c}, t, 8);
  std::vector<TensorId> parts;
  for (int i = 0; i < taps; ++i) {
    const TensorId m = b.Tensor(rows, cols);
    b.Op(OpKind::MatMul, {t, b.Tensor(cols, cols)}, m, tap_base);
    parts.push_back(m);
  }
  const TensorId z = b.Tensor(rows, cols);
  b.Op(OpKind::Pointwise, parts, z, 16);
  if (tail) b.Op(OpKind::Pointwise, {z}, b.Tensor(rows, cols), 8);
  return b.Build();
}

// Subgraphs of these ops in order, each fitted (the thorough fit) with the retention given.
Schedule Fitted(const SubgraphPricer& pricer, const std::vector<std::vector<OpId>>& groups,
                const std::vector<std::vector<TensorId>>& retain) {
  return testing::FittedSchedule(pricer, groups, retain, true);
}

TEST_CASE("starts: RetainRecomputed retains the tensor the next subgraph made again, which one drop does not reach") {
  // 256x128 rows, four taps; the scratchpad holds everything, bandwidth 64. The convolution C
  // (op 0) and its epilogue P (op 1) run in both subgraphs: with taps 2 and 3-5 and the sum 6.
  const Problem problem = Bottleneck(Elements{1} << 20, 64, 256, 512, 128, 4, 2048, 512);
  REQUIRE(MergeReadersApplies(problem));  // T has four readers
  CostCache cache(1 << 16);
  SubgraphPricer pricer(problem, &cache);
  const Schedule start = Fitted(pricer, {{0, 1, 2}, {0, 1, 3, 4, 5, 6}}, {{}, {}});
  const Evaluation before = EvaluateOracle(problem, start);
  REQUIRE_MESSAGE(before.ok(), before.violation.Message());
  const Schedule after = RetainRecomputed(problem, pricer, start, kNever, false);
  const Evaluation e = EvaluateOracle(problem, after);
  REQUIRE_MESSAGE(e.ok(), e.violation.Message());
  REQUIRE(after.subgraphs.size() == 2);
  CHECK(after.subgraphs[0].ops == std::vector<OpId>{0, 1, 2});
  CHECK(after.subgraphs[1].ops == std::vector<OpId>{3, 4, 5, 6});
  // T at least (the polish may leave the first tap's output, which the sum reads, written).
  const std::vector<TensorId>& kept = after.subgraphs[0].retain;
  CHECK(std::find(kept.begin(), kept.end(), problem.ops[1].output) != kept.end());
  const std::vector<TensorId> retained = {problem.ops[1].output, problem.ops[2].output};
  // The second subgraph no longer computes C (2 tiles x 2,048) nor loads X (256 x 512 / 64 per
  // tile pair): the price of the hand-made schedule, fitted the same way.
  const Evaluation expected =
      EvaluateOracle(problem, Fitted(pricer, {{0, 1, 2}, {3, 4, 5, 6}}, {retained, {}}));
  REQUIRE(expected.ok());
  CHECK(e.total == doctest::Approx(expected.total));
  CHECK(e.total < before.total - 2 * 2048);
  MESSAGE("recomputed " << before.total << ", retained " << e.total);
  CHECK(RetainRecomputed(problem, pricer, start, kNever, false) == after);  // deterministic
  // Without the retention the drop is invalid: T is read inside the first subgraph, so nothing
  // writes it (V7), and a move's repair puts C and P back. The retention toggle alone has no T to
  // retain (the second subgraph makes it): neither move reaches the schedule.
  const Evaluation dropped = EvaluateOracle(problem, Fitted(pricer, {{0, 1, 2}, {3, 4, 5, 6}}, {{}, {}}));
  CHECK(!dropped.ok());
}

TEST_CASE("starts: RetainRecomputed moves all but one tap where T and the taps' outputs do not fit, and drops the sum's retention") {
  // 256x128 rows (T and each tap output 32,768 elements), four taps, a scratchpad of 2.5 of
  // them (81,920): the first subgraph runs C, P and taps 2 and 3, the second C and P again,
  // taps 4 and 5 and the sum, retaining Z for R. The plain drop needs T and both tap outputs
  // retained (98,304); with tap 2 moved it needs T and tap 3's output, but the second subgraph
  // then holds those two and Z (98,304) unless Z is written and R loads it.
  const Problem problem = Bottleneck(81920, 64, 256, 512, 128, 4, 2048, 512, true);
  REQUIRE(MergeReadersApplies(problem));
  CostCache cache(1 << 16);
  SubgraphPricer pricer(problem, &cache);
  const TensorId t = problem.ops[1].output, m3 = problem.ops[3].output, z = problem.ops[6].output;
  const Schedule start = Fitted(pricer, {{0, 1, 2, 3}, {0, 1, 4, 5, 6}, {7}}, {{}, {z}, {}});
  const Evaluation before = EvaluateOracle(problem, start);
  REQUIRE_MESSAGE(before.ok(), before.violation.Message());
  // Neither the plain drop nor the moved tap with Z retained has a valid fit.
  CHECK(!FitSubgraph(pricer, {0, 1, 2, 3}, {}, {t, problem.ops[2].output, m3}, nullptr, true, kNever));
  CHECK(!FitSubgraph(pricer, {2, 4, 5, 6}, {t, m3}, {z}, nullptr, true, kNever));
  const Schedule after = RetainRecomputed(problem, pricer, start, kNever, false);
  const Evaluation e = EvaluateOracle(problem, after);
  REQUIRE_MESSAGE(e.ok(), e.violation.Message());
  REQUIRE(after.subgraphs.size() == 3);
  CHECK(after.subgraphs[0].ops == std::vector<OpId>{0, 1, 3});
  CHECK(after.subgraphs[1].ops == std::vector<OpId>{2, 4, 5, 6});
  // T at least (the polish may write tap 3's output instead), and Z written for R.
  const std::vector<TensorId>& kept = after.subgraphs[0].retain;
  CHECK(std::find(kept.begin(), kept.end(), t) != kept.end());
  CHECK(after.subgraphs[1].retain.empty());
  // The hand-made schedule fitted pair by pair (no polish) prices above the recompute; the
  // pass's polish of the pair takes it below.
  const Evaluation expected = EvaluateOracle(problem, Fitted(pricer, {{0, 1, 3}, {2, 4, 5, 6}, {7}}, {{t, m3}, {}, {}}));
  REQUIRE(expected.ok());
  CHECK(e.total <= expected.total);
  CHECK(e.total < before.total);
  MESSAGE("recomputed " << before.total << ", hand-made " << expected.total << ", the pass " << e.total);
  CHECK(RetainRecomputed(problem, pricer, start, kNever, false) == after);
}

TEST_CASE("starts: RetainRecomputed keeps schedules valid and never worse, on random bottlenecks and splits") {
  std::mt19937_64 rng(2027);
  auto pick = [&](std::initializer_list<Elements> values) {
    return *(values.begin() + std::uniform_int_distribution<int>(0, static_cast<int>(values.size()) - 1)(rng));
  };
  int cases = 0, changed = 0, moved = 0;
  for (int round = 0; round < 600; ++round) {
    const int taps = std::uniform_int_distribution<int>(3, 9)(rng);
    // A third of them with the block's ReLU after the sum, which the second subgraph may serve
    // by retention (the pass may then move taps and drop that retention).
    const bool tail = round % 3 == 0;
    const Problem problem =
        Bottleneck(pick({6000, 20000, 60000, 200000, Elements{1} << 22}), pick({5, 20, 64, 273}), pick({64, 128, 200, 256}),
                   pick({32, 64, 256}), pick({32, 64, 128}), taps, pick({100, 1000, 4000}), pick({50, 500, 2000}), tail);
    CostCache cache(1 << 14);
    SubgraphPricer pricer(problem, &cache);
    const OpId sum = static_cast<OpId>(problem.ops.size() - (tail ? 2 : 1));
    // The taps split between a subgraph with C and P and one that runs them again with the sum.
    const int first = std::uniform_int_distribution<int>(0, taps - 1)(rng);
    std::vector<OpId> a = {0, 1}, b = {0, 1};
    for (int i = 0; i < taps; ++i) (i < first ? a : b).push_back(2 + i);
    b.push_back(sum);
    std::vector<std::vector<OpId>> groups = {a, b};
    std::vector<std::vector<TensorId>> retains = {{}, {}};
    if (tail) {
      groups.push_back({sum + 1});
      retains.push_back({});
      if (std::uniform_int_distribution<int>(0, 1)(rng) == 1) retains[1] = {problem.ops[sum].output};
    }
    Schedule start;
    bool fits = true;
    std::vector<TensorId> in;
    for (size_t g = 0; g < groups.size(); ++g) {
      auto fit = FitSubgraph(pricer, groups[g], in, retains[g], nullptr, round % 2 == 0, kNever);
      if (!fit) {
        fits = false;
        break;
      }
      start.subgraphs.push_back(fit->subgraph);
      in = fit->subgraph.retain;
    }
    if (!fits || !EvaluateOracle(problem, start).ok()) {
      // No valid split at this capacity: the pass must still leave the greedy start valid.
      start = GreedyFusion(problem, pricer, BuildBaseline(problem), kNever);
    }
    const Evaluation before = EvaluateOracle(problem, start);
    if (!before.ok()) continue;
    const Schedule after = RetainRecomputed(problem, pricer, start, kNever, false);
    const Evaluation e = EvaluateOracle(problem, after);
    REQUIRE_MESSAGE(e.ok(), "round " << round << ": " << e.violation.Message());
    CHECK(e.total <= before.total);
    CHECK(RetainRecomputed(problem, pricer, start, kNever, false) == after);
    ++cases;
    changed += !(after == start);
    // A tap moved from the first subgraph (the second variant): the first keeps fewer.
    const size_t first_ops = start.subgraphs[0].ops.size();
    moved += !(after == start) && after.subgraphs.size() == start.subgraphs.size() && first_ops == a.size() &&
             after.subgraphs[0].ops.size() < first_ops;
  }
  MESSAGE(cases << " problems, " << changed << " schedules changed, " << moved << " with taps moved");
  CHECK(cases > 500);
  CHECK(changed > 100);
  CHECK(moved > 10);
}

}  // namespace
}  // namespace annealer
