// P43, heads whose first subgraph loads their operand or is served by a chain (eval/bound/bounds.h
// lists the parts; docs/lower-bound.md, "Heads that load their operand first (P43)", proves it).
#pragma once

#include <vector>

#include "eval/bound/analysis.h"

namespace annealer::bound_internal {

// A head of a tensor x (made by a Pointwise op p, small enough to retain) is a MatMul h of p's
// island with K > n that P26 keeps in its k-loop at its first instance, reading x as one operand
// and, as the other, a graph input or a Layout op's output. Its first subgraph S_1(h) then runs h
// k-split, so V11 keeps p out and x is a boundary input: loaded whole (|x| on the activation path,
// x being produced) or retained by the subgraph just before, which runs p (R2, V8): h is *served*.
// S_1(h) holds no op of Dep(h) (P26), so only ops of N_h: the ops joined to h through edges other
// than into a Layout op, other than p -> h, and outside Dep(h).
//   A served reader (head, or an island of P16's that reads x) has a chain: the subgraph just before
// its first subgraph, and back while each retains a tensor the next needs to make x and is no
// head's first subgraph. On every path of tensors from a graph input to x inside A (P35's) whose
// ops lie in no priced head's N, the chain loads some tensor whole: at least `any` elements. Every
// chain but the earliest comes after the earliest server Q*, which runs p, so after the first
// instance of every ancestor of p (V6, V7, L1 on the problem itself): such a late chain holds no
// first instance of them, and what P12's form counts at first instances (compute, the first loads
// of graph inputs and weights) and P24 at first instances (P26) falls outside it. What it may hold
// of the island's counted amounts: the compute, weights and P24 claims of U's ops that are not
// ancestors of p (nor priced heads, whose first instances are their own first subgraphs), the
// graph inputs they read and the graph outputs U's ops make.
struct HeadedTensor {
  struct Head {
    OpId op = kNoOp;
    double compute = 0;  // C_N: the native compute of N_h's ops
    double weight = 0;   // the weight elements P12 counts in the island for N_h's MatMul (H6)
  };
  bool priced = false;
  double any = 0;           // elements
  double late_compute = 0;  // C_L
  double late_traffic = 0;  // elements
  double late_weight = 0;   // elements on H6's path, read by the late MatMuls
  std::vector<OpId> late_matmuls;  // their P24 claims join the late budget
  std::vector<Head> heads;
};

struct InternalHeads {
  std::vector<HeadedTensor> tensors;  // per tensor of the image
  // Per island: every crossing tensor it makes and every tensor with heads there is priced, their
  // reading islands are disjoint and no head's N holds another head. Only then does P43 price the
  // island's tensors (and no P16 price with extra instances of a producer remains beside them).
  std::vector<char> island_priced;
  int heads = 0;  // heads in priced islands
};

// `problem`: the image P16 prices; `original`: the problem itself (Layout ops order subgraphs,
// L1; P26's reason (b) keeps a head in F at its first instance); `weights`: per tensor, whether it
// takes H6's path.
// Deterministic; past a fixed work budget nothing is priced.
InternalHeads FindInternalHeads(const Problem& problem, const Problem& original, const Analysis& analysis,
                                const Built& built, const std::vector<char>& weights);

// Test switch: false prices nothing (P43 equals P16's pricing). Not thread-safe.
extern bool g_internal_heads;

}  // namespace annealer::bound_internal
