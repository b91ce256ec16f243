// What the lower bound's property tests (tests/eval/bound/) share: the check of a valid schedule
// against the bound and every suffix bound, each schedule again at its own peak working set, and
// the baseline with one group of ops fused at every tile shape. The schedules a part is checked
// against are sample_schedules.h's.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "eval/bound/bounds.h"
#include "eval/model/chip_rules.h"
#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "eval/oracle.h"
#include "eval/random_schedule.h"
#include "search/starts/baseline.h"
#include "tests/support/sample_schedules.h"
#include "tests/support/suffix_bounds.h"

namespace annealer::testing {

inline constexpr double kSlack = 1e-9;

// The bound with a part on (returned) and with its test switch off (`without`), for the drivers
// that count the problems where the part raises the bound.
inline LowerBound BoundAndWithout(const Problem& problem, bool& part, LowerBound& without) {
  const LowerBound bound = ComputeLowerBound(problem);
  part = false;
  without = ComputeLowerBound(problem);
  part = true;
  return bound;
}

// How often the new parts decided the bound, and the tightest ratio seen (the tests have teeth
// only if the bound gets close to real schedules).
struct Teeth {
  int stronger = 0;
  int streamed = 0;  // schedules whose problem has a streaming term (P5 or P6) in the bound
  int strips = 0;    // ... a strip reload term (P11)
  int floor = 0;     // schedules whose bound is P17's memory floor, above every other part
  double tightest = 0;
};
// One count for the whole binary: a case that reads it takes the counts it added (a copy at its
// start), so the order the cases run in does not matter (`tightest` is the run's).
inline Teeth teeth;

// Checks the bound and every suffix bound of a valid schedule; returns false if invalid.
inline bool CheckValidSchedule(const Problem& problem, const Schedule& schedule, const std::string& where) {
  const Evaluation evaluation = EvaluateOracle(problem, schedule);
  if (!evaluation.ok()) return false;
  INFO(where);
  const LowerBound bound = ComputeLowerBound(problem);
  CHECK(bound.total() <= evaluation.total * (1 + kSlack));
  if (bound.total() > std::max(bound.compute, bound.graph_io) * (1 + 1e-9)) ++teeth.stronger;
  if (bound.memory_floor > std::max({bound.compute, bound.graph_io, bound.traffic, bound.combined, bound.islands,
                                     bound.streaming, bound.crossing}) * (1 + 1e-9)) {
    ++teeth.floor;
  }
  for (const BoundTerm& term : bound.explanation) {
    if (term.why.find("(P5") != std::string::npos || term.why.find("(P6") != std::string::npos) {
      ++teeth.streamed;
      break;
    }
  }
  for (const BoundTerm& term : bound.explanation) {
    if (term.why.find("(P11") != std::string::npos) {
      ++teeth.strips;
      break;
    }
  }
  if (evaluation.total > 0) teeth.tightest = std::max(teeth.tightest, bound.total() / evaluation.total);
  // Suffixes: ops that did not run in the prefix all run in the suffix.
  testing::CheckSuffixBounds(BuildBoundModel(problem), problem, schedule, evaluation, kSlack);
  return true;
}

// Each schedule valid by CheckValidSchedule (under `label`) with its oracle evaluation, then,
// where it is still valid there, the problem at the schedule's own peak working set: a bound must
// hold at every capacity the schedule fits, the tightest one included. Returns how many were
// valid at their peak.
inline int ForEachValidAndAtPeak(const Problem& problem, const std::vector<Schedule>& schedules, const std::string& label,
                                 const std::function<void(const Evaluation&)>& at_capacity,
                                 const std::function<void(const Problem&, const Evaluation&)>& at_peak) {
  int tight = 0;
  for (const Schedule& schedule : schedules) {
    if (!CheckValidSchedule(problem, schedule, label)) continue;
    const Evaluation e = EvaluateOracle(problem, schedule);
    at_capacity(e);
    Elements peak = 0;
    for (const SubgraphReport& r : e.subgraphs) peak = std::max(peak, r.peak_working_set);
    Problem squeezed = problem;
    squeezed.fast_memory_capacity = peak;
    if (CheckValidSchedule(squeezed, schedule, label + " at its peak")) {
      ++tight;
      at_peak(squeezed, e);
    }
  }
  return tight;
}

// The baseline with `covered` run in `fused` instead: `fused` goes before the first subgraph
// holding a covered op; subgraphs all of whose ops are covered are dropped when `drop`, else kept
// (recomputing them, so that their outputs are written for other readers).
inline Schedule WithFused(const Schedule& base, const Subgraph& fused, bool drop) {
  Schedule schedule;
  bool placed = false;
  for (const Subgraph& sg : base.subgraphs) {
    bool any = false, all = true;
    for (OpId o : sg.ops) {
      const bool in = std::find(fused.ops.begin(), fused.ops.end(), o) != fused.ops.end();
      any = any || in;
      all = all && in;
    }
    if (any && !placed) {
      schedule.subgraphs.push_back(fused);
      placed = true;
    }
    if (!(all && drop)) schedule.subgraphs.push_back(sg);
  }
  if (!placed) schedule.subgraphs.push_back(fused);
  return schedule;
}

// The peak footprints of H1's roles (after H2 and H4) over a valid schedule's steps.
inline RoleFootprints PeakRoles(const Problem& problem, const Schedule& schedule) {
  RoleFootprints peak;
  std::vector<TensorId> retained;
  for (const Subgraph& sg : schedule.subgraphs) {
    EvaluateSubgraphOracleSteps(problem, sg, retained, [&](const StepRecord& r) {
      peak.staging = std::max(peak.staging, r.roles.staging);
      peak.accumulator = std::max(peak.accumulator, r.roles.accumulator);
      peak.vector = std::max(peak.vector, r.roles.vector);
    });
    retained = sg.retain;
  }
  return peak;
}

// `base` with the ops of `fused` taken out of their own subgraphs (those they fill go; with
// `keep` the ones holding an op of `keep`, which then runs twice, stay) and `fused` run where the
// first subgraph it takes from stood, or after the last subgraph holding an op of `keep`.
inline Schedule WithFused(const Schedule& base, const Subgraph& fused, const std::vector<OpId>& keep) {
  Schedule schedule;
  bool placed = false;
  size_t last_keep = 0;
  for (size_t i = 0; i < base.subgraphs.size(); ++i) {
    for (OpId o : base.subgraphs[i].ops) {
      if (std::find(keep.begin(), keep.end(), o) != keep.end()) last_keep = i + 1;
    }
  }
  for (size_t i = 0; i < base.subgraphs.size(); ++i) {
    const Subgraph& sg = base.subgraphs[i];
    bool all = true, any = false, kept = false;
    for (OpId o : sg.ops) {
      const bool in = std::find(fused.ops.begin(), fused.ops.end(), o) != fused.ops.end();
      all = all && in;
      any = any || in;
      kept = kept || std::find(keep.begin(), keep.end(), o) != keep.end();
    }
    if (!placed && any && i >= last_keep) {
      schedule.subgraphs.push_back(fused);
      placed = true;
    }
    if (!all || kept) schedule.subgraphs.push_back(sg);
  }
  if (!placed) schedule.subgraphs.push_back(fused);
  return schedule;
}

// Calls `check` on every valid schedule that runs the ops of `group` in one subgraph at a tile
// shape (w, h up to n; k = 1, half of K and the largest legal k when `group` holds a MatMul),
// the baseline's subgraphs around it (WithFused); returns how many were valid.
inline int ForEachGroupShape(const Problem& problem, const std::vector<OpId>& group, const std::function<void(const Evaluation&)>& check) {
  const Schedule base = BuildBaseline(problem);
  const Elements n = problem.native;
  Elements k_full = 0;
  for (OpId o : group) {
    if (problem.ops[o].kind == OpKind::MatMul) k_full = std::max(k_full, problem.ReductionLength(o));
  }
  std::vector<Elements> ks = {1};
  if (k_full > 0) ks = {1, std::max<Elements>(1, std::min(k_full, n) / 2), std::min(k_full, n)};
  int valid = 0;
  for (Elements h = 1; h <= n; ++h) {
    for (Elements w = 1; w <= n; ++w) {
      for (Elements kk : ks) {
        Subgraph fused;
        fused.ops = group;
        fused.granularity = {w, h, kk};
        for (bool drop : {true, false}) {
          const Evaluation e = EvaluateOracle(problem, WithFused(base, fused, drop));
          if (!e.ok()) continue;
          ++valid;
          check(e);
        }
      }
    }
  }
  return valid;
}

}  // namespace annealer::testing
