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

namespace {

// The entries of line `a` of a named order (a row of a row snake, a column of the others), in
// order: `inner` of them, each handed to `put` until it answers false. The line's direction and
// stride are fixed before its loop (once per line, not per entry, as a tile count of thousands
// on a network made the per-entry form a cost of the search).
struct Line {
  int64_t first, stride;  // entry i of the line is first + i * stride
};
Line LineOf(bool by_rows, bool reversed, int64_t a, int64_t inner, int64_t cols) {
  return {by_rows ? a * cols + (reversed ? inner - 1 : 0) : (reversed ? inner - 1 : 0) * cols + a,
          (by_rows ? 1 : cols) * (reversed ? -1 : 1)};
}

template <typename Put>
bool ForEachInLine(bool by_rows, bool reversed, int64_t a, int64_t inner, int64_t cols, Put put) {
  const auto [first, stride] = LineOf(by_rows, reversed, a, inner, cols);
  int64_t value = first;
  for (int64_t i = 0; i < inner; ++i, value += stride) {
    if (!put(value)) return false;
  }
  return true;
}

}  // namespace

std::optional<std::vector<int64_t>> MakeTraversal(TraversalPattern pattern, int64_t rows,
                                                  int64_t cols) {
  if (pattern == TraversalPattern::kRaster) return std::nullopt;
  const bool by_rows = pattern == TraversalPattern::kRowSnake;
  const bool snake = pattern != TraversalPattern::kColumnMajor;
  const int64_t outer = by_rows ? rows : cols;
  const int64_t inner = by_rows ? cols : rows;
  std::vector<int64_t> order(static_cast<size_t>(outer > 0 && inner > 0 ? outer * inner : 0));
  int64_t* out = order.data();
  for (int64_t a = 0; a < outer; ++a) {
    ForEachInLine(by_rows, snake && a % 2 == 1, a, inner, cols, [&](int64_t v) {
      *out++ = v;
      return true;
    });
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
  if (size == 0) return true;
  const bool by_rows = pattern == TraversalPattern::kRowSnake;
  const bool snake = pattern != TraversalPattern::kColumnMajor;
  const int64_t outer = by_rows ? rows : cols;
  const int64_t inner = by_rows ? cols : rows;
  const int64_t* entry = order->data();
  for (int64_t a = 0; a < outer; ++a, entry += inner) {
    const auto [first, stride] = LineOf(by_rows, snake && a % 2 == 1, a, inner, cols);
    // Another named order of the grid differs at a line's first or second entry (a fit asks
    // each pattern in turn), so those two are told first; the rest of the line is compared
    // without a branch per entry, which the compiler vectorises (a match reads every entry).
    if (entry[0] != first || (inner > 1 && entry[1] != first + stride)) return false;
    uint64_t differs = 0;
    int64_t expected = first + 2 * stride;
    for (int64_t i = 2; i < inner; ++i, expected += stride) differs |= static_cast<uint64_t>(entry[i] ^ expected);
    if (differs != 0) return false;
  }
  return true;
}

bool IsIndexOrder(TraversalPattern pattern, int64_t rows, int64_t cols) {
  // Row r of a row snake runs backwards when r is odd, and a column order visits tile `cols`
  // second: only one row or one column leaves nothing to reorder.
  return pattern != TraversalPattern::kRaster && (rows <= 1 || cols <= 1);
}

}  // namespace annealer
