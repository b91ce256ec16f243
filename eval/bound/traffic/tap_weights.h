// P42, the weights of a class of k-split MatMuls that little compute can hide (eval/bound/bounds.h
// states the fact, docs/lower-bound.md, "Weights that little compute can hide (P42)", proves it).
#pragma once

#include <vector>

#include "eval/model/problem.h"

namespace annealer::bound_internal {

// P42 (T1, T2, H6, C2, C3, C6, G3, D2, D3, V3, V5, V8, V11, V12, M1; P14's worlds). Only with a
// weight path and a checked weight FIFO (capacity Phi). A *class* is every MatMul with one
// reduction length K > n and one output shape H x W, none of them with an input made by a
// MatMul; its *members* X are those whose RHS travels the weight path.
//   - In a subgraph S where a member x is a k-loop MatMul, S holds (P14's world of K*, V11: no
//     Pointwise op makes an F input when K* > n, and no input of the class is a MatMul's) only the
//     class's MatMuls, Pointwise ops of shape H x W and Layout ops: the set T.
//   - Otherwise x runs upstream: every path in S from x to a sink meets a MatMul, the first
//     one q reached through Pointwise ops only. Priced only when every such q (of any member) is
//     reached on its LHS only, reads a weight W_q, and |W_x| + |W_q| > Phi: with n_k = 1 and one
//     column tile every MatMul of S makes all its columns in each step, so needs its whole weight
//     in the FIFO at once (H6); hence n_k >= 2 or two column tiles, and every op of S further
//     upstream than the producers of its k-loop's inputs (x among them) computes at least twice
//     its native compute there (C3, C6).
//     The ops that may compute only once there (F, epilogues, the producers of F's inputs) form
//     F1: Q's MatMuls, Pointwise ops of Q's shape, the producers of Q's LHS, over every class Q of
//     a MatMul downstream of a member (Layout ops stop the walk); each must have K_Q <= n and
//     weights as RHS (then every op further upstream makes, each step, a region whose columns
//     are the k-step's or all of them, so computes n_k times, or once per column tile).
// Each member loads its whole weight in every subgraph holding it (D2, D3; a weight is never
// retained, V8), and a subgraph costs its first runs' native compute N_S plus at least
// max(R_S, M_S - N_S) (T1, T2, H6: M_S >= its weight loads / Bw; R_S the compute beyond N_S). In
// the first kind N_S counts only ops of T; in the second R_S >= N_S - N1_S (N1_S: ops of F1).
// Summed, with every op's first run in one subgraph,
//   claim = max(0, (sum_x |W_x| / Bw - C(T u F1)) / 2),
// and the latency is at least sum_o c_o + the largest claim over the classes.
extern bool g_tap_weights;  // test switch: false prices nothing (the part equals the compute part)

struct TapWeights {
  double value = 0;     // sum of native compute + the largest class claim
  double claim = 0;     // that claim
  int members = 0;      // members of the class priced (0: none)
  Elements k = 0;       // its reduction length
  Elements height = 0;  // its output shape
  Elements width = 0;
};

// On the problem itself (Layout ops stop the walks: their inputs come from slow memory, L1).
TapWeights TapWeightFloor(const Problem& problem);

}  // namespace annealer::bound_internal
