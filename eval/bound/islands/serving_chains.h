// What P35 (recompute.h) and P43 (internal_heads.h) share: the crossing tensors, the widest path
// a serving chain must load, and the ops such a chain may hold. docs/lower-bound.md proves both
// parts; this header only states the sets they are built from.
#pragma once

#include <cstdint>
#include <vector>

#include "eval/bound/analysis.h"

namespace annealer::bound_internal {

// P16's crossing tensors: produced, small enough to retain, read in an island other than their
// producer's.
std::vector<char> CrossingTensors(const Problem& problem, const Built& built);

// Per op q: over the paths of tensors from a graph input to an input of q whose ops lie in q's
// island, the largest least tensor (a graph input counts its size unless it travels the weight
// path; a tensor made in another island, one too large to retain and one made by an op of `cut`
// count 0). `cut` may be empty (no op cut).
std::vector<double> WidestInner(const Problem& problem, const Built& built, const std::vector<char>& weights,
                                const std::vector<char>& cut);

// The ops a chain serving a reader may hold (P35's U_J): the ops of the home island that come
// before the reader's first subgraph, joined to A (the ops from which the producer is reached
// inside its island) by edges that can be internal (P12's edges; an edge into an op upstream of
// a k-loop only where that op reaches a MatMul among them). Stamped scratch, reused across calls;
// `Work` counts the steps so that callers stop at the same place on every run.
// What P12 counts in island `home` for loading the graph inputs `inputs` (each once, whatever
// the order or repeats of the list), elements; sorts and deduplicates `inputs`.
double InputClaimsIn(const Built& built, std::vector<TensorId>& inputs, int home);

class ChainOps {
 public:
  ChainOps(const Problem& problem, const Problem& original, const Analysis& analysis, const Built& built);

  // A for the producer p of t, in p's island: p and the ops from which it is reached there.
  const std::vector<OpId>& Cone(OpId p, TensorId t);

  // Adds to `members` (once per t) the ops of `home` joined to `cone` that neither are nor depend
  // on (on `original`, Layout ops included: L1) an op of `later_roots`.
  void Join(int home, const std::vector<OpId>& cone, const std::vector<OpId>& later_roots, TensorId t,
            std::vector<OpId>& members);

  int64_t Work() const { return work_; }

 private:
  const Problem& problem_;
  const Problem& original_;
  const Analysis& analysis_;
  const Built& built_;
  std::vector<std::vector<OpId>> ordered_;  // per island, its ops in topological order
  std::vector<int64_t> later_, reaches_, joined_, in_union_, in_cone_;
  std::vector<char> reaches_matmul_;
  std::vector<OpId> stack_, cone_;
  int64_t pass_ = 0;
  int64_t work_ = 0;
};

}  // namespace annealer::bound_internal
