// The property-test driver of P40's frame (tests/eval/bound/sums/lhs_strip_sums_test.cc: P40; tests/eval/bound/sums/lone_producers_test.cc:
// P55): random problems, their sampled schedules, each again at its own peak working set, and the
// schedules that run one claimant with some of its producers fused, checked against the part.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <stdexcept>
#include <vector>

#include "eval/bound/analysis.h"
#include "eval/bound/bounds.h"
#include "eval/bound/sums/upstream/lhs_strip_sums.h"
#include "eval/bound/sums/upstream/upstream_sums.h"
#include "eval/oracle.h"
#include "search/starts/baseline.h"
#include "tests/support/sample_schedules.h"

namespace annealer::testing {

// The schedules that run the first claimant P40 adds (a fanned or FL sum; with `lone`, the first
// claimant with P55's floors when there is one) with 0, 1, half or all of its producers and the
// first d of the ops after it (every d; a disconnected group is invalid and skipped), at every w,
// h up to n and three k, the rest as the baseline runs it.
inline int ForEachStripConfiguration(const Problem& problem, const std::function<void(const Evaluation&)>& check,
                                     bool lone = false) {
  const bound_internal::Analysis analysis(problem);
  const bound_internal::UpstreamSums part = bound_internal::LhsStripSumFloor(problem, analysis);
  const bound_internal::UpstreamSums::Claimant* claimant = nullptr;
  for (const auto& cl : part.claimants) {
    if (lone && !cl.lone_floors.empty()) {
      claimant = &cl;
      break;
    }
  }
  for (const auto& cl : part.claimants) {
    if (claimant == nullptr && cl.upstream) {
      claimant = &cl;
      break;
    }
  }
  if (claimant == nullptr) return 0;
  const std::optional<Schedule> baseline = testing::BaselineIfAny(problem);
  if (!baseline) return 0;
  const Schedule& base = *baseline;
  const Elements n = problem.native;
  const size_t m = claimant->producers.size();
  std::vector<size_t> fused = {0, 1, m / 2, m};
  std::sort(fused.begin(), fused.end());
  fused.erase(std::unique(fused.begin(), fused.end()), fused.end());
  int checked = 0;
  const auto num_ops = static_cast<OpId>(problem.ops.size());
  for (size_t j : fused) {
    for (OpId d = 0; claimant->sum + d < num_ops; ++d) {
      Subgraph group;
      group.ops.assign(claimant->producers.begin(), claimant->producers.begin() + static_cast<std::ptrdiff_t>(j));
      for (OpId o = claimant->sum; o <= claimant->sum + d; ++o) group.ops.push_back(o);
      std::sort(group.ops.begin(), group.ops.end());
      for (Elements h = 1; h <= n; ++h) {
        for (Elements w = 1; w <= n; ++w) {
          for (Elements kk : {Elements{1}, Elements{2}, n}) {
            group.granularity = {w, h, kk};
            const Evaluation e = EvaluateOracle(problem, WithGroup(base, group));
            if (!e.ok()) continue;
            ++checked;
            INFO("granularity ", w, "x", h, "x", kk, " fused ", j, " ops after the sum ", d);
            check(e);
          }
        }
      }
    }
  }
  return checked;
}

// P55's lone instances: every producer of the first claimant with P55's floors run alone at one
// shape (every w, h up to n, three k), each right after a subgraph that makes its LHS and retains it
// (the maker's own run when it comes just before, else the maker run again alone at the baseline's
// granularity), or, where the LHS has no maker or does not fit, alone as it is; the rest as the
// baseline runs it.
inline int ForEachLoneInstance(const Problem& problem, const std::function<void(const Evaluation&)>& check) {
  const bound_internal::Analysis analysis(problem);
  const bound_internal::UpstreamSums part = bound_internal::LhsStripSumFloor(problem, analysis);
  const bound_internal::UpstreamSums::Claimant* claimant = nullptr;
  for (const auto& cl : part.claimants) {
    if (!cl.lone_floors.empty()) {
      claimant = &cl;
      break;
    }
  }
  if (claimant == nullptr) return 0;
  const std::optional<Schedule> baseline = testing::BaselineIfAny(problem);
  if (!baseline) return 0;
  const Schedule& base = *baseline;
  const Elements n = problem.native;
  int checked = 0;
  for (Elements h = 1; h <= n; ++h) {
    for (Elements w = 1; w <= n; ++w) {
      for (Elements kk : {Elements{1}, Elements{2}, n}) {
        Schedule schedule;
        for (const Subgraph& sg : base.subgraphs) {
          const bool producer = sg.ops.size() == 1 &&
                                std::find(claimant->producers.begin(), claimant->producers.end(), sg.ops[0]) !=
                                    claimant->producers.end();
          if (!producer) {
            schedule.subgraphs.push_back(sg);
            continue;
          }
          const TensorId lhs = problem.ops[sg.ops[0]].inputs[0];
          const OpId maker = problem.producer[lhs];
          if (maker != kNoOp && !analysis.TooLarge(lhs) && problem.ops[maker].kind == OpKind::Pointwise) {
            Subgraph& before = schedule.subgraphs.back();
            if (std::find(before.ops.begin(), before.ops.end(), maker) != before.ops.end()) {
              before.retain.push_back(lhs);
            } else {
              Subgraph again;
              again.ops = {maker};
              for (const Subgraph& other : base.subgraphs) {
                if (std::find(other.ops.begin(), other.ops.end(), maker) != other.ops.end()) again.granularity = other.granularity;
              }
              again.retain = {lhs};
              schedule.subgraphs.push_back(again);
            }
          }
          Subgraph alone = sg;
          alone.granularity = {w, h, kk};
          schedule.subgraphs.push_back(alone);
        }
        const Evaluation e = EvaluateOracle(problem, schedule);
        if (!e.ok()) continue;
        ++checked;
        INFO("lone instances at ", w, "x", h, "x", kk);
        check(e);
      }
    }
  }
  return checked;
}

struct StripSumCounts {
  int valid = 0, tight = 0, enumerated = 0, decided = 0, raised = 0, earlier = 0;
  double tightest = 0;
};

// `trials` problems of `draw`, each bound with and without `toggle` (the part under test's switch):
// the part `lhs_strip_sums` never above a valid schedule, nor the whole bound where it holds
// without the part; `decides` says where the part is what the tightest ratio is taken over.
// `per_problem` sees each problem before its schedules are drawn (for the caller's counts).
inline StripSumCounts StripSumsAgainstOracle(std::mt19937_64& rng, int trials, const std::function<Problem(std::mt19937_64&)>& draw,
                                             bool& toggle, const std::function<bool(const LowerBound&, const LowerBound&)>& decides,
                                             const std::function<void(const Problem&, const LowerBound&)>& per_problem,
                                             bool lone) {
  constexpr double kSlack = 1e-9;
  StripSumCounts counts;
  for (int trial = 0; trial < trials; ++trial) {
    const Problem problem = draw(rng);
    CAPTURE(trial);
    const LowerBound bound = ComputeLowerBound(problem);
    toggle = false;
    const LowerBound without = ComputeLowerBound(problem);
    toggle = true;
    if (per_problem) per_problem(problem, bound);
    const bool rises = bound.total() > without.total() * (1 + 1e-9);
    counts.raised += rises ? 1 : 0;
    // The whole bound is checked where it holds without the part (else another part is above the
    // schedule: `earlier` counts those).
    const auto check = [&](const Evaluation& e) {
      CHECK(bound.lhs_strip_sums <= e.total * (1 + kSlack));
      if (without.total() <= e.total * (1 + kSlack)) {
        CHECK(bound.total() <= e.total * (1 + kSlack));
      } else {
        ++counts.earlier;
      }
      if (decides(bound, without)) {
        ++counts.decided;
        counts.tightest = std::max(counts.tightest, bound.lhs_strip_sums / e.total);
      }
    };
    const std::vector<Schedule> schedules = SampleSchedules(problem, rng, trial % 4 == 0);
    for (const Schedule& schedule : schedules) {
      const Evaluation e = EvaluateOracle(problem, schedule);
      if (!e.ok()) continue;
      ++counts.valid;
      check(e);
      // Again at the capacity of its own peak working set, the tightest memory it still fits.
      Elements peak = 0;
      for (const SubgraphReport& r : e.subgraphs) peak = std::max(peak, r.peak_working_set);
      Problem squeezed = problem;
      squeezed.fast_memory_capacity = peak;
      const Evaluation at_peak = EvaluateOracle(squeezed, schedule);
      if (at_peak.ok()) {
        ++counts.tight;
        CHECK(ComputeLowerBound(squeezed).lhs_strip_sums <= at_peak.total * (1 + kSlack));
      }
    }
    counts.enumerated += ForEachStripConfiguration(problem, check, lone);
    if (lone) counts.enumerated += ForEachLoneInstance(problem, check);
  }
  return counts;
}

}  // namespace annealer::testing
