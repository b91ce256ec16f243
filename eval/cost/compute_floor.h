// A cheap floor under CostSubgraph's latency of one op list at any granularity, for a fit that
// wants to pass over candidates that cannot beat its best without pricing them.
//
// Why it holds (docs/cost-model.md, G3, C2, C4, T1): the k-loop MatMuls F (MatMuls reached from
// the sinks through Pointwise ops) each pay base * k_len / K* per k-step, and a tile's k-steps
// cover [0, K*) once, so base per tile; the epilogue ops (the Pointwise ops on that walk) pay base
// once per tile. Other charges only add (C5 keeps the largest of coinciding regions of one op), and
// a step's latency is max(compute, exposed memory) >= compute, also under prefetch (H5) and the
// weight path (H6). So a valid subgraph costs at least per_tile * rows * cols, with rows and cols
// its tile grid (spec G2). Layout ops are never charged (L3).
#pragma once

#include <vector>

#include "eval/model/problem.h"

namespace annealer {

// The base costs of F and the epilogue ops of `ops` summed (0 for an empty list).
double ComputeFloorPerTile(const Problem& problem, const std::vector<OpId>& ops);

// per_tile times the tile count of an output of `height` x `width` at sides `h` x `w`, less a
// relative 1e-6 for the summation rounding of the priced steps (a k-loop's shares of base).
inline double ComputeFloor(double per_tile, Elements height, Elements width, Elements h, Elements w) {
  const int64_t tiles = ((height + h - 1) / h) * ((width + w - 1) / w);
  return per_tile * static_cast<double>(tiles) * (1 - 1e-6);
}

}  // namespace annealer
