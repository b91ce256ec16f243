// P54 (eval/bound/sums/taps/strip_frontier.h).
#include "eval/bound/sums/taps/strip_frontier.h"

#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <utility>

namespace annealer::bound_internal {

bool g_strip_frontier = true;

StripFrontier RowFrontier(const Problem& p, const Analysis& a) {
  StripFrontier f;
  f.row_width.assign(p.tensors.size(), 0);
  const auto of = [&](TensorId u) {
    if (!a.TooLarge(u)) return;  // may be retained, or asked whole the step before (R5, M1)
    const OpId x = p.producer[u];
    const Elements own = p.tensors[u].width;
    if (x == kNoOp) {  // a graph input: loaded (V8)
      f.row_width[u] = own;
      return;
    }
    const Op& op = p.ops[x];
    if (op.kind == OpKind::MatMul) {
      f.row_width[u] = std::min(own, f.row_width[op.inputs[0]]);
      return;
    }
    // The same region of every input of u's shape (D3); the largest is a floor of their union,
    // which shares whatever they are made from (D5).
    Elements made = 0;
    for (TensorId in : op.inputs) {
      if (p.tensors[in].height != p.tensors[u].height || p.tensors[in].width != p.tensors[u].width) continue;
      made = std::max(made, f.row_width[in]);
    }
    f.row_width[u] = std::min(own, made);
  };
  // Graph inputs first (no producer), then each op's output once its inputs are known.
  for (TensorId u = 0; u < static_cast<TensorId>(p.tensors.size()); ++u) {
    if (p.producer[u] == kNoOp) of(u);
  }
  for (OpId x : p.topological_order) of(p.ops[x].output);
  return f;
}

double SliceLoads(const Problem& p, const Analysis& a, const StripFrontier& frontier, TensorId lhs, double tiles,
                  double cols) {
  constexpr int kDepth = 8;
  const std::function<double(TensorId, bool, int)> least = [&](TensorId u, bool chain, int depth) -> double {
    if (!a.TooLarge(u)) return 0;  // may be retained, or asked whole the step before (R5, M1)
    const Tensor& tu = p.tensors[u];
    const double loaded = cols * static_cast<double>(tu.size());
    const OpId x = p.producer[u];
    if (x == kNoOp) return loaded;  // a graph input (V8)
    if (depth >= kDepth) return 0;
    const Op& op = p.ops[x];
    double made = 0;
    if (op.kind == OpKind::MatMul) {
      const TensorId rhs = op.inputs[1];
      const bool own = chain && rhs != op.inputs[0] && p.producer[rhs] == kNoOp && p.consumers[rhs].size() == 1;
      made = static_cast<double>(tu.height * frontier.row_width[op.inputs[0]]) +
             (own ? tiles * static_cast<double>(p.ReductionLength(x) * tu.width) : 0.0);
    } else {
      for (TensorId in : op.inputs) {
        if (p.tensors[in].height != tu.height || p.tensors[in].width != tu.width) continue;
        const bool next = chain && op.kind == OpKind::Pointwise && p.consumers[in].size() == 1;
        made = std::max(made, least(in, next, depth + 1));
      }
    }
    return std::min(loaded, made);
  };
  return least(lhs, true, 0);
}

double StripReentries(Elements height, Elements width, Elements reduction, Elements row_width, Elements rows,
                      Elements cols, Elements n) {
  if (rows < 1 || cols < 1) return 0;
  const double extra = static_cast<double>((rows - 1) * (cols - 1));  // T + 1 - R - C
  if (extra <= 0) return 0;
  // The sides of the class: ceil(height / h) = rows, h <= n (V2); the same for w.
  const auto side_range = [&](Elements length, Elements count) -> std::pair<Elements, Elements> {
    const Elements lo = CeilDiv(length, count);
    const Elements hi = count == 1 ? n : std::min(n, CeilDiv(length, count - 1) - 1);
    return {lo, std::max(lo, hi)};
  };
  const auto [h_lo, h_hi] = side_range(height, rows);
  const auto [w_lo, w_hi] = side_range(width, cols);
  double least = std::numeric_limits<double>::infinity();
  // Re-entries of one kind as (count, elements each), cheapest first: the edge strip (the last,
  // clipped, O9) while the others' first visits let it alternate, then at the mean of the edge and
  // a full strip while each edge re-entry needs another strip's visit between, then full strips.
  const auto segments = [](double entries_each, double others, double edge_cost, double full_cost,
                           std::array<std::pair<double, double>, 3>& out) {
    // entries_each: how often one strip may be entered (the other side's count), others: how
    // many strips besides the edge.
    const double first = std::min(entries_each - 1, others);
    const double paired = std::max(0.0, 2 * (entries_each - 1 - others));
    const double rest = others * (entries_each - 1) - std::max(0.0, entries_each - 1 - others);
    out = {{{first, edge_cost}, {paired, (edge_cost + full_cost) / 2}, {std::max(0.0, rest), full_cost}}};
  };
  for (Elements h = h_lo; h <= h_hi; ++h) {
    const Elements edge_h = height - (rows - 1) * h;
    if (edge_h <= 0) continue;
    for (Elements w = w_lo; w <= w_hi; ++w) {
      const Elements edge_w = width - (cols - 1) * w;
      if (edge_w <= 0) continue;
      std::array<std::pair<double, double>, 6> all;
      std::array<std::pair<double, double>, 3> part;
      segments(static_cast<double>(cols), static_cast<double>(rows - 1), static_cast<double>(edge_h * row_width),
               static_cast<double>(h * row_width), part);
      std::copy(part.begin(), part.end(), all.begin());
      segments(static_cast<double>(rows), static_cast<double>(cols - 1), static_cast<double>(edge_w * reduction),
               static_cast<double>(w * reduction), part);
      std::copy(part.begin(), part.end(), all.begin() + 3);
      std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.second < y.second; });
      double left = extra, cost = 0;
      for (const auto& [count, each] : all) {
        const double take = std::min(left, count);
        cost += take * each;
        left -= take;
      }
      least = std::min(least, cost);
    }
  }
  return least == std::numeric_limits<double>::infinity() ? 0 : least;
}

}  // namespace annealer::bound_internal
