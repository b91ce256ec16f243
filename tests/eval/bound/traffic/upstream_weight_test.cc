// P51, the whole weight of a MatMul's instance upstream of a k-loop (eval/bound/traffic/upstream_weight.h,
// docs/lower-bound.md "The whole weight of an upstream instance (P51)"): a hand case met by the exact
// solver's optimum, and the bound against the oracle on random heads and mixer-like blocks under a
// weight FIFO, with schedules that run the MatMul upstream of the head.
#include <doctest/doctest.h>

#include <random>
#include <string>

#include "eval/bound/bounds.h"
#include "eval/bound/traffic/upstream_weight.h"
#include "eval/model/chip_rules.h"
#include "eval/oracle.h"
#include "search/starts/baseline.h"
#include "tests/support/mixer_blocks.h"
#include "tests/support/problem_maker.h"
#include "tests/support/sample_schedules.h"
#include "tests/support/suffix_bounds.h"

namespace annealer {
namespace {

using bound_internal::g_upstream_weight;
using bound_internal::UpstreamWeightSurplus;

Subgraph Sub(std::vector<OpId> ops, Granularity g) {
  Subgraph s;
  s.ops = std::move(ops);
  s.granularity = g;
  return s;
}

// P (4 x 8, a graph input) -> g = f(P) (base 16, native 32) -> x = g @ W (W an 8 x 8 weight, base 8,
// K = 8 > n = 4, native 16) -> h = Mvec @ x (Mvec 1 x 4, K = 4 <= n, base 4, native 8); B = 4,
// Bw = 1, FIFO 16: a step holds at most 2 of W's 8 columns (c = 2), so phi = 4 / 2 = 2. P24 claims
// x's upstream surplus (f - 1) c_x = 16 (f = 2) beside its k-loop excess; P51 prices the upstream
// instance's subgraph S at max(C_S, 64) - N_S >= min over X of max(16 + X, 64 - 16 - X) = 32.
// Bound 56 + 32 = 88 (72 before); the optimum 96: {g}, then {x, h} at [2, 1, 4] (4 tiles of 16 of
// weight beside 12 of compute).
Problem HandCase(bool classifier) {
  Problem p;
  p.native = 4;
  // P, g, W, x, Mvec, h ({width, height}); the classifier reads h with an 8 x 4 weight.
  p.tensors = {{8, 4}, {8, 4}, {8, 8}, {8, 4}, {4, 1}, {8, 1}};
  p.ops = {{OpKind::Pointwise, {0}, 1, 16}, {OpKind::MatMul, {1, 2}, 3, 8}, {OpKind::MatMul, {4, 3}, 5, 4}};
  if (classifier) {
    p.tensors.push_back({4, 8});
    p.tensors.push_back({4, 1});
    p.ops.push_back({OpKind::MatMul, {5, 6}, 7, 4});
  }
  p.fast_memory_capacity = 4096;
  p.slow_memory_bandwidth = 4;
  p.chip.weight_bandwidth = 1;
  p.chip.weight_fifo_capacity = 16;
  REQUIRE(p.Finalize().empty());
  REQUIRE(p.OnWeightPath(2));
  return p;
}

TEST_CASE("P51: an upstream instance loads its whole weight beside doubled compute, by hand, against the optimum") {
  const Problem p = HandCase(false);
  std::vector<char> weights(p.tensors.size(), 0);
  weights[2] = 1;
  CHECK(UpstreamWeightSurplus(p, weights, 1, 2, 16, 1, 0) == doctest::Approx(32));
  CHECK(UpstreamWeightSurplus(p, weights, 1, 2, 16, 1, 40) == doctest::Approx(16));  // others share S
  const LowerBound bound = ComputeLowerBound(p);
  CHECK(bound.total() == doctest::Approx(88));
  g_upstream_weight = false;
  const LowerBound before = ComputeLowerBound(p);
  g_upstream_weight = true;
  CHECK(before.total() == doctest::Approx(72));
  Schedule met;
  met.subgraphs = {Sub({0}, {4, 4, 1}), Sub({1, 2}, {2, 1, 4})};
  const Evaluation e = EvaluateOracle(p, met);
  REQUIRE(e.ok());
  CHECK(e.subgraphs[1].latency == doctest::Approx(64));
  CHECK(e.total == doctest::Approx(96));
  Schedule wide = met;
  wide.subgraphs[1].granularity = {4, 1, 4};  // all four columns of W in a step: past the FIFO
  CHECK_FALSE(EvaluateOracle(p, wide).ok());
  CHECK(testing::ExactOptimum(p) == doctest::Approx(96));
}

// The classifier (K = 8 > n) reads the head's output as its LHS: S may be the classifier's
// subgraph with the head upstream of it, where the classifier and the head may run at their native
// compute (Q = 4 + 8) beside both weights (64 + 32): the least of 32 and the second case's 42.
TEST_CASE("P51: the head's reader as the other host, by hand, against the optimum") {
  const Problem p = HandCase(true);
  std::vector<char> weights(p.tensors.size(), 0);
  weights[2] = weights[6] = 1;
  // Second case: min over X of max(16 + X, 64 + 32 - 16 - 12 - X) = 42; the least with the first, 32.
  CHECK(UpstreamWeightSurplus(p, weights, 1, 2, 16, 1, 0) == doctest::Approx(32));
  weights[6] = 0;  // the classifier's RHS on the activation path: max(16 + X, 64 - 28 - X), 26
  CHECK(UpstreamWeightSurplus(p, weights, 1, 2, 16, 1, 0) == doctest::Approx(26));
  const LowerBound bound = ComputeLowerBound(p);
  const Latency optimum = testing::ExactOptimum(p);
  CHECK(bound.total() <= optimum * (1 + 1e-9));
  g_upstream_weight = false;
  const LowerBound before = ComputeLowerBound(p);
  g_upstream_weight = true;
  CHECK(bound.total() >= before.total());
  MESSAGE("P51 classifier hand case: bound " << bound.total() << " (before " << before.total() << "), optimum " << optimum);
}

// x = G @ W (K > n, base beta) with up to two epilogues and sometimes a residual read, a LayerNorm-like
// op, the mean over rows (K = M <= n) and, sometimes, a classifier (an exit) or a transpose of x's
// output; a Pointwise producer of G now and then. A FIFO of 8 to 48 elements at native 4.
Problem Head(std::mt19937_64& rng) {
  testing::ProblemMaker make{rng};
  Problem& problem = make.problem;
  problem.native = 4;
  const Elements m = make.Pick({2, 3, 4}), k = make.Pick({6, 8, 12}), d = make.Pick({5, 8, 12});
  TensorId g = make.Tensor(m, k);
  if (make.Coin(2)) g = make.Op(OpKind::Pointwise, {g}, m, k, make.PickReal({0, 2, 16}));
  TensorId y = make.Op(OpKind::MatMul, {g, make.Tensor(k, d)}, m, d, make.PickReal({1, 4, 16, 64}));
  const int epilogues = static_cast<int>(make.Pick({0, 1, 2}));
  for (int e = 0; e < epilogues; ++e) {
    std::vector<TensorId> in = {y};
    if (make.Coin(2)) in.push_back(make.Tensor(m, d));
    y = make.Op(OpKind::Pointwise, in, m, d, make.PickReal({0, 2, 16}));
  }
  if (make.Coin(4)) make.Op(OpKind::Layout, {y}, d, m, 0);
  const TensorId ln = make.Op(OpKind::Pointwise, {y}, m, d, make.PickReal({0, 4, 16}));
  const TensorId mean = make.Op(OpKind::MatMul, {make.Tensor(1, m), ln}, 1, d, make.PickReal({1, 4, 16, 64}));
  if (make.Coin(2)) {  // an exit: heavy compute beside a light weight now and then
    const Elements classes = make.Pick({1, 4, 6});
    const TensorId logits = make.Op(OpKind::MatMul, {mean, make.Tensor(d, classes)}, 1, classes, make.PickReal({1, 8, 64, 256}));
    if (make.Coin(2)) make.Op(OpKind::Pointwise, {logits}, 1, classes, make.PickReal({0, 2, 64}));
  }
  make.AtRealRatios();
  problem.chip.weight_bandwidth = problem.slow_memory_bandwidth * make.PickReal({0.3, 1, 2.262, 3});
  problem.chip.weight_fifo_capacity = make.Pick({8, 16, 24, 48});
  REQUIRE(problem.Finalize() == "");
  REQUIRE(CheckChipRules(problem.chip, problem.native, problem.fast_memory_capacity).empty());
  return problem;
}

// Schedules that run each MatMul with K > n upstream of what reads it: the layer baseline with the
// MatMul and its descendants (all, or without those past a MatMul that reads one as its LHS) as one
// subgraph, at narrow tiles.
void AppendUpstreamGroups(const Problem& problem, std::vector<Schedule>& schedules) {
  const std::optional<Schedule> baseline = testing::BaselineIfAny(problem);
  if (!baseline) return;
  const Schedule& base = *baseline;
  const int num_ops = static_cast<int>(problem.ops.size());
  for (OpId x = 0; x < num_ops; ++x) {
    if (problem.ops[x].kind != OpKind::MatMul || problem.ReductionLength(x) <= problem.native) continue;
    for (int whole = 0; whole < 2; ++whole) {
      std::vector<char> in(num_ops, 0);
      in[x] = 1;
      Subgraph group;
      for (OpId y : problem.topological_order) {
        if (!in[y]) continue;
        group.ops.push_back(y);
        for (OpId c : problem.consumers[problem.ops[y].output]) {
          const Op& op = problem.ops[c];
          const bool lhs = op.kind == OpKind::MatMul && op.inputs[0] == problem.ops[y].output;
          if (op.kind != OpKind::Layout && (whole || !lhs)) in[c] = 1;
        }
      }
      if (group.ops.size() < 2) continue;
      for (const Granularity g : {Granularity{1, 1, 4}, Granularity{2, 1, 4}, Granularity{2, 4, 2}, Granularity{1, 2, 1},
                                  Granularity{4, 1, 4}, Granularity{2, 2, 3}}) {
        group.granularity = g;
        schedules.push_back(testing::WithGroup(base, group));
      }
    }
  }
}

TEST_CASE("P51: the bound never above the oracle on random heads and mixer-like blocks under a weight FIFO") {
  std::mt19937_64 rng(51001);
  int raised = 0;
  testing::RaisedTally tally;
  for (int trial = 0; trial < 3000; ++trial) {
    Problem problem = trial % 3 == 2 ? testing::Blocks(rng) : Head(rng);
    const double ratio[] = {0.1, 0.5, 2, 10};
    for (Op& op : problem.ops) op.base_cost *= ratio[trial % 4];
    const LowerBound bound = ComputeLowerBound(problem);
    g_upstream_weight = false;
    const LowerBound before = ComputeLowerBound(problem);
    g_upstream_weight = true;
    CHECK(bound.total() >= before.total() * (1 - 1e-12));
    const BoundModel model = BuildBoundModel(problem);
    const bool rises = bound.total() > before.total() * (1 + 1e-9);
    raised += rises ? 1 : 0;
    std::vector<Schedule> schedules = testing::SampleSchedules(problem, rng, rises || trial % 4 == 0);
    AppendUpstreamGroups(problem, schedules);
    testing::CheckBoundOnSchedules(problem, model, bound, before, schedules, rises, true, "trial " + std::to_string(trial), tally);
  }
  MESSAGE("P51: valid schedules " << tally.valid << ", problems whose bound P51 raises " << raised << " ("
                                  << tally.raised_schedules << " schedules, " << tally.met
                                  << " met exactly), tightest bound/latency where raised " << tally.tightest);
  CHECK(tally.valid > 30000);
  CHECK(raised > 60);
}

}  // namespace
}  // namespace annealer
