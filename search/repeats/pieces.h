// The piece start: a graph with nothing (or too little) repeating is cut at the narrow cuts of
// the repeated-block start's order into pieces of a few dozen ops, each piece is searched alone
// as a standalone problem and the pieces' schedules are composed, as the repeated-block start
// composes its blocks (search/repeats/repeats.h; the driver runs both, docs/search.md "The piece
// start"). A search of a piece alone spends all its moves there, where the whole graph's workers
// spread theirs over every piece: on GoogLeNet and Inception-v3 (ascend910-core) pieces searched
// alone ended well below the same ops in a whole-graph search of the same time.
#pragma once

#include <cstdint>

#include "eval/model/problem.h"
#include "search/repeats/repeats.h"

namespace annealer {

struct PieceOptions {
  int64_t max_piece_ops = 64;
  int64_t min_piece_ops = 16;
};

// The pieces in execution order, as a RepeatPlan (equal pieces share a class and are solved
// once). From the repeated-block start's order, each piece is the largest set of a prefix of
// what is left that holds its producers there and exports only tensors no op of it reads
// (condition (a) of eval/model/subproblem.h), over prefixes of up to twice max ops: the one of
// min to max ops that exports the fewest tensors (ties: the largest), until at most max ops are
// left. Empty when some prefix gives no piece (no chain of small pieces: a dense block), when the
// graph is at most one piece long, or when a piece would see a tensor on another H6 path than
// the graph.
RepeatPlan CutIntoPieces(const Problem& problem, const PieceOptions& options = {});

}  // namespace annealer
