// P36, a Pointwise sink that waits for a gathered tensor made from its own other input: the
// squeeze-excite multiply (eval/bound/bounds.h states the fact, docs/lower-bound.md, "A multiply
// that waits for its own squeeze (P36)", proves it).
#pragma once

#include <vector>

#include "eval/model/problem.h"

namespace annealer::bound_internal {

// P36 (T1, T2, H5, H6, P3, P4, P7, P8, V1, V2, V5, V6, V7, V8, V9, V11, G2, D1, L1, L2, R5, M2).
// A *waiting multiply* m: a Pointwise op with one input X not made by a Layout op and one or
// more inputs E_i made by Layout ops l_i, whose output Y is read by nothing or only by MatMuls
// with K > n; X is a graph input or its producer p_X reaches an input e of some l_i. Let S_1 be
// the first subgraph that runs m, in any valid schedule.
//   - Y's readers never share a subgraph with m (V11 with V2: w or h >= K > n), so m is a sink of
//     S_1: its grid covers Y (G2), each tile needs the same region of X and of every E_i (D1),
//     and S_1 writes Y unless it retains it (|Y| + 1 > capacity: never, R5; a graph output is
//     written, V9). No op depending on Y runs in S_1 (Y first exists there).
//   - Every e is in slow memory before the subgraph running l_i (L1), which is S_1 or earlier, so
//     every op with a path to an e (the set P) ran before S_1: in S_1 it is run again.
//   - E_i is gathered (L2) or loaded in S_1, each element at least once, unless it fits (R5).
//   - X is loaded (|X| unless it may be retained) or made in S_1 by p_X, run again, which then
//     loads a set of tensors that cuts every path from a graph input or a Layout output to X
//     (each op making part of X's ancestry computes its whole output, so requests its whole
//     inputs, P3), the least such cut by max-flow over tensors too large to retain and graph
//     inputs on the activation path (H6's weights cost nothing there).
//   - The ops of S_1 not in P, D (depending on Y) or m lie in U: those joined to m by op edges
//     outside D, less P. Priced only when U holds no other candidate; F = c_m + C_U (native).
// Then S_1 costs >= max(C, M) (T1, T2; H5 hides nothing across subgraphs), with C = F' + R
// (F' >= F the first runs' compute, R the reruns') and M >= (sum |E_i| + |Y| + X's loads) / B,
// so S_1 exceeds its first runs' native compute by
//   claim_m = max(0, min((T_E + T_Y + c_X) / B - F, max(c_{p_X}, (T_E + T_Y + cut) / B - F))),
// the second term only when p_X is no Layout op. Distinct priced m have distinct S_1 (a second m'
// in S_1 is in P (run again there), depends on Y, or lies in U). So the latency is at least
// sum_o c_o + sum_m claim_m; and island by island (P12), S_1 lying in m's island.
extern bool g_squeeze;  // test switch: false prices nothing (the part equals the compute part)

struct Squeeze {
  std::vector<double> claim;  // per op (of the problem given), 0 unless priced
  std::vector<double> native;  // per op, base x native tiles
  int count = 0;               // priced multiplies
  double value = 0;            // Value() over every op
  // sum over `ops` of native compute and claims
  double Value(const std::vector<OpId>& ops) const;
};

// On the problem itself (its Layout ops and their inputs, L1), not the decoupled image; the op
// ids are the image's too.
Squeeze SqueezeFloor(const Problem& problem);

}  // namespace annealer::bound_internal
