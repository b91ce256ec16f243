#include "src/cli.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <stdexcept>

#include "eval/bounds.h"
#include "eval/cost_cache.h"
#include "eval/oracle.h"
#include "eval/subgraph_structure.h"
#include "search/baseline.h"
#include "search/exact.h"
#include "search/params.h"
#include "src/config.h"
#include "src/json_fields.h"
#include "src/problem_reader.h"
#include "src/schedule_io.h"
#include "src/report_html.h"
#include "src/run_log.h"
#include "src/schedule_summary.h"
#include "src/trace_json.h"
#include "src/search_command.h"
#include "src/text_format.h"

namespace annealer {

namespace {

constexpr const char* kVersion = "0.1.0";

// A usage error: printed with a hint to --help, exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void PrintError(const std::string& message) {
  std::fprintf(stderr, "annealer: %s\n", message.c_str());
}

// Everything goes out in one piece at the end, so a failure never leaves half an output; a
// failed write (closed pipe, full disk) is an error, not a silent success.
int FinishStdout(const std::string& text, int exit_code) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    PrintError("cannot write to standard output");
    return 1;
  }
  return exit_code;
}

// "44669337.6 (compute 13465600, graph I/O 2768240.64, traffic 42..., combined 44...)".
std::string BoundPartsText(const LowerBound& bound) {
  return Readable(bound.total()) + " (compute " + Readable(bound.compute) + ", graph I/O " +
         Readable(bound.graph_io) + ", traffic " + Readable(bound.traffic) + ", combined " +
         Readable(bound.combined) + ")";
}

// Right-aligns every column but the last, which is left-aligned free text.
std::string FormatTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) {
      if (c > 0) out += "  ";
      if (c + 1 < row.size()) {
        out += std::string(widths[c] - row[c].size(), ' ') + row[c];
      } else {
        out += row[c];
      }
    }
    out += '\n';
  }
  return out;
}

struct ParsedArgs {
  std::vector<std::string> positional;
  bool json = false;
  bool help = false;
  std::optional<std::string> output;
  std::optional<std::string> trace;  // report only
  std::optional<std::string> log;    // report only
  std::optional<std::string> time;         // exact only
  std::vector<std::string> config_files;   // exact only: --config, in order
  std::vector<std::string> settings;       // exact only: --set KEY=VALUE, in order
};

struct AcceptedOptions {
  bool json = false;    // --json
  bool output = false;  // -o/--output FILE
  bool report = false;  // --trace FILE, --log FILE
  bool budget = false;  // --time D, --config FILE, --set KEY=VALUE
};

// Options may appear anywhere; "--" ends them. File options take "--name FILE" or
// "--name=FILE".
ParsedArgs ParseArgs(const std::vector<std::string>& args, AcceptedOptions accepts) {
  ParsedArgs parsed;
  bool options_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    // Fills `slot` if `arg` is the file option `name` (or its short form); false otherwise.
    const auto file_option = [&](const std::string& name, const char* short_name,
                                 std::optional<std::string>& slot) {
      std::string value;
      if (arg == name || (short_name != nullptr && arg == short_name)) {
        if (i + 1 >= args.size()) throw UsageError(arg + " needs a file name");
        value = args[++i];
      } else if (arg.rfind(name + "=", 0) == 0) {
        value = arg.substr(name.size() + 1);
      } else {
        return false;
      }
      if (slot) throw UsageError(name + " is given twice");
      if (value.empty()) throw UsageError("the file name of " + name + " is empty");
      slot = value;
      return true;
    };
    if (options_done || arg.empty() || arg[0] != '-' || arg == "-") {
      parsed.positional.push_back(arg);
    } else if (arg == "--") {
      options_done = true;
    } else if (arg == "-h" || arg == "--help") {
      parsed.help = true;
    } else if (accepts.json && arg == "--json") {
      parsed.json = true;
    } else if (accepts.output && file_option("--output", "-o", parsed.output)) {
    } else if (accepts.report && file_option("--trace", nullptr, parsed.trace)) {
    } else if (accepts.report && file_option("--log", nullptr, parsed.log)) {
    } else if (accepts.budget && file_option("--time", nullptr, parsed.time)) {
    } else if (accepts.budget && (arg == "--config" || arg == "--set")) {
      if (i + 1 >= args.size()) throw UsageError(arg + (arg == "--set" ? " needs KEY=VALUE" : " needs a file name"));
      (arg == "--set" ? parsed.settings : parsed.config_files).push_back(args[++i]);
    } else {
      throw UsageError("unknown option " + arg);
    }
  }
  return parsed;
}

std::string EvaluationJson(const ScheduleSummary& summary) {
  const Evaluation& evaluation = summary.evaluation;
  const LowerBound& bound = summary.bound;
  if (!evaluation.ok()) {
    const Violation& v = evaluation.violation;
    return "{\"valid\": false, \"verdict\": " + JsonString(VerdictName(evaluation.verdict)) +
           ", \"rule\": " + JsonString(v.rule) +
           ", \"subgraph\": " + (v.subgraph >= 0 ? std::to_string(v.subgraph) : "null") +
           ", \"message\": " + JsonString(v.Message()) + "}\n";
  }
  std::string out = "{\n  \"valid\": true,\n  \"subgraphs\": [";
  for (size_t i = 0; i < summary.subgraphs.size(); ++i) {
    const SubgraphReport& r = *summary.subgraphs[i].report;
    const Subgraph& s = *summary.subgraphs[i].subgraph;
    out += i > 0 ? ",\n    " : "\n    ";
    out += "{\"ops\": [" + JoinIds(s.ops, ", ") + "], \"granularity\": [" +
           std::to_string(s.granularity.w) + ", " + std::to_string(s.granularity.h) + ", " +
           std::to_string(s.granularity.k) + "], \"tiles\": " + std::to_string(r.tiles) +
           ", \"k_steps\": " + std::to_string(r.k_steps) +
           ", \"latency\": " + FormatNumber(r.latency) +
           ", \"compute_time\": " + FormatNumber(r.compute_time) +
           ", \"memory_time\": " + FormatNumber(r.memory_time) +
           ", \"peak_working_set\": " + std::to_string(r.peak_working_set) + "}";
  }
  out += evaluation.subgraphs.empty() ? "],\n" : "\n  ],\n";
  const std::optional<double>& gap = summary.gap_percent;
  out += "  \"total_latency\": " + FormatNumber(evaluation.total) + ",\n";
  out += "  \"lower_bound\": " + FormatNumber(bound.total()) + ",\n";
  out += "  \"lower_bound_compute\": " + FormatNumber(bound.compute) + ",\n";
  out += "  \"lower_bound_graph_io\": " + FormatNumber(bound.graph_io) + ",\n";
  out += "  \"lower_bound_traffic\": " + FormatNumber(bound.traffic) + ",\n";
  out += "  \"lower_bound_combined\": " + FormatNumber(bound.combined) + ",\n";
  out += "  \"gap\": " + (gap ? FormatNumber(*gap) : std::string("null")) + ",\n";
  out += "  \"partial_edge_tiles\": [" + JoinIds(summary.partial_edge_tiles, ", ") + "],\n";
  out += "  \"warnings\": [";
  for (size_t i = 0; i < evaluation.warnings.size(); ++i) {
    if (i > 0) out += ", ";
    out += JsonString(evaluation.warnings[i]);
  }
  out += "]\n}\n";
  return out;
}

std::string EvaluationText(const std::string& problem_path, const Problem& problem,
                           const std::string& schedule_path, const Schedule& schedule,
                           const ScheduleSummary& summary) {
  const Evaluation& evaluation = summary.evaluation;
  const LowerBound& bound = summary.bound;
  std::string out = "problem   " + problem_path + ": " + std::to_string(problem.ops.size()) +
                    " ops, " + std::to_string(problem.tensors.size()) + " tensors, capacity " +
                    std::to_string(problem.fast_memory_capacity) + ", bandwidth " +
                    Readable(problem.slow_memory_bandwidth) + "\n";
  out += "schedule  " + schedule_path + ": " + std::to_string(schedule.subgraphs.size()) +
         " subgraphs\n\n";
  std::vector<std::vector<std::string>> rows = {{"#", "granularity", "tiles x k", "latency",
                                                 "compute", "memory", "peak WS", "ops"}};
  for (size_t i = 0; i < summary.subgraphs.size(); ++i) {
    const SubgraphReport& r = *summary.subgraphs[i].report;
    const Subgraph& s = *summary.subgraphs[i].subgraph;
    rows.push_back({std::to_string(i), GranularityText(s.granularity),
                    std::to_string(r.tiles) + " x " + std::to_string(r.k_steps),
                    Readable(r.latency), Readable(r.compute_time),
                    Readable(r.memory_time), std::to_string(r.peak_working_set),
                    JoinIds(s.ops, ",")});
  }
  out += FormatTable(rows) + "\n";
  const std::optional<double>& gap = summary.gap_percent;
  out += "total latency  " + Readable(evaluation.total) + "\n";
  out += "lower bound    " + BoundPartsText(bound) + "\n";
  out += "gap            " + (gap ? PercentText(*gap) : std::string("n/a (zero lower bound)")) + "\n";
  return out;
}

std::string BoundJson(const LowerBound& bound) {
  std::string out = "{\n  \"lower_bound\": " + FormatNumber(bound.total()) + ",\n";
  out += "  \"compute\": " + FormatNumber(bound.compute) + ",\n";
  out += "  \"graph_io\": " + FormatNumber(bound.graph_io) + ",\n";
  out += "  \"traffic\": " + FormatNumber(bound.traffic) + ",\n";
  out += "  \"combined\": " + FormatNumber(bound.combined) + ",\n";
  out += "  \"weight\": " + FormatNumber(bound.weight) + ",\n";
  out += "  \"terms\": [";
  for (size_t i = 0; i < bound.explanation.size(); ++i) {
    const BoundTerm& term = bound.explanation[i];
    out += i > 0 ? ",\n    " : "\n    ";
    out += "{\"tensor\": " + std::to_string(term.tensor) + ", \"op\": " +
           (term.op == kNoOp ? std::string("null") : std::to_string(term.op)) +
           ", \"elements\": " + std::to_string(term.elements) + ", \"why\": " +
           JsonString(term.why) + "}";
  }
  out += bound.explanation.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

std::string BoundText(const std::string& problem_path, const Problem& problem,
                      const LowerBound& bound) {
  std::string out = "problem      " + problem_path + ": " + std::to_string(problem.ops.size()) +
                    " ops, " + std::to_string(problem.tensors.size()) + " tensors, capacity " +
                    std::to_string(problem.fast_memory_capacity) + ", bandwidth " +
                    Readable(problem.slow_memory_bandwidth) + "\n";
  out += "lower bound  " + Readable(bound.total()) + "\n";
  out += "  compute    " + Readable(bound.compute) + "  (base cost x native tiles, every op once)\n";
  out += "  graph I/O  " + Readable(bound.graph_io) + "  (graph inputs loaded, outputs written once)\n";
  out += "  traffic    " + Readable(bound.traffic) + "  (forced loads and writes / bandwidth)\n";
  out += "  combined   " + Readable(bound.combined) + "  (a x compute + (1-a) x traffic, a = " +
         Readable(bound.weight) + ", each op in its cheapest mode)\n\n";
  out += "forced traffic at a = " + Readable(bound.weight) + " (elements, largest first):\n";
  std::vector<std::vector<std::string>> rows = {{"tensor", "op", "elements", "why"}};
  for (const BoundTerm& term : bound.explanation) {
    rows.push_back({std::to_string(term.tensor),
                    term.op == kNoOp ? std::string("-") : std::to_string(term.op),
                    std::to_string(term.elements), term.why});
  }
  return out + FormatTable(rows);
}

int RunVersion() { return FinishStdout(std::string("annealer ") + kVersion + "\n", 0); }

}  // namespace

void PrintUsage(std::FILE* out) {
  std::fputs(
      "annealer: schedules MatMul/Pointwise graphs on an accelerator with a small fast memory\n"
      "(MLSys 2026 contest problem).\n"
      "\n"
      "Usage:\n"
      "  annealer [--time 60s] PROBLEM.json [OUT.json]\n"
      "      Search for a low-latency schedule (the main command; its options follow).\n"
      "  annealer evaluate PROBLEM.json SCHEDULE.json [--json]\n"
      "      Check a schedule against every rule and price it per subgraph: granularity,\n"
      "      tiles x k-steps, latency, compute vs memory time, peak working set; then the\n"
      "      total, the problem's lower bound and the gap. An invalid schedule prints the\n"
      "      broken rule on one line and exits 1. Reported latencies that differ from ours\n"
      "      are warnings (stderr, exit 0).\n"
      "  annealer bound PROBLEM.json [--json]\n"
      "      Print the problem's lower bound on the latency of every valid schedule, its parts\n"
      "      (compute, graph I/O, forced traffic, combined) and the traffic no schedule avoids,\n"
      "      per tensor and op, with the reason (README: Lower bound).\n"
      "  annealer baseline PROBLEM.json [-o OUT.json]\n"
      "      Write the baseline schedule (one op per subgraph) to stdout or, atomically, to\n"
      "      OUT.json.\n"
      "  annealer report PROBLEM.json SCHEDULE.json -o REPORT.html [--trace TRACE.json]\n"
      "                  [--log RUN.jsonl]\n"
      "      Write a self-contained HTML report of the schedule (no network needed to open it):\n"
      "      totals and gap, the DAG coloured by subgraph, a timeline (compute vs memory,\n"
      "      retained tensors), peak working set vs capacity, a per-subgraph table, and with\n"
      "      --log the search's convergence (a log written by the search's --log). --trace\n"
      "      also writes a Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing): one\n"
      "      event per subgraph, 1 latency unit = 1 us. An invalid schedule still gets a\n"
      "      report, with the broken rule at the top (exit 0; the note goes to stderr).\n"
      "  annealer exact PROBLEM.json [-o OUT.json] [--time D] [--json] [--config F] [--set K=V]\n"
      "      Optimal schedule within a stated family (no recomputation, sides and k that\n"
      "      divide their dimensions, the named traversals, every useful retention), found\n"
      "      by A* over (executed ops, retained tensors) and proven by exhausting the family.\n"
      "      Anytime: the best constructive start is written first (atomically, after the\n"
      "      oracle), the optimum replaces it. Ends with status optimal (family exhausted),\n"
      "      feasible (time or state budget ran out; best so far written) or none (exit 1).\n"
      "      --time D (default 10s); --json prints a summary object on stdout (status,\n"
      "      total_latency, family, states, seconds, ...); without -o and --json the schedule\n"
      "      goes to stdout. Budgets: the exact.* keys (annealer --print-config), from\n"
      "      --config files and --set, as for the search.\n"
      "  annealer --help | --version\n"
      "\n"
      "Exit codes: 0 success, 1 bad input or invalid schedule, 2 usage error.\n"
      "\n"
      "The search command\n",
      out);
  std::fputs(SearchCommandUsage(), out);
}

// Usage error "<what> (got N file names)" unless exactly `count` file names were given.
static void RequireFiles(const ParsedArgs& parsed, size_t count, const char* what) {
  if (parsed.positional.size() != count) {
    throw UsageError(std::string(what) + " (got " + std::to_string(parsed.positional.size()) + " file names)");
  }
}

int RunEvaluateCommand(const std::vector<std::string>& args) {
  const ParsedArgs parsed = ParseArgs(args, {.json = true});
  if (parsed.help) {
    PrintUsage(stdout);
    return 0;
  }
  RequireFiles(parsed, 2, "evaluate needs PROBLEM.json and SCHEDULE.json");
  const std::string& problem_path = parsed.positional[0];
  const std::string& schedule_path = parsed.positional[1];
  const Problem problem = ReadProblemFile(problem_path);
  const Schedule schedule = ReadScheduleFile(schedule_path);
  const ScheduleSummary summary = SummarizeSchedule(problem, schedule);
  const Evaluation& evaluation = summary.evaluation;

  if (!evaluation.ok()) {
    const std::string text =
        parsed.json ? EvaluationJson(summary) : evaluation.violation.Message() + "\n";
    return FinishStdout(text, 1);
  }
  for (const std::string& warning : evaluation.warnings) PrintError("warning: " + warning);
  if (!summary.partial_edge_tiles.empty()) {
    PrintError("note: " + PartialEdgeTilesNote(summary.partial_edge_tiles));
  }
  return FinishStdout(parsed.json ? EvaluationJson(summary)
                                  : EvaluationText(problem_path, problem, schedule_path, schedule,
                                                   summary),
                      0);
}

int RunBoundCommand(const std::vector<std::string>& args) {
  const ParsedArgs parsed = ParseArgs(args, {.json = true});
  if (parsed.help) {
    PrintUsage(stdout);
    return 0;
  }
  RequireFiles(parsed, 1, "bound needs exactly one PROBLEM.json");
  const std::string& problem_path = parsed.positional[0];
  const Problem problem = ReadProblemFile(problem_path);
  const LowerBound bound = ComputeLowerBound(problem);
  return FinishStdout(parsed.json ? BoundJson(bound) : BoundText(problem_path, problem, bound), 0);
}

int RunBaselineCommand(const std::vector<std::string>& args) {
  const ParsedArgs parsed = ParseArgs(args, {.output = true});
  if (parsed.help) {
    PrintUsage(stdout);
    return 0;
  }
  RequireFiles(parsed, 1, "baseline needs exactly one PROBLEM.json");
  const std::string& problem_path = parsed.positional[0];
  const Problem problem = ReadProblemFile(problem_path);
  CostCache cache(1 << 16);  // a deep graph's repeated layers are priced once
  Schedule schedule = BuildBaseline(problem, &cache);
  const Evaluation evaluation = EvaluateOracle(problem, schedule);
  if (!evaluation.ok()) {
    // Never write an invalid schedule: this is a bug of ours, not of the input.
    PrintError("internal error: the baseline schedule is invalid: " +
               evaluation.violation.Message());
    return 1;
  }
  const std::vector<Latency> latencies = SubgraphLatencies(evaluation);
  schedule.reported_latencies = latencies;
  const std::string json = ScheduleToJson(schedule, latencies);

  const LowerBound bound = ComputeLowerBound(problem);
  const std::optional<double> gap = GapPercent(evaluation.total, bound.total());
  const std::string summary = "baseline: " + std::to_string(schedule.subgraphs.size()) +
                              " subgraphs, total latency " + Readable(evaluation.total) +
                              ", lower bound " + Readable(bound.total()) +
                              (gap ? ", gap " + PercentText(*gap) : std::string());
  if (!parsed.output) {
    const int code = FinishStdout(json, 0);
    if (code == 0) std::fprintf(stderr, "%s\n", summary.c_str());
    return code;
  }
  WriteFileAtomic(*parsed.output, json);
  std::fprintf(stderr, "%s; written to %s\n", summary.c_str(), parsed.output->c_str());
  return 0;
}

int RunReportCommand(const std::vector<std::string>& args) {
  const ParsedArgs parsed = ParseArgs(args, {.output = true, .report = true});
  if (parsed.help) {
    PrintUsage(stdout);
    return 0;
  }
  RequireFiles(parsed, 2, "report needs PROBLEM.json and SCHEDULE.json");
  if (!parsed.output) throw UsageError("report needs the output file: -o REPORT.html");
  const std::string& problem_path = parsed.positional[0];
  const std::string& schedule_path = parsed.positional[1];
  // Everything is read and drawn before anything is written.
  const Problem problem = ReadProblemFile(problem_path);
  const Schedule schedule = ReadScheduleFile(schedule_path);
  std::optional<std::vector<RunLogEntry>> log;
  if (parsed.log) log = ReadRunLog(*parsed.log);
  const ScheduleSummary summary = SummarizeSchedule(problem, schedule);
  ReportInput input{problem, schedule, summary, problem_path, schedule_path, nullptr, ""};
  if (log) {
    input.log = &*log;
    input.log_name = *parsed.log;
  }
  const std::string html = ReportHtml(input);
  std::string trace;
  if (parsed.trace) trace = TraceJson(problem, summary, problem_path + " / " + schedule_path);

  WriteFileAtomic(*parsed.output, html);
  if (parsed.trace) WriteFileAtomic(*parsed.trace, trace);

  std::string line = "report: ";
  if (summary.valid()) {
    line += "total latency " + Readable(summary.total) + ", lower bound " +
            Readable(summary.bound.total()) +
            (summary.gap_percent ? ", gap " + PercentText(*summary.gap_percent) : std::string());
  } else {
    line += "the schedule is INVALID (" + summary.evaluation.violation.Message() +
            "); the report shows the broken rule";
  }
  line += "; wrote " + *parsed.output + (parsed.trace ? " and " + *parsed.trace : std::string());
  std::fprintf(stderr, "%s\n", line.c_str());
  return 0;
}

int RunExactCommand(const std::vector<std::string>& args) {
  const ParsedArgs parsed = ParseArgs(args, {.json = true, .output = true, .budget = true});
  if (parsed.help) {
    PrintUsage(stdout);
    return 0;
  }
  RequireFiles(parsed, 1, "exact needs exactly one PROBLEM.json");
  std::chrono::milliseconds budget(10000);
  if (parsed.time) {
    try {
      budget = ParseDuration(*parsed.time);
    } catch (const std::exception& error) {
      throw UsageError(std::string("--time: ") + error.what());
    }
  }
  // Budgets: the exact.* keys of the search's configuration (other keys are accepted, unused).
  SearchParams params;
  try {
    for (const std::string& file : parsed.config_files) ApplyYamlFile(file, params);
    for (const std::string& setting : parsed.settings) ApplySetting(setting, params);
  } catch (const ConfigError& error) {
    throw UsageError(error.what());
  }
  using Clock = std::chrono::steady_clock;
  const Clock::time_point started = Clock::now();
  const Clock::time_point deadline = started + budget;
  const Problem problem = ReadProblemFile(parsed.positional[0]);

  auto schedule_json = [](const Schedule& schedule) {
    return ScheduleToJson(schedule, *schedule.reported_latencies);
  };
  // The incumbent: the constructive starts get at most a third of the budget.
  const Clock::time_point start_deadline = started + budget / 3;
  std::optional<Schedule> incumbent =
      ConstructiveIncumbent(problem, [&] { return Clock::now() >= start_deadline; });
  if (incumbent && parsed.output) {
    const Evaluation evaluation = EvaluateOracle(problem, *incumbent);
    incumbent->reported_latencies = SubgraphLatencies(evaluation);
    WriteFileAtomic(*parsed.output, schedule_json(*incumbent));
  }

  ExactOptions options;
  options.max_states = params.exact.max_states;
  options.max_subgraph_ops = static_cast<int>(params.exact.max_subgraph_ops);
  options.max_contexts = params.exact.max_contexts;
  options.deadline = deadline;
  options.incumbent = incumbent;
  options.on_progress = [](const ExactProgress& p) {
    std::fprintf(stderr, "exact: %.1f s, component %d/%d, %lld states, %lld expanded, frontier %s, incumbent %s\n",
                 p.elapsed_seconds, p.component + 1, p.components, static_cast<long long>(p.states),
                 static_cast<long long>(p.expansions), Readable(p.frontier).c_str(),
                 p.incumbent > 0 ? Readable(p.incumbent).c_str() : "none");
  };
  const ExactResult result = SolveExact(problem, options);
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();

  if (result.best && parsed.output) WriteFileAtomic(*parsed.output, schedule_json(*result.best));
  const std::string status(ExactStatusName(result.status));
  std::string summary = "exact: " + status;
  if (result.best) summary += ", total latency " + Readable(result.total);
  if (result.status == ExactStatus::kOptimal) {
    summary += result.found_by_solver ? " (found by the solver)" : " (the constructive start; nothing in the family beats it)";
  }
  if (!result.stop_reason.empty()) summary += ", stopped by " + result.stop_reason;
  char figures[160];
  std::snprintf(figures, sizeof figures, "; %lld states, %d component(s), %.2f s", static_cast<long long>(result.states),
                result.components, seconds);
  summary += figures;
  std::string out;
  if (parsed.json) {
    out = "{\"status\": " + JsonString(status) +
          ", \"total_latency\": " + (result.best ? FormatNumber(result.total) : std::string("null")) +
          ", \"found_by_solver\": " + (result.found_by_solver ? "true" : "false") +
          ", \"family\": " + JsonString(result.family) +
          ", \"states\": " + std::to_string(result.states) +
          ", \"expansions\": " + std::to_string(result.expansions) +
          ", \"contexts\": " + std::to_string(result.contexts) +
          ", \"pricings\": " + std::to_string(result.pricings) +
          ", \"components\": " + std::to_string(result.components) +
          ", \"stop_reason\": " + (result.stop_reason.empty() ? std::string("null") : JsonString(result.stop_reason)) +
          ", \"solver_seconds\": " + FormatNumber(result.seconds) +
          ", \"seconds\": " + FormatNumber(seconds) + "}\n";
  } else if (!parsed.output && result.best) {
    out = schedule_json(*result.best);
  }
  std::fprintf(stderr, "%s\nfamily: %s\n", summary.c_str(), result.family.c_str());
  if (parsed.output && result.best) std::fprintf(stderr, "written to %s\n", parsed.output->c_str());
  return FinishStdout(out, result.best ? 0 : 1);
}

int RunMain(int argc, char** argv) {
  try {
    const std::string command = argc > 1 ? argv[1] : "";
    const std::vector<std::string> rest(argv + std::min(argc, 2), argv + argc);
    try {
      if (argc < 2) {
        PrintUsage(stderr);
        return 2;
      }
      if (command == "--help" || command == "-h" || command == "help") {
        PrintUsage(stdout);
        return 0;
      }
      if (command == "--version") return RunVersion();
      if (command == "evaluate") return RunEvaluateCommand(rest);
      if (command == "baseline") return RunBaselineCommand(rest);
      if (command == "bound") return RunBoundCommand(rest);
      if (command == "report") return RunReportCommand(rest);
      if (command == "exact") return RunExactCommand(rest);
    } catch (const UsageError& error) {
      PrintError(error.what());
      std::fputs("Run 'annealer --help' for usage.\n", stderr);
      return 2;
    }
    return RunSearchCommand(argc, argv);
  } catch (const InputError& error) {
    PrintError(error.what());
    return 1;
  } catch (const std::bad_alloc&) {
    PrintError("out of memory");
    return 1;
  } catch (const std::exception& error) {
    PrintError(error.what());
    return 1;
  } catch (...) {
    PrintError("unknown internal error");
    return 1;
  }
}

}  // namespace annealer
