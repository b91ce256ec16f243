// P12, the islands part of the lower bound (eval/bound/bounds.h states the fact, docs/lower-bound.md
// proves it).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "eval/bound/analysis.h"

namespace annealer::bound_internal {

// What op c moves for its input `slot` in mode m when that input is a boundary input that is
// loaded (P3, P5, P6), with the reason.
using LoadCost = std::function<std::pair<Elements, std::string>(OpId c, int m, int slot)>;

// Fills built.islands, island_of, island_compute, island_traffic and island_weight_traffic.
// `weights`: per tensor, whether it travels H6's weight path.
void Islands(const Problem& problem, const Analysis& a, const LoadCost& load_cost, Built& built,
             const std::vector<char>& weights);

}  // namespace annealer::bound_internal
