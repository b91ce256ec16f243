// P55's second fact, the sink a claimant's mode-T subgraph writes (eval/bound/bounds.h states it,
// docs/lower-bound.md, "The lone producers of an LHS-strip sum (P55)", proves it).
#pragma once

#include "eval/bound/analysis.h"
#include "eval/bound/sums/upstream/upstream_sums.h"
#include "eval/model/problem.h"

namespace annealer::bound_internal {

// P55 (P52 in P40's frame: V12, G2, M2, M3, R5, W, V10). Where a claimant s runs in mode T, it lies on
// a path of Pointwise ops from a sink z of its subgraph, whose grid has s's shape H x W; with
// H W > capacity z's output is never retained, so z writes all of it: H W / B of S_s's memory, which
// P40's T configurations add to their loads' share (v_A, and v_C where it is v_A). z is in s's
// Pointwise closure (the ops reached from s through Pointwise readers); when no other claimant of
// that shape has a closure meeting s's, no other mode-T claimant picked in S_s can have the same sink,
// so the writes are distinct. Not for an output already counted as a graph output (`written`).
extern bool g_strip_sink_writes;  // test switch: false adds no write

// Sets each qualifying claimant's sink_write (|out| / B).
void StripSinkWrites(const Problem& problem, UpstreamSums& part);

}  // namespace annealer::bound_internal
