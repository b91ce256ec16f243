// P36, a multiply that waits for its own squeeze (eval/bound/islands/squeeze.h, docs/lower-bound.md "A
// multiply that waits for its own squeeze (P36)"): a hand case with its exact values, and random
// squeeze-excite blocks at real-chip ratios (mlsys-2026's, ascend910-core's with prefetch, a weight
// path, random chip rules) whose valid schedules (random, both baselines, the exact solver's best,
// and schedules that make X again beside the multiply) the oracle prices at or above the bound.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <vector>

#include "eval/bound/bounds.h"
#include "eval/bound/islands/squeeze.h"
#include "eval/oracle.h"
#include "eval/random_schedule.h"
#include "search/starts/baseline.h"
#include "tests/support/problem_maker.h"
#include "tests/support/sample_schedules.h"

namespace annealer {
namespace {

using bound_internal::g_squeeze;
using bound_internal::SqueezeFloor;

std::vector<Schedule> MadeAgain(const Problem& p, const std::vector<double>& claim);

// n = 4, capacity 40, B = 1. X = A @ W0 (A 8x2, W0 2x8, graph inputs; base 10), the squeeze
// s = ones(1x8) @ X (K = 8 > n, base 100), e = Pointwise(s) (base 10), E = broadcast(e) (Layout,
// 8x8), the multiply Y = E * X (base 1), the projection Y @ W (8x4, K = 8 > n, base 100). Not
// finalized.
Problem HandBlock() {
  Problem p;
  p.native = 4;
  p.fast_memory_capacity = 40;
  p.slow_memory_bandwidth = 1;
  auto tensor = [&](Elements h, Elements w) {
    p.tensors.push_back({w, h});
    return static_cast<TensorId>(p.tensors.size() - 1);
  };
  auto op = [&](OpKind kind, std::vector<TensorId> in, Elements h, Elements w, double base) {
    const TensorId out = tensor(h, w);
    p.ops.push_back({kind, std::move(in), out, base});
    return out;
  };
  const TensorId a = tensor(8, 2), w0 = tensor(2, 8);
  const TensorId x = op(OpKind::MatMul, {a, w0}, 8, 8, 10);                    // op 0
  const TensorId s = op(OpKind::MatMul, {tensor(1, 8), x}, 1, 8, 100);         // op 1
  const TensorId e = op(OpKind::Pointwise, {s}, 1, 8, 10);                    // op 2
  const TensorId big = op(OpKind::Layout, {e}, 8, 8, 0);                      // op 3
  const TensorId y = op(OpKind::Pointwise, {big, x}, 8, 8, 1);                // op 4
  op(OpKind::MatMul, {y, tensor(8, 4)}, 8, 4, 100);                            // op 5
  return p;
}

// Compute: op 0 4 tiles (40), op 1 2 (200), op 2 2 (20), op 3 0, op 4 4 (4), op 5 2 (200): 464.
// The multiply's first
// subgraph gathers E (64), writes Y (64) and loads X (64) or makes X again from A and W0 (16 +
// 16, the least cut), against its own compute 4 (the Layout op beside it costs nothing):
// min(192 - 4, max(40, 160 - 4)) = 156 (making X again costs op 0 its 40 again).
TEST_CASE("P36 by hand: the multiply's first subgraph loads or makes X, gathers E and writes Y") {
  Problem p = HandBlock();
  REQUIRE(p.Finalize() == "");
  const auto squeeze = SqueezeFloor(p);
  CHECK(squeeze.count == 1);
  CHECK(squeeze.claim[4] == doctest::Approx(156));
  CHECK(squeeze.value == doctest::Approx(620));
  const LowerBound bound = ComputeLowerBound(p);
  CHECK(bound.compute == doctest::Approx(464));
  CHECK(bound.squeeze == doctest::Approx(620));
  CHECK(bound.squeeze_count == 1);
  CHECK(bound.total() == doctest::Approx(620));
  g_squeeze = false;
  const LowerBound without = ComputeLowerBound(p);
  g_squeeze = true;
  CHECK(without.squeeze == doctest::Approx(464));
  CHECK(without.squeeze_count == 0);
  CHECK(without.total() < 620);
  MESSAGE("P36 hand case: bound without P36 ", without.total());
  // Every op alone at native tiles: each subgraph's own transfers. Op 4 alone gathers E, loads X
  // and writes Y: 192 against a compute of 4.
  const Schedule alone = BuildBaseline(p);
  const Evaluation e = EvaluateOracle(p, alone);
  REQUIRE(e.ok());
  CHECK(e.total >= bound.total());
  CHECK(e.subgraphs[4].latency == doctest::Approx(192));
  // The exact solver's best, and the baseline with X made again beside the multiply.
  std::vector<Schedule> best;
  testing::AppendExactBest(p, best);
  for (const Schedule& schedule : best) {
    const Evaluation b = EvaluateOracle(p, schedule);
    REQUIRE(b.ok());
    CHECK(b.total >= bound.total());
    MESSAGE("P36 hand case: exact best ", b.total);
  }
  for (const Schedule& schedule : MadeAgain(p, SqueezeFloor(p).claim)) {
    const Evaluation b = EvaluateOracle(p, schedule);
    if (!b.ok()) continue;
    CHECK(b.total >= bound.total());
    MESSAGE("P36 hand case: X made again ", b.total);
  }

  // W0 on a weight path (Bw = 1): the cut keeps A alone, 16: min(188, max(40, 144 - 4)) = 140.
  Problem w = HandBlock();
  w.chip.weight_bandwidth = 1;
  REQUIRE(w.Finalize() == "");
  CHECK(SqueezeFloor(w).claim[4] == doctest::Approx(140));
  // Y read by a Pointwise op: the multiply need not be a sink, nothing is claimed.
  Problem narrow = HandBlock();
  narrow.ops[5] = {OpKind::Pointwise, {narrow.ops[4].output}, narrow.ops[5].output, 1};
  narrow.tensors[narrow.ops[5].output] = {8, 8};
  REQUIRE(narrow.Finalize() == "");
  CHECK(SqueezeFloor(narrow).count == 0);
}

// A squeeze-excite block at a small scale: X made from a graph input by a MatMul with K <= n and 0
// to 2 Pointwise ops (or X a graph input), the squeeze a MatMul ones @ X then one or two small
// MatMuls and Pointwise ops, the broadcast Layout op, the multiply (E, X or X, E), read by a
// projection with K > n (sometimes K <= n, a Pointwise reader too, or nothing), sometimes a
// residual add and a second block on its output; sometimes a side reader of X's input.
Problem SqueezeNet(std::mt19937_64& rng, int ratio) {
  testing::ProblemMaker make{rng};
  Problem& problem = make.problem;
  problem.native = make.Pick({4, 8});
  const Elements n = problem.native;
  const Elements rows = make.Pick({n / 2, n, n + 1, 2 * n, 3 * n});
  const double mm = make.PickReal({1, 4, 10}), pw = make.PickReal({0, 0.5, 1, 3});
  const Elements c0 = make.Pick({n / 2, n, 2 * n});
  TensorId in = make.Tensor(rows, c0);
  Elements width = c0;
  const int blocks = make.Coin(3) ? 2 : 1;
  for (int b = 0; b < blocks; ++b) {
    const Elements c = make.Pick({n / 2, n, 2 * n, 2 * n + 2, 3 * n});
    TensorId x;
    if (b == 0 && make.Coin(6)) {
      x = make.Tensor(rows, c);
    } else {
      x = make.Op(OpKind::MatMul, {in, make.Tensor(width, c)}, rows, c, mm);
      const int chain = static_cast<int>(make.Pick({0, 1, 2}));
      for (int i = 0; i < chain; ++i) {
        const TensorId g = make.Op(OpKind::Pointwise, {x}, rows, c, pw);
        x = make.Coin(2) ? make.Op(OpKind::Pointwise, {x, g}, rows, c, pw) : g;
      }
      if (make.Coin(5)) make.Op(OpKind::Pointwise, {in}, rows, width, pw);  // a side reader
    }
    TensorId s = make.Op(OpKind::MatMul, {make.Tensor(1, rows), x}, 1, c, mm);
    const Elements r = make.Pick({2, n});
    if (make.Coin(2)) {
      s = make.Op(OpKind::MatMul, {s, make.Tensor(c, r)}, 1, r, mm);
      s = make.Op(OpKind::Pointwise, {s}, 1, r, pw);
      s = make.Op(OpKind::MatMul, {s, make.Tensor(r, c)}, 1, c, mm);
    }
    s = make.Op(OpKind::Pointwise, {s}, 1, c, pw);
    const TensorId e = make.Op(OpKind::Layout, {s}, rows, c, 0);
    const TensorId y = make.Coin(2) ? make.Op(OpKind::Pointwise, {e, x}, rows, c, pw)
                                    : make.Op(OpKind::Pointwise, {x, e}, rows, c, pw);
    const int reader = static_cast<int>(make.Pick({0, 0, 0, 1, 2, 3}));
    if (reader == 3) {  // read by nothing: a graph output
      in = y;
      width = c;
      break;
    }
    const Elements out = make.Pick({n / 2, n, 2 * n});
    TensorId z = make.Op(OpKind::MatMul, {y, make.Tensor(c, out)}, rows, out, mm);
    if (reader == 1) make.Op(OpKind::Pointwise, {y}, rows, c, pw);
    if (reader == 2 && c <= n) make.Op(OpKind::MatMul, {y, make.Tensor(c, 2)}, rows, 2, mm);
    if (out == width && make.Coin(2)) z = make.Op(OpKind::Pointwise, {z, in}, rows, out, pw);
    in = z;
    width = out;
  }
  switch (ratio) {
    case 0:  // mlsys-2026: 1.83 native tiles of fast memory, a native load 1.09 MatMul bases
      problem.fast_memory_capacity = n * n * 183 / 100;
      problem.slow_memory_bandwidth = static_cast<double>(n * n) / (1.09 * mm);
      break;
    case 1:  // ascend910-core's (as lone_taps_test): 32 native tiles, prefetch
      problem.fast_memory_capacity = 32 * n * n;
      problem.slow_memory_bandwidth = static_cast<double>(n * n) / (1.7 * mm);
      problem.chip.staging_capacity = 32 * n * n;
      problem.chip.double_staging = true;
      problem.chip.accumulator_capacity = 8 * n * n;
      problem.chip.accumulator_factor = 2;
      problem.chip.vector_capacity = 8 * n * n;
      problem.chip.base_w = problem.chip.base_h = problem.chip.base_k = n / 4;
      problem.chip.prefetch = true;
      break;
    case 2:  // a weight path
      problem.fast_memory_capacity = n * n * make.Pick({2, 3, 6});
      problem.slow_memory_bandwidth = make.PickReal({0.25, 1, 4});
      problem.chip.weight_bandwidth = problem.slow_memory_bandwidth * make.PickReal({0.5, 2, 10});
      break;
    default:
      problem.fast_memory_capacity = n * n * make.Pick({2, 3, 4, 8, 16});
      problem.slow_memory_bandwidth = make.PickReal({0.25, 0.5, 1, 4});
      if (!make.Coin(3)) problem.chip = RandomChipRules(problem, rng);
      break;
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

// The baseline with each priced multiply's subgraph replaced by X's Pointwise chain and producer
// made again beside it (with the Layout op or not), at native and at halved tiles.
std::vector<Schedule> MadeAgain(const Problem& p, const std::vector<double>& claim) {
  std::vector<Schedule> out;
  Schedule base;
  try {
    base = BuildBaseline(p);
  } catch (const std::runtime_error&) {
    return out;
  }
  const Elements n = p.native;
  for (int variant = 0; variant < 4; ++variant) {
    Schedule s;
    for (const Subgraph& sg : base.subgraphs) {
      const OpId m = sg.ops.back();
      if (sg.ops.size() != 1 || claim[m] <= 0) {
        s.subgraphs.push_back(sg);
        continue;
      }
      std::vector<OpId> ops;
      OpId layout = kNoOp;
      TensorId x = -1;
      for (TensorId t : p.ops[m].inputs) {
        const OpId q = p.producer[t];
        if (q != kNoOp && p.IsLayout(q)) layout = q;
        else x = t;
      }
      // X's chain upward through Pointwise ops to the first MatMul (made again, in order).
      std::vector<OpId> chain;
      std::vector<TensorId> todo{x};
      while (!todo.empty()) {
        const TensorId t = todo.back();
        todo.pop_back();
        const OpId q = p.producer[t];
        if (q == kNoOp || p.IsLayout(q) || std::find(chain.begin(), chain.end(), q) != chain.end()) continue;
        chain.push_back(q);
        if (p.ops[q].kind == OpKind::Pointwise) todo.insert(todo.end(), p.ops[q].inputs.begin(), p.ops[q].inputs.end());
      }
      std::sort(chain.begin(), chain.end());
      ops = chain;
      if (variant % 2 == 1 && layout != kNoOp) ops.push_back(layout);
      std::sort(ops.begin(), ops.end());
      ops.push_back(m);
      const Elements side = variant < 2 ? n : std::max<Elements>(1, n / 2);
      Elements k = 1;  // V3: within the least reduction length of the subgraph's MatMuls
      for (OpId q : ops) {
        if (p.ops[q].kind == OpKind::MatMul) k = k == 1 ? std::min(n, p.ReductionLength(q)) : std::min(k, p.ReductionLength(q));
      }
      s.subgraphs.push_back(Sub(ops, {side, side, k}));
    }
    out.push_back(s);
  }
  return out;
}

TEST_CASE("P36: the bound is never above the oracle on squeeze-excite blocks (property)") {
  std::mt19937_64 rng(3636);
  int valid = 0, priced = 0, raised = 0, made_again = 0;
  double closest = 0, closest_raised = 0;
  for (int trial = 0; trial < 1200; ++trial) {
    const Problem p = SqueezeNet(rng, trial % 4);
    CAPTURE(trial);
    const LowerBound bound = ComputeLowerBound(p);
    CHECK(bound.squeeze >= bound.compute - 1e-9);
    if (bound.squeeze_count > 0) ++priced;
    g_squeeze = false;
    const double before = ComputeLowerBound(p).total();
    g_squeeze = true;
    const bool raises = bound.total() > before * (1 + 1e-9);
    raised += raises;
    std::vector<Schedule> schedules;
    try {
      schedules = testing::SampleSchedules(p, rng, trial % 8 == 0);
    } catch (const std::runtime_error&) {
      continue;  // some op fits the fast memory at no granularity alone: no valid schedule
    }
    const size_t sampled = schedules.size();
    const std::vector<Schedule> again = MadeAgain(p, SqueezeFloor(p).claim);
    schedules.insert(schedules.end(), again.begin(), again.end());
    for (size_t k = 0; k < schedules.size(); ++k) {
      const Evaluation e = EvaluateOracle(p, schedules[k]);
      if (!e.ok()) continue;
      ++valid;
      made_again += k >= sampled;
      INFO("schedule " << k << ": squeeze " << bound.squeeze << " total " << bound.total() << ", oracle " << e.total);
      CHECK(e.total >= bound.total() * (1 - 1e-9));
      CHECK(e.total >= bound.squeeze * (1 - 1e-9));
      closest = std::max(closest, bound.squeeze / e.total);
      if (raises) closest_raised = std::max(closest_raised, bound.total() / e.total);
    }
  }
  MESSAGE("P36 property: ", valid, " valid schedules (", made_again, " making X again beside the multiply), ", priced,
          " problems priced, ", raised, " bounds raised, closest ", closest, " (", closest_raised, " where P36 raises it)");
  CHECK(valid > 4000);
  CHECK(priced > 300);
  CHECK(raised > 50);
  CHECK(made_again > 100);
}

}  // namespace
}  // namespace annealer
