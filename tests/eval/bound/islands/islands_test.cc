// P12, the islands part of the lower bound (eval/bound/islands/islands.h, docs/lower-bound.md):
// by hand, met by the resident baseline, and never above the oracle at real-chip ratios.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "eval/bound/bounds.h"
#include "eval/oracle.h"
#include "eval/random_schedule.h"
#include "search/starts/baseline.h"
#include "tests/support/bound_checks.h"
#include "tests/support/bound_nets.h"

namespace annealer {
namespace {

using testing::RandomLayers;
using testing::RealRatioSchedules;
using testing::ValidRandomOptions;
using testing::kSlack;

// P12 by hand: X -> P (Pointwise, 2 native tiles of 100) -> Y (8 x 16) -> A = Y @ Wt (K = 16 > n
// = 8, base 1) -> Z, a graph output. P cannot sit in A's subgraph (P1, V11) and A can only be a
// k-loop MatMul, so {P} and {A} are islands: P's island computes 200 and loads X (128); A's
// loads Wt (128, P5: one row tile) and writes Z (64), 192 at bandwidth 1. Globally compute 201
// and traffic 320 would hide A's loads under P's compute; no schedule can.
TEST_CASE("bound: islands (P12) by hand, met by the resident baseline") {
  Problem p;
  p.native = 8;
  p.tensors = {{16, 8}, {16, 8}, {8, 16}, {8, 8}};  // X, Y, Wt, Z as {width, height}
  p.ops.push_back({OpKind::Pointwise, {0}, 1, 100});
  p.ops.push_back({OpKind::MatMul, {1, 2}, 3, 1});
  p.fast_memory_capacity = 4096;
  p.slow_memory_bandwidth = 1;
  REQUIRE(p.Finalize() == "");
  const LowerBound bound = ComputeLowerBound(p);
  CHECK(bound.island_count == 2);
  CHECK(bound.islands == doctest::Approx(392));
  CHECK(bound.compute == doctest::Approx(201));
  CHECK(bound.total() == doctest::Approx(392));
  CHECK(std::max({bound.compute, bound.graph_io, bound.traffic, bound.combined}) < 330);
  const Evaluation resident = EvaluateOracle(p, BuildResidentBaseline(p));
  REQUIRE(resident.ok());
  CHECK(resident.total == doctest::Approx(392));  // optimal: it meets the bound
}

// P12 at real-chip ratios: a memory of thousands of native tiles (everything fits, nothing is
// too large to retain) and memory time from a tenth of the compute to ten times it, so that
// islands differ in balance; schedules are random ones, both baselines and short searches.
TEST_CASE("bound: islands (P12) never above the oracle at real-chip ratios") {
  int valid = 0, decided = 0;
  double tightest = 0;
  for (DagShape shape : kAllDagShapes) {
    std::mt19937_64 rng(9100 + static_cast<int>(shape));
    for (int trial = 0; trial < 200; ++trial) {
      RandomProblemOptions problem_options;
      problem_options.max_ops = 3 + trial % 10;
      problem_options.native = trial % 3 == 0 ? 8 : 4;  // reductions above native: P1 splits islands
      Problem problem = trial % 2 == 0 ? RandomLayers(rng) : RandomProblem(rng, shape, problem_options);
      const Elements tile = problem.native * problem.native;
      problem.fast_memory_capacity = tile * (trial % 3 == 0 ? 4096 : 64);
      const double ratio[] = {0.1, 0.5, 2, 10, 30};
      for (Op& op : problem.ops) op.base_cost *= ratio[trial % 5];
      const std::vector<Schedule> schedules = RealRatioSchedules(
          problem, rng, trial, 3,
          [](int s) { return ValidRandomOptions(0.2 + 0.3 * s, 0.2, 0.3); },
          10, 0);
      const LowerBound bound = ComputeLowerBound(problem);
      const bool islands_decide =
          bound.islands > std::max({bound.compute, bound.graph_io, bound.traffic, bound.combined}) * (1 + 1e-9);
      for (const Schedule& schedule : schedules) {
        const Evaluation e = EvaluateOracle(problem, schedule);
        if (!e.ok()) continue;
        ++valid;
        CAPTURE(trial);
        CHECK(bound.islands <= e.total * (1 + kSlack));
        CHECK(bound.crossing <= e.total * (1 + kSlack));
        CHECK(bound.total() <= e.total * (1 + kSlack));
        decided += islands_decide ? 1 : 0;
        if (islands_decide) tightest = std::max(tightest, bound.islands / e.total);
      }
    }
  }
  MESSAGE("valid schedules " << valid << ", islands above every other part in " << decided
                              << ", tightest islands/latency " << tightest);
  CHECK(valid > 2000);
  CHECK(decided > 100);
}

}  // namespace
}  // namespace annealer
