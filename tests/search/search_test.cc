// The search driver (search/driver.h) end to end: deterministic repetition, a run the deadline
// cuts, the exact solver's size limit, the regrouping pass reached by a search, a short search
// beating the baseline, and the stop flag.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "eval/oracle.h"
#include "search/driver.h"
#include "search/params.h"
#include "search/starts/baseline.h"
#include "tests/search/hand_cases.h"
#include "tests/support/test_files.h"

namespace annealer {
namespace {

using testing::QueryValueHeads;
using testing::ReadBundledProblem;

std::chrono::steady_clock::time_point Far() { return std::chrono::steady_clock::now() + std::chrono::hours(1); }

TEST_CASE("search: a deterministic search reaches the regrouped query/value heads, the same twice") {
  // The hand problem of starts/constructive_test.cc (140,000 elements): the search, whose
  // starts and new bests the pass regroups, ends at or below the regrouping of the start
  // (4,163.6), oracle-valid, below the same search without the pass (workers.regroup_parts =
  // false), and with the same schedule on a second run of the same seed and budget.
  const Problem problem = QueryValueHeads(140000, 4);
  SearchParams params;
  params.seed = 7;
  params.threads = 2;
  params.deterministic = true;
  params.epoch_moves = 200;
  params.max_epochs = 3;
  std::atomic<bool> stop{false};
  const SearchSummary first = RunSearch(problem, params, Far(), stop, {});
  const Evaluation e = EvaluateOracle(problem, first.best);
  REQUIRE_MESSAGE(e.ok(), e.violation.Message());
  CHECK(e.total <= 4163.64);
  CHECK(e.total == doctest::Approx(first.best_total));
  const SearchSummary second = RunSearch(problem, params, Far(), stop, {});
  CHECK(second.best == first.best);
  params.workers.regroup_parts = false;
  const SearchSummary without = RunSearch(problem, params, Far(), stop, {});
  // 3,428.7 against 3,514.8 without the pass (the same seed and budget).
  CHECK(first.best_total < without.best_total);
}

TEST_CASE("search: the exact solver skips graphs of more than exact.max_ops ops") {
  const Problem problem = ReadBundledProblem("mlsys-2026-5.json");
  SearchParams params;
  params.threads = 1;
  params.deterministic = true;
  params.epoch_moves = 50;
  params.max_epochs = 1;
  std::atomic<bool> stop{false};
  const SearchSummary with = RunSearch(problem, params, Far(), stop, {});
  REQUIRE(with.exact.has_value());
  CHECK(with.exact->status == ExactStatus::kOptimal);
  params.exact.max_ops = static_cast<int64_t>(problem.ops.size()) - 1;
  const SearchSummary without = RunSearch(problem, params, Far(), stop, {});
  CHECK(!without.exact.has_value());
}

SearchSummary Deterministic(const Problem& problem, int threads, double sa_share) {
  SearchParams params;
  params.seed = 42;
  params.threads = threads;
  params.deterministic = true;
  params.epoch_moves = 150;
  params.max_epochs = 3;
  params.workers.sa_share = sa_share;
  std::atomic<bool> stop{false};
  return RunSearch(problem, params, Far(), stop, {});
}

TEST_CASE("deterministic mode: same seed and budget give the identical schedule") {
  const Problem problem = ReadBundledProblem("mlsys-2026-5.json");
  for (double share : {1.0, 0.0, 0.5}) {
    CAPTURE(share);
    const SearchSummary first = Deterministic(problem, 2, share);
    const SearchSummary second = Deterministic(problem, 2, share);
    CHECK(first.best == second.best);
    CHECK(first.best_total == second.best_total);
    CHECK(first.moves == second.moves);
    CHECK(EvaluateOracle(problem, first.best).ok());
    CHECK(!first.deterministic_cut);
    CHECK(first.epochs == 3);
  }
}

TEST_CASE("deterministic mode: a run the deadline cuts before its budget says so") {
  const Problem problem = ReadBundledProblem("mlsys-2026-5.json");
  SearchParams params;
  params.seed = 42;
  params.threads = 2;
  params.deterministic = true;
  params.epoch_moves = 1'000'000'000;  // far more than 300 ms allow
  params.max_epochs = 5;
  std::atomic<bool> stop{false};
  const SearchSummary cut =
      RunSearch(problem, params, std::chrono::steady_clock::now() + std::chrono::milliseconds(300), stop, {});
  CHECK(cut.deterministic_cut);
  CHECK(cut.epochs < 5);
  CHECK(EvaluateOracle(problem, cut.best).ok());
}

TEST_CASE("a short search improves on the baseline and reports strictly better schedules") {
  const Problem problem = ReadBundledProblem("mlsys-2026-5.json");
  const Evaluation base = EvaluateOracle(problem, BuildBaseline(problem));
  SearchParams params;
  params.threads = 2;
  params.deterministic = true;
  params.epoch_moves = 1000;
  params.max_epochs = 4;
  std::atomic<bool> stop{false};
  std::vector<Latency> reported;
  SearchCallbacks callbacks;
  callbacks.on_improvement = [&](const Schedule& s, Latency total, const std::string&) {
    const Evaluation e = EvaluateOracle(problem, s);
    CHECK(e.ok());
    CHECK(e.total == doctest::Approx(total).epsilon(1e-9));
    reported.push_back(total);
  };
  const SearchSummary summary = RunSearch(problem, params, Far(), stop, callbacks);
  REQUIRE(!reported.empty());
  for (size_t i = 1; i < reported.size(); ++i) CHECK(reported[i] < reported[i - 1]);
  CHECK(summary.best_total == reported.back());
  CHECK(summary.best_total < base.total);
  // Problem 5's contest best re-priced under our spec is 780,000; the constructive starts plus
  // a little search already beat it.
  CHECK(summary.best_total < 780000);
}

TEST_CASE("the stop flag ends a search promptly") {
  const Problem problem = ReadBundledProblem("mlsys-2026-13.json");
  SearchParams params;
  params.threads = 2;
  std::atomic<bool> stop{true};
  const auto begin = std::chrono::steady_clock::now();
  const SearchSummary summary = RunSearch(problem, params, Far(), stop, {});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  CHECK(seconds < 2.0);  // the baseline only; no worker epoch runs
  CHECK(EvaluateOracle(problem, summary.best).ok());
  CHECK(summary.epochs == 0);
}

}  // namespace
}  // namespace annealer
