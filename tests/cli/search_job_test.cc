// src/jobs/search_job: the search run shared by the CLI and the Python package — the configuration's
// order of precedence, the log and hooks, the stop flag, the oracle-checked result and the
// optimality verdicts drawn from it.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "eval/oracle.h"
#include "src/io/yaml/config.h"
#include "src/io/json_fields.h"
#include "src/io/contest/problem_reader.h"
#include "src/io/contest/schedule_io.h"
#include "src/jobs/search_job.h"
#include "tests/support/test_files.h"

namespace annealer {
namespace {

using testing::ReadBundledProblem;

TEST_CASE("search job: settings apply in order, and --threads/--seed errors name the option") {
  const SearchParams params =
      BuildSearchParams({}, {{"--set", "seed=5"}, {"--seed", "seed=9"}, {"--set", "sa.cooling=0.9"}});
  CHECK(params.seed == 9);
  CHECK(params.sa.cooling == 0.9);
  CHECK_THROWS_WITH_AS(BuildSearchParams({}, {{"--threads", "threads=-1"}}),
                       doctest::Contains("--threads -1: "), ConfigError);
  CHECK_THROWS_WITH_AS(BuildSearchParams({}, {{"--set", "no.such=1"}}), doctest::Contains("no.such"), ConfigError);
  CHECK(SearchThreads(BuildSearchParams({}, {{"--threads", "threads=3"}})) == 3);
  CHECK(SearchThreads(SearchParams{}) >= 1);
}

TEST_CASE("search job: the log starts with the baseline, the result passed the oracle") {
  const Problem problem = ReadBundledProblem("mlsys-2026-13.json");
  SearchParams params = BuildSearchParams({}, {{"--threads", "threads=2"}, {"--seed", "seed=1"}});
  std::vector<RunLogEntry> logged;
  int starts = 0;
  SearchJobHooks hooks;
  hooks.on_log = [&](const RunLogEntry& entry) { logged.push_back(entry); };
  hooks.on_start = [&](const SearchJobStart& start) {
    ++starts;
    CHECK(start.threads == 2);
    CHECK(start.bound.total() > 0);
  };
  const std::atomic<bool> stop{false};
  const SearchJobResult result =
      RunSearchJob(problem, params, {.time = std::chrono::milliseconds(500), .name = "p13", .output_path = {}}, stop, hooks);
  CHECK(starts == 1);
  REQUIRE(!logged.empty());
  CHECK(logged.front().worker == "baseline");
  CHECK(logged == result.log);
  for (size_t i = 1; i < logged.size(); ++i) CHECK(logged[i].latency < logged[i - 1].latency);
  const Evaluation evaluation = EvaluateOracle(problem, result.best);
  REQUIRE(evaluation.ok());
  CHECK(evaluation.total == result.total);
  CHECK(result.best_json == ScheduleToJson(result.best, SubgraphLatencies(evaluation)));
  CHECK(!result.stopped);
  CHECK(result.failure.empty());
  CHECK(result.elapsed_seconds < 0.5);
}

TEST_CASE("search job: a stop flag set before the run still returns a valid schedule") {
  const Problem problem = ReadBundledProblem("mlsys-2026-5.json");
  const std::atomic<bool> stop{true};
  const SearchJobResult result =
      RunSearchJob(problem, SearchParams{}, {.time = std::chrono::seconds(30), .name = "p5", .output_path = {}}, stop);
  CHECK(result.stopped);
  CHECK(result.elapsed_seconds < 5);
  CHECK(EvaluateOracle(problem, result.best).ok());
}

TEST_CASE("search job: no valid start schedule is a SearchJobError naming the problem") {
  Problem problem = ReadBundledProblem("mlsys-2026-1.json");
  problem.fast_memory_capacity = 1;
  const std::atomic<bool> stop{false};
  CHECK_THROWS_WITH_AS(RunSearchJob(problem, SearchParams{}, {.time = std::chrono::seconds(1), .name = "tiny", .output_path = {}}, stop),
                       doctest::Contains("tiny: no valid start schedule: "), SearchJobError);
}

TEST_CASE("search job: proofs of optimality") {
  SearchJobResult result;
  result.bound.compute = 100;
  result.total = 100;
  CHECK(MeetsLowerBound(result));
  CHECK(OptimalityProof(result) == "optimal: meets the lower bound, which no valid schedule beats");
  result.total = 120;
  CHECK(!MeetsLowerBound(result));
  CHECK(!OptimalityProof(result));
  result.summary.exact = ExactResult{};
  result.summary.exact->status = ExactStatus::kOptimal;
  result.summary.exact->total = 120;
  result.summary.exact->family = "the family";
  CHECK(OptimalWithinFamily(result));
  CHECK(OptimalityProof(result) == "optimal within family the family");
  result.summary.exact->total = 130;  // the best lies outside the family and beats its optimum
  CHECK(!OptimalWithinFamily(result));
  CHECK(!OptimalityProof(result));
  result.summary.exact->total = 120;
  result.summary.exact->status = ExactStatus::kFeasible;  // no proof: the solver did not complete
  CHECK(!OptimalWithinFamily(result));
}

}  // namespace
}  // namespace annealer
