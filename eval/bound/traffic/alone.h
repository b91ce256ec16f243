// P21, a MatMul that sits alone, priced step by step (eval/bound/bounds.h lists the parts,
// docs/lower-bound.md, "A MatMul that sits alone (P21)", proves it).
#pragma once

#include <vector>

#include "eval/bound/analysis.h"

namespace annealer::bound_internal {

// P21. An island (P12) that is one MatMul x with K > n holds only subgraphs that run x alone
// (every subgraph lies in one island, V1 makes it non-empty). Alone, x is the sink and the whole
// k-loop; every k <= n < K splits each tile into n_k >= 2 k-steps (V2, V3), so consecutive steps
// never request the same slice of either operand (their k-ranges differ, also across tiles: the
// last range of a tile is not the first of the next), nothing is reused (M1) and the traversal
// does not matter. A step j of a tile of hr rows and wc columns then computes base * k_j / K (C2)
// and loads hr * k_j of the LHS and k_j * wc of the RHS unless that operand is retained (R2), and
// the last step writes hr * wc unless the output is retained (M2, R3); it costs the max of its
// compute and its memory time (T1; with H6 each path apart). So every such subgraph costs at
// least the least of that sum over every w, h, k (each side up to n, k <= n) that the chip's
// rules allow (H3's sides; the staging of the loaded operand slices and the accumulator of the
// tile at tile 0's first k-step (whole rows, columns and k; every traversal visits it), with H2's doubling and H4's factor; H4's wide write; the fast memory and
// the FIFO only forbid more) and every retention of the operands and output that is possible.
// Not under prefetch into double-buffered staging (H5 lowers a step below its max; x's operand
// slices play only the staging role, so otherwise H5 hides none of them), nor for x = A @ A (one tensor in
// both operands: D5 may merge them).
struct AloneFloor {
  bool valid = false;
  // One entry per possible retention (LHS, RHS retained in; output retained, not written): the
  // least latency over every tile shape, and the elements of it that P16 counts apart when the
  // island takes its P12 form (loads of crossing inputs, the write of a crossing output).
  struct Option {
    double latency = 0;
    Elements claimed = 0;
  };
  std::vector<Option> options;
  // An island of one MatMul and its epilogue ops (P21's second form): one option, no claims
  // apart, and P16 may use it only at the island's point a = 1, b = 0.
  bool compute_point_only = false;
  // The least latency of a subgraph of the island (P12).
  double Least() const;
  // The least of latency - share * claimed / bandwidth (P16, island weight share = 1 - a - b).
  double LeastApart(double share, double bandwidth) const;
};

// The floor of op x if its island is {x} and it qualifies, else {valid = false}. `weights`: per
// tensor, whether it travels H6's weight path.
AloneFloor LoneMatMulFloor(const Problem& problem, OpId x, const std::vector<char>& weights);

// Ablation switch for tests only (measures what P21 adds): false makes every LoneMatMulFloor
// invalid, the bound as before P21. Not thread-safe; never set elsewhere.
extern bool g_lone_matmul_floor;

// P21 for an island: of one MatMul (LoneMatMulFloor), or of one MatMul x with K > n and Pointwise
// ops E whose every input is made in the island. Every subgraph of that island holding x has x as
// its whole k-loop and its E ops as epilogues (they reach only E ops and sinks), which fire at each
// tile's last k-step with their full base (C4); E ops elsewhere compute at least base x native
// tiles each (P7). So the island costs at least the least, over every tile shape and every split
// gamma in [0, sum of E's bases] of the per-tile epilogue compute, of x's steps with gamma added
// to each last step (inputs made elsewhere free, no write: a floor at its least) plus the rest of
// E's compute at native tiles.
// P30 tightens it: an input of x too large to retain (R5) is loaded slice by slice as in the first
// form, and when every op of the island has an output too large to retain, the sinks of the
// subgraph that runs x (one at least, in the island, of x's shape) write their tiles at each
// tile's last step (M2), counted at the narrow width (none without a chip's wide write-back).
AloneFloor IslandFloor(const Problem& problem, const std::vector<OpId>& island, const std::vector<char>& weights);
extern bool g_alone_loads;  // test switch: false prices the second form as before P30

// The least latency of x alone at one retention, over every tile shape (exposed for tests), with
// `epilogue` of Pointwise base per tile that may fire at each tile's last step or run elsewhere.
// With `fit_memory` (P30) a shape must also fit the fast memory (W): the sink's tile and x's
// operand slices, plus x's accumulator tile when epilogue ops share the subgraph (gamma > 0).
double LoneMatMulLatency(const Problem& problem, OpId x, const std::vector<char>& weights, bool lhs_retained,
                         bool rhs_retained, bool output_retained, double epilogue = 0, bool fit_memory = false);

}  // namespace annealer::bound_internal
