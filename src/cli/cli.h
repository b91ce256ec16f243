// The command line: `evaluate`, `bound`, `baseline`, `report`, `exact` and `hardware`, help and
// version, and the dispatcher that hands every other invocation to the search command
// (src/cli/search_command.h).
// Exit codes: 0 success, 1 bad input or an invalid schedule, 2 usage error.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace annealer {

// main(): dispatches on argv[1]; never lets an exception escape.
int RunMain(int argc, char** argv);

// `annealer evaluate PROBLEM.json SCHEDULE.json [--json]`; `args` are the words after
// "evaluate". Prints the per-subgraph table (or JSON) on stdout; an invalid schedule prints one
// line (Violation::Message()) and returns 1; V13 warnings go to stderr and keep exit code 0.
int RunEvaluateCommand(const std::vector<std::string>& args);

// `annealer baseline PROBLEM.json [-o OUT.json]`; `args` are the words after "baseline".
// The baseline is re-checked by the oracle before anything is written.
int RunBaselineCommand(const std::vector<std::string>& args);

// `annealer report PROBLEM.json SCHEDULE.json -o REPORT.html [--trace T.json] [--log RUN.jsonl]`;
// `args` are the words after "report". Reads every input first, then writes the report (and
// the trace) atomically. An invalid schedule still gets a report and exit code 0.
int RunReportCommand(const std::vector<std::string>& args);

// `annealer bound PROBLEM.json [--json]`; `args` are the words after "bound". Prints the lower
// bound (eval/bound/bounds.h), its parts and the forced-traffic terms on stdout.
int RunBoundCommand(const std::vector<std::string>& args);

// `annealer exact PROBLEM.json [-o OUT.json] [--time D] [--json]`; `args` are the words after
// "exact". Exit 0 with a schedule (status optimal or feasible), 1 with none.
int RunExactCommand(const std::vector<std::string>& args);

// `annealer hardware [NAME|PATH] [--json] [--apply PROBLEM.json [-o OUT.json]]`; `args` are the
// words after "hardware". Exit 1 for a bad or unknown profile (InputError), 2 for usage.
int RunHardwareCommand(const std::vector<std::string>& args);

// `annealer import MODEL.onnx --hardware NAME|PROFILE.yaml [-o PROBLEM.json [--map MAP.json]]
// [--input NAME=DIMS]... [--json]`: the model lowered to a contest problem (src/import/model_lowering),
// the map file (problem op -> ONNX nodes; default PROBLEM.map.json) and the summary on stdout
// (without -o: the problem on stdout, the summary on stderr). Both files written atomically.
int RunImportCommand(const std::vector<std::string>& args);

void PrintUsage(std::FILE* out);

}  // namespace annealer
