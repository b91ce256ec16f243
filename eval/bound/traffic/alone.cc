#include "eval/bound/traffic/alone.h"

#include <algorithm>
#include <limits>

namespace annealer::bound_internal {

bool g_lone_matmul_floor = true;
bool g_alone_loads = true;

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
                         bool rhs_retained, bool output_retained, double epilogue, bool fit_memory) {
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
  // H1-H4 as the oracle checks them at the first k-step of tile 0 (whole rows and columns, a
  // whole k: n_k >= 2), which every traversal visits: H3's sides; the staging of the operand slices
  // that are loaded (a retained one or a weight-path one counts in no role, R5, H6) and the
  // accumulator of the output tile, with H2's doubling and H4's factor. H4's wide write-back
  // widens the write of the output, x being the sink when it is written. A forbidden shape is no
  // subgraph's, so the least over the others is still a floor.
  const ChipRules& rules = problem.chip;
  const bool lhs_staged = !lhs_retained && !lhs_weight, rhs_staged = !rhs_retained && !rhs_weight;
  const auto roles_fit = [&](Elements hr, Elements wc, Elements k) {
    RoleUse use;
    use.staging = (lhs_staged ? hr * k : 0) + (rhs_staged ? k * wc : 0);
    use.accumulator = hr * wc;
    const RoleFootprints f = Footprints(rules, use);
    return (rules.staging_capacity <= 0 || f.staging <= rules.staging_capacity) &&
           (rules.accumulator_capacity <= 0 || f.accumulator <= rules.accumulator_capacity);
  };
  const Elements write_width = rules.wide_writeback ? rules.accumulator_factor : 1;
  // A step's compute (C2) and memory time (the slices it loads unless retained, M1 never reuses
  // one here; the last step also writes the tile unless the output is retained, M2).
  struct Terms {
    double compute = 0, memory = 0;
  };
  const auto step = [&](Elements hr, Elements wc, Elements k, bool last) {
    Terms terms;
    terms.compute = base * static_cast<double>(k) / static_cast<double>(reduction);
    double on_weight = 0, other = 0;
    const auto load = [&](bool retained, bool weight, Elements elements) {
      if (retained) return;
      (weight ? on_weight : other) += static_cast<double>(elements);
    };
    load(lhs_retained, lhs_weight, hr * k);
    load(rhs_retained, rhs_weight, k * wc);
    if (last && !output_retained) other += static_cast<double>(hr * wc * write_width);
    terms.memory = two_paths ? std::max(on_weight / weight_bandwidth, other / bandwidth) : (on_weight + other) / bandwidth;
    return terms;
  };
  // The epilogue ops that share the subgraph fire at each tile's last step (C4): `gamma` of
  // their base per tile, between 0 and `epilogue`; the rest run elsewhere, at least base x native
  // tiles each (P7). For one shape the sum is convex in gamma, least at 0, `epilogue` or where a
  // tile class's last step turns from memory- to compute-bound.
  const auto native_tiles = static_cast<double>(problem.NativeTiles(x));
  // Whole-grid sums bound a shape from below (a sum of maxima is at least the max of the sums):
  // shapes whose sums already reach the best so far are skipped. Large sides first, where the
  // operands stream least, find a good shape early.
  const auto path_time = [&](double on_weight, double other) {
    return two_paths ? std::max(on_weight / weight_bandwidth, other / bandwidth) : (on_weight + other) / bandwidth;
  };
  const double written = output_retained ? 0.0 : static_cast<double>(rows * cols * write_width);
  double least = std::numeric_limits<double>::infinity();
  for (Elements h = std::min(n, rows); h >= 1; --h) {
    if (!SideAllowed(rules, SideAxis::kH, h, rows)) continue;
    const auto row_tiles = static_cast<double>(CeilDiv(rows, h));
    const double rhs_total = rhs_retained ? 0.0 : static_cast<double>(reduction * cols) * row_tiles;
    if (path_time(rhs_weight ? rhs_total : 0, rhs_weight ? 0 : rhs_total) >= least) continue;
    const Elements full_rows = rows / h, rest_rows = rows % h;
    for (Elements w = std::min(n, cols); w >= 1; --w) {
      if (!SideAllowed(rules, SideAxis::kW, w, cols)) continue;
      const auto col_tiles = static_cast<double>(CeilDiv(cols, w));
      const double lhs_total = lhs_retained ? 0.0 : static_cast<double>(rows * reduction) * col_tiles;
      double on_weight = 0, other = written;
      (lhs_weight ? on_weight : other) += lhs_total;
      (rhs_weight ? on_weight : other) += rhs_total;
      // Each tile computes base + gamma, the epilogue ops elsewhere the rest (tiles >= native).
      if (std::max(base * row_tiles * col_tiles + epilogue * native_tiles, path_time(on_weight, other)) >= least) continue;
      const Elements full_cols = cols / w, rest_cols = cols % w;
      for (Elements k = std::min(n, reduction); k >= 1; --k) {
        if (!SideAllowed(rules, SideAxis::kK, k, reduction) || !roles_fit(h, w, k)) continue;
        // P30 (W): tile 0's first step holds the sink's tile (or its retained whole) and x's
        // operand slices (or their retained wholes; a weight slice on H6's path counts in no
        // fast-memory term); with epilogue ops beside x (gamma > 0) x's output is consumed inside,
        // so its accumulator (n_k >= 2, W4) is one more tile.
        bool epilogue_fits = true;
        if (fit_memory) {
          const Elements one = h * w + (lhs_weight ? 0 : h * k) + (rhs_weight ? 0 : k * w);
          if (one > problem.fast_memory_capacity) continue;
          epilogue_fits = one + h * w <= problem.fast_memory_capacity;
        }
        const Elements steps = CeilDiv(reduction, k);
        const Elements k_last = reduction - (steps - 1) * k;
        // Up to four tile classes (full or clipped rows x columns): count, inner steps' sum, last step.
        struct Class {
          double count = 0, inner = 0;
          Terms last;
        };
        Class classes[4];
        int used = 0;
        const auto add = [&](double count, Elements hr, Elements wc) {
          const Terms inner = step(hr, wc, k, false);
          classes[used++] = {count, static_cast<double>(steps - 1) * std::max(inner.compute, inner.memory),
                             step(hr, wc, k_last, true)};
        };
        add(static_cast<double>(full_rows * full_cols), h, w);
        if (rest_cols > 0) add(static_cast<double>(full_rows), h, rest_cols);
        if (rest_rows > 0) add(static_cast<double>(full_cols), rest_rows, w);
        if (rest_rows > 0 && rest_cols > 0) add(1, rest_rows, rest_cols);
        const auto total = [&](double gamma) {
          double sum = (epilogue - gamma) * native_tiles;
          for (int c = 0; c < used; ++c) {
            sum += classes[c].count * (classes[c].inner + std::max(classes[c].last.compute + gamma, classes[c].last.memory));
          }
          return sum;
        };
        least = std::min(least, total(0));
        if (!epilogue_fits) continue;
        least = std::min(least, total(epilogue));
        for (int c = 0; c < used; ++c) {
          const double turn = classes[c].last.memory - classes[c].last.compute;
          if (turn > 0 && turn < epilogue) least = std::min(least, total(turn));
        }
      }
    }
  }
  // No shape allowed: no schedule runs x at this retention; claim nothing rather than infinity.
  return least == std::numeric_limits<double>::infinity() ? 0.0 : least;
}

// H5 lowers a step below its max only by the loads of slices whose every role is
// double-buffered; x's operand slices play only the staging role (no epilogue op reads them:
// it would feed x, a prologue), so without double-buffered staging every step pays its max.
static bool PrefetchHides(const Problem& problem) { return problem.chip.prefetch && problem.chip.double_staging; }

AloneFloor LoneMatMulFloor(const Problem& problem, OpId x, const std::vector<char>& weights) {
  AloneFloor floor;
  const Op& op = problem.ops[x];
  if (!g_lone_matmul_floor || op.kind != OpKind::MatMul || PrefetchHides(problem)) return floor;
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

AloneFloor IslandFloor(const Problem& problem, const std::vector<OpId>& island, const std::vector<char>& weights) {
  if (island.size() == 1) return LoneMatMulFloor(problem, island[0], weights);
  AloneFloor floor;
  if (!g_lone_matmul_floor || PrefetchHides(problem)) return floor;
  // One MatMul x, the rest Pointwise ops whose every input is made inside the island (E).
  OpId x = kNoOp;
  double epilogue = 0;
  std::vector<char> inside(problem.ops.size(), 0);
  for (OpId op : island) inside[op] = 1;
  for (OpId op : island) {
    const Op& o = problem.ops[op];
    if (o.kind == OpKind::MatMul) {
      if (x != kNoOp) return floor;
      x = op;
      continue;
    }
    if (o.kind != OpKind::Pointwise) return floor;
    for (TensorId t : o.inputs) {
      if (problem.producer[t] == kNoOp || !inside[problem.producer[t]]) return floor;
    }
    epilogue += o.base_cost;
  }
  if (x == kNoOp || problem.ReductionLength(x) <= problem.native) return floor;
  const Op& mm = problem.ops[x];
  if (mm.inputs[0] == mm.inputs[1]) return floor;
  // Inputs made elsewhere may be retained when they fit, and no write is counted unless every
  // op's output is too large to retain: a floor at its least. P30: an input too large to retain
  // is loaded slice by slice as in the first form (R5, M1), and when no output of the island can
  // be retained, the sinks of the subgraph that runs x write their tiles at each tile's last step
  // (M2; x's own write at the narrow width, which a Pointwise sink has, H4).
  const auto fits = [&](TensorId t) { return problem.tensors[t].size() + 1 <= problem.fast_memory_capacity; };
  const auto kept = [&](TensorId t) { return problem.producer[t] != kNoOp && (!g_alone_loads || fits(t)); };
  bool written = g_alone_loads && !problem.chip.wide_writeback;
  for (OpId op : island) written = written && !fits(problem.ops[op].output);
  floor.valid = true;
  floor.compute_point_only = true;
  floor.options.push_back(
      {LoneMatMulLatency(problem, x, weights, kept(mm.inputs[0]), kept(mm.inputs[1]), !written, epilogue, g_alone_loads), 0});
  return floor;
}

}  // namespace annealer::bound_internal
