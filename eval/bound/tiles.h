// P18, the tile floor of the lower bound (eval/bounds.h states the fact, docs/lower-bound.md,
// "Tiles that the memory forces (P18)", proves it).
#pragma once

#include <vector>

#include "eval/bound/streaming.h"
#include "eval/problem.h"

namespace annealer::bound_internal {

// P18. A small fast memory forces a k-loop MatMul's tiles below native, and a MatMul pays its
// base per output tile whatever the tile's size (C2), while an operand that can be neither
// ephemeral nor retained is reloaded per column (LHS) or row (RHS) tile when k < K (M1).
//
// In a subgraph S where a MatMul x (M x N, reduction K) is in F (G3) with k < K, so n_k >= 2:
//  - every F MatMul of S holds at least one r x c tile in every step (its sink tile, its W4
//    accumulator, or its retained output whole; r = min(h, M), c = min(w, N) at the top-left
//    tile, which every traversal visits), each a tensor of its own; when x is not a sink, the
//    Pointwise sink its output reaches (G3) holds one more (W1), not a MatMul's;
//  - an operand that cannot be ephemeral (no MatMul producer when K > n, V11 and P1; a graph
//    input or a Layout output when K <= n, L2) adds its slice, at least r (LHS) or c (RHS).
// So (g + [x not a sink]) r c + r [LHS counted] + c [RHS counted] <= capacity (W), g the F
// MatMuls of S. With k = K (only when K <= n) the sink tile and the operand strips r K, K c.
// Loads. An operand t (LHS) that is never ephemeral as above, never retained (a graph input,
// V8, or |t| + 1 > capacity, R5) and never requested whole (read by x alone, or |t| + 1 >
// capacity), every reader of which reads it as a MatMul's LHS only (so all share K and every
// request of it in S is R x kappa_j in F or R' x [0, K) upstream, D2-D3): with k < K each F
// request differs from every request of the step before (n_k >= 2, also across tiles), so it is
// loaded: |t| ceil(N / w) in S, shared by at most min(g, readers) picked instances. RHS
// symmetric, |t| ceil(M / h). With k = K each such operand is loaded at least once (P3).
// x as an unretained sink writes |out| (M2): claimed when out is a graph output (V9, its
// writing instance is picked) or |out| + 1 > capacity. Compute in F: base per tile, C2.
// Each op's picked instance (a graph output's writing one) claims a C + (1 - a) L of its own
// case; other ops and x upstream of a k-loop claim a c_native + (1 - a) (their graph inputs
// read by them alone, once, P3, P7, and their graph output written, V9). The claims of one
// subgraph are disjoint amounts of its compute and memory (distinct ops, C5; distinct tensors
// or shares of one), and a subgraph costs at least max(C_S, M_S) >= a C_S + (1 - a) M_S (T1,
// T2; with prefetch H5 too). The part is the best a of the sum of each op's least claim.
// Not derived with a weight path (H6): 0 there.
struct TileLines {
  std::vector<std::vector<Line>> lines;  // per op, its claim is the least of these at a
  double value = 0;                      // the best over a of the sum
};
// `modes`: the analysis of the problem or of its decoupled image (same op ids), asked only
// whether an op can sit upstream of a k-loop. With `island_of` (P12's islands), an op claims
// only transfers made in subgraphs of its own island, so the lines may be summed island by
// island.
TileLines TileFloor(const Problem& problem, const Analysis& modes, const std::vector<int>* island_of = nullptr);

}  // namespace annealer::bound_internal
