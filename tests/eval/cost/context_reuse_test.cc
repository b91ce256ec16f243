// Pricing one context at many granularities within a ContextReuse scope (eval/cost/context_reuse.h),
// and step classes on tensors read through two templates (eval/cost/subgraph_cost.h), against the
// oracle.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>

#include "eval/cost/context_reuse.h"
#include "eval/cost/cost_cache.h"
#include "eval/oracle.h"
#include "eval/random_schedule.h"
#include "eval/cost/subgraph_cost.h"
#include "eval/model/traversal.h"
#include "tests/eval/cost/subgraph_oracle_check.h"

namespace annealer {
namespace {

using testing::Close;
using testing::ExpectSameAsOracle;

Elements Draw(std::mt19937_64& rng, Elements lo, Elements hi) {
  return std::uniform_int_distribution<Elements>(lo, hi)(rng);
}

// A residual bottleneck: A (rows x c) @ W1 (c x m) -> B, B @ W2 (m x c) -> D, D + A -> E. Fused
// whole, A is read twice: as whole rows by the first MatMul (columns [0, c)) and as the tile by
// the residual add (the tile's columns), the pattern of ResNet's blocks.
Problem Bottleneck(std::mt19937_64& rng) {
  Problem p;
  p.native = Elements{1} << Draw(rng, 2, 5);
  const Elements rows = Draw(rng, 1, 3 * p.native), c = Draw(rng, 1, 3 * p.native), m = Draw(rng, 1, 2 * p.native);
  //           A          W1       B          W2       D          E
  p.tensors = {{c, rows}, {m, c}, {m, rows}, {c, m}, {c, rows}, {c, rows}};
  p.ops = {{OpKind::MatMul, {0, 1}, 2, static_cast<double>(Draw(rng, 1, 500))},
           {OpKind::MatMul, {2, 3}, 4, static_cast<double>(Draw(rng, 1, 500))},
           {OpKind::Pointwise, {4, 0}, 5, static_cast<double>(Draw(rng, 1, 100))}};
  p.fast_memory_capacity = Draw(rng, 0, 2) == 0 ? Draw(rng, 1000, 20000) : 100000000;
  p.slow_memory_bandwidth = static_cast<double>(Draw(rng, 1, 50));
  REQUIRE(p.Finalize().empty());
  return p;
}

// A granularity drawn around the problem's sizes (sometimes out of range, for V2).
Granularity RandomGranularity(std::mt19937_64& rng, const Problem& problem) {
  auto side = [&] {
    return Draw(rng, 0, 9) == 0 ? Draw(rng, 0, problem.native + 1)
                                : std::min(problem.native, Elements{1} << Draw(rng, 0, 6));
  };
  return {side(), side(), side()};
}

// A named traversal, a random order or raster, for the subgraph's grid.
void RandomTraversal(std::mt19937_64& rng, const Problem& problem, Subgraph& s) {
  s.traversal.reset();
  const OpId sink = s.ops.back();
  const Tensor& z = problem.tensors[problem.ops[sink].output];
  if (s.granularity.w < 1 || s.granularity.h < 1) return;
  const int64_t rows = (z.height + s.granularity.h - 1) / s.granularity.h;
  const int64_t cols = (z.width + s.granularity.w - 1) / s.granularity.w;
  if (rows * cols > 4096) return;
  switch (Draw(rng, 0, 3)) {
    case 0: return;
    case 1: {
      std::vector<int64_t> order(rows * cols);
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      s.traversal = std::move(order);
      return;
    }
    default:
      s.traversal = MakeTraversal(kAllTraversalPatterns[Draw(rng, 0, std::size(kAllTraversalPatterns) - 1)], rows, cols);
  }
}

TEST_CASE("step classes price tensors read through two templates as the oracle does") {
  std::mt19937_64 rng(2401);
  int valid = 0, classes = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const Problem problem = Bottleneck(rng);
    for (int g = 0; g < 12; ++g) {
      Subgraph s;
      s.ops = Draw(rng, 0, 3) == 0 ? std::vector<OpId>{1, 2} : std::vector<OpId>{0, 1, 2};
      s.granularity = RandomGranularity(rng, problem);
      RandomTraversal(rng, problem, s);
      const std::string what = "trial " + std::to_string(trial) + " granularity " + std::to_string(g);
      const bool ok = ExpectSameAsOracle(problem, s, {}, CostSubgraph(problem, s, {}), what);
      ExpectSameAsOracle(problem, s, {}, CostSubgraphStepByStep(problem, s, {}), what + " (step by step)");
      valid += ok;
      classes += ok && CostSubgraphUsesStepClasses(problem, s, {});
    }
  }
  MESSAGE("bottlenecks: valid " << valid << ", by step classes " << classes);
  CHECK(valid > 2000);
  CHECK(classes > 2500);  // with one template per tensor required, 853 were
}

// Within one scope: runs of one context at many granularities and traversals, interleaved with
// other op lists, retain sets and retained-in sets of the same problem and with another problem
// at another address; every answer the oracle's, with and without a cache.
TEST_CASE("pricing within a ContextReuse scope equals the oracle") {
  int valid = 0, invalid = 0;
  for (DagShape shape : kAllDagShapes) {
    std::mt19937_64 rng(7100 + static_cast<int>(shape));
    for (int trial = 0; trial < 40; ++trial) {
      RandomProblemOptions options;
      options.min_ops = 3;
      options.max_ops = 9;
      options.layout_probability = trial % 3 == 0 ? 0.3 : 0.0;
      const Problem problems[2] = {RandomProblem(rng, shape, options), RandomProblem(rng, shape, options)};
      RandomScheduleOptions schedule_options;
      schedule_options.fuse_probability = 0.6;
      schedule_options.invalid_probability = 0.1;
      schedule_options.max_steps = 400;
      const Schedule schedules[2] = {RandomSchedule(problems[0], rng, schedule_options),
                                     RandomSchedule(problems[1], rng, schedule_options)};
      CostCache cache(1 << 10);
      const ContextReuse reuse;
      for (int run = 0; run < 30; ++run) {
        const int which = Draw(rng, 0, 3) == 0 ? 1 : 0;
        const Problem& problem = problems[which];
        const Schedule& schedule = schedules[which];
        const size_t i = static_cast<size_t>(Draw(rng, 0, static_cast<Elements>(schedule.subgraphs.size()) - 1));
        Subgraph s = schedule.subgraphs[i];
        std::vector<TensorId> retained_in = i > 0 ? schedule.subgraphs[i - 1].retain : std::vector<TensorId>{};
        if (Draw(rng, 0, 4) == 0) retained_in.clear();
        if (Draw(rng, 0, 4) == 0) s.retain.clear();
        const int length = static_cast<int>(Draw(rng, 1, 8));
        for (int g = 0; g < length; ++g) {
          s.granularity = RandomGranularity(rng, problem);
          RandomTraversal(rng, problem, s);
          const std::string what = "shape " + std::to_string(static_cast<int>(shape)) + " trial " +
                                   std::to_string(trial) + " run " + std::to_string(run) + " step " + std::to_string(g);
          const bool ok = ExpectSameAsOracle(problem, s, retained_in, CostSubgraph(problem, s, retained_in), what);
          if (which == 0) {  // the cache serves one problem
            SubgraphResult cached;
            cache.LookupOrCompute(problem, s, retained_in, cached);
            ExpectSameAsOracle(problem, s, retained_in, cached, what + " (cache)");
            SubgraphReport report;
            CHECK(cache.LookupValid(problem, s, retained_in, report) == ok);
            if (ok) CHECK(Close(report.latency, EvaluateSubgraphOracle(problem, s, retained_in).report.latency));
          }
          (ok ? valid : invalid) += 1;
        }
      }
    }
  }
  MESSAGE("within a scope: valid " << valid << ", invalid " << invalid);
  CHECK(valid > 1000);
  CHECK(invalid > 500);
}

}  // namespace
}  // namespace annealer
