// The sums' property-test drivers (P23, P25, P28, P29, P31, P52 and P54, tests/eval/bound/sums/):
// the schedules that fuse a sum with some of its MatMuls, group taps as co-sinks or run a sum
// twice, P28's driver over TapNets and SumNets, and P31's atrous pyramids.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "eval/bound/bounds.h"
#include "eval/bound/sums/sole_sums.h"
#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "eval/oracle.h"
#include "tests/support/bound_checks.h"
#include "tests/support/bound_nets.h"
#include "tests/support/problem_maker.h"
#include "tests/support/sample_schedules.h"

namespace annealer::testing {

// The hand cases' sum of taps: `problem` gets native 4, the graph input A (4×8) and `taps`
// MatMuls A @ W_i (each W_i a 4×4 graph input, base `base`), then the Pointwise op (base 1)
// summing their outputs; returns the sum's output.
inline TensorId HandTapSum(Problem& problem, int taps, double base = 100) {
  problem.native = 4;
  problem.tensors.push_back({4, 8});  // A
  std::vector<TensorId> outs;
  for (int i = 0; i < taps; ++i) {
    problem.tensors.push_back({4, 4});  // W_i
    problem.tensors.push_back({4, 8});  // x_i's output
    const auto w = static_cast<TensorId>(problem.tensors.size() - 2);
    outs.push_back(w + 1);
    problem.ops.push_back({OpKind::MatMul, {0, w}, w + 1, base});
  }
  problem.tensors.push_back({4, 8});
  const auto sum = static_cast<TensorId>(problem.tensors.size() - 1);
  problem.ops.push_back({OpKind::Pointwise, outs, sum, 1});
  return sum;
}

// t's producers, transitively through first inputs, earliest first (the chain that makes a tap's
// LHS, which ForEachTapGrouping below and P54's traversals move beside it or run again there).
inline std::vector<OpId> ProducerChain(const Problem& problem, TensorId t) {
  std::vector<OpId> chain;
  while (problem.producer[t] != kNoOp) {
    const OpId x = problem.producer[t];
    chain.insert(chain.begin(), x);
    t = problem.ops[x].inputs[0];
  }
  return chain;
}

// The baseline with the subgraph of `s` replaced by `fused` (s and some of the MatMuls it reads),
// and the baseline subgraphs whose ops `fused` all holds dropped.
inline Schedule FusedSum(const Schedule& base, const Subgraph& fused, OpId s) {
  Schedule schedule;
  for (const Subgraph& sg : base.subgraphs) {
    bool all = true, has_s = false;
    for (OpId o : sg.ops) {
      all = all && std::find(fused.ops.begin(), fused.ops.end(), o) != fused.ops.end();
      has_s = has_s || o == s;
    }
    if (has_s) schedule.subgraphs.push_back(fused);
    if (!all) schedule.subgraphs.push_back(sg);
  }
  return schedule;
}

// Every valid schedule that runs the first sum of `problem` (a Pointwise op reading MatMul outputs)
// with its first j MatMuls, j = 0 to all, at every tile shape (w, h up to n, three k), alone or
// with the second sum and as many of its MatMuls, the rest as the baseline runs them: `check`
// sees each with its oracle evaluation. Returns how many it checked.
inline int ForEachFusedSum(const Problem& problem, const std::function<void(const Schedule&, const Evaluation&)>& check) {
  std::vector<std::pair<OpId, std::vector<OpId>>> sums;
  for (OpId o = 0; o < static_cast<OpId>(problem.ops.size()); ++o) {
    if (problem.ops[o].kind != OpKind::Pointwise) continue;
    std::vector<OpId> producers;
    for (TensorId t : problem.ops[o].inputs) {
      const OpId x = problem.producer[t];
      if (x != kNoOp && problem.ops[x].kind == OpKind::MatMul) producers.push_back(x);
    }
    if (!producers.empty()) sums.push_back({o, producers});
  }
  if (sums.empty()) return 0;
  const OpId s = sums[0].first;
  const std::vector<OpId>& producers = sums[0].second;
  const std::optional<Schedule> baseline = testing::BaselineIfAny(problem);
  if (!baseline) return 0;
  const Schedule& base = *baseline;
  int checked = 0;
  const Elements n = problem.native;
  const Elements k_full = problem.ReductionLength(producers[0]);
  for (size_t j = 0; j <= producers.size(); ++j) {
    for (Elements h = 1; h <= n; ++h) {
      for (Elements w = 1; w <= n; ++w) {
        for (Elements kk : {Elements{1}, std::max<Elements>(1, std::min(k_full, n) / 2), std::min(k_full, n)}) {
          for (size_t both = 0; both < std::min<size_t>(2, sums.size()); ++both) {
            Subgraph fused;
            for (size_t q = 0; q <= both; ++q) {
              const auto& [sum, xs] = sums[q];
              fused.ops.insert(fused.ops.end(), xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(std::min(j, xs.size())));
              fused.ops.push_back(sum);
            }
            fused.granularity = {w, h, kk};
            Schedule schedule = FusedSum(base, fused, s);
            if (both) {
              // The second sum's own baseline subgraph goes: it runs in `fused`.
              std::erase_if(schedule.subgraphs, [&](const Subgraph& sg) { return sg.ops.size() == 1 && sg.ops[0] == sums[1].first; });
            }
            const Evaluation e = EvaluateOracle(problem, schedule);
            if (!e.ok()) continue;
            ++checked;
            INFO("granularity ", w, "x", h, "x", kk, " fused ", j, " both ", both);
            check(schedule, e);
          }
        }
      }
    }
  }
  return checked;
}

// Every valid schedule that runs the first j readers of A that are MatMuls (j = 1 to 3) as
// co-sinks of one subgraph, alone, with A's producer chain beside them moved there, or with the
// chain recomputed there, at every tile shape (w, h up to n, three k), the rest as the baseline
// runs it. Returns how many it checked.
inline int ForEachTapGrouping(const Problem& problem, const std::function<void(const Schedule&, const Evaluation&)>& check) {
  // the first MatMul reading A (A: the LHS shared by most MatMuls)
  std::vector<OpId> taps, pointwise;
  TensorId a = -1;
  for (OpId o = 0; o < static_cast<OpId>(problem.ops.size()); ++o) {
    if (problem.ops[o].kind != OpKind::MatMul) continue;
    const TensorId lhs = problem.ops[o].inputs[0];
    if (problem.consumers[lhs].size() < 2 && a < 0) continue;
    if (a < 0) a = lhs;
    if (lhs == a) taps.push_back(o);
  }
  if (taps.empty()) return 0;
  for (OpId o : problem.consumers[a]) {
    if (problem.ops[o].kind == OpKind::Pointwise) pointwise.push_back(o);
  }
  const std::vector<OpId> chain = ProducerChain(problem, a);
  const std::optional<Schedule> baseline = testing::BaselineIfAny(problem);
  if (!baseline) return 0;
  const Schedule& base = *baseline;
  int checked = 0;
  const Elements n = problem.native;
  const Elements k_full = problem.ReductionLength(taps[0]);
  for (size_t j = 1; j <= std::min<size_t>(3, taps.size()); ++j) {
    for (int with_chain = 0; with_chain <= 2; ++with_chain) {
      if (with_chain > 0 && chain.empty()) continue;
      // Beside the first j taps: nothing, the last MatMul reader of A (another group's, maybe
      // compute-heavy), or A's Pointwise readers (sinks of the taps' shape).
      for (int extra = 0; extra <= 2; ++extra) {
      if (extra == 1 && taps.size() <= j) continue;
      if (extra == 2 && pointwise.empty()) continue;
      for (Elements h = 1; h <= n; ++h) {
        for (Elements w = 1; w <= n; ++w) {
          for (Elements kk : {Elements{1}, std::max<Elements>(1, std::min(k_full, n) / 2), std::min(k_full, n)}) {
            Subgraph fused;
            if (with_chain > 0) fused.ops = chain;
            fused.ops.insert(fused.ops.end(), taps.begin(), taps.begin() + static_cast<std::ptrdiff_t>(j));
            if (extra == 1) fused.ops.push_back(taps.back());
            if (extra == 2) fused.ops.insert(fused.ops.end(), pointwise.begin(), pointwise.end());
            fused.granularity = {w, h, kk};
            const Schedule schedule = WithFused(base, fused, with_chain == 2 ? chain : std::vector<OpId>{});
            const Evaluation e = EvaluateOracle(problem, schedule);
            if (!e.ok()) continue;
            ++checked;
            INFO("granularity ", w, "x", h, "x", kk, " taps ", j, " chain ", with_chain, " extra ", extra);
            check(schedule, e);
          }
        }
      }
      }
    }
  }
  return checked;
}

// Every valid schedule that runs the first sum of `problem` twice: with its first j MatMuls
// (j = 0 to all but one) at one tile shape, the other MatMuls as the baseline runs them, and again
// at the end with its last MatMul fused (recomputed beside it), at every tile shape. (A MatMul run
// only beside instances of its sum cannot be valid: its output is then never written, and the
// instance without it loads it: P28's proof.) Returns how many it checked.
inline int ForEachSumTwice(const Problem& problem, const std::function<void(const Schedule&, const Evaluation&)>& check) {
  OpId s = kNoOp;
  std::vector<OpId> producers;
  for (OpId o = 0; o < static_cast<OpId>(problem.ops.size()) && s == kNoOp; ++o) {
    if (problem.ops[o].kind != OpKind::Pointwise) continue;
    for (TensorId t : problem.ops[o].inputs) {
      const OpId x = problem.producer[t];
      if (x != kNoOp && problem.ops[x].kind == OpKind::MatMul) producers.push_back(x);
    }
    if (!producers.empty()) s = o;
  }
  if (s == kNoOp) return 0;
  const std::optional<Schedule> baseline = testing::BaselineIfAny(problem);
  if (!baseline) return 0;
  const Schedule& base = *baseline;
  int checked = 0;
  const Elements n = problem.native;
  const Elements k_full = problem.ReductionLength(producers[0]);
  for (size_t j = 0; j < producers.size(); ++j) {
    for (Elements h = 1; h <= n; ++h) {
      for (Elements w = 1; w <= n; ++w) {
        for (Elements kk : {Elements{1}, std::min(k_full, n)}) {
          Subgraph first;
          first.ops.assign(producers.begin(), producers.begin() + static_cast<std::ptrdiff_t>(j));
          first.ops.push_back(s);
          first.granularity = {w, h, kk};
          Subgraph second;
          second.ops = {producers.back(), s};
          second.granularity = {w, h, kk};
          Schedule schedule = FusedSum(base, first, s);
          schedule.subgraphs.push_back(second);
          const Evaluation e = EvaluateOracle(problem, schedule);
          if (!e.ok()) continue;
          ++checked;
          INFO("granularity ", w, "x", h, "x", kk, " fused ", j, " twice");
          check(schedule, e);
        }
      }
    }
  }
  return checked;
}

// TapNets and SumNets at the chip's own ratios (`mlsys-2026`: 30,000 elements against 128 x 128
// native tiles, a MatMul's native tile about 0.92 of its transfer at 15 elements per unit, a
// Pointwise op's a fifth of that), so that outputs of about 1.8 native tiles never fit.
inline void AtMlsysRatios(Problem& problem) {
  const double n2 = static_cast<double>(problem.native * problem.native);
  problem.fast_memory_capacity = static_cast<Elements>(n2 * 30000.0 / 16384.0);
  problem.slow_memory_bandwidth = 1;
  for (Op& op : problem.ops) op.base_cost = op.kind == OpKind::MatMul ? 0.92 * n2 : (op.base_cost > 0 ? 0.18 * n2 : 0.0);
}

// The P28 driver: TapNets and SumNets in turn (one priced sum of a shape, or two of one shape,
// where P28 keeps P25's term; every third at the chip's ratios with `mlsys_ratios`), every schedule
// of RealRatioSchedules (random with recomputation and retention, both baselines, short searches,
// the exact solver's best), each again at the capacity of its own peak working set, the taps
// grouped as co-sinks with and without A's chain at every tile shape, P23's enumeration of the sum
// with j fused producers, and the sum run twice; `part` is the switch whose raise is counted.
struct SoleSumRun {
  int valid = 0, tight = 0, enumerated = 0, decided = 0, raised = 0, priced = 0, twice = 0;
  double tightest = 0;
};
inline SoleSumRun SoleSumsAgainstOracle(std::uint64_t seed, int trials, bool& part, bool mlsys_ratios) {
  SoleSumRun run;
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < trials; ++trial) {
    Problem problem = trial % 2 == 0 ? TapNets(rng) : SumNets(rng, trial % 4 == 1);
    if (mlsys_ratios && trial % 3 == 2) {
      AtMlsysRatios(problem);
      REQUIRE(problem.Finalize() == "");
    }
    CAPTURE(trial);
    LowerBound without;
    const LowerBound bound = BoundAndWithout(problem, part, without);
    run.priced += bound.sole_sum_count > 0 ? 1 : 0;
    CHECK(bound.sole_sums >= bound.taps * (1 - kSlack));
    CHECK(bound.sole_sums >= without.sole_sums * (1 - kSlack));
    if (&part == &bound_internal::g_sole_sums) CHECK(without.sole_sums == doctest::Approx(without.taps));
    const bool rises = bound.total() > without.total() * (1 + 1e-9);
    run.raised += rises ? 1 : 0;
    const std::vector<Schedule> schedules = RealRatioSchedules(
        problem, rng, trial, 5, [](int s) { return ValidRandomOptions(0.15 + 0.2 * s, 0.3, 0.2); }, 8, 5);
    const auto check = [&](const Evaluation& e) {
      CHECK(bound.sole_sums <= e.total * (1 + kSlack));
      CHECK(bound.total() <= e.total * (1 + kSlack));
      if (rises) run.tightest = std::max(run.tightest, bound.total() / e.total);
      run.decided += rises ? 1 : 0;
    };
    run.tight += ForEachValidAndAtPeak(
        problem, schedules, "sole sums trial " + std::to_string(trial),
        [&](const Evaluation& e) {
          ++run.valid;
          check(e);
        },
        [&](const Problem& squeezed, const Evaluation& e) {
          const LowerBound at_peak = ComputeLowerBound(squeezed);
          CHECK(at_peak.sole_sums <= e.total * (1 + kSlack));
          CHECK(at_peak.total() <= e.total * (1 + kSlack));
        });
    const auto enumerated_check = [&](const Schedule&, const Evaluation& e) { check(e); };
    run.enumerated += ForEachTapGrouping(problem, enumerated_check);
    run.enumerated += ForEachFusedSum(problem, enumerated_check);
    const int both = ForEachSumTwice(problem, enumerated_check);
    run.enumerated += both;
    run.twice += both;
  }
  return run;
}

// P31's pattern: DeepLabV3's atrous pyramid at a small scale. One LHS A (R x K) read by one to
// three groups of taps A @ W_i (W_i graph inputs), each group summed by a Pointwise op (or, one time
// in four, a group of taps read by nothing); K above native three times in four; A made by a
// Pointwise op (the case P31 is about), by a MatMul with K <= n (which may make A's strips beside
// a tap: no P31), a graph input, or a transpose of one. Outputs too large to retain at the drawn
// capacities (1.5 to 3 native tiles), compute from a tenth to ten times the time to move every
// tensor once.
inline Problem AsppTaps(std::mt19937_64& rng) {
  testing::ProblemMaker make{rng};
  Problem& problem = make.problem;
  problem.native = make.Pick({4, 8});
  const Elements n = problem.native;
  const Elements rows = make.Pick({n + 1, 2 * n, 2 * n + 3, 3 * n});
  const Elements k = make.Coin(4) ? make.Pick({n / 2, n}) : make.Pick({n + 1, 2 * n, 3 * n});
  const Elements cols = make.Pick({n, n + 2, 2 * n});
  TensorId a = -1;
  switch (std::uniform_int_distribution<int>(0, 6)(rng)) {
    case 0: a = make.Tensor(rows, k); break;
    case 1: a = make.Op(OpKind::Layout, {make.Tensor(k, rows)}, rows, k, 0); break;
    case 2: a = make.Op(OpKind::MatMul, {make.Tensor(rows, n / 2), make.Tensor(n / 2, k)}, rows, k, make.PickReal({1, 4})); break;
    default: a = make.Op(OpKind::Pointwise, {make.Tensor(rows, k)}, rows, k, make.PickReal({1, 4})); break;
  }
  const int groups = static_cast<int>(make.Pick({1, 2, 3}));
  for (int g = 0; g < groups; ++g) {
    const int taps = static_cast<int>(make.Pick({1, 2, 3, 4}));
    std::vector<TensorId> outs;
    for (int i = 0; i < taps; ++i) {
      outs.push_back(make.Op(OpKind::MatMul, {a, make.Tensor(k, cols)}, rows, cols, make.PickReal({4, 16})));
    }
    if (make.Coin(4)) continue;  // taps read by nothing (graph outputs)
    const TensorId sum = outs.size() == 1 ? make.Op(OpKind::Pointwise, {outs[0]}, rows, cols, make.PickReal({0.5, 2}))
                                          : make.Op(OpKind::Pointwise, outs, rows, cols, make.PickReal({0.5, 2}));
    if (make.Coin(2)) make.Op(OpKind::Pointwise, {sum}, rows, cols, make.PickReal({0.5, 2}));
  }
  problem.fast_memory_capacity = make.Pick({3 * n * n / 2, 2 * n * n, 5 * n * n / 2, 3 * n * n});
  problem.slow_memory_bandwidth = make.PickReal({0.25, 1, 4});
  REQUIRE(problem.Finalize() == "");
  ScaleComputeToTraffic(problem, make.PickReal({0.1, 0.5, 1, 2, 10}));
  return problem;
}

// AsppTaps' enumerated configurations: every tap alone at every tile shape (the readers of A, the
// LHS of the last MatMul, always a tap), the taps as co-sinks (ForEachTapGrouping) and grouped with
// their sum (ForEachFusedSum). Returns how many were checked.
inline int ForEachAsppConfiguration(const Problem& problem, const std::function<void(const Evaluation&)>& check) {
  TensorId a = -1;
  for (const Op& op : problem.ops) {
    if (op.kind == OpKind::MatMul) a = op.inputs[0];
  }
  int enumerated = 0;
  const auto enumerated_check = [&](const Schedule&, const Evaluation& e) { check(e); };
  for (OpId t : problem.consumers[a]) {
    if (problem.ops[t].kind == OpKind::MatMul) enumerated += ForEachGroupShape(problem, {t}, check);
  }
  enumerated += ForEachTapGrouping(problem, enumerated_check);
  enumerated += ForEachFusedSum(problem, enumerated_check);
  return enumerated;
}

}  // namespace annealer::testing
