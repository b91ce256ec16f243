// The layer-preserving order that the repeated-block start cuts (search/repeats/repeats.h), shared
// with the piece start (search/repeats/pieces.h), which cuts the same order at its narrow cuts
// without asking for repeats.
#pragma once

#include <utility>
#include <vector>

#include "eval/model/problem.h"
#include "search/repeats/repeats.h"

namespace annealer {

// The order, each op's position in it and the width of the cut before each position.
struct Layout {
  std::vector<OpId> order;
  std::vector<int> pos;    // per op
  std::vector<int> width;  // width[p]: tensors produced before position p and consumed at or after
};

// A post-order DFS from the graph's sinks, deepest producer first (repeats.h, step 1).
Layout MakeLayout(const Problem& problem);

// The layout of a given topological order (its positions and cut widths).
Layout LayoutOfOrder(const Problem& problem, std::vector<OpId> order);

// The ops at positions [a, b) of the layout in canonical order (repeats.h, step 3).
std::vector<OpId> CanonicalOrder(const Problem& problem, const Layout& layout, int a, int b);

// Blocks of the given position ranges (in order, covering [0, n)), each as a standalone problem,
// grouped into classes by exact equality; a range that exports a tensor it also consumes is
// merged with the next (repeats.h, step 5). Empty when some block would see a tensor on another
// H6 path than the graph does.
RepeatPlan PlanFromRanges(const Problem& problem, const Layout& layout,
                          const std::vector<std::pair<int, int>>& ranges);

}  // namespace annealer
