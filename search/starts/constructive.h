// Constructive starts that seed the elite pool, and the exact-ish polish of a fixed partition.
//
// - GreedyFusion: from a start schedule, repeatedly merge the producer/consumer subgraph pair
//   with the largest latency gain (estimated on the two subgraphs, confirmed on the whole
//   schedule) until no merge helps.
// - PatternGrouping: one pass in topological order that grows groups along straight chains,
//   epilogues, diamonds and branches (GraphTurbo-style) while the merged tile still fits and
//   does not price worse than the parts; groups are then emitted depth-first (each consumer
//   right after its producer when it is ready) so that retention can fire.
// - Polish: for the given partition and order, refits granularity and traversal of every
//   subgraph (thorough descent) and chooses tensors_to_retain by dynamic programming along the
//   sequence (the cost of subgraph i depends only on the retain sets of i-1 and i).
//
// All return schedules whose validity the caller confirms with its evaluator; `stop` is polled.
#pragma once

#include <functional>

#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"

namespace annealer {

//   From kGreedyBatchFrom (256) subgraphs on, a round commits every merge of its list that
//   still pays on the whole schedule, best estimate first, where no earlier merge of the round
//   has touched its subgraphs (or, for a merge across at most 64 positions, the subgraphs it
//   moves), instead of the one best merge: one merge per round costs a scan of every pair per
//   merge on a long schedule. `batch_from` overrides the threshold (tests compare both ways).
inline constexpr int kGreedyBatchFrom = 256;
Schedule GreedyFusion(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                      const std::function<bool()>& stop, int batch_from = kGreedyBatchFrom);

// - MergeReaderGroups: from a start schedule, the merge-readers move (search/moves/moves.h) at
//   every subgraph and every tensor it loads that three or more ops read, in schedule order,
//   each committed when the whole schedule's total falls, over the schedule until a pass commits
//   nothing (at most `passes`). Pairwise merges, the greedy's, never pay on the way to one
//   subgraph of many readers of one tensor (the producer's recompute pays from the third reader
//   on): on ResNeXt-50 the 32 grouped 1x1 convolutions of a block each loaded the block input.
Schedule MergeReaderGroups(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                           const std::function<bool()>& stop, int passes = 4);

// - GatherTapGroups: from a start schedule, the gather-k-loop move (search/moves/moves.h,
//   GatherKLoopAt) at every subgraph whose Pointwise ops load the outputs of three or more
//   MatMuls of one reduction length (a convolution's taps and their sum), for each such length,
//   in schedule order; the gathered subgraph is then polished alone (a thorough fit, with sides
//   that do not divide their dimension when `partial_edge_tiles`), and the result is committed
//   when the whole schedule's total falls. The move's own fit tries powers of two only, and a
//   tight memory often allows all the taps beside their sum only between two of them (U-Net's
//   18 taps 16384x32 @ 32x32 on mlsys-2026 fit at 120 rows, not 128, and cost 4.7 M at 64 rows
//   against 2.8 M left apart), so the search never accepted the gathered group.
Schedule GatherTapGroups(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                         const std::function<bool()>& stop, bool partial_edge_tiles);

// - RegroupReaderParts: from a start schedule, for every tensor t that three or more ops read
//   (RegroupReaderTensors), the regrouping of its loaders' parts (RegroupReaderPartsAt,
//   search/moves/moves.h) tried with each join and group size on the same schedule, the best
//   committed when the whole schedule's total falls. The split into one part per reader that a
//   regrouping needs costs a load of t per part until the groups form, a valley no single move
//   crosses (ViT's heads: each head's query and value projections with its attention, regrouped
//   into groups of query parts and of value parts that each run the LayerNorm again).
//   `cursor` (optional): the tensors are tried from the one at that index of their list, round
//   it, and it is left at the one being tried when `stop` ended the pass, so that passes cut
//   short by a time budget go on where the last one stopped.
Schedule RegroupReaderParts(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                            const std::function<bool()>& stop, std::size_t* cursor = nullptr);

Schedule PatternGrouping(const Problem& problem, const SubgraphPricer& pricer,
                         const std::function<bool()>& stop);

// Orders groups of ops (each a valid subgraph's op list) depth-first; ties by topological rank.
std::vector<std::vector<OpId>> DepthFirstOrder(const Problem& problem,
                                               std::vector<std::vector<OpId>> groups);

// `partial_edge_tiles`: let the thorough fit pick sides that do not divide their dimension
// (see FitSubgraph). Only subgraphs [begin, end) are polished (end < 0: to the last one): the
// retained-in set of `begin` and the retain set of end - 1 stay as they are, so the rest of
// the schedule keeps its context; a window bounds the work on a long schedule.
Schedule Polish(const Problem& problem, const SubgraphPricer& pricer, const Schedule& schedule,
                const std::function<bool()>& stop, bool partial_edge_tiles, int begin = 0, int end = -1);

}  // namespace annealer
