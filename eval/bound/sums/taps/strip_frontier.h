// P54, what a tap alone at n_k = 1 loads to obtain its LHS strips again (docs/lower-bound.md, "The
// LHS strips a tap obtains again (P54)", proves it; P25 in eval/bound/sums/taps/taps.h uses it).
#pragma once

#include <vector>

#include "eval/bound/analysis.h"
#include "eval/model/problem.h"

namespace annealer::bound_internal {

// P54 (D3, D4, D5, M1, R5, V8, W). A step that asks for a region of a tensor u too large to fit
// (|u| + 1 > capacity: never retained, never asked whole) that no request of the step before
// equals obtains it afresh: it loads it (a boundary input; in the image a Layout op's source too)
// or makes it from the same region of its producer's inputs (a Pointwise or Layout op: every
// input, of u's shape) or, for a MatMul, from the same rows of its LHS, all its columns, and all of
// its RHS.
struct StripFrontier {
  // A full-width row strip asked at a change of row (every request of the step before has that
  // step's rows or all rows): per row, the least total width of the tensors it loads. 0 for a
  // tensor that fits, else the least of its width and what its producer needs (a Pointwise or
  // Layout op: the largest over its inputs of u's shape; a MatMul: its LHS's).
  std::vector<Elements> row_width;
};
StripFrontier RowFrontier(const Problem& problem, const Analysis& modes);

// The least elements a subgraph loads to obtain the k-slices rows x [j k, (j + 1) k) of a sink
// MatMul's LHS `lhs` over `tiles` tiles in `cols` column tiles, n_k >= 2, where no request of a step
// equals one of the step before (each step's k-range differs from the previous step's): per
// tensor u of the LHS's shape too large to fit, loaded `cols` |u| (each row strip once per column
// tile), or made: by a Pointwise or Layout op from the largest of its inputs', by a MatMul y from
// its LHS's full-width rows at each entry into a row (`frontier.row_width`, at least once per row)
// and, when y makes nothing but those k-slices (u read by one op, on the single-reader chain from
// the LHS) and its RHS is a graph input only y reads, that RHS's K_y x k slice every step, K_y |u|
// / height per tile. Deeper than eight producers, nothing.
double SliceLoads(const Problem& problem, const Analysis& modes, const StripFrontier& frontier, TensorId lhs,
                  double tiles, double cols);

// The least elements a sink MatMul at n_k = 1 with R row tiles and C column tiles (of an output
// height x width, reduction `reduction`, native side n) loads beyond the first visit of each row
// strip and each column strip of its operands, when a row strip costs `row_width` per row (the
// frontier above) and a column strip of its weight `reduction` per column (M1, V10): the traversal
// enters a row or a column T + 1 times at least, each of the R rows at most C times, each column
// at most R times, and never one row (column) twice in a row, so the edge strip takes at most half
// of what the others leave. The least over every tile side of the class.
double StripReentries(Elements height, Elements width, Elements reduction, Elements row_width, Elements rows,
                      Elements cols, Elements n);

// Test switch: false leaves P54 out (P25 as before it).
extern bool g_strip_frontier;

}  // namespace annealer::bound_internal
