// The property tests that cost-model extensions share (chip rules H1-H5, the weight path H6), each
// with the extension's rules drawn by the caller's `draw`:
// - every fast pricing of a schedule's subgraphs against the oracle (CheckSubgraphsAgainstOracle);
// - whole schedules of random problems priced by EvaluateFast, with and without the cache,
//   against the oracle (FastAgainstOracle);
// - the lower bound and every suffix bound against the oracle on random valid schedules
//   (BoundBelowOracle);
// - the random-edit walk (IncrementalWalk): per DAG shape, 20 random problems, a random schedule
//   each, then 100 random edits proposed to the incremental evaluator (with or without a cache)
//   and priced by the oracle; every proposal must agree with the oracle, verdict, total and
//   message alike. Valid proposals are committed, and one invalid in seven too, so that the walk
//   also starts from invalid schedules.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>

#include "eval/bound/bounds.h"
#include "eval/cost/cost_cache.h"
#include "eval/cost/evaluate_fast.h"
#include "eval/cost/incremental.h"
#include "eval/cost/subgraph_cost.h"
#include "eval/oracle.h"
#include "eval/random_schedule.h"
#include "tests/support/suffix_bounds.h"

namespace annealer::testing {

inline bool RelativelyClose(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }

struct SubgraphTally {
  int valid = 0, invalid = 0;
  std::map<std::string, int> rules;  // broken rule ids of the invalid subgraphs
};
using OnValidSubgraph = std::function<void(const Problem& problem, const Subgraph& subgraph,
                                           const std::vector<TensorId>& retained_in, const SubgraphResult& oracle)>;

// Per subgraph of `schedule`, after what the one before retains: CostSubgraph (by step classes)
// and CostSubgraphStepByStep equal the oracle in verdict, message, latency, compute, memory and
// peak working set; a valid subgraph's latency is at least its compute and its memory time (what
// the bound reads), and `on_valid` sees it.
inline void CheckSubgraphsAgainstOracle(const Problem& problem, const Schedule& schedule, const std::string& what,
                                        SubgraphTally& tally, const OnValidSubgraph& on_valid = {}) {
  std::vector<TensorId> retained_in;
  for (size_t i = 0; i < schedule.subgraphs.size(); ++i) {
    const Subgraph& s = schedule.subgraphs[i];
    const SubgraphResult oracle = EvaluateSubgraphOracle(problem, s, retained_in);
    for (const SubgraphResult& fast : {CostSubgraph(problem, s, retained_in), CostSubgraphStepByStep(problem, s, retained_in)}) {
      INFO(what << ", subgraph " << i);
      INFO("oracle: " << oracle.violation.Message() << " latency " << oracle.report.latency);
      INFO("fast:   " << fast.violation.Message() << " latency " << fast.report.latency);
      CHECK(fast.verdict == oracle.verdict);
      CHECK(fast.violation.Message() == oracle.violation.Message());
      CHECK(RelativelyClose(fast.report.latency, oracle.report.latency));
      CHECK(RelativelyClose(fast.report.compute_time, oracle.report.compute_time));
      CHECK(RelativelyClose(fast.report.memory_time, oracle.report.memory_time));
      CHECK(fast.report.peak_working_set == oracle.report.peak_working_set);
    }
    if (oracle.ok()) {
      ++tally.valid;
      CHECK(oracle.report.latency >= oracle.report.compute_time * (1 - 1e-12));
      CHECK(oracle.report.latency >= oracle.report.memory_time * (1 - 1e-12));
      if (on_valid) on_valid(problem, s, retained_in, oracle);
    } else {
      ++tally.invalid;
      ++tally.rules[oracle.violation.rule];
    }
    retained_in = s.retain;
  }
}

// Per DAG shape, 120 random problems of 3 to 10 ops (a quarter with Layout ops) whose rules
// `draw` sets, three random schedules each (fused more and more, one step in ten invalid): every
// subgraph as CheckSubgraphsAgainstOracle checks it, and the whole schedule by EvaluateFast without
// a cache, with one, and with it warm, against EvaluateOracle. Returns the valid schedules.
inline int FastAgainstOracle(int seed_base, const std::function<void(Problem&, std::mt19937_64&, int trial)>& draw,
                             SubgraphTally& tally, const OnValidSubgraph& on_valid = {}) {
  int whole_valid = 0;
  for (DagShape shape : kAllDagShapes) {
    std::mt19937_64 rng(seed_base + static_cast<int>(shape));
    for (int trial = 0; trial < 120; ++trial) {
      RandomProblemOptions problem_options;
      problem_options.max_ops = 3 + trial % 8;
      problem_options.layout_probability = trial % 4 == 0 ? 0.3 : 0;
      Problem problem = RandomProblem(rng, shape, problem_options);
      draw(problem, rng, trial);
      CostCache cache(1 << 10);
      for (int s = 0; s < 3; ++s) {
        RandomScheduleOptions options;
        options.fuse_probability = 0.3 + 0.3 * s;
        options.invalid_probability = 0.1;
        options.max_steps = 500;
        const Schedule schedule = RandomSchedule(problem, rng, options);
        const std::string what = "shape " + std::to_string(static_cast<int>(shape)) + " trial " +
                                 std::to_string(trial) + " schedule " + std::to_string(s);
        CheckSubgraphsAgainstOracle(problem, schedule, what, tally, on_valid);
        const Evaluation oracle = EvaluateOracle(problem, schedule);
        for (CostCache* c : {static_cast<CostCache*>(nullptr), &cache, &cache}) {
          const Evaluation fast = EvaluateFast(problem, schedule, c);
          INFO(what << ": oracle " << oracle.violation.Message() << ", fast " << fast.violation.Message());
          REQUIRE(fast.verdict == oracle.verdict);
          CHECK(fast.violation.Message() == oracle.violation.Message());
          CHECK(RelativelyClose(fast.total, oracle.total));
        }
        whole_valid += oracle.ok();
      }
    }
  }
  return whole_valid;
}

// Per DAG shape, 80 random problems of 3 to 11 ops at native 8 or 32 (one in five with Layout
// ops when `layouts`) whose rules `draw` sets, four random valid-or-not schedules each (fused more
// and more, with recomputation): for each valid one the bound and every suffix bound
// (CheckSuffixBounds) are at most the oracle's latency, and `on_valid` sees it. Returns the valid
// schedules.
inline int BoundBelowOracle(int seed_base, bool layouts,
                            const std::function<void(Problem&, std::mt19937_64&, int trial)>& draw,
                            const std::function<void(const Problem&)>& on_valid = {}) {
  int valid = 0;
  for (DagShape shape : kAllDagShapes) {
    std::mt19937_64 rng(seed_base + static_cast<int>(shape));
    for (int trial = 0; trial < 80; ++trial) {
      RandomProblemOptions problem_options;
      problem_options.max_ops = 3 + trial % 9;
      problem_options.native = trial % 2 == 0 ? 8 : 32;
      if (layouts) problem_options.layout_probability = trial % 5 == 0 ? 0.3 : 0;
      Problem problem = RandomProblem(rng, shape, problem_options);
      draw(problem, rng, trial);
      const LowerBound bound = ComputeLowerBound(problem);
      const BoundModel model = BuildBoundModel(problem);
      for (int s = 0; s < 4; ++s) {
        RandomScheduleOptions options;
        options.fuse_probability = 0.2 + 0.25 * s;
        options.recompute_probability = 0.2;
        options.invalid_probability = 0;
        options.max_steps = 500;
        const Schedule schedule = RandomSchedule(problem, rng, options);
        const Evaluation evaluation = EvaluateOracle(problem, schedule);
        if (!evaluation.ok()) continue;
        ++valid;
        if (on_valid) on_valid(problem);
        INFO("shape " << static_cast<int>(shape) << " trial " << trial << " schedule " << s << ": bound compute "
                      << bound.compute << " io " << bound.graph_io << " traffic " << bound.traffic << " combined "
                      << bound.combined << " islands " << bound.islands << ", oracle " << evaluation.total);
        CHECK(bound.total() <= evaluation.total * (1 + 1e-9));
        CheckSuffixBounds(model, problem, schedule, evaluation);
      }
    }
  }
  return valid;
}

// The rules broken by the invalid subgraphs, as " H1:12 V4:3".
inline std::string ByRule(const SubgraphTally& tally) {
  std::string by_rule;
  for (const auto& [rule, count] : tally.rules) by_rule += " " + rule + ":" + std::to_string(count);
  return by_rule;
}

struct WalkTally {
  int proposals = 0;
  int valid = 0;
  std::map<std::string, int> rules;  // broken rule ids of the invalid proposals
};

inline WalkTally IncrementalWalk(int seed_base,
                                 const std::function<void(Problem&, std::mt19937_64&, int trial)>& draw) {
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
          CHECK(RelativelyClose(candidate.total, oracle.total));
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
