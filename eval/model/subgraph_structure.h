// The rules a subgraph must obey on its own — spec V1 (local part), V2, V6, L1 (local part),
// V5, V8, V12, G3, V3, V11, V10, H3 (the chip's tile base, eval/model/chip_rules.h), checked in that
// order — and the roles they reveal: sinks, the k-loop MatMuls F with their reduction length K*,
// the epilogue ops, the tile grid. The oracle and the fast path both start here, so they report
// the same first violation with the same words.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "eval/model/evaluation.h"
#include "eval/model/problem.h"
#include "eval/model/schedule.h"

namespace annealer {

// Within a scope on its thread, the granularity's checks (CheckGranularityRange,
// AnalyseGranularity) and a pricing's memory failures (eval/cost/subgraph_cost.h) give a violation its
// rule but no words (an empty detail): for callers that keep only whether a context is valid
// or which rule it breaks (CostCache::LookupValid, NoGranularityFits), which spares building
// the words of the many candidates a granularity fit tries that fail (V11 on most k-splits of
// a network). Scopes nest. Nothing that is remembered beyond the call may be derived inside one.
class ViolationWordsOff {
 public:
  ViolationWordsOff() { ++depth_; }
  ~ViolationWordsOff() { --depth_; }
  ViolationWordsOff(const ViolationWordsOff&) = delete;
  ViolationWordsOff& operator=(const ViolationWordsOff&) = delete;
  static bool Wanted() { return depth_ == 0; }

 private:
  static inline thread_local int depth_ = 0;
};

struct SubgraphStructure {
  std::vector<int32_t> in_subgraph; // per op of the problem: its position in the op list + 1, or 0
  std::vector<OpId> marked;         // the ops set in in_subgraph: a reuse clears only those
  std::vector<OpId> sinks;          // ops whose output is not consumed inside (spec A.4)
  std::vector<OpId> k_loop_matmuls; // F (spec G3), ascending ids
  std::vector<OpId> epilogue_ops;   // Pointwise ops reached from a sink through Pointwise ops
  // The sink is a Layout op, alone in the subgraph (spec L4): each tile loads its region of the
  // op's output and writes it.
  bool layout_sink = false;
  Elements reduction = 0;           // K*, 0 when F is empty
  Elements output_height = 0;       // the sinks' common output shape (spec G2)
  Elements output_width = 0;
  int64_t rows = 0;                 // tile grid
  int64_t cols = 0;

  bool Contains(OpId op) const { return in_subgraph[op] != 0; }
  bool Produces(const Problem& problem, TensorId t) const {
    const OpId p = problem.producer[t];
    return p != kNoOp && Contains(p);
  }
  // A region of t that a step needs is loaded (a slice request), not derived from its producer:
  // t is a boundary input, or the output of a Layout op of the subgraph (spec D4, L2).
  bool Gathered(const Problem& problem, TensorId t) const {
    const OpId p = problem.producer[t];
    return p == kNoOp || !Contains(p) || problem.ops[p].kind == OpKind::Layout;
  }
  bool ConsumesInside(const Problem& problem, TensorId t) const {
    for (OpId c : problem.consumers[t]) {
      if (Contains(c)) return true;
    }
    return false;
  }

  // Buffers of Analyse, kept so that a reused structure allocates nothing.
  std::vector<int> component;
  std::vector<char> seen;           // per position in the op list
  std::vector<OpId> chain;
  std::vector<char> used_tiles;
};

// Fills `structure` (reusing its buffers) and returns nullopt when `subgraph` obeys every rule
// above, otherwise the first one it breaks (always Verdict::kInvalid; subgraph index unset).
std::optional<Violation> AnalyseSubgraph(const Problem& problem, const Subgraph& subgraph,
                                         SubgraphStructure& structure);

// AnalyseSubgraph in three parts, for a caller that prices one op list at many granularities:
// AnalyseContext checks and derives what does not depend on the granularity or traversal (V1,
// then V6, L1, V5, V8, V12, G3: sinks, F, K*, epilogue, output shape), CheckGranularityRange is
// V2, AnalyseGranularity the rest (V3, V11, the grid and V10, H3) on a structure AnalyseContext
// filled without a violation. AnalyseSubgraph is: a V1 failure of AnalyseContext, else V2, else
// AnalyseContext's failure, else AnalyseGranularity. A structure AnalyseContext filled for an op
// list and retain set stays valid for any granularity and traversal of them until it is reused.
std::optional<Violation> AnalyseContext(const Problem& problem, const Subgraph& subgraph,
                                        SubgraphStructure& structure);
std::optional<Violation> CheckGranularityRange(const Problem& problem, const Granularity& granularity);
std::optional<Violation> AnalyseGranularity(const Problem& problem, const Subgraph& subgraph,
                                            SubgraphStructure& structure);

// The context a subgraph is priced in: `retained_in` (tensors_to_retain of the previous
// subgraph) must hold tensor ids, else V8 naming the bad entry. A whole-schedule evaluation
// never gets that far (the previous subgraph fails V8 first), but the batch and incremental
// evaluators price every subgraph before they know; both pricers check this right after
// AnalyseSubgraph so that neither reads outside the tensor table.
std::optional<Violation> CheckRetainedIn(const Problem& problem, const std::vector<TensorId>& retained_in);

// The subgraphs of `schedule` (valid ones: their structure must analyse) whose tiles do not all
// fit their tensors: a side that does not divide the output width or height, or a k that does
// not divide K*. Their latency rests on spec O9 (edge tiles transfer clipped slices, compute in
// full), a reading the official evaluator might not share; with sides that divide every
// dimension all readings agree.
std::vector<int> SubgraphsWithPartialEdgeTiles(const Problem& problem, const Schedule& schedule);
// One line saying so, for the user: "subgraphs 3, 7 have partial edge tiles ...".
std::string PartialEdgeTilesNote(const std::vector<int>& subgraphs);

}  // namespace annealer
