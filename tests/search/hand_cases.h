// What the search's hand cases share (tests/search/moves/pattern_moves_test.cc,
// tests/search/starts/constructive_test.cc, tests/search/passes/serve_retained_test.cc and
// tests/search/search_test.cc): attention heads that read one normalised activation, the schedule
// of fitted op groups they start from, and the best total each move kind reaches in one move.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "eval/cost/incremental.h"
#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "eval/oracle.h"
#include "search/fit/fit.h"
#include "search/moves/moves.h"
#include "tests/support/graph_builder.h"

namespace annealer::testing {

// The schedule of the given op groups in order, each at its best granularity with nothing retained.
inline Schedule FittedGroups(const SubgraphPricer& pricer, const std::vector<std::vector<OpId>>& groups) {
  Schedule schedule;
  for (const std::vector<OpId>& ops : groups) {
    schedule.subgraphs.push_back(FitSubgraph(pricer, ops, {}, {}, nullptr, true, [] { return false; })->subgraph);
  }
  return schedule;
}

// The best total each move kind reaches in one move from the evaluator's committed schedule,
// over 200 seeds (the committed total when none is better); every valid proposal is checked
// against the oracle.
inline std::array<Latency, kNumMoveKinds> BestInOneMove(const Problem& problem, const MoveContext& context,
                                                        IncrementalEvaluator& evaluator) {
  std::array<Latency, kNumMoveKinds> best;
  best.fill(evaluator.committed().total);
  for (int kind = 0; kind < kNumMoveKinds; ++kind) {
    for (uint64_t seed = 0; seed < 200; ++seed) {
      std::mt19937_64 rng(seed);
      auto edit = MakeMove(context, static_cast<MoveKind>(kind), evaluator.schedule(), rng);
      if (!edit) continue;
      const Candidate c = evaluator.Propose(*edit);
      if (c.valid) {
        CHECK(EvaluateOracle(problem, ApplyEdit(evaluator.schedule(), *edit)).total == doctest::Approx(c.total));
        best[kind] = std::min(best[kind], c.total);
      }
      evaluator.Revert();
    }
  }
  return best;
}

// A normalisation N (X -> T, 128x512, Pointwise) read by four heads, each V_i = T @ W_i
// (512x64) and O_i = A_i @ V_i (A_i 128x128, O_i a graph output): the shape of attention heads
// whose value projections read one normalised activation. Bandwidth 273, a scratchpad that
// holds everything.
inline Problem FanOutHeads() {
  testing::GraphBuilder b(Elements{1} << 26, 273);
  const TensorId x = b.Tensor(128, 512);
  const TensorId t = b.Tensor(128, 512);
  b.Op(OpKind::Pointwise, {x}, t, 8);
  for (int i = 0; i < 4; ++i) {
    const TensorId w = b.Tensor(512, 64);
    const TensorId v = b.Tensor(128, 64);
    const TensorId a = b.Tensor(128, 128);
    const TensorId o = b.Tensor(128, 64);
    b.Op(OpKind::MatMul, {t, w}, v, 128);
    b.Op(OpKind::MatMul, {a, v}, o, 32);
  }
  return b.Build();
}

// Attention heads that read one normalisation N (X -> T, 128x512) twice each: a query part
// Q_i = T @ Wq_i (512x64), S_i = Q_i @ Kt_i (Kt_i a 64x128 graph input), P_i = Pointwise(S_i)
// (128x128), and a value part V_i = T @ Wv_i, O_i = P_i @ V_i (128x64, a graph output). A
// scratchpad of `capacity` elements, bandwidth 273.
inline Problem QueryValueHeads(Elements capacity, int heads) {
  testing::GraphBuilder b(capacity, 273);
  const TensorId x = b.Tensor(128, 512);
  const TensorId t = b.Tensor(128, 512);
  b.Op(OpKind::Pointwise, {x}, t, 8);
  for (int i = 0; i < heads; ++i) {
    const TensorId wq = b.Tensor(512, 64), q = b.Tensor(128, 64), kt = b.Tensor(64, 128);
    const TensorId sc = b.Tensor(128, 128), pr = b.Tensor(128, 128);
    const TensorId wv = b.Tensor(512, 64), v = b.Tensor(128, 64), o = b.Tensor(128, 64);
    b.Op(OpKind::MatMul, {t, wq}, q, 128);
    b.Op(OpKind::MatMul, {q, kt}, sc, 64);
    b.Op(OpKind::Pointwise, {sc}, pr, 16);
    b.Op(OpKind::MatMul, {t, wv}, v, 128);
    b.Op(OpKind::MatMul, {pr, v}, o, 64);
  }
  return b.Build();
}

}  // namespace annealer::testing
