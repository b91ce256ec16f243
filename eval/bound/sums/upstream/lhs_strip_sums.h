// P40, a sum that may make the next MatMul's LHS strip (eval/bound/bounds.h states the fact,
// docs/lower-bound.md, "A sum that may make the next MatMul's LHS strip (P40)", proves it).
#pragma once

#include <vector>

#include "eval/bound/analysis.h"
#include "eval/bound/sums/upstream/upstream_sums.h"
#include "eval/model/problem.h"

namespace annealer::bound_internal {

// P40 (P34's facts, P13, G3, C6, D1-D4, M1, R5, V8, W, W1). P34 with its upstream sums widened: a
// Pointwise s with P23's designated inputs o_i (MatMul outputs read by s alone, too large to
// retain), modes among T, SL and FL. In a subgraph S running s, either s lies on a Pointwise path
// from a sink (P23's step 2: T, its configurations stand), or it is demanded only upstream:
//  - SL: a k-loop MatMul of S asks its LHS strip of a tensor s makes through Pointwise ops of S,
//    so it is one of the F_i (the MatMuls reading s's Pointwise descendants as LHS), the grid is
//    F_i's (G3) with K* = s's width, and P34's configurations b and c with F_i hold as P34 proves
//    them (they use no more of the chain than that);
//  - FL: some upstream MatMul asks its full reduction, rows x [0, W) of s's output, every step
//    (D3, C6): each step holds those rows of every unfused o_i, each fused producer's own RHS
//    whole and a sink's element (W), so rows <= rho_j; s's regions cover its output, so s and its
//    fused producers are charged at least f_j = ceil(H / min(rho_j, n)) / ceil(H / n) times their
//    price, and each unfused o_i is loaded at least once. When no MatMul reads as RHS a tensor
//    that s's rows reach through Pointwise ops and LHS reads (tile_rows), the rows are the grid's
//    tile rows (an RHS read upstream would ask all H rows, more than rho_j when f_j > 1), so
//    tau_S >= f_j: the configuration ((f_j - 1) X_j, (1 - 1/f_j) U_j, 0); else ((f_j - 1) X_j, 0, 0).
// e_s is the least over all of them, and the part is P34's over the wider set of claimants.
extern bool g_lhs_strip_sums;  // test switch: false claims nothing (sum c_o)

// s's scope: modes among T, SL, FL (one of the last two); the F_i (SL: MatMuls reading s's output
// or a Pointwise descendant's as LHS, none reading it otherwise, s's width <= n); FL and whether
// its rows are always the tile's (no MatMul reads as RHS what s's rows reach through Pointwise ops
// and LHS reads). Out of scope past kMaxStripWalk ops.
StripScope FannedStripScope(const Problem& problem, const Analysis& modes, OpId s);

// P34's part with FannedStripScope (ComputeLowerBound takes the larger of it and P34's: the wider
// set of upstream sums can lower a P34 claimant's deficit-bound claim, both being bounds).
UpstreamSums LhsStripSumFloor(const Problem& problem, const Analysis& modes);

}  // namespace annealer::bound_internal
