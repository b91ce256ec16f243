// P42, weights that little compute can hide (eval/bound/traffic/tap_weights.h, docs/lower-bound.md
// "Weights that little compute can hide (P42)"): a hand case against the exact solver, and random
// classes of k-split MatMuls on a weight path with a checked FIFO (tpu-v1's ratios among others)
// whose valid schedules (random, both baselines, the exact solver's best, and schedules that run
// the members upstream of their reader beside the ops that make their LHS) the oracle prices at or
// above the bound.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <vector>

#include "eval/bound/bounds.h"
#include "eval/bound/traffic/tap_weights.h"
#include "eval/oracle.h"
#include "eval/random_schedule.h"
#include "search/starts/baseline.h"
#include "tests/support/problem_maker.h"
#include "tests/support/sample_schedules.h"

namespace annealer {
namespace {

using bound_internal::g_tap_weights;
using bound_internal::TapWeightFloor;

// n = 4, B = 1, Bw = 1, FIFO 40, capacity 4,096. L = p(A) (A 4x8, a Pointwise op of base 40: the
// compute that cannot hide the taps' weights for free), x1 = L @ W1 and x2 = L @ W2 (W 8x4, K = 8 >
// n, base 1), s = x1 + x2 (base 1), q = s @ Wq (Wq 4x4, K = 4, base 1). Not finalized.
Problem HandTaps() {
  std::mt19937_64 rng(0);
  testing::ProblemMaker make{rng};
  Problem& p = make.problem;
  p.native = 4;
  p.fast_memory_capacity = 4096;
  p.slow_memory_bandwidth = 1;
  p.chip.weight_bandwidth = 1;
  p.chip.weight_fifo_capacity = 40;
  const TensorId l = make.Op(OpKind::Pointwise, {make.Tensor(4, 8)}, 4, 8, 40);  // op 0
  const TensorId x1 = make.Op(OpKind::MatMul, {l, make.Tensor(8, 4)}, 4, 4, 1);  // op 1
  const TensorId x2 = make.Op(OpKind::MatMul, {l, make.Tensor(8, 4)}, 4, 4, 1);  // op 2
  const TensorId s = make.Op(OpKind::Pointwise, {x1, x2}, 4, 4, 1);             // op 3
  make.Op(OpKind::MatMul, {s, make.Tensor(4, 4)}, 4, 4, 1);                      // op 4
  return p;
}

// Compute 80 + 1 + 1 + 1 + 1 = 84. The class (K = 8, 4x4) holds x1 and x2, both reading weights
// (64 elements, 64 at Bw = 1); one step holding a tap upstream of q needs 32 + 16 > 40. T = {x1,
// x2, s}, F1 = {q, s}: C(T u F1) = 4, claim (64 - 4) / 2 = 30, the part 114.
TEST_CASE("P42 by hand: two taps whose weights only the taps' class can hide for free") {
  Problem p = HandTaps();
  REQUIRE(p.Finalize() == "");
  const auto taps = TapWeightFloor(p);
  CHECK(taps.members == 2);
  CHECK(taps.k == 8);
  CHECK(taps.claim == doctest::Approx(30));
  CHECK(taps.value == doctest::Approx(114));
  const LowerBound bound = ComputeLowerBound(p);
  CHECK(bound.compute == doctest::Approx(84));
  CHECK(bound.tap_weights == doctest::Approx(114));
  CHECK(bound.tap_weight_members == 2);
  g_tap_weights = false;
  const LowerBound without = ComputeLowerBound(p);
  g_tap_weights = true;
  CHECK(without.tap_weights == doctest::Approx(84));
  MESSAGE("P42 hand case: bound ", bound.total(), ", without P42 ", without.total());
  std::vector<Schedule> schedules;
  testing::AppendBaselines(p, schedules);
  testing::AppendExactBest(p, schedules);
  REQUIRE(!schedules.empty());
  double best = 0;
  for (const Schedule& schedule : schedules) {
    const Evaluation e = EvaluateOracle(p, schedule);
    REQUIRE(e.ok());
    CHECK(e.total >= bound.total());
    best = e.total;
  }
  MESSAGE("P42 hand case: exact best ", best);

  // The FIFO large enough for one step to hold a tap and q whole: nothing priced.
  Problem wide = HandTaps();
  wide.chip.weight_fifo_capacity = 48;
  REQUIRE(wide.Finalize() == "");
  CHECK(TapWeightFloor(wide).members == 0);
  // No FIFO checked: nothing priced.
  Problem unchecked = HandTaps();
  unchecked.chip.weight_fifo_capacity = 0;
  REQUIRE(unchecked.Finalize() == "");
  CHECK(TapWeightFloor(unchecked).members == 0);
  // A tap feeding q directly (no sum between): priced, x1 then among the producers of q's LHS.
  Problem direct = HandTaps();
  direct.ops[4].inputs[0] = direct.ops[1].output;
  direct.ops[3] = {OpKind::Pointwise, {direct.ops[2].output}, direct.ops[3].output, 1};
  REQUIRE(direct.Finalize() == "");
  CHECK(TapWeightFloor(direct).claim == doctest::Approx((64.0 - 4) / 2));
  // q's RHS an activation (made by a Pointwise op): not priced.
  Problem act = HandTaps();
  {
    const TensorId in = static_cast<TensorId>(act.tensors.size());
    act.tensors.push_back({4, 4});
    const TensorId out = static_cast<TensorId>(act.tensors.size());
    act.tensors.push_back({4, 4});
    act.ops.push_back({OpKind::Pointwise, {in}, out, 1});
    act.ops[4].inputs[1] = out;
  }
  REQUIRE(act.Finalize() == "");
  CHECK(TapWeightFloor(act).members == 0);
}

// A class of taps at a small scale: L made from a graph input by an optional MatMul (K <= n) and
// one or two Pointwise ops (the heavy compute), 1-4 taps L @ W_i (K = c > n), their sum (or a
// Pointwise chain on one tap), an optional Pointwise op, the reader q = s @ Wq (K = d <= n), and
// sometimes a second level (q's output through a Pointwise op into q2 @ W), a side branch of other
// shapes, a reader of L of another kind. A weight path (Bw 0.5-10 x B) and a FIFO drawn around the
// threshold |W_x| + |W_q|; tpu-v1's ratios one time in four.
Problem TapNet(std::mt19937_64& rng, int variant) {
  testing::ProblemMaker make{rng};
  Problem& problem = make.problem;
  problem.native = make.Pick({4, 8});
  const Elements n = problem.native;
  const Elements rows = make.Pick({n / 2, n, n + 1, 2 * n, 3 * n});
  const double mm = make.PickReal({0.5, 1, 4}), pw = make.PickReal({0, 1, 4, 20, 60});
  const Elements c = make.Pick({n + 1, 2 * n, 3 * n});
  const Elements d = make.Pick({n / 2, n});
  TensorId l;
  std::vector<size_t> makers;  // the Pointwise ops that make L
  if (make.Coin(2)) {
    const Elements c0 = make.Pick({n / 2, n});
    l = make.Op(OpKind::MatMul, {make.Tensor(rows, c0), make.Tensor(c0, c)}, rows, c, mm);
    l = make.Op(OpKind::Pointwise, {l}, rows, c, pw);
  } else {
    l = make.Op(OpKind::Pointwise, {make.Tensor(rows, c)}, rows, c, pw);
  }
  makers.push_back(problem.ops.size() - 1);
  if (make.Coin(2)) {
    l = make.Op(OpKind::Pointwise, {l}, rows, c, pw / 2);
    makers.push_back(problem.ops.size() - 1);
  }
  const int taps = static_cast<int>(make.Pick({1, 2, 3, 4}));
  std::vector<TensorId> outs;
  for (int t = 0; t < taps; ++t) outs.push_back(make.Op(OpKind::MatMul, {l, make.Tensor(c, d)}, rows, d, mm));
  TensorId s = outs.size() == 1 ? make.Op(OpKind::Pointwise, {outs[0]}, rows, d, 1)
                                : make.Op(OpKind::Pointwise, outs, rows, d, 1);
  if (make.Coin(3)) s = make.Op(OpKind::Pointwise, {s}, rows, d, 1);
  const Elements e = make.Pick({n / 2, n, 2 * n});
  const bool activation_rhs = variant == 3 && make.Coin(2);
  TensorId rhs = make.Tensor(d, e);
  if (activation_rhs) rhs = make.Op(OpKind::Pointwise, {rhs}, d, e, 1);
  TensorId z = make.Op(OpKind::MatMul, {s, rhs}, rows, e, mm);
  if (make.Coin(2)) {  // a second level
    z = make.Op(OpKind::Pointwise, {z}, rows, e, pw / 4);
    const Elements f = make.Pick({n / 2, n});
    z = make.Op(OpKind::MatMul, {z, make.Tensor(e, f)}, rows, f, mm);
  }
  if (make.Coin(3)) make.Op(OpKind::Pointwise, {l}, rows, c, 1);                                 // a side reader
  if (make.Coin(3)) make.Op(OpKind::MatMul, {make.Tensor(rows, n), make.Tensor(n, d)}, rows, d, mm);  // a side op of the shape
  problem.fast_memory_capacity = n * n * make.Pick({2, 4, 16, 4096});
  problem.slow_memory_bandwidth = make.PickReal({0.25, 1, 4});
  problem.chip.weight_bandwidth = problem.slow_memory_bandwidth * make.PickReal({0.5, 2, 10});
  // Around one tap's weight and q's (P42's condition) or every tap's and q's (one step holding
  // them all: the schedules that hide the weights without computing twice).
  const Elements threshold = (make.Coin(3) ? taps * c * d : c * d) + d * e;
  problem.chip.weight_fifo_capacity = std::max<Elements>(
      2 * n * n, threshold + make.Pick({-2 * n * n, -n * n, -n, -1, 0, n * n}));
  if (variant == 0) {  // tpu-v1: Bw / B = 2.26, a fast memory of 384 native tiles
    problem.slow_memory_bandwidth = make.PickReal({0.5, 1});
    problem.chip.weight_bandwidth = problem.slow_memory_bandwidth * 2.262;
    problem.fast_memory_capacity = 384 * n * n;
  }
  if (make.Coin(2)) {
    // L's makers at a fraction of the taps' weight time: the compute a tap upstream may hide its
    // weight under, where hiding pays most against the claim.
    const double weight_time = static_cast<double>(taps * c * d) / problem.chip.weight_bandwidth;
    const double tiles = static_cast<double>(((rows + n - 1) / n) * ((c + n - 1) / n));
    const double share = make.PickReal({0.3, 0.5, 0.7, 1.0});
    for (size_t op : makers) problem.ops[op].base_cost = share * weight_time / (tiles * static_cast<double>(makers.size()));
  }
  if (variant == 2 && make.Coin(2)) {  // H1-H4 beside the weight path (H5 never: H6 refuses it)
    ChipRules rules = RandomChipRules(problem, rng);
    rules.prefetch = problem.chip.prefetch;
    rules.weight_bandwidth = problem.chip.weight_bandwidth;
    rules.weight_fifo_capacity = problem.chip.weight_fifo_capacity;
    problem.chip = rules;
  }
  REQUIRE(problem.Finalize().empty());
  return problem;
}

Subgraph Sub(std::vector<OpId> ops, Granularity g) {
  Subgraph s;
  s.ops = std::move(ops);
  s.granularity = g;
  return s;
}

// The baseline with the taps, their sum chain and the first MatMul after it in one subgraph (the
// taps upstream), with or without the Pointwise ops that make L (run there first), at every k
// that divides nothing in particular: the schedules that hide the weights under the most compute.
std::vector<Schedule> Upstream(const Problem& p) {
  std::vector<Schedule> out;
  Schedule base;
  try {
    base = BuildBaseline(p);
  } catch (const std::runtime_error&) {
    return out;
  }
  const Elements n = p.native;
  // The first MatMul with K > n whose LHS a Pointwise op makes: a tap; its class and reader.
  OpId tap = kNoOp;
  for (OpId op = 0; op < static_cast<OpId>(p.ops.size()) && tap == kNoOp; ++op) {
    if (p.ops[op].kind == OpKind::MatMul && p.ReductionLength(op) > n) tap = op;
  }
  if (tap == kNoOp) return out;
  const TensorId l = p.ops[tap].inputs[0];
  std::vector<OpId> group;
  for (OpId op : p.consumers[l]) {
    if (p.ops[op].kind == OpKind::MatMul) group.push_back(op);
  }
  // Walk Pointwise ops from the taps to the first MatMul.
  OpId reader = kNoOp;
  std::vector<TensorId> todo;
  for (OpId g : group) todo.push_back(p.ops[g].output);
  std::vector<OpId> chain;
  while (!todo.empty() && reader == kNoOp) {
    const TensorId t = todo.back();
    todo.pop_back();
    for (OpId c : p.consumers[t]) {
      if (p.ops[c].kind == OpKind::MatMul) {
        reader = c;
        break;
      }
      if (p.ops[c].kind == OpKind::Pointwise && std::find(chain.begin(), chain.end(), c) == chain.end()) {
        chain.push_back(c);
        todo.push_back(p.ops[c].output);
      }
    }
  }
  if (reader == kNoOp) return out;
  // The Pointwise ops making L (up to the first non-Pointwise op).
  std::vector<OpId> maker;
  for (OpId q = p.producer[l]; q != kNoOp && p.ops[q].kind == OpKind::Pointwise;) {
    maker.push_back(q);
    const TensorId in = p.ops[q].inputs[0];
    q = p.producer[in];
  }
  for (int with_maker = 0; with_maker < 2; ++with_maker) {
    for (Elements k : {Elements{1}, std::max<Elements>(1, p.ReductionLength(reader) / 2), p.ReductionLength(reader)}) {
      for (Elements w : {n, std::max<Elements>(1, n / 2)}) {
        std::vector<OpId> merged = group;
        merged.insert(merged.end(), chain.begin(), chain.end());
        merged.push_back(reader);
        if (with_maker) merged.insert(merged.end(), maker.begin(), maker.end());
        std::sort(merged.begin(), merged.end());
        Schedule s;
        bool placed = false;
        for (const Subgraph& sg : base.subgraphs) {
          const OpId op = sg.ops.back();
          if (std::find(merged.begin(), merged.end(), op) == merged.end()) {
            s.subgraphs.push_back(sg);
            continue;
          }
          if (placed) continue;
          placed = true;
          s.subgraphs.push_back(Sub(merged, {w, n, std::min(k, n)}));
        }
        out.push_back(s);
      }
    }
  }
  return out;
}

TEST_CASE("P42: the bound is never above the oracle on classes of taps with a weight path (property)") {
  std::mt19937_64 rng(4242);
  int valid = 0, priced = 0, raised = 0, upstream = 0;
  double closest = 0, closest_raised = 0;
  for (int trial = 0; trial < 1600; ++trial) {
    const Problem p = TapNet(rng, trial % 4);
    CAPTURE(trial);
    const LowerBound bound = ComputeLowerBound(p);
    CHECK(bound.tap_weights >= bound.compute - 1e-9);
    if (bound.tap_weight_members > 0) ++priced;
    g_tap_weights = false;
    const double before = ComputeLowerBound(p).total();
    g_tap_weights = true;
    const bool raises = bound.total() > before * (1 + 1e-9);
    raised += raises;
    std::vector<Schedule> schedules;
    try {
      schedules = testing::SampleSchedules(p, rng, trial % 8 == 0);
    } catch (const std::runtime_error&) {
      continue;  // some op fits the fast memory at no granularity alone: no valid schedule
    }
    const size_t sampled = schedules.size();
    const std::vector<Schedule> merged = Upstream(p);
    schedules.insert(schedules.end(), merged.begin(), merged.end());
    for (size_t k = 0; k < schedules.size(); ++k) {
      const Evaluation e = EvaluateOracle(p, schedules[k]);
      if (!e.ok()) continue;
      ++valid;
      upstream += k >= sampled;
      INFO("schedule " << k << ": tap weights " << bound.tap_weights << " total " << bound.total() << ", oracle " << e.total);
      CHECK(e.total >= bound.total() * (1 - 1e-9));
      CHECK(e.total >= bound.tap_weights * (1 - 1e-9));
      closest = std::max(closest, bound.tap_weights / e.total);
      if (raises) closest_raised = std::max(closest_raised, bound.total() / e.total);
    }
  }
  MESSAGE("P42 property: ", valid, " valid schedules (", upstream, " with the taps upstream of their reader), ", priced,
          " problems priced, ", raised, " bounds raised, closest ", closest, " (", closest_raised, " where P42 raises it)");
  CHECK(valid > 6000);
  CHECK(priced > 200);
  CHECK(raised > 20);
  CHECK(upstream > 300);
}

}  // namespace
}  // namespace annealer
