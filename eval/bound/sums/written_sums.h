// P38, the writes and loads of a sum's unfused inputs inside its island (eval/bound/bounds.h states
// the fact, docs/lower-bound.md, "The unfused inputs of a sum, written and loaded (P38)", proves it).
#pragma once

#include <vector>

#include "eval/bound/analysis.h"
#include "eval/model/problem.h"

namespace annealer::bound_internal {

// P38 (T1, T2, H5, P12, P23, P22, C3, V1, V7, V12, R1-R5, W, W1, W4, H1-H4, P3). A *written sum*
// s: a Pointwise op the analysis allows modes T and SL only (no RHS strip, no full mode), with
// m >= 1 inputs o_i, each made by a MatMul x_i and read by s alone (any size). For an island I, pick for each written sum s in it one subgraph
// S_s running s, with j_s of its x_i, rho_s of its o_i retained from the subgraph before (R1, R2;
// only o_i that fit can be), and the other m - j_s - rho_s loaded. Over the subgraphs of I (every
// subgraph lies in one island, P12; s and its x_i share one, an epilogue edge joins them):
//   sum C_S >= C_I + sum_s (tau_s - 1) X0_{j_s}
//     (P23 (1): C_S >= tau_S X_S, X_S the native compute of S's ops; every op of I runs, V1;
//     tau_S >= tau_s, the fewest tiles of s's grid (V12) whose top-left tile r x c fits W with
//     (m - j - rho + 1) r c (the loaded slices and a sink's tile, W1), the j least min(r, q_i) c
//     of the fused (W4 or their RHS strip, P23 (2)) and the rho least |o_i| whole (R5), and with a
//     chip's rules the accumulator (j r c x H4's factor x H2) and the vector buffer
//     ((m - j - rho + 1) r c x H2; a retained tensor counts in W only), sides on H3's base, over
//     N the native tiles of s's output, when s is in mode T there; when it makes the LHS strips
//     of a k-loop MatMul f (SL), s and its fused x_i (SL too: o_i is read by s alone) make their
//     strips once per column tile of f's grid, at least Factor(s, SL) = the least ceil(N_f / n)
//     times their native compute (C3, P22), and tau_s is that factor, whatever j and rho;
//     X0_j = c_s + the j least c_x; the sums and their fused producers are distinct ops, so two
//     sums in one S add up, each at its own factor);
//   sum M_S >= T_I / B + sum_s W_{j_s, rho_s}
//     (T_I: P12's forced traffic of I; W_{j,rho}: the m - j - rho least of 2 |o_i| / B: a loaded o_i
//     is in slow memory first (V7), written by a subgraph running x_i, in I; o_i is read by s
//     alone, so it is none of T_I's graph inputs, graph outputs (a graph output has no reader) or
//     tensors crossing islands, and two sums' o_i differ).
// The subgraphs of I cost sum max(C_S, M_S) >= max(sum C_S, sum M_S) (T1, T2; under prefetch, H5,
// a subgraph still costs at least both totals: P23 (3)). For any lambda in [0, 1] that is at least
// lambda C_I + (1 - lambda) T_I / B + sum_s min over (j, rho) of [lambda (tau_{j,rho} - 1) X0_j +
// (1 - lambda) W_{j,rho}]; the value is its best lambda. Not derived with a weight path (H6).
extern bool g_written_sums;  // test switch: false gives every island 0

struct WrittenSums {
  std::vector<double> island_value;  // per island, 0 where no written sum lies
  int sums = 0;                      // written sums in islands whose value rose above C_I and T_I / B
};
WrittenSums WrittenSumIslands(const Problem& problem, const Analysis& analysis, const Built& built);

}  // namespace annealer::bound_internal
