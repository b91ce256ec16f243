// What a search reports (progress, improvements, its summary) and how a search is run from
// inside another: the types shared by the driver (search/driver.h) and the starts it runs, which
// must not include the driver that includes them.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "search/exact/exact_result.h"
#include "search/params.h"

namespace annealer {

// What the repeated-block start (search/repeats/repeats.h) did, in SearchSummary::repeats: filled
// by the driver, printed by the search command.
struct RepeatResult {
  bool pieces = false;      // the piece start (search/repeats/pieces.h): the blocks are pieces
  int blocks = 0;           // blocks the graph was cut into (repeated ones and the rest)
  int classes = 0;          // distinct blocks up to isomorphism (each solved once)
  int repeated_blocks = 0;  // blocks whose class occurs at least twice
  int largest_class = 0;    // occurrences of the most frequent class
  int block_ops = 0;        // ops of one block of the most frequent class
  double seconds = 0;       // detection, the sub-searches and the composition
  // What is proven of the classes' schedules, each as a standalone block (its inputs in slow
  // memory, its outputs written, nothing retained across its boundary): `bound_met` meet the
  // block's own lower bound (optimal outright), `exact_optimal` more were proven optimal within
  // the exact solver's family (docs/exact-solver.md). When every class is one or the other, the
  // composed schedule is optimal among the schedules that keep block boundaries, within that
  // family; nothing is claimed about schedules that fuse or retain across them.
  int bound_met = 0;
  int exact_optimal = 0;
  // The block proofs after the composition (the exact solver on each class still unproven, in
  // place of the solver on the whole graph): runs, their states, their time.
  int proof_runs = 0;
  int proof_too_large = 0;  // unproven classes of more ops than exact.max_subgraph_ops: not tried
  int64_t proof_states = 0;
  double proof_seconds = 0;
  int64_t moves = 0;        // moves of the sub-searches
  // It ran alongside the workers' first epochs (SearchSummary::setup_seconds), not before them.
  bool overlapped = false;
  // The rounds (search/repeats/rounds.h): compositions made (1 without further rounds), the
  // round the workers walk from, and the first round's and that round's totals after the
  // passes a new best gets (0 when nothing was composed).
  int rounds = 0;
  int chosen_round = 0;
  Latency polished_first = 0;
  Latency polished = 0;
  // The composed schedule's total (the evaluator's, = the sum of the blocks' totals), before the
  // passes: of the round taken (`chosen_round`'s, the one the workers walk from), and of round 1.
  // 0 when no schedule was composed (`note` then says why). `bound_met` and `exact_optimal` count
  // the proofs of the round taken (a later round keeps round 1's proven classes and may prove
  // more).
  Latency total = 0;
  Latency total_first = 0;
  // Phase ties (search/repeats/repeats.h, step 6): the other partitions kept, the classes only
  // they have (counted in `classes`), and the cheapest chain of blocks as composed in the round
  // taken, when it is not the chosen partition (else 0).
  int alternatives = 0;
  int alternative_classes = 0;
  // The classes that have a schedule in the round taken: the chosen partition's, and the
  // alternatives' once a later round has searched them (round 1 leaves them to later rounds).
  // The proof counts above are out of these.
  int searched_classes = 0;
  Latency chain_total = 0;
  std::string note;
};

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

// A search of another problem from inside a search: the repeated-block start's nested search of
// each block class (search/repeats/repeat_start.h). The driver passes RunSearch down as this, so
// the starts it runs call it back without including it.
using NestedSearch = std::function<SearchSummary(
    const Problem& problem, const SearchParams& params, std::chrono::steady_clock::time_point deadline,
    const std::atomic<bool>& stop, const SearchCallbacks& callbacks, const std::vector<Schedule>& starts)>;

}  // namespace annealer
