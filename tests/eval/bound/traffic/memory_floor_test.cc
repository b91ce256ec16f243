// P17, the memory floor (eval/bound/traffic/memory_floor.h, docs/lower-bound.md "The memory floor
// (P17)"): by hand, met by recomputing the shared input before each head.
#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "eval/bound/bounds.h"
#include "eval/oracle.h"
#include "tests/support/bound_checks.h"

namespace annealer {
namespace {

using testing::CheckValidSchedule;

// P17 by hand: a Pointwise op X -> Z (4 x 8) feeds `heads` MatMuls Z @ W_j (K = 8 > n = 4), each
// read only by a transpose (a Layout op) whose output is a graph output. Each head writes its
// output for the transpose (L1), so it sits alone (V11, V5) and loads Z unless the subgraph
// before makes and retains it, which takes loading X (32) again. Every schedule moves at least
// X 32 + W_j 32 + the head outputs written 16 + gathered 16 + the transposes written 16, plus 32
// for each head but one: 112 per head. Recomputing Z before every head moves exactly that, and
// at these costs compute never exceeds a step's memory: the bound is met (the schedule is
// optimal), where every part before P17 stays at the image's graph I/O, 80 per head + 32.
TEST_CASE("bound: P17's memory floor by hand, met by recomputing the shared input before each head") {
  for (double producer_cost : {0.0, 1.0}) {
    for (int heads : {2, 3, 5}) {
      Problem p;
      p.native = 4;
      p.tensors.push_back({8, 4});  // X (width 8, height 4)
      p.tensors.push_back({8, 4});  // Z
      p.ops.push_back({OpKind::Pointwise, {0}, 1, producer_cost});
      std::vector<TensorId> products;
      for (int j = 0; j < heads; ++j) {
        p.tensors.push_back({4, 8});  // W_j
        p.tensors.push_back({4, 4});  // H_j
        const auto w = static_cast<TensorId>(p.tensors.size() - 2), h = w + 1;
        p.ops.push_back({OpKind::MatMul, {1, w}, h, 2});
        products.push_back(h);
      }
      for (int j = 0; j < heads; ++j) {
        p.tensors.push_back({4, 4});  // H_j transposed, a graph output
        p.ops.push_back({OpKind::Layout, {products[j]}, static_cast<TensorId>(p.tensors.size() - 1), 0});
      }
      p.fast_memory_capacity = 4096;
      p.slow_memory_bandwidth = 1;
      REQUIRE(p.Finalize() == "");
      const LowerBound bound = ComputeLowerBound(p);
      CAPTURE(producer_cost);
      CAPTURE(heads);
      CHECK(bound.memory_floor == doctest::Approx(112.0 * heads));
      CHECK(bound.total() == doctest::Approx(112.0 * heads));
      CHECK(bound.graph_io == doctest::Approx(80.0 * heads + 32));
      CHECK(std::max({bound.compute, bound.graph_io, bound.traffic, bound.combined, bound.islands, bound.streaming,
                      bound.crossing}) < 112.0 * heads - 1);
      for (bool recompute : {true, false}) {
        Schedule schedule;
        const Granularity tile{4, 4, 1}, reduction{4, 4, 4};
        if (!recompute) schedule.subgraphs.push_back({{0}, tile, std::nullopt, {}});
        for (int j = 0; j < heads; ++j) {
          if (recompute) schedule.subgraphs.push_back({{0}, tile, std::nullopt, {1}});
          schedule.subgraphs.push_back({{static_cast<OpId>(1 + j)}, reduction, std::nullopt, {}});
        }
        for (int j = 0; j < heads; ++j) {
          schedule.subgraphs.push_back({{static_cast<OpId>(1 + heads + j)}, tile, std::nullopt, {}});
        }
        CAPTURE(recompute);
        const Evaluation e = EvaluateOracle(p, schedule);
        REQUIRE(e.ok());
        // Loading Z in every head instead: Z written once (32) and loaded by each head (32 each).
        CHECK(e.total == doctest::Approx(recompute ? 112.0 * heads : 112.0 * heads + 32 + 32));
        CHECK(CheckValidSchedule(p, schedule, "P17 by hand"));
      }
    }
  }
}

}  // namespace
}  // namespace annealer
