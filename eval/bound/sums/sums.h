// P23, a sum that cannot hold its producers (eval/bound/bounds.h states the fact,
// docs/lower-bound.md, "A sum that cannot hold its producers (P23)", proves it).
#pragma once

#include <vector>

#include "eval/bound/analysis.h"
#include "eval/bound/traffic/streaming.h"
#include "eval/model/problem.h"

namespace annealer::bound_internal {

// P23 (T1, T2, P7, C1-C4, D1, D2, W, W1, W4, R5, P3, V8, V12, G2, H1-H5). Prices per op: c_o
// (base x native tiles) for every op, plus an excess e_s for every "designated sum" s: a Pointwise op
// that the analysis allows mode T only, with `m` designated inputs o_i (distinct tensors, each
// made by a MatMul x_i, read by s alone, |o_i| + 1 > capacity). For every subgraph S the prices
// of its ops sum to at most its latency L(S), so their total bounds every schedule (each op runs
// in some subgraph; the prices are >= 0), and island by island (each S lies in one island).
//  (1) Every non-Layout op of S is charged at least c_o T / N in S, T the tiles of S's grid and
//      N the native tiles of the grid's shape (a tile charges each op at least its base, and an
//      upstream op's region per tile or step covers its share; see the doc), so C_S >= tau X
//      with tau = T / N and X the sum of c_o over S.
//  (2) A designated s in S is in mode T: the grid has s's shape (V12), and at the top-left
//      tile's last k-step s requests an r x c slice of every input o_i whose producer is not in S
//      (boundary, never retained, R5: loaded, P3, and all of o_i over the tiles), beside a sink
//      tile (W1); each producer x_i in S is in F (reached through s, G3) and holds an
//      accumulator r x c (W4, n_k >= 2) or its RHS slice K x c (n_k = 1; counted when the RHS is
//      a graph input only x_i reads): W caps (u + 1) r c + sum over the j fused of
//      min(r, q_i) c, u = m - j; with a chip's rules (H1-H4) the same step also fits the
//      accumulator (the j fused MatMuls' r x c, times H4's factor and H2's doubling) and the
//      vector buffer (the u loaded slices and a Pointwise sink's tile, times H2's doubling), and
//      r, c are sides H3 allows on s's shape. So T >= T_min(j) and tau >= tau_j = T_min(j) / N.
//  (3) L(S) >= theta C_S + (1 - theta) M_S for any theta (T1, T2; H5 too, over S's totals:
//      prefetch hides at most the previous step's slack). At theta = 1 / tau_S
//      the slack L(S) - X is >= (1 - 1 / tau_S) U_S >= sum over designated s in S of
//      A_s = (1 - 1 / tau_j) U_j (U_j the unfused inputs' loads / B, distinct tensors); at
//      theta = 1 it is >= (tau_S - 1) X >= sum of B_s = (tau_j - 1) X0_j (X0_j: c_s and the fused
//      producers' c, distinct ops). So for any fixed lambda in [0, 1] the slack covers
//      sum over s of lambda A_s + (1 - lambda) B_s, and e_s(lambda) = the least over j of that.
//      Sums of different output shapes never share a subgraph (both would be in mode T, V12), so
//      each shape takes its own lambda.
// Each line is one j: at lambda, c_s + lambda A_j + (1 - lambda) B_j.
// Not derived with a weight path (H6: weight slices leave the fast memory): compute lines only.
extern bool g_sum_excess;  // test switch: false prices every op at c_o (the compute part)

struct SumLines {
  std::vector<double> compute;           // per op, c_o
  std::vector<std::vector<Line>> lines;  // per priced sum, its excess e_s at lambda; else empty
  int sums = 0;                          // priced sums
  // Per priced sum, what P25 (eval/bound/sums/taps/taps.h) combines with: the producers x_i of its
  // designated inputs, and per j = 0..m its line at lambda when some S can hold s with j of them
  // (possible[j]), and the least tau_j over those j.
  struct Priced {
    OpId sum = kNoOp;
    std::vector<OpId> producers;
    std::vector<Line> by_j;
    std::vector<char> possible;
    double least_tau = 1;
    // Per j (where possible), P23's parts of its line, for P29 (shared_sums.h), which joins
    // several sums' lines in one subgraph: tau_j, X0_j (c_s and the j least producers' c) and
    // U_j (the m - j least loads, and a graph output's write), so by_j[j] = {(tau - 1) X0,
    // (1 - 1/tau) U}.
    std::vector<double> tau, fused, unfused;
    // Per j, tau_j again with one more r x c tile in W (a MatMul sink beside s, writing its own
    // output, P29), the chip's caps as for tau_j; 0 where not possible.
    std::vector<double> tau_beside;
  };
  std::vector<Priced> priced;
  double value = 0;                      // Value() over every op
  // The sum over `ops` of c_o, plus, per output shape of the priced sums among them, the best
  // lambda of their excesses.
  double Value(const Problem& problem, const std::vector<OpId>& ops) const;
};
SumLines SumFloor(const Problem& problem, const Analysis& modes);

}  // namespace annealer::bound_internal
