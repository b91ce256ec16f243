// P46 (eval/bound/sums/target_instances.h): the part never exceeds the oracle latency of a valid
// schedule on random fanned sums at real-chip ratios (tests/fanned_nets.h), including schedules
// that run the sum once per group of its targets, and its value by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <stdexcept>
#include <vector>

#include "eval/bound/analysis.h"
#include "eval/bound/bounds.h"
#include "eval/bound/sums/target_instances.h"
#include "eval/oracle.h"
#include "search/exact/exact.h"
#include "search/starts/baseline.h"
#include "tests/fanned_nets.h"
#include "tests/sample_schedules.h"

namespace annealer {
namespace {

constexpr double kSlack = 1e-9;

// The schedules P46 prices by instances: the first claimant it counts run in one subgraph per
// group of its targets (groups of 1, 2 or all, in order), each with the sum, its chain to those
// targets' LHS and 0 or all of its producers, every group at one tile shape (every w, h up to n,
// k of 1, 2 and n), the rest as the baseline runs it (each group where its last target ran).
int ForEachInstancePlan(const Problem& problem, const std::function<void(const Evaluation&)>& check) {
  const bound_internal::Analysis analysis(problem);
  const bound_internal::TargetInstances part = bound_internal::TargetInstanceFloor(problem, analysis);
  const bound_internal::UpstreamSums::Claimant* claimant = nullptr;
  for (size_t i = 0; i < part.base.claimants.size(); ++i) {
    if (part.counted[i]) {
      claimant = &part.base.claimants[i];
      break;
    }
  }
  if (claimant == nullptr) return 0;
  Schedule base;
  try {
    base = BuildBaseline(problem);
  } catch (const std::runtime_error&) {
    return 0;
  }
  // Per target, the ops between the sum and its LHS (the sum's Pointwise descendants it reads).
  const auto chain_of = [&](OpId f) {
    std::vector<OpId> ops, stack = {problem.producer[problem.ops[f].inputs[0]]};
    while (!stack.empty()) {
      const OpId o = stack.back();
      stack.pop_back();
      if (o == kNoOp || std::find(ops.begin(), ops.end(), o) != ops.end()) continue;
      if (o != claimant->sum && (o < claimant->sum || problem.ops[o].kind != OpKind::Pointwise)) continue;
      ops.push_back(o);
      if (o == claimant->sum) continue;
      for (TensorId in : problem.ops[o].inputs) stack.push_back(problem.producer[in]);
    }
    return ops;
  };
  const Elements n = problem.native;
  const auto t = static_cast<int>(claimant->fs.size());
  int checked = 0;
  for (int size : {1, 2, t}) {
    for (bool fuse : {false, true}) {
      std::vector<std::vector<OpId>> groups;
      for (int first = 0; first < t; first += size) {
        std::vector<OpId> ops;
        if (fuse) ops = claimant->producers;
        for (int i = first; i < std::min(t, first + size); ++i) {
          const OpId f = claimant->fs[i];
          ops.push_back(f);
          for (OpId o : chain_of(f)) ops.push_back(o);
        }
        std::sort(ops.begin(), ops.end());
        ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
        groups.push_back(std::move(ops));
      }
      std::vector<OpId> grouped;
      for (const auto& g : groups) grouped.insert(grouped.end(), g.begin(), g.end());
      for (Elements h = 1; h <= n; ++h) {
        for (Elements w = 1; w <= n; ++w) {
          for (Elements kk : {Elements{1}, Elements{2}, n}) {
            Schedule schedule;
            for (const Subgraph& sg : base.subgraphs) {
              Subgraph rest = sg;
              std::erase_if(rest.ops, [&](OpId o) { return std::find(grouped.begin(), grouped.end(), o) != grouped.end(); });
              if (!rest.ops.empty()) schedule.subgraphs.push_back(rest);
              for (const auto& g : groups) {
                if (std::find(sg.ops.begin(), sg.ops.end(), g.back()) == sg.ops.end()) continue;
                Subgraph group;
                group.ops = g;
                group.granularity = {w, h, kk};
                schedule.subgraphs.push_back(group);
              }
            }
            const Evaluation e = EvaluateOracle(problem, schedule);
            if (!e.ok()) continue;
            ++checked;
            INFO("granularity ", w, "x", h, "x", kk, " groups of ", size, " fused ", fuse);
            check(e);
          }
        }
      }
    }
  }
  return checked;
}

TEST_CASE("bound: P46's target sums never above the oracle") {
  int valid = 0, tight = 0, enumerated = 0, in_scope = 0, raised = 0, decided = 0, earlier = 0;
  double tightest = 0;
  std::mt19937_64 rng(4646);
  for (int trial = 0; trial < 3000; ++trial) {
    const Problem problem = testing::FannedNets(rng);
    CAPTURE(trial);
    const LowerBound bound = ComputeLowerBound(problem);
    bound_internal::g_target_instances = false;
    const LowerBound without = ComputeLowerBound(problem);
    bound_internal::g_target_instances = true;
    CHECK(bound.target_sums >= bound.lhs_strip_sums * (1 - kSlack));
    CHECK(without.target_sums == doctest::Approx(without.lhs_strip_sums));
    in_scope += bound.target_sum_count > 0 ? 1 : 0;
    const bool above = bound.target_sums > bound.lhs_strip_sums * (1 + 1e-9);
    raised += bound.total() > without.total() * (1 + 1e-9) ? 1 : 0;
    // The whole bound is checked where it holds without P46 (else another part is above the
    // schedule: `earlier` counts those).
    const auto check = [&](const Evaluation& e) {
      CHECK(bound.target_sums <= e.total * (1 + kSlack));
      if (without.total() <= e.total * (1 + kSlack)) {
        CHECK(bound.total() <= e.total * (1 + kSlack));
      } else {
        ++earlier;
      }
      if (above) {
        ++decided;
        tightest = std::max(tightest, bound.target_sums / e.total);
      }
    };
    for (const Schedule& schedule : testing::SampleSchedules(problem, rng, trial % 4 == 0)) {
      const Evaluation e = EvaluateOracle(problem, schedule);
      if (!e.ok()) continue;
      ++valid;
      check(e);
      Elements peak = 0;
      for (const SubgraphReport& r : e.subgraphs) peak = std::max(peak, r.peak_working_set);
      Problem squeezed = problem;
      squeezed.fast_memory_capacity = peak;
      const Evaluation at_peak = EvaluateOracle(squeezed, schedule);
      if (at_peak.ok()) {
        ++tight;
        CHECK(ComputeLowerBound(squeezed).target_sums <= at_peak.total * (1 + kSlack));
      }
    }
    enumerated += ForEachInstancePlan(problem, check);
  }
  MESSAGE("P46: problems with a claimant priced by instances " << in_scope << ", bound raised on " << raised
                                                              << ", valid schedules " << valid << ", at their peak " << tight
                                                              << ", instance plans " << enumerated
                                                              << ", checked where P46 is above P40 " << decided
                                                              << ", tightest part/latency there " << tightest
                                                              << "; schedules below the bound without P46 (another part) " << earlier);
  CHECK(valid > 6000);
  CHECK(in_scope > 300);
  CHECK(raised > 100);
}

}  // namespace
}  // namespace annealer
