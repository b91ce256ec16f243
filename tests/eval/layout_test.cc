// Layout ops (docs/cost-model.md, rules L1-L6) through the oracle, with hand-computed figures
// (arithmetic in the comments), and the same cases through the fast path, the cache and the
// incremental evaluator, which must agree with the oracle to the word. The random-problem
// property tests with Layout ops sit beside the others (fast_subgraph_cost_test,
// incremental_test, bounds_test).
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "eval/bound/bounds.h"
#include "eval/cost/cost_cache.h"
#include "eval/cost/incremental.h"
#include "eval/oracle.h"
#include "eval/cost/evaluate_fast.h"
#include "search/starts/baseline.h"
#include "src/import/hardware_profile.h"
#include "tests/support/graph_builder.h"

namespace annealer {
namespace {

bool Close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }

using testing::GraphBuilder;
using testing::Sg;

// The oracle's evaluation, after checking that EvaluateFast (cold and cached) and the
// incremental evaluator give the same verdict, message and latencies.
Evaluation Evaluate(const Problem& problem, const Schedule& schedule) {
  const Evaluation oracle = EvaluateOracle(problem, schedule);
  CostCache cache(256);
  for (CostCache* c : {static_cast<CostCache*>(nullptr), &cache, &cache}) {
    const Evaluation fast = EvaluateFast(problem, schedule, c);
    CHECK(fast.verdict == oracle.verdict);
    CHECK(fast.violation.Message() == oracle.violation.Message());
    CHECK(Close(fast.total, oracle.total));
    REQUIRE(fast.subgraphs.size() == oracle.subgraphs.size());
    for (size_t i = 0; i < fast.subgraphs.size(); ++i) {
      CHECK(Close(fast.subgraphs[i].latency, oracle.subgraphs[i].latency));
      CHECK(Close(fast.subgraphs[i].memory_time, oracle.subgraphs[i].memory_time));
      CHECK(fast.subgraphs[i].peak_working_set == oracle.subgraphs[i].peak_working_set);
    }
  }
  IncrementalEvaluator incremental(problem, &cache);
  const Candidate candidate = incremental.Reset(schedule);
  CHECK(candidate.valid == oracle.ok());
  if (oracle.ok()) CHECK(Close(candidate.total, oracle.total));
  if (!oracle.ok()) CHECK(candidate.violation.Message() == oracle.violation.Message());
  return oracle;
}

TEST_CASE("L4: a Layout op alone copies its output, 2|Y|/B over the tiles, edge tiles clipped") {
  // A transpose of X (100x300) into Y (300x100), B = 10, at [64, 128, 1]: 3 row tiles
  // (128, 128, 44 rows) x 2 column tiles (64, 36 columns). Every tile loads its region of Y and
  // writes it: in all 2 x 30000 elements / 10 = 6000, no compute. The largest step holds the
  // 128x64 region and the 128x64 output tile: 16384.
  GraphBuilder b(20000, 10);
  const TensorId x = b.Tensor(100, 300);
  const TensorId y = b.Tensor(300, 100);
  b.Op(OpKind::Layout, {x}, y, 0);
  const Problem p = b.Build();
  Schedule s;
  s.subgraphs = {Sg({0}, {64, 128, 1})};
  const Evaluation e = Evaluate(p, s);
  REQUIRE(e.ok());
  CHECK(Close(e.total, 6000));
  CHECK(Close(e.subgraphs[0].memory_time, 6000));
  CHECK(e.subgraphs[0].compute_time == 0);
  CHECK(e.subgraphs[0].tiles == 6);
  CHECK(e.subgraphs[0].k_steps == 1);
  CHECK(e.subgraphs[0].peak_working_set == 16384);
  // Below that peak, W names the first step.
  Problem tight = p;
  tight.fast_memory_capacity = 16383;
  const Evaluation oom = Evaluate(tight, s);
  CHECK(oom.verdict == Verdict::kOutOfMemory);
  CHECK(oom.violation.Message() ==
        "W in subgraph 0: step 0 (tile 0, k-step 0) needs a working set of 16384 > capacity 16383");
  // The baseline (one op per subgraph) schedules it, validly.
  const Schedule baseline = BuildBaseline(p, nullptr);
  CHECK(Evaluate(p, baseline).ok());
}

TEST_CASE("L2: a Layout output feeding an epilogue is loaded at the last k-step") {
  // MatMul A (128x256) @ B (256x128) -> C, base 2000; a transpose X -> Y (128x128); Pointwise
  // (C, Y) -> Z, base 100. One subgraph at [128, 128, 128]: K = 256, two k-steps.
  //   step 0: strips of A and B, 2 x 16384 = 32768 -> 3276.8; compute 2000 x 128/256 = 1000.
  //   step 1: the strips again 32768, Y whole 16384 (an epilogue input, needed at the last
  //           k-step, D1), Z written 16384: 65536 -> 6553.6; compute 1000 + 100.
  // Total 9830.4. Working set of step 1: strips 32768 + Y 16384 + Z tile 16384 + the
  // MatMul's accumulator 16384 (W4) = 81920.
  GraphBuilder b(100000, 10);
  const TensorId a = b.Tensor(128, 256), bb = b.Tensor(256, 128), c = b.Tensor(128, 128);
  const TensorId x = b.Tensor(128, 128), y = b.Tensor(128, 128), z = b.Tensor(128, 128);
  b.Op(OpKind::MatMul, {a, bb}, c, 2000);
  b.Op(OpKind::Layout, {x}, y, 0);
  b.Op(OpKind::Pointwise, {c, y}, z, 100);
  const Problem p = b.Build();
  Schedule s;
  s.subgraphs = {Sg({0, 1, 2}, {128, 128, 128})};
  const Evaluation e = Evaluate(p, s);
  REQUIRE(e.ok());
  CHECK(Close(e.total, 9830.4));
  CHECK(Close(e.subgraphs[0].compute_time, 2100));
  CHECK(e.subgraphs[0].peak_working_set == 81920);
}

TEST_CASE("L2: a Layout output region is reused from the step before like any slice (M1)") {
  // X (64x256) reshaped into Y (128x128); A (256x128) @ Y -> Z (256x128), base 2000, at
  // [128, 128, 128]: two row tiles, one k-step each, Y needed whole ([0,K) x all columns).
  //   tile 0: A rows 0-127 16384 + Y 16384 + Z tile written 16384 -> 4915.2 (compute 2000)
  //   tile 1: A rows 128-255 16384, Y reused, Z written 16384 -> 3276.8
  // Total 8192.
  GraphBuilder b(60000, 10);
  const TensorId x = b.Tensor(64, 256), y = b.Tensor(128, 128), a = b.Tensor(256, 128);
  const TensorId z = b.Tensor(256, 128);
  b.Op(OpKind::Layout, {x}, y, 0);
  b.Op(OpKind::MatMul, {a, y}, z, 2000);
  const Problem p = b.Build();
  Schedule s;
  s.subgraphs = {Sg({0, 1}, {128, 128, 128})};
  const Evaluation e = Evaluate(p, s);
  REQUIRE(e.ok());
  CHECK(Close(e.total, 8192));
  CHECK(e.subgraphs[0].peak_working_set == 3 * 16384);
  // The lower bound: Y is gathered whole once (16384), A loaded and Z written (32768 each):
  // 81920 / 10 = 8192, which this schedule meets; X (16384 elements) is never loaded itself.
  const LowerBound bound = ComputeLowerBound(p);
  CHECK(bound.total() <= e.total * (1 + 1e-9));
  CHECK(Close(bound.graph_io, 8192));
}

TEST_CASE("L1: a Layout op reads slow memory: not its producer's subgraph, not a retained copy") {
  // Pointwise T0 -> T1 (base 500), Layout T1 -> T2, Pointwise T1 -> T3 (base 500).
  GraphBuilder b(60000, 10);
  for (int i = 0; i < 4; ++i) b.Tensor(128, 128);
  b.Op(OpKind::Pointwise, {0}, 1, 500);
  b.Op(OpKind::Layout, {1}, 2, 0);
  b.Op(OpKind::Pointwise, {1}, 3, 500);
  const Problem p = b.Build();
  const Granularity g{128, 128, 1};
  Schedule s;
  s.subgraphs = {Sg({0, 1, 2}, g)};
  CHECK(Evaluate(p, s).violation.Message() ==
        "L1 in subgraph 0: Layout op 1 reads tensor 1, which is produced in the same subgraph");
  // T1 ephemeral in subgraph 0 (op 2 reads it there) and retained: op 2's consumer would be
  // served (V7), the Layout op is not.
  s.subgraphs = {Sg({0, 2}, g, {1}), Sg({1}, g)};
  CHECK(Evaluate(p, s).violation.Message() ==
        "L1 in subgraph 1: Layout op 1 reads tensor 1, which is not in slow memory");
  // Written (a sink of subgraph 0), it is: 1638.4 + 1638.4 for op 0 (load T0, write T1), then
  // the copy 3276.8, then op 2 loads T1 and writes T3: 3276.8. Total 8192.
  s.subgraphs = {Sg({0}, g), Sg({1}, g), Sg({2}, g)};
  const Evaluation e = Evaluate(p, s);
  REQUIRE(e.ok());
  CHECK(Close(e.total, 3276.8 * 2 + 3276.8));
  // Fused with its consumer instead: op 1 and op 2 cannot share a subgraph (only T1 joins
  // them, and T1 is not produced there: V5).
  s.subgraphs = {Sg({0}, g), Sg({1, 2}, g)};
  CHECK(Evaluate(p, s).violation.rule == "V5");
}

TEST_CASE("L5: a Layout output consumed inside is gone afterwards unless retained, a recomputed Layout op gathers again") {
  // Layout T0 -> T1; Pointwise T1 -> T2 and T1 -> T3 (base 100 each); all 128x128, B = 10.
  GraphBuilder b(60000, 10);
  for (int i = 0; i < 4; ++i) b.Tensor(128, 128);
  b.Op(OpKind::Layout, {0}, 1, 0);
  b.Op(OpKind::Pointwise, {1}, 2, 100);
  b.Op(OpKind::Pointwise, {1}, 3, 100);
  const Problem p = b.Build();
  const Granularity g{128, 128, 1};
  Schedule s;
  s.subgraphs = {Sg({0, 1}, g), Sg({2}, g)};
  CHECK(Evaluate(p, s).violation.Message() ==
        "V7 in subgraph 1: input tensor 1 of op 2 is neither in slow memory nor retained by the "
        "previous subgraph");
  // Retained: subgraph 0 loads T1 16384 and writes T2 16384 -> 3276.8 (working set: the slice
  // 16384 + T1 retained whole 16384 + the T2 tile 16384 = 49152); subgraph 1 reads T1 free and
  // writes T3 -> 1638.4. Total 4915.2.
  s.subgraphs = {Sg({0, 1}, g, {1}), Sg({2}, g)};
  Evaluation e = Evaluate(p, s);
  REQUIRE(e.ok());
  CHECK(Close(e.total, 4915.2));
  CHECK(e.subgraphs[0].peak_working_set == 49152);
  CHECK(e.subgraphs[1].peak_working_set == 32768);
  // Running the Layout op again in subgraph 1 gathers T1 again (as any op run again ignores
  // the retained copy of its output): 16384 loaded + 16384 written -> 3276.8, and the working
  // set holds the retained copy beside the slice: 49152. Total 6553.6.
  s.subgraphs = {Sg({0, 1}, g, {1}), Sg({0, 2}, g)};
  e = Evaluate(p, s);
  REQUIRE(e.ok());
  CHECK(Close(e.total, 6553.6));
  CHECK(e.subgraphs[1].peak_working_set == 49152);
}

TEST_CASE("L2: no V11 for a Layout op feeding a k-split MatMul, the G3 walk stops at it") {
  // A transpose X (256x128) -> Y (128x256), Y @ W (256x128) -> Z at [128, 128, 128]: K = 256 >
  // w, legal (a Pointwise op there would break V11). Steps: 2 strips 32768 -> 3276.8, then
  // 32768 + Z 16384 -> 4915.2. Total 8192 (tests/cases/t42). The same with a Pointwise op in
  // place of the Layout op is rejected by V11.
  GraphBuilder b(50000, 10);
  const TensorId x = b.Tensor(256, 128), y = b.Tensor(128, 256), w = b.Tensor(256, 128);
  const TensorId z = b.Tensor(128, 128);
  b.Op(OpKind::Layout, {x}, y, 0);
  b.Op(OpKind::MatMul, {y, w}, z, 2000);
  Problem p = b.Build();
  Schedule s;
  s.subgraphs = {Sg({0, 1}, {128, 128, 128})};
  CHECK(Close(Evaluate(p, s).total, 8192));
  Problem pointwise = p;
  pointwise.tensors[x] = pointwise.tensors[y];
  pointwise.ops[0].kind = OpKind::Pointwise;
  CHECK(Evaluate(pointwise, s).violation.rule == "V11");
}

TEST_CASE("lower bound with Layout ops: a graph input read only by Layout ops is not loaded") {
  // X (128x256) sliced to its first 64 columns Y (128x64); Pointwise Y -> Z (base 100).
  // Fused, one tile: load Y 8192, write Z 8192 -> 1638.4. The bound's I/O counts Y gathered and
  // Z written (not X's 32768): 1638.4, met.
  GraphBuilder b(60000, 10);
  const TensorId x = b.Tensor(128, 256), y = b.Tensor(128, 64), z = b.Tensor(128, 64);
  b.Op(OpKind::Layout, {x}, y, 0);
  b.Op(OpKind::Pointwise, {y}, z, 100);
  const Problem p = b.Build();
  Schedule s;
  s.subgraphs = {Sg({0, 1}, {64, 128, 1})};
  const Evaluation e = Evaluate(p, s);
  REQUIRE(e.ok());
  CHECK(Close(e.total, 1638.4));
  const LowerBound bound = ComputeLowerBound(p);
  CHECK(Close(bound.graph_io, 1638.4));
  CHECK(bound.total() <= e.total * (1 + 1e-9));
  for (const BoundTerm& term : bound.explanation) {
    CHECK(term.tensor < static_cast<TensorId>(p.tensors.size()));  // Zs mapped back to their Y
  }
}

TEST_CASE("a hardware profile prices MatMul and Pointwise ops and leaves Layout ops at 0 (L3)") {
  GraphBuilder b(60000, 10);
  const TensorId x = b.Tensor(128, 256), y = b.Tensor(256, 128), w = b.Tensor(128, 64);
  const TensorId z = b.Tensor(256, 64), r = b.Tensor(256, 64);
  b.Op(OpKind::Layout, {x}, y, 0);
  b.Op(OpKind::MatMul, {y, w}, z, 1);
  b.Op(OpKind::Pointwise, {z}, r, 1);
  Problem p = b.Build();
  DerivedHardware hardware;
  hardware.capacity = 100000;
  hardware.bandwidth = 64;
  hardware.native = 64;
  hardware.matmul_base = 500;
  hardware.pointwise_base = 40;
  ApplyHardware(hardware, p);
  CHECK(p.ops[0].base_cost == 0);
  CHECK(p.ops[1].base_cost == 1000);  // K = 128: two native k-steps of 500
  CHECK(p.ops[2].base_cost == 40);
}

}  // namespace
}  // namespace annealer
