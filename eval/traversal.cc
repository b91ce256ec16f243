#include "eval/traversal.h"

namespace annealer {

std::string_view TraversalName(TraversalPattern pattern) {
  switch (pattern) {
    case TraversalPattern::kRaster: return "raster";
    case TraversalPattern::kRowSnake: return "row-snake";
    case TraversalPattern::kColumnMajor: return "column-major";
    case TraversalPattern::kColumnSnake: return "column-snake";
  }
  return "?";
}

std::optional<std::vector<int64_t>> MakeTraversal(TraversalPattern pattern, int64_t rows,
                                                  int64_t cols) {
  if (pattern == TraversalPattern::kRaster) return std::nullopt;
  std::vector<int64_t> order;
  order.reserve(rows * cols);
  const bool by_rows = pattern == TraversalPattern::kRowSnake;
  const bool snake = pattern != TraversalPattern::kColumnMajor;
  const int64_t outer = by_rows ? rows : cols;
  const int64_t inner = by_rows ? cols : rows;
  for (int64_t a = 0; a < outer; ++a) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t b = snake && a % 2 == 1 ? inner - 1 - i : i;
      order.push_back(by_rows ? a * cols + b : b * cols + a);
    }
  }
  return order;
}

}  // namespace annealer
