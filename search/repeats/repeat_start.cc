#include "search/repeats/repeat_start.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "eval/bound/bounds.h"
#include "eval/cost/evaluate_fast.h"
#include "search/exact/exact.h"
#include "search/repeats/pieces.h"
#include "search/repeats/rounds.h"

namespace annealer {

using Clock = std::chrono::steady_clock;

RepeatPlan RepeatStartPlan(const Problem& problem, const SearchParams& params) {
  if (params.repeats.time_share <= 0 || static_cast<int64_t>(problem.ops.size()) < params.repeats.min_ops) {
    return {};
  }
  RepeatOptions options;
  options.max_block_ops = params.repeats.max_block_ops;
  options.min_block_ops = params.repeats.min_block_ops;
  options.phase_alternatives = params.repeats.phase_alternatives;
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

bool RepeatStart::Compose(const RepeatPlan& plan, const std::function<Candidate(const Schedule&)>& offer) {
  Latency block_sum = 0;
  for (const RepeatBlock& block : plan.blocks) block_sum += totals[block.class_id];
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
  result.chain_total = 0;
  if (plan.alternative_blocks.empty()) return true;
  const std::vector<const RepeatBlock*> chain = CheapestChain(plan, totals, solved);
  if (std::equal(chain.begin(), chain.end(), plan.blocks.begin(), plan.blocks.end(),
                 [](const RepeatBlock* a, const RepeatBlock& b) { return a == &b; })) {
    return true;  // the chosen partition's own chain, offered above
  }
  Latency chain_sum = 0;
  for (const RepeatBlock* block : chain) chain_sum += totals[block->class_id];
  const Candidate cheapest = offer(ComposeBlockSchedules(chain, schedules));
  // The chosen partition's composition stands whatever becomes of this one.
  if (!cheapest.valid) {
    result.note = "the cheapest chain of blocks composed invalid (" + cheapest.violation.Message() + ")";
  } else if (std::abs(cheapest.total - chain_sum) > 1e-9 * std::max(1.0, chain_sum)) {
    result.note = "the cheapest chain's total differs from its blocks' sum " + std::to_string(chain_sum);
  } else {
    result.chain_total = cheapest.total;
  }
  return true;
}

void RepeatStart::Count() {
  // Over every class, the alternatives' too: all proven, every partition's composition is optimal
  // among the schedules that keep its boundaries (within the family).
  result.bound_met = static_cast<int>(std::count(proven.begin(), proven.end(), 1));
  result.exact_optimal = static_cast<int>(std::count(proven.begin(), proven.end(), 2));
  result.searched_classes = static_cast<int>(std::count(solved.begin(), solved.end(), 1));
}

std::optional<RepeatStart> RunRepeatStart(const SearchParams& params, const RepeatPlan& plan, int round,
                                          const NestedSearch& search, const RepeatStart* kept, bool resume, bool resume_next,
                                          Clock::time_point begun, Clock::time_point share_end,
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
  result.classes = plan.classes();
  result.alternatives = plan.alternatives;
  result.alternative_classes = plan.classes() - plan.primary_classes;
  result.repeated_blocks = plan.repeated_blocks();
  for (int c = 0; c < plan.primary_classes; ++c) {
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
    return static_cast<double>(plan.ClassBlock(static_cast<int>(c)).sub.op_ids.size()) * std::sqrt(plan.count[c]);
  };
  // The phase ties' alternatives are searched from the second round on: the first round keeps
  // the chosen partition's classes alone, with the time they had before (a 10-s run is one
  // round, as is the deterministic preset by default), and a longer run's later rounds, which
  // sample the chosen classes again with other seeds, solve the other phases' classes too.
  // (Solved from the first round they shared its time three ways, 24 classes instead of 9 on
  // Wide-ResNet-50, and the 10-s runs and the preset lost what the cheaper chain gained.)
  auto deferred = [&](size_t c) { return round == 0 && static_cast<int>(c) >= plan.primary_classes; };
  double weight_left = 0;
  for (size_t c = 0; c < plan.count.size(); ++c) {
    if (!deferred(c)) weight_left += weight_of(c);
  }
  // A class of the alternatives only that gets no schedule (out of time, its search failed):
  // its blocks are left out of the chains; the chosen partition's composition does not need it.
  auto unsolved = [&](size_t c) {
    if (static_cast<int>(c) < plan.primary_classes) return false;
    schedules.emplace_back();
    class_totals.push_back(0);
    class_bounds.push_back(kept != nullptr ? kept->bounds[c] : 0);
    proven.push_back(0);
    start.elites.emplace_back();
    start.solved.push_back(0);
    return true;
  };
  for (size_t c = 0; c < plan.count.size(); ++c) {
    if (deferred(c)) {
      unsolved(c);
      continue;
    }
    const Problem& sub = plan.ClassBlock(static_cast<int>(c)).sub.problem;
    const double weight = weight_of(c);
    if (kept != nullptr && kept->solved[c] && kept->proven[c] != 0) {
      // Proven optimal (as a standalone block, at least within the exact solver's family):
      // another search of it finds nothing better, and its time goes to the others.
      schedules.push_back(kept->schedules[c]);
      class_totals.push_back(kept->totals[c]);
      class_bounds.push_back(kept->bounds[c]);
      proven.push_back(kept->proven[c]);
      start.elites.push_back(kept->elites.size() > c ? kept->elites[c] : std::vector<Schedule>{});
      start.solved.push_back(1);
      weight_left -= weight;
      continue;
    }
    // Continued: the class's search goes on from the elite schedules it left (its starts and the
    // exact solver's run were had in the round it began).
    std::vector<Schedule> nested_starts;
    if (resume && kept != nullptr && kept->solved[c]) {
      nested_starts = kept->elites.size() > c && !kept->elites[c].empty() ? kept->elites[c]
                                                                          : std::vector<Schedule>{kept->schedules[c]};
    }
    SearchParams nested = params;
    nested.repeats.time_share = 0;  // a block is one period: nothing in it repeats at this scale
    nested.threads = nested_threads;
    nested.seed = RoundSeed(params.seed, round, plan.count.size(), c);
    nested.cache_entries = std::min<int64_t>(params.cache_entries, 1 << 18);
    nested.progress_interval = 0.05;
    if (!nested_starts.empty()) {
      nested.constructive.greedy_fusion = false;
      nested.constructive.pattern_grouping = false;
      nested.exact.time_share = 0;
    }
    // The block's lower bound (a block that meets it is done, below), computed before the
    // class's slice is set, so that it is paid from the share and not from the class's search:
    // taken from the slice, it left a class little or nothing (ResNet-50, mlsys-2026, 10 s: the
    // first class's bound took 0.18 s beside a 0.47-s search; DenseNet-121 cut at its
    // transitions, an experiment, docs/search.md "Where a nested search's time goes": 0.36 s of
    // the first block's 0.24 s, and the block was composed as its baseline, 6.03 M where its
    // search reaches 4.4-4.9 M).
    // A piece's bound is not computed: its slice is a few tens of milliseconds (Inception-v3: 48
    // pieces in 2.3 s), and the bound of one 30-op piece took 0.67 s. (0: no piece is ever
    // taken to meet its bound.) Nor is a bound the run's stop has made useless (free mode: the
    // class is not searched).
    Latency bound = 0;
    if (!plan.pieces) {
      if (kept != nullptr && kept->bounds[c] > 0) {
        bound = kept->bounds[c];  // 0: an alternative's class that no round has solved yet
      } else if (params.deterministic || !stop.load(std::memory_order_relaxed)) {
        bound = ComputeLowerBound(sub).total();
      }
    }
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
        if (unsolved(c)) continue;
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
      solved = search(sub, nested, class_deadline, nested_stop, nested_callbacks, nested_starts);
    } catch (const std::exception& error) {
      if (unsolved(c)) continue;
      // E.g. no valid start for a block: the graph's own starts stand, the search goes on.
      result.note = std::string("a block class could not be solved: ") + error.what();
      break;
    }
    result.moves += solved.moves;
    Schedule schedule = WithoutFinalRetention(solved.best);
    const Evaluation check = EvaluateFast(sub, schedule);
    if (!check.ok()) {
      if (unsolved(c)) continue;
      result.note = "a block's schedule turned invalid without its final retention";
      break;
    }
    start.elites.push_back(resume_next ? std::move(solved.elite) : std::vector<Schedule>{});
    schedules.push_back(std::move(schedule));
    start.solved.push_back(1);
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

void ProveRepeatClasses(const SearchParams& params, const RepeatPlan& plan, RepeatStart& start,
                        Clock::time_point begun, Clock::time_point deadline, const std::atomic<bool>& stop,
                        const std::function<Candidate(const Schedule&)>& offer) {
  if (!start.composed) return;
  const Clock::time_point proofs_begun = Clock::now();
  auto ops_of = [&](size_t c) { return plan.ClassBlock(static_cast<int>(c)).sub.op_ids.size(); };
  // A block of more ops than a subgraph of the family may hold is left to the search: the family
  // would restrict it, and the solver's first expansion (every connected closed op set a first
  // subgraph can be) does not end on such a block (ViT-B/16's 159-op layer: not one state in 15 s).
  std::vector<size_t> order;
  for (size_t c = 0; c < start.proven.size(); ++c) {
    if (start.proven[c] != 0 || !start.solved[c]) continue;
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
    const Problem& sub = plan.ClassBlock(static_cast<int>(c)).sub.problem;
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

}  // namespace annealer
