// One round of the repeated-block and piece starts and the block proofs after it (search/driver.h
// describes the start and passes its RunSearch down for the nested searches; search/repeats/round_runner.h runs the rounds).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <vector>

#include "eval/cost/incremental.h"
#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "search/params.h"
#include "search/repeats/repeats.h"
#include "search/search_summary.h"

namespace annealer {

// The repeated blocks the start would solve; empty when it does not apply (no share, a small
// graph) or nothing repeats. Where nothing repeats and repeats.piece_ops > 0, the pieces.
RepeatPlan RepeatStartPlan(const Problem& problem, const SearchParams& params);

// What a round leaves for its block proofs (ProveRepeatClasses) and for the next round: per class
// its schedule (final retention dropped), total, block bound and what is proven of it.
struct RepeatStart {
  RepeatResult result;
  std::vector<Schedule> schedules;
  std::vector<Latency> totals;
  std::vector<Latency> bounds;
  std::vector<int> proven;  // 0 unproven, 1 meets the block's bound, 2 optimal within the family
  // Per class: it has a schedule. Every class of the chosen partition has one when `composed`;
  // a class of the phase ties' alternatives only (RepeatPlan::alternative_blocks) may be left
  // without (out of time, or its search failed), and its blocks are then not composed.
  std::vector<char> solved;
  // Per class: its nested search's elite schedules, best first, when a later round is to continue
  // it (repeats.round_continue; else empty).
  std::vector<std::vector<Schedule>> elites;
  bool composed = false;    // every class solved and the blocks composed into a valid schedule

  // Offers the composition of the classes' schedules and checks its total against their sum;
  // where the plan has alternatives, then also the cheapest chain of blocks (CheapestChain) when
  // it is another.
  bool Compose(const RepeatPlan& plan, const std::function<Candidate(const Schedule&)>& offer);
  void Count();
};

// One round (search/repeats/rounds.h): round `round` (0-based) searches every class with its
// round's seeds, between `begun` and `share_end` in free mode, except those `kept` (an earlier
// round, composed) has proven, whose schedules it takes. A class is searched anew, or with
// `resume` from where `kept`'s search of it ended (its elite schedules as the nested search's
// starts). `resume_next`: keep each class's elite for a round that resumes this one. nullopt when
// the plan is empty; otherwise what happened, and the composed schedule through `offer`.
// `nested_threads`: the threads of each nested search, which `search` runs.
std::optional<RepeatStart> RunRepeatStart(const SearchParams& params, const RepeatPlan& plan, int round,
                                          const NestedSearch& search,
                                          const RepeatStart* kept, bool resume, bool resume_next,
                                          std::chrono::steady_clock::time_point begun,
                                          std::chrono::steady_clock::time_point share_end, int nested_threads,
                                          std::chrono::steady_clock::time_point deadline,
                                          const std::atomic<bool>& stop,
                                          const std::function<Candidate(const Schedule&)>& offer);

// The block proofs, after a round composed its schedule: the exact solver on each class not yet
// proven, with the class's schedule as its incumbent, smallest blocks first (they finish
// soonest), each with all the proof time left (repeats.proof_share of the budget counted from
// `begun`; deterministic mode: repeats.proof_states states per class, whatever the clock). A
// class the solver beats takes the solver's schedule and the blocks are composed and offered
// again. On such a graph this replaces the exact solver on the whole graph, which cannot finish
// there.
void ProveRepeatClasses(const SearchParams& params, const RepeatPlan& plan, RepeatStart& start,
                        std::chrono::steady_clock::time_point begun, std::chrono::steady_clock::time_point deadline,
                        const std::atomic<bool>& stop, const std::function<Candidate(const Schedule&)>& offer);

}  // namespace annealer
