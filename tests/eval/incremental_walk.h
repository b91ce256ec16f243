// The random-edit walk that property tests of cost-model extensions share (chip rules H1-H5,
// the weight path H6): per DAG shape, 20 random problems whose rules `draw` sets, a random
// schedule each, then 100 random edits proposed to the incremental evaluator (with or without
// a cache) and priced by the oracle; every proposal must agree with the oracle, verdict, total
// and message alike. Valid proposals are committed, and one invalid in seven too, so that the
// walk also starts from invalid schedules.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>

#include "eval/cost/cost_cache.h"
#include "eval/cost/incremental.h"
#include "eval/oracle.h"
#include "eval/random_schedule.h"

namespace annealer::testing {

struct WalkTally {
  int proposals = 0;
  int valid = 0;
  std::map<std::string, int> rules;  // broken rule ids of the invalid proposals
};

inline WalkTally IncrementalWalk(int seed_base,
                                 const std::function<void(Problem&, std::mt19937_64&, int trial)>& draw) {
  const auto close = [](double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); };
  WalkTally tally;
  CostCache cache(1 << 12);
  for (DagShape shape : kAllDagShapes) {
    std::mt19937_64 rng(seed_base + static_cast<int>(shape));
    for (int trial = 0; trial < 20; ++trial) {
      Problem problem = RandomProblem(rng, shape, {.min_ops = 3, .max_ops = 9});
      draw(problem, rng, trial);
      cache.Clear();
      RandomScheduleOptions options;
      options.max_steps = 300;
      options.invalid_probability = 0.05;
      IncrementalEvaluator evaluator(problem, trial % 2 ? &cache : nullptr);
      Schedule committed = RandomSchedule(problem, rng, options);
      evaluator.Reset(committed);
      for (int move = 0; move < 100 && !committed.subgraphs.empty(); ++move) {
        const ScheduleEdit edit = RandomEdit(problem, committed, rng, options);
        const Schedule proposed = ApplyEdit(committed, edit);
        const Evaluation oracle = EvaluateOracle(problem, proposed);
        const Candidate candidate = evaluator.Propose(edit);
        INFO("shape " << static_cast<int>(shape) << " trial " << trial << " move " << move << ": oracle "
                      << oracle.violation.Message() << ", incremental " << candidate.violation.Message());
        REQUIRE(candidate.valid == oracle.ok());
        if (oracle.ok()) {
          CHECK(close(candidate.total, oracle.total));
        } else {
          CHECK(candidate.violation.Message() == oracle.violation.Message());
          ++tally.rules[oracle.violation.rule];
        }
        ++tally.proposals;
        tally.valid += oracle.ok();
        if (oracle.ok() || move % 7 == 0) {
          evaluator.Commit();
          committed = proposed;
        } else {
          evaluator.Revert();
        }
      }
    }
  }
  return tally;
}

}  // namespace annealer::testing
