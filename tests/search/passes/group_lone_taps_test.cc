// GroupLoneTaps (search/passes/lone_taps.h): a sum's taps that sit alone, each loading the same
// written LHS, are grouped with the LHS's producer run again in each group.
#include <doctest/doctest.h>

#include <functional>
#include <vector>

#include "eval/cost/cost_cache.h"
#include "eval/oracle.h"
#include "search/moves/moves.h"
#include "search/passes/lone_taps.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"
#include "tests/search/passes/fitted_schedule.h"
#include "tests/support/graph_builder.h"

namespace annealer {
namespace {

const std::function<bool()> kNever = [] { return false; };

// R = relu(X) (op 0, X a graph input), `taps` taps T_j = R V_j (ops 1..taps), Z = their sum
// (op taps + 1), every tensor 128×128 = 16,384 elements, bandwidth 1 (every subgraph is
// memory-bound at one step), capacity 2^20; with `other_reader` one more Pointwise op reads R.
Problem Taps(int taps, bool other_reader) {
  testing::GraphBuilder b(Elements{1} << 20, 1);
  const TensorId r = b.Tensor(128, 128);
  b.Op(OpKind::Pointwise, {b.Tensor(128, 128)}, r, 16);
  std::vector<TensorId> outs;
  for (int j = 0; j < taps; ++j) {
    const TensorId t = b.Tensor(128, 128);
    b.Op(OpKind::MatMul, {r, b.Tensor(128, 128)}, t, 64);
    outs.push_back(t);
  }
  b.Op(OpKind::Pointwise, outs, b.Tensor(128, 128), 16);
  if (other_reader) b.Op(OpKind::Pointwise, {r}, b.Tensor(128, 128), 16);
  return b.Build();
}

constexpr Latency kTile = 128 * 128;  // one tensor's load or write at bandwidth 1

TEST_CASE("lone-taps: the taps of one LHS, by sum") {
  const Problem problem = Taps(3, true);
  CHECK(TapsBySharedLhs(problem, 4) == std::vector<std::vector<OpId>>{{1, 2, 3}});
  CHECK(TapsBySharedLhs(problem, 5).empty());  // one input
  CHECK(TapsBySharedLhs(problem, 1).empty());  // a MatMul
}

TEST_CASE("lone-taps: three lone taps become one subgraph with the ReLU, whose own subgraph goes") {
  const Problem problem = Taps(3, false);
  REQUIRE(MergeReadersApplies(problem));
  CostCache cache(1 << 16);
  SubgraphPricer pricer(problem, &cache);
  const Schedule start = testing::FittedSchedule(pricer, {{0}, {1}, {2}, {3}, {4}}, {{}, {}, {}, {}, {}}, false);
  const Evaluation before = EvaluateOracle(problem, start);
  REQUIRE(before.ok());
  // {R}: X in, R out; each tap: R and V_j in, T_j out; the sum: three T_j in, Z out.
  CHECK(before.total == 2 * kTile + 3 * 3 * kTile + 4 * kTile);
  const Schedule after = GroupLoneTaps(problem, pricer, start, kNever);
  const Evaluation e = EvaluateOracle(problem, after);
  REQUIRE(e.ok());
  REQUIRE(after.subgraphs.size() == 2);
  CHECK(after.subgraphs[0].ops == std::vector<OpId>{0, 1, 2, 3});
  CHECK(after.subgraphs[1].ops == std::vector<OpId>{4});
  // [R, T1, T2, T3]: X and three V_j in, three T_j out (R never leaves fast memory): 7 tensors
  // against 2 + 9; q = 2 ([R, T1, T2], [R, T3]: 8 tensors) is tried and loses.
  CHECK(e.total == before.total - 4 * kTile);
  CHECK(GroupLoneTaps(problem, pricer, start, kNever) == after);
}

TEST_CASE("lone-taps: where another op reads the LHS its producer's subgraph stays") {
  const Problem problem = Taps(4, true);
  CostCache cache(1 << 16);
  SubgraphPricer pricer(problem, &cache);
  const Schedule start =
      testing::FittedSchedule(pricer, {{0}, {1}, {2}, {3}, {4}, {5}, {6}}, {{}, {}, {}, {}, {}, {}, {}}, false);
  const Evaluation before = EvaluateOracle(problem, start);
  REQUIRE(before.ok());
  CHECK(before.total == 2 * kTile + 4 * 3 * kTile + 5 * kTile + 2 * kTile);
  const Schedule after = GroupLoneTaps(problem, pricer, start, kNever);
  const Evaluation e = EvaluateOracle(problem, after);
  REQUIRE(e.ok());
  REQUIRE(after.subgraphs.size() == 4);
  CHECK(after.subgraphs[0].ops == std::vector<OpId>{0});
  CHECK(after.subgraphs[1].ops == std::vector<OpId>{0, 1, 2, 3, 4});
  // Four loads of R (4 tensors) become one of X: X, four V_j in, four T_j out, 9 against 12.
  CHECK(e.total == before.total - 3 * kTile);
}

TEST_CASE("lone-taps: nothing to do where no tap sits alone") {
  const Problem problem = Taps(3, false);
  CostCache cache(1 << 16);
  SubgraphPricer pricer(problem, &cache);
  const Schedule start = testing::FittedSchedule(pricer, {{0}, {3}, {1, 2, 4}}, {{}, {}, {}}, false);
  // Taps 1 and 2 run with the sum: tap 3 is the only lone one.
  CHECK(GroupLoneTaps(problem, pricer, start, kNever) == start);
}

}  // namespace
}  // namespace annealer
