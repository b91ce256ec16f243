// P39, a lone tap that reads its LHS retained (eval/bound/bounds.h states the fact,
// docs/lower-bound.md, "A lone tap with its LHS retained (P39)", proves it).
#pragma once

#include "eval/bound/analysis.h"
#include "eval/model/problem.h"

namespace annealer::bound_internal {

// P39 (W, W1, R1, R5, C2, D2, M1, M2, P5, T1). A MatMul x with K > n run alone ({x} is the whole
// subgraph, as P33's lone taps are), its LHS retained into that subgraph from the one before.
// Then every step holds the whole LHS (R5), a slice of the RHS at least one row deep and the
// output tile (W1, or the whole output when it is retained), so the top-left tile r x c has
// |LHS| + c + r c <= capacity; the tap pays its base per tile (C2), the RHS once per row tile
// (k <= n < K: no k-range repeats from one step to the next, M1, D2, P5) and its output written
// (the case P33 prices: an output loaded later). Returns the least max(compute, memory) over the
// tile shapes (r, c) that fit, +infinity when none does; chip rules (H1-H4) only shrink the set,
// and max(C_S, M_S) holds under prefetch (H5).
double RetainedLhsAlone(const Problem& problem, OpId x);

// P39 (D3, C3, C5, C6, W, V8). A MatMul x run upstream of a k-loop (an RHS strip or a full region:
// never in the k-loop, never an LHS strip) whose RHS is a graph input makes each region from the
// RHS slice [0, K) x (the region's columns), a slice of the working set beside the other fused
// taps' (distinct tensors), so no region is wider than `columns` = floor(capacity / their K sum).
// Its regions cover its output (every op of a subgraph makes all of it: the sinks' grid covers
// theirs and D1-D3 pass whole rows and columns up), each charged base x its native tiles (C3: per
// tile for a strip, per step further up; C5 merges only identical regions). As an RHS strip the
// regions of one tile are its K* = H rows by the tile's columns: at least ceil(H/n) ceil(W/min(n,
// columns)) bases; as full regions, each of area a at least base a / (min(H, n) min(W, n,
// columns)). Returns the lesser of the two.
double UpstreamTapCompute(const Problem& problem, OpId x, Elements columns);

}  // namespace annealer::bound_internal
