// P18 (eval/bound/tiles.h).
#include "eval/bound/tiles.h"

#include <algorithm>
#include <utility>

namespace annealer::bound_internal {

namespace {

// The lines worth keeping among points (compute C, loads L): a C + (1 - a) L is least, for some
// a in [0, 1], at a point of the lower-left convex hull.
std::vector<Line> Hull(std::vector<std::pair<double, double>> points) {
  std::sort(points.begin(), points.end());
  std::vector<std::pair<double, double>> front;  // C ascending, L strictly descending
  for (const auto& p : points) {
    if (front.empty() || p.second < front.back().second) front.push_back(p);
  }
  std::vector<std::pair<double, double>> hull;
  for (const auto& p : front) {
    while (hull.size() >= 2) {
      const auto& o = hull[hull.size() - 2];
      const auto& q = hull.back();
      // Drop q when it lies on or above the segment o-p.
      const double cross = (q.first - o.first) * (p.second - o.second) - (q.second - o.second) * (p.first - o.first);
      if (cross <= 0) {
        hull.pop_back();
      } else {
        break;
      }
    }
    hull.push_back(p);
  }
  std::vector<Line> lines;
  for (const auto& [c, l] : hull) lines.push_back({l, c});
  return lines;
}

}  // namespace

TileLines TileFloor(const Problem& p, const Analysis& analysis) {
  TileLines result;
  const auto num_ops = static_cast<OpId>(p.ops.size());
  result.lines.assign(num_ops, {});
  if (p.chip.two_paths()) {
    for (auto& l : result.lines) l.push_back({0, 0});
    return result;
  }
  const Elements n = p.native;
  const Elements cap = p.fast_memory_capacity;
  const double bandwidth = p.slow_memory_bandwidth;
  const auto too_large = [&](TensorId t) { return p.tensors[t].size() + 1 > cap; };
  const auto kind_of = [&](TensorId t) { return p.producer[t] == kNoOp ? OpKind::Layout : p.ops[p.producer[t]].kind; };
  // Graph inputs read by y alone (once, P3) and y's graph output (written, V9).
  const auto own = [&](OpId y) {
    Elements e = 0;
    const Op& op = p.ops[y];
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const TensorId t = op.inputs[i];
      if (std::find(op.inputs.begin(), op.inputs.begin() + i, t) != op.inputs.begin() + i) continue;
      if (p.IsGraphInput(t) && p.consumers[t].size() == 1) e += p.tensors[t].size();
    }
    if (p.IsGraphOutput(op.output)) e += p.tensors[op.output].size();
    return e;
  };
  // Same output shape and reduction: the MatMuls that can share a k-loop with x (G3, V12).
  for (OpId x = 0; x < num_ops; ++x) {
    const Op& op = p.ops[x];
    const double native_compute = op.base_cost * static_cast<double>(p.NativeTiles(x));
    if (op.kind == OpKind::Layout) {
      result.lines[x].push_back({0, 0});
      continue;
    }
    if (op.kind != OpKind::MatMul) {
      result.lines[x].push_back({own(x) / bandwidth, native_compute});
      continue;
    }
    const TensorId out = op.output;
    const Elements m = p.tensors[out].height, cols = p.tensors[out].width;
    const Elements k_full = p.ReductionLength(x);
    const bool graph_output = p.IsGraphOutput(out);
    std::vector<std::pair<double, double>> points;
    // Upstream of a k-loop (some mode other than T): its native compute and own loads once.
    bool upstream = false;
    for (int mode = kSL; mode < kModes; ++mode) upstream = upstream || analysis.HasMode(x, mode);
    if (upstream && !graph_output) points.emplace_back(native_compute, own(x) / bandwidth);

    const bool same = op.inputs[0] == op.inputs[1];
    // side 0: LHS (reloaded per column tile), 1: RHS (per row tile).
    struct Side {
      Elements size = 0;
      bool ws_split = false;   // its slice is in every step's working set when k < K
      bool ws_full = false;    // ... when k = K
      bool streamed = false;   // every F request of it is loaded when k < K
      bool once = false;       // loaded at least once when k = K
      Elements share = 1;      // readers that may split its loads
    } side[2];
    for (int s = 0; s < 2; ++s) {
      if (same && s == 1) break;
      const TensorId t = op.inputs[s];
      Side& d = side[s];
      d.size = p.tensors[t].size();
      const OpKind producer = kind_of(t);  // graph inputs read as Layout: neither ephemeral
      const bool input = p.producer[t] == kNoOp;
      d.ws_split = producer != OpKind::MatMul && (producer != OpKind::Pointwise || k_full > n);
      d.ws_full = producer != OpKind::MatMul && producer != OpKind::Pointwise;
      const bool never_retained = input || too_large(t);
      const auto& readers = p.consumers[t];
      bool only_this_side = !same;
      for (OpId c : readers) {
        const Op& cop = p.ops[c];
        only_this_side = only_this_side && cop.kind == OpKind::MatMul && cop.inputs[s] == t && cop.inputs[1 - s] != t;
      }
      const bool never_whole = readers.size() == 1 || too_large(t);
      d.streamed = d.ws_split && never_retained && never_whole && only_this_side;
      d.once = d.ws_full && never_retained && only_this_side;
      d.share = static_cast<Elements>(readers.size());
    }
    const Elements out_size = p.tensors[out].size();
    const bool write = graph_output || too_large(out);
    bool epilogue = false;  // x can be in F without being a sink: a Pointwise op reads it
    for (OpId z : p.consumers[out]) epilogue = epilogue || p.ops[z].kind == OpKind::Pointwise;
    if (graph_output) epilogue = false;  // its picked instance is the writing one, a sink
    const Elements rows_max = std::min(m, n), cols_max = std::min(cols, n);
    const Elements g_max = std::max<Elements>(1, std::max(side[0].share, side[1].share));

    for (int sink = 1; sink >= 0; --sink) {
      if (!sink && !epilogue) continue;
      const double written = sink && write ? static_cast<double>(out_size) : 0.0;
      // k < K: n_k >= 2, every F MatMul holds a tile, operands streamed.
      if (k_full >= 2) {
        for (Elements g = 1; g <= g_max; ++g) {
          const Elements tiles_held = g + (sink ? 0 : 1);
          for (Elements h = 1; h <= rows_max; ++h) {
            const Elements r = h;
            const Elements room = cap - (side[0].ws_split ? r : 0);
            if (room <= 0) break;
            const Elements c = std::min(cols_max, room / (tiles_held * r + (side[1].ws_split ? 1 : 0)));
            if (c < 1) break;
            const Elements col_tiles = CeilDiv(cols, c), row_tiles = CeilDiv(m, h);
            double loads = written;
            if (side[0].streamed) loads += static_cast<double>(side[0].size * col_tiles) / std::min(g, side[0].share);
            if (side[1].streamed) loads += static_cast<double>(side[1].size * row_tiles) / std::min(g, side[1].share);
            points.emplace_back(op.base_cost * static_cast<double>(row_tiles * col_tiles), loads / bandwidth);
          }
        }
      }
      // k = K (only when K <= n): one step per tile, the sink's tile and the full strips.
      if (k_full <= n) {
        double loads = written;
        for (int s = 0; s < 2; ++s) {
          if (side[s].once) loads += static_cast<double>(side[s].size) / side[s].share;
        }
        for (Elements h = 1; h <= rows_max; ++h) {
          const Elements r = h;
          const Elements room = cap - (side[0].ws_full ? r * k_full : 0);
          if (room <= 0) break;
          const Elements c = std::min(cols_max, room / (r + (side[1].ws_full ? k_full : 0)));
          if (c < 1) break;
          points.emplace_back(op.base_cost * static_cast<double>(CeilDiv(m, h) * CeilDiv(cols, c)), loads / bandwidth);
        }
      }
    }
    if (points.empty()) points.emplace_back(native_compute, 0.0);  // no legal tile: any claim holds
    result.lines[x] = Hull(std::move(points));
  }
  result.value = BestOverWeight(result.lines, [](OpId) { return true; });
  return result;
}

}  // namespace annealer::bound_internal
