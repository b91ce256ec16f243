// Named tile traversal orders over a rows x cols grid (tile index = row * cols + col, spec G2).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace annealer {

enum class TraversalPattern {
  kRaster,       // row by row, left to right (the default, spec G5)
  kRowSnake,     // row by row, alternating direction: the row strip stays, one column turns
  kColumnMajor,  // column by column, top to bottom
  kColumnSnake,  // column by column, alternating direction
};

inline constexpr TraversalPattern kAllTraversalPatterns[] = {
    TraversalPattern::kRaster, TraversalPattern::kRowSnake, TraversalPattern::kColumnMajor,
    TraversalPattern::kColumnSnake};

std::string_view TraversalName(TraversalPattern pattern);

// nullopt for raster (written as null), an explicit permutation otherwise.
std::optional<std::vector<int64_t>> MakeTraversal(TraversalPattern pattern, int64_t rows,
                                                  int64_t cols);

// Whether MakeTraversal(pattern, rows, cols) == order, without building it (a move or a fit
// that only asks which named pattern a subgraph's order is would otherwise allocate and fill
// up to four orders of its grid).
bool IsTraversal(TraversalPattern pattern, int64_t rows, int64_t cols,
                 const std::optional<std::vector<int64_t>>& order);

// Whether MakeTraversal(pattern, rows, cols) is the index order (0, 1, 2, ...; raster's
// nullopt is not), for rows, cols >= 0: a named pattern on a grid of at most one row or one
// column.
bool IsIndexOrder(TraversalPattern pattern, int64_t rows, int64_t cols);

}  // namespace annealer
