// P50, the gathers and loads of a window that little compute can hide
// (eval/bound/islands/gather_windows.h, docs/lower-bound.md "Gathers in a window of little compute
// (P50)"): a hand case against the exact solver, the first-instance walk, and the bound against the
// oracle on random mixer-like blocks at real-chip ratios, with and without a weight path.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "eval/bound/bounds.h"
#include "eval/bound/islands/gather_windows.h"
#include "eval/oracle.h"
#include "tests/support/mixer_blocks.h"
#include "tests/support/sample_schedules.h"
#include "tests/support/suffix_bounds.h"

namespace annealer {
namespace {

using bound_internal::FirstInstanceInF;
using bound_internal::g_fifo_refuses_upstream;
using bound_internal::g_gather_windows;

LowerBound WithoutWindows(const Problem& problem) {
  g_gather_windows = false;
  const LowerBound bound = ComputeLowerBound(problem);
  g_gather_windows = true;
  return bound;
}

// A mixer block at native 4, B = 1, one path: the residual R = a(X0) (base 64), its LayerNorm
// N1 = n1(R) (base 64) transposed (L1) into the token op (base 4) and back (L2), A = R + L2's
// output (base 1), N2 = n2(A) (base 1), and fc1 = N2 @ W (K = 8 > n, base 8, a graph output). Every
// 4 x 8 tensor is 32 elements, two native tiles. The window of L2 (its input made in the token
// island) and A: the subgraphs of the trunk after the token op's write up to A's first instance
// hold first instances of A and N2 only (fc1 is in F at its first instance, V11 keeps N2 out of
// it), gather L2's output (32) and load R or X0 (32): 64 - 2 - 2 = 60 beyond the trunk's compute.
// The window of L1 (its input made in the trunk) and the token op is priced too (32 gathered
// against the token op's 8), but the token island's traffic (64) is above it already.
LowerBound WithoutFifoRefusal(const Problem& problem) {
  g_fifo_refuses_upstream = false;
  const LowerBound bound = ComputeLowerBound(problem);
  g_fifo_refuses_upstream = true;
  return bound;
}

Problem Mixer(double token_base = 4, bool head = false) {
  Problem p;
  p.native = 4;
  p.tensors = {{8, 4}, {8, 4}, {8, 4}, {4, 8}, {4, 8}, {8, 4}, {8, 4}, {8, 4}, {4, 8}, {4, 4}};
  p.ops = {{OpKind::Pointwise, {0}, 1, 64},   {OpKind::Pointwise, {1}, 2, 64},     {OpKind::Layout, {2}, 3, 0},
           {OpKind::Pointwise, {3}, 4, token_base}, {OpKind::Layout, {4}, 5, 0},   {OpKind::Pointwise, {1, 5}, 6, 1},
           {OpKind::Pointwise, {6}, 7, 1},    {OpKind::MatMul, {7, 8}, 9, 8}};
  if (head) {  // a mean over fc1's rows (K = 4 <= n): fc1 may then run upstream of it
    p.tensors.push_back({4, 1});
    p.tensors.push_back({4, 1});
    p.ops.push_back({OpKind::MatMul, {10, 9}, 11, 2});
  }
  p.fast_memory_capacity = 1 << 16;
  p.slow_memory_bandwidth = 1;
  REQUIRE(p.Finalize().empty());
  return p;
}

TEST_CASE("P50 by hand: a window whose gather and residual load only A and N2 may hide, met by the exact solver") {
  const Problem p = Mixer();
  const LowerBound before = WithoutWindows(p);
  const LowerBound bound = ComputeLowerBound(p);
  const Latency best = testing::ExactOptimum(p);
  MESSAGE("P50 hand case: bound " << before.total() << " -> " << bound.total() << " (islands " << before.islands
                                  << " -> " << bound.islands << "), exact " << best);
  CHECK(bound.gather_windows == 2);
  CHECK(before.islands == doctest::Approx(372));
  CHECK(bound.islands == doctest::Approx(before.islands + 60));
  CHECK(best == doctest::Approx(432));  // met: the bound is the optimum
  CHECK(bound.total() <= best * (1 + 1e-9));
  CHECK(bound.total() > before.total());
}

TEST_CASE("P50: a MatMul with K > n is in F at its first instance unless a MatMul it reaches may take it upstream") {
  const Problem p = Mixer();
  CHECK(FirstInstanceInF(p)[7] == 1);  // fc1 reaches no MatMul
  const Problem h = Mixer(4, true);
  CHECK(FirstInstanceInF(h)[7] == 0);  // the mean over its rows (K = 4 <= n) may take it upstream
  // With fc1 no longer forced after A, its compute and the head's join the window's companions.
  const LowerBound bound = ComputeLowerBound(h), before = WithoutWindows(h);
  CHECK(bound.islands <= before.islands + 60 - 8 - 2 + 1e-9);
}

// Mixer()'s block with fc1 widened to 8 columns (W1 8 x 8), a Pointwise op G after it, fc2 =
// G @ W2 (K = 8 > n, W2 8 x 8) and a mean over fc2's rows (1 x 4 @ fc2, K = 4 <= n): the mean may
// take fc2 upstream (a MatMul into its RHS), and fc2, upstream, makes its LHS rows whole (D3),
// so fc1, reaching that LHS through G, would make all 8 of its columns in one step and request
// its whole weight (64 elements) there. Weights on a weight path (Bw = 1), FIFO `fifo`.
Problem MixerWithHead(int64_t fifo) {
  Problem p;
  p.native = 4;
  p.tensors = {{8, 4}, {8, 4}, {8, 4}, {4, 8}, {4, 8}, {8, 4}, {8, 4}, {8, 4}, {8, 8},
               {8, 4}, {8, 4}, {8, 8}, {8, 4}, {4, 1}, {8, 1}};
  p.ops = {{OpKind::Pointwise, {0}, 1, 64}, {OpKind::Pointwise, {1}, 2, 64},  {OpKind::Layout, {2}, 3, 0},
           {OpKind::Pointwise, {3}, 4, 4},  {OpKind::Layout, {4}, 5, 0},      {OpKind::Pointwise, {1, 5}, 6, 1},
           {OpKind::Pointwise, {6}, 7, 1},  {OpKind::MatMul, {7, 8}, 9, 8},   {OpKind::Pointwise, {9}, 10, 1},
           {OpKind::MatMul, {10, 11}, 12, 8}, {OpKind::MatMul, {13, 12}, 14, 2}};
  p.fast_memory_capacity = 1 << 16;
  p.slow_memory_bandwidth = 1;
  p.chip.weight_bandwidth = 1;
  p.chip.weight_fifo_capacity = fifo;
  REQUIRE(p.Finalize().empty());
  return p;
}

TEST_CASE("P50: a FIFO below fc1's whole weight keeps it in F at its first instance, and the window counts") {
  const Problem p = MixerWithHead(32);
  CHECK(FirstInstanceInF(p)[7] == 1);  // fc1: the mean can take it only through fc2's LHS, whole
  CHECK(FirstInstanceInF(p)[9] == 0);  // fc2 feeds the mean's RHS: strips of 8 x c, within the FIFO
  g_fifo_refuses_upstream = false;
  CHECK(FirstInstanceInF(p)[7] == 0);
  g_fifo_refuses_upstream = true;
  CHECK(FirstInstanceInF(MixerWithHead(64))[7] == 0);  // the whole weight fits: fc1 may run upstream
  CHECK(FirstInstanceInF(MixerWithHead(0))[7] == 0);   // no FIFO checked
  // m = X @ W1 (8 x 8, K = 8 > n, W1 64 elements > the FIFO), G = g(m), q0 = A @ G (G as its RHS,
  // K = 8), G2 = g2(q0), q1 = G2 @ W3 (K = 8) and a mean over q1's rows (K = 4 <= n). q0 upstream
  // requests [0, 8) x c of G, so m only columns c of W1; q1, reached from m through a MatMul, asks m
  // for nothing whole either: the mean may take m upstream through both, and the FIFO refuses neither.
  Problem chain;
  chain.native = 4;
  chain.tensors = {{8, 8}, {8, 8}, {8, 8}, {8, 8}, {8, 4}, {8, 4}, {8, 4}, {8, 8}, {8, 4}, {4, 1}, {8, 1}};
  chain.ops = {{OpKind::MatMul, {0, 1}, 2, 8},  {OpKind::Pointwise, {2}, 3, 1}, {OpKind::MatMul, {4, 3}, 5, 8},
               {OpKind::Pointwise, {5}, 6, 1}, {OpKind::MatMul, {6, 7}, 8, 8},  {OpKind::MatMul, {9, 8}, 10, 2}};
  chain.fast_memory_capacity = 1 << 16;
  chain.slow_memory_bandwidth = 1;
  chain.chip.weight_bandwidth = 1;
  chain.chip.weight_fifo_capacity = 32;
  REQUIRE(chain.Finalize().empty());
  CHECK(FirstInstanceInF(chain)[0] == 0);
  CHECK(FirstInstanceInF(chain)[4] == 0);  // q1 feeds the mean directly
  const LowerBound bound = ComputeLowerBound(p), before = WithoutFifoRefusal(p);
  const Latency best = testing::ExactOptimum(p);
  MESSAGE("P50 with a FIFO: bound " << before.total() << " -> " << bound.total() << " (islands " << before.islands
                                    << " -> " << bound.islands << "), exact " << best);
  CHECK(bound.islands > before.islands);
  CHECK(bound.total() <= best * (1 + 1e-9));
}

TEST_CASE("P50: companions of enough compute leave no window in the trunk, and the bound as before") {
  // A LayerNorm N2 of base 40 (80 over its tiles) may first run in the trunk's window and hide the
  // 64 it moves: only the token op's window is left, which the token island's traffic covers.
  Problem p = Mixer();
  p.ops[6].base_cost = 40;
  const LowerBound bound = ComputeLowerBound(p), before = WithoutWindows(p);
  CHECK(bound.gather_windows == 1);
  CHECK(bound.total() == before.total());
}

TEST_CASE("P50: two readers of one gather share one window, priced once") {
  // A second reader A' = R + L2's output (base 1, a graph output) beside A: both windows end where
  // L2's output is first gathered after the token op's write, so they may be the same subgraphs
  // ({L2, A, A', N2} gathers it once and loads R once); only one of them counts, with A' among its
  // companions: 64 - 2 - 2 - 2 = 58 above the trunk's compute, 262 (its value was 280: +40).
  Problem p = Mixer();
  p.tensors.push_back({8, 4});
  p.ops.push_back({OpKind::Pointwise, {1, 5}, 10, 1});
  REQUIRE(p.Finalize().empty());
  const LowerBound before = WithoutWindows(p);
  const LowerBound bound = ComputeLowerBound(p);
  const Latency best = testing::ExactOptimum(p);
  MESSAGE("P50 two readers: bound " << before.total() << " -> " << bound.total() << ", exact " << best);
  CHECK(before.islands == doctest::Approx(392));
  CHECK(bound.islands == doctest::Approx(432));
  CHECK(bound.total() <= best * (1 + 1e-9));
}

TEST_CASE("P50: the bound is never above the oracle on random mixer blocks, with and without a weight path") {
  std::mt19937_64 rng(50500);
  int raised = 0, raised_one_path = 0, windows = 0, fifo_raised = 0, fifo_valid = 0, fifo_met = 0;
  testing::RaisedTally tally;
  for (int trial = 0; trial < 2400; ++trial) {
    Problem problem = testing::Blocks(rng, trial % 3 == 2);
    const double ratio[] = {0.02, 0.1, 0.5, 2};
    for (Op& op : problem.ops) op.base_cost *= ratio[trial % 4];
    const bool one_path = trial % 5 == 4;
    if (one_path) problem.chip = ChipRules{};
    const LowerBound bound = ComputeLowerBound(problem);
    const LowerBound before = WithoutWindows(problem);
    const BoundModel model = BuildBoundModel(problem);
    const bool rises = bound.total() > before.total() * (1 + 1e-9);
    const bool fifo_rises = bound.total() > WithoutFifoRefusal(problem).total() * (1 + 1e-9);
    fifo_raised += fifo_rises ? 1 : 0;
    raised += rises ? 1 : 0;
    raised_one_path += rises && one_path ? 1 : 0;
    windows += bound.gather_windows;
    const std::vector<Schedule> schedules = testing::SampleSchedules(problem, rng, rises || fifo_rises || trial % 4 == 0);
    // A second check where the FIFO's refusal (g_fifo_refuses_upstream) is what raises the bound.
    if (fifo_rises) {
      testing::RaisedTally fifo_tally;
      testing::CheckBoundOnSchedules(problem, model, bound, WithoutFifoRefusal(problem), schedules, true, false,
                                     "trial " + std::to_string(trial) + " (FIFO refusal)", fifo_tally);
      fifo_valid += fifo_tally.valid;
      fifo_met += fifo_tally.met;
    }
    testing::CheckBoundOnSchedules(problem, model, bound, before, schedules, rises, false, "trial " + std::to_string(trial), tally);
  }
  MESSAGE("P50: valid schedules " << tally.valid << ", problems whose bound P50 raises " << raised << " (" << raised_one_path
                                  << " with one path; " << tally.raised_schedules << " schedules, " << tally.met
                                  << " met exactly), windows " << windows << ", tightest bound/latency where raised "
                                  << tally.tightest << "; raised by the FIFO's refusal " << fifo_raised << " (" << fifo_valid
                                  << " valid schedules, " << fifo_met << " met exactly)");
  CHECK(tally.valid > 5000);
  CHECK(raised > 120);
  CHECK(raised_one_path > 6);
}

}  // namespace
}  // namespace annealer
