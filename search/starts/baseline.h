// The baselines: every op in its own subgraph, at the granularity and traversal that price it
// lowest. What a kernel-by-kernel compiler produces, without and with activations kept on chip.
#pragma once

#include "eval/model/problem.h"
#include "eval/model/schedule.h"

namespace annealer {

class CostCache;

// How each op's candidate is found. kByShape: an op whose context (alone, after what the
// previous subgraph retained, retaining what it retains) has the shape of an earlier op's
// (equal shape keys, eval/cost/cache_keys.h: an order-preserving relabelling, priced alike at
// every candidate) takes that op's candidate without trying any; ViT-B/16's 1,916 ops then
// search as many candidates as one layer's. kEveryOp tries every op's candidates: the reference
// the tests hold kByShape to, schedule for schedule.
enum class BaselineSharing { kByShape, kEveryOp };

// The spilling baseline: ops in topological order, retaining nothing (every intermediate goes
// to slow memory and comes back). The search's first start.
// Always valid when the problem admits any schedule of single-op subgraphs; throws
// std::runtime_error naming the op when some op fits at no granularity. With `cache` the
// candidates are priced through it (the same answers as CostSubgraph): on a graph of repeated
// layers each layer's ops are then priced once, by their shapes (a hundred pricings per op,
// which at 10,000 ops delayed the first schedule on disk by a third of a second).
Schedule BuildBaseline(const Problem& problem, CostCache* cache = nullptr,
                       BaselineSharing sharing = BaselineSharing::kByShape);

// The resident baseline: still one op per subgraph, but an op's output stays in fast memory for
// the next subgraph (tensors_to_retain, R1-R3) when that subgraph is its only consumer, as a
// kernel-by-kernel compiler with a large on-chip buffer keeps a layer's activations and streams
// only weights. Protocol:
// - the order is ResidentOrder's: a topological order in which a tensor's only consumer follows
//   its producer where the graph allows it (chains stay adjacent);
// - a tensor t of the op at position i is retained only when every consumer of t is the op at
//   position i+1, t is no graph output (a retained tensor is never written, R3/V9) and that
//   consumer is a MatMul or Pointwise op (other kinds may need their input in slow memory);
// - which of those candidates are retained, and each op's tiling, minimise the total exactly
//   over this order (a DP over positions with the retention in and out as state; retaining
//   saves the write and the load but enlarges both working sets, R5, and may force smaller
//   tiles, so it is not always better);
// - never worse than BuildBaseline on the same order (retaining nothing is one of the DP's
//   choices), and every subgraph is priced by the evaluator in its context, so the schedule is
//   valid whenever BuildBaseline's is. Throws as BuildBaseline does.
Schedule BuildResidentBaseline(const Problem& problem, CostCache* cache = nullptr,
                               BaselineSharing sharing = BaselineSharing::kByShape);

// A topological order for the resident baseline: depth-first from the graph outputs, each op
// after its inputs' producers, the producer of its largest sole-consumer input visited last so
// that it runs immediately before the op. Deterministic (ties by id).
std::vector<OpId> ResidentOrder(const Problem& problem);

}  // namespace annealer
