// The parallel search: constructive starts seed a shared elite pool, then SA and GA workers run
// on oneTBB until the deadline, the stop flag or the work budget. Each worker owns an
// IncrementalEvaluator over one shared CostCache; only the elite pool and the cache are shared.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "eval/bound/bounds.h"
#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "search/exact/exact_result.h"
#include "search/params.h"
#include "search/repeats/repeat_result.h"

namespace annealer {

struct SearchProgress {
  double elapsed_seconds = 0;
  Latency best_total = 0;
  int64_t moves = 0;
  double moves_per_second = 0;  // over the workers' time (SearchSummary::worker_seconds)
  double cache_hit_rate = 0;
  int epoch = 0;
};

struct SearchCallbacks {
  // Serialized (never two at once), each strictly better than the last; `found_by` = worker
  // kind ("sa", "ga", "greedy-fusion", "pattern", "baseline", "polish", ...).
  std::function<void(const Schedule&, Latency total, const std::string& found_by)> on_improvement;
  std::function<void(const SearchProgress&)> on_progress;  // about every progress_interval s
  // Once, when the exact solver has run (before the workers start).
  std::function<void(const ExactResult&)> on_exact;
};

struct SearchSummary {
  Schedule best;
  Latency best_total = 0;
  int64_t moves = 0;
  double search_seconds = 0;  // time the workers ran (after the constructive starts)
  // Time from the call to the first epoch of the workers (the starts that ran before them).
  double setup_seconds = 0;
  // The workers' thread-seconds over the thread count: search_seconds less the share of the
  // threads the overlapped starts had. moves / worker_seconds = the moves per second of the
  // search on the whole graph at all threads.
  double worker_seconds = 0;
  // The CPU time of the workers' epochs on their threads (each epoch's thread CPU clock), summed
  // over the workers. moves / worker_cpu_seconds is a worker's moves per CPU-second, which does
  // not depend on what else shares the cores (the starts running beside the workers, other
  // jobs); threads x that is the rate of the search if its workers had every thread to
  // themselves.
  double worker_cpu_seconds = 0;
  double cache_hit_rate = 0;
  std::map<std::string, int> improvements_by_kind;
  std::map<std::string, Latency> gain_by_kind;
  int epochs = 0;
  // Deterministic mode only: the deadline or the stop flag ended the workers before their work
  // budget (max_epochs; 0 = none), so the last epoch was cut where the clock said and the result
  // is not reproducible.
  bool deterministic_cut = false;
  // The exact solver's run (exact.time_share > 0): its status and family; when it completed
  // (optimal), no schedule of its family beats the search's best.
  std::optional<ExactResult> exact;
  // The repeated-block start's run, when it ran (a graph of at least repeats.min_ops ops in
  // which repeated blocks hold most ops, and repeats.time_share > 0).
  std::optional<RepeatResult> repeats;
  // The elite pool's schedules at the end, best first: where a later search may go on from
  // (`starts` of RunSearch; the rounds of the repeated-block start, repeats.round_continue).
  std::vector<Schedule> elite;
};

// After the constructive starts, the repeated-block start (search/repeats/repeats.h): when most of a
// graph of at least repeats.min_ops ops is made of repeated blocks, one block per class is
// solved by a nested RunSearch on it as a standalone problem (within repeats.time_share of the
// time the starts left, shared among the classes by ops x sqrt(occurrences); deterministic
// mode: within repeats.deterministic_epochs epochs per class, whatever the clock; a class ends
// early when its schedule meets the block's lower bound or its exact solver completes), and
// the composed schedule is offered to the pool as kind "repeat". Graphs where nothing repeats pay only the detection.
// Once composed, the block proofs run in place of the exact solver on the whole graph: the exact
// solver on each class not yet proven, smallest first, its schedule as the incumbent (within
// repeats.proof_share of the budget; deterministic mode: repeats.proof_states states per
// class); a class it beats takes the solver's schedule and the blocks are composed and offered
// again. RepeatResult counts what is proven.
// Otherwise the exact solver (search/exact/exact.h) runs
// with the pool's best as its incumbent, within exact.time_share of the budget (skipped when
// that is under 50 ms; deterministic
// mode: within exact.deterministic_states states, whatever the clock); only a completed run
// (status optimal) offers its schedule to the pool, as kind "exact".
// Both run before the workers, except in free mode with 2+ threads on a graph of at least
// repeats.min_ops ops where some blocks repeat (repeats.overlap; the plan is found first, on the
// calling thread): there they run on a thread of their own beside the
// workers' epochs, and the first epoch starts right after the constructive starts
// (setup_seconds). Until the repeated-block start ends only the first worker runs; at the next
// epoch boundary after it, the pool becomes the constructive starts and the composed schedule
// (ElitePool::Restart; the lone worker's best stays the search's best), the workers rebase on
// them (Worker::Rebase) and all run, beside the block proofs or the exact solver if they still run. Its result joins
// the pool at the epoch boundary after it ends.
// Returns within ~50 ms after `deadline` or `stop`. The best schedule is always valid (its
// committed Candidate was valid). Throws std::runtime_error when no valid start exists or a
// worker failed (the worker's exception is rethrown after all workers joined).
// `bound_model`: the problem's bound model when the caller has built it (ComputeLowerBound
// fills one), for the exact solver's heuristic; null: the solver builds it.
// `starts`: schedules offered to the pool after the baseline, before the constructive starts
// (kind "continued"; an invalid one is dropped), e.g. an earlier search's `elite`.
SearchSummary RunSearch(const Problem& problem, const SearchParams& params,
                        std::chrono::steady_clock::time_point deadline,
                        const std::atomic<bool>& stop, const SearchCallbacks& callbacks,
                        std::shared_ptr<const BoundModel> bound_model = nullptr,
                        const std::vector<Schedule>& starts = {});

}  // namespace annealer
