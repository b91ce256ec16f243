// P25, a MatMul whose output leaves its subgraph (eval/bound/bounds.h states the fact,
// docs/lower-bound.md, "A MatMul whose output leaves its subgraph (P25)", proves it).
#pragma once

#include <vector>

#include "eval/bound/analysis.h"
#include "eval/bound/traffic/streaming.h"
#include "eval/bound/sums/sums.h"
#include "eval/model/problem.h"

namespace annealer::bound_internal {

// P25 (T1, T2, C1-C6, D1-D5, G2, G3, M1, M2, R5, V8, V12, W, W1, W4, P23). The frame is P23's: every
// op priced at c_o, a priced sum s (P23) at c_s + e_s, and now a *tap* t at c_t + e_t: a MatMul
// whose output o_t cannot be retained (|o_t| + 1 > capacity), whose RHS is a graph input only t
// reads, and whose output is read by nothing (then no MatMul among its LHS's ancestors) or by a
// priced sum alone. In a subgraph S where t runs
// with none of o_t's readers, t is a sink (G3): S writes o_t (M2, R5) and loads t's weight, once
// per row tile when n_k >= 2 (M1), so M_S >= M_t(sigma) at S's shape sigma, and the grid has t's
// shape (V12): tau = T / N_t. Per class of shapes (row tiles, column tiles, n_k = 1 or >= 2):
//  - where a priced sum of that shape may share S (tau >= its least tau_j), t claims P23's line at
//    lambda, lambda (1 - 1/tau) M_t + (1 - lambda)(tau - 1) c_t, which adds up with P23's claims;
//  - elsewhere S holds no priced sum and every claim in S is a tap's of the same key (output
//    shape and K, G3 and V12), at one theta per (key, class): L(S) >= theta C_S + (1 - theta) M_S,
//    with C_S counting each op of S at least f_o c_o: tau for every op (P23's step 1), for an op
//    that makes a k-loop operand T ceil(K/n) / N_o (C3), for one further upstream T n_k / N_o
//    (C6: its region every step). When the fast memory leaves no room for a second sink tile and
//    its input (W, W1, W4), the only sinks are MatMuls of the key and every other op is upstream
//    (G3, D3): the ops S may hold then lie in a walk up from t's LHS producer and down into ops that
//    can run upstream or MatMuls of the key, whose deficits (1 - theta f_o)^+ c_o t subtracts;
//    otherwise theta >= 1/tau, where no op has a deficit.
// e_t(lambda) = max(0, the least over the classes). A tap read by nothing is a sink in every
// subgraph; a tap of a priced sum s is in S_s (fused, P23's j), or has a sink instance (claims
// e_t there), or every instance runs beside another instance of s, whose slack at lambda is at least
// P23's least line with j >= 1: the group claims
//   E(lambda) = min( min_j [P23_j + the m - j least e_t], min_j P23_j + min_{j>=1} P23_j ).
// Not derived with a weight path (H6): then P25 claims nothing.
// P31: a tap with K > n whose LHS is made by a Pointwise op loads that LHS like one made by an op
// that cannot run upstream: V11 (P1) keeps the producer out of every subgraph where the tap is in F.
extern bool g_tap_excess;  // test switch: false claims no tap excess (P23 alone)
extern bool g_pointwise_lhs_loaded;  // test switch: false leaves P31 out (as before it)

struct TapLines {
  std::vector<double> compute;           // per op, c_o
  std::vector<std::vector<Line>> taps;   // per tap, e_t(lambda) = max(0, least line); else empty
  std::vector<SumLines::Priced> priced;  // P23's priced sums
  std::vector<char> lone;                // per op: a tap read by nothing
  // Per tap, for P28 (sole_sums.h): the least over the classes of its value at the class's theta,
  // the open classes where a priced sum of its shape may share S taken at theta >= 1/tau as
  // the others are (valid where no other priced sum of the shape can share S); +inf when no class
  // holds it as a sink (every instance runs beside an instance of its sum); 0 for other ops and
  // when P25 is not derived (a weight path, the test switch).
  std::vector<double> sole;
  std::vector<double> isolated;          // per op: P31's floor of e_t for an isolated tap, else 0
  // P54, per MatMul: what any subgraph running it loads to obtain every row strip of its LHS A once,
  // H_A x (A's row frontier width, or A's width where A cannot be made beside it) / B; else 0.
  std::vector<double> lhs_rows;
  int tap_count = 0;                     // taps with a positive excess at some lambda
  double value = 0;                      // Value() over every op
  // The sum over `ops` of c_o plus, per output shape, the best lambda of the groups' E(lambda)
  // (a priced sum with its taps among `ops`) and the lone taps' e_t(lambda).
  double Value(const Problem& problem, const std::vector<OpId>& ops) const;
};
TapLines TapFloor(const Problem& problem, const Analysis& modes, const SumLines& sums);

}  // namespace annealer::bound_internal
