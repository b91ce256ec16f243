// P18, the tile floor of the lower bound (eval/bound/bounds.h states the fact, docs/lower-bound.md,
// "Tiles that the memory forces (P18)", proves it).
#pragma once

#include <vector>

#include "eval/bound/traffic/streaming.h"
#include "eval/model/problem.h"

namespace annealer::bound_internal {

// P18. A small fast memory forces a k-loop MatMul's tiles below native, and a MatMul pays its
// base per output tile whatever the tile's size (C2), while an operand that can be neither
// ephemeral nor retained is reloaded per column (LHS) or row (RHS) tile when k < K (M1).
//
// In a subgraph S where a MatMul x (M x N, reduction K) is in F (G3), take the steps of the
// top-left tile (every traversal visits it; r = min(h, M) rows, c = min(w, N) columns):
//  - with k < K (n_k >= 2) every F MatMul of S holds an r x c tile in every step (its sink tile,
//    its W4 accumulator, or its retained output whole), each a tensor of its own; when x is not
//    a sink, the Pointwise sink its output reaches (G3) holds one more (W1);
//  - an operand that cannot be ephemeral (no MatMul producer when K > n, V11 and P1; a graph
//    input or a Layout output when K <= n, L2) adds its slice, at least r (LHS) or c (RHS);
//    with k = K (only when K <= n) the strips r K and K c, beside the sink's tile;
//  - when x is not a sink, a Pointwise e reads its output in S: an epilogue with the tile as
//    region, whose boundary inputs are requested at the tile's last k-step (D1). Each other
//    input u of e adds, when k < K, r c if it is loaded, retained or a MatMul's output (that
//    MatMul is in F: its accumulator, counted once with the F tiles); when k = K, r c if it
//    has no producer or a Layout one, min(r, K) c if a MatMul makes it from an RHS graph input
//    only that MatMul reads ([0, K) x C of it, or u's slice). Pointwise-made inputs count 0.
// W caps the sum by the capacity. Loads: an operand t never ephemeral as above, never retained
// (a graph input, V8, or |t| + 1 > capacity, R5), never requested whole (read by x alone, or
// too large), every reader of which reads it as a MatMul's LHS only (all share K; every request
// of t in S is R x kappa_j in F or R' x [0, K) upstream, D2-D3): with k < K each F request
// differs from every request of the step before (n_k >= 2, also across tiles), so it is
// loaded: |t| ceil(N / w) in S, shared by at most min(g, readers) picked instances. RHS
// symmetric, |t| ceil(M / h). With k = K such an operand is loaded at least once (P3).
// Writes and reloads: x as an unretained sink writes |o| (M2), claimed when o is a graph output
// (V9; its writing instance is picked) or |o| + 1 > capacity. Such an o read by a non-Layout op
// e: a subgraph S_e runs e (V1); either x runs there too (o is an internal edge, legal for some
// mode of e, P9: x is then no sink) or S_e loads all of o (P3), which an earlier instance of x
// wrote as a sink (V7, M2, R3): pick that one. The load is claimed by x only when e is
// Pointwise (a MatMul reader's own lines may claim its loads of o). Pointwise producers too.
// Each op's picked instance claims a C + (1 - a) L of its case: compute base per tile (C2) or
// native tiles (P7, other ops and x upstream of a k-loop), loads as above plus its graph inputs
// read by it alone (P3) and its graph output (V9). The claims of one subgraph are disjoint
// amounts of its compute and memory (distinct ops, C5; distinct tensors or shares of one), and
// a subgraph costs at least max(C_S, M_S) >= a C_S + (1 - a) M_S (T1, T2; with prefetch H5
// too). The part is the best a of the sum of each op's least claim. Not derived with a weight
// path (H6): 0 there.
// P22 (P7, P13, V2, V3, W, R4, V8, M1, D3, G2) An instance of x upstream of a k-loop (in no F)
// computes at least its least factor over its non-T modes times its native tiles (P7, P13, as
// P14's other instances). When SL is its only non-T mode, its RHS t is a graph input only x
// reads and |t| + 1 > capacity: each step x makes R x kappa_j of its output (D3, through
// Pointwise ops that keep the shape) and requests [0, K_x) x kappa_j of t; with n_k = 1 that is
// t whole (kappa = [0, K*), K* = x's output width), which no step can hold (W), so n_k >= 2, no
// request of t equals one of the step before (only x requests t, and kappa changes every step,
// also across tiles), and each is loaded (M1; never retained, V8): per tile |t|, over S |t| x
// tiles >= |t| x ceil(M_f / n) ceil(N_f / n) for the least f it can feed (Analysis::StripTiles).
// SR symmetric with the LHS. The upstream line then claims those loads. Test switches:
extern bool g_upstream_factor;   // the factor (false: native compute, as before P22)
extern bool g_upstream_streams;  // the streamed operand (false: once)

// P27 (C1, C4, G2, G3, D1, W, W1, W4, R5, L2, V2, V5, V12; docs/lower-bound.md, "Pointwise ops at
// the tiles the memory allows (P27)", proves it). A Pointwise op e (output H x W) that the analysis
// allows mode T only is, in every subgraph S holding it, an epilogue op (G3's walk reaches it from
// a Pointwise sink through Pointwise ops), so the grid has e's shape (V12) and e pays its base
// once per tile (C1, C4). When every MatMul whose output is H x W has K > n, the top-left tile's
// last step (r = min(h, H), c = min(w, W)) holds two distinct tensors of at least r c each: a
// sink's tile or its retained whole (W1, R5), and either a second sink's (every F MatMul a sink:
// e's sink is Pointwise), an F MatMul's accumulator (n_k >= 2 since k <= n < K, W4) or its
// retained whole, or (no F: S has no MatMul) a boundary tensor's r x c slice or retained whole
// requested by the first non-Layout op or gathered for a Layout op (D1, L2). So 2 r c <= capacity
// (W), and e computes at least base x ForcedPointwiseTiles()[e] in S, the fewest tiles of an
// H x W grid with 2 r c <= capacity. Else (not Pointwise, another mode, or a MatMul of e's shape
// with K <= n) the answer is the op's native tiles. The tile rules of a chip (H1, H3) only shrink
// the tiles further; a weight slice (H6) is read by a MatMul only, so none of the tensors above.
std::vector<int64_t> ForcedPointwiseTiles(const Problem& problem, const Analysis& modes);
extern bool g_pointwise_tiles;  // test switch: false answers the native tiles (as before P27)

// P53 (C2, D1, G3, M2, P3, R5, V1, V7, W, W1, W4; docs/lower-bound.md, "An epilogue's reader
// beside a MatMul (P53)", proves it). Inside P18, for a MatMul x whose output o only a Pointwise
// e reads, e reading o alone and making q (x's shape, too large to retain, no graph output) that
// only a Pointwise f reads, in x's island: take a subgraph S_f running f. If e runs there and x
// too, x's picked instance is S_f, where f's other inputs hold at least their leaves' slices at
// the top-left tile's last step (a tile more in W: the epilogue configuration with one more
// input). If e runs there without x, S_f loads o, which a sink instance of x wrote (P18's sink
// case). If e is not there, S_f loads all of q, which an instance S' of e wrote as a sink: with
// x in S', x's picked instance is S', claiming that write and that load (e claims neither: f can
// run beside it); without, S' loads o (the sink case). Off under a chip's accumulator or
// staging capacity (H1's roles of the leaves are not derived).
extern bool g_epilogue_reader;  // test switch: false leaves P53 out (as before it)

struct TileLines {
  std::vector<std::vector<Line>> lines;         // per op, its claim is the least of these at a
  std::vector<std::vector<Line>> island_lines;  // the same, claiming only its own island's transfers
  double value = 0;                             // the best over a of the sum of `lines`
};
// `modes`: the analysis of the problem or of its decoupled image (same op ids), asked only
// whether an op can sit upstream of a k-loop. With `island_of` (P12's islands) it also fills
// `island_lines`, where an op claims only transfers made in subgraphs of its own island, so
// that they may be summed island by island.
TileLines TileFloor(const Problem& problem, const Analysis& modes, const std::vector<int>* island_of = nullptr);

}  // namespace annealer::bound_internal
