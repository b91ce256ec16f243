// P26, a MatMul that must run in its k-loop (eval/bound/traffic/first_instance.h, docs/lower-bound.md "A
// MatMul that must run in its k-loop (P26)"): which MatMuls it proves, a hand case met by a
// schedule, and the bound against the oracle on random mixer-like blocks and small heads (with the
// exact solver's best) under a weight path, one path and random chip rules.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>

#include "eval/bound/bounds.h"
#include "eval/bound/traffic/first_instance.h"
#include "eval/bound/traffic/perstep.h"
#include "eval/oracle.h"
#include "eval/random_schedule.h"
#include "tests/support/mixer_blocks.h"
#include "tests/support/problem_maker.h"
#include "tests/support/sample_schedules.h"
#include "tests/support/suffix_bounds.h"

namespace annealer {
namespace {

using bound_internal::FirstInstanceInLoop;
using bound_internal::PerStepExcess;

Subgraph Sub(std::vector<OpId> ops, Granularity g, std::vector<TensorId> retain = {}) {
  Subgraph s;
  s.ops = std::move(ops);
  s.granularity = g;
  s.retain = std::move(retain);
  return s;
}

// x = A @ W (A a graph input 4 x 8, W an 8 x 4 weight, base 4; K = 8 > n = 4), its epilogue
// e = f(x) (base 14), a transpose t of e (Layout), r = e + t (base 0) and a head h = Mvec @ r
// (Mvec 1 x 4, K = 4 <= n, base 64, a graph output); B = 4, Bw = 1. The analysis lets x run as the
// head's strip producer (SR, factor 1: no surplus), so P24 alone claims nothing for it: the islands
// part is the compute, 4 + 14 + 64 = 82. But every path from x to the head enters r, which reads t,
// made from e in slow memory (L1): the first subgraph holding x cannot hold r, so x runs in its
// k-loop there and claims delta(1) = 14 (P24's case: [4, 4, 4], steps of max(2, 16) and
// max(2 + 14, 16), less 18 of compute): 96. Met: {x, e} at [4, 4, 4] (16 + 16, e written at the
// last step, 16 / B = 4, beside the weight's 16), then {t, r, h} at [4, 1, 4] (one step: the head's
// 64 beside 36 / B of loads and 4 / B of write): 32 + 64.
Problem HandCase(bool layout) {
  Problem p;
  p.native = 4;
  // A, W, x, e, t, r, Mvec, h ({width, height}); without the Layout op r reads a graph input.
  p.tensors = {{8, 4}, {4, 8}, {4, 4}, {4, 4}, {4, 4}, {4, 4}, {4, 1}, {4, 1}};
  p.ops = {{OpKind::MatMul, {0, 1}, 2, 4},
           {OpKind::Pointwise, {2}, 3, 14},
           {layout ? OpKind::Layout : OpKind::Pointwise, {layout ? TensorId{3} : TensorId{8}}, 4, 0},
           {OpKind::Pointwise, {3, 4}, 5, 0},
           {OpKind::MatMul, {6, 5}, 7, 64}};
  if (!layout) p.tensors.push_back({4, 4});
  p.fast_memory_capacity = 4096;
  p.slow_memory_bandwidth = 4;
  p.chip.weight_bandwidth = 1;
  REQUIRE(p.Finalize().empty());
  REQUIRE(p.OnWeightPath(1));
  return p;
}

TEST_CASE("P26: a MatMul behind a transpose on every path to the head runs in its k-loop, by hand, met") {
  const Problem p = HandCase(true);
  CHECK(FirstInstanceInLoop(p) == std::vector<char>{1, 0, 0, 0, 0});
  CHECK(PerStepExcess(4, 4, 4, 8, 4, 1, 1) == doctest::Approx(14));
  const LowerBound bound = ComputeLowerBound(p);
  CHECK(bound.per_step_twins == 1);
  CHECK(bound.first_in_loop_twins == 1);
  CHECK(bound.islands == doctest::Approx(96));
  CHECK(bound.total() == doctest::Approx(96));
  Schedule met;
  met.subgraphs = {Sub({0, 1}, {4, 4, 4}), Sub({2, 3, 4}, {4, 1, 4})};
  const Evaluation e = EvaluateOracle(p, met);
  REQUIRE(e.ok());
  CHECK(e.subgraphs[0].latency == doctest::Approx(32));
  CHECK(e.subgraphs[1].latency == doctest::Approx(64));
  CHECK(e.total == doctest::Approx(96));
  bound_internal::g_first_instance_in_loop = false;
  const LowerBound before = ComputeLowerBound(p);
  bound_internal::g_first_instance_in_loop = true;
  CHECK(before.first_in_loop_twins == 0);
  CHECK(before.total() == doctest::Approx(82));
}

// The same graph with r reading a graph input instead of the transpose: x may now run upstream of
// the head in the first subgraph that holds it, and P26 proves nothing.
TEST_CASE("P26: without the transpose the MatMul may first run upstream of the head") {
  const Problem p = HandCase(false);
  CHECK(FirstInstanceInLoop(p) == std::vector<char>{0, 0, 0, 0, 0});
  const LowerBound bound = ComputeLowerBound(p);
  CHECK(bound.first_in_loop_twins == 0);
}

// Reason (a): x's output is read by a Layout op (or is a graph output), so some subgraph writes it
// with x as a sink, in its k-loop, though x also feeds a head directly.
TEST_CASE("P26: a MatMul whose output a Layout op reads runs in its k-loop somewhere") {
  Problem p;
  p.native = 4;
  p.tensors = {{8, 4}, {4, 8}, {4, 4}, {4, 4}, {4, 1}, {4, 1}};  // A, W, x, t, Mvec, h
  p.ops = {{OpKind::MatMul, {0, 1}, 2, 4}, {OpKind::Layout, {2}, 3, 0}, {OpKind::MatMul, {4, 2}, 5, 64}};
  p.fast_memory_capacity = 4096;
  p.slow_memory_bandwidth = 4;
  p.chip.weight_bandwidth = 1;
  REQUIRE(p.Finalize().empty());
  CHECK(FirstInstanceInLoop(p) == std::vector<char>{1, 0, 0});
  p.ops[1].kind = OpKind::Pointwise;  // a reader that may share a subgraph: nothing proven
  REQUIRE(p.Finalize().empty());
  CHECK(FirstInstanceInLoop(p) == std::vector<char>{0, 0, 0});
}

// Mixer-like blocks at a small scale (native 4): a residual stream X (M x d); per block, token
// mixing through two transposes (Layout ops) six times in seven, placed before or after the MLP;
// fc1 = LN(X) @ W1 (K = d > n) with 0-2 epilogue ops, fc2 = G @ W2 (K = h > n) with a bias
// sometimes, the residual add; fc2's output read by a transpose now and then (reason a); a head
// seven times in eight: a mean over the rows (K = M <= n) that gives every op of the stream a strip
// mode, and a classifier. So some fc2s reach the head only through an add that reads a transpose
// (proven), others directly (not).
Problem Mixer(std::mt19937_64& rng) {
  testing::ProblemMaker make{rng};
  Problem& problem = make.problem;
  problem.native = 4;
  const Elements m = make.Pick({3, 4, 6}), d = make.Pick({5, 8}), h = make.Pick({6, 8, 12});
  const int blocks = static_cast<int>(make.Pick({1, 2, 3}));
  TensorId x = make.Tensor(m, d);
  const auto mixing = [&] { x = testing::TokenMixing(make, x, m, d); };
  for (int b = 0; b < blocks; ++b) {
    const int where = static_cast<int>(make.Pick({0, 0, 0, 1, 1, 1, 2}));  // mixing before, after or none
    if (where == 0) mixing();
    const TensorId ln2 = make.Op(OpKind::Pointwise, {x}, m, d, make.PickReal({0, 4, 16}));
    TensorId g = make.Op(OpKind::MatMul, {ln2, make.Tensor(d, h)}, m, h, make.PickReal({1, 8, 32}));
    const int epilogues = static_cast<int>(make.Pick({0, 1, 2}));
    for (int e = 0; e < epilogues; ++e) g = make.Op(OpKind::Pointwise, {g}, m, h, make.PickReal({0, 2, 16, 64}));
    TensorId y = make.Op(OpKind::MatMul, {g, make.Tensor(h, d)}, m, d, make.PickReal({1, 8, 32}));
    if (make.Coin(4)) make.Op(OpKind::Layout, {y}, d, m, 0);  // a transpose of fc2's output, a graph output
    if (make.Coin(2)) y = make.Op(OpKind::Pointwise, {y, make.Tensor(m, d)}, m, d, make.PickReal({0, 2}));
    x = make.Op(OpKind::Pointwise, {x, y}, m, d, make.PickReal({0, 1, 8}));
    if (where == 1) mixing();
  }
  if (!make.Coin(8)) {
    const TensorId ln = make.Op(OpKind::Pointwise, {x}, m, d, make.PickReal({0, 4}));
    const TensorId mean = make.Op(OpKind::MatMul, {make.Tensor(1, m), ln}, 1, d, make.PickReal({1, 4, 64}));
    const Elements classes = make.Pick({4, 6});
    if (make.Coin(2)) make.Op(OpKind::MatMul, {mean, make.Tensor(d, classes)}, 1, classes, make.PickReal({1, 8}));
  }
  make.AtRealRatios();
  REQUIRE(problem.Finalize() == "");
  return problem;
}

// Small enough for the exact solver: x = G @ W (K > n), an epilogue e sometimes, r = e + t with t
// a transpose of e (x then first runs in its k-loop) or a graph input (x may first run upstream),
// and a head Mvec @ r (K = M <= n) that may take x as its strip producer.
Problem Small(std::mt19937_64& rng) {
  testing::ProblemMaker make{rng};
  Problem& problem = make.problem;
  problem.native = 4;
  const Elements m = make.Pick({2, 3, 4}), h = make.Pick({6, 8, 12}), d = make.Pick({4});
  TensorId g = make.Tensor(m, h);
  if (make.Coin(2)) g = make.Op(OpKind::Pointwise, {g}, m, h, make.PickReal({0, 2}));
  TensorId y = make.Op(OpKind::MatMul, {g, make.Tensor(h, d)}, m, d, make.PickReal({1, 4, 16}));
  if (make.Coin(2)) y = make.Op(OpKind::Pointwise, {y}, m, d, make.PickReal({0, 4, 32}));
  const TensorId t = make.Coin(2) ? make.Op(OpKind::Layout, {y}, m, d, 0) : make.Tensor(m, d);
  const TensorId r = make.Op(OpKind::Pointwise, {y, t}, m, d, make.PickReal({0, 2}));
  make.Op(OpKind::MatMul, {make.Tensor(1, m), r}, 1, d, make.PickReal({1, 16, 64, 256}));
  make.AtRealRatios();
  REQUIRE(problem.Finalize() == "");
  return problem;
}

// The chip: a weight path like tpu-v1's (Bw about 2.3 B, a FIFO that holds a few strips or every
// weight), one path, or random rules (H1-H5, sometimes beside a random weight path without
// prefetch).
void PickChip(Problem& problem, std::mt19937_64& rng, int kind) {
  testing::ProblemMaker make{rng};
  problem.chip = ChipRules{};
  if (kind == 0 || kind == 1) {
    problem.chip.weight_bandwidth = problem.slow_memory_bandwidth * (kind == 0 ? 2.262 : make.PickReal({0.3, 1, 3}));
    problem.chip.weight_fifo_capacity = make.Pick({0, 16, 24, 40, 96});
  } else if (kind == 3) {
    problem.chip = RandomChipRules(problem, rng);
    if (make.Coin(2)) RandomWeightPath(problem, rng, problem.chip);
  }
}

TEST_CASE("P26: the bound never above the oracle on random mixer-like blocks, weight path, one path, random rules") {
  std::mt19937_64 rng(26001);
  int raised = 0, proven = 0, rules_checked = 0;
  testing::RaisedTally tally;
  for (int trial = 0; trial < 1600; ++trial) {
    const bool small = trial % 2 == 1;
    Problem problem = small ? Small(rng) : Mixer(rng);
    const double ratio[] = {0.1, 0.5, 2, 10};
    for (Op& op : problem.ops) op.base_cost *= ratio[trial % 4];
    const int chip = trial % 4;  // 0 tpu-v1-like, 1 a random weight path, 2 one path, 3 random rules
    PickChip(problem, rng, chip);
    if (!CheckChipRules(problem.chip, problem.native, problem.fast_memory_capacity).empty()) continue;
    const LowerBound bound = ComputeLowerBound(problem);
    bound_internal::g_first_instance_in_loop = false;
    const LowerBound before = ComputeLowerBound(problem);
    bound_internal::g_first_instance_in_loop = true;
    const BoundModel model = BuildBoundModel(problem);
    const bool rises = bound.total() > before.total() * (1 + 1e-9);
    raised += rises ? 1 : 0;
    proven += bound.first_in_loop_twins;
    CHECK(bound.total() >= before.total() * (1 - 1e-12));
    // Random rules break many random schedules; the valid ones are counted apart.
    const std::vector<Schedule> schedules = testing::SampleSchedules(problem, rng, small || trial % 3 == 0);
    const int checked = testing::CheckBoundOnSchedules(problem, model, bound, before, schedules, rises, true, "trial " + std::to_string(trial) + " chip " + std::to_string(chip), tally);
    rules_checked += chip == 3 ? checked : 0;
  }
  MESSAGE("P26: valid schedules " << tally.valid << " (" << rules_checked << " under random rules), MatMuls proven "
                                  << proven << ", problems whose bound P26 raises " << raised << " ("
                                  << tally.raised_schedules << " schedules, " << tally.met
                                  << " met exactly), tightest bound/latency where raised " << tally.tightest);
  CHECK(tally.valid > 4000);
  CHECK(raised > 80);
}

}  // namespace
}  // namespace annealer
