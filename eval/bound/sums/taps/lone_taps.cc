// P33 (eval/bound/sums/taps/lone_taps.h).
#include "eval/bound/sums/taps/lone_taps.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "eval/bound/sums/taps/retained_lhs.h"
#include "eval/model/chip_rules.h"

namespace annealer::bound_internal {

bool g_lone_taps = true;
bool g_retained_lhs = true;
bool g_upstream_lone_sums = true;

namespace {

bool ReadOnlyBy(const Problem& p, TensorId t, OpId reader) {
  for (OpId c : p.consumers[t]) {
    if (c != reader) return false;
  }
  return true;
}

struct Tap {
  double compute = 0;  // c_x
  double own = 0;      // l_x
  double alone = 0;    // max(c_x, L_x)
  double out = 0;      // |o| / B
  bool fits = false;   // |o| + 1 <= capacity
  OpId op = kNoOp;
  TensorId rhs = -1;
  double reduction = 0;  // K
  double least_own = 0;  // its graph inputs it alone reads, once / B: any instance loads them
};

// The sum of the k least values (k <= size).
double Least(std::vector<double> values, int k) {
  std::sort(values.begin(), values.end());
  return std::accumulate(values.begin(), values.begin() + k, 0.0);
}

}  // namespace

LoneTaps LoneTapFloor(const Problem& p, const Analysis& analysis) {
  LoneTaps result;
  const auto num_ops = static_cast<OpId>(p.ops.size());
  const Elements n = p.native;
  const Elements cap = p.fast_memory_capacity;
  const double bandwidth = p.slow_memory_bandwidth;
  std::vector<double> compute(num_ops, 0), own(num_ops, 0);
  for (OpId o = 0; o < num_ops; ++o) {
    if (p.IsLayout(o)) continue;  // L3: no compute; its gathers are no own load here
    compute[o] = p.ops[o].base_cost * static_cast<double>(p.NativeTiles(o));
    const Op& op = p.ops[o];
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const TensorId t = op.inputs[i];
      if (std::find(op.inputs.begin(), op.inputs.begin() + i, t) != op.inputs.begin() + i) continue;
      // A graph input is never retained (V8) and an instance requests all of it (P7): loaded.
      if (p.producer[t] == kNoOp && ReadOnlyBy(p, t, o)) own[o] += static_cast<double>(p.tensors[t].size());
    }
    if (p.IsGraphOutput(op.output)) own[o] += static_cast<double>(p.tensors[op.output].size());  // V9
  }
  for (OpId o = 0; o < num_ops; ++o) own[o] /= bandwidth;
  result.lines.assign(num_ops, {});
  for (OpId o = 0; o < num_ops; ++o) result.lines[o].push_back({own[o], compute[o]});
  std::vector<OpId> all(num_ops);
  std::iota(all.begin(), all.end(), 0);
  if (!g_lone_taps || p.chip.two_paths()) {
    for (OpId o = 0; o < num_ops; ++o) result.lines[o] = {{compute[o], compute[o]}};
    result.value = result.Value(all);
    return result;
  }
  const ChipRules& rules = p.chip;
  const Elements acc_cap = rules.accumulator_capacity;
  const Elements acc_unit = rules.accumulator_factor * (rules.double_accumulator ? 2 : 1);
  const Elements vec_cap = rules.vector_capacity;
  const Elements vec_unit = rules.double_vector ? 2 : 1;
  for (OpId s = 0; s < num_ops; ++s) {
    const Op& op = p.ops[s];
    if (op.kind != OpKind::Pointwise) continue;
    // A sum that may also make an RHS strip or a full region upstream of a k-loop (SR, FL, FR, never
    // SL) takes P39's lines beside P33's; one that may make an LHS strip claims nothing.
    const bool tile_only = analysis.OnlyTileMode(s);
    if (!tile_only && (!g_upstream_lone_sums || analysis.HasMode(s, kSL))) continue;
    std::vector<Tap> taps;
    for (const auto& input : MatMulInputsReadOnlyBy(p, s)) {
      const TensorId t = input.first;  // named apart, not bound: lambdas below may capture them
      const OpId x = input.second;
      if (p.ReductionLength(x) <= n) continue;
      const TensorId lhs = p.ops[x].inputs[0], rhs = p.ops[x].inputs[1];
      if (lhs == rhs || p.producer[rhs] != kNoOp) continue;
      const OpId lhs_producer = p.producer[lhs];
      if (lhs_producer != kNoOp && p.ops[lhs_producer].kind != OpKind::Pointwise) continue;
      const Elements rows = p.tensors[t].height, columns = p.tensors[t].width;
      const auto row_tiles = static_cast<double>(CeilDiv(rows, n)), column_tiles = static_cast<double>(CeilDiv(columns, n));
      // Alone, every k-step loads its slices of both operands (no k-range repeats from one step to
      // the next, M1, D2): the RHS once per row tile, the LHS once per column tile unless retained
      // (only when it has a producer and fits, R5, V8); the output written at each tile's last
      // step (M2). Fewer, larger tiles load less: native tiles load the least.
      const auto size = [&](TensorId u) { return static_cast<double>(p.tensors[u].size()); };
      const bool lhs_retainable = lhs_producer != kNoOp && p.tensors[lhs].size() + 1 <= cap;
      const double alone_memory = (column_tiles * size(lhs) + row_tiles * size(rhs) + size(t)) / bandwidth;
      Tap tap;
      tap.compute = compute[x];
      tap.alone = std::max(tap.compute, alone_memory);
      // Retained, the LHS is read free but held whole in every step: the tiles it leaves (P39).
      if (lhs_retainable) {
        const double retained = g_retained_lhs ? RetainedLhsAlone(p, x)
                                               : std::max(tap.compute, (row_tiles * size(rhs) + size(t)) / bandwidth);
        tap.alone = std::min(tap.alone, retained);
      }
      // l_x: streamed as P5 states wherever x runs (always in a k-loop: alone it is the sink, beside
      // s it is reached from s's sink through Pointwise ops, s being in mode T).
      double streamed = 0;
      if (ReadOnlyBy(p, rhs, x)) streamed += row_tiles * size(rhs);
      if (lhs_producer == kNoOp && ReadOnlyBy(p, lhs, x)) streamed += column_tiles * size(lhs);
      tap.own = streamed / bandwidth;
      tap.out = size(t) / bandwidth;
      tap.fits = p.tensors[t].size() + 1 <= cap;
      tap.op = x;
      tap.rhs = rhs;
      tap.reduction = static_cast<double>(p.ReductionLength(x));
      tap.least_own = own[x];
      taps.push_back(tap);
    }
    if (taps.empty()) continue;
    // P39's fused taps each hold a slice of their own RHS: distinct tensors.
    if (!tile_only) {
      std::vector<TensorId> weights;
      for (const Tap& x : taps) weights.push_back(x.rhs);
      std::sort(weights.begin(), weights.end());
      if (std::adjacent_find(weights.begin(), weights.end()) != weights.end()) continue;
    }
    for (const Tap& x : taps) result.lines[x.op] = {{x.own, x.compute}};
    const auto m = static_cast<int>(taps.size());
    const int escape = std::any_of(taps.begin(), taps.end(), [](const Tap& x) { return x.fits; }) ? 1 : 0;
    const Elements height = p.tensors[op.output].height, width = p.tensors[op.output].width;
    const double native_tiles = static_cast<double>(CeilDiv(height, n) * CeilDiv(width, n));
    // The first instance's own line: a graph output is written by some instance, maybe not this one.
    const double sum_own = own[s] - (p.IsGraphOutput(op.output) ? p.tensors[op.output].size() / bandwidth : 0.0);
    std::vector<double> computes, outs, over_compute, over_own;
    for (const Tap& x : taps) {
      computes.push_back(x.compute);
      outs.push_back(x.out);
      over_compute.push_back(x.alone - x.compute);
      over_own.push_back(x.alone - x.own);
    }
    std::vector<Line> lines;
    for (int j = 0; j <= m; ++j) {
      const int loaded = std::max(0, m - j - escape);
      // P23's step 2' with `loaded` unfused slices: W holds them, the sink tile and the j fused
      // taps' accumulators (n_k >= 2, W4); the accumulator the j regions (H1, H4, H2), the vector
      // buffer the slices and the sink tile; sides H3 allows on s's shape (V12).
      double least_tiles = std::numeric_limits<double>::infinity();
      for (Elements r = 1; r <= std::min(n, height); ++r) {
        if (!SideAllowed(rules, SideAxis::kH, r, height)) continue;
        Elements c = std::min(std::min(n, width), cap / ((loaded + 1 + j) * r));
        if (acc_cap > 0 && j > 0) c = std::min(c, acc_cap / (static_cast<Elements>(j) * r * acc_unit));
        if (vec_cap > 0) c = std::min(c, vec_cap / ((loaded + 1) * r * vec_unit));
        if (c >= 1 && !SideAllowed(rules, SideAxis::kW, c, width)) c = c / rules.base_w * rules.base_w;
        if (c < 1) continue;
        least_tiles = std::min(least_tiles, static_cast<double>(CeilDiv(height, r) * CeilDiv(width, c)));
      }
      if (!(least_tiles < std::numeric_limits<double>::infinity())) continue;  // no S1 holds j of them
      const double tau = std::max(1.0, least_tiles / native_tiles);
      const double fused = compute[s] + Least(computes, j);
      lines.push_back({sum_own + Least(outs, loaded) + Least(over_own, loaded),
                       compute[s] + (tau - 1) * fused + Least(over_compute, loaded)});
    }
    if (!tile_only) {
      // P39: s's first instance with j taps upstream of a k-loop beside it. Each fused tap holds a
      // slice of its RHS K columns deep and as wide as the regions it makes, so those are at most
      // floor(capacity / the j least K) wide; it pays at least UpstreamTapCompute there and loads
      // its own graph inputs at least once (not per row tile: its P5 line is lowered by that).
      std::vector<double> reductions, shortfall;
      for (const Tap& x : taps) {
        reductions.push_back(x.reduction);
        shortfall.push_back(x.least_own - x.own);  // <= 0
      }
      for (int j = 0; j <= m; ++j) {
        const int loaded = std::max(0, m - j - escape);
        double extra = 0;
        if (j > 0) {
          const double columns = std::floor(static_cast<double>(cap) / Least(reductions, j));
          if (columns < 1) break;  // j taps' RHS slices do not fit: nor do more
          std::vector<double> excess;
          for (const Tap& x : taps) {
            excess.push_back(std::max(0.0, UpstreamTapCompute(p, x.op, static_cast<Elements>(columns)) - x.compute));
          }
          extra = Least(excess, j);
        }
        lines.push_back({sum_own + Least(outs, loaded) + Least(over_own, loaded) + Least(shortfall, j),
                         compute[s] + extra + Least(over_compute, loaded)});
      }
    }
    if (lines.empty()) continue;  // s fits in no subgraph: any claim holds
    result.lines[s] = std::move(lines);
    ++result.sums;
    result.taps += m;
  }
  result.value = result.Value(all);
  return result;
}

double LoneTaps::Value(const std::vector<OpId>& ops) const {
  // The selected ops' lines alone, in op order: BestOverWeight's ~80 sums then walk one island,
  // not every op, and add the same terms in the same order (the same value to the bit).
  std::vector<OpId> sorted = ops;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::vector<std::vector<Line>> selected;
  selected.reserve(sorted.size());
  for (OpId o : sorted) selected.push_back(lines[o]);
  return BestOverWeight(selected, [](OpId) { return true; });
}

}  // namespace annealer::bound_internal
