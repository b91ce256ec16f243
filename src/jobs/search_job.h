// One search run as the CLI's search command makes it, reusable by any front end (the command
// line, the Python package): the configuration in its order of precedence, the baseline checked
// by the oracle before anything else, the lower bound, the deadline margins, RunSearch, the
// oracle's check of every schedule handed out, the improvement log and the verdicts drawn from
// it (gap, proof of optimality). Front ends only present what it returns.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "eval/bound/bounds.h"
#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "search/driver.h"
#include "search/params.h"
#include "src/io/run_log.h"

namespace annealer {

// Applies the configuration in its order of precedence: defaults, the YAML `config_files`, then
// `overrides` in order, each an (option, "key=value") pair where option is "--set" (any key,
// ApplySetting) or "--threads"/"--seed" (that key; the message names the option). Checks the
// result's consistency. Throws ConfigError with the CLI's one-line message.
SearchParams BuildSearchParams(const std::vector<std::string>& config_files,
                               const std::vector<std::pair<std::string, std::string>>& overrides);

// params.threads, or every core when it is 0.
int SearchThreads(const SearchParams& params);

struct SearchJobOptions {
  // The run's clock: the deadline is `start + time` less the margins, log seconds count from it.
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::chrono::milliseconds time{10000};
  std::string name;         // the problem as named in messages (a path)
  std::string output_path;  // kept holding the best checked schedule; empty: no file
  // The command line's promise "done before --time": if the search has not returned shortly
  // before it, write the best checked schedule (on stdout without an output file) and end the
  // process. Off for a library caller, which waits for the search instead.
  bool exit_at_watchdog = false;
};

// What is known when the workers are about to start (for the CLI's first status line).
struct SearchJobStart {
  LowerBound bound;
  Latency baseline_total = 0;
  std::chrono::steady_clock::time_point deadline;
  int threads = 1;
};

// Every hook is optional. on_log, on_progress and message may be called from a search thread,
// never two at once for on_log (the improvements are serialized).
struct SearchJobHooks {
  // A line for the user; `always` marks errors and bug reports (shown even when quiet).
  std::function<void(const std::string& line, bool always)> message;
  // Ends a live status line before the watchdog's last message.
  std::function<void()> finish_status;
  std::function<void(const SearchJobStart&)> on_start;
  // Each strictly better total, the baseline first: one line of the improvement log.
  std::function<void(const RunLogEntry&)> on_log;
  std::function<void(const SearchProgress&)> on_progress;
};

// No run: no valid start schedule, or the first write of the output file failed. The message
// is one line for "annealer: <message>"; empty when the hooks have reported it already.
struct SearchJobError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct SearchJobResult {
  Schedule best;             // passed the oracle; reported_latencies are the oracle's
  Latency total = 0;         // the oracle's total of `best`
  std::string best_json;     // `best` as contest JSON (ScheduleToJson), as the CLI writes it
  LowerBound bound;
  SearchSummary summary;     // RunSearch's (default when it failed)
  std::string failure;       // RunSearch's exception; empty when it returned
  bool stopped = false;      // the stop flag ended the run
  int threads = 1;
  int rejected = 0;          // schedules of the search that failed the oracle (a bug)
  int writes = 0;            // of the output file
  bool write_failed = false;
  std::vector<RunLogEntry> log;  // what on_log was given
  double elapsed_seconds = 0;    // from options.start to the end of the job
};

// Runs the search on `problem` until the deadline, `stop` or the work budget. Throws
// SearchJobError when there is no valid start schedule.
SearchJobResult RunSearchJob(const Problem& problem, const SearchParams& params,
                             const SearchJobOptions& options, const std::atomic<bool>& stop,
                             const SearchJobHooks& hooks = {});

// The schedules without search, as `annealer baseline` writes them: one op per subgraph at its
// best tiling, spilling every intermediate (BuildBaseline) or keeping a sole consumer's input
// resident (BuildResidentBaseline), or the search's greedy-fusion start from the spilling one.
enum class BaselineKind { kSpilling, kResident, kGreedy };

struct BaselineResult {
  Schedule schedule;  // passed the oracle; reported_latencies are the oracle's
  Latency total = 0;
  size_t retained = 0;  // tensors retained over all subgraphs
};

// Throws SearchJobError (one line, prefixed with `name`) when some op fits at no granularity,
// and std::logic_error if the schedule built fails the oracle (a bug of ours).
BaselineResult BuildBaselineSchedule(const Problem& problem, BaselineKind kind, const std::string& name);

// The best meets the lower bound (to the rounding of sums taken in another order): optimal,
// with no family attached, since the bound holds for every valid schedule (eval/bound/bounds.h).
bool MeetsLowerBound(const SearchJobResult& result);

// The exact solver completed and the best is no worse than its proven optimum: optimal within
// the solver's family (result.summary.exact->family).
bool OptimalWithinFamily(const SearchJobResult& result);

// "optimal: meets the lower bound", "optimal within family <family>", or nullopt.
std::optional<std::string> OptimalityProof(const SearchJobResult& result);

}  // namespace annealer
