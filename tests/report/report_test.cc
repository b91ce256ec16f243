// The views of a schedule: the shared summary, the Chrome trace, the HTML report, the DAG
// layout and the search's log, on the bundled problems, invalid schedules and large graphs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <simdjson.h>

#include "eval/oracle.h"
#include "eval/random_schedule.h"
#include "search/starts/baseline.h"
#include "src/report/dag_layout.h"
#include "src/io/contest/problem_reader.h"
#include "src/report/report_html.h"
#include "src/io/run_log.h"
#include "src/report/schedule_summary.h"
#include "src/io/text_format.h"
#include "src/report/trace_json.h"

namespace annealer {
namespace {

const char* const kBundled[] = {"example_problem", "mlsys-2026-1", "mlsys-2026-5",
                                "mlsys-2026-9",    "mlsys-2026-13", "mlsys-2026-17"};

Problem Bundled(const std::string& name) {
  return ReadProblemFile(std::string(ANNEALER_SOURCE_DIR) + "/problems/" + name + ".json");
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

// A subgraph event or a step event of the trace.
struct TraceEvent {
  std::string category;
  std::string name;
  double ts = 0;
  double dur = 0;
  int64_t subgraph = -1;
};

struct ParsedTrace {
  std::vector<TraceEvent> complete;  // "ph": "X", in file order
  int instants = 0;                  // "ph": "i"
  int metadata = 0;                  // "ph": "M"
  bool valid = false;
  double total = 0;
};

ParsedTrace ParseTrace(const std::string& json) {
  simdjson::dom::parser parser;
  const simdjson::dom::element root = parser.parse(json);
  ParsedTrace trace;
  trace.valid = bool(root["otherData"]["valid"]);
  trace.total = double(root["otherData"]["total_latency"]);
  for (const simdjson::dom::element event : root["traceEvents"].get_array()) {
    const std::string phase{std::string_view(event["ph"])};
    CHECK(int64_t(event["pid"]) == 1);
    if (phase == "M") {
      ++trace.metadata;
    } else if (phase == "i") {
      ++trace.instants;
    } else if (phase == "X") {
      TraceEvent e;
      e.category = std::string(std::string_view(event["cat"]));
      e.name = std::string(std::string_view(event["name"]));
      e.ts = double(event["ts"]);
      e.dur = double(event["dur"]);
      if (e.category == "subgraph") {
        const simdjson::dom::element args = event["args"];
        e.subgraph = int64_t(args["subgraph"]);
        // Every field the issue asks for is there.
        for (const char* key : {"ops", "granularity", "compute_time", "memory_time",
                                "peak_working_set", "tiles", "k_steps", "latency"}) {
          CHECK_MESSAGE(args[key].error() == simdjson::SUCCESS, key);
        }
      }
      trace.complete.push_back(e);
    } else {
      CHECK(phase == "C");
    }
  }
  return trace;
}

// Subgraph events tile [0, total] in execution order; step events nest in their subgraph.
void CheckTrace(const ScheduleSummary& summary, const ParsedTrace& trace) {
  std::vector<TraceEvent> subgraphs;
  for (const TraceEvent& e : trace.complete) {
    if (e.category == "subgraph") subgraphs.push_back(e);
  }
  int priced = 0;
  for (const SubgraphSummary& s : summary.subgraphs) priced += s.report ? 1 : 0;
  REQUIRE(static_cast<int>(subgraphs.size()) == priced);
  double sum = 0, end = 0;
  int64_t previous = -1;
  for (const TraceEvent& e : subgraphs) {
    CHECK(e.subgraph > previous);
    previous = e.subgraph;
    const SubgraphSummary& s = summary.subgraphs[e.subgraph];
    REQUIRE(s.report);
    CHECK(e.dur == s.report->latency);
    CHECK(e.ts == doctest::Approx(end).epsilon(1e-12));
    sum += e.dur;
    end = e.ts + e.dur;
  }
  CHECK(sum == doctest::Approx(summary.total).epsilon(1e-12));
  CHECK(trace.total == summary.total);
  // Steps: inside the last subgraph event that starts at or before them.
  size_t parent = 0;
  double step_sum_for_parent = 0;
  for (const TraceEvent& e : trace.complete) {
    if (e.category == "subgraph") {
      step_sum_for_parent = 0;
      while (parent < subgraphs.size() && subgraphs[parent].ts != e.ts) ++parent;
      continue;
    }
    REQUIRE(parent < subgraphs.size());
    const TraceEvent& p = subgraphs[parent];
    CHECK(e.ts >= p.ts - 1e-9);
    CHECK(e.ts + e.dur <= p.ts + p.dur + 1e-6 * std::max(1.0, p.dur));
    step_sum_for_parent += e.dur;
    CHECK(step_sum_for_parent <= p.dur * (1 + 1e-9) + 1e-9);
  }
}

// The page loads nothing: no remote address, no src= or href= to anything, no CSS import.
void CheckSelfContained(const std::string& html) {
  CHECK(html.find("http://") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
  CHECK(html.find("src=") == std::string::npos);
  CHECK(html.find("href=") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  CHECK(html.find("@import") == std::string::npos);
  CHECK(html.find("url(") == std::string::npos);
  CHECK(html.find("<iframe") == std::string::npos);
  // Inline style and script are there, and the markers the browser test reads.
  CHECK(html.find("<style>") != std::string::npos);
  CHECK(html.find("data-render-ok") != std::string::npos);
  CHECK(html.find("data-script-error") != std::string::npos);
}

std::string Html(const Problem& problem, const Schedule& schedule, const ScheduleSummary& summary,
                 const std::vector<RunLogEntry>* log = nullptr) {
  ReportInput input{problem, schedule, summary, "p.json", "s.json", log, "run.jsonl"};
  return ReportHtml(input);
}

TEST_CASE("report: summary, trace and HTML of the baseline on every bundled problem") {
  for (const char* name : kBundled) {
    CAPTURE(name);
    const Problem problem = Bundled(name);
    const Schedule schedule = BuildBaseline(problem);
    const ScheduleSummary summary = SummarizeSchedule(problem, schedule);
    REQUIRE(summary.valid());
    const Evaluation evaluation = EvaluateOracle(problem, schedule);
    CHECK(summary.total == evaluation.total);
    CHECK(summary.bound.total() == ComputeLowerBound(problem).total());
    REQUIRE(summary.subgraphs.size() == schedule.subgraphs.size());
    for (size_t i = 0; i < summary.subgraphs.size(); ++i) {
      CHECK(*summary.subgraphs[i].report == evaluation.subgraphs[i]);
      CHECK(summary.subgraphs[i].subgraph == &schedule.subgraphs[i]);
    }

    const ParsedTrace trace = ParseTrace(TraceJson(problem, summary, name));
    CHECK(trace.valid);
    CHECK(trace.metadata == 2);
    CHECK(trace.instants == 0);
    CheckTrace(summary, trace);

    const std::string html = Html(problem, schedule, summary);
    CheckSelfContained(html);
    CHECK(html.find("<span id=\"total\">" + Grouped(summary.total) + "</span>") != std::string::npos);
    CHECK(html.find("VALID") != std::string::npos);
    CHECK(html.find("id=\"violation\"") == std::string::npos);
    for (size_t i = 0; i < schedule.subgraphs.size(); ++i) {
      CHECK(html.find("id=\"sg-" + std::to_string(i) + "\"") != std::string::npos);
    }
    CHECK(Count(html, "<g class=\"op\"") == problem.ops.size());
    CHECK(Count(html, "<g class=\"bar\"") == 2 * schedule.subgraphs.size());  // timeline + WS
    CHECK(Count(html, "<g class=\"sgn\"") == schedule.subgraphs.size());  // the collapsed DAG
  }
}

TEST_CASE("report: a chip's buffers are drawn against their capacities, and only with rules") {
  Problem problem = Bundled("mlsys-2026-5");
  const Schedule schedule = BuildBaseline(problem);
  const std::string plain = Html(problem, schedule, SummarizeSchedule(problem, schedule));
  CHECK(plain.find("id=\"ws-staging\"") == std::string::npos);
  CHECK(plain.find("staging peak") == std::string::npos);

  const Elements capacity = problem.fast_memory_capacity;
  problem.chip.staging_capacity = 2 * capacity;  // checked; a step's slices fit the memory
  problem.chip.accumulator_capacity = capacity;  // checked
  problem.chip.double_staging = true;         // counts twice (H2)
  const ScheduleSummary summary = SummarizeSchedule(problem, schedule);
  REQUIRE(summary.valid());
  Elements staging_peak = 0;
  for (size_t i = 0; i < summary.subgraphs.size(); ++i) {
    REQUIRE(summary.subgraphs[i].roles.has_value());
    const RoleFootprints& roles = *summary.subgraphs[i].roles;
    // The peak of the oracle's steps, doubled for the double-buffered staging.
    RoleFootprints expected;
    EvaluateSubgraphOracleSteps(problem, schedule.subgraphs[i], summary.subgraphs[i].retained_in,
                                [&](const StepRecord& r) {
                                  expected.staging = std::max(expected.staging, r.roles.staging);
                                  expected.accumulator = std::max(expected.accumulator, r.roles.accumulator);
                                  expected.vector = std::max(expected.vector, r.roles.vector);
                                });
    CHECK(roles == expected);
    CHECK(roles.staging % 2 == 0);
    CHECK(roles.staging <= 2 * capacity);
    staging_peak = std::max(staging_peak, roles.staging);
  }
  CHECK(staging_peak > 0);
  const std::string html = Html(problem, schedule, summary);
  CheckSelfContained(html);
  CHECK(html.find("id=\"ws-staging\"") != std::string::npos);
  CHECK(html.find("id=\"ws-accumulator\"") != std::string::npos);
  CHECK(html.find("id=\"ws-vector\"") == std::string::npos);  // capacity 0: not checked
  CHECK(html.find("<th>staging peak</th><th>accumulator peak</th>") != std::string::npos);
  // timeline, working set, and one chart per checked role: a bar per subgraph each
  CHECK(Count(html, "<g class=\"bar\"") == 4 * schedule.subgraphs.size());
  // Appended, not `"(" + std::string&&` (GCC 12 warns falsely there, -Wrestrict).
  std::string peak = "(";
  peak += Grouped(static_cast<double>(2 * capacity));
  peak += "), one bar per subgraph";
  CHECK(html.find(peak) != std::string::npos);
}

TEST_CASE("report: per-step trace events add up to their subgraph and respect the cap") {
  const Problem problem = Bundled("mlsys-2026-17");
  const Schedule schedule = BuildBaseline(problem);
  const ScheduleSummary summary = SummarizeSchedule(problem, schedule);
  TraceOptions options;
  options.max_step_events = 40;
  const ParsedTrace trace = ParseTrace(TraceJson(problem, summary, "x", options));
  CheckTrace(summary, trace);
  int steps = 0;
  for (const TraceEvent& e : trace.complete) steps += e.category == "step";
  CHECK(steps > 0);
  CHECK(steps <= 40);
  // The first subgraph is small enough to be detailed: its steps sum to its latency.
  const SubgraphReport& first = *summary.subgraphs[0].report;
  REQUIRE(first.tiles * first.k_steps <= options.max_steps_per_subgraph);
  double sum = 0;
  for (const TraceEvent& e : trace.complete) {
    if (e.category == "step" && e.ts < first.latency) sum += e.dur;
  }
  CHECK(sum == doctest::Approx(first.latency).epsilon(1e-12));

  options.max_step_events = 0;
  const ParsedTrace no_steps = ParseTrace(TraceJson(problem, summary, "x", options));
  for (const TraceEvent& e : no_steps.complete) CHECK(e.category == "subgraph");
}

TEST_CASE("report: the oracle's step observer sees every step, in order, summing to the report") {
  const Problem problem = Bundled("mlsys-2026-5");
  const Schedule schedule = BuildBaseline(problem);
  std::vector<TensorId> retained_in;
  for (const Subgraph& subgraph : schedule.subgraphs) {
    std::vector<StepRecord> steps;
    const SubgraphResult result = EvaluateSubgraphOracleSteps(
        problem, subgraph, retained_in, [&](const StepRecord& step) { steps.push_back(step); });
    REQUIRE(result.ok());
    CHECK(result.report == EvaluateSubgraphOracle(problem, subgraph, retained_in).report);
    REQUIRE(static_cast<int64_t>(steps.size()) == result.report.tiles * result.report.k_steps);
    double latency = 0, compute = 0, memory = 0;
    Elements peak = 0;
    for (size_t i = 0; i < steps.size(); ++i) {
      CHECK(steps[i].step == static_cast<int64_t>(i));
      CHECK(steps[i].k_step == static_cast<int64_t>(i) % result.report.k_steps);
      latency += steps[i].latency();
      compute += steps[i].compute;
      memory += steps[i].memory;
      peak = std::max(peak, steps[i].working_set);
    }
    CHECK(latency == result.report.latency);
    CHECK(compute == result.report.compute_time);
    CHECK(memory == result.report.memory_time);
    CHECK(peak == result.report.peak_working_set);
    retained_in = subgraph.retain;
  }
}

TEST_CASE("report: an invalid schedule still gets a report with the broken rule on top") {
  const Problem problem = Bundled("mlsys-2026-17");
  SUBCASE("out of memory in one subgraph (rule W): the others are priced") {
    const Problem tight = Bundled("mlsys-2026-5");  // capacity 30000 < three native slices
    Schedule schedule = BuildBaseline(tight);
    int broken = -1;
    for (int i = 0; i < static_cast<int>(schedule.subgraphs.size()) && broken < 0; ++i) {
      Subgraph& s = schedule.subgraphs[i];
      if (tight.ops[s.ops[0]].kind != OpKind::MatMul) continue;
      const Elements n = tight.native;
      s.granularity = {n, n, std::min(n, tight.ReductionLength(s.ops[0]))};
      if (!EvaluateSubgraphOracle(tight, s, {}).ok()) broken = i;
    }
    REQUIRE(broken >= 0);
    const ScheduleSummary summary = SummarizeSchedule(tight, schedule);
    REQUIRE_FALSE(summary.valid());
    CHECK(summary.evaluation.violation.rule == "W");
    CHECK(summary.evaluation.violation.subgraph == broken);
    CHECK_FALSE(summary.gap_percent);
    double priced_sum = 0;
    for (int i = 0; i < static_cast<int>(summary.subgraphs.size()); ++i) {
      const SubgraphSummary& s = summary.subgraphs[i];
      CHECK(s.report.has_value() == (i != broken));
      if (s.report) priced_sum += s.report->latency;
    }
    CHECK(summary.subgraphs[broken].violation->rule == "W");
    CHECK(summary.total == doctest::Approx(priced_sum).epsilon(1e-12));

    const std::string html = Html(tight, schedule, summary);
    CheckSelfContained(html);
    CHECK(html.find("INVALID") != std::string::npos);
    const size_t banner = html.find("id=\"violation\"");
    REQUIRE(banner != std::string::npos);
    CHECK(banner < html.find("id=\"dag\""));  // at the top
    CHECK(html.find(HtmlEscape(summary.evaluation.violation.detail)) != std::string::npos);
    CHECK(html.find("Broken rule W</b> in subgraph " + std::to_string(broken)) != std::string::npos);
    CHECK(Count(html, "<g class=\"op\"") == tight.ops.size());

    const ParsedTrace trace = ParseTrace(TraceJson(tight, summary, "x"));
    CHECK_FALSE(trace.valid);
    CHECK(trace.instants == 2);  // the unpriced subgraph and the schedule's verdict
    CheckTrace(summary, trace);
  }
  SUBCASE("a sequence rule (V7): every subgraph is priced on its own") {
    Schedule schedule = BuildBaseline(problem);
    // The last subgraph first: its inputs are produced later (V7).
    std::vector<Subgraph> order(schedule.subgraphs.end() - 1, schedule.subgraphs.end());
    order.insert(order.end(), schedule.subgraphs.begin(), schedule.subgraphs.end() - 1);
    schedule.subgraphs = order;
    const ScheduleSummary summary = SummarizeSchedule(problem, schedule);
    REQUIRE_FALSE(summary.valid());
    CHECK(summary.evaluation.violation.rule == "V7");
    for (const SubgraphSummary& s : summary.subgraphs) CHECK(s.report);
    const std::string html = Html(problem, schedule, summary);
    CHECK(html.find("Broken rule V7") != std::string::npos);
    CheckTrace(summary, ParseTrace(TraceJson(problem, summary, "x")));
  }
  SUBCASE("ops out of range and a retained id that is no tensor do not break the views") {
    Schedule schedule = BuildBaseline(problem);
    schedule.subgraphs[0].retain.push_back(100000);
    schedule.subgraphs[1].ops.push_back(100000);
    const ScheduleSummary summary = SummarizeSchedule(problem, schedule);
    REQUIRE_FALSE(summary.valid());
    CHECK_FALSE(summary.subgraphs[0].report);
    CHECK_FALSE(summary.subgraphs[1].report);
    CHECK(summary.subgraphs[1].retained_in.empty());
    CHECK(summary.subgraphs[2].report);
    CheckSelfContained(Html(problem, schedule, summary));
    CheckTrace(summary, ParseTrace(TraceJson(problem, summary, "x")));
  }
}

TEST_CASE("report: the convergence chart draws the log") {
  const Problem problem = Bundled("mlsys-2026-1");
  const Schedule schedule = BuildBaseline(problem);
  const ScheduleSummary summary = SummarizeSchedule(problem, schedule);
  // The log carries the problem's own lower bound (367,001.6 on -1, eval/bound/bounds.h).
  const Latency bound = summary.bound.total();
  CHECK(Grouped(bound) == "367,001.6");
  const std::vector<RunLogEntry> log = {{0.01, 419430.4, "baseline", bound},
                                        {0.2, 380000, "greedy-fusion", bound},
                                        {0.9, 367001.6, "sa", bound}};
  const std::string html = Html(problem, schedule, summary, &log);
  CheckSelfContained(html);
  CHECK(html.find("id=\"convergence\"") != std::string::npos);
  CHECK(Count(html, "<circle") == 3);
  CHECK(html.find("lower bound 367,001.6") != std::string::npos);
  CHECK(html.find("sa (1)") != std::string::npos);
  CHECK(html.find("another problem") == std::string::npos);
  // A log whose bound is not this problem's is drawn with a warning.
  const std::vector<RunLogEntry> other = {{0.5, 5e6, "sa", 4966400}};
  CHECK(Html(problem, schedule, summary, &other).find("another problem") != std::string::npos);
  // Without --log there is no chart.
  CHECK(Html(problem, schedule, summary).find("id=\"convergence\"") == std::string::npos);
}

TEST_CASE("report: the DAG layout respects every edge and never stacks two nodes") {
  std::mt19937_64 rng(7);
  RandomProblemOptions options;
  options.min_ops = 2;
  options.max_ops = 60;
  for (int round = 0; round < 200; ++round) {
    const Problem problem = RandomProblem(rng, kAllDagShapes[round % std::size(kAllDagShapes)], options);
    std::vector<std::pair<int, int>> edges;
    for (OpId op = 0; op < static_cast<OpId>(problem.ops.size()); ++op) {
      for (TensorId t : problem.ops[op].inputs) {
        if (problem.producer[t] != kNoOp) edges.emplace_back(problem.producer[t], op);
      }
    }
    const int n = static_cast<int>(problem.ops.size());
    const DagLayout layout = LayoutDag(n, edges);
    REQUIRE(static_cast<int>(layout.position.size()) == n);
    for (const DagLayout::Edge& e : layout.edges) {
      CHECK(layout.layer[e.from] < layout.layer[e.to]);
      // One point per layer crossed: a dummy in every layer between the ends.
      CHECK(static_cast<int>(e.points.size()) == layout.layer[e.to] - layout.layer[e.from] + 1);
      for (size_t i = 0; i + 1 < e.points.size(); ++i) CHECK(e.points[i + 1].x == e.points[i].x + 1);
    }
    std::vector<std::pair<double, double>> seen;
    for (int v = 0; v < n; ++v) {
      CHECK(layout.position[v].x == layout.layer[v]);
      seen.emplace_back(layout.position[v].x, layout.position[v].y);
    }
    std::sort(seen.begin(), seen.end());
    CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end());
    CHECK(LayoutDag(n, edges).position[n - 1].y == layout.position[n - 1].y);  // deterministic
  }
  CHECK_THROWS(LayoutDag(2, {{0, 1}, {1, 0}}));
  CHECK_THROWS(LayoutDag(2, {{0, 2}}));
  // Past the dummy budget, long edges are drawn straight.
  const DagLayout straight = LayoutDag(4, {{0, 1}, {1, 2}, {2, 3}, {0, 3}}, 4, /*max_dummies=*/0);
  CHECK(straight.edges.back().points.size() == 2);
}

TEST_CASE("report: a graph of 1,200 ops gives a report and a trace of bounded size") {
  std::mt19937_64 rng(11);
  RandomProblemOptions options;
  options.min_ops = options.max_ops = 1200;
  const Problem problem = RandomProblem(rng, DagShape::kMixed, options);
  REQUIRE(problem.ops.size() == 1200);
  const Schedule schedule = BuildBaseline(problem);
  const ScheduleSummary summary = SummarizeSchedule(problem, schedule);
  REQUIRE(summary.valid());
  const std::string html = Html(problem, schedule, summary);
  CheckSelfContained(html);
  CHECK(Count(html, "<g class=\"op\"") == 1200);
  CHECK(html.size() < 8u * 1024 * 1024);
  const std::string trace = TraceJson(problem, summary, "big");
  const ParsedTrace parsed = ParseTrace(trace);
  CheckTrace(summary, parsed);
  int steps = 0;
  for (const TraceEvent& e : parsed.complete) steps += e.category == "step";
  CHECK(steps <= TraceOptions{}.max_step_events);
}

TEST_CASE("run log: lines round-trip, bad lines name the file and the line") {
  const RunLogEntry entry{1.25, 367001.6000000001, "ga \"x\"", 112000};
  const std::string line = RunLogLine(entry);
  CHECK(line.back() == '\n');
  CHECK(Count(line, "\n") == 1);
  const std::vector<RunLogEntry> parsed = ParseRunLog(line + "\n" + line, "run.jsonl");
  REQUIRE(parsed.size() == 2);
  CHECK(parsed[0] == entry);
  CHECK(parsed[1] == entry);

  const auto error = [](const std::string& text) -> std::string {
    try {
      ParseRunLog(text, "run.jsonl");
    } catch (const InputError& e) {
      return e.what();
    }
    return "(no error)";
  };
  CHECK(error(line + "{\"seconds\": 1, \"latency\": ") .rfind("run.jsonl:2: malformed JSON", 0) == 0);
  CHECK(error("{\"seconds\": 1, \"worker\": \"sa\", \"lower_bound\": 0}") ==
        "run.jsonl:1: latency: required field is missing");
  CHECK(error(line + line + "{\"seconds\": -1, \"latency\": 1, \"worker\": \"sa\", \"lower_bound\": 0}")
            .rfind("run.jsonl:3: seconds: must not be negative", 0) == 0);
  CHECK(error("{\"seconds\": 1, \"latency\": 1, \"worker\": 3, \"lower_bound\": 0}")
            .rfind("run.jsonl:1: worker: ", 0) == 0);
  CHECK(error("[1, 2]").rfind("run.jsonl:1: top level: expected an object", 0) == 0);
}

}  // namespace
}  // namespace annealer
