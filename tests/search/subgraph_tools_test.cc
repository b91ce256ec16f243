// The subgraph tools (search/subgraph_tools.h): Feeds with one side derived once.
#include <doctest/doctest.h>

#include <random>

#include "eval/random_schedule.h"
#include "search/subgraph_tools.h"

namespace annealer {
namespace {

TEST_CASE("feeds: with one side derived once, the answers of Feeds on every pair of random schedules' subgraphs") {
  int pairs = 0, feeding = 0;
  for (DagShape shape : kAllDagShapes) {
    std::mt19937_64 rng(77 + static_cast<int>(shape));
    for (int trial = 0; trial < 25; ++trial) {
      const Problem problem = RandomProblem(rng, shape, {.min_ops = 4, .max_ops = 16});
      RandomScheduleOptions options;
      options.max_steps = 300;
      const Schedule schedule = RandomSchedule(problem, rng, options);
      for (const Subgraph& a : schedule.subgraphs) {
        const FeedsFrom from_a(problem, a.ops);
        const FeedsInto into_a(problem, a.ops);
        for (const Subgraph& b : schedule.subgraphs) {
          INFO("shape " << static_cast<int>(shape) << " trial " << trial);
          const bool feeds = Feeds(problem, a.ops, b.ops);
          CHECK(from_a(b.ops) == feeds);
          CHECK(into_a(b.ops) == Feeds(problem, b.ops, a.ops));
          ++pairs;
          feeding += feeds;
        }
      }
    }
  }
  MESSAGE("pairs " << pairs << ", feeding " << feeding);
  CHECK(pairs > 5000);
  CHECK(feeding > 500);
}

}  // namespace
}  // namespace annealer
