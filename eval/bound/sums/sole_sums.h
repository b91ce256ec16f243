// P28, a priced sum alone in its shape (eval/bound/bounds.h states the fact, docs/lower-bound.md,
// "A sum alone in its shape (P28)", proves it).
#pragma once

#include <map>
#include <utility>
#include <vector>

#include "eval/bound/sums/taps/taps.h"
#include "eval/model/problem.h"

namespace annealer::bound_internal {

// P28 (T1, T2, V1, V7, V12, G3, M2, R5, P23, P25). P23 and P25 mix each shape's claims at one
// lambda because one subgraph may hold several of them: two priced sums of one shape, or a priced
// sum beside a tap that claims P23's line there. Where a set of ops holds exactly one priced sum s
// of an output shape, all of s's producers x_1..x_m and no tap read by nothing of that shape, every
// subgraph of that grid holds one kind of claim only, and its slack is the larger of its two
// weights, not a mix:
//  - S_1, the subgraph picked for s, with j1 producers fused: P*_j1 = max(B_j1, A_j1), P23's line
//    at lambda = 0 (theta = 1) and at lambda = 1 (theta = 1 / tau), both true of S_1 at once;
//  - every other producer x has a sink instance: S_1 reads o_x, which is never retained (R5) and
//    so was written (V7), and only a subgraph where x is a sink writes it (M2; an ephemeral output
//    is not written). There x claims its P25 constant `sole` (every class at one theta per key and
//    class; no priced sum can be there, so no class gives P23's lambda line).
// The shape then claims, beside every op's c_o,
//   G = min over the possible j1 of P*_j1 + the (m - j1) least e_x,
// e_x = max(0, sole[x]) (+inf for a tap no class holds as a sink: it is in S_1). Each shape's
// term of P25's Value bounds its own subgraphs, so the part takes per such shape the larger of G
// and P25's lambda-mixed term.
extern bool g_sole_sums;  // test switch: false claims nothing beyond P25
// With P31 (taps.h), an isolated producer's sink instance is {x} alone (V11, V5), so its claim
// there is also at least P31's floor: e_x = max(0, sole[x], isolated[x]) in P28 and in P29's
// case of a producer with no priced sum beside it. Test switch: false leaves out P31's floor.
extern bool g_isolated_in_sole;
inline double IsolatedFloor(const TapLines& taps, OpId x) {
  return g_isolated_in_sole && !taps.isolated.empty() ? taps.isolated[x] : 0.0;  // empty: P25 not derived
}

// P52: S_1 runs s in mode T, so its grid has s's shape H x W (V12) and some sink on s's Pointwise
// path has an H x W output; with H W > capacity that output cannot be retained (R5, W), so the
// sink writes every tile of it (M2, G2): S_1's memory time holds H W / B beside the unfused loads,
// and A_j1 = (1 - 1 / tau_j1) (U_j1 + H W / B) when s's output is no graph output (U_j holds it
// then). Only here, where S_1 holds one claim: two sums in one subgraph may share that sink.
// Test switch: false leaves the write out.
extern bool g_sole_sum_write;

struct SoleSums {
  double value = 0;  // P25's Value over the ops, with each sole shape at the larger term
  int shapes = 0;    // sole shapes where G is above P25's term
};
SoleSums SoleSumValue(const Problem& problem, const TapLines& taps, const std::vector<OpId>& ops);

// Per output shape among `ops` (`in` marks them): the priced sums whose sum is in `ops` (indices
// into taps.priced) and whether a tap read by nothing has that shape. P28 and P29 price a shape
// only where no such tap is.
using PricedShapes = std::map<std::pair<Elements, Elements>, std::pair<std::vector<int>, bool>>;
PricedShapes PricedSumsByShape(const Problem& problem, const TapLines& taps, const std::vector<OpId>& ops,
                               const std::vector<char>& in);

}  // namespace annealer::bound_internal
