// P35, producers run again to serve an island (eval/bound/islands/recompute.h, docs/lower-bound.md
// "Producers run again to serve an island (P35)"): hand cases where the schedule that serves every
// reader meets it, and random problems at real-chip ratios with a weight path (H6) whose valid
// schedules (random, both baselines, the exact solver's best and schedules that serve every
// reader by running the producer's chain again) the oracle prices at or above it.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "eval/bound/bounds.h"
#include "eval/bound/islands/recompute.h"
#include "eval/oracle.h"
#include "tests/support/problem_maker.h"
#include "tests/support/sample_schedules.h"

namespace annealer {
namespace {

Subgraph One(std::vector<OpId> ops, Granularity g, std::vector<TensorId> retain = {}) {
  Subgraph s;
  s.ops = std::move(ops);
  s.granularity = g;
  s.retain = std::move(retain);
  return s;
}

// P16's hand case (tests/eval/weight_path_test.cc) with a producer that costs nothing: X (8x8, a graph
// input) -> P (Pointwise, base 0) -> A, read by `heads` MatMuls A @ W_j (K = 8 > n = 4, so each
// head is an island of its own, P1), W_j a weight (Bw = 4), K_j a graph output; B = 1. P16 lets P
// run again for free before each head, so it claims no load of A: 64 (X) + 40 a head (P21: a head
// that finds A retained streams W_j and writes K_j, 20 a row tile). But each run of P that serves a
// head loads X again (64, P35's chain), so serving costs 64 + 40 = 104 a head, and writing A once
// (X loaded, A written: 128) with every head loading it (96 a head) costs more from two heads on.
TEST_CASE("P35 by hand: a free producer serving every head reloads its input each time") {
  for (int heads : {1, 2, 3, 5}) {
    CAPTURE(heads);
    Problem p = testing::SharedInputHeads(heads, 4.0);
    p.ops[0].base_cost = 0;
    REQUIRE(p.Finalize() == "");
    const LowerBound bound = ComputeLowerBound(p);
    CHECK(bound.island_count == 1 + heads);
    CHECK(bound.crossing == doctest::Approx(64 + 40 * heads));
    CHECK(bound.recompute == doctest::Approx(104 * heads));
    CHECK(bound.recompute_count == 1);
    CHECK(bound.total() == doctest::Approx(104 * heads));
    Schedule served;  // P before every head, retaining A for it
    for (int j = 0; j < heads; ++j) {
      served.subgraphs.push_back(One({0}, Granularity{4, 4, 1}, {1}));
      served.subgraphs.push_back(One({static_cast<OpId>(1 + j)}, Granularity{4, 4, 4}));
    }
    const Evaluation e = EvaluateOracle(p, served);
    REQUIRE(e.ok());
    CHECK(e.total == doctest::Approx(104 * heads));  // it meets the bound: optimal
    Schedule written;  // P once, A written, every head loads it
    written.subgraphs.push_back(One({0}, Granularity{4, 4, 1}));
    for (int j = 0; j < heads; ++j) written.subgraphs.push_back(One({static_cast<OpId>(1 + j)}, Granularity{4, 4, 4}));
    const Evaluation w = EvaluateOracle(p, written);
    REQUIRE(w.ok());
    CHECK(w.total == doctest::Approx(128 + 96 * heads));
    bound_internal::g_recompute_cuts = false;
    const LowerBound without = ComputeLowerBound(p);
    bound_internal::g_recompute_cuts = true;
    CHECK(without.recompute == doctest::Approx(without.crossing));
    CHECK(without.recompute_count == 0);
  }
}

// With P's compute 400 (base 100), running it again costs more than its input's load: P16's price
// (400 a served head) stands, P35 adds nothing (P16's hand case, 400 + 96 a head, met).
TEST_CASE("P35 by hand: where the producer's compute exceeds its input's load, P16 stands") {
  for (int heads : {2, 3, 5}) {
    CAPTURE(heads);
    Problem p = testing::SharedInputHeads(heads, 4.0);
    REQUIRE(p.Finalize() == "");
    const LowerBound bound = ComputeLowerBound(p);
    CHECK(bound.crossing == doctest::Approx(400 + 96 * heads));
    CHECK(bound.recompute == doctest::Approx(bound.crossing));
  }
}

// The heads' outputs gathered by one Layout op (a concatenation, L1: it reads them from slow
// memory) whose output a Pointwise op Q reads beside A: Q is in P's island, but depends on every
// head, so no subgraph before a head holds it, and P35 prices A as above (Q's compute and loads
// count in the island, not in the chains). A second Pointwise op R between X and P makes the chain
// longer: the widest path X -> R -> P still has least tensor 64.
TEST_CASE("P35 by hand: ops that depend on the heads through a Layout op stay out of the chains") {
  for (int heads : {2, 3}) {
    CAPTURE(heads);
    Problem p;
    p.native = 4;
    p.tensors = {{8, 8}, {8, 8}, {8, 8}};                  // X, R's output, A
    p.ops.push_back({OpKind::Pointwise, {0}, 1, 0});      // R
    p.ops.push_back({OpKind::Pointwise, {1}, 2, 0});      // P
    std::vector<TensorId> outs;
    for (int j = 0; j < heads; ++j) {
      p.tensors.push_back({4, 8});  // W_j
      p.tensors.push_back({4, 8});  // K_j
      const auto w = static_cast<TensorId>(p.tensors.size() - 2);
      p.ops.push_back({OpKind::MatMul, {2, w}, w + 1, 0});
      outs.push_back(w + 1);
    }
    p.tensors.push_back({8, 8});  // the concatenation
    const auto cat = static_cast<TensorId>(p.tensors.size() - 1);
    p.ops.push_back({OpKind::Layout, outs, cat, 0});
    p.tensors.push_back({8, 8});
    p.ops.push_back({OpKind::Pointwise, {cat, 2}, static_cast<TensorId>(p.tensors.size() - 1), 0});  // Q
    p.fast_memory_capacity = 4096;
    p.slow_memory_bandwidth = 1;
    p.chip.weight_bandwidth = 4;
    REQUIRE(p.Finalize() == "");
    const LowerBound bound = ComputeLowerBound(p);
    CHECK(bound.recompute_count == 1);
    CHECK(bound.recompute > bound.crossing + 1);
    // Serve every head by running R and P again before it; Q last, reading the concatenation.
    Schedule served;
    for (int j = 0; j < heads; ++j) {
      served.subgraphs.push_back(One({0, 1}, Granularity{4, 4, 1}, {2}));
      served.subgraphs.push_back(One({static_cast<OpId>(2 + j)}, Granularity{4, 4, 4}));
    }
    served.subgraphs.push_back(One({static_cast<OpId>(2 + heads)}, Granularity{4, 4, 1}));
    served.subgraphs.push_back(One({0, 1, static_cast<OpId>(3 + heads)}, Granularity{4, 4, 1}));
    const Evaluation e = EvaluateOracle(p, served);
    REQUIRE(e.ok());
    CHECK(bound.total() <= e.total * (1 + 1e-9));
    MESSAGE("heads " << heads << ": P16 " << bound.crossing << ", P35 " << bound.recompute << ", served " << e.total);
  }
}

// Random problems: X (an activation graph input) through 1-3 Pointwise ops (a residual now and
// then, or a MatMul with a weight, which leaves the tensor unpriced) to p's output t, read by 2-4
// MatMul heads with K > n and a weight each (islands of their own, P1), their outputs followed by
// nothing, a Pointwise op or a Layout op, or all gathered by one Layout op that a Pointwise op of
// p's island reads beside t; sometimes two islands that each read t and an earlier trunk tensor u
// (a head on each and their sum: one chain serves both tensors), and sometimes a second crossing
// tensor of the trunk with readers of its own. Real-chip ratios, a weight path at 0.5-10 times B,
// the FIFO unchecked or checked.
struct Trunk {
  Problem problem;
  std::vector<OpId> chain;  // the trunk's ops, X's reader first, p last
  std::vector<OpId> heads;  // t's readers
  // Islands that read t and an earlier trunk tensor u (two heads and their sum, one subgraph
  // when served): one chain serves both tensors.
  std::vector<std::vector<OpId>> pairs;
  TensorId u = -1;
};

Trunk ServedHeads(std::mt19937_64& rng) {
  testing::ProblemMaker make{rng};
  Problem& problem = make.problem;
  problem.native = 4;
  const Elements rows = make.Pick({4, 8}), d = make.Pick({8, 12});
  Trunk trunk;
  const TensorId x = make.Tensor(rows, d);
  TensorId t = x;
  const int length = 1 + static_cast<int>(make.Pick({0, 1, 2}));
  std::vector<TensorId> trunk_tensors;
  for (int i = 0; i < length; ++i) {
    if (i > 0 && make.Coin(5)) {
      t = make.Op(OpKind::MatMul, {t, make.Tensor(d, d)}, rows, d, make.PickReal({0, 0.5, 2}));  // K = d: > n
    } else if (i > 0 && make.Coin(3)) {
      t = make.Op(OpKind::Pointwise, {t, x}, rows, d, make.PickReal({0, 0.5, 2}));  // a residual
    } else {
      t = make.Op(OpKind::Pointwise, {t}, rows, d, make.PickReal({0, 0.5, 2}));
    }
    trunk.chain.push_back(static_cast<OpId>(problem.ops.size() - 1));
    trunk_tensors.push_back(t);
  }
  const int heads = static_cast<int>(make.Pick({2, 3, 4}));
  const bool gathered = make.Coin(2);
  std::vector<TensorId> outs;
  for (int j = 0; j < heads; ++j) {
    const Elements width = make.Pick({4, 8});
    TensorId z = make.Op(OpKind::MatMul, {t, make.Tensor(d, width)}, rows, width, make.PickReal({0, 0.5, 4}));
    trunk.heads.push_back(static_cast<OpId>(problem.ops.size() - 1));
    if (!gathered) {
      const int what = std::uniform_int_distribution<int>(0, 2)(rng);
      if (what == 1) z = make.Op(OpKind::Pointwise, {z}, rows, width, make.PickReal({0, 1}));
      if (what == 2) z = make.Op(OpKind::Layout, {z}, width, rows, 0);
    }
    outs.push_back(z);
  }
  if (gathered) {
    const TensorId cat = make.Op(OpKind::Layout, outs, rows, d, 0);
    make.Op(OpKind::Pointwise, {cat, t}, rows, d, make.PickReal({0, 1, 4}));
  }
  if (trunk_tensors.size() >= 2 && make.Coin(3)) {  // islands reading t and u
    trunk.u = trunk_tensors[std::uniform_int_distribution<size_t>(0, trunk_tensors.size() - 2)(rng)];
    for (int j = 0; j < 2; ++j) {
      const Elements width = make.Pick({4, 8});
      const TensorId a = make.Op(OpKind::MatMul, {t, make.Tensor(d, width)}, rows, width, make.PickReal({0, 0.5}));
      const TensorId b = make.Op(OpKind::MatMul, {trunk.u, make.Tensor(d, width)}, rows, width, make.PickReal({0, 0.5}));
      make.Op(OpKind::Pointwise, {a, b}, rows, width, make.PickReal({0, 1}));
      const auto last = static_cast<OpId>(problem.ops.size() - 1);
      trunk.pairs.push_back({last - 2, last - 1, last});
    }
  }
  if (make.Coin(3)) {  // a second crossing tensor of the trunk
    const TensorId u = trunk_tensors[std::uniform_int_distribution<size_t>(0, trunk_tensors.size() - 1)(rng)];
    for (int j = 0; j < 2; ++j) make.Op(OpKind::MatMul, {u, make.Tensor(d, 4)}, rows, 4, make.PickReal({0, 1}));
  }
  make.AtRealRatios();
  problem.chip.weight_bandwidth = problem.slow_memory_bandwidth * make.PickReal({0.5, 2.3, 10});
  problem.chip.weight_fifo_capacity = make.Coin(2) ? 0 : problem.fast_memory_capacity / make.Pick({1, 4});
  REQUIRE(problem.Finalize() == "");
  trunk.problem = problem;
  return trunk;
}

// Serve every head: the trunk again (retaining t) before each head, then every other op alone in
// topological order, writing what it makes. Invalid ones (a tile that does not fit) are skipped.
Schedule ServeEveryHead(const Trunk& trunk, Elements native) {
  Schedule s;
  std::vector<char> placed(trunk.problem.ops.size(), 0);
  const TensorId t = trunk.problem.ops[trunk.chain.back()].output;
  for (OpId h : trunk.heads) {
    s.subgraphs.push_back(One(trunk.chain, Granularity{native, native, 1}, {t}));
    s.subgraphs.push_back(One({h}, Granularity{native, native, native}));
    placed[h] = 1;
  }
  for (const std::vector<OpId>& pair : trunk.pairs) {
    s.subgraphs.push_back(One(trunk.chain, Granularity{native, native, 1}, {trunk.u, t}));
    s.subgraphs.push_back(One(pair, Granularity{native, native, native}));
    for (OpId op : pair) placed[op] = 1;
  }
  s.subgraphs.push_back(One(trunk.chain, Granularity{native, native, 1}));  // t written for the others
  for (OpId op : trunk.chain) placed[op] = 1;
  for (OpId op : trunk.problem.topological_order) {
    if (placed[op]) continue;
    s.subgraphs.push_back(One({op}, Granularity{native, native, trunk.problem.ops[op].kind == OpKind::MatMul ? native : 1}));
  }
  return s;
}

TEST_CASE("P35: producers run again to serve an island, never above the oracle (H6, real ratios)") {
  std::mt19937_64 rng(35350);
  int valid = 0, gained = 0, decided = 0, served_valid = 0, priced = 0;
  double tightest = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    Trunk trunk = ServedHeads(rng);
    Problem& problem = trunk.problem;
    const double ratio[] = {0.1, 0.5, 2, 10};
    for (Op& op : problem.ops) op.base_cost *= ratio[trial % 4];
    if (trial % 5 == 0) problem.chip.weight_bandwidth = 0;  // one path now and then
    const LowerBound bound = ComputeLowerBound(problem);
    priced += bound.recompute_count > 0;
    const bool gains = bound.recompute > bound.crossing * (1 + 1e-9);
    gained += gains;
    const double others = std::max({bound.compute, bound.graph_io, bound.traffic, bound.combined, bound.islands,
                                    bound.streaming, bound.crossing, bound.memory_floor, bound.tiles, bound.sums,
                                    bound.taps, bound.sole_sums, bound.shared_sums});
    const bool decides = bound.recompute > others * (1 + 1e-9);
    std::vector<Schedule> schedules = testing::SampleSchedules(problem, rng, trial % 4 == 0);
    schedules.push_back(ServeEveryHead(trunk, problem.native));
    for (size_t k = 0; k < schedules.size(); ++k) {
      const Evaluation evaluation = EvaluateOracle(problem, schedules[k]);
      if (!evaluation.ok()) continue;
      ++valid;
      served_valid += k + 1 == schedules.size();
      decided += decides;
      INFO("trial " << trial << " schedule " << k << ": crossing " << bound.crossing << " recompute "
                    << bound.recompute << " islands " << bound.islands << ", oracle " << evaluation.total);
      CHECK(bound.recompute <= evaluation.total * (1 + 1e-9));
      CHECK(bound.total() <= evaluation.total * (1 + 1e-9));
      if (decides) tightest = std::max(tightest, bound.recompute / evaluation.total);
    }
  }
  MESSAGE("P35: valid schedules " << valid << " (" << served_valid << " serving every head), problems priced "
                                  << priced << ", where P35 exceeds P16 " << gained << ", schedules where it is above every other part "
                                  << decided << ", tightest recompute/latency " << tightest);
  CHECK(valid > 4000);
  CHECK(gained > 50);
  CHECK(decided > 100);
}

}  // namespace
}  // namespace annealer
