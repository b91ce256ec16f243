#include "eval/model/traversal.h"

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

bool IsTraversal(TraversalPattern pattern, int64_t rows, int64_t cols,
                 const std::optional<std::vector<int64_t>>& order) {
  if (pattern == TraversalPattern::kRaster) return !order.has_value();
  if (!order.has_value()) return false;
  // MakeTraversal's size: rows * cols entries, none when either count is not positive.
  const int64_t size = rows > 0 && cols > 0 ? rows * cols : 0;
  if (static_cast<int64_t>(order->size()) != size) return false;
  const bool by_rows = pattern == TraversalPattern::kRowSnake;
  const bool snake = pattern != TraversalPattern::kColumnMajor;
  const int64_t outer = by_rows ? rows : cols;
  const int64_t inner = by_rows ? cols : rows;
  const int64_t* entry = order->data();
  for (int64_t a = 0; a < outer; ++a) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t b = snake && a % 2 == 1 ? inner - 1 - i : i;
      if (*entry++ != (by_rows ? a * cols + b : b * cols + a)) return false;
    }
  }
  return true;
}

bool IsIndexOrder(TraversalPattern pattern, int64_t rows, int64_t cols) {
  // Row r of a row snake runs backwards when r is odd, and a column order visits tile `cols`
  // second: only one row or one column leaves nothing to reorder.
  return pattern != TraversalPattern::kRaster && (rows <= 1 || cols <= 1);
}

}  // namespace annealer
