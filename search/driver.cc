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
#include "search/passes/lone_taps.h"
#include "search/passes/gather_strays.h"
#include "search/passes/merge_refit.h"
#include "search/passes/retain_for_next.h"
#include "search/passes/retain_recomputed.h"
#include "search/passes/serve_every_loader.h"
#include "search/passes/serve_retained.h"
#include "search/repeats/repeats.h"
#include "search/repeats/repeat_start.h"
#include "search/repeats/round_runner.h"
#include "search/starts/baseline.h"
#include "search/starts/constructive.h"
#include "search/starts/layer_chains.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"
#include "search/task_group.h"
#include "search/workers.h"

namespace annealer {

namespace {

// The piece start's slice per piece in free mode: at least kPieceSeconds or none at all (at
// most kPieceSecondsMax, search/repeats/round_runner.h).
constexpr double kPieceSeconds = 0.1;

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


}  // namespace

SearchSummary RunSearch(const Problem& problem, const SearchParams& given, Clock::time_point deadline,
                        const std::atomic<bool>& stop, const SearchCallbacks& callbacks,
                        std::shared_ptr<const BoundModel> bound_model, const std::vector<Schedule>& starts) {
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
  // Then a sum's taps that sit alone, each loading one written LHS, are grouped with the LHS's
  // producer run again in each group (GroupLoneTaps): one pair merged pays the recompute before
  // the loads it saves (DenseNet-121, mlsys-2026: a 3×3 convolution's nine taps).
  const bool lone_taps = regroup && params.workers.lone_taps;
  auto gathered = [&](const Schedule& schedule, const std::function<bool()>& stop) {
    Schedule out = gather_strays && !stop() ? GatherStrays(problem, pricer, schedule, stop) : schedule;
    out = gather_partials && !stop() ? GatherPartials(problem, pricer, out, stop) : out;
    return lone_taps && !stop() ? GroupLoneTaps(problem, pricer, out, stop) : out;
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
  for (const Schedule& schedule : starts) offer_checked(schedule, "continued");
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
  // The passes a composition gets (search/repeats/composition_passes.h): those a new best of the
  // run gets, to their end; the piece start's also the polish.
  CompositionPasses composition_passes;
  composition_passes.evaluate = [&](const Schedule& schedule) {
    IncrementalEvaluator evaluator(problem, pricer.cache());
    return evaluator.Reset(schedule);
  };
  composition_passes.first = regrouped;
  if (repeat_plan.pieces && params.workers.polish) {
    composition_passes.polish = [&](const Schedule& schedule, const std::function<bool()>& stop_polish) {
      return Polish(problem, pricer, schedule, stop_polish, params.workers.partial_edge_tiles == Switch::kOn);
    };
  }
  if (problem.ops.size() <= kRegroupStartMaxOps) {
    std::vector<CompositionPasses::Pass>& passes = composition_passes.passes;
    if (gather_strays) {
      passes.push_back([&](const Schedule& schedule, const std::function<bool()>& stop_polish) {
        return GatherStrays(problem, pricer, schedule, stop_polish);
      });
    }
    if (gather_partials) {
      passes.push_back([&](const Schedule& schedule, const std::function<bool()>& stop_polish) {
        return GatherPartials(problem, pricer, schedule, stop_polish);
      });
    }
    if (lone_taps) {
      passes.push_back([&](const Schedule& schedule, const std::function<bool()>& stop_polish) {
        return GroupLoneTaps(problem, pricer, schedule, stop_polish);
      });
    }
    if (retain_recomputed) {
      passes.push_back([&](const Schedule& schedule, const std::function<bool()>& stop_polish) {
        return RetainRecomputed(problem, pricer, schedule, stop_polish, params.workers.partial_edge_tiles == Switch::kOn);
      });
    }
    if (regroup) {
      passes.push_back([&](const Schedule& schedule, const std::function<bool()>& stop_polish) {
        return served(RegroupReaderParts(problem, pricer, schedule, stop_polish), stop_polish);
      });
    }
  }
  composition_passes.offer = [&](const Schedule& schedule, Latency total) { pool.Offer(schedule, total, "repeat"); };
  RoundsSetup rounds_setup;
  rounds_setup.begun = repeats_begun;
  rounds_setup.deadline = deadline;
  rounds_setup.threads = threads;
  rounds_setup.later_threads = overlap ? later_round_threads : threads;
  rounds_setup.later_running = overlap ? &later_rounds_running : nullptr;
  rounds_setup.nested_search = [](const Problem& block, const SearchParams& block_params,
                                  std::chrono::steady_clock::time_point block_deadline,
                                  const std::atomic<bool>& block_stop, const SearchCallbacks& block_callbacks,
                                  const std::vector<Schedule>& block_starts) {
    return RunSearch(block, block_params, block_deadline, block_stop, block_callbacks, nullptr, block_starts);
  };
  if (!overlap) {
    std::optional<RepeatStart> start = RunRounds(params, repeat_plan, composition_passes, rounds_setup, stop, stopped,
                                                 stopped, [](const Schedule&, Latency) {}, [] {});
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
        const auto adopt = [&](const Schedule& schedule, Latency total) {
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
        };
        // The workers rebase on the first round's composition as soon as it is there; each
        // later composition that is lower after the passes moves them again.
        std::optional<RepeatStart> start =
            RunRounds(params, repeat_plan, composition_passes, rounds_setup, background_stop, stopped,
                      background_stopped, adopt, [&] { repeats_done.store(true, std::memory_order_release); });
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
    if ((retain_recomputed || gather_strays || gather_partials || lone_taps) && problem.ops.size() <= kRegroupStartMaxOps && have_best &&
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
      if (lone_taps) {
        offer_pass_result(GroupLoneTaps(problem, pricer, summary.best, pass_stopped), "lone-taps",
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
  pool.Synchronize();
  for (const EliteEntry& e : pool.entries()) summary.elite.push_back(e.schedule);
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
