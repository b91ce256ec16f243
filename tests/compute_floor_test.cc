// The fit's floor under a candidate's latency (eval/cost/compute_floor.h) against CostSubgraph:
// never above the price of a valid subgraph, on random problems with and without chip rules, the
// weight path, Layout ops and real-chip ratios, at random and odd granularities.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "eval/cost/compute_floor.h"
#include "eval/cost/subgraph_cost.h"
#include "eval/model/chip_rules.h"
#include "eval/random_schedule.h"
#include "tests/sample_schedules.h"

namespace annealer {
namespace {

// The floor as FitSubgraph takes it: the grid of the first sink's output.
double FloorOf(const Problem& problem, const Subgraph& subgraph) {
  const auto inside = [&](OpId op) {
    return std::find(subgraph.ops.begin(), subgraph.ops.end(), op) != subgraph.ops.end();
  };
  const Tensor* sink = nullptr;
  for (OpId op : subgraph.ops) {
    const auto& readers = problem.consumers[problem.ops[op].output];
    if (std::none_of(readers.begin(), readers.end(), inside)) {
      sink = &problem.tensors[problem.ops[op].output];
      break;
    }
  }
  REQUIRE(sink != nullptr);
  return ComputeFloor(ComputeFloorPerTile(problem, subgraph.ops), sink->height, sink->width,
                      subgraph.granularity.h, subgraph.granularity.w);
}

TEST_CASE("the compute floor never exceeds CostSubgraph's latency") {
  std::mt19937_64 rng(20261127);
  int checked = 0, tight = 0, zero = 0;
  for (int trial = 0; trial < 420; ++trial) {
    RandomProblemOptions options;
    options.max_ops = 3 + trial % 8;
    options.native = trial % 2 == 0 ? 8 : 32;
    options.layout_probability = trial % 4 == 0 ? 0.3 : 0;
    Problem problem = RandomProblem(rng, kAllDagShapes[trial % std::size(kAllDagShapes)], options);
    if (trial % 3 == 1) {  // the property tests' real-chip ratios
      problem.fast_memory_capacity = problem.native * problem.native * (trial % 9 == 1 ? 16 : 64);
      problem.slow_memory_bandwidth = trial % 2 == 0 ? 0.25 : 4;
    }
    if (trial % 5 == 2) {  // memory-bound: the floor is far below the price
      for (Op& op : problem.ops) op.base_cost *= 0.05;
    }
    if (trial % 3 == 2) {
      problem.chip = RandomChipRules(problem, rng);
      if (trial % 6 == 5) RandomWeightPath(problem, rng, problem.chip);
    }
    const std::vector<Schedule> schedules = testing::SampleSchedules(problem, rng, false);
    for (const Schedule& schedule : schedules) {
      for (size_t i = 0; i < schedule.subgraphs.size(); ++i) {
        const std::vector<TensorId> none;
        const std::vector<TensorId>& retained_in = i == 0 ? none : schedule.subgraphs[i - 1].retain;
        Subgraph subgraph = schedule.subgraphs[i];
        // The schedule's own settings, then odd sides and k (partial edge tiles), raster.
        for (int g = 0; g < 4; ++g) {
          if (g > 0) {
            std::uniform_int_distribution<Elements> side(1, problem.native);
            subgraph.granularity = {side(rng), side(rng), side(rng)};
            subgraph.traversal.reset();
          }
          const SubgraphResult result = CostSubgraph(problem, subgraph, retained_in);
          if (!result.ok()) continue;
          const double floor = FloorOf(problem, subgraph);
          CHECK(floor <= result.report.latency);
          ++checked;
          if (floor == 0) ++zero;
          if (floor > 0.9 * result.report.latency) ++tight;
        }
      }
    }
  }
  MESSAGE("compute floor: " << checked << " valid pricings, " << tight << " within 10 %, " << zero << " zero");
  CHECK(checked > 5000);
  CHECK(tight > 500);  // the floor is often close: it is what the fit skips by
}

// A hand case: a MatMul 128x128x128 (base 1500) with a Pointwise epilogue (base 100) at
// [64, 64, 32] is 4 tiles of 4 k-steps: 4 * (1500 + 100) of compute, all of it charged.
TEST_CASE("the compute floor of a MatMul and its epilogue") {
  Problem problem;
  problem.tensors = {{128, 128}, {128, 128}, {128, 128}, {128, 128}};
  problem.ops = {{OpKind::MatMul, {0, 1}, 2, 1500}, {OpKind::Pointwise, {2}, 3, 100}};
  problem.native = 128;
  problem.fast_memory_capacity = 1 << 20;
  problem.slow_memory_bandwidth = 1000;
  REQUIRE(problem.Finalize().empty());
  CHECK(ComputeFloorPerTile(problem, {0, 1}) == 1600);
  CHECK(ComputeFloorPerTile(problem, {1}) == 100);
  Subgraph subgraph;
  subgraph.ops = {0, 1};
  subgraph.granularity = {64, 64, 32};
  const SubgraphResult result = CostSubgraph(problem, subgraph, {});
  REQUIRE(result.ok());
  CHECK(result.report.compute_time == doctest::Approx(6400));
  CHECK(FloorOf(problem, subgraph) == doctest::Approx(6400 * (1 - 1e-6)));
  CHECK(FloorOf(problem, subgraph) <= result.report.latency);
}

}  // namespace
}  // namespace annealer
