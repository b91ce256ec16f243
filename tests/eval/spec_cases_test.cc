// Every spec case of tests/cases (machine-readable section B of the spec) through the readers
// and the oracle: latencies to 1e-9 relative, OOM and INVALID verdicts, the V13 warning.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "eval/oracle.h"
#include "src/io/contest/problem_reader.h"
#include "src/io/contest/schedule_io.h"

namespace annealer {
namespace {

std::vector<std::filesystem::path> CaseFiles() {
  std::vector<std::filesystem::path> files;
  const std::filesystem::path dir = std::filesystem::path(ANNEALER_SOURCE_DIR) / "tests" / "cases";
  if (!std::filesystem::is_directory(dir)) return files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

bool CloseRelative(double actual, double expected) {
  return std::abs(actual - expected) <= 1e-9 * std::max(1.0, std::abs(expected));
}

void CheckCase(const std::filesystem::path& path) {
  const std::string origin = path.filename().string();
  const std::string text = ReadTextFile(path.string());
  const Problem problem = ParseProblem(ExtractJsonMember(text, "problem", origin), origin + "#problem");
  const Schedule schedule =
      ParseSchedule(ExtractJsonMember(text, "solution", origin), origin + "#solution");
  const Evaluation evaluation = EvaluateOracle(problem, schedule);

  simdjson::dom::parser parser;
  const simdjson::dom::element expect = parser.parse(text)["expect"];
  std::string_view error;
  if (!expect["error"].get(error)) {
    INFO("violation: ", evaluation.violation.Message());
    if (error == "OOM") {
      CHECK(evaluation.verdict == Verdict::kOutOfMemory);
    } else {
      REQUIRE(error == "INVALID");
      CHECK(evaluation.verdict == Verdict::kInvalid);
    }
    // Optional: the one-line message the program prints.
    std::string_view message;
    if (!expect["message"].get(message)) CHECK(evaluation.violation.Message() == message);
    return;
  }
  INFO("violation: ", evaluation.violation.Message());
  REQUIRE(evaluation.ok());
  std::vector<double> expected;
  for (const simdjson::dom::element value : expect["subgraph_latencies"].get_array()) {
    expected.push_back(value.get_double());
  }
  REQUIRE(evaluation.subgraphs.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("subgraph ", i, ": computed ", evaluation.subgraphs[i].latency, ", expected ", expected[i]);
    CHECK(CloseRelative(evaluation.subgraphs[i].latency, expected[i]));
  }
  const double expected_total = expect["total_latency"].get_double();
  INFO("total: computed ", evaluation.total, ", expected ", expected_total);
  CHECK(CloseRelative(evaluation.total, expected_total));

  std::string_view warning;
  if (!expect["warning"].get(warning)) {
    CHECK_FALSE(evaluation.warnings.empty());
  } else {
    CHECK(evaluation.warnings.empty());
  }
}

TEST_CASE("spec cases: the directory holds all of them") {
  // A missing or renamed directory must fail here instead of passing with zero cases.
  CHECK(CaseFiles().size() >= 41);
}

TEST_CASE("spec cases: each case reproduces its expected verdict and latencies") {
  for (const std::filesystem::path& path : CaseFiles()) {
    SUBCASE(path.filename().string().c_str()) { CheckCase(path); }
  }
}

}  // namespace
}  // namespace annealer
