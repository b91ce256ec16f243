// P54, the LHS strips a tap obtains again (eval/bound/sums/taps/strip_frontier.h,
// docs/lower-bound.md "The LHS strips a tap obtains again (P54)"): by hand, met by the exact
// solver, and never above the oracle on P28's driver and every traversal of the first tap.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <vector>

#include "eval/bound/bounds.h"
#include "eval/bound/sums/taps/strip_frontier.h"
#include "eval/oracle.h"
#include "search/exact/exact.h"
#include "tests/eval/bound/sums/sum_drivers.h"
#include "tests/support/bound_checks.h"
#include "tests/support/bound_nets.h"
#include "tests/support/sample_schedules.h"

namespace annealer {
namespace {

using testing::AtMlsysRatios;
using testing::BoundAndWithout;
using testing::ProducerChain;
using testing::SoleSumRun;
using testing::SoleSumsAgainstOracle;
using testing::TapNets;
using testing::WithFused;
using testing::kSlack;

// P54's traversals: the first MatMul with K <= n alone, or with its LHS's producer chain beside
// it (moved there, or run again there), at every tile side with k = K (one k-step per tile), in
// raster, row-snake, column-major and column-snake order and two random ones, the rest as the
// baseline runs it. The order decides how often a row strip of the LHS (or what it is made from)
// and a column strip of the weight are obtained again (M1). Returns how many it checked.
int ForEachTapTraversal(const Problem& problem, std::mt19937_64& rng, const std::function<void(const Evaluation&)>& check) {
  OpId tap = kNoOp;
  for (OpId o = 0; o < static_cast<OpId>(problem.ops.size()) && tap == kNoOp; ++o) {
    if (problem.ops[o].kind == OpKind::MatMul && problem.ReductionLength(o) <= problem.native) tap = o;
  }
  if (tap == kNoOp) return 0;
  const std::vector<OpId> chain = ProducerChain(problem, problem.ops[tap].inputs[0]);
  const std::optional<Schedule> baseline = testing::BaselineIfAny(problem);
  if (!baseline) return 0;
  const Schedule& base = *baseline;
  const Tensor& out = problem.tensors[problem.ops[tap].output];
  const Elements n = problem.native, k = problem.ReductionLength(tap);
  int checked = 0;
  for (int with_chain = 0; with_chain <= 2; ++with_chain) {
    if (with_chain > 0 && chain.empty()) continue;
    for (Elements h = 1; h <= n; ++h) {
      for (Elements w = 1; w <= n; ++w) {
        const int64_t rows = (out.height + h - 1) / h, cols = (out.width + w - 1) / w;
        for (int order = 0; order < 6; ++order) {
          std::vector<int64_t> tiles;
          for (int64_t i = 0; i < rows * cols; ++i) {
            const int64_t major = order == 2 || order == 3 ? cols : rows;
            const int64_t minor = rows * cols / major;
            int64_t a = i / minor, b = i % minor;
            if ((order == 1 || order == 3) && a % 2 == 1) b = minor - 1 - b;
            tiles.push_back(order == 2 || order == 3 ? b * cols + a : a * cols + b);
          }
          if (order >= 4) std::shuffle(tiles.begin(), tiles.end(), rng);
          Subgraph fused;
          if (with_chain > 0) fused.ops = chain;
          fused.ops.push_back(tap);
          fused.granularity = {w, h, k};
          if (order > 0) fused.traversal = tiles;
          const Schedule schedule = WithFused(base, fused, with_chain == 2 ? chain : std::vector<OpId>{});
          const Evaluation e = EvaluateOracle(problem, schedule);
          if (!e.ok()) continue;
          ++checked;
          INFO("granularity ", w, "x", h, "x", k, " chain ", with_chain, " order ", order);
          check(e);
        }
      }
    }
  }
  return checked;
}

// P54 by hand: a ReLU r (base 2, c_r = 8) makes A (16x4) from a graph input X, and t = A @ W (W
// 4x8, K = n = 4, base 24, c_t = 192) writes O (16x8), the graph output; capacity 48, B = 1. A
// (64) never fits but r may make it beside t, so P25 claimed nothing (O's write and W, 160, fall
// short of c_t) and graph I/O's 224 was the bound. P54: at native tiles and k = 4 (4 rows and 2
// columns of tiles, one k-step) every entry into a row loads a 4x4 strip of A or of X (A's row
// frontier: 4 wide either way), 64 in all, and the traversal enters a row or a column at least
// T + 1 = 9 times: 3 entries more than the 6 strips, 16 each (a row strip of A or a column strip of
// W): 272 of transfers against 192, and r beside t runs once per tile (f = 2), which at theta = 0
// hides 8 of it: e_t = 272 - 192 - 8 = 72, the bound 200 + 72 = 272, which the exact solver's
// optimum meets (both ops at [4, 4, 4] in row-snake order). No other class is lower (smaller tiles
// pay per tile, n_k >= 2 loads W per row tile and A's slices per column tile).
TEST_CASE("bound: P54 by hand, a ReLU makes a tap's LHS, whose strips come again") {
  Problem problem;
  problem.native = 4;
  problem.tensors = {{4, 16}, {4, 16}, {8, 4}, {8, 16}};  // X, A, W, O (width, height)
  problem.ops.push_back({OpKind::Pointwise, {0}, 1, 2});
  problem.ops.push_back({OpKind::MatMul, {1, 2}, 3, 24});
  problem.fast_memory_capacity = 48;
  problem.slow_memory_bandwidth = 1;
  REQUIRE(problem.Finalize().empty());
  LowerBound without;
  const LowerBound bound = BoundAndWithout(problem, bound_internal::g_strip_frontier, without);
  CHECK(without.total() == doctest::Approx(224));
  CHECK(without.taps == doctest::Approx(200));
  CHECK(bound.taps == doctest::Approx(272));
  CHECK(bound.total() == doctest::Approx(272));
  ExactOptions exact;
  exact.max_states = 3000;
  const ExactResult best = SolveExact(problem, exact);
  REQUIRE(best.best);
  CHECK(best.status == ExactStatus::kOptimal);
  CHECK(EvaluateOracle(problem, *best.best).total == doctest::Approx(272));
  // t alone or beside r (moved or run again), every side at k = 4, six orders: never below.
  std::mt19937_64 rng(54);
  const int checked = ForEachTapTraversal(problem, rng, [&](const Evaluation& e) {
    CHECK(bound.total() <= e.total * (1 + kSlack));
  });
  CHECK(checked > 100);
}

// P54 against the oracle: P28's driver (TapNets and SumNets, every third at the chip's ratios) with
// P54 on and off, and the first tap's traversals above.
TEST_CASE("bound: P54's strips obtained again never above the oracle") {
  const SoleSumRun run = SoleSumsAgainstOracle(5454, 1400, bound_internal::g_strip_frontier, true);
  MESSAGE("P54 (P28's driver): problems with a sole shape priced " << run.priced << ", bound raised on " << run.raised
                                                                   << ", valid schedules " << run.valid << ", at their peak "
                                                                   << run.tight << ", enumerated " << run.enumerated
                                                                   << ", checked against a raised bound " << run.decided
                                                                   << ", tightest bound/latency there " << run.tightest);
  CHECK(run.valid > 3000);
  CHECK(run.raised > 20);
  int traversals = 0, decided = 0, raised = 0;
  double tightest = 0;
  std::mt19937_64 rng(5455);
  for (int trial = 0; trial < 1400; ++trial) {
    Problem problem = TapNets(rng);
    if (trial % 2 == 1) {
      AtMlsysRatios(problem);
      REQUIRE(problem.Finalize() == "");
    }
    CAPTURE(trial);
    LowerBound without;
    const LowerBound bound = BoundAndWithout(problem, bound_internal::g_strip_frontier, without);
    const bool rises = bound.total() > without.total() * (1 + 1e-9);
    raised += rises ? 1 : 0;
    traversals += ForEachTapTraversal(problem, rng, [&](const Evaluation& e) {
      CHECK(bound.taps <= e.total * (1 + kSlack));
      CHECK(bound.sole_sums <= e.total * (1 + kSlack));
      CHECK(bound.total() <= e.total * (1 + kSlack));
      if (rises) tightest = std::max(tightest, bound.total() / e.total), ++decided;
    });
  }
  MESSAGE("P54 (traversals): bound raised on " << raised << " of 1400, schedules " << traversals
                                               << ", checked against a raised bound " << decided
                                               << ", tightest bound/latency there " << tightest);
  CHECK(traversals > 50000);
  CHECK(raised > 20);
}

}  // namespace
}  // namespace annealer
