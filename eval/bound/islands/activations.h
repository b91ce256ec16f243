// P32, activations too large to retain that cross the subgraphs of an island (eval/bound/bounds.h
// states the fact, docs/lower-bound.md, "Activations too large to retain (P32)", proves it).
#pragma once

#include <vector>

#include "eval/bound/analysis.h"

namespace annealer::bound_internal {

// Per tensor: whether every schedule writes it, and only from a sink instance of its producer p
// (P32's write): t is made by p, is no graph output, is too large to retain (P4) and some reader c
// can never share a subgraph with p: c lies in another island (P12), or every mode of c has an
// edge from t that cannot be internal (P1, P2; a subgraph holding both holds the edge p -> c, P9).
// c's subgraph then finds t a boundary input, never retained (R5), so t is in slow memory (V7),
// written whole by an unretained sink instance of p (M2, R3; a sink computes its whole output,
// G2). All 0 when `g_island_activations` is false.
std::vector<char> ForcedWrites(const Problem& problem, const Analysis& a, const Built& built);

// Per island, the elements such tensors are loaded there that no P14 line counts: |t| in each
// island other than p's that reads t, and in p's when a reader there can never share a subgraph
// with p (P3); none for a tensor that P19 streams (its readers' P14 lines count its loads).
std::vector<Elements> IslandActivationLoads(const Problem& problem, const Analysis& a, const Built& built);

// Test-only switch (tests/eval/bound/islands/activations_test.cc): false claims nothing, the bound as before P32. Not
// thread-safe; never set elsewhere.
extern bool g_island_activations;

}  // namespace annealer::bound_internal
