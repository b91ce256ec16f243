// P51, the weight a MatMul loads whole wherever it runs upstream of a k-loop (docs/lower-bound.md,
// "The whole weight of an upstream instance (P51)"). P24 prices a candidate's instance upstream of
// a k-loop at its compute surplus alone, (f - 1) c_x; under the weight FIFO (H6) that instance's
// subgraph also loads x's whole weight while every op there runs at least phi times its native
// compute, so its bracket is larger.
#pragma once

#include "eval/model/problem.h"

namespace annealer::bound_internal {

// The surplus an upstream instance of candidate x leaves in its subgraph's P24 bracket at alpha = 1
// (the bracket is at least alpha times it): at least `p24` = (f - 1) c_x, `f` x's least upstream
// factor (P24's, FIFO included), `others` the sum of f_y c_y over the other candidates that may claim an
// upstream instance's surplus. Requires P24's preconditions (every Pointwise op keeps its shape) and
// x a candidate on a chip with a weight path (`weight_bandwidth`) and a FIFO; `weights` as P24's.
// Returns `p24` where the part's conditions fail.
double UpstreamWeightSurplus(const Problem& problem, const std::vector<char>& weights, OpId x, double f, double p24,
                             double weight_bandwidth, double others);

// Ablation switch for tests only: false gives (f - 1) c_x (P24's claim). Not thread-safe; never set
// elsewhere.
extern bool g_upstream_weight;

}  // namespace annealer::bound_internal
