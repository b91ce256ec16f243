// P29, several priced sums of one shape (eval/bound/bounds.h states the fact, docs/lower-bound.md,
// "Several sums of one shape (P29)", proves it).
#pragma once

#include <vector>

#include "eval/bound/sums/sole_sums.h"
#include "eval/bound/sums/taps/taps.h"
#include "eval/model/problem.h"

namespace annealer::bound_internal {

// P29 (T1, T2, V1, V7, V12, G3, M2, R5, P23, P25, P28). P28 prices a shape with one priced sum at
// the larger of its subgraph's two weights; a shape with k >= 2 priced sums s_1..s_k (all their
// producers among the ops, no tap read by nothing of that shape) keeps P25's one lambda there,
// because several sums may share a subgraph. P29 prices such a shape case by case instead. Pick
// for each s a subgraph S_s running it (P23's frame); the picks fall into groups, one subgraph per
// group. For a group g in S with j_s producers of each s fused, tau_S >= tau* = max_s tau_{j_s}(s)
// (each sum's working set of P23's step 2 is in S), and the slack of S over the compute prices of
// its ops is, at theta = 1, at least (tau* - 1)(sum of X0_{j_s}) and, at theta = 1/tau_S, at least
// (1 - 1/tau*)(sum of U_{j_s}) (distinct ops, distinct tensors), so at least their larger.
// Every producer x of s outside S_s has a sink instance S_x (P28: S_s loads o_x, never retained,
// so some subgraph wrote it, one where x is a sink), which holds no instance of s. Either S_x holds
// no priced sum of the shape: x claims P25's constant sole[x] there, as in P28; or it holds an
// instance of another sum s' of the shape (picked or not): then tau_{S_x} >= tau_least(s'), c_x is
// among S_x's compute prices and S_x writes o_x (M2), so x adds (tau - 1) c_x to the first weight
// and (1 - 1/tau)|o_x|/B to the second, and the larger of the sums is at least the group's claim
// plus min of the two for each such x. So x claims
//   f_x = min(max(0, sole[x]), min over s' != s of min((tau_least(s') - 1) c_x,
//                                                       (1 - 1/tau_least(s')) |o_x| / B)),
// and the shape's claims total at least
//   G = min over the partitions of the sums into groups and the possible j_s of
//       sum over groups of max((tau* - 1) sum X0, (1 - 1/tau*) sum U) + sum over s of the
//       (m_s - j_s) least f_x.
// The part takes per such shape the larger of G and P25's lambda-mixed term (each shape's term
// bounds its own subgraphs alone). Shapes of more than kMaxSums sums, or too many cases, keep
// P25's term.
extern bool g_shared_sums;  // test switch: false claims nothing beyond P28

struct SharedSums {
  double value = 0;  // P28's value over the ops, with each shared shape at the larger term
  int shapes = 0;    // shapes of >= 2 priced sums where G is above P25's term
};
SharedSums SharedSumValue(const Problem& problem, const TapLines& taps, const std::vector<OpId>& ops);

}  // namespace annealer::bound_internal
