// P35, what serving an island by running a producer again costs (eval/bound/bounds.h states the
// fact, docs/lower-bound.md, "Producers run again to serve an island (P35)", proves it).
#pragma once

#include <vector>

#include "eval/bound/analysis.h"

namespace annealer::bound_internal {

// P16 lets the producer p of a crossing tensor t run again, for its compute c_p alone, so that
// its subgraph retains t for the next one, S_J, a subgraph of a reading island J (J is served).
// Take for S_J the earliest subgraph that runs an op of J reading t. The subgraph just before it,
// Q_J, runs p and retains t (R2, V8); follow, from Q_J, the subgraphs before as long as each
// retains a tensor the next one needs to make t: the chain X_J. Each chain member runs an op of
// A, the ops of p's island I from which p is reached inside I, so lies in I (P12). Each comes
// before S_J, so it runs no op that depends on a reader of t in J (V6, V7, L1 on the problem
// itself: such an op needs an earlier instance of that reader). So every op of X_J lies in U_J:
// the ops of I, not depending on a reader of t in J, joined to A by edges that can be internal
// (P12's edges; a consumer upstream of a k-loop only where a MatMul it reaches lies in I and
// does not depend on those readers either, D3, G3). Chains of distinct served islands are
// disjoint (each subgraph has one successor, and S_J lies in J, not I).
//   A chain loads, on every path of tensors from a graph input to t whose ops lie in A, some
// tensor, all of it (made in a member, retained from the one before and then made there, or
// loaded; a graph input is never made nor retained, V8; each op requests its whole inputs, P3):
// at least `any` elements, the largest over the paths of the least tensor on the path (a graph
// input on the activation path counting its size; a weight, a tensor made outside I, which may
// arrive retained, and a tensor too large to retain nothing). These loads take the activation
// path, so the chain costs at least any / B whatever its compute (T1, H6).
//   Priced only where U = the union of the U_J holds no MatMul (no P21, P24 or weight claim can
// fall in a chain), no producer of another crossing tensor, and no tensor too large to retain:
// then what P12's form of I counts that a chain might hold is at most a C_U + (1 - a - b) T_U / B
// (`compute`: U's ops' compute; `traffic`: the graph inputs U's ops read, as P12 counts them in
// I, and the graph outputs they make), and P16's other claims fall outside the chains. So, with s
// islands served, I's subgraphs cost at least V_I - a C_U - (1 - a - b) T_U / B + s any / B plus
// P16's loads in the unserved islands and its write, in place of P16's s instances of c_p.
// Two tensors priced so must not share a reading island (one chain could serve both): per home
// island, greedily by r any (r reading islands), those whose reading islands are disjoint.
struct RecomputeCut {
  bool priced = false;
  double any = 0;       // elements
  double compute = 0;   // C_U
  double traffic = 0;   // T_U, elements
};

// Per tensor of `problem` (the image P16 prices); `original`: the problem itself, whose Layout
// ops' inputs order the subgraphs (L1). `weights`: per tensor, whether it travels H6's weight
// path. Deterministic; past a fixed work budget the remaining tensors stay unpriced.
std::vector<RecomputeCut> RecomputeCuts(const Problem& problem, const Problem& original, const Analysis& analysis,
                                        const Built& built, const std::vector<char>& weights);

// Test switch: false leaves every entry unpriced (P35 equals P16). Not thread-safe.
extern bool g_recompute_cuts;

}  // namespace annealer::bound_internal
