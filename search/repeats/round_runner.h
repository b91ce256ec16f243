// The rounds of the repeated-block and piece starts (docs/search.md, "Rounds of the repeated-block
// start"; the arithmetic in search/repeats/rounds.h): round 1, its block proofs, then further
// rounds while the share lasts, every composition polished by the driver's passes
// (search/repeats/composition_passes.h) and offered, the lowest after the passes adopted.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>

#include "search/params.h"
#include "search/repeats/composition_passes.h"
#include "search/repeats/repeat_start.h"
#include "search/repeats/repeats.h"

namespace annealer {

// The piece start's slice per piece in a round in free mode: at most this, whatever the run's
// length (RunRounds).
constexpr double kPieceSecondsMax = 0.15;

struct RoundsSetup {
  std::chrono::steady_clock::time_point begun;     // when the start began (its share counts from it)
  std::chrono::steady_clock::time_point deadline;  // the run's
  int threads = 1;                                 // round 1's nested searches
  int later_threads = 1;                           // later rounds' nested searches
  // Set while a later round runs, when the workers run beside it (they leave it its threads);
  // null: the rounds run before the workers.
  std::atomic<bool>* later_running = nullptr;
  NestedSearch nested_search;  // runs each block class's search (the driver's RunSearch)
};

// Runs the rounds: `round_stop` ends them, as does `stopped` (the run's stop test) between
// rounds; `polish_stop` cuts a composition's passes. `adopt` gets each polished composition that
// is the lowest so far (the workers walk from it), `first_done` is called when round 1 has
// ended, composed or not. Returns round 1's start (its classes, after its block proofs) with
// what the rounds did in its result; nullopt when the plan is empty.
std::optional<RepeatStart> RunRounds(const SearchParams& params, const RepeatPlan& plan,
                                     const CompositionPasses& passes, const RoundsSetup& setup,
                                     const std::atomic<bool>& round_stop, const std::function<bool()>& stopped,
                                     const std::function<bool()>& polish_stop,
                                     const std::function<void(const Schedule&, Latency)>& adopt,
                                     const std::function<void()>& first_done);

}  // namespace annealer
