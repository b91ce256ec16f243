// End-to-end runs of the built binary (ANNEALER_BINARY): evaluate, baseline, help, errors.
#include <doctest/doctest.h>

#include "tests/support/annealer_binary.h"
#include "tests/support/test_files.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <simdjson.h>

namespace annealer {
namespace {

using testing::Quote;
using testing::Run;
using testing::RunResult;

std::string Problem(const std::string& name) {
  return std::string(ANNEALER_SOURCE_DIR) + "/problems/" + name;
}

size_t Lines(const std::string& text) {
  size_t lines = 0;
  for (const char c : text) lines += c == '\n';
  return lines;
}

// Example problem: Pointwise t0 -> t1 (op 0), Pointwise t1 -> t2 (op 1), 128x128, capacity 20000.
const char* kOutOfOrder = R"({"subgraphs": [[1], [0]], "granularities": [[128, 64, 1], [128, 64, 1]],
  "tensors_to_retain": [[], []]})";
const char* kTooBig = R"({"subgraphs": [[0, 1]], "granularities": [[128, 128, 1]],
  "tensors_to_retain": [[]]})";
const char* kFused = R"({"subgraphs": [[0, 1]], "granularities": [[128, 64, 1]],
  "tensors_to_retain": [[]], "subgraph_latencies": [3276.8]})";
const char* kFusedWrongReport = R"({"subgraphs": [[0, 1]], "granularities": [[128, 64, 1]],
  "tensors_to_retain": [[]], "subgraph_latencies": [1000]})";

TEST_CASE("cli: --help, --version and usage errors") {
  const RunResult help = Run("--help");
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("annealer evaluate PROBLEM.json SCHEDULE.json") != std::string::npos);
  CHECK(help.out.find("annealer baseline PROBLEM.json [-o OUT.json]") != std::string::npos);
  CHECK(help.out.find("annealer bound PROBLEM.json [--json]") != std::string::npos);
  CHECK(help.out.find("annealer [--time 60s] PROBLEM.json [OUT.json]") != std::string::npos);
  CHECK(help.out.find("annealer report PROBLEM.json SCHEDULE.json -o REPORT.html") != std::string::npos);
  CHECK(Run("help").exit_code == 0);
  CHECK(Run("evaluate --help").exit_code == 0);

  const RunResult version = Run("--version");
  CHECK(version.exit_code == 0);
  CHECK(version.out.rfind("annealer ", 0) == 0);

  const RunResult none = Run("");
  CHECK(none.exit_code == 2);
  CHECK(none.out.empty());

  const RunResult one_file = Run("evaluate " + Quote(Problem("example_problem.json")));
  CHECK(one_file.exit_code == 2);
  CHECK(one_file.err.find("annealer: evaluate needs PROBLEM.json and SCHEDULE.json") == 0);

  const RunResult unknown = Run("baseline --fast " + Quote(Problem("example_problem.json")));
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.find("annealer: unknown option --fast") == 0);
  CHECK(Run("baseline " + Quote(Problem("example_problem.json")) + " -o").exit_code == 2);
}

TEST_CASE("cli: baseline --resident keeps a chain's activation and says how many it retains") {
  const std::filesystem::path dir = testing::ScratchDir("cli-test", "resident");
  const std::string out = (dir / "r.json").string();
  // mlsys-2026-13: 63 ops, 31 outputs kept for their only consumer; 22,165,913.6 spilling.
  const RunResult resident = Run("baseline --resident " + Quote(Problem("mlsys-2026-13.json")) + " -o " + Quote(out));
  REQUIRE(resident.exit_code == 0);
  CHECK(resident.err.find("resident baseline: 63 subgraphs, 31 retained, total latency 16619601.92, lower bound") == 0);
  const RunResult check = Run("evaluate " + Quote(Problem("mlsys-2026-13.json")) + " " + Quote(out));
  CHECK(check.exit_code == 0);
  CHECK(check.err.empty());
  const RunResult both = Run("baseline --resident --greedy " + Quote(Problem("mlsys-2026-13.json")));
  CHECK(both.exit_code == 2);
  CHECK(both.err.find("annealer: --greedy and --resident exclude each other") == 0);
}

TEST_CASE("cli: baseline then evaluate succeeds on every bundled problem") {
  const std::filesystem::path dir = testing::ScratchDir("cli-test", "baseline");
  for (const char* name : {"example_problem.json", "mlsys-2026-1.json", "mlsys-2026-5.json",
                           "mlsys-2026-9.json", "mlsys-2026-13.json", "mlsys-2026-17.json"}) {
    CAPTURE(name);
    const std::string out = (dir / (std::string(name) + ".out")).string();
    const RunResult baseline = Run("baseline " + Quote(Problem(name)) + " -o " + Quote(out));
    REQUIRE(baseline.exit_code == 0);
    CHECK(baseline.out.empty());
    CHECK(baseline.err.find("baseline: ") == 0);

    // stdout and -o carry the same bytes.
    const RunResult to_stdout = Run("baseline " + Quote(Problem(name)));
    CHECK(to_stdout.exit_code == 0);
    CHECK(to_stdout.out == testing::ReadFile(out));

    const RunResult text = Run("evaluate " + Quote(Problem(name)) + " " + Quote(out));
    CHECK(text.exit_code == 0);
    CHECK(text.err.empty());  // the written latencies are ours: no V13 warning
    CHECK(text.out.find("total latency") != std::string::npos);
    CHECK(text.out.find("lower bound") != std::string::npos);

    const RunResult json = Run("evaluate --json " + Quote(Problem(name)) + " " + Quote(out));
    REQUIRE(json.exit_code == 0);
    simdjson::dom::parser parser;
    const simdjson::dom::element report = parser.parse(json.out);
    CHECK(bool(report["valid"]) == true);
    CHECK(report["warnings"].get_array().size() == 0);
    simdjson::dom::parser schedule_parser;
    const simdjson::dom::element written = schedule_parser.parse(testing::ReadFile(out));
    const simdjson::dom::array reported = written["subgraph_latencies"].get_array();
    const simdjson::dom::array subgraphs = report["subgraphs"].get_array();
    REQUIRE(reported.size() == subgraphs.size());
    double sum = 0;
    size_t i = 0;
    for (const simdjson::dom::element sg : subgraphs) {
      const double latency = sg["latency"].get_double();
      CHECK(latency == double(reported.at(i++).get_double()));
      // Each step costs max(compute, memory), so the sum is at least either sum.
      CHECK(latency >= double(sg["compute_time"]) * (1 - 1e-12));
      CHECK(latency >= double(sg["memory_time"]) * (1 - 1e-12));
      sum += latency;
    }
    CHECK(double(report["total_latency"]) == doctest::Approx(sum).epsilon(1e-12));
    CHECK(double(report["total_latency"]) >= double(report["lower_bound"]) * (1 - 1e-12));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("cli: a valid schedule with its latencies is priced exactly") {
  const std::filesystem::path dir = testing::ScratchDir("cli-test", "fused");
  const std::string schedule = (dir / "fused.json").string();
  std::ofstream(schedule) << kFused;
  const RunResult json =
      Run("evaluate " + Quote(Problem("example_problem.json")) + " " + Quote(schedule) + " --json");
  REQUIRE(json.exit_code == 0);
  CHECK(json.err.empty());
  simdjson::dom::parser parser;
  const simdjson::dom::element report = parser.parse(json.out);
  // Spec T22: 2 tiles x max(110, 819.2 + 819.2); bound = max(110 * 1, (16384 + 16384) / 10).
  CHECK(double(report["total_latency"]) == doctest::Approx(3276.8).epsilon(1e-12));
  CHECK(double(report["lower_bound"]) == doctest::Approx(3276.8).epsilon(1e-12));
  CHECK(double(report["gap"]) == doctest::Approx(0).epsilon(1e-9));
  const simdjson::dom::element sg = report["subgraphs"].at(0);
  CHECK(int64_t(sg["tiles"]) == 2);
  CHECK(int64_t(sg["k_steps"]) == 1);
  CHECK(int64_t(sg["peak_working_set"]) == 16384);
  std::filesystem::remove_all(dir);
}

TEST_CASE("cli: a wrong reported latency is a warning on stderr, exit 0") {
  const std::filesystem::path dir = testing::ScratchDir("cli-test", "warning");
  const std::string schedule = (dir / "s.json").string();
  std::ofstream(schedule) << kFusedWrongReport;
  const RunResult run = Run("evaluate " + Quote(Problem("example_problem.json")) + " " + Quote(schedule));
  CHECK(run.exit_code == 0);
  CHECK(run.err.find("annealer: warning: V13") == 0);
  CHECK(Lines(run.err) == 1);
  CHECK(run.out.find("total latency  3276.8") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("cli: partial edge tiles are named in a note (stderr, exit 0) and in the JSON") {
  const std::filesystem::path dir = testing::ScratchDir("cli-test", "partial");
  const std::string schedule = (dir / "s.json").string();
  // 128 rows in tiles of 48: 48 + 48 + 32, the last one partial (spec O9).
  std::ofstream(schedule) << R"({"subgraphs": [[0, 1]], "granularities": [[128, 48, 1]],
    "tensors_to_retain": [[]]})";
  const RunResult text = Run("evaluate " + Quote(Problem("example_problem.json")) + " " + Quote(schedule));
  CHECK(text.exit_code == 0);
  CHECK(text.err.find("annealer: note: subgraph 0 has partial edge tiles") == 0);
  CHECK(Lines(text.err) == 1);
  const RunResult json =
      Run("evaluate --json " + Quote(Problem("example_problem.json")) + " " + Quote(schedule));
  REQUIRE(json.exit_code == 0);
  simdjson::dom::parser parser;
  const simdjson::dom::element report = parser.parse(json.out);
  const simdjson::dom::array partial = report["partial_edge_tiles"];
  REQUIRE(partial.size() == 1);
  CHECK(int64_t(partial.at(0)) == 0);
  CHECK(int64_t(report["subgraphs"].at(0)["tiles"]) == 3);
  // A schedule of whole tiles has none.
  std::ofstream(schedule) << kFused;
  const RunResult whole =
      Run("evaluate --json " + Quote(Problem("example_problem.json")) + " " + Quote(schedule));
  CHECK(parser.parse(whole.out)["partial_edge_tiles"].get_array().size() == 0);
  CHECK(whole.err.empty());
  std::filesystem::remove_all(dir);
}

TEST_CASE("cli: an invalid schedule exits 1 with one line naming the rule") {
  const std::filesystem::path dir = testing::ScratchDir("cli-test", "invalid");
  const std::string out_of_order = (dir / "order.json").string();
  std::ofstream(out_of_order) << kOutOfOrder;
  const RunResult v7 =
      Run("evaluate " + Quote(Problem("example_problem.json")) + " " + Quote(out_of_order));
  CHECK(v7.exit_code == 1);
  CHECK(Lines(v7.out) == 1);
  CHECK(v7.out.rfind("V7 in subgraph 0: ", 0) == 0);
  CHECK(v7.out.find("tensor 1") != std::string::npos);

  const std::string too_big = (dir / "oom.json").string();
  std::ofstream(too_big) << kTooBig;
  const RunResult oom = Run("evaluate " + Quote(Problem("example_problem.json")) + " " + Quote(too_big));
  CHECK(oom.exit_code == 1);
  CHECK(Lines(oom.out) == 1);
  CHECK(oom.out.rfind("W in subgraph 0: ", 0) == 0);

  const RunResult json =
      Run("evaluate --json " + Quote(Problem("example_problem.json")) + " " + Quote(too_big));
  CHECK(json.exit_code == 1);
  simdjson::dom::parser parser;
  const simdjson::dom::element report = parser.parse(json.out);
  CHECK(bool(report["valid"]) == false);
  CHECK(std::string_view(report["verdict"]) == "OOM");
  CHECK(std::string_view(report["rule"]) == "W");
  CHECK(int64_t(report["subgraph"]) == 0);
  CHECK(std::string(std::string_view(report["message"])) + "\n" == oom.out);
  std::filesystem::remove_all(dir);
}

TEST_CASE("cli: bad input files exit 1 with one line naming the file") {
  const std::filesystem::path dir = testing::ScratchDir("cli-test", "bad");
  const std::string bad_problem = (dir / "bad.json").string();
  std::ofstream(bad_problem) << R"({"widths": [128], "heights": [128], "inputs": [[0]],
    "outputs": [[3]], "base_costs": [1], "op_types": ["Pointwise"], "fast_memory_capacity": 1,
    "slow_memory_bandwidth": 1, "native_granularity": [128, 128]})";
  const std::string schedule = (dir / "s.json").string();
  std::ofstream(schedule) << kFused;

  const RunResult evaluate = Run("evaluate " + Quote(bad_problem) + " " + Quote(schedule));
  CHECK(evaluate.exit_code == 1);
  CHECK(evaluate.out.empty());
  CHECK(evaluate.err == "annealer: " + bad_problem +
                            ": outputs[0][0]: tensor id 3 is out of range (1 tensors)\n");

  const std::string missing = (dir / "missing.json").string();
  const RunResult no_file = Run("baseline " + Quote(missing));
  CHECK(no_file.exit_code == 1);
  CHECK(no_file.err == "annealer: " + missing + ": cannot open file: No such file or directory\n");

  const std::string broken_schedule = (dir / "broken.json").string();
  std::ofstream(broken_schedule) << R"({"subgraphs": [[0, 1]], "granularities": [[128, 64]], "tensors_to_retain": [[]]})";
  const RunResult broken =
      Run("evaluate " + Quote(Problem("example_problem.json")) + " " + Quote(broken_schedule));
  CHECK(broken.exit_code == 1);
  CHECK(broken.err == "annealer: " + broken_schedule +
                          ": granularities[0]: expected 3 entries [w, h, k], got 2\n");
  std::filesystem::remove_all(dir);
}

TEST_CASE("cli: bound prints the bound, its parts and the forced traffic") {
  const RunResult text = Run("bound " + Quote(Problem("mlsys-2026-1.json")));
  CHECK(text.exit_code == 0);
  CHECK(text.err.empty());
  CHECK(text.out.find("lower bound  367001.6  (set by traffic, combined)\n") != std::string::npos);
  CHECK(text.out.find("  compute    112000") != std::string::npos);
  CHECK(text.out.find("  graph I/O  65536") != std::string::npos);
  CHECK(text.out.find("streamed once per column tile: x4 (P5, V2); a graph input (V8)") !=
        std::string::npos);

  const RunResult json = Run("bound --json " + Quote(Problem("mlsys-2026-9.json")));
  REQUIRE(json.exit_code == 0);
  simdjson::dom::parser parser;
  const simdjson::dom::element report = parser.parse(json.out);
  CHECK(double(report["lower_bound"]) == doctest::Approx(44669337.6).epsilon(1e-9));
  CHECK(double(report["compute"]) == doctest::Approx(13465600).epsilon(1e-9));
  CHECK(double(report["traffic"]) == doctest::Approx(44669337.6).epsilon(1e-9));
  const simdjson::dom::element first = report["terms"].get_array().at(0);
  CHECK(int64_t(first["tensor"]) == 0);
  CHECK(int64_t(first["op"]) == 0);
  CHECK(int64_t(first["elements"]) == 32 * 1024 * 1024);

  // evaluate --json keeps lower_bound and adds the parts.
  const std::filesystem::path dir = testing::ScratchDir("cli-test", "bound");
  const std::string schedule = (dir / "s.json").string();
  std::ofstream(schedule) << kFused;
  const RunResult evaluate =
      Run("evaluate --json " + Quote(Problem("example_problem.json")) + " " + Quote(schedule));
  REQUIRE(evaluate.exit_code == 0);
  simdjson::dom::parser evaluate_parser;
  const simdjson::dom::element e = evaluate_parser.parse(evaluate.out);
  CHECK(double(e["lower_bound"]) == doctest::Approx(3276.8).epsilon(1e-12));
  CHECK(double(e["lower_bound_traffic"]) == doctest::Approx(3276.8).epsilon(1e-12));
  CHECK(double(e["lower_bound_combined"]) <= double(e["lower_bound"]));

  const std::string bad_problem = (dir / "bad.json").string();
  std::ofstream(bad_problem) << R"({"widths": [128], "heights": [128], "inputs": [[0]],
    "outputs": [[3]], "base_costs": [1], "op_types": ["Pointwise"], "fast_memory_capacity": 1,
    "slow_memory_bandwidth": 1, "native_granularity": [128, 128]})";
  const RunResult bad = Run("bound " + Quote(bad_problem));
  CHECK(bad.exit_code == 1);
  CHECK(bad.out.empty());
  CHECK(bad.err == "annealer: " + bad_problem +
                       ": outputs[0][0]: tensor id 3 is out of range (1 tensors)\n");
  const std::string missing = (dir / "missing.json").string();
  const RunResult no_file = Run("bound --json " + Quote(missing));
  CHECK(no_file.exit_code == 1);
  CHECK(no_file.out.empty());
  CHECK(no_file.err == "annealer: " + missing + ": cannot open file: No such file or directory\n");
  CHECK(Run("bound").exit_code == 2);
  CHECK(Run("bound --fast " + Quote(Problem("example_problem.json"))).exit_code == 2);
  CHECK(Run("bound --help").exit_code == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("cli: baseline -o is atomic and a failing run leaves no output file") {
  const std::filesystem::path dir = testing::ScratchDir("cli-test", "atomic");
  const std::string bad_problem = (dir / "bad.json").string();
  std::ofstream(bad_problem) << "{ not json";
  const std::filesystem::path out = dir / "out.json";

  const RunResult failed = Run("baseline " + Quote(bad_problem) + " -o " + Quote(out.string()));
  CHECK(failed.exit_code == 1);
  CHECK(failed.err.rfind("annealer: " + bad_problem + ": malformed JSON: ", 0) == 0);
  CHECK_FALSE(std::filesystem::exists(out));

  // A previous result survives a failing run untouched.
  std::ofstream(out) << "previous";
  CHECK(Run("baseline " + Quote(bad_problem) + " --output " + Quote(out.string())).exit_code == 1);
  CHECK(testing::ReadFile(out) == "previous");

  const RunResult ok = Run("baseline " + Quote(Problem("mlsys-2026-5.json")) + " -o " + Quote(out.string()));
  CHECK(ok.exit_code == 0);
  CHECK(testing::ReadFile(out).rfind("{\n  \"subgraphs\": [[", 0) == 0);
  size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++entries;
  CHECK(entries == 2);  // bad.json and out.json: no temporary file left

  const std::string unwritable = (dir / "no-such-dir" / "out.json").string();
  const RunResult cannot = Run("baseline " + Quote(Problem("mlsys-2026-1.json")) + " -o " + Quote(unwritable));
  CHECK(cannot.exit_code == 1);
  CHECK(cannot.err.rfind("annealer: " + unwritable + ": ", 0) == 0);
  CHECK(Lines(cannot.err) == 1);
  std::filesystem::remove_all(dir);
}

TEST_CASE("cli: report writes the HTML and the trace, bad arguments and bad logs are clear errors") {
  const std::filesystem::path dir = testing::ScratchDir("cli-test", "report");
  const std::string problem = Problem("example_problem.json");
  const std::string schedule = (dir / "s.json").string();
  std::ofstream(schedule) << kFused;
  const std::string log = (dir / "run.jsonl").string();
  std::ofstream(log) << "{\"seconds\": 0.01, \"latency\": 5000, \"worker\": \"baseline\", \"lower_bound\": 1000}\n"
                        "{\"seconds\": 0.2, \"latency\": 3276.8, \"worker\": \"sa\", \"lower_bound\": 1000}\n";
  const std::string html = (dir / "r.html").string();
  const std::string trace = (dir / "t.json").string();

  const RunResult ok = Run("report " + Quote(problem) + " " + Quote(schedule) + " -o " + Quote(html) +
                           " --trace " + Quote(trace) + " --log=" + Quote(log));
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  CHECK(ok.out.empty());
  CHECK(ok.err.rfind("report: total latency 3276.8, lower bound ", 0) == 0);
  CHECK(Lines(ok.err) == 1);
  CHECK(ok.err.find("; wrote " + html + " and " + trace + "\n") != std::string::npos);
  const std::string page = testing::ReadFile(html);
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(page.find("<span id=\"total\">3,276.8</span>") != std::string::npos);
  CHECK(page.find("id=\"convergence\"") != std::string::npos);
  simdjson::dom::parser parser;
  CHECK(double(parser.parse(testing::ReadFile(trace))["otherData"]["total_latency"]) == 3276.8);

  // An invalid schedule: still a report, the rule on top, exit 0, a note on stderr.
  const std::string invalid = (dir / "oom.json").string();
  std::ofstream(invalid) << kTooBig;
  const RunResult broken = Run("report " + Quote(problem) + " " + Quote(invalid) + " -o " + Quote(html));
  CHECK(broken.exit_code == 0);
  CHECK(broken.err.find("the schedule is INVALID (W in subgraph 0: ") != std::string::npos);
  CHECK(testing::ReadFile(html).find("Broken rule W</b> in subgraph 0") != std::string::npos);

  // Usage errors: exit 2, nothing written.
  const std::string fresh = (dir / "fresh.html").string();
  const RunResult no_output = Run("report " + Quote(problem) + " " + Quote(schedule));
  CHECK(no_output.exit_code == 2);
  CHECK(no_output.err.rfind("annealer: report needs the output file: -o REPORT.html\n", 0) == 0);
  CHECK(Run("report " + Quote(problem) + " -o " + Quote(fresh)).exit_code == 2);
  CHECK(Run("report " + Quote(problem) + " " + Quote(schedule) + " -o " + Quote(fresh) + " --trace").exit_code == 2);
  CHECK(Run("report " + Quote(problem) + " " + Quote(schedule) + " -o " + Quote(fresh) + " --json").exit_code == 2);
  CHECK(Run("report --help").exit_code == 0);

  // A bad log line: exit 1, one line naming the file and the line; no report written.
  const std::string bad_log = (dir / "bad.jsonl").string();
  std::ofstream(bad_log) << "{\"seconds\": 0.01, \"latency\": 5000, \"worker\": \"baseline\", \"lower_bound\": 1000}\n"
                            "\n{\"seconds\": 0.2, \"latency\": \"fast\", \"worker\": \"sa\", \"lower_bound\": 1000}\n";
  const RunResult bad = Run("report " + Quote(problem) + " " + Quote(schedule) + " -o " + Quote(fresh) +
                            " --log " + Quote(bad_log));
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.rfind("annealer: " + bad_log + ":3: latency: expected a ", 0) == 0);
  CHECK(Lines(bad.err) == 1);
  CHECK_FALSE(std::filesystem::exists(fresh));

  // An unwritable trace: exit 1.
  const RunResult cannot = Run("report " + Quote(problem) + " " + Quote(schedule) + " -o " + Quote(fresh) +
                               " --trace " + Quote((dir / "no-such-dir" / "t.json").string()));
  CHECK(cannot.exit_code == 1);
  std::filesystem::remove_all(dir);
}

TEST_CASE("cli: exact proves mlsys-2026-1, writes an oracle-valid schedule and a JSON summary") {
  const std::filesystem::path dir = testing::ScratchDir("cli-test", "exact");
  const std::string out = (dir / "exact.json").string();
  const RunResult run = Run("exact " + Quote(Problem("mlsys-2026-1.json")) + " --time 20s --json -o " + Quote(out));
  REQUIRE(run.exit_code == 0);
  CHECK(run.err.find("exact: optimal") == 0);
  CHECK(run.err.find("family: no recomputation") != std::string::npos);
  simdjson::dom::parser parser;
  const simdjson::dom::element summary = parser.parse(run.out);
  CHECK(std::string_view(summary["status"]) == "optimal");
  CHECK(std::string_view(summary["family"]).find("no recomputation") == 0);
  CHECK(int64_t(summary["states"]) >= 1);
  const double total = summary["total_latency"];
  CHECK(total <= 367001.6 * (1 + 1e-9));  // the search's best known (docs/performance.md)
  const RunResult evaluated = Run("evaluate --json " + Quote(Problem("mlsys-2026-1.json")) + " " + Quote(out));
  REQUIRE(evaluated.exit_code == 0);
  simdjson::dom::parser report_parser;
  const simdjson::dom::element report = report_parser.parse(evaluated.out);
  CHECK(double(report["total_latency"]) == doctest::Approx(total).epsilon(1e-12));
  CHECK(evaluated.err.empty());  // written latencies are the oracle's

  // Without -o and --json the schedule goes to stdout.
  const RunResult plain = Run("exact " + Quote(Problem("example_problem.json")));
  CHECK(plain.exit_code == 0);
  CHECK(plain.out.find("\"subgraphs\"") != std::string::npos);

  CHECK(Run("exact").exit_code == 2);
  CHECK(Run("exact " + Quote(Problem("mlsys-2026-1.json")) + " --set exact.bogus=1").exit_code == 2);
  const RunResult budget = Run("exact " + Quote(Problem("mlsys-2026-5.json")) + " --set exact.max_states=2 --json");
  CHECK(budget.exit_code == 0);
  CHECK(budget.out.find("\"status\": \"feasible\"") != std::string::npos);
  CHECK(budget.out.find("\"stop_reason\": \"state budget\"") != std::string::npos);
  CHECK(Run("exact " + Quote(Problem("mlsys-2026-1.json")) + " --time soon").exit_code == 2);
  const RunResult missing = Run("exact " + Quote((dir / "missing.json").string()));
  CHECK(missing.exit_code == 1);
  CHECK(Lines(missing.err) == 1);
  std::filesystem::remove_all(dir);
}

TEST_CASE("cli: hardware lists the built-in profiles and shows one as text or JSON") {
  const RunResult table = Run("hardware");
  CHECK(table.exit_code == 0);
  CHECK(table.err.empty());
  for (const char* name : {"tpu-v5e", "tpu-v1", "tpu7x-tc", "ascend910-core", "gemmini-default",
                           "xdna-aie-ml-tile", "mlsys-2026"}) {
    CHECK(table.out.find(name) != std::string::npos);
  }
  CHECK(table.out.find("67,108,864") != std::string::npos);  // tpu-v5e's capacity in elements

  const RunResult text = Run("hardware tpu-v5e");
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("128^3 / 65536 MACs per cycle") != std::string::npos);
  CHECK(text.out.find("819 GB/s at 1.5 GHz") != std::string::npos);
  CHECK(text.out.find("scaling-book") != std::string::npos);

  const RunResult json = Run("hardware tpu-v5e --json");
  REQUIRE(json.exit_code == 0);
  simdjson::dom::parser parser;
  const simdjson::dom::element profile = parser.parse(json.out);
  CHECK(std::string_view(profile["name"]) == "tpu-v5e");
  CHECK(int64_t(profile["derived"]["capacity"]) == 67108864);
  CHECK(double(profile["derived"]["bandwidth"]) == 273);
  CHECK(int64_t(profile["derived"]["native"]) == 128);
  CHECK(double(profile["derived"]["matmul_base"]) == 32);
  CHECK(double(profile["derived"]["pointwise_base"]) == 8);
  CHECK(simdjson::dom::array(profile["sources"]).size() == 2);

  const RunResult all = Run("hardware --json");
  REQUIRE(all.exit_code == 0);
  simdjson::dom::parser all_parser;
  CHECK(simdjson::dom::array(all_parser.parse(all.out)).size() == 7);
  CHECK(Run("hardware --help").exit_code == 0);
}

TEST_CASE("cli: hardware --apply rewrites a problem, bad profiles exit 1, usage errors 2") {
  const std::filesystem::path dir = testing::ScratchDir("cli-test", "hardware");
  const std::string out = (dir / "v5e.json").string();
  const RunResult apply =
      Run("hardware tpu-v5e --apply " + Quote(Problem("mlsys-2026-1.json")) + " -o " + Quote(out));
  REQUIRE(apply.exit_code == 0);
  const RunResult bound = Run("bound --json " + Quote(out));
  CHECK(bound.exit_code == 0);
  simdjson::dom::parser parser;
  const simdjson::dom::element problem = parser.parse(testing::ReadFile(out));
  CHECK(int64_t(problem["fast_memory_capacity"]) == 67108864);
  CHECK(double(problem["slow_memory_bandwidth"]) == 273);

  const std::string bad = (dir / "bad.yaml").string();
  std::string text = testing::ReadFile(std::string(ANNEALER_SOURCE_DIR) + "/hardware/tpu-v5e.yaml");
  const std::size_t unit = text.find("819 GB/s");
  REQUIRE(unit != std::string::npos);
  const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + unit, '\n'));
  std::ofstream(bad) << text.replace(unit, 8, "819 GBps");
  const RunResult bad_run = Run("hardware " + Quote(bad));
  CHECK(bad_run.exit_code == 1);
  CHECK(bad_run.err == "annealer: " + bad + ":" + std::to_string(line) + ": bandwidth: unknown unit \"GBps\" (expected B/cycle, "
                       "bit/cycle, B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, TiB/s)\n");
  CHECK(Run("hardware tpu-v9").exit_code == 1);
  CHECK(Run("hardware tpu-v5e tpu-v1").exit_code == 2);
  CHECK(Run("hardware --apply " + Quote(Problem("mlsys-2026-1.json"))).exit_code == 2);
  CHECK(Run("hardware tpu-v5e --bogus").exit_code == 2);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace annealer

namespace annealer {
namespace {

TEST_CASE("cli: import writes the problem, the map and the summary, every command takes the model") {
  const auto dir = testing::ScratchDir("cli", "import");
  const std::string model = std::string(ANNEALER_SOURCE_DIR) + "/tests/models/mlp.onnx";
  const std::string problem = (dir / "mlp.json").string();
  const RunResult imported = Run("import " + Quote(model) + " --hardware tpu-v5e -o " + Quote(problem));
  CHECK(imported.exit_code == 0);
  CHECK(imported.out.find("MACs (Conv/Gemm/MatMul): 234,752") != std::string::npos);
  CHECK(imported.out.find("parameters: 235,146 (234,752 in weight tensors of the problem)") != std::string::npos);
  CHECK(imported.out.find("wrote " + problem + " (") != std::string::npos);
  const std::string map = testing::ReadFile(dir / "mlp.map.json");
  CHECK(map.find("\"nodes\": [\"fc1\"]") != std::string::npos);
  CHECK(map.find("\"role\": \"weight\"") != std::string::npos);
  // The file and the in-memory import are the same problem: the same bound either way.
  const RunResult from_file = Run("bound " + Quote(problem) + " --json");
  const RunResult from_model = Run("bound " + Quote(model) + " --hardware tpu-v5e --json");
  CHECK(from_file.exit_code == 0);
  CHECK(from_file.out == from_model.out);
  // Search, then evaluate through the model.
  const std::string schedule = (dir / "s.json").string();
  CHECK(Run("--time 1s --quiet " + Quote(model) + " --hardware tpu-v5e -o " + Quote(schedule)).exit_code == 0);
  const RunResult evaluated = Run("evaluate " + Quote(model) + " " + Quote(schedule) + " --hardware tpu-v5e --json");
  CHECK(evaluated.exit_code == 0);
  CHECK(evaluated.out.find("\"valid\": true") != std::string::npos);
  // --json summary; without -o the problem goes to stdout.
  const RunResult json = Run("import " + Quote(model) + " --hardware tpu-v5e --json -o " + Quote(problem));
  CHECK(json.out.find("\"macs\": 234752") != std::string::npos);
  const RunResult to_stdout = Run("import " + Quote(model) + " --hardware tpu-v5e");
  CHECK(to_stdout.out.rfind("{", 0) == 0);
  CHECK(to_stdout.err.find("MACs (Conv/Gemm/MatMul): 234,752") != std::string::npos);
  // A model needs a profile; a JSON problem takes none.
  const RunResult no_profile = Run("bound " + Quote(model));
  CHECK(no_profile.exit_code == 1);
  CHECK(no_profile.err == "annealer: " + model + ": a model needs a hardware profile: --hardware NAME (see `annealer hardware`) or --hardware PROFILE.yaml\n");
  CHECK(Run("import " + Quote(model)).exit_code == 2);
  const RunResult json_with_profile = Run("bound " + Quote(problem) + " --hardware tpu-v5e");
  CHECK(json_with_profile.exit_code == 1);
  CHECK(json_with_profile.err.find("--hardware applies to .onnx models") != std::string::npos);
}

}  // namespace
}  // namespace annealer
