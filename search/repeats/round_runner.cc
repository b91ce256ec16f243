#include "search/repeats/round_runner.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "search/repeats/rounds.h"

namespace annealer {

namespace {

using Clock = std::chrono::steady_clock;

// A composition gets the passes a new best of the run gets, to their end, before it is compared:
// what the whole-graph passes make of it is what it is worth (ResNet-50, tpu-v5e: 241k composed,
// 223k after the regrouping and serving, 219k after the rest).
// The piece start's composition is also polished (`polish`): a piece's nested search has tens
// of milliseconds (Inception-v3: 48 pieces in 2-4 s), too little for its own start's polish
// (Inception-v3, ascend910-core: composed 8.4-10.0 M against 8.1 M from the polished greedy
// start).
std::pair<Schedule, Candidate> PolishComposition(const CompositionPasses& passes, const Schedule& composed,
                                                 const Candidate& raw, const std::function<bool()>& stop) {
  std::pair<Schedule, Candidate> best{composed, raw};
  auto take = [&](Schedule next, bool if_lower) {
    if (stop() || next == best.first) return false;
    const Candidate c = passes.evaluate(next);
    if (!c.valid || (if_lower && c.total >= best.second.total * (1 - 1e-12))) return false;
    best = {std::move(next), c};
    return true;
  };
  take(passes.first(composed, stop), false);
  if (passes.polish) take(passes.polish(best.first, stop), true);
  if (passes.passes.empty()) return best;
  for (bool gained = true; gained && !stop();) {
    gained = false;
    for (const CompositionPasses::Pass& pass : passes.passes) gained |= take(pass(best.first, stop), true);
  }
  return best;
}

}  // namespace

std::optional<RepeatStart> RunRounds(const SearchParams& params, const RepeatPlan& plan,
                                     const CompositionPasses& passes, const RoundsSetup& setup,
                                     const std::atomic<bool>& round_stop, const std::function<bool()>& stopped,
                                     const std::function<bool()>& polish_stop,
                                     const std::function<void(const Schedule&, Latency)>& adopt,
                                     const std::function<void()>& first_done) {
  RoundChoice choice;
  int current_round = 1;
  // What the rounds offer: the composed schedule is checked (the start compares its total with
  // the blocks' sum) and polished; the polished one joins the pool, and becomes the composition
  // the workers walk from when it is the lowest so far.
  const std::function<Candidate(const Schedule&)> offer = [&](const Schedule& composed) {
    const Candidate raw = passes.evaluate(composed);
    if (!raw.valid) return raw;
    const auto [schedule, polished] = PolishComposition(passes, composed, raw, polish_stop);
    passes.offer(schedule, polished.total);
    if (choice.Offer(current_round, polished.total, raw.total)) adopt(schedule, polished.total);
    return raw;
  };
  const double left = std::chrono::duration<double>(setup.deadline - setup.begun).count();
  double seconds = RoundSeconds(left, params.repeats.time_share, params.repeats.round_seconds);
  // Pieces get at most kPieceSecondsMax each in a round in free mode, whatever the run's length
  // (their rounds are capped by that, not by repeats.round_seconds): the composition helps
  // only while the lone worker's best is still behind it. GoogLeNet's 35 pieces at 0.12-0.13 s
  // each (a 10-s run) took ascend910-core from 2.02 M to 1.82-1.95 M; with a 60-s run's share
  // (~0.8 s each) in one round the lone worker had gone further by the time they were composed,
  // the workers stayed on their own best, and the run ended at 1.99 M, where it ended without
  // pieces.
  if (plan.pieces && !params.deterministic) {
    seconds = std::min(RoundSeconds(left, params.repeats.time_share, 0),
                       kPieceSecondsMax * static_cast<double>(plan.count.size()));
  }
  const auto slice = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  // Continued rounds on repeated blocks only: the pieces' rounds are many searches of tens of
  // milliseconds, not measured continued.
  const bool resume = params.repeats.round_continue && !plan.pieces;
  std::optional<RepeatStart> first =
      RunRepeatStart(params, plan, 0, setup.nested_search, nullptr, false, resume, setup.begun, setup.begun + slice, setup.threads,
                     setup.deadline, round_stop, offer);
  first_done();
  if (!first || !first->composed) return first;
  ProveRepeatClasses(params, plan, *first, setup.begun, setup.deadline, round_stop, offer);
  // Per round (index round - 1): its proven classes, counted when it has ended.
  std::vector<RepeatResult> per_round{first->result};  // what each round proved and composed
  // What a round keeps (the proven classes) and, continuing, goes on from: round 1 after its
  // proofs, or (repeats.round_continue) the last round composed.
  std::optional<RepeatStart> last;
  for (int r = 1;; ++r) {
    if (round_stop.load() || stopped()) break;
    const RepeatStart& kept = last ? *last : *first;
    if (std::all_of(kept.proven.begin(), kept.proven.end(), [](int p) { return p != 0; })) break;
    const Clock::time_point now = Clock::now();
    double round_seconds = 0;
    if (params.deterministic) {
      if (r >= params.repeats.deterministic_rounds) break;
    } else {
      if (params.repeats.round_seconds <= 0) break;  // one round, as before the rounds
      round_seconds = NextRoundSeconds(std::chrono::duration<double>(now - setup.begun).count(), seconds, r,
                                       params.repeats.round_growth, left, params.repeats.time_share);
      if (round_seconds <= 0) break;
    }
    current_round = r + 1;
    if (setup.later_running != nullptr) setup.later_running->store(true, std::memory_order_release);
    std::optional<RepeatStart> next = RunRepeatStart(
        params, plan, r, setup.nested_search, &kept, resume, resume, now,
        now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(round_seconds)),
        setup.later_threads, setup.deadline, round_stop, offer);
    if (setup.later_running != nullptr) setup.later_running->store(false, std::memory_order_release);
    if (!next) break;
    first->result.moves += next->result.moves;
    if (!next->composed) break;
    per_round.push_back(next->result);
    if (resume) last = std::move(next);
  }
  // What the run took: the composition the workers walk from (the offer that made its round the
  // lowest; round 1 may have offered twice, its block proofs composing it again) and its round's
  // proofs.
  if (choice.chosen >= 1 && choice.chosen <= static_cast<int>(per_round.size())) {
    first->result.total = choice.chosen_composed;
    first->result.total_first = choice.first_composed;
    const RepeatResult& taken = per_round[choice.chosen - 1];
    first->result.bound_met = taken.bound_met;
    first->result.exact_optimal = taken.exact_optimal;
    first->result.searched_classes = taken.searched_classes;
    first->result.chain_total = taken.chain_total;
  }
  first->result.rounds = choice.rounds;
  first->result.chosen_round = choice.chosen;
  first->result.polished_first = choice.first;
  first->result.polished = choice.lowest;
  return first;
}

}  // namespace annealer
