// Hand-made schedules for the start passes' tests (subgraphs of the given ops in order, each
// fitted in the context the retention before it gives), and what their random cases share: the
// starts, and the check of an edit against the oracle.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <set>
#include <vector>

#include "eval/cost/incremental.h"
#include "eval/model/schedule.h"
#include "eval/oracle.h"
#include "search/starts/baseline.h"
#include "search/starts/constructive.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"

namespace annealer::testing {

// Subgraph g holds groups[g] and retains retain[g] (what g + 1 finds retained), fitted by
// FitSubgraph (`thorough` as the polish's fit); the test fails where a group has no valid fit.
inline Schedule FittedSchedule(const SubgraphPricer& pricer, const std::vector<std::vector<OpId>>& groups,
                               const std::vector<std::vector<TensorId>>& retain, bool thorough) {
  const std::function<bool()> never = [] { return false; };
  Schedule schedule;
  std::vector<TensorId> in;
  for (size_t g = 0; g < groups.size(); ++g) {
    auto fit = FitSubgraph(pricer, groups[g], in, retain[g], nullptr, thorough, never);
    INFO("group " << g);
    REQUIRE(fit.has_value());
    schedule.subgraphs.push_back(fit->subgraph);
    in = retain[g];
  }
  return schedule;
}

// The random cases' starts of a pass test, in this order: the baseline, greedy fusion on it, and
// runs of 1..max_run consecutive ops, each fitted (a run with no valid fit as its ops one by one),
// the runs' lengths drawn from rng.
inline std::vector<Schedule> PassStarts(const Problem& problem, const SubgraphPricer& pricer, std::mt19937_64& rng,
                                        int max_run) {
  const std::function<bool()> never = [] { return false; };
  std::vector<Schedule> starts{BuildBaseline(problem)};
  starts.push_back(GreedyFusion(problem, pricer, starts[0], never));
  Schedule grouped;
  const int n = static_cast<int>(problem.ops.size());
  for (int at = 0; at < n;) {
    const int len = 1 + static_cast<int>(rng() % max_run);
    std::vector<OpId> ops;
    for (int o = at; o < std::min(n, at + len); ++o) ops.push_back(o);
    at += static_cast<int>(ops.size());
    if (auto fit = FitSubgraph(pricer, ops, {}, {}, nullptr, false, never)) {
      grouped.subgraphs.push_back(fit->subgraph);
    } else {
      for (OpId o : ops) grouped.subgraphs.push_back(FitSubgraph(pricer, {o}, {}, {}, nullptr, false, never)->subgraph);
    }
  }
  starts.push_back(std::move(grouped));
  return starts;
}

// An edit of `start` (the evaluator's committed schedule) keeps every op, and the incremental
// evaluator prices it as the oracle prices the edited schedule; the proposal is reverted.
inline void CheckEditAgainstOracle(const Problem& problem, const Schedule& start, const ScheduleEdit& edit,
                                   IncrementalEvaluator& evaluator) {
  std::set<OpId> ops_before, ops_after;
  for (const Subgraph& sg : start.subgraphs) ops_before.insert(sg.ops.begin(), sg.ops.end());
  const Schedule next = ApplyEdit(start, edit);
  for (const Subgraph& sg : next.subgraphs) ops_after.insert(sg.ops.begin(), sg.ops.end());
  CHECK(ops_before == ops_after);
  const Evaluation truth = EvaluateOracle(problem, next);
  const Candidate candidate = evaluator.Propose(edit);
  CHECK(candidate.valid == truth.ok());
  if (candidate.valid && truth.ok()) CHECK(candidate.total == doctest::Approx(truth.total).epsilon(1e-9));
  evaluator.Revert();
}

}  // namespace annealer::testing
