// What the exact solver (search/exact/exact.h) hands back, shared by its two users: the `annealer
// exact` command and the search driver (which puts the schedule into the elite pool).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "eval/model/problem.h"
#include "eval/model/schedule.h"

namespace annealer {

enum class ExactStatus {
  // The family was exhausted: no schedule of the family is better than `best` (by more than a
  // relative 1e-9, the rounding of sums taken in another order). `best` may be the incumbent
  // handed in, which can lie outside the family (recomputation, partial edge tiles).
  kOptimal,
  // Time, the state budget or a stop request ended the search first, or a configuration of the
  // family could not be priced (an explicit traversal of more than 2^20 tiles): `best` (when
  // present) is the best schedule known, nothing is proven.
  kFeasible,
  // No schedule at all: the family holds no valid schedule and no incumbent was given.
  kNone,
};

std::string_view ExactStatusName(ExactStatus status);  // "optimal", "feasible", "none"

struct ExactResult {
  ExactStatus status = ExactStatus::kNone;
  std::optional<Schedule> best;  // oracle-checked; latencies filled in
  Latency total = 0;             // the oracle's total of `best`
  // True when the solver's own dynamic program produced `best` (false: the incumbent stands).
  bool found_by_solver = false;
  std::string family;            // the family, stated exactly (search/exact/exact.h)
  std::string stop_reason;       // why a kFeasible run ended: "time", "state budget", "stopped",
                                 // "traversal cap"
  int64_t states = 0;            // DP states created, over all components
  int64_t expansions = 0;        // states expanded
  int64_t pricings = 0;          // subgraph configurations priced
  int64_t contexts = 0;          // (ops, retained-in, retain) contexts searched for their best
  int components = 0;            // weakly connected components solved separately
  double seconds = 0;
};

}  // namespace annealer
