// The spec cases of tests/cases through the fast path: EvaluateFast (cold and cached) and the
// incremental evaluator must give the oracle's verdict, rule and latencies on every case.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "eval/cost/cost_cache.h"
#include "eval/cost/incremental.h"
#include "eval/oracle.h"
#include "eval/cost/evaluate_fast.h"
#include "src/io/json_fields.h"
#include "src/io/contest/problem_reader.h"
#include "src/io/contest/schedule_io.h"

namespace annealer {
namespace {

bool Close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }

TEST_CASE("fast path reproduces the oracle on every spec case") {
  const std::filesystem::path dir = std::filesystem::path(ANNEALER_SOURCE_DIR) / "tests" / "cases";
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  CHECK(files.size() >= 41);
  for (const auto& path : files) {
    const std::string origin = path.filename().string();
    const std::string text = ReadTextFile(path.string());
    const Problem problem = ParseProblem(ExtractJsonMember(text, "problem", origin), origin);
    const Schedule schedule = ParseSchedule(ExtractJsonMember(text, "solution", origin), origin);
    const Evaluation oracle = EvaluateOracle(problem, schedule);
    CostCache cache(256);
    IncrementalEvaluator incremental(problem, &cache);
    const Candidate candidate = incremental.Reset(schedule);
    for (CostCache* c : {static_cast<CostCache*>(nullptr), &cache}) {
      const Evaluation fast = EvaluateFast(problem, schedule, c);
      INFO(origin << ": oracle " << oracle.violation.Message() << ", fast " << fast.violation.Message());
      CHECK(fast.verdict == oracle.verdict);
      CHECK(fast.violation.rule == oracle.violation.rule);
      CHECK(fast.violation.subgraph == oracle.violation.subgraph);
      CHECK(fast.violation.detail == oracle.violation.detail);
      CHECK(Close(fast.total, oracle.total));
      REQUIRE(fast.subgraphs.size() == oracle.subgraphs.size());
      for (size_t i = 0; i < fast.subgraphs.size(); ++i) {
        CHECK(Close(fast.subgraphs[i].latency, oracle.subgraphs[i].latency));
        CHECK(Close(fast.subgraphs[i].compute_time, oracle.subgraphs[i].compute_time));
        CHECK(Close(fast.subgraphs[i].memory_time, oracle.subgraphs[i].memory_time));
        CHECK(fast.subgraphs[i].peak_working_set == oracle.subgraphs[i].peak_working_set);
      }
      CHECK(fast.warnings == oracle.warnings);
    }
    INFO(origin << ": incremental " << candidate.violation.Message());
    CHECK(candidate.valid == oracle.ok());
    if (oracle.ok()) CHECK(Close(candidate.total, oracle.total));
    if (!oracle.ok()) CHECK(candidate.violation.Message() == oracle.violation.Message());
  }
}

}  // namespace
}  // namespace annealer
