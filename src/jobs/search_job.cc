#include "src/jobs/search_job.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "eval/cost/cost_cache.h"
#include "eval/oracle.h"
#include "search/starts/baseline.h"
#include "search/starts/constructive.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"
#include "src/io/yaml/config.h"
#include "src/io/contest/schedule_io.h"
#include "src/io/text_format.h"

namespace annealer {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The output file is replaced at most this often while the search improves.
constexpr milliseconds kWriteInterval{250};

// The best schedule that passed the oracle, and the file that holds it.
//
// The search reports improvements through Offer (serialized, from a search thread); it only
// stores the latest one, so the search never waits for the oracle or the disk. A writer thread
// checks the latest offer with the oracle and replaces the file at most every kWriteInterval.
// Every schedule that reaches the file or stdout has passed EvaluateOracle; one that fails is
// reported as a bug and dropped (the previous best stays).
class BestKeeper {
 public:
  BestKeeper(const Problem& problem, std::string output_path, const SearchJobHooks& hooks)
      : problem_(problem), output_path_(std::move(output_path)), hooks_(hooks) {}

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
  // nullopt: no watchdog (the caller waits for the search whatever it takes).
  void StartWriter(std::optional<Clock::time_point> watchdog) {
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
      if (watchdog_ && now >= *watchdog_) {
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
      Clock::time_point wake_at = watchdog_ ? *watchdog_ : now + std::chrono::seconds(1);
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
    if (hooks_.finish_status) hooks_.finish_status();
    Say("annealer: the search did not stop by its deadline; exiting with the best schedule "
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
      Say("annealer: BUG: the oracle failed on a schedule found by " + found_by + ": " +
                        error.what() + "; keeping the previous best",
                    true);
      return false;
    }
    if (!evaluation.ok()) {
      ++rejected_;
      Say("annealer: BUG: the oracle rejects a schedule found by " + found_by + " (" +
                        evaluation.violation.Message() + "); keeping the previous best",
                    true);
      return false;
    }
    const bool better = !has_best_ || evaluation.total < best_total_ ||
                        (accept_ties && evaluation.total == best_total_);
    if (!better) return false;
    best_ = schedule;
    best_.reported_latencies = SubgraphLatencies(evaluation);
    best_total_ = evaluation.total;
    best_json_ = ScheduleToJson(best_, *best_.reported_latencies);
    has_best_ = true;
    written_current_ = false;
    return true;
  }

  void Say(const std::string& line, bool always) const {
    if (hooks_.message) hooks_.message(line, always);
  }

  void WriteBest() {
    if (output_path_.empty() || !has_best_ || written_current_) return;
    try {
      WriteFileAtomic(output_path_, best_json_);
      written_current_ = true;
      ++writes_;
    } catch (const std::exception& error) {
      Say(std::string("annealer: ") + error.what(), true);
      write_failed_ = true;
    }
  }

 public:
  bool write_failed() const { return write_failed_; }
  bool has_best() const { return has_best_; }

 private:
  const Problem& problem_;
  const std::string output_path_;
  const SearchJobHooks& hooks_;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<Pending> pending_;  // guarded by mutex_
  bool stopping_ = false;           // guarded by mutex_
  std::optional<Clock::time_point> watchdog_;  // set before the writer starts
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

}  // namespace

SearchParams BuildSearchParams(const std::vector<std::string>& config_files,
                               const std::vector<std::pair<std::string, std::string>>& overrides) {
  SearchParams params;
  for (const std::string& file : config_files) ApplyYamlFile(file, params);
  for (const auto& [option, assignment] : overrides) {
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

int SearchThreads(const SearchParams& params) {
  return params.threads > 0 ? params.threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

SearchJobResult RunSearchJob(const Problem& problem, const SearchParams& params,
                             const SearchJobOptions& options, const std::atomic<bool>& stop,
                             const SearchJobHooks& hooks) {
  const Clock::time_point start = options.start;
  const milliseconds time = options.time;
  SearchJobResult result;
  result.threads = SearchThreads(params);
  const int threads = result.threads;
  BestKeeper keeper(problem, options.output_path, hooks);
  keeper.set_idle_threads(threads);
  // Computed once the baseline is on disk: on a 10,000-op graph it takes half a second, which
  // the first file must not wait for.
  Latency lower_bound = 0;

  // Only strictly better totals are logged, so the log reads as the best-so-far curve.
  std::optional<Latency> logged_best;
  const auto log_improvement = [&](Latency total, const std::string& found_by) {
    if (logged_best && !(total < *logged_best)) return;
    logged_best = total;
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    result.log.push_back({seconds, total, found_by, lower_bound});
    if (hooks.on_log) hooks.on_log(result.log.back());
  };

  // Anytime: a valid schedule exists on disk before the search begins.
  Clock::duration check_time{};
  bool accepted = false;
  try {
    // Through a cache of its own: a deep graph's repeated layers are priced once.
    CostCache baseline_cache(1 << 16);
    const Schedule baseline = BuildBaseline(problem, &baseline_cache);
    const Clock::time_point check_start = Clock::now();
    accepted = keeper.AcceptNow(baseline, "baseline");
    check_time = Clock::now() - check_start;
    // The writer checks on one thread during the search: what the margins below allow for.
    if (baseline.subgraphs.size() >= kOracleThreadsFrom) check_time *= threads;
  } catch (const std::exception& error) {
    throw SearchJobError(options.name + ": no valid start schedule: " + error.what());
  }
  if (!accepted) throw SearchJobError(options.name + ": the baseline schedule fails the oracle (see above)");
  if (keeper.write_failed()) throw SearchJobError("");  // reported through hooks.message
  // Built once for the bound shown and the exact solver's heuristic.
  auto bound_model = std::make_shared<BoundModel>();
  result.bound = ComputeLowerBound(problem, bound_model.get());
  lower_bound = result.bound.total();
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

  if (hooks.on_start) hooks.on_start({result.bound, keeper.best_total(), deadline, threads});

  SearchCallbacks callbacks;
  callbacks.on_improvement = [&](const Schedule& schedule, Latency total, const std::string& found_by) {
    keeper.Offer(schedule, total, found_by);
    log_improvement(total, found_by);
  };
  if (hooks.on_progress) callbacks.on_progress = hooks.on_progress;

  keeper.StartWriter(options.exit_at_watchdog ? std::optional(watchdog) : std::nullopt);
  try {
    result.summary = RunSearch(problem, params, deadline, stop, callbacks, bound_model);
  } catch (const std::exception& error) {
    result.failure = error.what();
  }
  if (result.failure.empty()) {
    keeper.Finish(result.summary.best, "the search's final best");
  } else {
    keeper.Finish(keeper.best(), "baseline");
  }
  result.stopped = stop.load();
  result.best = keeper.best();
  result.total = keeper.best_total();
  result.best_json = keeper.best_json();
  result.rejected = keeper.rejected();
  result.writes = keeper.writes();
  result.write_failed = keeper.write_failed();
  result.elapsed_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

BaselineResult BuildBaselineSchedule(const Problem& problem, BaselineKind kind, const std::string& name) {
  CostCache cache(1 << 16);  // a deep graph's repeated layers are priced once
  BaselineResult result;
  try {
    result.schedule = kind == BaselineKind::kResident ? BuildResidentBaseline(problem, &cache)
                                                      : BuildBaseline(problem, &cache);
  } catch (const std::runtime_error& error) {
    throw SearchJobError(name + ": no valid baseline: " + error.what());
  }
  if (kind == BaselineKind::kGreedy) {
    // The search's first constructive start alone: merges of producer/consumer pairs while a
    // merge lowers the latency (what a fusing compiler does without search).
    const SubgraphPricer pricer(problem, &cache);
    result.schedule = GreedyFusion(problem, pricer, result.schedule, [] { return false; });
  }
  const Evaluation evaluation = EvaluateOracle(problem, result.schedule);
  if (!evaluation.ok()) {
    throw std::logic_error("internal error: the baseline schedule is invalid: " + evaluation.violation.Message());
  }
  result.schedule.reported_latencies = SubgraphLatencies(evaluation);
  result.total = evaluation.total;
  for (const Subgraph& subgraph : result.schedule.subgraphs) result.retained += subgraph.retain.size();
  return result;
}

bool MeetsLowerBound(const SearchJobResult& result) {
  const Latency bound = result.bound.total();
  return bound > 0 && result.total <= bound * (1 + 1e-9);
}

bool OptimalWithinFamily(const SearchJobResult& result) {
  const std::optional<ExactResult>& exact = result.summary.exact;
  return exact && exact->status == ExactStatus::kOptimal && !(result.total < exact->total * (1 - 1e-9));
}

std::optional<std::string> OptimalityProof(const SearchJobResult& result) {
  if (MeetsLowerBound(result)) return "optimal: meets the lower bound, which no valid schedule beats";
  if (OptimalWithinFamily(result)) return "optimal within family " + result.summary.exact->family;
  return std::nullopt;
}

}  // namespace annealer
