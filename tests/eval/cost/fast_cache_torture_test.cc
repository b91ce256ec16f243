// The shared cost cache under two threads hammering a tiny budget: lookups race generation
// flushes, index growth and inserts of short (inline) and long (spilled: traversals, many ops)
// keys. Every result must equal CostSubgraph, and the hit/miss counts must add up exactly.
#include <doctest/doctest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "eval/cost/cost_cache.h"
#include "eval/random_schedule.h"
#include "eval/cost/subgraph_cost.h"

namespace annealer {
namespace {

TEST_CASE("cost cache torture: two threads, tiny budget, short and long keys") {
  std::mt19937_64 rng(77);
  const Problem problem = RandomProblem(rng, DagShape::kMixed, {.min_ops = 8, .max_ops = 12});
  RandomScheduleOptions options;
  options.max_steps = 200;
  // Contexts with their direct costs, priced once up front.
  struct Context {
    Subgraph subgraph;
    std::vector<TensorId> retained_in;
    SubgraphResult direct;
  };
  std::vector<Context> contexts;
  for (int i = 0; i < 12; ++i) {
    const Schedule schedule = RandomSchedule(problem, rng, options);
    std::vector<TensorId> retained_in;
    for (const Subgraph& s : schedule.subgraphs) {
      contexts.push_back({s, retained_in, CostSubgraph(problem, s, retained_in)});
      Subgraph variant = s;
      RandomizeSettings(problem, variant, rng, options);
      contexts.push_back({variant, retained_in, CostSubgraph(problem, variant, retained_in)});
      retained_in = s.retain;
    }
  }
  int with_traversal = 0;
  for (const Context& c : contexts) with_traversal += c.subgraph.traversal.has_value();
  CHECK(with_traversal > 0);  // long (spilled) keys are exercised

  for (std::size_t budget : {std::size_t{16}, std::size_t{64}, std::size_t{1} << 12}) {
    CostCache cache(budget);
    constexpr int kLookupsPerThread = 20000;
    std::vector<int> mismatches(2, 0);
    std::vector<std::thread> threads;
    for (int w = 0; w < 2; ++w) {
      threads.emplace_back([&, w] {
        std::mt19937_64 pick(1000 + w);
        SubgraphResult result;
        for (int n = 0; n < kLookupsPerThread; ++n) {
          const Context& c = contexts[pick() % contexts.size()];
          cache.LookupOrCompute(problem, c.subgraph, c.retained_in, result);
          const bool same = result.verdict == c.direct.verdict && result.report == c.direct.report &&
                            result.violation.rule == c.direct.violation.rule &&
                            result.violation.detail == c.direct.violation.detail;
          mismatches[w] += !same;
        }
      });
    }
    for (auto& t : threads) t.join();
    INFO("budget " << budget);
    CHECK(mismatches[0] == 0);
    CHECK(mismatches[1] == 0);
    const CacheStats stats = cache.stats();
    CHECK(stats.hits + stats.misses == 2 * kLookupsPerThread);
    CHECK(stats.entries + stats.shape_entries <= std::max<std::size_t>(budget, 16));
    if (budget >= contexts.size() * 4) CHECK(stats.hit_rate() > 0.9);
  }
}

}  // namespace
}  // namespace annealer
