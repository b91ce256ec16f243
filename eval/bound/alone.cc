#include "eval/bound/alone.h"

#include <algorithm>
#include <limits>

namespace annealer::bound_internal {

bool g_lone_matmul_floor = true;

double AloneFloor::Least() const {
  double least = std::numeric_limits<double>::infinity();
  for (const Option& o : options) least = std::min(least, o.latency);
  return least;
}

double AloneFloor::LeastApart(double share, double bandwidth) const {
  double least = std::numeric_limits<double>::infinity();
  for (const Option& o : options) {
    least = std::min(least, o.latency - share * static_cast<double>(o.claimed) / bandwidth);
  }
  return least;
}

double LoneMatMulLatency(const Problem& problem, OpId x, const std::vector<char>& weights, bool lhs_retained,
                         bool rhs_retained, bool output_retained) {
  const Op& op = problem.ops[x];
  const Tensor& out = problem.tensors[op.output];
  const Elements rows = out.height, cols = out.width, reduction = problem.ReductionLength(x);
  const Elements n = problem.native;
  const double base = op.base_cost;
  const double bandwidth = problem.slow_memory_bandwidth;
  const bool two_paths = problem.chip.two_paths();
  const double weight_bandwidth = two_paths ? problem.chip.weight_bandwidth : bandwidth;
  // Per operand: elements per unit of (rows or columns) x k, and whether they take the weight
  // path (H6: a weight is a graph input, never retained, V8).
  const bool lhs_weight = two_paths && weights[op.inputs[0]];
  const bool rhs_weight = two_paths && weights[op.inputs[1]];
  const auto step = [&](Elements hr, Elements wc, Elements k, bool last) {
    const double compute = base * static_cast<double>(k) / static_cast<double>(reduction);  // C2
    double on_weight = 0, other = 0;
    const auto load = [&](bool retained, bool weight, Elements elements) {
      if (retained) return;
      (weight ? on_weight : other) += static_cast<double>(elements);
    };
    load(lhs_retained, lhs_weight, hr * k);
    load(rhs_retained, rhs_weight, k * wc);
    if (last && !output_retained) other += static_cast<double>(hr * wc);  // M2
    const double memory = two_paths ? std::max(on_weight / weight_bandwidth, other / bandwidth)
                                    : (on_weight + other) / bandwidth;
    return std::max(compute, memory);  // T1
  };
  // Whole-grid sums bound a shape from below (a sum of maxima is at least the max of the sums):
  // shapes whose sums already reach the best so far are skipped. Large sides first, where the
  // operands stream least, find a good shape early.
  const auto path_time = [&](double on_weight, double other) {
    return two_paths ? std::max(on_weight / weight_bandwidth, other / bandwidth) : (on_weight + other) / bandwidth;
  };
  const double written = output_retained ? 0.0 : static_cast<double>(rows * cols);
  double least = std::numeric_limits<double>::infinity();
  for (Elements h = std::min(n, rows); h >= 1; --h) {
    const auto row_tiles = static_cast<double>(CeilDiv(rows, h));
    const double rhs_total = rhs_retained ? 0.0 : static_cast<double>(reduction * cols) * row_tiles;
    if (path_time(rhs_weight ? rhs_total : 0, rhs_weight ? 0 : rhs_total) >= least) continue;
    const Elements full_rows = rows / h, rest_rows = rows % h;
    for (Elements w = std::min(n, cols); w >= 1; --w) {
      const auto col_tiles = static_cast<double>(CeilDiv(cols, w));
      const double lhs_total = lhs_retained ? 0.0 : static_cast<double>(rows * reduction) * col_tiles;
      double on_weight = 0, other = written;
      (lhs_weight ? on_weight : other) += lhs_total;
      (rhs_weight ? on_weight : other) += rhs_total;
      if (std::max(base * row_tiles * col_tiles, path_time(on_weight, other)) >= least) continue;
      const Elements full_cols = cols / w, rest_cols = cols % w;
      for (Elements k = std::min(n, reduction); k >= 1; --k) {
        const Elements steps = CeilDiv(reduction, k);
        const Elements k_last = reduction - (steps - 1) * k;
        const auto tile = [&](Elements hr, Elements wc) {
          return static_cast<double>(steps - 1) * step(hr, wc, k, false) + step(hr, wc, k_last, true);
        };
        double total = static_cast<double>(full_rows * full_cols) * tile(h, w);
        if (rest_cols > 0) total += static_cast<double>(full_rows) * tile(h, rest_cols);
        if (rest_rows > 0) total += static_cast<double>(full_cols) * tile(rest_rows, w);
        if (rest_rows > 0 && rest_cols > 0) total += tile(rest_rows, rest_cols);
        least = std::min(least, total);
      }
    }
  }
  return least;
}

AloneFloor LoneMatMulFloor(const Problem& problem, OpId x, const std::vector<char>& weights) {
  AloneFloor floor;
  const Op& op = problem.ops[x];
  if (!g_lone_matmul_floor || op.kind != OpKind::MatMul || problem.chip.prefetch) return floor;
  if (problem.ReductionLength(x) <= problem.native || op.inputs[0] == op.inputs[1]) return floor;
  // A tensor small enough to retain, read or produced across islands: P16 counts its loads and
  // writes apart.
  const auto fits = [&](TensorId t) { return problem.tensors[t].size() + 1 <= problem.fast_memory_capacity; };
  const TensorId lhs = op.inputs[0], rhs = op.inputs[1], output = op.output;
  const bool lhs_made = problem.producer[lhs] != kNoOp, rhs_made = problem.producer[rhs] != kNoOp;
  // Retaining the output leaves it out of slow memory (R3): a graph output, or one too large to
  // retain, is written by every instance that can be the island's only one.
  const bool output_may_stay = !problem.consumers[output].empty() && fits(output);
  for (int lhs_kept = 0; lhs_kept <= (lhs_made ? 1 : 0); ++lhs_kept) {
    for (int rhs_kept = 0; rhs_kept <= (rhs_made ? 1 : 0); ++rhs_kept) {
      for (int out_kept = 0; out_kept <= (output_may_stay ? 1 : 0); ++out_kept) {
        AloneFloor::Option option;
        option.latency = LoneMatMulLatency(problem, x, weights, lhs_kept, rhs_kept, out_kept);
        if (!lhs_kept && lhs_made && fits(lhs)) option.claimed += problem.tensors[lhs].size();
        if (!rhs_kept && rhs_made && fits(rhs)) option.claimed += problem.tensors[rhs].size();
        if (!out_kept && output_may_stay) option.claimed += problem.tensors[output].size();
        floor.options.push_back(option);
      }
    }
  }
  floor.valid = true;
  return floor;
}

}  // namespace annealer::bound_internal
