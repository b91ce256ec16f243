// A pass that gathers an op's siblings into the subgraph that holds most of them (docs/search.md,
// "Gather stray branches").
//
// Where a subgraph runs several alike branches (the heads of an attention layer, each with its
// query projection, key transpose, scores, scale) and one branch's ops sit elsewhere (a head's
// scores with the output projection, its query projection alone), the walk does not bring them
// back: each op moved alone leaves the branch cut in two places, and the subgraphs it leaves
// must be reordered for the branch to join. On the GPT decoder (tpu-v5e) 10-s runs ended there,
// 2.5 % above a 600-s run that holds all six heads in each half of the split layer.
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

// A class per op: ops of one class are the same op of alike parallel branches (same kind,
// output sides and depth from the graph inputs; producers per input position and consumers of
// the same classes, refined a few rounds in both directions). Deterministic, ids from 0.
std::vector<int> SiblingClasses(const Problem& problem);

// The edit that moves into subgraph x every op within kStrayWindow positions of it whose class
// x holds at least twice (the strays), the subgraphs they leave cut into components, the span
// they span reordered topologically (the least original position first among the ready ones).
// With `retain_next`, each changed piece also retains what only the piece after it reads (the
// scores into the softmax half, the heads' outputs into the output projection). nullopt when x
// has no such class, no stray, or the span cannot be ordered or fitted.
std::optional<ScheduleEdit> GatherStraysAt(const MoveContext& ctx, const Schedule& s, int x,
                                           const std::vector<int>& classes, bool retain_next);

// The edit that moves `strays` (ops x does not hold) into subgraph x, out of every subgraph of
// [lo, hi] (which spans x and every subgraph holding a stray), the subgraphs they leave cut into
// components, the span reordered topologically (the least original position first among the
// ready ones); `retain_next` as above. Shared with GatherPartials (search/passes/gather_partials.h).
std::optional<ScheduleEdit> GatherInto(const MoveContext& ctx, const Schedule& s, int x, int lo, int hi,
                                       const std::vector<OpId>& strays, bool retain_next);

// GatherStraysAt at every subgraph in schedule order, each committed when the whole total
// falls. Leaves the schedule as it is where no tensor has three or more reading ops
// (MergeReadersApplies: never on a contest problem). Deterministic; `stop` is polled between tries.
Schedule GatherStrays(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                      const std::function<bool()>& stop);

}  // namespace annealer
