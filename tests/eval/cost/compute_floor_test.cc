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
#include "tests/support/sample_schedules.h"

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

// The memory floor as FitSubgraph takes it: the grid of the first sink's output.
double MemoryFloorOf(const Problem& problem, const Subgraph& subgraph, const std::vector<TensorId>& retained_in) {
  const auto inside = [&](OpId op) {
    return std::find(subgraph.ops.begin(), subgraph.ops.end(), op) != subgraph.ops.end();
  };
  for (OpId op : subgraph.ops) {
    const auto& readers = problem.consumers[problem.ops[op].output];
    if (std::none_of(readers.begin(), readers.end(), inside)) {
      const Tensor& sink = problem.tensors[problem.ops[op].output];
      const MemoryFloorTerms terms = MemoryFloorTermsOf(problem, subgraph.ops, retained_in, subgraph.retain);
      return MemoryFloor(terms, problem.slow_memory_bandwidth, sink.height, sink.width, subgraph.granularity.h,
                         subgraph.granularity.w, subgraph.granularity.k);
    }
  }
  FAIL("no sink");
  return 0;
}

TEST_CASE("the compute floor never exceeds CostSubgraph's latency") {
  std::mt19937_64 rng(20261127);
  int checked = 0, tight = 0, zero = 0, memory_tight = 0, memory_above = 0;
  int upstream_k = 0, split_inputs = 0, whole_k_inputs = 0;  // pricings that count each kind of input
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
          const double memory = MemoryFloorOf(problem, subgraph, retained_in);
          CHECK(memory <= result.report.memory_time);
          CHECK(memory <= result.report.latency);
          if (memory > 0.9 * result.report.memory_time) ++memory_tight;
          {
            const MemoryFloorTerms terms = MemoryFloorTermsOf(problem, subgraph.ops, retained_in, subgraph.retain);
            const bool k_split = terms.k_star > subgraph.granularity.k;
            if (k_split && terms.per_tile > 0) ++upstream_k;
            if (k_split && (terms.lhs > 0 || terms.rhs > 0)) ++split_inputs;
            if (!k_split && (terms.lhs > 0 || terms.rhs > 0)) ++whole_k_inputs;
          }
          if (memory > floor) ++memory_above;
          ++checked;
          if (floor == 0) ++zero;
          if (floor > 0.9 * result.report.latency) ++tight;
        }
      }
    }
  }
  MESSAGE("compute floor: " << checked << " valid pricings, " << tight << " within 10 %, " << zero << " zero");
  MESSAGE("memory floor: " << memory_tight << " within 10 % of the memory time, " << memory_above
                           << " above the compute floor; k split with inputs along k " << split_inputs
                           << ", with an upstream MatMul's input " << upstream_k << "; one k-step with inputs "
                           << whole_k_inputs);
  CHECK(checked > 5000);
  CHECK(tight > 500);  // the floor is often close: it is what the fit skips by
  CHECK(memory_tight > 500);
  CHECK(memory_above > 500);
  CHECK(split_inputs > 500);
  CHECK(upstream_k > 100);
  CHECK(whole_k_inputs > 500);
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

// The same MatMul at [64, 64, 32] with the bandwidth 10: four k-steps per tile, so every step
// loads its LHS 64 x 32 and RHS 32 x 64 slices (2 x 2048, 16 steps), and each tile is written
// (4 x 4096): 81,920 elements, 8,192 of memory time, which the floor counts exactly (the LHS
// twice over the two columns, the RHS twice over the two rows).
TEST_CASE("the memory floor of a k-split MatMul is its whole traffic") {
  Problem problem;
  problem.tensors = {{128, 128}, {128, 128}, {128, 128}};
  problem.ops = {{OpKind::MatMul, {0, 1}, 2, 100}};
  problem.native = 128;
  problem.fast_memory_capacity = 1 << 20;
  problem.slow_memory_bandwidth = 10;
  REQUIRE(problem.Finalize().empty());
  const MemoryFloorTerms terms = MemoryFloorTermsOf(problem, {0}, {}, {});
  CHECK(terms.lhs == 16384);
  CHECK(terms.rhs == 16384);
  CHECK(terms.writes == 16384);
  CHECK(terms.k_star == 128);
  Subgraph subgraph;
  subgraph.ops = {0};
  subgraph.granularity = {64, 64, 32};
  const SubgraphResult result = CostSubgraph(problem, subgraph, {});
  REQUIRE(result.ok());
  CHECK(result.report.memory_time == doctest::Approx(8192));
  CHECK(MemoryFloorOf(problem, subgraph, {}) == doctest::Approx(8192 * (1 - 1e-6)));
  CHECK(MemoryFloorOf(problem, subgraph, {}) <= result.report.memory_time);
  // Retained in, the LHS is free (R2); retained, the output is not written (R3).
  subgraph.retain = {2};
  CHECK(MemoryFloorOf(problem, subgraph, {0}) == doctest::Approx(3276.8 * (1 - 1e-6)));
  // At k = K* each element once, and every step after the first loads a 64-row LHS strip or
  // a 64-column RHS strip (3 x 8192): 24,576 elements against 16,384 + 16,384 once.
  subgraph.retain.clear();
  subgraph.granularity = {64, 64, 128};
  CHECK(MemoryFloorOf(problem, subgraph, {}) == doctest::Approx((16384 + 32768) / 10.0 * (1 - 1e-6)));
  const SubgraphResult at_k_star = CostSubgraph(problem, subgraph, {});
  REQUIRE(at_k_star.ok());
  CHECK(MemoryFloorOf(problem, subgraph, {}) <= at_k_star.report.memory_time);
}

}  // namespace
}  // namespace annealer
