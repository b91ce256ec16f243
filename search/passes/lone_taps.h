// A pass that groups a sum's lone taps with their LHS's producer run again in each group
// (docs/search.md, "Group lone taps").
//
// A convolution's taps are MatMuls of one LHS (a ReLU's output) and different weights, summed by
// one Pointwise op. Where the search leaves each tap alone in a subgraph of its own (DenseNet-121,
// mlsys-2026: a 3×3 convolution's nine taps at [128, 112, 128]), each loads the whole LHS from
// slow memory and is memory-bound. Two taps in one subgraph share the load only when the LHS's
// producer runs in it too (its output is written, so a subgraph of taps alone loads it per
// k-slice of each tap); a move that merges one pair pays the recompute before the load it saves,
// and no single move reaches the grouping of three.
#pragma once

#include <functional>
#include <vector>

#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"

namespace annealer {

// The taps of `sum` grouped by their LHS: each group the partial products of `sum`
// (PartialProducts, search/passes/gather_partials.h) whose first input is one tensor made by a
// Pointwise op, in op order; only groups of two or more.
std::vector<std::vector<OpId>> TapsBySharedLhs(const Problem& problem, OpId sum);

// At every sum in op order and each of its LHS groups: the taps that sit alone in a subgraph of
// their own (in schedule order), cut into runs of q consecutive ones for q = 2 up to all of
// them (until a run has no valid fit); each run one subgraph [the LHS's producer, its taps]
// fitted from the first tap's subgraph, all of them where the first tap was, the subgraphs
// between the taps after them. Where the taps are all the LHS's readers, each q is also tried
// with the producer taken out of the one subgraph before them that runs it (that subgraph gone
// when it held the producer alone, else fitted again). The lowest valid grouping is committed
// when the whole total falls. Only where MergeReadersApplies (never on a contest problem). Deterministic; `stop` is
// polled between tries.
Schedule GroupLoneTaps(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                       const std::function<bool()>& stop);

}  // namespace annealer
