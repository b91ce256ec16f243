#include "src/cli/cli.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <new>
#include <map>
#include <optional>
#include <stdexcept>
#include <system_error>

#include <unistd.h>

#include "eval/bound/bounds.h"
#include "eval/oracle.h"
#include "eval/model/subgraph_structure.h"
#include "search/subgraph_tools.h"
#include "search/exact/exact.h"
#include "search/params.h"
#include "src/io/yaml/config.h"
#include "src/import/hardware_text.h"
#include "src/import/lowering_map.h"
#include "src/import/model_lowering.h"
#include "src/import/model_source.h"
#include "src/import/onnx_graph.h"
#include "src/io/contest/problem_writer.h"
#include "src/io/json_fields.h"
#include "src/io/contest/problem_reader.h"
#include "src/io/contest/schedule_io.h"
#include "src/report/report_html.h"
#include "src/io/run_log.h"
#include "src/report/schedule_summary.h"
#include "src/report/trace_json.h"
#include "src/cli/search_command.h"
#include "src/jobs/search_job.h"
#include "src/io/text_format.h"

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
         Readable(bound.combined) + ", islands " + Readable(bound.islands) + ", streaming " +
         Readable(bound.streaming) + ")";
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
  std::optional<std::string> apply;        // hardware only: --apply PROBLEM.json
  std::optional<std::string> hardware;     // a .onnx problem: --hardware NAME|PROFILE.yaml
  std::map<std::string, std::vector<int64_t>> inputs;  // a .onnx problem: --input NAME=DIMS
  std::optional<std::string> map;          // import, report: --map MAP.json
  bool greedy = false;                     // baseline only: --greedy
  bool resident = false;                   // baseline only: --resident
};

struct AcceptedOptions {
  bool json = false;    // --json
  bool output = false;  // -o/--output FILE
  bool report = false;  // --trace FILE, --log FILE
  bool budget = false;  // --time D, --config FILE, --set KEY=VALUE
  bool apply = false;   // --apply FILE
  bool model = true;    // --hardware NAME|FILE, --input NAME=DIMS (a .onnx problem)
  bool map = false;     // --map FILE
  bool greedy = false;  // --greedy, --resident
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
    } else if (accepts.greedy && arg == "--greedy") {
      parsed.greedy = true;
    } else if (accepts.greedy && arg == "--resident") {
      parsed.resident = true;
    } else if (accepts.output && file_option("--output", "-o", parsed.output)) {
    } else if (accepts.report && file_option("--trace", nullptr, parsed.trace)) {
    } else if (accepts.report && file_option("--log", nullptr, parsed.log)) {
    } else if (accepts.budget && file_option("--time", nullptr, parsed.time)) {
    } else if (accepts.apply && file_option("--apply", nullptr, parsed.apply)) {
    } else if (accepts.model && file_option("--hardware", nullptr, parsed.hardware)) {
    } else if (accepts.map && file_option("--map", nullptr, parsed.map)) {
    } else if (accepts.model && (arg == "--input" || arg.rfind("--input=", 0) == 0)) {
      std::string value;
      if (arg == "--input") {
        if (i + 1 >= args.size()) throw UsageError("--input needs NAME=DIMS, e.g. --input input=1x3x224x224");
        value = args[++i];
      } else {
        value = arg.substr(8);
      }
      try {
        auto [name, dims] = ParseInputDims(value);
        if (!parsed.inputs.emplace(name, dims).second) throw UsageError("--input " + name + " is given twice");
      } catch (const InputError& error) {
        throw UsageError(error.what());
      }
    } else if (accepts.budget && (arg == "--config" || arg == "--set")) {
      if (i + 1 >= args.size()) throw UsageError(arg + (arg == "--set" ? " needs KEY=VALUE" : " needs a file name"));
      (arg == "--set" ? parsed.settings : parsed.config_files).push_back(args[++i]);
    } else {
      throw UsageError("unknown option " + arg);
    }
  }
  return parsed;
}

std::string EvaluationJson(const Problem& problem, const ScheduleSummary& summary) {
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
           ", \"peak_working_set\": " + std::to_string(r.peak_working_set);
    if (const std::optional<RoleFootprints>& roles = summary.subgraphs[i].roles) {  // H1's buffers
      const RoleFootprints& peak = *roles;
      out += ", \"peak_staging\": " + std::to_string(peak.staging) + ", \"peak_accumulator\": " +
             std::to_string(peak.accumulator) + ", \"peak_vector\": " + std::to_string(peak.vector);
      if (problem.chip.two_paths()) out += ", \"peak_weight_fifo\": " + std::to_string(peak.weight_fifo);
    }
    out += "}";
  }
  out += evaluation.subgraphs.empty() ? "],\n" : "\n  ],\n";
  const std::optional<double>& gap = summary.gap_percent;
  out += "  \"total_latency\": " + FormatNumber(evaluation.total) + ",\n";
  out += "  \"lower_bound\": " + FormatNumber(bound.total()) + ",\n";
  for (const BoundPart& part : kBoundParts) {
    out += "  \"lower_bound_" + std::string(part.name) + "\": " + FormatNumber(bound.*part.value) + ",\n";
  }
  out += "  \"lower_bound_island_activations\": " + std::to_string(bound.island_activations) + ",\n";
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

// A chip's rules and each buffer's peak occupancy per subgraph against its capacity.
std::string ChipRulesText(const Problem& problem, const ScheduleSummary& summary) {
  std::string out = "chip rules (docs/cost-model.md H1-H6):\n";
  const std::string text = DescribeChipRules(problem.chip);
  for (size_t begin = 0; begin < text.size();) {
    const size_t end = std::min(text.find('\n', begin), text.size());
    out += "  " + text.substr(begin, end - begin) + "\n";
    begin = end + 1;
  }
  const ChipRules& c = problem.chip;
  auto cell = [](Elements peak, Elements capacity) {
    return std::to_string(peak) + (capacity > 0 ? " / " + std::to_string(capacity) : std::string(" (unchecked)"));
  };
  std::vector<std::vector<std::string>> rows = {{"#", "staging peak", "accumulator peak", "vector peak"}};
  if (c.two_paths()) rows[0].push_back("weight FIFO peak");  // H6
  for (size_t i = 0; i < summary.subgraphs.size(); ++i) {
    if (const std::optional<RoleFootprints>& roles = summary.subgraphs[i].roles) {
      const RoleFootprints& peak = *roles;
      rows.push_back({std::to_string(i), cell(peak.staging, c.staging_capacity),
                      cell(peak.accumulator, c.accumulator_capacity), cell(peak.vector, c.vector_capacity)});
      if (c.two_paths()) rows.back().push_back(cell(peak.weight_fifo, c.weight_fifo_capacity));
    }
  }
  return out + "buffer occupancy (elements, after double buffering and accumulator precision):\n" + FormatTable(rows);
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
  if (problem.chip.any()) out += ChipRulesText(problem, summary) + "\n";
  const std::optional<double>& gap = summary.gap_percent;
  out += "total latency  " + Readable(evaluation.total) + "\n";
  out += "lower bound    " + BoundPartsText(bound) + "\n";
  out += "gap            " + (gap ? PercentText(*gap) : std::string("n/a (zero lower bound)")) + "\n";
  return out;
}

std::string BoundJson(const LowerBound& bound) {
  std::string out = "{\n  \"lower_bound\": " + FormatNumber(bound.total()) + ",\n";
  auto count = [&](const char* name, int value) { out += "  \"" + std::string(name) + "\": " + std::to_string(value) + ",\n"; };
  for (const BoundPart& part : kBoundParts) {
    out += "  \"" + std::string(part.name) + "\": " + FormatNumber(bound.*part.value) + ",\n";
    if (part.value == &LowerBound::combined) out += "  \"weight\": " + FormatNumber(bound.weight) + ",\n";
    if (part.count != nullptr) count(part.count_name, bound.*part.count);
    if (part.value != &LowerBound::islands) continue;
    out += "  \"island_values\": [";
    for (size_t i = 0; i < bound.island_values.size(); ++i) out += (i > 0 ? ", " : "") + FormatNumber(bound.island_values[i]);
    out += "],\n";
    out += "  \"island_of\": [" + JoinIds(std::vector<int32_t>(bound.island_of.begin(), bound.island_of.end()), ", ") + "],\n";
    count("per_step_twins", bound.per_step_twins);
    count("first_in_loop_twins", bound.first_in_loop_twins);
    // P50, P49 and P56 only where they price something, so that the files of other problems keep their bytes.
    if (bound.gather_windows > 0) count("gather_windows", bound.gather_windows);
    if (bound.fill_capped_twins > 0) count("fill_capped_twins", bound.fill_capped_twins);
    if (bound.unheld_strip_twins > 0) count("unheld_strip_twins", bound.unheld_strip_twins);
    count("island_activations", bound.island_activations);
    count("written_sums", bound.written_sum_count);
  }
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

// The islands part cites the lines its islands take the maximum of, with their counts.
std::string IslandsGloss(const LowerBound& bound) {
  return "sum over " + std::to_string(bound.island_count) +
         " islands of ops that may share a subgraph of max(compute, forced traffic, P14, P18, P21, P23, P25, P24: per-step excess of " +
         std::to_string(bound.per_step_twins) + " weight-streaming MatMuls, " +
         std::to_string(bound.first_in_loop_twins) + " of them must run in their k-loop, P26" +
         (bound.fill_capped_twins > 0
              ? ", " + std::to_string(bound.fill_capped_twins) + " with their last k-steps' fresh compute capped, P49"
              : std::string()) +
         (bound.unheld_strip_twins > 0
              ? ", " + std::to_string(bound.unheld_strip_twins) + " loading in every step an LHS strip no step holds, P56"
              : std::string()) +
         "; P14 with the transfers of " + std::to_string(bound.island_activations) +
         " activations too large to retain, P32; " + std::to_string(bound.written_sum_count) +
         " sums whose unfused inputs are written and loaded, P38" +
         (bound.gather_windows > 0
              ? "; " + std::to_string(bound.gather_windows) + " windows of gathers and loads that little compute can hide, P50"
              : std::string()) +
         ")";
}

std::string BoundText(const std::string& problem_path, const Problem& problem,
                      const LowerBound& bound) {
  std::string out = "problem      " + problem_path + ": " + std::to_string(problem.ops.size()) +
                    " ops, " + std::to_string(problem.tensors.size()) + " tensors, capacity " +
                    std::to_string(problem.fast_memory_capacity) + ", bandwidth " +
                    Readable(problem.slow_memory_bandwidth) + "\n";
  // The parts that reach the bound: what a gap would have to be closed against.
  std::string set_by;
  for (const BoundPart& part : kBoundParts) {
    if (bound.*part.value >= bound.total()) set_by += std::string(set_by.empty() ? "" : ", ") + part.label;
  }
  out += "lower bound  " + Readable(bound.total()) + "  (set by " + set_by + ")\n";
  for (const BoundPart& part : kBoundParts) {
    std::string label = part.label;
    label.resize(std::max<size_t>(label.size(), 10), ' ');
    out += "  " + label + " " + Readable(bound.*part.value) + "  (";
    if (part.value == &LowerBound::combined) {
      out += "a x compute + (1-a) x traffic, a = " + Readable(bound.weight) + ", each op in its cheapest mode";
    } else if (part.value == &LowerBound::islands) {
      out += IslandsGloss(bound);
    } else {
      std::string what = part.what;
      if (const size_t n = what.find("{n}"); n != std::string::npos) what.replace(n, 3, std::to_string(bound.*part.count));
      out += what;
    }
    out += ")\n";
  }
  out += "\n";
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
      "      Docs: docs/configuration.md, docs/deep-graphs.md.\n"
      "  annealer evaluate PROBLEM.json SCHEDULE.json [--json]\n"
      "      Check a schedule against every rule and price it per subgraph: granularity,\n"
      "      tiles x k-steps, latency, compute vs memory time, peak working set; then the\n"
      "      total, the problem's lower bound and the gap. An invalid schedule prints the\n"
      "      broken rule on one line and exits 1. Reported latencies that differ from ours\n"
      "      are warnings (stderr, exit 0).\n"
      "      Docs: docs/cost-model.md (every rule id a message names has a heading there).\n"
      "  annealer bound PROBLEM.json [--json]\n"
      "      Print the problem's lower bound on the latency of every valid schedule, its parts\n"
      "      (compute, graph I/O, forced traffic, combined) and the traffic no schedule avoids,\n"
      "      per tensor and op, with the reason.\n"
      "      Docs: docs/lower-bound.md.\n"
      "  annealer baseline PROBLEM.json [-o OUT.json] [--resident | --greedy]\n"
      "      Write the baseline schedule (one op per subgraph, each at its best tiling: what a\n"
      "      layer-by-layer compiler does) to stdout or, atomically, to OUT.json. Every\n"
      "      intermediate tensor goes to slow memory and back. --resident keeps an op's output\n"
      "      in fast memory for the next op when that op is its only consumer and it fits\n"
      "      (ops ordered so that chains stay adjacent), as a compiler with a large on-chip\n"
      "      buffer does. --greedy writes the search's first start instead: the baseline with\n"
      "      producer/consumer pairs merged while a merge lowers the latency.\n"
      "      Docs: docs/cost-model.md.\n"
      "  annealer report PROBLEM.json SCHEDULE.json -o REPORT.html [--trace TRACE.json]\n"
      "                  [--log RUN.jsonl] [--map MAP.json]\n"
      "      Write a self-contained HTML report of the schedule (no network needed to open it):\n"
      "      totals and gap, the DAG coloured by subgraph, a timeline (compute vs memory,\n"
      "      retained tensors), peak working set vs capacity, a per-subgraph table, and with\n"
      "      --log the search's convergence (a log written by the search's --log). --trace\n"
      "      also writes a Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing): one\n"
      "      event per subgraph, 1 latency unit = 1 us. An invalid schedule still gets a\n"
      "      report, with the broken rule at the top (exit 0; the note goes to stderr).\n"
      "      Ops and tensors carry their ONNX names (\"12 conv2d_3 (Conv, conv-tap)\") for a\n"
      "      MODEL.onnx, and for a PROBLEM.json with the map file import wrote (--map, by\n"
      "      default PROBLEM.map.json beside it, read when present).\n"
      "      Docs: docs/reports.md.\n"
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
      "      Docs: docs/exact-solver.md.\n"
      "  annealer import MODEL.onnx --hardware NAME|PROFILE.yaml [-o PROBLEM.json [--map MAP.json]]\n"
      "                  [--input NAME=DIMS]... [--json]\n"
      "      Lower an ONNX model to a problem for that hardware: Conv/Gemm/MatMul become MatMul\n"
      "      ops (exact MACs), vector work Pointwise ops; writes the problem, a map file (problem\n"
      "      op -> ONNX nodes; default PROBLEM.map.json) and prints a summary: ops, MACs,\n"
      "      parameters, largest activation, hardware numbers and every approximation with its\n"
      "      size. --input fixes a dynamic input shape. Every command that takes PROBLEM.json\n"
      "      also takes MODEL.onnx with --hardware (and --input).\n"
      "      Docs: docs/model-import.md.\n"
      "  annealer hardware [NAME|PROFILE.yaml] [--json] [--apply PROBLEM.json [-o OUT.json]]\n"
      "      Hardware profiles: an accelerator in physical units (fast-memory bytes, bandwidth,\n"
      "      matrix-unit side, MACs and vector elements per cycle, element size) and the problem\n"
      "      numbers derived from it (capacity and bandwidth in elements, native side, MatMul\n"
      "      and Pointwise base cost per native tile). Without NAME: the built-in profiles\n"
      "      (hardware/*.yaml, embedded) in a table; with a built-in NAME or a YAML file: its\n"
      "      figures, the arithmetic and its sources. --apply writes\n"
      "      PROBLEM.json with the profile's capacity, bandwidth, native side and base costs\n"
      "      (MatMul: base x ceil(K/n); Pointwise: base) to stdout or, atomically, OUT.json.\n"
      "      Docs: docs/hardware.md.\n"
      "  annealer sweep SWEEP.yaml -o RESULTS.csv [--scheduler tcp://HOST:8786] [--workers N] [--quiet]\n"
      "      Many searches: models x hardware x varied settings (fast_memory, bandwidth, ...,\n"
      "      search settings) x seeds, one CSV row and one schedule per point, written as each\n"
      "      finishes; run again to resume. On every core here, or on a Dask cluster. Runs the\n"
      "      Python package (python3).\n"
      "      Docs: docs/sweeps.md.\n"
      "  annealer sweep-report RESULTS.csv -o REPORT.html\n"
      "      A sweep's results as one HTML page: latency and bound against each varied key, the\n"
      "      Pareto front against the fast-memory size, the speedup over layer-by-layer.\n"
      "      Docs: docs/sweeps.md.\n"
      "  annealer --help | --version\n"
      "\n"
      "Exit codes: 0 success, 1 bad input or invalid schedule, 2 usage error.\n"
      "\n"
      "The search command\n",
      out);
  std::fputs(SearchCommandUsage(), out);
}

// The problem of a command: a contest JSON, or a .onnx model with --hardware (src/import/model_source).
static LoadedProblem LoadProblemArg(const ParsedArgs& parsed, const std::string& path) {
  return LoadProblem(ProblemSource{path, parsed.hardware, parsed.inputs, {}});
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
  const Problem problem = LoadProblemArg(parsed, problem_path).problem;
  const Schedule schedule = ReadScheduleFile(schedule_path);
  const ScheduleSummary summary = SummarizeSchedule(problem, schedule);
  const Evaluation& evaluation = summary.evaluation;

  if (!evaluation.ok()) {
    const std::string text =
        parsed.json ? EvaluationJson(problem, summary) : evaluation.violation.Message() + "\n";
    return FinishStdout(text, 1);
  }
  for (const std::string& warning : evaluation.warnings) PrintError("warning: " + warning);
  if (!summary.partial_edge_tiles.empty()) {
    PrintError("note: " + PartialEdgeTilesNote(summary.partial_edge_tiles));
  }
  return FinishStdout(parsed.json ? EvaluationJson(problem, summary)
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
  const Problem problem = LoadProblemArg(parsed, problem_path).problem;
  const LowerBound bound = ComputeLowerBound(problem);
  return FinishStdout(parsed.json ? BoundJson(bound) : BoundText(problem_path, problem, bound), 0);
}

int RunBaselineCommand(const std::vector<std::string>& args) {
  const ParsedArgs parsed = ParseArgs(args, {.output = true, .greedy = true});
  if (parsed.help) {
    PrintUsage(stdout);
    return 0;
  }
  RequireFiles(parsed, 1, "baseline needs exactly one PROBLEM.json");
  if (parsed.greedy && parsed.resident) throw UsageError("--greedy and --resident exclude each other");
  const std::string& problem_path = parsed.positional[0];
  const Problem problem = LoadProblemArg(parsed, problem_path).problem;
  const BaselineKind kind = parsed.greedy     ? BaselineKind::kGreedy
                            : parsed.resident ? BaselineKind::kResident
                                              : BaselineKind::kSpilling;
  BaselineResult built;
  try {
    built = BuildBaselineSchedule(problem, kind, problem_path);
  } catch (const std::logic_error& error) {
    // Never write an invalid schedule: this is a bug of ours, not of the input.
    PrintError(error.what());
    return 1;
  }
  Schedule& schedule = built.schedule;
  const std::vector<Latency> latencies = *schedule.reported_latencies;
  const std::string json = ScheduleToJson(schedule, latencies);

  const LowerBound bound = ComputeLowerBound(problem);
  const std::optional<double> gap = GapPercent(built.total, bound.total());
  const std::string summary = std::string(parsed.greedy ? "greedy fusion: " : parsed.resident ? "resident baseline: " : "baseline: ") + std::to_string(schedule.subgraphs.size()) +
                              " subgraphs" + (parsed.resident ? ", " + std::to_string(built.retained) + " retained" : std::string()) +
                              ", total latency " + Readable(built.total) +
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
  const ParsedArgs parsed = ParseArgs(args, {.output = true, .report = true, .map = true});
  if (parsed.help) {
    PrintUsage(stdout);
    return 0;
  }
  RequireFiles(parsed, 2, "report needs PROBLEM.json and SCHEDULE.json");
  if (!parsed.output) throw UsageError("report needs the output file: -o REPORT.html");
  const std::string& problem_path = parsed.positional[0];
  const std::string& schedule_path = parsed.positional[1];
  // Everything is read and drawn before anything is written.
  const LoadedProblem loaded = LoadProblemArg(parsed, problem_path);
  const Problem& problem = loaded.problem;
  const Schedule schedule = ReadScheduleFile(schedule_path);
  std::optional<std::vector<RunLogEntry>> log;
  if (parsed.log) log = ReadRunLog(*parsed.log);
  // ONNX names for the ops and tensors: the imported model's, or a map file's (--map, or the
  // one `import` wrote beside PROBLEM.json).
  std::optional<ReportLabels> labels;
  std::string labels_from;
  if (loaded.model) {
    if (parsed.map) throw UsageError("--map goes with PROBLEM.json (a model names its own ops)");
    labels = LabelsOfOrigins(loaded.model->op_origins, loaded.model->tensor_origins);
  } else {
    std::optional<std::string> map_path = parsed.map;
    std::error_code error;
    if (!map_path && std::filesystem::is_regular_file(DefaultMapPath(problem_path), error)) {
      map_path = DefaultMapPath(problem_path);
    }
    if (map_path) {
      const LoweringMap map = ReadLoweringMapFile(*map_path, problem);
      labels = LabelsOfOrigins(map.op_origins, map.tensor_origins);
      labels_from = *map_path;
    }
  }
  const ScheduleSummary summary = SummarizeSchedule(problem, schedule);
  ReportInput input{problem, schedule, summary, problem_path, schedule_path, nullptr, ""};
  if (log) {
    input.log = &*log;
    input.log_name = *parsed.log;
  }
  if (labels) input.labels = &*labels;
  const std::string html = ReportHtml(input);
  std::string trace;
  if (parsed.trace) {
    TraceOptions options;
    if (labels) options.labels = &*labels;
    trace = TraceJson(problem, summary, problem_path + " / " + schedule_path, options);
  }

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
  if (!labels_from.empty()) line += " (ops named from " + labels_from + ")";
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
  const Problem problem = LoadProblemArg(parsed, parsed.positional[0]).problem;

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

int RunHardwareCommand(const std::vector<std::string>& args) {
  const ParsedArgs parsed = ParseArgs(args, {.json = true, .output = true, .apply = true});
  if (parsed.help) {
    PrintUsage(stdout);
    return 0;
  }
  if (parsed.positional.size() > 1) {
    throw UsageError("hardware takes at most one profile name or file (got " +
                     std::to_string(parsed.positional.size()) + ")");
  }
  if ((parsed.apply || parsed.output) && parsed.positional.empty()) {
    throw UsageError("hardware --apply needs a profile: annealer hardware NAME --apply PROBLEM.json");
  }
  if (parsed.output && !parsed.apply) throw UsageError("hardware -o goes with --apply PROBLEM.json");
  if (parsed.apply && parsed.json) throw UsageError("hardware --apply writes a problem; --json does not apply");
  if (parsed.positional.empty()) {
    std::vector<HardwareProfile> profiles;
    for (const std::string& name : BuiltinHardwareNames()) profiles.push_back(LoadHardwareProfile(name));
    return FinishStdout(parsed.json ? HardwareListJson(profiles) : HardwareTableText(profiles), 0);
  }
  const HardwareProfile profile = LoadHardwareProfile(parsed.positional[0]);
  if (!parsed.apply) {
    return FinishStdout(parsed.json ? HardwareProfileJson(profile) + "\n" : HardwareProfileText(profile), 0);
  }
  Problem problem = ReadProblemFile(*parsed.apply);
  ApplyHardware(Derive(profile), problem);
  const std::string json = ProblemToJson(problem);
  if (!parsed.output) return FinishStdout(json, 0);
  WriteFileAtomic(*parsed.output, json);
  std::fprintf(stderr, "hardware: %s with the numbers of %s written to %s\n", parsed.apply->c_str(),
               profile.name.c_str(), parsed.output->c_str());
  return 0;
}

// `sweep` and `sweep-report` live in the Python package (python/annealer/sweeps.py: the sweep
// dispatches points to processes or a Dask cluster, which only Python has): this replaces the
// process with `python3 -c BOOTSTRAP COMMAND ARGS...`. The package is the build tree's
// (<dir of this binary>/python, where python/CMakeLists.txt assembles it) when there is one,
// else the installed one; ANNEALER_PYTHON names another interpreter.
int RunPythonCommand(const std::string& command, const std::vector<std::string>& args) {
  const char* from_env = std::getenv("ANNEALER_PYTHON");
  const std::string python = from_env != nullptr && *from_env != '\0' ? from_env : ANNEALER_PYTHON_EXECUTABLE;
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const std::filesystem::path package = self.parent_path() / "python";
    if (std::filesystem::exists(package / "annealer" / "__init__.py", error)) {
      const char* old_path = std::getenv("PYTHONPATH");
      std::string path = package.string();
      if (old_path != nullptr && *old_path != '\0') path += std::string(":") + old_path;
      setenv("PYTHONPATH", path.c_str(), 1);
    }
  }
  static const char* const kBootstrap =
      "import sys\n"
      "try:\n"
      "    from annealer import sweeps\n"
      "except ImportError as e:\n"
      "    sys.exit('annealer: ' + sys.argv[1] + ' needs the annealer Python package, which does not import (' +\n"
      "             str(e) + '): build it (cmake --build build) or install it (cmake --install build --component python)')\n"
      "sys.exit(sweeps.main(sys.argv[1:]))\n";
  std::vector<std::string> words = {python, "-c", kBootstrap, command};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  execv(python.c_str(), argv.data());
  PrintError(command + " needs Python 3: cannot run " + python + ": " + std::strerror(errno) +
             " (install python3, or set ANNEALER_PYTHON to an interpreter)");
  return 1;
}

int RunImportCommand(const std::vector<std::string>& args) {
  const ParsedArgs parsed = ParseArgs(args, {.json = true, .output = true, .map = true});
  if (parsed.help) {
    PrintUsage(stdout);
    return 0;
  }
  RequireFiles(parsed, 1, "import needs exactly one MODEL.onnx");
  const std::string& path = parsed.positional[0];
  if (!parsed.hardware) throw UsageError("import needs a hardware profile: --hardware NAME (annealer hardware lists them) or --hardware PROFILE.yaml");
  if (!IsOnnxPath(path)) throw UsageError("import reads an ONNX model (MODEL.onnx), got " + path);
  if (parsed.map && !parsed.output) throw UsageError("--map goes with -o PROBLEM.json");
  const LoweredModel model = ImportModel(path, *parsed.hardware, parsed.inputs);
  const std::string problem_json = ProblemToJson(model.problem);
  const std::string summary = parsed.json ? ImportSummaryJson(model.summary) : ImportSummaryText(model.summary);
  if (!parsed.output) {
    // The problem goes to stdout, the summary to stderr.
    const int code = FinishStdout(problem_json, 0);
    if (code == 0) std::fputs(summary.c_str(), stderr);
    return code;
  }
  const std::string map_path = parsed.map ? *parsed.map : DefaultMapPath(*parsed.output);
  WriteFileAtomic(*parsed.output, problem_json);
  WriteFileAtomic(map_path, LoweringMapJson(model));
  std::fputs(summary.c_str(), stdout);
  if (!parsed.json) std::printf("wrote %s (%zu ops, %zu tensors) and %s\n", parsed.output->c_str(), model.problem.ops.size(), model.problem.tensors.size(), map_path.c_str());
  return 0;
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
      if (command == "hardware") return RunHardwareCommand(rest);
      if (command == "import") return RunImportCommand(rest);
      if (command == "sweep" || command == "sweep-report") return RunPythonCommand(command, rest);
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
