// The suffix check of RemainingLowerBound (the exact solver's A* heuristic, eval/bound/bounds.h), shared
// by the bound's property tests: after every prefix of a valid schedule, the ops not yet run are
// bounded by the latency of the subgraphs left (the empty suffix included); and the check of one
// bound part's property tests over a problem's sample schedules.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "eval/bound/bounds.h"
#include "eval/oracle.h"
#include "eval/model/problem.h"
#include "eval/model/schedule.h"

namespace annealer::testing {

inline void CheckSuffixBounds(const BoundModel& model, const Problem& problem, const Schedule& schedule,
                              const Evaluation& evaluation, double slack = 1e-9) {
  const size_t count = schedule.subgraphs.size();
  std::vector<Latency> suffix(count + 1, 0);
  for (size_t i = count; i-- > 0;) suffix[i] = suffix[i + 1] + evaluation.subgraphs[i].latency;
  std::vector<char> remaining(problem.ops.size(), 1);
  for (size_t i = 0; i <= count; ++i) {
    CAPTURE(i);
    CHECK(RemainingLowerBound(model, remaining) <= suffix[i] * (1 + slack));
    if (i < count) {
      for (OpId op : schedule.subgraphs[i].ops) remaining[op] = 0;
    }
  }
}

// What a property test of one bound part counts over its problems: the valid schedules, and
// where the part raised the bound, those schedules, the ones it meets and its closest ratio.
struct RaisedTally {
  int valid = 0;
  int raised_schedules = 0;
  int met = 0;
  double tightest = 0;
};

// Every valid schedule of `schedules` against `bound` (its total, its islands part and, with
// `crossing`, its crossing part within the oracle's latency; the suffix bounds), `before` the
// bound without the part under test; where `rises` the tally of the raised schedules too.
// Returns how many of `schedules` were valid.
inline int CheckBoundOnSchedules(const Problem& problem, const BoundModel& model, const LowerBound& bound,
                                 const LowerBound& before, const std::vector<Schedule>& schedules, bool rises,
                                 bool crossing, const std::string& context, RaisedTally& tally) {
  int valid = 0;
  for (const Schedule& schedule : schedules) {
    const Evaluation evaluation = EvaluateOracle(problem, schedule);
    if (!evaluation.ok()) continue;
    ++valid;
    INFO(context << ": bound " << bound.total() << " (islands " << bound.islands << ", crossing " << bound.crossing
                 << "; without the part " << before.total() << "), oracle " << evaluation.total);
    CHECK(bound.islands <= evaluation.total * (1 + 1e-9));
    if (crossing) CHECK(bound.crossing <= evaluation.total * (1 + 1e-9));
    CHECK(bound.total() <= evaluation.total * (1 + 1e-9));
    CheckSuffixBounds(model, problem, schedule, evaluation);
    if (rises) {
      ++tally.raised_schedules;
      tally.tightest = std::max(tally.tightest, bound.total() / evaluation.total);
      tally.met += bound.total() >= evaluation.total * (1 - 1e-9) ? 1 : 0;
    }
  }
  tally.valid += valid;
  return valid;
}

}  // namespace annealer::testing
