// Cheap floors under CostSubgraph's latency of one op list at any granularity, for a fit that
// wants to pass over candidates that cannot beat its best without pricing them: its compute
// (ComputeFloor) and, without chip rules, its memory traffic (MemoryFloor).
//
// Why it holds (docs/cost-model.md, G3, C2, C4, T1): the k-loop MatMuls F (MatMuls reached from
// the sinks through Pointwise ops) each pay base * k_len / K* per k-step, and a tile's k-steps
// cover [0, K*) once, so base per tile; the epilogue ops (the Pointwise ops on that walk) pay base
// once per tile. Other charges only add (C5 keeps the largest of coinciding regions of one op), and
// a step's latency is max(compute, exposed memory) >= compute, also under prefetch (H5) and the
// weight path (H6). So a valid subgraph costs at least per_tile * rows * cols, with rows and cols
// its tile grid (spec G2). Layout ops are never charged (L3).
#pragma once

#include <algorithm>
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

// The traffic every valid pricing of one context (ops, retained_in, retain) moves, in elements,
// by the tile grid and k. Without chip rules a step costs max(compute, memory) (T1), so a
// subgraph costs at least its total memory time (M3: loads and writes add). Counted:
//  - `writes`: the sinks not retained, each written once, tile by tile (M2, R3);
//  - a Layout sink's output, loaded once (L4);
//  - the boundary tensors not retained in (R2) and the outputs of Layout ops in the list (L2),
//    by how every step requests them (D1-D5; the roles by the walk from the sinks, G3): a
//    tensor read in one way only by ops whose regions the walk knows. A step loads a request unless the step before asked for the same slice or
//    the whole tensor (M1), and identical requests of one step are one copy (D5):
//    `lhs`: R x kappa (F's LHS, the Pointwise ops upstream of it): with more than one k-step
//      per tile consecutive steps differ in kappa and none asks for the whole tensor, so every
//      step loads its slice, cols times the tensor; `rhs`: kappa x C likewise, rows times;
//    `per_tile`: [0, K_u) x kappa or kappa x [0, K_u) (an upstream MatMul's input along F's k):
//      with more than one k-step the tensor once per tile, with one the whole tensor each step;
//    `once`: an epilogue op's input (R x C at the last k-step) or an upstream MatMul's other
//      input (R x [0, K_u), [0, K_u) x C): the tiles cover the tensor, and the first request of
//      an element is loaded.
//    With one k-step per tile `lhs` and `rhs` are loaded at least once too, and two
//    consecutive steps are two tiles in another row or another column, so every step but the
//    first loads all its R x kappa slices or all its kappa x C slices: at least the smaller at
//    the grid's narrowest row and column (the last ones).
// All zero under chip rules (H5's prefetch and H6's weight path price memory otherwise).
struct MemoryFloorTerms {
  double writes = 0, once = 0, lhs = 0, rhs = 0, per_tile = 0;
  double lhs_k = 0, rhs_k = 0;  // K* summed over the `lhs` (`rhs`) tensors
  Elements k_star = 0;          // the k-loop's reduction length; 0 without a k-loop MatMul
};
MemoryFloorTerms MemoryFloorTermsOf(const Problem& problem, const std::vector<OpId>& ops,
                                    const std::vector<TensorId>& retained_in,
                                    const std::vector<TensorId>& retain);

// The terms' traffic over the slow memory's bandwidth at sides h x w and k on an output of
// height x width, less the relative 1e-6 of ComputeFloor for the steps' summation.
inline double MemoryFloor(const MemoryFloorTerms& terms, double bandwidth, Elements height, Elements width,
                          Elements h, Elements w, Elements k) {
  const int64_t rows = (height + h - 1) / h, cols = (width + w - 1) / w;
  double inputs = terms.writes + terms.once;
  if (terms.k_star > k) {
    inputs += static_cast<double>(cols) * terms.lhs + static_cast<double>(rows) * terms.rhs +
              static_cast<double>(rows * cols) * terms.per_tile;
  } else {
    const double narrowest_row = static_cast<double>(height - (rows - 1) * h);
    const double narrowest_col = static_cast<double>(width - (cols - 1) * w);
    const double per_step = std::min(narrowest_row * terms.lhs_k, narrowest_col * terms.rhs_k);
    inputs += terms.per_tile + std::max(terms.lhs + terms.rhs, static_cast<double>(rows * cols - 1) * per_step);
  }
  return inputs / bandwidth * (1 - 1e-6);
}

}  // namespace annealer
