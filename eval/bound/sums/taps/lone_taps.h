// P33, taps that sit alone when their sum leaves them out (eval/bound/bounds.h states the fact,
// docs/lower-bound.md, "Taps that sit alone (P33)", proves it).
#pragma once

#include <vector>

#include "eval/bound/analysis.h"
#include "eval/bound/traffic/streaming.h"
#include "eval/model/problem.h"

namespace annealer::bound_internal {

// P33 (T1, T2, H5, P7, P3, V5, V8, V9, V11, G3, W, W1, W4, H1-H4, R1, R3, R5, M1, M2, D2, P5).
// A *lone tap* x of a Pointwise op s: a MatMul with K > n whose output o is read by s alone, RHS
// a graph input, LHS a graph input or made by a Pointwise op (other than its RHS). A subgraph
// that runs x without s runs x alone: x is then a sink, so in the k-loop (G3) with k <= n < K,
// and it has no internal edge (o has no reader there, the RHS no producer, a Pointwise LHS
// producer would be a prologue of a k-split MatMul, V11), so {x} is the whole subgraph (V5).
// Priced sum s: a Pointwise op the analysis allows mode T only, with m >= 1 lone taps; with P39
// (eval/bound/sums/taps/retained_lhs.h) also one whose other modes are SR, FL, FR (never SL) and whose taps'
// RHS are distinct, which adds lines for a first instance where s lies on no Pointwise path from a
// sink: no tile ratio, each fused tap at least UpstreamTapCompute at the columns its RHS slices
// leave, and its own loads at least once (P5's per-tile streaming need not hold upstream).
// Prices at the weight a: every op a c_o + (1 - a) l_o, with c_o its native compute and l_o its
// own loads / B (graph inputs it alone reads, streamed once per row / column tile for a lone
// tap's RHS / LHS when K > n, P5; and its output when it is a graph output, except for a priced
// sum); a priced sum adds, for the j of its taps run beside its first instance S1, the least of
//   at a = 1: (tau_j - 1) X_j + the (m - j - e) least (max(c_x, L_x) - c_x),
//   at a = 0: the (m - j - e) least |o| / B + the (m - j - e) least (max(c_x, L_x) - l_x),
// e = 1 when some tap's output fits the fast memory (the one S1 may find retained from the
// subgraph just before it, which is then that tap alone), else 0; L_x = the memory of {x} at
// native tiles: its RHS once per row tile, its LHS once per column tile, its output written (when
// the LHS has a producer and fits, the least of that and P39's price with the LHS retained); tau_j P23's tile ratio with m - j - e loaded slices
// and j accumulators; X_j c_s plus the j least c_x. Every other tap's output is loaded in S1,
// so written before by an instance of it without s, which sits alone and costs at least
// max(C, M) >= max(c_x, L_x) (H5 too). Each j is one line; the part is the best a of the sum.
// Not derived with a weight path (H6): compute only.
extern bool g_lone_taps;  // test switch: false prices every op at c_o (the compute part)
// Test switch: false prices a tap whose LHS may be retained at max(c_x, L_x) with that LHS read
// free (P33 as it was), true at the least of that LHS loaded and P39's price of it retained.
extern bool g_retained_lhs;
// Test switch: false leaves a sum that may run upstream of a k-loop unpriced (P33 alone); true
// prices one that never makes an LHS strip (P39's lines beside P33's).
extern bool g_upstream_lone_sums;

struct LoneTaps {
  std::vector<std::vector<Line>> lines;  // per op, its claim is the least of these
  int sums = 0;                          // priced sums
  int taps = 0;                          // their lone taps
  double value = 0;                      // Value() over every op
  double Value(const std::vector<OpId>& ops) const;
};
LoneTaps LoneTapFloor(const Problem& problem, const Analysis& modes);

}  // namespace annealer::bound_internal
