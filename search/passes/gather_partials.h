// A pass that gathers a sum's partial products into the subgraph that runs the sum (docs/search.md,
// "Gather a sum's partial products").
//
// GoogLeNet's inception modules read the previous module's four branch outputs, so each 1×1
// convolution is four MatMuls of four reduction lengths (partial products) summed by one Pointwise
// op. Where the sum runs upstream of a k-loop (a branch's 3×3 taps) the partial products may join
// it (D3), loading the four inputs instead of the products; the 10-s search leaves some of them
// alone, each loading its input and writing its product (tpu-v1: 876-1,460 cycles for 256 of
// compute). Moving one in costs its input's load where the product's load went: the walk sees no
// gain until all of them have moved.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "search/moves/moves.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"

namespace annealer {

// The partial products of `sum`: the MatMuls whose output is no graph output and is read by
// `sum` alone. Empty unless `sum` is a Pointwise op with at least two of them.
std::vector<OpId> PartialProducts(const Problem& problem, OpId sum);

// The edit that moves into subgraph x (which holds `sum`) every partial product of `sum` that x
// does not hold, out of the subgraphs within kPartialWindow before x that hold it (GatherInto,
// search/passes/gather_strays.h). nullopt when none is elsewhere or the span cannot be fitted.
std::optional<ScheduleEdit> GatherPartialsAt(const MoveContext& ctx, const Schedule& s, int x, OpId sum,
                                             bool retain_next);

// GatherPartialsAt at every sum in op order (at the one subgraph that holds it), both ways of
// retaining, each also with the retentions outside the span given back where the edit's repair
// dropped them (a served loader's, which a later load of the tensor does not forbid; that one
// priced whole); the lowest valid one committed when the whole total falls. Leaves the schedule as it is
// where no tensor has three or more reading ops (MergeReadersApplies: never on a contest
// problem). Deterministic; `stop` is polled between tries.
Schedule GatherPartials(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                        const std::function<bool()>& stop);

}  // namespace annealer
