// Cooperative cancellation of a step-by-step pricing (eval/cost/pricing_stop.h).
#include <doctest/doctest.h>

#include <functional>

#include "eval/cost/pricing_stop.h"
#include "eval/cost/subgraph_cost.h"

namespace annealer {
namespace {

// One 128x128 Pointwise op: at granularity [1, 1, 1] it has 16384 steps.
Problem OnePointwise() {
  Problem problem;
  problem.tensors = {{128, 128}, {128, 128}};
  problem.ops = {{OpKind::Pointwise, {0}, 1, 100}};
  problem.fast_memory_capacity = 1 << 20;
  problem.slow_memory_bandwidth = 10;
  REQUIRE(problem.Finalize().empty());
  return problem;
}

TEST_CASE("a step-by-step pricing stops when the thread's stop test says so") {
  const Problem problem = OnePointwise();
  Subgraph fine;
  fine.ops = {0};
  fine.granularity = {1, 1, 1};
  const SubgraphResult full = CostSubgraphStepByStep(problem, fine, {});
  REQUIRE(full.ok());
  CHECK(full.report.tiles == 16384);

  int polls = 0;
  const std::function<bool()> stop_at_second_poll = [&] { return ++polls >= 2; };
  {
    ScopedPricingStop scope(stop_at_second_poll);
    CHECK_THROWS_AS(CostSubgraphStepByStep(problem, fine, {}), PricingCancelled);
    CHECK(polls == 2);  // polled every 4096 steps: stopped after 8192 of 16384
    // Class pricing does not walk steps: it never polls.
    polls = 0;
    CHECK(CostSubgraph(problem, fine, {}).report.latency == doctest::Approx(full.report.latency));
    CHECK(polls == 0);
  }
  // Out of scope the stop test is gone: the same pricing runs to the end.
  polls = 0;
  CHECK(CostSubgraphStepByStep(problem, fine, {}).report.latency == full.report.latency);
  CHECK(polls == 0);

  // A test that never says stop changes nothing; scopes nest and restore.
  const std::function<bool()> never = [&] { ++polls; return false; };
  ScopedPricingStop outer(never);
  {
    const std::function<bool()> none;
    ScopedPricingStop inner(none);
    CostSubgraphStepByStep(problem, fine, {});
    CHECK(polls == 0);
  }
  CHECK(CostSubgraphStepByStep(problem, fine, {}).report.latency == full.report.latency);
  CHECK(polls == 4);
}

}  // namespace
}  // namespace annealer
