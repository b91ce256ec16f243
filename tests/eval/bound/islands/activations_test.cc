// P32, activations too large to retain that cross the subgraphs of an island
// (eval/bound/islands/activations.h, docs/lower-bound.md "Activations too large to retain (P32)"):
// never above the oracle on channel-MLP trunks, and by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "eval/bound/bounds.h"
#include "eval/bound/islands/activations.h"
#include "eval/oracle.h"
#include "tests/support/bound_checks.h"
#include "tests/support/problem_maker.h"

namespace annealer {
namespace {

using testing::ScaleComputeToTraffic;
using testing::BoundAndWithout;
using testing::ForEachGroupShape;
using testing::ForEachValidAndAtPeak;
using testing::RealRatioSchedules;
using testing::ValidRandomOptions;
using testing::kSlack;

// MLP-Mixer's and the transformers' trunk at a small scale: a residual stream x (rows x d), per
// block a Pointwise "LayerNorm" into fc1 (d -> hidden, K = d), a Pointwise chain on its output into
// fc2 (hidden -> d, K = hidden), an optional epilogue and the residual add; sometimes a token path
// through two Layout ops (a transpose, a MatMul, a transpose back) summed into x, and an end that
// is x itself, a head MatMul, or a pooling MatMul (1 x rows @ x) into a head, which gives every
// MatMul before it an upstream mode. Capacities around the activations' sizes.
Problem ChannelMlpBlocks(std::mt19937_64& rng) {
  testing::ProblemMaker make{rng};
  Problem& problem = make.problem;
  problem.native = make.Pick({4, 8});
  const Elements n = problem.native;
  const Elements rows = n * make.Pick({0, 1, 2}) + make.Pick({1, 3, n / 2, n});
  const Elements d = make.Pick({n / 2, n, n + 2, 2 * n, 3 * n});
  const Elements hidden = make.Pick({n + 1, 2 * n, 3 * n, 4 * n});
  const double scale = make.PickReal({0.1, 1, 10});
  const auto base = [&](std::vector<double> v) { return scale * make.PickReal(std::move(v)); };
  TensorId x = make.Tensor(rows, d);
  if (make.Coin(2)) x = make.Op(OpKind::Pointwise, {x}, rows, d, base({0.5, 2}));
  const int blocks = static_cast<int>(make.Pick({1, 2}));
  for (int b = 0; b < blocks; ++b) {
    if (make.Coin(3)) {  // the token path: transpose, MatMul over the rows, transpose back
      const TensorId ln = make.Op(OpKind::Pointwise, {x}, rows, d, base({1, 4}));
      const TensorId tr = make.Op(OpKind::Layout, {ln}, d, rows, 0);
      const Elements q = make.Pick({n, n + 1});
      const TensorId mixed = make.Op(OpKind::MatMul, {tr, make.Tensor(rows, q)}, d, q, base({2, 8}));
      const TensorId back = make.Op(OpKind::MatMul, {mixed, make.Tensor(q, rows)}, d, rows, base({2, 8}));
      const TensorId again = make.Op(OpKind::Layout, {back}, rows, d, 0);
      x = make.Op(OpKind::Pointwise, {x, again}, rows, d, base({0.5, 1}));
    }
    const TensorId ln = make.Op(OpKind::Pointwise, {x}, rows, d, base({1, 4}));
    TensorId h = make.Op(OpKind::MatMul, {ln, make.Tensor(d, hidden)}, rows, hidden, base({2, 8, 30}));
    const TensorId branch = h;
    const int chain = static_cast<int>(make.Pick({1, 2, 3}));
    for (int i = 0; i < chain; ++i) h = make.Op(OpKind::Pointwise, {h}, rows, hidden, base({0, 1, 2, 8}));
    if (chain > 1 && make.Coin(2)) h = make.Op(OpKind::Pointwise, {branch, h}, rows, hidden, base({0.5, 2}));
    TensorId y = make.Op(OpKind::MatMul, {h, make.Tensor(hidden, d)}, rows, d, base({2, 8, 30}));
    if (make.Coin(2)) y = make.Op(OpKind::Pointwise, {y}, rows, d, base({0.5, 1}));
    x = make.Op(OpKind::Pointwise, {x, y}, rows, d, base({0.5, 1}));
  }
  const int end = std::uniform_int_distribution<int>(0, 2)(rng);
  if (end == 1) {
    const TensorId ln = make.Op(OpKind::Pointwise, {x}, rows, d, base({1, 4}));
    const Elements out = make.Pick({n, n + 2});
    make.Op(OpKind::MatMul, {ln, make.Tensor(d, out)}, rows, out, base({2, 8}));
  }
  if (end == 2) {
    const TensorId pooled = make.Op(OpKind::MatMul, {make.Tensor(1, rows), x}, 1, d, base({1, 4}));
    make.Op(OpKind::MatMul, {pooled, make.Tensor(d, n)}, 1, n, base({1, 4}));
  }
  problem.fast_memory_capacity = make.Pick({n * n, 3 * n * n / 2, 2 * n * n - 1, 2 * n * n, 3 * n * n, 16 * n * n});
  problem.slow_memory_bandwidth = make.PickReal({0.25, 1, 4});
  REQUIRE(problem.Finalize() == "");
  // Compute (at native tiles) a twentieth to twice the time to move every tensor once.
  ScaleComputeToTraffic(problem, make.PickReal({0.05, 0.1, 0.3, 0.5, 1, 2}));
  return problem;
}

// P32 against the oracle: ChannelMlpBlocks, every schedule of RealRatioSchedules (random with
// recomputation and retention, both baselines, a short search, the exact solver's best), each also
// at the capacity of its own peak working set, and per block fc1 with its chain and fc2 with the
// ops after it at every tile shape. The bound, its islands and streaming parts (where P32 enters)
// and every suffix bound must hold; counts the problems where P32 raises the bound (against the
// test-only switch g_island_activations = false).
TEST_CASE("bound: P32's activations too large to retain never above the oracle") {
  int valid = 0, tight = 0, enumerated = 0, raised = 0, decided = 0, met = 0, forced = 0, streams = 0, islands = 0;
  double tightest = 0;
  std::mt19937_64 rng(3232);
  for (int trial = 0; trial < 600; ++trial) {
    const Problem problem = ChannelMlpBlocks(rng);
    CAPTURE(trial);
    LowerBound without;
    const LowerBound bound = BoundAndWithout(problem, bound_internal::g_island_activations, without);
    CHECK(without.island_activations == 0);
    CHECK(bound.total() >= without.total() * (1 - kSlack));
    CHECK(bound.islands >= without.islands * (1 - kSlack));
    raised += bound.total() > without.total() * (1 + 1e-9) ? 1 : 0;
    forced += bound.island_activations > 0 ? 1 : 0;
    const bool rises = bound.streaming > without.streaming * (1 + 1e-9);
    streams += rises ? 1 : 0;
    islands += bound.islands > without.islands * (1 + 1e-9) ? 1 : 0;
    const auto check = [&](const Evaluation& e) {
      CHECK(bound.islands <= e.total * (1 + kSlack));
      CHECK(bound.streaming <= e.total * (1 + kSlack));
      CHECK(bound.crossing <= e.total * (1 + kSlack));
      CHECK(bound.total() <= e.total * (1 + kSlack));
      if (!rises) return;
      ++decided;
      tightest = std::max(tightest, bound.streaming / e.total);
      met += bound.streaming >= e.total * (1 - 1e-9) ? 1 : 0;
    };
    const std::vector<Schedule> schedules = RealRatioSchedules(
        problem, rng, trial, 4, [](int s) { return ValidRandomOptions(0.2 + 0.25 * s, 0.3, 0.2); }, 8, 5);
    tight += ForEachValidAndAtPeak(
        problem, schedules, "P32 trial " + std::to_string(trial),
        [&](const Evaluation& e) {
          ++valid;
          check(e);
        },
        [&](const Problem& squeezed, const Evaluation& e) {
          const LowerBound at_peak = ComputeLowerBound(squeezed);
          CHECK(at_peak.islands <= e.total * (1 + kSlack));
          CHECK(at_peak.streaming <= e.total * (1 + kSlack));
          CHECK(at_peak.total() <= e.total * (1 + kSlack));
        });
    // Per MatMul with K > n: it with the Pointwise ops it feeds directly or through Pointwise ops
    // (its epilogue chain), and that chain alone.
    if (trial % 3 != 0) continue;
    for (OpId m = 0; m < static_cast<OpId>(problem.ops.size()); ++m) {
      if (problem.ops[m].kind != OpKind::MatMul) continue;
      std::vector<OpId> chain;
      for (OpId o = m + 1; o < static_cast<OpId>(problem.ops.size()); ++o) {
        if (problem.ops[o].kind != OpKind::Pointwise) continue;
        bool fed = false;
        for (TensorId t : problem.ops[o].inputs) {
          const OpId p = problem.producer[t];
          fed = fed || p == m || std::find(chain.begin(), chain.end(), p) != chain.end();
        }
        if (fed) chain.push_back(o);
      }
      if (chain.empty()) continue;
      std::vector<OpId> with_matmul = {m};
      with_matmul.insert(with_matmul.end(), chain.begin(), chain.end());
      enumerated += ForEachGroupShape(problem, with_matmul, check);
      enumerated += ForEachGroupShape(problem, chain, check);
    }
  }
  MESSAGE("P32: tensors forced on " << forced << " problems, the streaming part raised on " << streams << ", the islands part on " << islands << ", the bound on " << raised << " problems, valid schedules " << valid
                                     << ", at their peak " << tight << ", enumerated " << enumerated << ", checked against a raised streaming part "
                                     << decided << " (met " << met << "), tightest streaming/latency there " << tightest);
  CHECK(valid > 1400);
  CHECK(enumerated > 5000);
  CHECK(streams > 100);
  CHECK(raised > 0);
}

// P32 by hand. Q = A @ V (A 4x8, V 8x16 graph inputs, K = 8 > n = 4, base 1), P = Pointwise(Q)
// (base 16), M = t @ W (t = P's output, 4x16, W 16x4, K = 16 > n, base 1), y = M's output a graph
// output; capacity 40, B = 1. t (64 elements) is too large to retain and M, a k-split MatMul
// with only mode T (y has no reader), never sits beside P (V11): every schedule writes t from a
// sink instance of P. P14's lines: Q loads A once per column tile (32 x 4) and V (128): 256; M
// loads t (P19, 64), W (64) and writes y (16): 144; both heavy (compute 4 each). P sits beside Q
// (paying on memory), where it claimed nothing; with P32 it claims min(|t| / B, its compute
// 16 x 4) = 64 at a = 1: the streaming part 400 -> 464. {Q, P} at [4, 4, 1] (A and V slices
// 4 + 4, P's tile 16, Q's accumulator 16: 40) then {M} at [4, 4, 2] (8 + 8 + 16) meet it: every
// step is memory-bound, 320 + 144. (The bound was 464 already, by the traffic and islands parts:
// with one subgraph of each kind nothing needs the per-subgraph max; the zoo's trunks do.)
TEST_CASE("bound: P32 by hand, the write of an activation a k-split MatMul reads") {
  Problem problem;
  problem.native = 4;
  problem.tensors = {{8, 4}, {16, 8}, {16, 4}, {16, 4}, {4, 16}, {4, 4}};  // A, V, Q, t, W, y (width, height)
  problem.ops.push_back({OpKind::MatMul, {0, 1}, 2, 1});
  problem.ops.push_back({OpKind::Pointwise, {2}, 3, 16});
  problem.ops.push_back({OpKind::MatMul, {3, 4}, 5, 1});
  problem.fast_memory_capacity = 40;
  problem.slow_memory_bandwidth = 1;
  REQUIRE(problem.Finalize().empty());
  const LowerBound bound = ComputeLowerBound(problem);
  CHECK(bound.island_activations == 1);
  CHECK(bound.streaming == doctest::Approx(464));
  bound_internal::g_island_activations = false;
  const LowerBound without = ComputeLowerBound(problem);
  bound_internal::g_island_activations = true;
  CHECK(without.streaming == doctest::Approx(400));
  Schedule schedule;
  schedule.subgraphs.push_back({});
  schedule.subgraphs[0].ops = {0, 1};
  schedule.subgraphs[0].granularity = {4, 4, 1};
  schedule.subgraphs.push_back({});
  schedule.subgraphs[1].ops = {2};
  schedule.subgraphs[1].granularity = {4, 4, 2};
  const Evaluation e = EvaluateOracle(problem, schedule);
  REQUIRE(e.ok());
  CHECK(e.total == doctest::Approx(464));
  CHECK(bound.total() == doctest::Approx(464));
  CHECK(without.total() == doctest::Approx(464));  // the traffic and islands parts reach it alone here
}

// P32 claims nothing where the reader may run upstream of a k-loop. x (8x1) -> LayerNorm-like
// Pointwise -> f1 = ln @ W1 (K = 1) -> g = Pointwise(f1) (8x8, too large for capacity 48) -> f2 =
// g @ W2 (K = 8 > n = 4) -> add(x, f2) -> pool = ones(1x8) @ add (K = 8) -> out = pool @ Wh (K = 1).
// f2 cannot take g in its k-loop (V11), but the whole graph fits one subgraph under out's k-loop
// (pool a strip producer, f2, f1 and every Pointwise op upstream, D3), where g is ephemeral and
// never written: g's write is no forced write, and that schedule stays at or above the bound.
TEST_CASE("bound: P32 by hand, a reader that may run upstream") {
  Problem problem;
  problem.native = 4;
  // x, ln, W1, f1, g, W2, f2, add, ones, pool, Wh, out (width, height)
  problem.tensors = {{1, 8}, {1, 8}, {8, 1}, {8, 8}, {8, 8}, {1, 8}, {1, 8}, {1, 8}, {8, 1}, {1, 1}, {4, 1}, {4, 1}};
  problem.ops.push_back({OpKind::Pointwise, {0}, 1, 1});
  problem.ops.push_back({OpKind::MatMul, {1, 2}, 3, 1});
  problem.ops.push_back({OpKind::Pointwise, {3}, 4, 1});
  problem.ops.push_back({OpKind::MatMul, {4, 5}, 6, 1});
  problem.ops.push_back({OpKind::Pointwise, {0, 6}, 7, 1});
  problem.ops.push_back({OpKind::MatMul, {8, 7}, 9, 1});
  problem.ops.push_back({OpKind::MatMul, {9, 10}, 11, 1});
  problem.fast_memory_capacity = 48;
  problem.slow_memory_bandwidth = 1;
  REQUIRE(problem.Finalize().empty());
  const LowerBound bound = ComputeLowerBound(problem);
  CHECK(bound.island_activations == 0);
  Schedule schedule;
  schedule.subgraphs.push_back({});
  schedule.subgraphs[0].ops = {0, 1, 2, 3, 4, 5, 6};
  schedule.subgraphs[0].granularity = {4, 1, 1};
  const Evaluation e = EvaluateOracle(problem, schedule);
  REQUIRE(e.ok());
  CHECK(bound.total() <= e.total * (1 + kSlack));
  CHECK(bound.streaming <= e.total * (1 + kSlack));
  MESSAGE("upstream hand: latency " << e.total << " bound " << bound.total() << " streaming " << bound.streaming);
}

}  // namespace
}  // namespace annealer
