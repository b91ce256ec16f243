// NoGranularityFitsAlone (search/fit/no_fit_memo.h), the per-thread memo of NoGranularityFits of an
// op list alone, against NoGranularityFits itself: the same answer on every query, repeats and
// lists that collide in its slots included, across problems and pricers (a memo of one pricer's
// problem never answers for another's, also at the same address).
#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <vector>

#include "eval/model/chip_rules.h"
#include "eval/random_schedule.h"
#include "search/fit/no_fit_memo.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"

namespace annealer {
namespace {

// Random op lists of a problem: random subsets (in topological order or shuffled, with a
// duplicate now and then), single ops and the whole graph.
std::vector<std::vector<OpId>> RandomLists(const Problem& problem, std::mt19937_64& rng, int count) {
  const std::vector<int> rank = TopologicalRanks(problem);
  const int n = static_cast<int>(problem.ops.size());
  std::vector<std::vector<OpId>> lists;
  std::vector<OpId> all(n);
  for (int i = 0; i < n; ++i) all[i] = i;
  lists.push_back(SortTopologically(rank, all));
  for (int c = 0; c < count; ++c) {
    std::vector<OpId> ops;
    const int size = 1 + static_cast<int>(rng() % static_cast<uint64_t>(std::min(n, 6)));
    for (int i = 0; i < size; ++i) ops.push_back(static_cast<OpId>(rng() % static_cast<uint64_t>(n)));
    if (rng() % 4 != 0) {
      ops = SortTopologically(rank, ops);
    } else if (rng() % 2 == 0) {
      std::shuffle(ops.begin(), ops.end(), rng);
    }
    lists.push_back(std::move(ops));
  }
  return lists;
}

TEST_CASE("NoGranularityFitsAlone answers as NoGranularityFits, also on repeats and across problems") {
  std::mt19937_64 rng(20261127);
  const std::vector<TensorId> none;
  int checked = 0, repeats = 0, fits_none = 0;
  for (int trial = 0; trial < 120; ++trial) {
    RandomProblemOptions options;
    options.max_ops = 3 + trial % 9;
    options.native = trial % 2 == 0 ? 8 : 32;
    options.layout_probability = trial % 4 == 0 ? 0.3 : 0;
    // Two problems alive at once, each with its own pricer, queried in turns.
    std::vector<Problem> problems;
    for (int p = 0; p < 2; ++p) {
      problems.push_back(RandomProblem(rng, kAllDagShapes[(trial + p) % std::size(kAllDagShapes)], options));
      if ((trial + p) % 3 == 2) problems.back().chip = RandomChipRules(problems.back(), rng);
      if ((trial + p) % 5 == 1) problems.back().fast_memory_capacity = problems.back().native * problems.back().native * 2;
    }
    const SubgraphPricer pricer0(problems[0], nullptr), pricer1(problems[1], nullptr);
    const SubgraphPricer* pricers[] = {&pricer0, &pricer1};
    std::vector<std::vector<OpId>> lists[] = {RandomLists(problems[0], rng, 40), RandomLists(problems[1], rng, 40)};
    for (int round = 0; round < 3; ++round) {
      for (int q = 0; q < 80; ++q) {
        const int p = static_cast<int>(rng() % 2);
        const std::vector<OpId>& ops = lists[p][rng() % lists[p].size()];
        const bool expected = NoGranularityFits(problems[p], ops, none, none);
        CHECK(NoGranularityFitsAlone(*pricers[p], problems[p], ops) == expected);
        ++checked;
        repeats += round > 0;
        fits_none += expected;
      }
    }
  }
  MESSAGE(checked << " queries, " << repeats << " in repeat rounds, " << fits_none << " with no granularity");
  CHECK(checked > 20000);
  CHECK(fits_none > 2000);
  CHECK(checked - fits_none > 2000);
}

TEST_CASE("NoGranularityFitsAlone: another problem at the same address is asked anew") {
  // Ops 0 and 1: a Pointwise op and its reader (connected, fits), then two Pointwise ops on
  // separate inputs (not connected, V5: nothing fits), each problem at the same address.
  std::optional<Problem> problem;
  auto make = [&](bool connected) {
    problem.emplace();
    problem->native = 8;
    problem->fast_memory_capacity = 1 << 20;
    problem->slow_memory_bandwidth = 1;
    problem->tensors = {{8, 8}, {8, 8}, {8, 8}, {8, 8}};
    if (connected) {
      problem->ops = {{OpKind::Pointwise, {0}, 2, 10}, {OpKind::Pointwise, {2}, 3, 10}};
    } else {
      problem->ops = {{OpKind::Pointwise, {0}, 2, 10}, {OpKind::Pointwise, {1}, 3, 10}};
    }
    REQUIRE(problem->Finalize().empty());
  };
  const std::vector<OpId> ops = {0, 1};
  const std::vector<TensorId> none;
  make(true);
  const Problem* first = &*problem;
  {
    const SubgraphPricer pricer(*problem, nullptr);
    CHECK_FALSE(NoGranularityFits(*problem, ops, none, none));
    CHECK_FALSE(NoGranularityFitsAlone(pricer, *problem, ops));
  }
  make(false);
  REQUIRE(&*problem == first);  // std::optional keeps its storage
  const SubgraphPricer pricer(*problem, nullptr);
  CHECK(NoGranularityFits(*problem, ops, none, none));
  CHECK(NoGranularityFitsAlone(pricer, *problem, ops));
}

}  // namespace
}  // namespace annealer
