// The pattern moves (search/moves/pattern_moves.cc): merge-readers and gather-k-loop, each on a
// hand problem where it reaches in one move what no other move kind does.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "eval/cost/cost_cache.h"
#include "eval/cost/incremental.h"
#include "eval/oracle.h"
#include "search/moves/moves.h"
#include "search/subgraph_tools.h"
#include "tests/search/hand_cases.h"
#include "tests/support/graph_builder.h"
#include "tests/support/test_files.h"

namespace annealer {
namespace {

using testing::BestInOneMove;
using testing::FanOutHeads;
using testing::FittedGroups;
using testing::ReadBundledProblem;

TEST_CASE("moves: merge-readers merges the heads that each load one tensor, which no other move does in one step") {
  const Problem problem = FanOutHeads();
  CHECK(MergeReadersApplies(problem));
  for (const char* name : {"mlsys-2026-1.json", "mlsys-2026-5.json", "mlsys-2026-9.json", "mlsys-2026-13.json",
                           "mlsys-2026-17.json"}) {
    CHECK_MESSAGE(!MergeReadersApplies(ReadBundledProblem(name)), name);
  }
  CostCache cache(1 << 16);
  SubgraphPricer pricer(problem, &cache);
  const std::vector<int> rank = TopologicalRanks(problem);
  const MoveContext context{problem, rank, pricer, [] { return false; }};
  // N alone writes T (load X 65,536 + write T 65,536 elements: 480.117); each head loads T,
  // its weight and A_i and writes O_i (65,536 + 32,768 + 16,384 + 8,192: 450.110).
  const Schedule start = FittedGroups(pricer, {{0}, {1, 2}, {3, 4}, {5, 6}, {7, 8}});
  IncrementalEvaluator evaluator(problem, &cache);
  REQUIRE(evaluator.Reset(start).valid);
  CHECK(evaluator.committed().total == doctest::Approx(131072.0 / 273 + 4 * 122880.0 / 273));  // 2,280.557
  const std::array<Latency, kNumMoveKinds> best = BestInOneMove(problem, context, evaluator);
  // Merged: N (taken from its own subgraph, which makes T) and the four heads in one subgraph,
  // X loaded once, T never: 65,536 + 4 x (32,768 + 16,384 + 8,192) = 294,912 elements,
  // 1,080.264: every graph input loaded once and every output written once, nothing else.
  CHECK(best[static_cast<int>(MoveKind::kMergeReaders)] == doctest::Approx(294912.0 / 273));
  for (int kind = 0; kind < kNumMoveKinds; ++kind) {
    if (kind == static_cast<int>(MoveKind::kMergeReaders)) continue;
    CHECK_MESSAGE(best[kind] > 131072.0 / 273 + 294912.0 / 273 + 100, MoveName(static_cast<MoveKind>(kind)));  // > 1,660
  }
}

// A 1x1 convolution over a channel concatenation, as the importer lowers it: one MatMul per
// concatenated block, summed by one Pointwise op. Block 0 is 128x256 (M0 = X0 @ W0, K = 256),
// blocks 1-4 are 128x32, each made by a Pointwise op P_i from a graph input A_i (M_i = P_i @ W_i,
// K = 32); every partial product is 128x128, the sum S writes Z (128x128). Bandwidth 273.
Problem ConcatConv() {
  testing::GraphBuilder b(Elements{1} << 26, 273);
  const TensorId x0 = b.Tensor(128, 256);
  const TensorId w0 = b.Tensor(256, 128);
  const TensorId m0 = b.Tensor(128, 128);
  b.Op(OpKind::MatMul, {x0, w0}, m0, 64);  // op 0
  std::vector<TensorId> sum_inputs{m0};
  for (int i = 0; i < 4; ++i) {
    const TensorId a = b.Tensor(128, 32);
    const TensorId x = b.Tensor(128, 32);
    const TensorId w = b.Tensor(32, 128);
    const TensorId m = b.Tensor(128, 128);
    b.Op(OpKind::Pointwise, {a}, x, 8);   // ops 1, 3, 5, 7
    b.Op(OpKind::MatMul, {x, w}, m, 16);  // ops 2, 4, 6, 8
    sum_inputs.push_back(m);
  }
  b.Op(OpKind::Pointwise, sum_inputs, b.Tensor(128, 128), 8);  // op 9
  return b.Build();
}

TEST_CASE("moves: gather-k-loop swaps which reduction length a sum of MatMuls keeps, which no other move does in one step") {
  const Problem problem = ConcatConv();
  CHECK(GatherKLoopApplies(problem));
  CHECK(!GatherKLoopApplies(FanOutHeads()));
  {
    // Two blocks of each width: no reduction length has three MatMuls, as in GoogLeNet.
    testing::GraphBuilder b(Elements{1} << 26, 273);
    std::vector<TensorId> parts;
    for (Elements k : {64, 64, 32, 32}) {
      const TensorId m = b.Tensor(128, 128);
      b.Op(OpKind::MatMul, {b.Tensor(128, k), b.Tensor(k, 128)}, m, 16);
      parts.push_back(m);
    }
    b.Op(OpKind::Pointwise, parts, b.Tensor(128, 128), 8);
    CHECK(!GatherKLoopApplies(b.Build()));
  }
  for (const char* name : {"mlsys-2026-1.json", "mlsys-2026-5.json", "mlsys-2026-9.json", "mlsys-2026-13.json",
                           "mlsys-2026-17.json"}) {
    CHECK_MESSAGE(!GatherKLoopApplies(ReadBundledProblem(name)), name);
  }
  CostCache cache(1 << 16);
  SubgraphPricer pricer(problem, &cache);
  const std::vector<int> rank = TopologicalRanks(problem);
  const MoveContext context{problem, rank, pricer, [] { return false; }};
  // The K = 256 block in the sum's k-loop (G3 keeps the others out): each small block's
  // subgraph loads A_i and W_i and writes its 128x128 partial product (24,576 elements); the
  // sum's loads X0 and W0 (65,536), the four partial products (65,536) and writes Z (16,384).
  const Schedule start = FittedGroups(pricer, {{1, 2}, {3, 4}, {5, 6}, {7, 8}, {0, 9}});
  IncrementalEvaluator evaluator(problem, &cache);
  REQUIRE(evaluator.Reset(start).valid);
  CHECK(evaluator.committed().total == doctest::Approx(245760.0 / 273));  // 900.220
  const std::array<Latency, kNumMoveKinds> best = BestInOneMove(problem, context, evaluator);
  // Gathered: the four K = 32 blocks in the sum's k-loop (one step per tile), M0 alone before it.
  // P_i alone: A_i in, X_i out (8,192 each); M0: X0, W0 in, M0 out (81,920); the sum: X_i, W_i
  // (32,768), M0 (16,384) in, Z out (16,384). 180,224 elements, 660.161: the partial products
  // of the small blocks never cross slow memory, only the one of the large block does.
  CHECK(best[static_cast<int>(MoveKind::kGatherKLoop)] == doctest::Approx(180224.0 / 273));
  for (int kind = 0; kind < kNumMoveKinds; ++kind) {
    if (kind == static_cast<int>(MoveKind::kGatherKLoop)) continue;
    MESSAGE(std::string(MoveName(static_cast<MoveKind>(kind))) << " " << best[kind]);
    CHECK_MESSAGE(best[kind] > 180224.0 / 273 + 100, MoveName(static_cast<MoveKind>(kind)));
  }
}

// A convolution's taps, as the importer lowers a 3x3 convolution: three MatMuls M_i = T @ W_i of
// one LHS T (a graph input, 128x256, K = 256; W_i 256x128), summed by one Pointwise op S into Z
// (128x128). Bandwidth 273; fast memory smaller than T (the move is drawn only then).
Problem Taps(Elements capacity = 32767) {
  testing::GraphBuilder b(capacity, 273);
  const TensorId t = b.Tensor(128, 256);
  std::vector<TensorId> parts;
  for (int i = 0; i < 3; ++i) {
    const TensorId m = b.Tensor(128, 128);
    b.Op(OpKind::MatMul, {t, b.Tensor(256, 128)}, m, 64);  // ops 0, 1, 2
    parts.push_back(m);
  }
  b.Op(OpKind::Pointwise, parts, b.Tensor(128, 128), 8);  // op 3
  return b.Build();
}

TEST_CASE("moves: gather-k-loop pulls a convolution's taps into their sum's k-loop, where their one LHS loads once") {
  const Problem problem = Taps();
  CHECK(GatherKLoopApplies(problem));
  CHECK(!GatherKLoopApplies(Taps(32768)));  // T fits: not drawn
  CHECK(!MergeReadersApplies(problem));  // T is a graph input: nothing to recompute
  {
    // Three MatMuls of one K but three LHS tensors (no mixed K either): not drawn.
    testing::GraphBuilder b(Elements{1} << 26, 273);
    std::vector<TensorId> parts;
    for (int i = 0; i < 3; ++i) {
      const TensorId m = b.Tensor(128, 128);
      b.Op(OpKind::MatMul, {b.Tensor(128, 256), b.Tensor(256, 128)}, m, 64);
      parts.push_back(m);
    }
    b.Op(OpKind::Pointwise, parts, b.Tensor(128, 128), 8);
    CHECK(!GatherKLoopApplies(b.Build()));
  }
  {
    // Two taps of one LHS: not drawn.
    testing::GraphBuilder b(Elements{1} << 26, 273);
    const TensorId t = b.Tensor(128, 256);
    std::vector<TensorId> parts;
    for (int i = 0; i < 2; ++i) {
      const TensorId m = b.Tensor(128, 128);
      b.Op(OpKind::MatMul, {t, b.Tensor(256, 128)}, m, 64);
      parts.push_back(m);
    }
    b.Op(OpKind::Pointwise, parts, b.Tensor(128, 128), 8);
    CHECK(!GatherKLoopApplies(b.Build()));
  }
  CostCache cache(1 << 16);
  SubgraphPricer pricer(problem, &cache);
  const std::vector<int> rank = TopologicalRanks(problem);
  const MoveContext context{problem, rank, pricer, [] { return false; }};
  // Two taps alone and the third with the sum; T (32,768 elements) does not fit, so each
  // subgraph streams it in k-strips. The figures are the pricer's, each checked against the
  // oracle by BestInOneMove: 344,064 elements crossing slow memory, 1,260.3.
  const Schedule start = FittedGroups(pricer, {{0}, {1}, {2, 3}});
  IncrementalEvaluator evaluator(problem, &cache);
  REQUIRE(evaluator.Reset(start).valid);
  CHECK(evaluator.committed().total == doctest::Approx(344064.0 / 273));
  const std::array<Latency, kNumMoveKinds> best = BestInOneMove(problem, context, evaluator);
  // Gathered: the three taps in the sum's k-loop, a strip of T requested by the three loaded
  // once per step (D5): 278,528 elements, 1,020.2; no other kind does better in one move.
  CHECK(best[static_cast<int>(MoveKind::kGatherKLoop)] == doctest::Approx(278528.0 / 273));
  for (int kind = 0; kind < kNumMoveKinds; ++kind) {
    CHECK_MESSAGE(best[kind] >= 278528.0 / 273 - 1e-6, MoveName(static_cast<MoveKind>(kind)));
  }
  // The same generator state gives the same edit.
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::mt19937_64 a(seed), b(seed);
    auto first = MakeMove(context, MoveKind::kGatherKLoop, evaluator.schedule(), a);
    auto second = MakeMove(context, MoveKind::kGatherKLoop, evaluator.schedule(), b);
    REQUIRE(first.has_value() == second.has_value());
    CHECK(a == b);
    if (first) CHECK(first->replacement == second->replacement);
  }
}

}  // namespace
}  // namespace annealer
