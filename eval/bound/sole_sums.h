// P28, a priced sum alone in its shape (eval/bound/bounds.h states the fact, docs/lower-bound.md,
// "A sum alone in its shape (P28)", proves it).
#pragma once

#include <vector>

#include "eval/bound/taps.h"
#include "eval/model/problem.h"

namespace annealer::bound_internal {

// P28 (T1, T2, V1, V12, G3, P23, P25). P23 and P25 mix each shape's claims at one lambda because
// one subgraph may hold several of them: two priced sums of one shape, or a priced sum beside a tap
// that claims P23's line there. Where a set of ops holds exactly one priced sum s of a shape and
// no tap read by nothing of that shape (and all of s's producers), every subgraph of that grid
// holds at most one kind of claim, and each subgraph's slack is the larger of its two weights, not
// a mix:
//  - S_1, the subgraph picked for s with j producers fused: P*_j = max(B_j, A_j), P23's line at
//    lambda = 0 (theta = 1) and at lambda = 1 (theta = 1 / tau), both true of S_1 at once;
//  - a tap x's sink instance: its P25 constant `sole` (every class at one theta per key and class;
//    no priced sum can share it, so no class gives P23's line);
//  - a tap in Q (no sink instance, outside S_1) runs beside another instance S_i of s, which holds
//    j_i >= 1 fused producers and has slack >= P*_{j_i} >= max(mu, j_i rho), mu = min_{j>=1} P*_j,
//    rho = min_{j>=1} P*_j / j.
// The group then claims, beside every op's c_o,
//   G = min over possible j1 and q in [0, m - j1] of
//       P*_{j1} + (q > 0 ? max(mu, q rho) : 0) + the (m - j1 - q) least e_x,
// e_x = max(0, sole[x]) (+inf for a tap no class holds as a sink). Each shape's contribution to
// P25's Value is a bound on its own subgraphs, so the part takes per such shape the larger of G and
// P25's lambda-mixed term.
extern bool g_sole_sums;  // test switch: false claims nothing beyond P25

struct SoleSums {
  double value = 0;  // P25's Value over the ops, with each sole shape at the larger term
  int shapes = 0;    // sole shapes where G is above P25's term
};
SoleSums SoleSumValue(const Problem& problem, const TapLines& taps, const std::vector<OpId>& ops);

}  // namespace annealer::bound_internal
