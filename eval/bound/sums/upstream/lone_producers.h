// P55, the lone producers of a P40 claimant (eval/bound/bounds.h states the fact, docs/lower-bound.md,
// "The lone producers of an LHS-strip sum (P55)", proves it).
#pragma once

#include "eval/bound/analysis.h"
#include "eval/bound/sums/upstream/upstream_sums.h"
#include "eval/model/problem.h"

namespace annealer::bound_internal {

// P55 (V5, V7, V8, V11, M2, R5, G3, P21, P31, in P40's frame). A claimant s's designated input o_x
// is too large to retain and read by s alone, so wherever s runs without its producer x (j of the
// m producers fused: any configuration of P23, P34 or P40), o_x was written by a subgraph S_x in
// which x is a sink (V7, M2) and s is not. When x has K > n, its LHS is a graph input or made by a
// Pointwise op, and its RHS is a graph input: x is a sink MatMul, so in the k-loop, k-split
// (k <= n < K), and V11 keeps a Pointwise LHS producer out; so x has no internal edge and
// S_x = {x} (V5; a shared input connects nothing). S_x holds no claimant and x's price c_x alone,
// and costs at least P21's lone price L_x (P31's form: output written, RHS loaded, the LHS loaded or
// retained when it has a producer and fits), at every weight: x claims L_x - c_x there. The unfused
// producers are distinct ops with distinct sink instances, so each configuration with j fused adds
// the m - j least floors to its three values (in P40's value; P46 reads the configurations
// without them, since its instances may share one S_x). Not derived with prefetch into
// double-buffered staging (H5 undercuts P21) nor with a weight path (P40 claims nothing there).
extern bool g_lone_producers;  // test switch: false adds no floor

// Fills each claimant's lone_floors (ascending; empty when none is positive).
void LoneProducerFloors(const Problem& problem, const Analysis& modes, UpstreamSums& part);

}  // namespace annealer::bound_internal
