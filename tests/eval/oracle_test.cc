// The oracle on literal problems: one test per validity rule, and hand-computed latencies
// (arithmetic in the comments) for what the spec cases do not cover.
#include <doctest/doctest.h>

#include <random>
#include <string>

#include "eval/bound/bounds.h"
#include "eval/oracle.h"
#include "eval/random_schedule.h"
#include "search/starts/baseline.h"
#include "tests/support/graph_builder.h"

namespace annealer {
namespace {

using testing::GraphBuilder;
using testing::Sg;

// EX3 of the spec: T0 -> Op0 -> T1 -> Op1 -> T2; Op2 (T1, T2) -> T3; all 128x128, base 1500.
Problem Ex3() {
  GraphBuilder b(50000, 10);
  for (int i = 0; i < 4; ++i) b.Tensor(128, 128);
  b.Op(OpKind::Pointwise, {0}, 1, 1500);
  b.Op(OpKind::Pointwise, {1}, 2, 1500);
  b.Op(OpKind::Pointwise, {1, 2}, 3, 1500);
  return b.Build();
}

// EX5: MatMul T0 @ T1 -> T3, MatMul T3 @ T2 -> T4, all 128x128, base 2000.
Problem Ex5(Elements capacity = 45000) {
  GraphBuilder b(capacity, 10);
  for (int i = 0; i < 5; ++i) b.Tensor(128, 128);
  b.Op(OpKind::MatMul, {0, 1}, 3, 2000);
  b.Op(OpKind::MatMul, {3, 2}, 4, 2000);
  return b.Build();
}

void CheckRule(const Evaluation& e, Verdict verdict, const std::string& rule, int subgraph) {
  CHECK(e.verdict == verdict);
  CHECK(e.violation.rule == rule);
  CHECK(e.violation.subgraph == subgraph);
  CHECK(e.total == 0);
  CHECK(e.subgraphs.empty());
}

TEST_CASE("V1: empty subgraph, op out of range, op twice, op never scheduled") {
  const Problem p = Ex3();
  Schedule s;
  s.subgraphs = {Sg({}, {128, 128, 1})};
  CheckRule(EvaluateOracle(p, s), Verdict::kInvalid, "V1", 0);
  s.subgraphs = {Sg({0, 1, 2, 3}, {128, 128, 1})};
  CheckRule(EvaluateOracle(p, s), Verdict::kInvalid, "V1", 0);
  s.subgraphs = {Sg({0, 1, 1, 2}, {128, 128, 1})};
  CheckRule(EvaluateOracle(p, s), Verdict::kInvalid, "V1", 0);
  s.subgraphs = {Sg({0, 1}, {128, 128, 1})};  // op 2 missing; T2 written, T3 never
  CheckRule(EvaluateOracle(p, s), Verdict::kInvalid, "V1", -1);
}

TEST_CASE("V2: granularity outside [1, native] in each axis") {
  const Problem p = Ex3();
  for (Granularity g : {Granularity{0, 128, 1}, Granularity{128, 129, 1},
                        Granularity{128, 128, 0}, Granularity{128, 128, 256}}) {
    Schedule s;
    s.subgraphs = {Sg({0, 1, 2}, g)};
    CheckRule(EvaluateOracle(p, s), Verdict::kInvalid, "V2", 0);
  }
}

TEST_CASE("V3: k larger than the reduction of any MatMul, even an upstream one") {
  // T0 (128x64) @ T1 (64x128) -> T2 (128x128); T2 @ T3 (128x128) -> T4. Op0 has K = 64.
  GraphBuilder b(1000000, 10);
  b.Tensor(128, 64);
  b.Tensor(64, 128);
  b.Tensor(128, 128);
  b.Tensor(128, 128);
  b.Tensor(128, 128);
  b.Op(OpKind::MatMul, {0, 1}, 2, 100);
  b.Op(OpKind::MatMul, {2, 3}, 4, 100);
  const Problem p = b.Build();
  Schedule s;
  s.subgraphs = {Sg({0, 1}, {128, 128, 128})};
  CheckRule(EvaluateOracle(p, s), Verdict::kInvalid, "V3", 0);
  s.subgraphs = {Sg({0, 1}, {128, 128, 64})};
  CHECK(EvaluateOracle(p, s).ok());
}

TEST_CASE("V5: ops joined only through a shared boundary input are not connected") {
  // Op0: T0 -> T1, Op1: T0 -> T2 (both read T0 only).
  GraphBuilder b(1000000, 10);
  for (int i = 0; i < 3; ++i) b.Tensor(128, 128);
  b.Op(OpKind::Pointwise, {0}, 1, 10);
  b.Op(OpKind::Pointwise, {0}, 2, 10);
  const Problem p = b.Build();
  Schedule s;
  s.subgraphs = {Sg({0, 1}, {128, 128, 1})};
  CheckRule(EvaluateOracle(p, s), Verdict::kInvalid, "V5", 0);
}

TEST_CASE("V6: a consumer listed before its producer inside a subgraph") {
  const Problem p = Ex3();
  Schedule s;
  s.subgraphs = {Sg({1, 0, 2}, {128, 128, 1})};
  CheckRule(EvaluateOracle(p, s), Verdict::kInvalid, "V6", 0);
}

TEST_CASE("V7: an input produced later, or an ephemeral never materialized") {
  const Problem p = Ex3();
  Schedule s;
  s.subgraphs = {Sg({1}, {128, 128, 1}), Sg({0}, {128, 128, 1}), Sg({2}, {128, 128, 1})};
  CheckRule(EvaluateOracle(p, s), Verdict::kInvalid, "V7", 0);
}

TEST_CASE("V8: retaining a loaded input, an unknown tensor, or the same tensor twice") {
  const Problem p = Ex3();
  Schedule s;
  s.subgraphs = {Sg({0}, {128, 128, 1}, {0}), Sg({1, 2}, {128, 128, 1})};
  CheckRule(EvaluateOracle(p, s), Verdict::kInvalid, "V8", 0);
  s.subgraphs = {Sg({0}, {128, 128, 1}, {9}), Sg({1, 2}, {128, 128, 1})};
  CheckRule(EvaluateOracle(p, s), Verdict::kInvalid, "V8", 0);
  s.subgraphs = {Sg({0}, {128, 128, 1}, {1, 1}), Sg({1, 2}, {128, 128, 1})};
  CheckRule(EvaluateOracle(p, s), Verdict::kInvalid, "V8", 0);
  // Re-retaining what the previous subgraph retained, without producing it again.
  s.subgraphs = {Sg({0}, {128, 128, 1}, {1}), Sg({1}, {128, 128, 1}, {1, 2}),
                 Sg({2}, {128, 128, 1})};
  CheckRule(EvaluateOracle(p, s), Verdict::kInvalid, "V8", 1);
}

TEST_CASE("V9: a graph output that is only ever retained") {
  const Problem p = Ex3();
  Schedule s;
  s.subgraphs = {Sg({0, 1, 2}, {128, 128, 1}, {3})};
  CheckRule(EvaluateOracle(p, s), Verdict::kInvalid, "V9", -1);
}

TEST_CASE("V10: traversal of the wrong length or with a repeated tile") {
  const Problem p = Ex3();
  Schedule s;
  s.subgraphs = {Sg({0, 1, 2}, {64, 64, 1})};
  s.subgraphs[0].traversal = std::vector<int64_t>{0, 1, 2};
  CheckRule(EvaluateOracle(p, s), Verdict::kInvalid, "V10", 0);
  s.subgraphs[0].traversal = std::vector<int64_t>{0, 1, 2, 2};
  CheckRule(EvaluateOracle(p, s), Verdict::kInvalid, "V10", 0);
  s.subgraphs[0].traversal = std::vector<int64_t>{0, 1, 2, 4};
  CheckRule(EvaluateOracle(p, s), Verdict::kInvalid, "V10", 0);
  s.subgraphs[0].traversal = std::vector<int64_t>{3, 1, 2, 0};
  CHECK(EvaluateOracle(p, s).ok());
}

TEST_CASE("V11: a Pointwise prologue on the RHS of a k-split MatMul needs h >= K") {
  // T0 (128x128) @ Pointwise(T1) -> T3; K = 128.
  GraphBuilder b(1000000, 10);
  for (int i = 0; i < 4; ++i) b.Tensor(128, 128);
  b.Op(OpKind::Pointwise, {1}, 2, 10);
  b.Op(OpKind::MatMul, {0, 2}, 3, 100);
  const Problem p = b.Build();
  Schedule s;
  s.subgraphs = {Sg({0, 1}, {128, 64, 32})};  // h = 64 < K = 128, k-split
  CheckRule(EvaluateOracle(p, s), Verdict::kInvalid, "V11", 0);
  s.subgraphs = {Sg({0, 1}, {64, 128, 32})};  // h = 128 >= K: legal (w is irrelevant on RHS)
  CHECK(EvaluateOracle(p, s).ok());
  s.subgraphs = {Sg({0, 1}, {128, 64, 128})};  // not k-split: legal
  CHECK(EvaluateOracle(p, s).ok());
}

TEST_CASE("V12 and G3: sinks of different shapes, k-loop MatMuls of different K") {
  GraphBuilder b(10000000, 10);
  const TensorId a = b.Tensor(128, 128);
  const TensorId small = b.Tensor(128, 128);
  const TensorId wide = b.Tensor(128, 256);
  b.Op(OpKind::Pointwise, {a}, small, 10);
  const TensorId rhs = b.Tensor(128, 256);
  b.Op(OpKind::MatMul, {small, rhs}, wide, 10);  // sink 1: 128x256
  const TensorId other = b.Tensor(128, 128);
  b.Op(OpKind::Pointwise, {small}, other, 10);  // sink 2: 128x128
  const Problem p = b.Build();
  Schedule s;
  s.subgraphs = {Sg({0, 1, 2}, {128, 128, 128})};
  CheckRule(EvaluateOracle(p, s), Verdict::kInvalid, "V12", 0);

  // Pointwise sink adding two MatMuls with K = 128 and K = 256.
  GraphBuilder c(10000000, 10);
  const TensorId l1 = c.Tensor(128, 128), r1 = c.Tensor(128, 128), o1 = c.Tensor(128, 128);
  const TensorId l2 = c.Tensor(128, 256), r2 = c.Tensor(256, 128), o2 = c.Tensor(128, 128);
  const TensorId sum = c.Tensor(128, 128);
  c.Op(OpKind::MatMul, {l1, r1}, o1, 10);
  c.Op(OpKind::MatMul, {l2, r2}, o2, 10);
  c.Op(OpKind::Pointwise, {o1, o2}, sum, 10);
  const Problem q = c.Build();
  s.subgraphs = {Sg({0, 1, 2}, {128, 128, 64})};
  CheckRule(EvaluateOracle(q, s), Verdict::kInvalid, "G3", 0);
}

TEST_CASE("W: out of memory names the step") {
  const Problem p = Ex5(40959);  // Example 5B needs exactly 40960
  Schedule s;
  s.subgraphs = {Sg({0, 1}, {128, 128, 32})};
  const Evaluation e = EvaluateOracle(p, s);
  CheckRule(e, Verdict::kOutOfMemory, "W", 0);
  CHECK(e.violation.Message() ==
        "W in subgraph 0: step 0 (tile 0, k-step 0) needs a working set of 40960 > capacity "
        "40959");
  const Evaluation fits = EvaluateOracle(Ex5(40960), s);
  REQUIRE(fits.ok());
  CHECK(fits.subgraphs[0].peak_working_set == 40960);
  CHECK(fits.total == doctest::Approx(6915.2).epsilon(1e-12));
}

TEST_CASE("Partial edge tiles: transfers clipped, compute per tile") {
  // Pointwise T0 (128x192) -> T1 at [128,128,1]: tiles of 128x128 and 128x64.
  // Tile 0: load 16384 + write 16384 = 32768 / 10 = 3276.8 vs 100.
  // Tile 1: load 8192 + write 8192 = 1638.4 vs 100. Total 4915.2; peak WS 32768.
  GraphBuilder b(32768, 10);
  b.Tensor(128, 192);
  b.Tensor(128, 192);
  b.Op(OpKind::Pointwise, {0}, 1, 100);
  const Problem p = b.Build();
  Schedule s;
  s.subgraphs = {Sg({0}, {128, 128, 1})};
  const Evaluation e = EvaluateOracle(p, s);
  REQUIRE(e.ok());
  CHECK(e.total == doctest::Approx(4915.2).epsilon(1e-12));
  CHECK(e.subgraphs[0].tiles == 2);
  CHECK(e.subgraphs[0].peak_working_set == 32768);
  CHECK(e.subgraphs[0].compute_time == doctest::Approx(200));
}

TEST_CASE("Column snake on a MatMul reuses the column strip across the turn") {
  // EX4 (MatMul 128^3, base 1500) at [64,64,128], column snake 0,2,3,1:
  // tile 0: LHS rows 0-63 + RHS cols 0-63 = 16384 + write 4096 -> 2048
  // tile 2: RHS strip reused, LHS rows 64-127 8192 + 4096 -> 1228.8 vs 1500 -> 1500
  // tile 3: LHS reused, RHS cols 64-127 -> 1500; tile 1: RHS reused, LHS new -> 1500.
  GraphBuilder b(25000, 10);
  for (int i = 0; i < 3; ++i) b.Tensor(128, 128);
  b.Op(OpKind::MatMul, {0, 1}, 2, 1500);
  const Problem p = b.Build();
  Schedule s;
  s.subgraphs = {Sg({0}, {64, 64, 128})};
  s.subgraphs[0].traversal = std::vector<int64_t>{0, 2, 3, 1};
  const Evaluation e = EvaluateOracle(p, s);
  REQUIRE(e.ok());
  CHECK(e.total == doctest::Approx(6548).epsilon(1e-12));
}

TEST_CASE("Retained-in tensors are free to read and occupy memory in every step") {
  // EX3 as [[0],[1,2]] retaining T1: sg1 reads T1 for free.
  // sg0: load T0 1638.4 vs 1500, T1 retained (no write) -> 1638.4; WS 16384 + 16384.
  // sg1: writes T3 1638.4 (T2 ephemeral) vs 3000 -> 3000; WS T1 16384 + sink tile 16384.
  const Problem p = Ex3();
  Schedule s;
  s.subgraphs = {Sg({0}, {128, 128, 1}, {1}), Sg({1, 2}, {128, 128, 1})};
  const Evaluation e = EvaluateOracle(p, s);
  REQUIRE(e.ok());
  CHECK(e.subgraphs[0].latency == doctest::Approx(1638.4).epsilon(1e-12));
  CHECK(e.subgraphs[0].peak_working_set == 32768);
  CHECK(e.subgraphs[1].latency == doctest::Approx(3000).epsilon(1e-12));
  CHECK(e.subgraphs[1].peak_working_set == 32768);
  CHECK(e.total == doctest::Approx(4638.4).epsilon(1e-12));
}

TEST_CASE("Lower bound: max of native-tile compute and graph I/O") {
  // EX5: compute 2000 + 2000 = 4000; graph inputs T0, T1, T2 and output T4:
  // 4 x 16384 / 10 = 6553.6.
  const LowerBound bound = ComputeLowerBound(Ex5());
  CHECK(bound.compute == doctest::Approx(4000));
  CHECK(bound.graph_io == doctest::Approx(6553.6));
  CHECK(bound.total() == doctest::Approx(6553.6));
}

TEST_CASE("V13: a reported latency that differs is a warning, not an error") {
  const Problem p = Ex3();
  Schedule s;
  s.subgraphs = {Sg({0, 1, 2}, {128, 128, 1})};
  s.reported_latencies = std::vector<double>{4500.000001};  // within 1e-6 relative
  CHECK(EvaluateOracle(p, s).warnings.empty());
  s.reported_latencies = std::vector<double>{4400};
  const Evaluation e = EvaluateOracle(p, s);
  REQUIRE(e.ok());
  REQUIRE(e.warnings.size() == 1);
  CHECK(e.warnings[0] ==
        "V13: reported latency of subgraph 0 differs from the computed one (reported 4400, "
        "computed 4500)");
}

TEST_CASE("oracle on threads: the same verdict, first violation, reports and total as in sequence") {
  std::mt19937_64 rng(404);
  int long_schedules = 0, invalid = 0, valid = 0;
  auto compare = [&](const Problem& problem, const Schedule& schedule, const std::string& what) {
    long_schedules += schedule.subgraphs.size() >= 256;
    const Evaluation sequential = EvaluateOracle(problem, schedule);
    for (int threads : {2, 3}) {
      const Evaluation threaded = EvaluateOracle(problem, schedule, threads);
      INFO(what << ", " << schedule.subgraphs.size() << " subgraphs, " << threads << " threads: "
                << sequential.violation.Message());
      CHECK(threaded.verdict == sequential.verdict);
      CHECK(threaded.violation.rule == sequential.violation.rule);
      CHECK(threaded.violation.subgraph == sequential.violation.subgraph);
      CHECK(threaded.violation.detail == sequential.violation.detail);
      CHECK(threaded.total == sequential.total);
      CHECK(threaded.subgraphs == sequential.subgraphs);
    }
    (sequential.ok() ? valid : invalid) += 1;
  };
  for (int trial = 0; trial < 12; ++trial) {
    const Problem problem =
        RandomProblem(rng, kAllDagShapes[trial % std::size(kAllDagShapes)], {.min_ops = 300, .max_ops = 500});
    const std::string what = "trial " + std::to_string(trial);
    RandomScheduleOptions options;
    options.fuse_probability = 0.05;  // long schedules: the threads start at 256 subgraphs
    options.max_steps = 256;
    compare(problem, RandomSchedule(problem, rng, options), what + " random");
    // One op per subgraph: long and valid; then broken late, at one subgraph (V2) or by swapping
    // a consumer before its producer (V7).
    const Schedule baseline = BuildBaseline(problem);
    compare(problem, baseline, what + " baseline");
    const int n = static_cast<int>(baseline.subgraphs.size());
    Schedule broken = baseline;
    broken.subgraphs[n / 2 + static_cast<int>(rng() % (n / 2))].granularity.w = 2 * problem.native;
    compare(problem, broken, what + " one bad granularity");
    Schedule swapped = baseline;
    const int i = n / 2 + static_cast<int>(rng() % (n / 2 - 1));
    std::swap(swapped.subgraphs[i], swapped.subgraphs[i + 1]);
    compare(problem, swapped, what + " two subgraphs swapped");
  }
  MESSAGE(long_schedules << " schedules of 256 subgraphs or more: " << valid << " valid, " << invalid << " invalid");
  CHECK(long_schedules >= 40);
  CHECK(valid >= 12);
  CHECK(invalid >= 24);
}

}  // namespace
}  // namespace annealer
