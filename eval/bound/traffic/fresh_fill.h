// P49, the compute that may fill a weight-streaming MatMul's last k-steps (docs/lower-bound.md,
// "The fresh compute that may fill the last k-steps (P49)"). P24 lets the epilogues' compute
// gamma be anything; on a chip with a weight path the islands part may cap it.
#pragma once

#include <limits>
#include <vector>

#include "eval/model/problem.h"

namespace annealer::bound_internal {

// Price an island's subgraphs with only the compute of each op's first instance credited: every
// op has one, so those sum to the island's compute. A subgraph S holding twins of a qualifying
// class (P24) in F holds only them, Layout ops and Pointwise ops of the class; every ancestor of a
// twin y in S has an instance in an earlier subgraph (y's LHS is a boundary input or a Layout
// op's output, produced before S: V7, V8, L1; and so on up), so the first instances in S are
// twins and Pointwise ops of the class that are ancestors of no twin in S. The per-tile compute
// they put on a last step is then at most, for any twin y in S, the bases of the class's Pointwise
// ops that are not ancestors of y: at most the largest of those sums over the class's twins.
// Returns that cap (`class_ops` the class's ops, `twins` its MatMuls that claim), or any value at
// least `enough` once it reaches it (a cap above every breakpoint of delta in gamma binds nothing).
double FreshFillCap(const Problem& problem, const std::vector<OpId>& class_ops, const std::vector<OpId>& twins,
                    double enough = std::numeric_limits<double>::infinity());

// Ablation switch for tests only: false leaves P24's epilogue compute uncapped. Not thread-safe;
// never set elsewhere.
extern bool g_fresh_fill;

}  // namespace annealer::bound_internal
