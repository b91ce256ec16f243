#include "src/search_command.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "eval/bounds.h"
#include "eval/cost_cache.h"
#include "eval/oracle.h"
#include "eval/subgraph_structure.h"
#include "search/baseline.h"
#include "search/driver.h"
#include "search/exact_result.h"
#include "search/repeat_result.h"
#include "src/config.h"
#include "src/json_fields.h"
#include "src/problem_reader.h"
#include "src/run_log.h"
#include "src/schedule_io.h"
#include "src/text_format.h"

namespace annealer {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Without --time: long enough for a useful search on problems of the contest's size, short
// enough for an interactive run.
constexpr milliseconds kDefaultTime{10000};
// The output file is replaced at most this often while the search improves.
constexpr milliseconds kWriteInterval{250};
// Without a terminal, one progress line per this many milliseconds.
constexpr milliseconds kLogInterval{2000};

constexpr const char* kUsage =
    "usage: annealer [options] PROBLEM.json [OUT.json]\n"
    "       annealer evaluate|baseline|report|help ...\n"
    "\n"
    "Searches for a low-latency schedule of PROBLEM.json for at most --time and prints the best\n"
    "one (contest JSON) on stdout, or keeps OUT.json (-o OUT.json) holding the best found so far:\n"
    "a valid schedule is written at once, replaced atomically whenever the search improves, and\n"
    "written a last time at the end or on SIGINT/SIGTERM. Progress goes to stderr.\n"
    "\n"
    "options:\n"
    "  --time DURATION    search time, e.g. 500ms, 30s, 2m (default 10s); the program exits\n"
    "                     before it has passed, counted from its start\n"
    "  -o, --output FILE  write the schedule to FILE (same as the second positional argument)\n"
    "  --threads N        worker threads (default: all cores); overrides the config\n"
    "  --seed S           master seed; overrides the config\n"
    "  --config FILE      YAML hyperparameters (see configs/default.yaml and\n"
    "                     docs/configuration.md); may repeat, later\n"
    "                     files override earlier ones\n"
    "  --set KEY=VALUE    one hyperparameter, e.g. --set sa.cooling=0.9; may repeat; applied\n"
    "                     after the config files, in order with --threads and --seed\n"
    "  --log FILE.jsonl   write one JSON line per improvement to FILE (created or emptied\n"
    "                     first): seconds, latency, worker kind, lower bound; each line is\n"
    "                     flushed as it happens; `annealer report --log FILE` draws it\n"
    "  --print-config     print the effective configuration as YAML and exit\n"
    "  --print-config-markdown  print the reference table of every key (the generated part\n"
    "                     of docs/configuration.md) and exit\n"
    "  -q, --quiet        no progress or summary on stderr (errors still appear)\n"
    "  -h, --help         this text\n"
    "\n"
    "exit status: 0 = a valid schedule was written, 1 = no valid schedule (bad problem file,\n"
    "search failure), 2 = bad command line or configuration.\n"
    "\n"
    "docs: docs/configuration.md (every key, presets, which knobs matter), docs/deep-graphs.md\n"
    "(graphs of repeated layers), docs/performance.md (figures and how to reproduce them).\n";

std::atomic<bool> g_stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler needs a lock-free flag");

// Only sets the flag: everything else happens on the normal path once RunSearch returns.
extern "C" void OnStopSignal(int) { g_stop_requested.store(true, std::memory_order_relaxed); }

void InstallStopHandlers() {
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  // A second signal gets the default action (terminate): the file on disk is always a whole,
  // valid schedule, so an impatient second Ctrl-C loses nothing.
  action.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  std::optional<milliseconds> time;
  std::string problem_path;
  std::string output_path;  // empty: stdout
  std::string log_path;     // empty: no improvement log
  std::vector<std::string> config_files;
  // --set, --threads and --seed in command-line order, as "key=value" plus the option's name.
  std::vector<std::pair<std::string, std::string>> overrides;
  bool quiet = false;
  bool print_config = false;
  bool print_config_markdown = false;  // the reference of every key, for docs/configuration.md
  bool help = false;
};

Options ParseOptions(int argc, char** argv) {
  Options options;
  std::vector<std::string> positional;
  bool options_done = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (options_done || arg.size() < 2 || arg[0] != '-') {
      positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    std::string name = arg;
    std::optional<std::string> inline_value;
    if (const std::size_t equals = arg.find('='); arg.rfind("--", 0) == 0 && equals != std::string::npos) {
      name = arg.substr(0, equals);
      inline_value = arg.substr(equals + 1);
    }
    const auto value = [&]() -> std::string {
      if (inline_value) return *inline_value;
      if (i + 1 >= argc) throw UsageError(name + " needs a value");
      return argv[++i];
    };
    const auto no_value = [&] {
      if (inline_value) throw UsageError(name + " takes no value");
    };
    if (name == "--time") {
      try {
        options.time = ParseDuration(value());
      } catch (const ConfigError& error) {
        throw UsageError(std::string("--time: ") + error.what());
      }
    } else if (name == "-o" || name == "--output") {
      if (!options.output_path.empty()) throw UsageError("the output file is given twice");
      options.output_path = value();
      if (options.output_path.empty()) throw UsageError(name + " needs a file name");
    } else if (name == "--log") {
      if (!options.log_path.empty()) throw UsageError("the log file is given twice");
      options.log_path = value();
      if (options.log_path.empty()) throw UsageError(name + " needs a file name");
    } else if (name == "--threads") {
      options.overrides.emplace_back("--threads", "threads=" + value());
    } else if (name == "--seed") {
      options.overrides.emplace_back("--seed", "seed=" + value());
    } else if (name == "--set") {
      options.overrides.emplace_back("--set", value());
    } else if (name == "--config") {
      options.config_files.push_back(value());
    } else if (name == "-q" || name == "--quiet") {
      no_value();
      options.quiet = true;
    } else if (name == "--print-config") {
      no_value();
      options.print_config = true;
    } else if (name == "--print-config-markdown") {
      no_value();
      options.print_config_markdown = true;
    } else if (name == "-h" || name == "--help") {
      no_value();
      options.help = true;
    } else {
      throw UsageError("unknown option " + arg);
    }
  }
  if (options.help || options.print_config || options.print_config_markdown) return options;
  if (positional.empty()) throw UsageError("missing the problem file");
  if (positional.size() > 2) throw UsageError("unexpected argument " + positional[2]);
  options.problem_path = positional[0];
  if (positional.size() == 2) {
    if (!options.output_path.empty()) throw UsageError("the output file is given twice (-o and " + positional[1] + ")");
    options.output_path = positional[1];
  }
  return options;
}

// Applies the configuration in its order of precedence: defaults, --config files, then --set,
// --threads and --seed as they appear. Throws ConfigError.
SearchParams BuildParams(const Options& options) {
  SearchParams params;
  for (const std::string& file : options.config_files) ApplyYamlFile(file, params);
  for (const auto& [option, assignment] : options.overrides) {
    if (option == "--set") {
      ApplySetting(assignment, params);
      continue;
    }
    const std::size_t equals = assignment.find('=');
    const ParamSpec* spec = FindParam(assignment.substr(0, equals));
    const std::string error = ApplyValue(*spec, assignment.substr(equals + 1), params);
    if (!error.empty()) throw ConfigError(option + " " + assignment.substr(equals + 1) + ": " + error);
  }
  if (std::string error = ValidateParams(params); !error.empty()) {
    throw ConfigError("inconsistent configuration: " + error);
  }
  return params;
}

std::string Percent(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", fraction * 100);
  return buffer;
}

// stderr shared by the search threads and the writer: a live status line on a terminal,
// ordinary lines otherwise, never interleaved.
class Console {
 public:
  explicit Console(bool quiet) : quiet_(quiet), terminal_(isatty(STDERR_FILENO) == 1) {}

  bool terminal() const { return terminal_; }

  // A progress line: rewritten in place on a terminal.
  void Status(const std::string& line) {
    if (quiet_) return;
    std::lock_guard lock(mutex_);
    if (terminal_) {
      std::fprintf(stderr, "\r%s\x1b[K", line.c_str());
      status_shown_ = true;
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fflush(stderr);
  }

  // A normal message; `always` prints it even with --quiet (errors and bug reports).
  void Line(const std::string& line, bool always = false) {
    if (quiet_ && !always) return;
    std::lock_guard lock(mutex_);
    if (status_shown_) std::fputs("\r\x1b[K", stderr);
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
    status_shown_ = false;
  }

  // Ends a live status line so that later output starts on a fresh line.
  void Finish() {
    std::lock_guard lock(mutex_);
    if (status_shown_) std::fputs("\n", stderr);
    status_shown_ = false;
  }

 private:
  std::mutex mutex_;
  bool quiet_;
  bool terminal_;
  bool status_shown_ = false;
};

// The best schedule that passed the oracle, and the file that holds it.
//
// The search reports improvements through Offer (serialized, from a search thread); it only
// stores the latest one, so the search never waits for the oracle or the disk. A writer thread
// checks the latest offer with the oracle and replaces the file at most every kWriteInterval.
// Every schedule that reaches the file or stdout has passed EvaluateOracle; one that fails is
// reported as a bug and dropped (the previous best stays).
class BestKeeper {
 public:
  BestKeeper(const Problem& problem, std::string output_path, Console& console)
      : problem_(problem), output_path_(std::move(output_path)), console_(console) {}

  ~BestKeeper() { StopWriter(); }

  // Threads for the checks made while no search runs (the start and Finish): the cores are idle
  // then. The writer's checks during the search stay on its one thread.
  void set_idle_threads(int threads) { idle_threads_ = threads; }

  // Checks and records `schedule` now, writing the file at once (no throttle): for the start.
  bool AcceptNow(const Schedule& schedule, const std::string& found_by) {
    oracle_threads_ = idle_threads_;
    const bool ok = Verify(schedule, found_by);
    oracle_threads_ = 1;
    if (!ok) return false;
    WriteBest();
    return true;
  }

  void Offer(const Schedule& schedule, Latency claimed_total, const std::string& found_by) {
    std::lock_guard lock(mutex_);
    pending_ = Pending{schedule, claimed_total, found_by};
    wake_.notify_one();
  }

  // Starts the thread that checks and writes offers; at `watchdog` it ends the process with the
  // best schedule if the search has not returned by then (see ExitAtWatchdog).
  void StartWriter(Clock::time_point watchdog) {
    watchdog_ = watchdog;
    writer_ = std::thread([this] { WriterLoop(); });
  }

  void StopWriter() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      wake_.notify_one();
    }
    if (writer_.joinable()) writer_.join();
  }

  // After the search: the final schedule wins if it is valid and not worse than what we hold
  // (so the output is the search's own best, which deterministic mode makes reproducible).
  // Falls back to the latest unchecked offer, then to the held best. Writes the file if it
  // does not hold the result yet.
  void Finish(const Schedule& final_best, const std::string& found_by) {
    StopWriter();
    oracle_threads_ = idle_threads_;
    if (!Verify(final_best, found_by, /*accept_ties=*/true) && pending_) {
      Verify(pending_->schedule, pending_->found_by);
    }
    pending_.reset();
    WriteBest();
  }

  const Schedule& best() const { return best_; }
  Latency best_total() const { return best_total_; }
  int rejected() const { return rejected_; }
  int writes() const { return writes_; }
  // The best schedule with its oracle latencies, as contest JSON.
  const std::string& best_json() const { return best_json_; }

 private:
  struct Pending {
    Schedule schedule;
    Latency claimed_total;
    std::string found_by;
  };

  void WriterLoop() {
    Clock::duration interval = kWriteInterval;
    auto last_write = Clock::now() - interval;
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      const Clock::time_point now = Clock::now();
      if (now >= watchdog_) {
        lock.unlock();
        ExitAtWatchdog();
      }
      if (pending_ && now - last_write >= interval) {
        Pending offer = std::move(*pending_);
        pending_.reset();
        lock.unlock();
        const Clock::time_point checked = Clock::now();
        if (Verify(offer.schedule, offer.found_by) && !output_path_.empty()) {
          WriteBest();
          last_write = Clock::now();
          // On a long graph one oracle check takes tens of milliseconds, on a core the workers
          // share: writes are spaced so that checking takes at most a tenth of the time.
          interval = std::max<Clock::duration>(kWriteInterval, (last_write - checked) * 10);
        }
        lock.lock();
        continue;
      }
      Clock::time_point wake_at = watchdog_;
      if (pending_) wake_at = std::min(wake_at, last_write + interval);
      wake_.wait_until(lock, wake_at);  // Offer and StopWriter notify; spurious wakeups loop
    }
  }

  // The search has not returned although the time is nearly up (a worker stuck in a long
  // step): deliver the best checked schedule and end the process without waiting for it, so
  // that the promise "done before --time" holds whatever the search does.
  [[noreturn]] void ExitAtWatchdog() {
    std::optional<Pending> offer;
    {
      std::lock_guard lock(mutex_);
      offer = std::move(pending_);
      pending_.reset();
    }
    if (offer) Verify(offer->schedule, offer->found_by);
    WriteBest();
    if (output_path_.empty()) {
      std::fputs(best_json_.c_str(), stdout);
      std::fflush(stdout);
    }
    console_.Finish();
    console_.Line("annealer: the search did not stop by its deadline; exiting with the best schedule "
                  "checked so far (" + Grouped(best_total_) + ")", true);
    std::_Exit(write_failed_ ? 1 : 0);
  }

  // Runs the oracle on `schedule`; if it is valid and better than the held best, holds it.
  // Called by one thread at a time (the start, then the writer, then Finish after the join).
  bool Verify(const Schedule& schedule, const std::string& found_by, bool accept_ties = false) {
    if (has_best_ && schedule.subgraphs == best_.subgraphs) return true;  // checked and held already
    Evaluation evaluation;
    try {
      evaluation = EvaluateOracle(problem_, schedule, oracle_threads_);
    } catch (const std::exception& error) {
      ++rejected_;
      console_.Line("annealer: BUG: the oracle failed on a schedule found by " + found_by + ": " +
                        error.what() + "; keeping the previous best",
                    true);
      return false;
    }
    if (!evaluation.ok()) {
      ++rejected_;
      console_.Line("annealer: BUG: the oracle rejects a schedule found by " + found_by + " (" +
                        evaluation.violation.Message() + "); keeping the previous best",
                    true);
      return false;
    }
    const bool better = !has_best_ || evaluation.total < best_total_ ||
                        (accept_ties && evaluation.total == best_total_);
    if (!better) return false;
    best_ = schedule;
    std::vector<double> latencies;
    for (const SubgraphReport& report : evaluation.subgraphs) latencies.push_back(report.latency);
    best_.reported_latencies = std::move(latencies);
    best_total_ = evaluation.total;
    best_json_ = ScheduleToJson(best_, *best_.reported_latencies);
    has_best_ = true;
    written_current_ = false;
    return true;
  }

  void WriteBest() {
    if (output_path_.empty() || !has_best_ || written_current_) return;
    try {
      WriteFileAtomic(output_path_, best_json_);
      written_current_ = true;
      ++writes_;
    } catch (const std::exception& error) {
      console_.Line(std::string("annealer: ") + error.what(), true);
      write_failed_ = true;
    }
  }

 public:
  bool write_failed() const { return write_failed_; }
  bool has_best() const { return has_best_; }

 private:
  const Problem& problem_;
  const std::string output_path_;
  Console& console_;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<Pending> pending_;  // guarded by mutex_
  bool stopping_ = false;           // guarded by mutex_
  Clock::time_point watchdog_;      // set before the writer starts
  std::thread writer_;

  // Owned by whichever thread verifies (never two at once, see Verify).
  Schedule best_;
  Latency best_total_ = 0;
  std::string best_json_;
  bool has_best_ = false;
  bool written_current_ = false;
  bool write_failed_ = false;
  int idle_threads_ = 1;
  int oracle_threads_ = 1;  // of the check running now (Verify is called by one thread at a time)
  int rejected_ = 0;
  int writes_ = 0;
};

std::string Seconds(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f s", seconds);
  return buffer;
}

std::string GapText(Latency total, Latency bound) {
  if (bound <= 0) return "n/a";
  return Percent((total - bound) / bound);
}

}  // namespace

int RunSearchCommand(int argc, char** argv) {
  const Clock::time_point start = Clock::now();
  InstallStopHandlers();

  Options options;
  try {
    options = ParseOptions(argc, argv);
  } catch (const UsageError& error) {
    std::fprintf(stderr, "annealer: %s\n(run `annealer --help` for usage)\n", error.what());
    return 2;
  }
  if (options.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (options.print_config_markdown) {
    std::fputs(FormatConfigMarkdown().c_str(), stdout);
    return 0;
  }
  SearchParams params;
  try {
    params = BuildParams(options);
  } catch (const ConfigError& error) {
    std::fprintf(stderr, "annealer: %s\n", error.what());
    return 2;
  }
  if (options.print_config) {
    std::fputs(FormatConfigYaml(params).c_str(), stdout);
    return 0;
  }

  Problem problem;
  try {
    problem = ReadProblemFile(options.problem_path);
  } catch (const InputError& error) {
    std::fprintf(stderr, "annealer: %s\n", error.what());
    return 1;
  }

  const milliseconds time = options.time.value_or(kDefaultTime);

  Console console(options.quiet);
  bool log_failed = false;
  BestKeeper keeper(problem, options.output_path, console);
  // Computed once the baseline is on disk: on a 10,000-op graph it takes half a second, which
  // the first file must not wait for.
  LowerBound bound;
  Latency lower_bound = 0;

  std::optional<RunLogWriter> run_log;
  if (!options.log_path.empty()) {
    try {
      run_log.emplace(options.log_path);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "annealer: %s\n", error.what());
      return 1;
    }
  }
  // Only strictly better totals are logged, so the log reads as the best-so-far curve.
  std::optional<Latency> logged_best;
  const auto log_improvement = [&](Latency total, const std::string& found_by) {
    if (!run_log || (logged_best && !(total < *logged_best))) return;
    logged_best = total;
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (!run_log->Append({seconds, total, found_by, lower_bound})) {
      console.Line("annealer: cannot write the log " + options.log_path +
                       "; the run goes on without it",
                   true);
      run_log.reset();
      log_failed = true;
    }
  };

  const int threads = params.threads > 0 ? params.threads
                                         : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  keeper.set_idle_threads(threads);

  // Anytime: a valid schedule exists on disk before the search begins.
  Clock::duration check_time{};
  try {
    // Through a cache of its own: a deep graph's repeated layers are priced once.
    CostCache baseline_cache(1 << 16);
    const Schedule baseline = BuildBaseline(problem, &baseline_cache);
    const Clock::time_point check_start = Clock::now();
    const bool accepted = keeper.AcceptNow(baseline, "baseline");
    check_time = Clock::now() - check_start;
    // The writer checks on one thread during the search: what the margins below allow for.
    if (baseline.subgraphs.size() >= kOracleThreadsFrom) check_time *= threads;
    if (!accepted) {
      std::fprintf(stderr, "annealer: %s: the baseline schedule fails the oracle (see above)\n",
                   options.problem_path.c_str());
      return 1;
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "annealer: %s: no valid start schedule: %s\n", options.problem_path.c_str(),
                 error.what());
    return 1;
  }
  if (keeper.write_failed()) return 1;
  // Built once for the bound shown and the exact solver's heuristic.
  auto bound_model = std::make_shared<BoundModel>();
  bound = ComputeLowerBound(problem, bound_model.get());
  lower_bound = bound.total();
  log_improvement(keeper.best_total(), "baseline");

  // Room after the search for RunSearch to return (measured: within 10 ms), the last oracle
  // check, the write and the process exit. The check and the write took check_time on the
  // baseline: 2 ms on 100 ops, but a quarter of a second on 10,000, and a fused schedule's
  // check takes longer, and the writer may be checking one when the search ends; hence four.
  const Clock::duration margin = std::clamp<Clock::duration>(time / 40, milliseconds(50), milliseconds(200)) +
                                 4 * check_time;
  const Clock::time_point deadline = start + time - std::min<Clock::duration>(margin, time);
  // Last resort if the search overruns its deadline: leaves time for one oracle check, the
  // write and the exit.
  const Clock::time_point watchdog =
      start + time - std::clamp<Clock::duration>(time / 100, milliseconds(20), milliseconds(80)) - 2 * check_time;

  console.Line("annealer: " + options.problem_path + ": " + std::to_string(problem.ops.size()) + " ops, " +
               std::to_string(problem.tensors.size()) + " tensors; lower bound " + Grouped(lower_bound) +
               " (compute " + Grouped(bound.compute) + ", traffic " + Grouped(bound.traffic) +
               ", combined " + Grouped(bound.combined) + "); baseline " + Grouped(keeper.best_total()) + "; searching for " +
               Seconds(std::chrono::duration<double>(deadline - start).count()) + " on " +
               std::to_string(threads) + (threads == 1 ? " thread" : " threads") +
               (params.deterministic ? " (deterministic)" : ""));

  Clock::time_point last_log = start;
  SearchCallbacks callbacks;
  callbacks.on_improvement = [&](const Schedule& schedule, Latency total, const std::string& found_by) {
    keeper.Offer(schedule, total, found_by);
    log_improvement(total, found_by);
  };
  callbacks.on_progress = [&](const SearchProgress& progress) {
    const Clock::time_point now = Clock::now();
    if (!console.terminal() && now - last_log < kLogInterval) return;
    last_log = now;
    char elapsed[32];
    std::snprintf(elapsed, sizeof elapsed, "%6.1fs", progress.elapsed_seconds);
    console.Status(std::string("[") + elapsed + "] best " + Grouped(progress.best_total) + "  gap " +
                   GapText(progress.best_total, lower_bound) + "  " + Compact(progress.moves_per_second) +
                   " moves/s  cache hits " + Percent(progress.cache_hit_rate) + "  epoch " +
                   std::to_string(progress.epoch));
  };

  keeper.StartWriter(watchdog);
  SearchSummary summary;
  std::string failure;
  try {
    summary = RunSearch(problem, params, deadline, g_stop_requested, callbacks, bound_model);
  } catch (const std::exception& error) {
    failure = error.what();
  }
  if (failure.empty()) {
    keeper.Finish(summary.best, "the search's final best");
  } else {
    keeper.Finish(keeper.best(), "baseline");
  }
  console.Finish();
  if (options.output_path.empty()) {
    std::fputs(keeper.best_json().c_str(), stdout);  // ends with a newline
    std::fflush(stdout);
  }

  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  if (!failure.empty()) {
    console.Line("annealer: the search failed: " + failure + "; kept the best valid schedule found (" +
                     Grouped(keeper.best_total()) + ")",
                 true);
  } else {
    std::string moves_per_second;
    // Per second of the workers' time: the constructive starts make no moves.
    if (summary.search_seconds > 0) {
      moves_per_second = ", " + Compact(static_cast<double>(summary.moves) / summary.search_seconds) + " moves/s";
    }
    console.Line("annealer: best " + Grouped(keeper.best_total()) + " (lower bound " + Grouped(lower_bound) +
                 ", gap " + GapText(keeper.best_total(), lower_bound) + ") after " + Seconds(elapsed) + ": " +
                 std::to_string(summary.epochs) + " epochs, " + Compact(static_cast<double>(summary.moves)) +
                 " moves" + moves_per_second + ", cache hits " + Percent(summary.cache_hit_rate) +
                 (g_stop_requested.load() ? "; stopped by a signal" : ""));
    std::string kinds;
    for (const auto& [kind, count] : summary.improvements_by_kind) {
      const auto gain = summary.gain_by_kind.find(kind);
      kinds += (kinds.empty() ? "" : ", ") + kind + " " + std::to_string(count);
      if (gain != summary.gain_by_kind.end() && gain->second != 0) kinds += " (-" + Grouped(gain->second) + ")";
    }
    if (!kinds.empty()) console.Line("annealer: improvements by worker kind: " + kinds);
    if (summary.deterministic_cut && !g_stop_requested.load()) {
      console.Line("annealer: warning: the deterministic run ran out of time after " + std::to_string(summary.epochs) +
                       (params.max_epochs > 0 ? " of " + std::to_string(params.max_epochs) : std::string()) +
                       " epochs, so its result depends on this machine's speed; for a reproducible result give it "
                       "more --time or a smaller max_epochs",
                   true);
    }
    // The bound holds for every valid schedule (eval/bounds.h), so meeting it (to the rounding
    // of sums taken in another order) proves the best optimal, with no family attached.
    if (lower_bound > 0 && keeper.best_total() <= lower_bound * (1 + 1e-9)) {
      console.Line("annealer: the best schedule is optimal: it meets the lower bound, which no valid schedule beats");
    }
    if (summary.repeats) {
      const RepeatResult& r = *summary.repeats;
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%.2f s", r.seconds);
      std::string line = "annealer: repeated-block start (" + std::string(seconds) + "): " + std::to_string(r.blocks) +
                         " blocks in " + std::to_string(r.classes) + (r.classes == 1 ? " class" : " classes") + ", " +
                         std::to_string(r.repeated_blocks) + " repeated (largest class " +
                         std::to_string(r.largest_class) + " x " + std::to_string(r.block_ops) + " ops)";
      if (r.total > 0) line += "; composed schedule " + Grouped(r.total);
      if (!r.note.empty()) line += "; " + r.note;
      console.Line(line);
    }
    if (summary.exact) {
      const ExactResult& exact = *summary.exact;
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%.2f s", exact.seconds);
      const std::string figures = std::string(seconds) + ", " + std::to_string(exact.states) + " states";
      if (exact.status == ExactStatus::kOptimal) {
        if (keeper.best_total() < exact.total * (1 - 1e-9)) {
          console.Line("annealer: exact solver: no schedule of its family beats " + Grouped(exact.total) +
                       " (proven in " + figures + "); the best, " + Grouped(keeper.best_total()) +
                       ", lies outside it. Family: " + exact.family);
        } else {
          console.Line("annealer: the best schedule is optimal within the exact solver's family (proven in " +
                       figures + "): " + exact.family);
        }
      } else {
        console.Line("annealer: exact solver: no proof within its share of the budget (" + figures +
                     ", stopped by " + exact.stop_reason + ")");
      }
    }
  }
  if (keeper.rejected() > 0) {
    console.Line("annealer: BUG: " + std::to_string(keeper.rejected()) +
                     " schedule(s) reported by the search failed the oracle and were dropped",
                 true);
  }
  if (const std::vector<int> partial = SubgraphsWithPartialEdgeTiles(problem, keeper.best());
      !partial.empty()) {
    console.Line("annealer: note: " + PartialEdgeTilesNote(partial));
  }
  if (!options.output_path.empty() && !keeper.write_failed()) {
    console.Line("annealer: wrote " + options.output_path + " (" + std::to_string(keeper.writes()) +
                 (keeper.writes() == 1 ? " write)" : " writes)"));
  }
  if (keeper.write_failed() || log_failed) return 1;
  return failure.empty() ? 0 : 1;
}

const char* SearchCommandUsage() { return kUsage; }

}  // namespace annealer
