// The parallel search: constructive starts seed a shared elite pool, then SA and GA workers run
// on oneTBB until the deadline, the stop flag or the work budget. Each worker owns an
// IncrementalEvaluator over one shared CostCache; only the elite pool and the cache are shared.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "eval/bound/bounds.h"
#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "search/params.h"
#include "search/search_summary.h"

namespace annealer {

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
