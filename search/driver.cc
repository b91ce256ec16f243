#include "search/driver.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <ctime>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <tbb/info.h>
#include <tbb/task_arena.h>

#include "eval/bound/bounds.h"
#include "eval/cost/cost_cache.h"
#include "eval/cost/incremental.h"
#include "eval/cost/pricing_stop.h"
#include "eval/cost/subgraph_cost.h"
#include "search/elite_pool.h"
#include "search/exact/exact.h"
#include "search/moves/moves.h"
#include "search/passes/gather_partials.h"
#include "search/passes/gather_strays.h"
#include "search/passes/merge_refit.h"
#include "search/passes/retain_for_next.h"
#include "search/passes/retain_recomputed.h"
#include "search/passes/serve_every_loader.h"
#include "search/passes/serve_retained.h"
#include "search/repeats/pieces.h"
#include "search/repeats/repeats.h"
#include "search/repeats/rounds.h"
#include "search/starts/baseline.h"
#include "search/starts/constructive.h"
#include "search/starts/layer_chains.h"
#include "search/subgraph_tools.h"
#include "search/task_group.h"
#include "search/workers.h"

namespace annealer {

namespace {

// The piece start's slice per piece in free mode (RunSearch, RunRepeatStart): at least
// kPieceSeconds or none at all, at most kPieceSecondsMax.
constexpr double kPieceSeconds = 0.1;
constexpr double kPieceSecondsMax = 0.15;

// The calling thread's CPU clock (POSIX): what a worker's epoch cost, whatever else ran on the
// cores meanwhile.
int64_t ThreadCpuNanoseconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

using Clock = std::chrono::steady_clock;

// Collects the first exception thrown by any task; rethrown by the driver after the join.
class ErrorSlot {
 public:
  template <typename F>
  void Run(F&& f) {
    try {
      f();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }
  void RethrowIfAny() {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr error_;
};

// The repeated-block start (see driver.h): nullopt when the graph does not qualify or the
// start is off; otherwise what happened, and the composed schedule through `offer`.
// `nested_threads`: the threads of each nested search.
// The repeated blocks the start would solve; empty when it does not apply (no share, a small
// graph) or nothing repeats.
RepeatPlan RepeatStartPlan(const Problem& problem, const SearchParams& params) {
  if (params.repeats.time_share <= 0 || static_cast<int64_t>(problem.ops.size()) < params.repeats.min_ops) {
    return {};
  }
  RepeatOptions options;
  options.max_block_ops = params.repeats.max_block_ops;
  options.min_block_ops = params.repeats.min_block_ops;
  RepeatPlan plan = FindRepeatedBlocks(problem, options);
  if (plan.blocks.empty() && params.repeats.piece_ops > 0) {
    PieceOptions pieces;
    pieces.max_piece_ops = params.repeats.piece_ops;
    pieces.min_piece_ops = std::max<int64_t>(1, params.repeats.piece_ops / 4);
    plan = CutIntoPieces(problem, pieces);
    plan.pieces = !plan.blocks.empty();
  }
  return plan;
}

// What the repeated-block start leaves for its block proofs (ProveRepeatClasses): per class its
// schedule (final retention dropped), total, block bound and what is proven of it.
struct RepeatStart {
  RepeatResult result;
  std::vector<Schedule> schedules;
  std::vector<Latency> totals;
  std::vector<Latency> bounds;
  std::vector<int> proven;  // 0 unproven, 1 meets the block's bound, 2 optimal within the family
  bool composed = false;    // every class solved and the blocks composed into a valid schedule

  // Offers the composition of the classes' schedules and checks its total against their sum.
  bool Compose(const RepeatPlan& plan, const std::function<Candidate(const Schedule&)>& offer) {
    Latency block_sum = 0;
    for (size_t c = 0; c < totals.size(); ++c) block_sum += totals[c] * plan.count[c];
    const Candidate candidate = offer(ComposeBlockSchedules(plan, schedules));
    if (!candidate.valid) {
      result.note = "the composed schedule is invalid (" + candidate.violation.Message() + ")";
      return false;
    }
    result.total = candidate.total;
    // Equal by construction (search/repeats/repeats.h); a difference would be a bug to report.
    if (std::abs(candidate.total - block_sum) > 1e-9 * std::max(1.0, block_sum)) {
      result.note = "its total differs from the blocks' sum " + std::to_string(block_sum);
      return false;
    }
    return true;
  }
  void Count() {
    result.bound_met = static_cast<int>(std::count(proven.begin(), proven.end(), 1));
    result.exact_optimal = static_cast<int>(std::count(proven.begin(), proven.end(), 2));
  }
};

// One round (search/repeats/rounds.h): round `round` (0-based) searches every class anew with its
// round's seeds, between `begun` and `share_end` in free mode, except those `kept` (an earlier
// round, composed) has proven, whose schedules it takes.
std::optional<RepeatStart> RunRepeatStart(const SearchParams& params, const RepeatPlan& plan, int round,
                                          const RepeatStart* kept, Clock::time_point begun, Clock::time_point share_end,
                                          int nested_threads, Clock::time_point deadline,
                                          const std::atomic<bool>& stop,
                                          const std::function<Candidate(const Schedule&)>& offer) {
  if (plan.blocks.empty()) return std::nullopt;
  RepeatStart start;
  RepeatResult& result = start.result;
  std::vector<Schedule>& schedules = start.schedules;
  std::vector<Latency>& class_totals = start.totals;
  std::vector<Latency>& class_bounds = start.bounds;
  std::vector<int>& proven = start.proven;
  result.pieces = plan.pieces;
  result.blocks = static_cast<int>(plan.blocks.size());
  result.classes = static_cast<int>(plan.representative.size());
  result.repeated_blocks = plan.repeated_blocks();
  for (size_t c = 0; c < plan.count.size(); ++c) {
    if (plan.count[c] > result.largest_class) {
      result.largest_class = plan.count[c];
      result.block_ops = static_cast<int>(plan.blocks[plan.representative[c]].sub.op_ids.size());
    }
  }
  // Each class gets a part by its weight and the time a class leaves unused passes to the next.
  // A class's weight: its block's ops times the square root of its count. A repeated block's
  // quality counts once per copy, but a one-off head or tail of as many ops is as hard to
  // solve and still needs a schedule; it gets less, not almost nothing.
  auto weight_of = [&](size_t c) {
    return static_cast<double>(plan.blocks[plan.representative[c]].sub.op_ids.size()) * std::sqrt(plan.count[c]);
  };
  double weight_left = 0;
  for (size_t c = 0; c < plan.count.size(); ++c) weight_left += weight_of(c);
  for (size_t c = 0; c < plan.count.size(); ++c) {
    const Problem& sub = plan.blocks[plan.representative[c]].sub.problem;
    const double weight = weight_of(c);
    if (kept != nullptr && kept->proven[c] != 0) {
      // Proven optimal (as a standalone block, at least within the exact solver's family):
      // another search of it finds nothing better, and its time goes to the others.
      schedules.push_back(kept->schedules[c]);
      class_totals.push_back(kept->totals[c]);
      class_bounds.push_back(kept->bounds[c]);
      proven.push_back(kept->proven[c]);
      weight_left -= weight;
      continue;
    }
    SearchParams nested = params;
    nested.repeats.time_share = 0;  // a block is one period: nothing in it repeats at this scale
    nested.threads = nested_threads;
    nested.seed = RoundSeed(params.seed, round, plan.count.size(), c);
    nested.cache_entries = std::min<int64_t>(params.cache_entries, 1 << 18);
    nested.progress_interval = 0.05;
    Clock::time_point class_deadline = deadline;
    if (params.deterministic) {
      nested.max_epochs = params.repeats.deterministic_epochs;
    } else {
      const Clock::time_point now = Clock::now();
      // Pieces past the share still get a search with no time, which returns as far as its
      // starts got (at least the piece's baseline), so that the others' work is composed: a slice
      // of a few tens of milliseconds is overrun by a nested search's set-up (Inception-v3, 48
      // pieces), and a broken-off piece start had left nothing. The workers do not move to a
      // composition that is behind their best (take_repeats).
      const bool late = now >= share_end;
      if (stop.load(std::memory_order_relaxed) || (late && !plan.pieces)) {
        result.note = "out of time before every block class was solved";
        break;
      }
      class_deadline =
          late ? now : now + std::chrono::duration_cast<Clock::duration>((share_end - now) * (weight / weight_left));
    }
    weight_left -= weight;
    // A block whose schedule meets its lower bound, or that the exact solver solved (optimal
    // within its family), is done: its time passes to the next class and to the workers. (The
    // workers on the whole graph may still find what lies outside the family.) Both are set
    // between phases, never during an epoch, so deterministic runs stay deterministic; the outer
    // stop flag is passed on at the progress calls.
    // A piece's bound is not computed: its slice is a few tens of milliseconds (Inception-v3: 48
    // pieces in 2.3 s), and the bound of one 30-op piece took 0.67 s. (0: no piece is ever
    // taken to meet its bound.)
    const Latency bound = plan.pieces ? 0 : ComputeLowerBound(sub).total();
    std::atomic<bool> nested_stop{stop.load()};
    bool exact_optimal = false;  // the nested exact solver proved its schedule optimal in its family
    SearchCallbacks nested_callbacks;
    nested_callbacks.on_improvement = [&](const Schedule&, Latency total, const std::string&) {
      if (total <= bound * (1 + 1e-9)) nested_stop = true;
    };
    nested_callbacks.on_exact = [&](const ExactResult& exact) {
      if (exact.status == ExactStatus::kOptimal) {
        exact_optimal = true;
        nested_stop = true;
      }
    };
    nested_callbacks.on_progress = [&](const SearchProgress&) {
      if (stop.load(std::memory_order_relaxed)) nested_stop = true;
    };
    SearchSummary solved;
    try {
      solved = RunSearch(sub, nested, class_deadline, nested_stop, nested_callbacks);
    } catch (const std::exception& error) {
      // E.g. no valid start for a block: the graph's own starts stand, the search goes on.
      result.note = std::string("a block class could not be solved: ") + error.what();
      break;
    }
    result.moves += solved.moves;
    schedules.push_back(WithoutFinalRetention(solved.best));
    const Evaluation check = EvaluateFast(sub, schedules.back());
    if (!check.ok()) {
      result.note = "a block's schedule turned invalid without its final retention";
      break;
    }
    class_totals.push_back(check.total);
    class_bounds.push_back(bound);
    // The final retention dropped never adds latency, so a proof of the searched schedule holds
    // for the stored one when their totals agree.
    if (check.total <= bound * (1 + 1e-9)) {
      proven.push_back(1);
    } else if (exact_optimal && check.total <= solved.best_total * (1 + 1e-12)) {
      proven.push_back(2);
    } else {
      proven.push_back(0);
    }
  }
  if (result.note.empty()) start.composed = start.Compose(plan, offer);
  start.Count();
  result.seconds = std::chrono::duration<double>(Clock::now() - begun).count();
  return start;
}

// The block proofs, after the repeated-block start composed its schedule: the exact solver on
// each class not yet proven, with the class's schedule as its incumbent, smallest blocks first
// (they finish soonest), each with all the proof time left (repeats.proof_share of the budget;
// deterministic mode: repeats.proof_states states per class, whatever the clock). A class the
// solver beats takes the solver's schedule and the blocks are composed and offered again. On such
// a graph this replaces the exact solver on the whole graph, which cannot finish there.
void ProveRepeatClasses(const SearchParams& params, const RepeatPlan& plan, RepeatStart& start,
                        Clock::time_point begun, Clock::time_point deadline, const std::atomic<bool>& stop,
                        const std::function<Candidate(const Schedule&)>& offer) {
  if (!start.composed) return;
  const Clock::time_point proofs_begun = Clock::now();
  auto ops_of = [&](size_t c) { return plan.blocks[plan.representative[c]].sub.op_ids.size(); };
  // A block of more ops than a subgraph of the family may hold is left to the search: the family
  // would restrict it, and the solver's first expansion (every connected closed op set a first
  // subgraph can be) does not end on such a block (ViT-B/16's 159-op layer: not one state in 15 s).
  std::vector<size_t> order;
  for (size_t c = 0; c < start.proven.size(); ++c) {
    if (start.proven[c] != 0) continue;
    if (static_cast<int64_t>(ops_of(c)) > params.exact.max_subgraph_ops) {
      ++start.result.proof_too_large;
    } else {
      order.push_back(c);
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ops_of(a) < ops_of(b); });
  const Clock::time_point proofs_end =
      std::min(deadline, proofs_begun + std::chrono::duration_cast<Clock::duration>(
                                            (deadline - begun) * params.repeats.proof_share));
  const bool proofs = params.deterministic ? params.repeats.proof_states > 0 : params.repeats.proof_share > 0;
  bool improved = false;
  for (const size_t c : order) {
    if (!proofs || stop.load(std::memory_order_relaxed) || (!params.deterministic && Clock::now() >= proofs_end)) {
      break;
    }
    const Problem& sub = plan.blocks[plan.representative[c]].sub.problem;
    ExactOptions options;
    options.max_subgraph_ops = static_cast<int>(params.exact.max_subgraph_ops);
    options.max_contexts = params.exact.max_contexts;
    options.incumbent = start.schedules[c];
    options.stop = &stop;
    // A proof cut by the deadline (which only guards the whole search in deterministic mode)
    // counts for nothing.
    options.max_states = params.deterministic ? params.repeats.proof_states : params.exact.max_states;
    options.deadline = params.deterministic ? deadline : proofs_end;
    const ExactResult exact = SolveExact(sub, options);
    ++start.result.proof_runs;
    start.result.proof_states += exact.states;
    if (exact.status != ExactStatus::kOptimal || !exact.best) continue;
    if (exact.found_by_solver && exact.total < start.totals[c] * (1 - 1e-12)) {
      Schedule schedule = WithoutFinalRetention(*exact.best);
      const Evaluation check = EvaluateFast(sub, schedule);
      // Dropping a final retention never makes a schedule invalid or dearer; if it did, the
      // class keeps its schedule and nothing is claimed for it.
      if (!check.ok() || check.total > exact.total * (1 + 1e-12)) continue;
      start.schedules[c] = std::move(schedule);
      start.totals[c] = check.total;
      improved = true;
    }
    start.proven[c] = start.totals[c] <= start.bounds[c] * (1 + 1e-9) ? 1 : 2;
  }
  if (improved) start.composed = start.Compose(plan, offer);
  start.Count();
  start.result.proof_seconds = std::chrono::duration<double>(Clock::now() - proofs_begun).count();
}


}  // namespace

SearchSummary RunSearch(const Problem& problem, const SearchParams& given, Clock::time_point deadline,
                        const std::atomic<bool>& stop, const SearchCallbacks& callbacks,
                        std::shared_ptr<const BoundModel> bound_model) {
  if (const std::string error = ValidateParams(given); !error.empty()) {
    throw std::invalid_argument("search parameters: " + error);
  }
  const SearchParams params = ResolveAuto(given, problem);
  const Clock::time_point started = Clock::now();
  const int threads = params.threads > 0 ? params.threads : std::max(1, tbb::info::default_concurrency());
  tbb::task_arena arena(threads);

  const std::vector<int> rank = TopologicalRanks(problem);
  std::unique_ptr<CostCache> cache;
  if (params.cache_entries > 0) cache = std::make_unique<CostCache>(static_cast<std::size_t>(params.cache_entries));
  SubgraphPricer pricer(problem, cache.get());
  const std::function<bool()> stopped = [&] { return stop.load(std::memory_order_relaxed) || Clock::now() >= deadline; };
  ElitePool pool(params.pool);

  SearchSummary summary;
  summary.best_total = std::numeric_limits<Latency>::infinity();
  bool have_best = false;
  auto publish = [&] {
    pool.Synchronize();
    if (pool.empty()) return;
    const EliteEntry& top = pool.best();
    // Strictly better, beyond rounding noise of sums taken in a different order.
    if (have_best && top.total >= summary.best_total * (1 - 1e-12)) return;
    if (have_best) summary.gain_by_kind[top.found_by] += summary.best_total - top.total;
    ++summary.improvements_by_kind[top.found_by];
    have_best = true;
    summary.best = top.schedule;
    summary.best_total = top.total;
    if (callbacks.on_improvement) callbacks.on_improvement(summary.best, summary.best_total, top.found_by);
  };

  // Where some tensor has three or more readers (never on a contest problem), a start or a
  // composed schedule has its readers' parts regrouped (RegroupReaderParts) before it is offered.
  // On graphs of more than kRegroupStartMaxOps ops the starts are offered as they are: there
  // the pass took 0.7 s of a 10-s run's start phase (ResNeXt-50, 7,843 ops), which the workers'
  // moves missed more than the pass gained; the new bests of the run still get it, in its share.
  constexpr std::size_t kRegroupStartMaxOps = 4096;
  const bool regroup =
      params.workers.regroup_parts && MergeReadersApplies(problem) && params.workers.merge_readers_share > 0;
  // After the regrouping, a loader of such a tensor may take it retained from a subgraph that
  // makes it again (ServeLoadsByRetention; ViT's key projections after the head groups).
  const bool serve = regroup && params.workers.serve_retained;
  // Then a writer of such a tensor may go where every loader left can take it from a copy of
  // its producer run just before it (ServeEveryLoader; ViT's LayerNorm alone before the keys).
  const bool serve_every = regroup && params.workers.serve_every_loader;
  // Then a loader of a written tensor may take it made again from an input kept for it
  // (ServeLoadsByRecompute; FCN-ResNet50's trunk tensors read by the next block's conv1).
  const bool serve_recomputed = regroup && params.workers.serve_recomputed;
  // Last, every subgraph refitted at the tile sides between powers of two, neighbours merged
  // where that pays (MergeAndRefit; FCN-ResNet50's conv3 with its residual sum at 196 rows).
  const bool merge_refit = regroup && params.workers.merge_refit;
  auto served = [&](const Schedule& schedule, const std::function<bool()>& stop) {
    Schedule out = serve && !stop() ? ServeLoadsByRetention(problem, pricer, schedule, stop) : schedule;
    out = serve_every && !stop() ? ServeEveryLoader(problem, pricer, out, stop) : out;
    // What the next subgraph reads from the one before, kept for it (ViT's last value group's
    // outputs for the output projection once the copies have moved the subgraphs around).
    out = serve_every && !stop() ? RetainForNext(problem, pricer, out, stop) : out;
    out = serve_recomputed && !stop() ? ServeLoadsByRecompute(problem, pricer, out, stop) : out;
    return merge_refit && !stop() ? MergeAndRefit(problem, pricer, out, stop) : out;
  };
  // Where a subgraph runs again what the one before it holds, what it recomputes may come
  // retained instead (RetainRecomputed): a drop of the recompute alone makes it load the
  // tensor, which the walk rejects before the retention can pay.
  const bool retain_recomputed = regroup && params.workers.retain_recomputed;
  // Where a subgraph holds alike branches and one branch's ops sit elsewhere, they are gathered
  // into it first (GatherStrays): each op moved alone leaves the branch cut, so the walk keeps
  // it apart (the GPT decoder, tpu-v5e: a head with the output projection).
  const bool gather_strays = regroup && params.workers.gather_strays;
  // Then a sum's partial products that sit elsewhere are gathered into the sum's subgraph
  // (GatherPartials): one moved alone loads its input where the sum loaded its product, so the
  // walk sees no gain until all have moved (GoogLeNet, tpu-v1: a 1×1 convolution of four inputs).
  const bool gather_partials = regroup && params.workers.gather_partials;
  auto gathered = [&](const Schedule& schedule, const std::function<bool()>& stop) {
    const Schedule out = gather_strays && !stop() ? GatherStrays(problem, pricer, schedule, stop) : schedule;
    return gather_partials && !stop() ? GatherPartials(problem, pricer, out, stop) : out;
  };
  auto unrecomputed = [&](const Schedule& schedule, const std::function<bool()>& stop) {
    const Schedule start = gathered(schedule, stop);
    return retain_recomputed && !stop() ? RetainRecomputed(problem, pricer, start, stop, params.workers.partial_edge_tiles == Switch::kOn) : start;
  };
  auto regrouped = [&](const Schedule& schedule, const std::function<bool()>& stop) {
    return regroup && problem.ops.size() <= kRegroupStartMaxOps && !stop()
               ? served(RegroupReaderParts(problem, pricer, unrecomputed(schedule, stop), stop), stop)
               : schedule;
  };
  // Constructive starts. The baseline goes first and alone: it is the guaranteed valid start.
  ErrorSlot errors;
  const Schedule baseline = BuildBaseline(problem, pricer.cache());
  {
    IncrementalEvaluator evaluator(problem, pricer.cache());
    const Candidate c = evaluator.Reset(baseline);
    if (c.valid) pool.Offer(baseline, c.total, "baseline");
  }
  auto offer_checked = [&](const Schedule& schedule, const std::string& kind) {
    IncrementalEvaluator evaluator(problem, pricer.cache());
    const Candidate c = evaluator.Reset(schedule);
    if (c.valid) pool.Offer(schedule, c.total, kind);
    return c;
  };
  // A pass's result on the run's best, offered and published where it changed something (a pass
  // the stop cut short is dropped); `total` is then the best the pass will next be compared with.
  auto offer_pass_result = [&](const Schedule& result, const std::string& kind, Latency& total) {
    if (stopped() || result == summary.best) return;
    offer_checked(result, kind);
    publish();
    total = summary.best_total;
  };
  // Every task runs with the stop test installed for pricing (eval/cost/pricing_stop.h): a pricing
  // that walks steps one by one polls it, and when it throws the search is over (`stopped`
  // stays true), so the task's half-done step is dropped; what it offered before stays.
  auto until_cancelled = [&](auto task) {
    return [&, task] {
      const ScopedPricingStop pricing_stop(stopped);
      try {
        task();
      } catch (const PricingCancelled&) {
      }
    };
  };
  // In free mode the starts get at most half of the time, so that the workers run on a long
  // graph, where a greedy fusion can take longer than the whole search (what they offered
  // before the cut stays). Deterministic mode never cuts them: the budget, not the clock,
  // decides the result.
  const Clock::time_point starts_end = started + (deadline - started) / 2;
  const std::function<bool()> starts_stopped = [&] {
    return stopped() || (!params.deterministic && Clock::now() >= starts_end);
  };
  ExecuteIn(arena, [&] {
    TaskGroup group;
    if (params.constructive.greedy_fusion) {
      group.run([&] {
        errors.Run(until_cancelled([&] {
          Schedule fused = GreedyFusion(problem, pricer, baseline, starts_stopped);
          // Where some tensor has three or more readers (never on a contest problem), the merge
          // of its readers goes on where the pairwise merges stop.
          if (MergeReadersApplies(problem) && params.workers.merge_readers_share > 0 && !starts_stopped()) {
            fused = MergeReaderGroups(problem, pricer, fused, starts_stopped);
            if (regroup && !starts_stopped() && problem.ops.size() <= kRegroupStartMaxOps) {
              fused = served(RegroupReaderParts(problem, pricer, unrecomputed(fused, starts_stopped), starts_stopped),
                             starts_stopped);
            }
          }
          // Where a Pointwise op sums three or more taps of one LHS too large to keep (never on a
          // contest problem), each sum's taps are gathered into its subgraph at a polished fit.
          if (GatherKLoopApplies(problem) && params.workers.gather_kloop_share > 0 && !starts_stopped()) {
            fused = GatherTapGroups(problem, pricer, fused, starts_stopped, params.workers.partial_edge_tiles == Switch::kOn);
          }
          const Candidate greedy = offer_checked(fused, "greedy-fusion");
          if (greedy.valid && params.workers.polish && !starts_stopped()) {
            offer_checked(Polish(problem, pricer, fused, starts_stopped, params.workers.partial_edge_tiles == Switch::kOn),
                          "greedy-fusion");
          }
          // Where some sum of three or more MatMuls reads a concatenation (never on a contest
          // problem), each sum is rebuilt as a chain tied by retention (docs/search.md, "Layer
          // chains"), offered beside the greedy start, which stays in the pool, and only when it
          // takes off at least kLayerChainsGain: a near-copy of the start would only crowd the pool
          // (DenseNet-121: 24 % on tpu-v1, where the 10-s run falls from 2.43 M to 1.96 M; 1.8 % on
          // ascend910-core).
          constexpr double kLayerChainsGain = 0.05;
          if (greedy.valid && params.workers.layer_chains && !starts_stopped()) {
            const Schedule chained = LayerChains(problem, pricer, fused, starts_stopped);
            IncrementalEvaluator evaluator(problem, pricer.cache());
            const Candidate c = evaluator.Reset(chained);
            if (c.valid && c.total <= (1 - kLayerChainsGain) * greedy.total) pool.Offer(chained, c.total, "layer-chains");
          }
        }));
      });
    }
    if (params.constructive.pattern_grouping) {
      group.run([&] {
        errors.Run(until_cancelled([&] {
          const Schedule grouped = PatternGrouping(problem, pricer, starts_stopped);
          if (offer_checked(grouped, "pattern").valid && params.workers.polish && !starts_stopped()) {
            offer_checked(Polish(problem, pricer, grouped, starts_stopped, params.workers.partial_edge_tiles == Switch::kOn), "pattern");
          }
        }));
      });
    }
    group.wait();
  });
  errors.RethrowIfAny();
  publish();
  if (!have_best) throw std::runtime_error("no valid starting schedule (the baseline is invalid)");

  // The exact solver's run within its share of the budget (nullopt when it does not run), with
  // `incumbent` as its incumbent.
  auto run_exact = [&](const Schedule& incumbent, const std::atomic<bool>& stop_flag) -> std::optional<ExactResult> {
    // Below a minimum slice the solver cannot prove anything useful and its start-up (an oracle
    // check of the incumbent) only risks the deadline of a very short run.
    const auto exact_slice = std::chrono::duration_cast<Clock::duration>((deadline - started) * params.exact.time_share);
    if (params.exact.time_share <= 0 || stopped() ||
        static_cast<int64_t>(problem.ops.size()) > params.exact.max_ops ||
        (!params.deterministic && exact_slice < std::chrono::milliseconds(50))) {
      return std::nullopt;
    }
    ExactOptions options;
    if (bound_model) options.remaining_bound = DefaultRemainingBound(bound_model);
    options.max_subgraph_ops = static_cast<int>(params.exact.max_subgraph_ops);
    options.max_contexts = params.exact.max_contexts;
    options.incumbent = incumbent;
    options.stop = &stop_flag;
    if (params.deterministic) {
      // The clock must not decide the result: a state budget ends the run, the deadline only
      // guards the whole search (a run cut by it is never used).
      options.max_states = params.exact.deterministic_states;
      options.deadline = deadline;
    } else {
      options.max_states = params.exact.max_states;
      // The share counts from now: the constructive starts must not eat the solver's time.
      options.deadline = std::min(deadline, Clock::now() + exact_slice);
    }
    ExactResult result = SolveExact(problem, options);
    if (params.deterministic && result.stop_reason == "time") result.status = ExactStatus::kFeasible;
    return result;
  };
  auto offers_exact = [](const ExactResult& result) {
    return result.status == ExactStatus::kOptimal && result.found_by_solver && result.best;
  };

  // The repeated-block start and the exact solver either run here, before the workers, or (free
  // mode, 2+ threads, a graph of at least repeats.min_ops ops) on a thread of their own while
  // the workers' first epochs run (see driver.h). The nested searches keep all the threads
  // (with one thread each a block class came out 2-4 % worse on ResNet-50 in the same time)
  // and only the first worker runs beside them, so the machine runs threads + 1 threads for a
  // while; their schedules reach the workers through the pool at the next epoch boundary.
  // The plan first: with nothing to compose the workers gain nothing from running beside the
  // exact solver alone, and the lone worker's schedules would crowd the constructive starts out
  // of the pool (GoogLeNet, tpu-v5e, 10 s: 108-126k with the overlap, 108.4-108.9k without).
  const Clock::time_point repeats_begun = Clock::now();
  // Free mode: pieces only when each gets at least kPieceSeconds of the share. Below that a
  // piece's search is mostly its set-up and the composition falls behind the workers' best
  // (Inception-v3, 48 pieces in 2-4 s: composed 8.3-9.6 M against 8.1 M on ascend910-core and
  // 18.7-21.0 M against 16.6 M on mlsys-2026, and the run ended up to 1.5 % higher on
  // mlsys-2026), while GoogLeNet's 35 pieces in 4-4.5 s took its 10-s runs on ascend910-core
  // from 2.02-2.04 M to 1.88-1.95 M when the machine was not overloaded.
  const RepeatPlan repeat_plan = [&] {
    RepeatPlan plan = RepeatStartPlan(problem, params);
    const double share = std::chrono::duration<double>(deadline - repeats_begun).count() * params.repeats.time_share;
    if (plan.pieces && !params.deterministic && share < kPieceSeconds * static_cast<double>(plan.count.size())) {
      return RepeatPlan{};
    }
    return plan;
  }();
  const bool overlap = !params.deterministic && params.repeats.overlap && threads >= 2 &&
                       !repeat_plan.blocks.empty();
  std::thread background;
  std::atomic<bool> background_done{false};
  // The repeated-block start has ended (background_composed is final): the workers rebase on its
  // schedule and all run, beside the exact solver that follows it on the background thread.
  std::atomic<bool> repeats_done{false};
  // The outer stop flag, passed on by the driver at every epoch, or set when the driver leaves
  // early (an exception): the thread must end before its state goes.
  std::atomic<bool> background_stop{stop.load()};
  struct JoinOnExit {
    std::thread& thread;
    std::atomic<bool>& stop;
    ~JoinOnExit() {
      if (thread.joinable()) {
        stop = true;
        thread.join();
      }
    }
  } join_on_exit{background, background_stop};
  ErrorSlot background_errors;
  std::optional<RepeatResult> background_repeats;
  std::optional<ExactResult> background_exact;
  // The composition the workers walk from (the lowest after the passes, RoundChoice) and its
  // total; `composed_generation` counts its changes, `taken_generation` what the workers took.
  std::mutex composed_mutex;
  std::optional<Schedule> background_composed;
  Latency background_composed_total = 0;
  std::atomic<int> composed_generation{0};
  // Rounds after the first run beside the workers (overlap): they and the workers share the
  // threads, half each, so the run keeps to --threads (the first round keeps all of them beside
  // the lone worker, as before the rounds).
  const int later_round_threads = std::max(1, threads / 2);
  std::atomic<bool> later_rounds_running{false};
  int taken_generation = 0;
  RoundChoice round_choice;  // the background thread's (or, without the overlap, this thread's)
  int current_round = 1;
  // A composition gets the passes a new best of the run gets, to their end, before it is
  // compared: what the whole-graph passes make of it is what it is worth (ResNet-50, tpu-v5e:
  // 241k composed, 223k after the regrouping and serving, 219k after the rest).
  // The piece start's composition is also polished (Polish): a piece's nested search has tens of
  // milliseconds (Inception-v3: 48 pieces in 2-4 s), too little for its own start's polish
  // (Inception-v3, ascend910-core: composed 8.4-10.0 M against 8.1 M from the polished greedy
  // start).
  auto polish_composition = [&](const Schedule& composed, const Candidate& raw,
                                const std::function<bool()>& stop_polish) -> std::pair<Schedule, Candidate> {
    std::pair<Schedule, Candidate> best{composed, raw};
    auto take = [&](Schedule next, bool if_lower) {
      if (stop_polish() || next == best.first) return false;
      IncrementalEvaluator evaluator(problem, pricer.cache());
      const Candidate c = evaluator.Reset(next);
      if (!c.valid || (if_lower && c.total >= best.second.total * (1 - 1e-12))) return false;
      best = {std::move(next), c};
      return true;
    };
    take(regrouped(composed, stop_polish), false);
    if (repeat_plan.pieces && params.workers.polish) {
      take(Polish(problem, pricer, best.first, stop_polish, params.workers.partial_edge_tiles == Switch::kOn), true);
    }
    if (problem.ops.size() > kRegroupStartMaxOps) return best;
    for (bool gained = true; gained && !stop_polish();) {
      gained = false;
      if (gather_strays) gained |= take(GatherStrays(problem, pricer, best.first, stop_polish), true);
      if (gather_partials) gained |= take(GatherPartials(problem, pricer, best.first, stop_polish), true);
      if (retain_recomputed) {
        gained |= take(RetainRecomputed(problem, pricer, best.first, stop_polish,
                                        params.workers.partial_edge_tiles == Switch::kOn),
                       true);
      }
      if (regroup) {
        gained |= take(served(RegroupReaderParts(problem, pricer, best.first, stop_polish), stop_polish), true);
      }
    }
    return best;
  };
  // What the rounds offer: the composed schedule is checked (the start compares its total with
  // the blocks' sum) and polished; the polished one joins the pool, and becomes the composition
  // the workers walk from when it is the lowest so far (`adopt`).
  auto offer_round = [&](const Schedule& composed, const std::function<bool()>& stop_polish,
                         const std::function<void(const Schedule&, Latency)>& adopt) {
    IncrementalEvaluator evaluator(problem, pricer.cache());
    const Candidate raw = evaluator.Reset(composed);
    if (!raw.valid) return raw;
    const auto [schedule, polished] = polish_composition(composed, raw, stop_polish);
    pool.Offer(schedule, polished.total, "repeat");
    if (round_choice.Offer(current_round, polished.total)) adopt(schedule, polished.total);
    return raw;
  };
  // The rounds (search/repeats/rounds.h): the first with the share a run of repeats.round_seconds
  // gives it, its block proofs, then further rounds while the share lasts (deterministic mode:
  // repeats.deterministic_rounds). `first_done` is called when the first round has ended,
  // composed or not. The first round's start is returned, with what the rounds did.
  auto run_rounds = [&](const std::atomic<bool>& round_stop, const std::function<Candidate(const Schedule&)>& offer,
                        const std::function<void()>& first_done) -> std::optional<RepeatStart> {
    const double left = std::chrono::duration<double>(deadline - repeats_begun).count();
    double seconds = RoundSeconds(left, params.repeats.time_share, params.repeats.round_seconds);
    // Pieces get at most kPieceSecondsMax each in a round in free mode, whatever the run's length
    // (their rounds are capped by that, not by repeats.round_seconds): the composition helps
    // only while the lone worker's best is still behind it. GoogLeNet's 35 pieces at 0.12-0.13 s
    // each (a 10-s run) took ascend910-core from 2.02 M to 1.82-1.95 M; with a 60-s run's share
    // (~0.8 s each) in one round the lone worker had gone further by the time they were composed,
    // the workers stayed on their own best, and the run ended at 1.99 M, where it ended without
    // pieces.
    if (repeat_plan.pieces && !params.deterministic) {
      seconds = std::min(RoundSeconds(left, params.repeats.time_share, 0),
                         kPieceSecondsMax * static_cast<double>(repeat_plan.count.size()));
    }
    const auto slice = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    current_round = 1;
    std::optional<RepeatStart> first = RunRepeatStart(params, repeat_plan, 0, nullptr, repeats_begun,
                                                      repeats_begun + slice, threads, deadline, round_stop, offer);
    first_done();
    if (!first || !first->composed) return first;
    ProveRepeatClasses(params, repeat_plan, *first, repeats_begun, deadline, round_stop, offer);
    for (int r = 1;; ++r) {
      if (round_stop.load() || stopped()) break;
      if (std::all_of(first->proven.begin(), first->proven.end(), [](int p) { return p != 0; })) break;
      const Clock::time_point now = Clock::now();
      double round_seconds = 0;
      if (params.deterministic) {
        if (r >= params.repeats.deterministic_rounds) break;
      } else {
        if (params.repeats.round_seconds <= 0) break;  // one round, as before the rounds
        round_seconds = NextRoundSeconds(std::chrono::duration<double>(now - repeats_begun).count(), seconds, r,
                                         params.repeats.round_growth, left, params.repeats.time_share);
        if (round_seconds <= 0) break;
      }
      current_round = r + 1;
      later_rounds_running.store(overlap, std::memory_order_release);
      const std::optional<RepeatStart> next = RunRepeatStart(
          params, repeat_plan, r, &*first, now,
          now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(round_seconds)),
          overlap ? later_round_threads : threads, deadline, round_stop, offer);
      later_rounds_running.store(false, std::memory_order_release);
      if (!next) break;
      first->result.moves += next->result.moves;
      if (!next->composed) break;
    }
    first->result.rounds = round_choice.rounds;
    first->result.chosen_round = round_choice.chosen;
    first->result.polished_first = round_choice.first;
    first->result.polished = round_choice.lowest;
    return first;
  };
  if (!overlap) {
    const auto offer_repeat = [&](const Schedule& composed) {
      return offer_round(composed, stopped, [](const Schedule&, Latency) {});
    };
    std::optional<RepeatStart> start = run_rounds(stop, offer_repeat, [] {});
    if (start) publish();
    // A composed graph proves its block classes instead (ProveRepeatClasses, in the rounds).
    if (!start || !start->composed) {
      if (std::optional<ExactResult> result = run_exact(summary.best, stop)) {
        if (offers_exact(*result)) {
          pool.Offer(*result->best, result->total, "exact");
          publish();
        }
        summary.exact = std::move(result);
        if (callbacks.on_exact) callbacks.on_exact(*summary.exact);
      }
    }
    if (start) summary.repeats = std::move(start->result);
  } else {
    // The incumbent of the exact solver: the best published before the thread starts or the
    // composed schedule, whichever is better (the driver's best changes meanwhile).
    background = std::thread([&, incumbent = summary.best, incumbent_total = summary.best_total]() mutable {
      background_errors.Run([&] {
        const std::function<bool()> background_stopped = [&] { return stopped() || background_stop.load(); };
        const auto offer_repeat = [&](const Schedule& composed) {
          return offer_round(composed, background_stopped, [&](const Schedule& schedule, Latency total) {
            {
              std::lock_guard<std::mutex> lock(composed_mutex);
              background_composed = schedule;
              background_composed_total = total;
            }
            composed_generation.fetch_add(1, std::memory_order_release);
            if (total < incumbent_total) {
              incumbent = schedule;
              incumbent_total = total;
            }
          });
        };
        // The workers rebase on the first round's composition as soon as it is there; each
        // later composition that is lower after the passes moves them again.
        std::optional<RepeatStart> start = run_rounds(background_stop, offer_repeat, [&] {
          repeats_done.store(true, std::memory_order_release);
        });
        if (start) start->result.overlapped = true;
        if (start) background_repeats = start->result;
        if (!start || !start->composed) {
          background_exact = run_exact(incumbent, background_stop);
          if (background_exact && offers_exact(*background_exact)) {
            pool.Offer(*background_exact->best, background_exact->total, "exact");
          }
        }
      });
      background_done = true;
    });
  }
  // When the repeated-block start has ended, the SA workers walk on from its composed schedule:
  // by then the worker that ran alone may have a better one, but the composed schedule lies in
  // another basin, the one a run without the overlap starts from, and polished it is usually
  // the better (ResNet-50, 60 s: 225.0k from it, 235.3k without).
  bool rebased = false;
  const std::vector<EliteEntry> start_entries = overlap ? pool.entries() : std::vector<EliteEntry>{};
  auto take_repeats = [&](std::vector<std::unique_ptr<Worker>>& workers) {
    const bool first_take = !rebased;
    rebased = true;
    publish();  // the composed schedule, offered before repeats_done was set
    std::optional<Schedule> composed;
    Latency composed_total = 0;
    {
      std::lock_guard<std::mutex> lock(composed_mutex);
      composed = background_composed;
      composed_total = background_composed_total;
      taken_generation = composed_generation.load(std::memory_order_acquire);
    }
    // A piece start's composition that the lone worker has beaten by far is no basin to move to:
    // it keeps no fusion or retention across the pieces, and on Inception-v3 (ascend910-core) it
    // stayed above the best from the polished greedy start (8.2-10.0 M against 8.1 M). A little
    // behind it still is (repeats.piece_rebase_margin): on GoogLeNet (tpu-v1, 10 s) the lone
    // worker's polish reached 699-711k by the time the composition (713k polished) came, and the
    // runs that stayed with it ended at 695-708k, those that moved at 684-692k (the search's
    // best stays whichever is lower).
    const bool composed_behind =
        repeat_plan.pieces && composed_total > summary.best_total * (1 + 1e-12 + params.repeats.piece_rebase_margin);
    if (composed && !composed_behind) {
      if (first_take) {
        // The workers go on as a run without the overlap would: from the composed schedule and
        // the constructive starts. The lone worker's schedules leave the pool (the best stays the
        // search's best): kept, they drew the restarts and the GA into their own basin, and on
        // ResNet-50 (60 s) the run ended 1.4 % higher.
        std::vector<EliteEntry> restart = start_entries;
        for (const EliteEntry& e : pool.entries()) {
          if (e.found_by == "repeat") restart.push_back(e);
        }
        pool.Restart(std::move(restart));
      }
      for (auto& w : workers) w->Rebase(*composed, start_entries);
    } else if (first_take) {
      // Nothing composed (nothing repeats, or the start ran out of time): the lone worker's
      // schedules, which fill the pool by now, would crowd the constructive starts out of the
      // GA's population, where a run without the overlap crosses them first (GoogLeNet, 10 s:
      // 116-126k that way against 108-110k).
      for (auto& w : workers) w->Reseed(start_entries);
    }
  };
  // The rounds' composition changed since the workers last took it (or they never did).
  auto repeats_pending = [&] {
    return repeats_done.load(std::memory_order_acquire) &&
           (!rebased || taken_generation != composed_generation.load(std::memory_order_acquire));
  };
  // Joins the background thread and takes over what it found.
  auto join_background = [&](std::vector<std::unique_ptr<Worker>>& workers) {
    background.join();
    background_errors.RethrowIfAny();
    summary.repeats = std::move(background_repeats);
    if (repeats_pending()) take_repeats(workers);
    publish();
    if (background_exact) {
      summary.exact = std::move(background_exact);
      if (callbacks.on_exact) callbacks.on_exact(*summary.exact);
    }
  };

  // Workers, each seeded up front from the master seed (never from a thread id).
  std::mt19937_64 master(params.seed);
  WorkerEnvironment env{problem, params, rank, pricer, pool, stopped};
  std::vector<std::unique_ptr<Worker>> workers;
  const double share = params.workers.sa_share;
  int num_sa = static_cast<int>(std::lround(share * threads));
  if (share > 0 && share < 1 && threads >= 2) num_sa = std::clamp(num_sa, 1, threads - 1);
  if (share > 0 && share < 1 && threads == 1) {
    // One thread and a mix: one worker of each kind, alternating per epoch.
    workers.push_back(std::make_unique<SaWorker>(env, master()));
    workers.push_back(std::make_unique<GaWorker>(env, master()));
  } else {
    for (int w = 0; w < threads; ++w) {
      if (w < num_sa) {
        workers.push_back(std::make_unique<SaWorker>(env, master()));
      } else {
        workers.push_back(std::make_unique<GaWorker>(env, master()));
      }
    }
  }
  const bool alternate = static_cast<int>(workers.size()) > threads;

  Clock::time_point last_progress = started;
  const Clock::time_point workers_started = Clock::now();
  summary.setup_seconds = std::chrono::duration<double>(workers_started - started).count();
  // Thread-seconds of the workers over `threads`: their wall time while all threads were theirs.
  double worker_seconds = 0;
  // The workers' CPU time, in nanoseconds of their threads' CPU clocks.
  std::atomic<int64_t> worker_cpu_ns{0};
  int epoch = 0;
  Latency regrouped_total = std::numeric_limits<Latency>::infinity();
  Latency unrecomputed_total = std::numeric_limits<Latency>::infinity();
  double unrecomputed_seconds = 0;
  double regroup_seconds = 0;
  std::size_t regroup_cursor = 0;
  for (; !stopped(); ++epoch) {
    if (stop.load(std::memory_order_relaxed)) background_stop = true;
    if (background.joinable() && repeats_pending()) take_repeats(workers);
    if (background.joinable() && background_done.load()) join_background(workers);
    if (params.max_epochs > 0 && epoch >= params.max_epochs) break;
    // While the repeated-block start runs, only the first worker does; while its later rounds run,
    // the threads they leave.
    const size_t active =
        background.joinable() && !rebased
            ? 1
            : (later_rounds_running.load(std::memory_order_acquire)
                   ? std::min(workers.size(), static_cast<size_t>(std::max(1, threads - later_round_threads)))
                   : workers.size());
    // Free mode: short time slices so the pool mixes often and progress is reported on time.
    const auto slice = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(std::clamp(params.progress_interval / 2, 0.05, 0.5)));
    const Clock::time_point epoch_end = std::min(deadline, Clock::now() + slice);
    const int64_t budget = params.deterministic ? params.epoch_moves
                                                : (params.max_epochs > 0 ? params.epoch_moves
                                                                         : std::numeric_limits<int64_t>::max());
    const Clock::time_point epoch_start = Clock::now();
    ExecuteIn(arena, [&] {
      TaskGroup group;
      for (size_t w = 0; w < active; ++w) {
        if (alternate && static_cast<int>(w % 2) != epoch % 2) continue;
        Worker* worker = workers[w].get();
        group.run([&, worker] {
          const int64_t cpu_start = ThreadCpuNanoseconds();
          errors.Run(until_cancelled([&, worker] { worker->RunEpoch(budget, epoch_end); }));
          worker_cpu_ns.fetch_add(ThreadCpuNanoseconds() - cpu_start, std::memory_order_relaxed);
        });
      }
      group.wait();
    });
    worker_seconds += std::chrono::duration<double>(Clock::now() - epoch_start).count() *
                      std::min<double>(static_cast<double>(active), threads) / threads;
    if (background.joinable() && !rebased) {
      // The lone worker yields as long as it ran: the nested searches, which hold all the
      // threads, then get most of the machine. Their composed schedule is what the rest of the
      // run builds on (ResNet-50, 10 s: composed 241-251k while the lone worker ran flat out,
      // depending on the load), while the lone worker's walk on the whole graph flattens out
      // within seconds (~251k on ResNet-50).
      const Clock::time_point resume = Clock::now() + (Clock::now() - epoch_start);
      while (Clock::now() < resume && !stopped() && !repeats_done.load(std::memory_order_acquire)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    errors.RethrowIfAny();
    publish();
    // Each new best of the run has its readers' parts regrouped once (RegroupReaderParts): the
    // workers' moves do not cross the valley to a regrouping, and the best they find is where it
    // pays (ViT-B/16, tpu-v1: each head's query and value parts, docs/search.md).
    // At most a twentieth of the run goes to it, each pass cut when it has used up what is left
    // of that and the next going on from the tensor where it stopped (ResNeXt-50, tpu-v1: a
    // whole pass over a 10-s schedule takes 3 s and finds nothing).
    // Deterministic mode: every pass whole, whatever it costs (the clock must not decide).
    // Each new best also gets its recomputes retained (RetainRecomputed) outside the regrouping's
    // budget, with a twentieth of the run of its own: a pass tries each subgraph once and takes
    // 0.01-0.05 s on ResNet-50 (310 ops), where the regrouping used up its share on the first
    // bests. Not on graphs above kRegroupStartMaxOps ops, as the starts' regrouping: on MaxViT-T
    // (9,985 ops) a pass took 0.08 s per new best, found nothing, and the 10-s run ended 4 % higher.
    const double unrecomputed_budget = 0.05 * std::chrono::duration<double>(deadline - started).count();
    // The gathering of stray branches shares that budget and goes first.
    if ((retain_recomputed || gather_strays || gather_partials) && problem.ops.size() <= kRegroupStartMaxOps && have_best &&
        summary.best_total < unrecomputed_total && !stopped() &&
        (params.deterministic || unrecomputed_seconds < unrecomputed_budget)) {
      const Clock::time_point pass_start = Clock::now();
      const Clock::time_point pass_end =
          pass_start + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(unrecomputed_budget - unrecomputed_seconds));
      const std::function<bool()> pass_stopped = [&] {
        return stopped() || (!params.deterministic && Clock::now() >= pass_end);
      };
      unrecomputed_total = summary.best_total;
      if (gather_strays) {
        offer_pass_result(GatherStrays(problem, pricer, summary.best, pass_stopped), "gather-strays",
                          unrecomputed_total);
      }
      if (gather_partials) {
        offer_pass_result(GatherPartials(problem, pricer, summary.best, pass_stopped), "gather-partials",
                          unrecomputed_total);
      }
      if (retain_recomputed) {
        offer_pass_result(RetainRecomputed(problem, pricer, summary.best, pass_stopped,
                                           params.workers.partial_edge_tiles == Switch::kOn),
                          "retain-recomputed", unrecomputed_total);
      }
      unrecomputed_seconds += std::chrono::duration<double>(Clock::now() - pass_start).count();
    }
    const double regroup_budget = 0.05 * std::chrono::duration<double>(deadline - started).count();
    if (regroup && have_best && summary.best_total < regrouped_total && !stopped() &&
        (params.deterministic || regroup_seconds < regroup_budget)) {
      const Clock::time_point regroup_start = Clock::now();
      const Clock::time_point regroup_end =
          regroup_start + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(regroup_budget - regroup_seconds));
      const std::function<bool()> regroup_stopped = [&] {
        return stopped() || (!params.deterministic && Clock::now() >= regroup_end);
      };
      regrouped_total = summary.best_total;
      const Schedule better =
          served(RegroupReaderParts(problem, pricer, summary.best, regroup_stopped, &regroup_cursor), regroup_stopped);
      regroup_seconds += std::chrono::duration<double>(Clock::now() - regroup_start).count();
      offer_pass_result(better, "regroup", regrouped_total);
    }
    if (callbacks.on_progress) {
      const Clock::time_point now = Clock::now();
      if (std::chrono::duration<double>(now - last_progress).count() >= params.progress_interval) {
        last_progress = now;
        SearchProgress progress;
        progress.elapsed_seconds = std::chrono::duration<double>(now - started).count();
        progress.best_total = summary.best_total;
        for (const auto& w : workers) progress.moves += w->moves();
        progress.moves_per_second = worker_seconds > 0 ? progress.moves / worker_seconds : 0;
        if (cache) progress.cache_hit_rate = cache->stats().hit_rate();
        progress.epoch = epoch;
        callbacks.on_progress(progress);
      }
    }
  }
  // Out of time (or stopped) with the background thread still running: it ends within ~50 ms.
  if (background.joinable()) {
    if (stop.load()) background_stop = true;
    join_background(workers);
  }
  summary.epochs = epoch;
  summary.worker_seconds = worker_seconds;
  summary.worker_cpu_seconds = static_cast<double>(worker_cpu_ns.load()) * 1e-9;
  summary.deterministic_cut = params.deterministic && (params.max_epochs == 0 || epoch < params.max_epochs);
  summary.search_seconds = std::chrono::duration<double>(Clock::now() - workers_started).count();
  for (const auto& w : workers) summary.moves += w->moves();
  if (cache) {
    summary.cache_hit_rate = cache->stats().hit_rate();
    // Freeing a full cache takes 50-150 ms (a million small allocations); do it off the caller's
    // path so that RunSearch returns promptly after the deadline. The cache references nothing
    // that outlives this function except itself.
    std::thread([doomed = std::move(cache)]() mutable { doomed.reset(); }).detach();
  }
  return summary;
}

}  // namespace annealer
