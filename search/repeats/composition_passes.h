// What the rounds (search/repeats/round_runner.h) borrow from the driver: the whole-graph passes a
// new best of the run gets, and where a polished composition goes. The rounds own neither the
// cost cache nor the pool; the driver builds this over its own.
//
// The protocol, applied to every composition a round makes:
// 1. `evaluate` prices it; an invalid composition goes no further (the round reports it).
// 2. `first` runs on it and its result is taken whatever its total, if valid (the regrouping a
//    start gets: it reshapes what the later passes work on).
// 3. `polish`, if set, runs next and is taken only if lower.
// 4. `passes`, in order, again and again until a sweep takes nothing, each taken only if lower.
// Every pass gets a stop test, returns its input (or an equal schedule) when it finds nothing,
// and what it returns after the stop test turned true is dropped. Passes never see each other's
// state: each gets the schedule taken so far.
// 5. `offer` gets the result and its total (the driver's pool, kind "repeat").
#pragma once

#include <functional>
#include <vector>

#include "eval/cost/incremental.h"
#include "eval/model/schedule.h"

namespace annealer {

struct CompositionPasses {
  using Stop = std::function<bool()>;
  using Pass = std::function<Schedule(const Schedule&, const Stop&)>;

  std::function<Candidate(const Schedule&)> evaluate;
  Pass first;
  Pass polish;               // empty: none
  std::vector<Pass> passes;  // empty: none
  std::function<void(const Schedule&, Latency)> offer;
};

}  // namespace annealer
