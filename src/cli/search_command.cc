#include "src/cli/search_command.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "eval/bound/bounds.h"
#include "eval/model/subgraph_structure.h"
#include "search/driver.h"
#include "search/exact/exact_result.h"
#include "search/search_summary.h"
#include "src/io/yaml/config.h"
#include "src/io/json_fields.h"
#include "src/import/model_source.h"
#include "src/import/onnx_graph.h"
#include "src/io/contest/problem_reader.h"
#include "src/io/run_log.h"
#include "src/jobs/search_job.h"
#include "src/io/text_format.h"

namespace annealer {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Without --time: long enough for a useful search on problems of the contest's size, short
// enough for an interactive run.
constexpr milliseconds kDefaultTime{10000};
// Without a terminal, one progress line per this many milliseconds.
constexpr milliseconds kLogInterval{2000};

constexpr const char* kUsage =
    "usage: annealer [options] PROBLEM.json [OUT.json]\n"
    "       annealer [options] MODEL.onnx --hardware H [OUT.json]\n"
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
    "  --hardware H       PROBLEM is an ONNX model (MODEL.onnx), imported for the hardware\n"
    "                     profile H: a built-in name (annealer hardware) or a YAML file\n"
    "  --input NAME=DIMS  a dynamic input shape of the model, e.g. input=1x3x224x224\n"
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
  std::optional<std::string> hardware;  // a .onnx problem: the profile
  std::map<std::string, std::vector<int64_t>> inputs;  // a .onnx problem: --input NAME=DIMS
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
    } else if (name == "--hardware") {
      if (options.hardware) throw UsageError("--hardware is given twice");
      options.hardware = value();
    } else if (name == "--input") {
      try {
        auto [input, dims] = ParseInputDims(value());
        if (!options.inputs.emplace(input, dims).second) throw UsageError("--input " + input + " is given twice");
      } catch (const InputError& error) {
        throw UsageError(error.what());
      }
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
    params = BuildSearchParams(options.config_files, options.overrides);
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
    problem = LoadProblem(ProblemSource{options.problem_path, options.hardware, options.inputs, {}}).problem;
  } catch (const InputError& error) {
    std::fprintf(stderr, "annealer: %s\n", error.what());
    return 1;
  }

  const milliseconds time = options.time.value_or(kDefaultTime);

  Console console(options.quiet);
  bool log_failed = false;
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

  SearchJobHooks hooks;
  hooks.message = [&](const std::string& line, bool always) { console.Line(line, always); };
  hooks.finish_status = [&] { console.Finish(); };
  hooks.on_log = [&](const RunLogEntry& entry) {
    if (!run_log) return;
    if (!run_log->Append(entry)) {
      console.Line("annealer: cannot write the log " + options.log_path +
                       "; the run goes on without it",
                   true);
      run_log.reset();
      log_failed = true;
    }
  };
  hooks.on_start = [&](const SearchJobStart& started) {
    const LowerBound& bound = started.bound;
    lower_bound = bound.total();
    const int threads = started.threads;
    console.Line("annealer: " + options.problem_path + ": " + std::to_string(problem.ops.size()) + " ops, " +
                 std::to_string(problem.tensors.size()) + " tensors; lower bound " + Grouped(lower_bound) +
                 " (compute " + Grouped(bound.compute) + ", traffic " + Grouped(bound.traffic) +
                 ", combined " + Grouped(bound.combined) + "); baseline " + Grouped(started.baseline_total) +
                 "; searching for " + Seconds(std::chrono::duration<double>(started.deadline - start).count()) +
                 " on " + std::to_string(threads) + (threads == 1 ? " thread" : " threads") +
                 (params.deterministic ? " (deterministic)" : ""));
  };
  Clock::time_point last_log = start;
  hooks.on_progress = [&](const SearchProgress& progress) {
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

  const SearchJobOptions job{.start = start,
                             .time = time,
                             .name = options.problem_path,
                             .output_path = options.output_path,
                             .exit_at_watchdog = true};
  SearchJobResult result;
  try {
    result = RunSearchJob(problem, params, job, g_stop_requested, hooks);
  } catch (const SearchJobError& error) {
    if (*error.what() != '\0') std::fprintf(stderr, "annealer: %s\n", error.what());
    return 1;
  }
  const SearchSummary& summary = result.summary;
  const std::string& failure = result.failure;
  console.Finish();
  if (options.output_path.empty()) {
    std::fputs(result.best_json.c_str(), stdout);  // ends with a newline
    std::fflush(stdout);
  }

  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  if (!failure.empty()) {
    console.Line("annealer: the search failed: " + failure + "; kept the best valid schedule found (" +
                     Grouped(result.total) + ")",
                 true);
  } else {
    std::string moves_per_second;
    // Per second of the workers' time (the starts before them and the share of the threads the
    // overlapped starts had are not theirs: SearchSummary::worker_seconds).
    if (summary.worker_seconds > 0) {
      moves_per_second = ", " + Compact(static_cast<double>(summary.moves) / summary.worker_seconds) + " moves/s";
      // Per CPU-second of a worker's thread: what the load of the machine and the starts
      // running beside the workers do not change.
      if (summary.worker_cpu_seconds > 0) {
        moves_per_second +=
            " (" + Compact(static_cast<double>(summary.moves) / summary.worker_cpu_seconds) + " per worker CPU-second)";
      }
    }
    console.Line("annealer: best " + Grouped(result.total) + " (lower bound " + Grouped(lower_bound) +
                 ", gap " + GapText(result.total, lower_bound) + ") after " + Seconds(elapsed) + ": " +
                 std::to_string(summary.epochs) + " epochs, " + Compact(static_cast<double>(summary.moves)) +
                 " moves" + moves_per_second + ", cache hits " + Percent(summary.cache_hit_rate) +
                 ", first epoch at " + Seconds(summary.setup_seconds) +
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
    if (MeetsLowerBound(result)) {
      console.Line("annealer: the best schedule is optimal: it meets the lower bound, which no valid schedule beats");
    }
    if (summary.repeats) {
      const RepeatResult& r = *summary.repeats;
      // The phase ties' classes (repeats.phase_alternatives) are searched from round 2 on: the
      // blocks are the chosen partition's, and proofs are counted out of the classes searched.
      const int chosen_classes = r.classes - r.alternative_classes;
      const int searched = std::max(r.searched_classes, chosen_classes);
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%.2f s", r.seconds);
      std::string line = std::string(r.pieces ? "annealer: piece start (" : "annealer: repeated-block start (") +
                         std::string(seconds) +
                         (r.overlapped ? ", beside the workers" : "") + ", " + Compact(static_cast<double>(r.moves)) +
                         " moves): " + std::to_string(r.blocks) +
                         " blocks in " + std::to_string(chosen_classes) + (chosen_classes == 1 ? " class" : " classes") + ", " +
                         std::to_string(r.repeated_blocks) + " repeated (largest class " +
                         std::to_string(r.largest_class) + " x " + std::to_string(r.block_ops) + " ops)";
      if (r.rounds > 1 && r.polished > 0) {
        // The composition the run took (the lowest after the passes), then round 1's.
        line += "; " + std::to_string(r.rounds) + " rounds, the lowest after the passes round " +
                std::to_string(r.chosen_round) + "'s: composed schedule " + Grouped(r.total) + ", " +
                Grouped(r.polished) + " after the passes (round 1's " + Grouped(r.total_first) + ", " +
                Grouped(r.polished_first) + ")";
      } else {
        if (r.total > 0) line += "; composed schedule " + Grouped(r.total);
        if (r.polished > 0) line += " (" + Grouped(r.polished) + " after the passes)";
      }
      if (r.total > 0 && r.bound_met + r.exact_optimal > 0) {
        // What is proven holds for each class as a standalone block (RepeatResult, search/search_summary.h).
        line += "; as standalone blocks, " + std::to_string(r.bound_met + r.exact_optimal) + " of " +
                std::to_string(searched) + (searched == 1 ? " class" : " classes") + " proven optimal (" +
                std::to_string(r.bound_met) + " meet their bound, " + std::to_string(r.exact_optimal) +
                " within the exact solver's family)";
        if (r.bound_met + r.exact_optimal == searched) {
          line += ": the composed schedule is optimal among schedules that keep the block boundaries";
          if (r.exact_optimal > 0) line += ", within that family";
          if (result.total < r.total * (1 - 1e-9)) {
            char below[32];
            std::snprintf(below, sizeof below, "%.1f %%", 100 * (r.total - result.total) / r.total);
            line += "; the best, " + std::string(below) + " below it, fuses or retains across them";
          }
        }
      }
      if (r.proof_runs > 0 || r.proof_too_large > 0) {
        std::snprintf(seconds, sizeof seconds, "%.2f s", r.proof_seconds);
        line += "; block proofs: " + std::to_string(r.proof_runs) + " exact-solver run" +
                (r.proof_runs == 1 ? "" : "s") + " (" + seconds + ", " + std::to_string(r.proof_states) + " states)";
        const int open = searched - r.bound_met - r.exact_optimal - r.proof_too_large;
        if (open > 0) {
          line += ", " + std::to_string(open) + (open == 1 ? " class" : " classes") +
                  " left unproven (more time or repeats.proof_share / repeats.proof_states" +
                  // The block proofs follow round 1; the phase ties' classes are searched later (their
                  // nested searches' own exact solver may still prove them).
                  (searched > chosen_classes ? "; the block proofs run before the phase ties' classes are searched)"
                                             : ")");
        }
        if (r.proof_too_large > 0) {
          line += ", " + std::to_string(r.proof_too_large) + (r.proof_too_large == 1 ? " class" : " classes") +
                  " too large to try (more ops than exact.max_subgraph_ops)";
        }
      }
      if (r.alternatives > 0) {
        line += "; phase ties: " + std::to_string(r.alternatives) + " other partition" +
                (r.alternatives == 1 ? "" : "s") + ", " + std::to_string(r.alternative_classes) +
                " classes of their own";
        if (r.searched_classes <= chosen_classes) {
          line += ", not searched (they are from round 2 on)";
        } else {
          line += r.chain_total > 0
                      ? ", the round taken composed the cheapest chain of blocks at " + Grouped(r.chain_total)
                      : std::string(", the round taken's cheapest chain of blocks the chosen partition's");
        }
      }
      if (!r.note.empty()) line += "; " + r.note;
      console.Line(line);
    }
    if (summary.exact) {
      const ExactResult& exact = *summary.exact;
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%.2f s", exact.seconds);
      const std::string figures = std::string(seconds) + ", " + std::to_string(exact.states) + " states";
      if (exact.status == ExactStatus::kOptimal) {
        if (!OptimalWithinFamily(result)) {
          console.Line("annealer: exact solver: no schedule of its family beats " + Grouped(exact.total) +
                       " (proven in " + figures + "); the best, " + Grouped(result.total) +
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
  if (result.rejected > 0) {
    console.Line("annealer: BUG: " + std::to_string(result.rejected) +
                     " schedule(s) reported by the search failed the oracle and were dropped",
                 true);
  }
  if (const std::vector<int> partial = SubgraphsWithPartialEdgeTiles(problem, result.best);
      !partial.empty()) {
    console.Line("annealer: note: " + PartialEdgeTilesNote(partial));
  }
  if (!options.output_path.empty() && !result.write_failed) {
    console.Line("annealer: wrote " + options.output_path + " (" + std::to_string(result.writes) +
                 (result.writes == 1 ? " write)" : " writes)"));
  }
  if (result.write_failed || log_failed) return 1;
  return failure.empty() ? 0 : 1;
}

const char* SearchCommandUsage() { return kUsage; }

}  // namespace annealer
