// P18 (eval/bound/traffic/tiles.h).
#include "eval/bound/traffic/tiles.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <utility>

namespace annealer::bound_internal {

bool g_upstream_factor = true;
bool g_upstream_streams = true;
bool g_pointwise_tiles = true;
bool g_epilogue_reader = true;

std::vector<int64_t> ForcedPointwiseTiles(const Problem& p, const Analysis& modes) {
  const auto num_ops = static_cast<OpId>(p.ops.size());
  std::vector<int64_t> tiles(num_ops);
  for (OpId op = 0; op < num_ops; ++op) tiles[op] = p.NativeTiles(op);
  if (!g_pointwise_tiles) return tiles;
  const Elements n = p.native, cap = p.fast_memory_capacity;
  // Output shapes of MatMuls with K <= n: a subgraph of that grid may run its k-loop in one step.
  std::set<std::pair<Elements, Elements>> one_step;
  for (OpId x = 0; x < num_ops; ++x) {
    if (p.ops[x].kind != OpKind::MatMul || p.ReductionLength(x) > n) continue;
    const Tensor& t = p.tensors[p.ops[x].output];
    one_step.insert({t.height, t.width});
  }
  std::map<std::pair<Elements, Elements>, int64_t> least_of;
  for (OpId op = 0; op < num_ops; ++op) {
    if (p.ops[op].kind != OpKind::Pointwise) continue;
    const bool tile_only = modes.OnlyTileMode(op);
    const Tensor& out = p.tensors[p.ops[op].output];
    const std::pair<Elements, Elements> shape{out.height, out.width};
    if (!tile_only || one_step.count(shape) != 0) continue;
    auto it = least_of.find(shape);
    if (it == least_of.end()) {
      // The fewest tiles ceil(H/h) ceil(W/w) over h <= min(n, H), w <= min(n, W), 2 h w <= capacity.
      int64_t least = std::numeric_limits<int64_t>::max();
      for (Elements h = 1; h <= std::min(n, shape.first); ++h) {
        const Elements w = std::min(std::min(n, shape.second), cap / (2 * h));
        if (w < 1) break;
        least = std::min(least, CeilDiv(shape.first, h) * CeilDiv(shape.second, w));
      }
      it = least_of.emplace(shape, least).first;
    }
    // No tile fits: no valid schedule holds the op, and any claim holds; keep the native count.
    if (it->second != std::numeric_limits<int64_t>::max()) tiles[op] = std::max(tiles[op], it->second);
  }
  return tiles;
}

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

TileLines TileFloor(const Problem& p, const Analysis& analysis, const std::vector<int>* island_of) {
  TileLines result;
  const auto num_ops = static_cast<OpId>(p.ops.size());
  result.lines.assign(num_ops, {});
  if (p.chip.two_paths()) {
    for (auto& l : result.lines) l.push_back({0, 0});
    if (island_of != nullptr) result.island_lines = result.lines;
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
  // An output o too large to retain (R5) with a reader e that is no Layout op: a subgraph S_e
  // runs e (V1), and there either the op runs too (o is an internal edge, legal for some mode of
  // e, P9) or S_e loads all of o (P3), which an earlier instance of the op wrote as a sink (V7,
  // M2, R3). `beside`: the op can run in S_e; `load`: S_e's load of o is claimed by this op
  // (only when e is Pointwise: a MatMul reader may claim its loads of o itself). A reader the
  // op cannot run beside is preferred (the write is then forced), a Pointwise one next.
  struct Reader {
    bool exists = false;
    bool beside = true;
    bool load = false;
  };
  const auto reader_of = [&](OpId y, const std::vector<int>* islands) {
    Reader best;
    const TensorId o = p.ops[y].output;
    if (!too_large(o) || p.IsGraphOutput(o)) return best;
    int best_rank = -1;
    for (OpId e : p.consumers[o]) {
      if (p.IsLayout(e)) continue;
      // P27: a reader in another island never runs beside the op (P12), so the op wrote o in
      // its own island; S_e's load of o is that other island's.
      const bool other_island = islands != nullptr && (*islands)[e] != (*islands)[y];
      if (other_island && !g_pointwise_tiles) continue;  // as before P27
      bool can = false;
      const Op& eop = p.ops[e];
      for (int slot = 0; slot < static_cast<int>(eop.inputs.size()) && !other_island; ++slot) {
        if (eop.inputs[slot] != o) continue;
        for (int mode = 0; mode < kModes; ++mode) {
          can = can || (analysis.HasMode(e, mode) && analysis.EdgeFeasible(y, e, slot, mode));
        }
      }
      const bool load = eop.kind == OpKind::Pointwise && !other_island;
      const int rank = (can ? 0 : 2) + (load ? 1 : 0);
      if (rank > best_rank) {
        best_rank = rank;
        best = Reader{true, can, load};
      }
    }
    return best;
  };
  const std::vector<int64_t> forced_tiles = ForcedPointwiseTiles(p, analysis);
  // P53: what the other inputs of an epilogue's reader f hold at the top-left tile's last step
  // when f runs in S (mode T, the tile as region, D1): a boundary input its r x c slice or its
  // retained whole (kTile); one a MatMul y makes, y in F (G3, the same K): its W4 accumulator
  // when k < K and, when y's RHS is a graph input only y reads, [0, K) x c of it when k = K
  // (kStrip; else kSplit, nothing at k = K); one a Pointwise op makes, that op in S at the same
  // region, or the input loaded: the most any of its inputs holds. Tensors tied to x (its
  // operands, its output, e's) and ops of the chain count nothing.
  enum class Leaf { kNone = 0, kSplit = 1, kStrip = 2, kTile = 3 };
  struct EpilogueReader {
    OpId f = kNoOp;
    Leaf leaf = Leaf::kNone;
  };
  const auto epilogue_reader = [&](OpId x, OpId e, const std::vector<int>* islands) -> EpilogueReader {
    EpilogueReader none;
    if (!g_epilogue_reader || p.chip.accumulator_capacity > 0 || p.chip.staging_capacity > 0) return none;
    const Op& xop = p.ops[x];
    const TensorId o = xop.output;
    const Op& eop = p.ops[e];
    if (eop.kind != OpKind::Pointwise || p.consumers[o].size() != 1) return none;
    for (TensorId t : eop.inputs) {
      if (t != o) return none;
    }
    const TensorId q = eop.output;
    const Tensor& grid = p.tensors[o];
    const auto same_shape = [&](TensorId t) { return p.tensors[t].height == grid.height && p.tensors[t].width == grid.width; };
    if (!same_shape(q) || !too_large(q) || p.IsGraphOutput(q) || p.consumers[q].size() != 1) return none;
    const OpId f = p.consumers[q][0];
    if (p.ops[f].kind != OpKind::Pointwise || !same_shape(p.ops[f].output)) return none;
    if (islands != nullptr && (*islands)[f] != (*islands)[x]) return none;
    // e claims q's write and reload itself when f can never run beside it.
    if (!reader_of(e, islands).beside) return none;
    const std::function<Leaf(TensorId, int)> leaf_of = [&](TensorId u, int depth) -> Leaf {
      if (u == o || u == q || u == xop.inputs[0] || u == xop.inputs[1] || !same_shape(u)) return Leaf::kNone;
      const OpId pu = p.producer[u];
      if (pu == kNoOp || p.IsLayout(pu)) return Leaf::kTile;
      if (pu == x || pu == e || pu == f) return Leaf::kNone;
      const Op& uop = p.ops[pu];
      if (uop.kind == OpKind::MatMul) {
        const TensorId rhs = uop.inputs[1];
        const bool own_rhs = uop.inputs[0] != rhs && p.IsGraphInput(rhs) && p.consumers[rhs].size() == 1;
        return own_rhs ? Leaf::kStrip : Leaf::kSplit;
      }
      if (uop.kind != OpKind::Pointwise || depth >= 8) return Leaf::kNone;
      Leaf best = Leaf::kNone;
      for (TensorId v : uop.inputs) best = std::max(best, leaf_of(v, depth + 1));
      return best;
    };
    EpilogueReader found;
    found.f = f;
    for (TensorId u : p.ops[f].inputs) {
      if (u != q) found.leaf = std::max(found.leaf, leaf_of(u, 0));
    }
    return found;
  };
  std::map<std::vector<int64_t>, std::vector<Line>> hull_memo;
  const auto lines_of = [&](OpId x, const Reader& reader, const std::vector<int>* islands) -> std::vector<Line> {
    const Op& op = p.ops[x];
    const double native_compute = op.base_cost * static_cast<double>(p.NativeTiles(x));
    if (op.kind == OpKind::Layout) {
      return {{0, 0}};
    }
    if (op.kind != OpKind::MatMul) {
      // Beside e it computes at least its native tiles (P7); else it wrote o (and S_e loads it).
      const double o_size = static_cast<double>(p.tensors[op.output].size());
      const double alone = (static_cast<double>(own(x)) + (reader.exists ? o_size : 0.0) + (reader.load ? o_size : 0.0)) / bandwidth;
      // P27: at the tiles its subgraph's working set allows.
      const double compute = op.base_cost * static_cast<double>(forced_tiles[x]);
      return {{reader.beside ? own(x) / bandwidth : alone, compute}};
    }
    const TensorId out = op.output;
    const Elements m = p.tensors[out].height, cols = p.tensors[out].width;
    const Elements k_full = p.ReductionLength(x);
    const bool graph_output = p.IsGraphOutput(out);
    std::vector<std::pair<double, double>> points;
    // Upstream of a k-loop (some mode other than T): its least recomputation factor over those
    // modes times its native compute (P7, P13) and its own loads once (P3). P22: when SL is its
    // only such mode and its RHS is a graph input that it alone reads and that cannot fit, no
    // step holds that RHS whole, so the k-loop runs n_k >= 2 steps a tile and each step loads a
    // fresh [0, K) x k slice of it: the whole RHS once per tile of the k-loop (SR: the LHS).
    int modes = 0;
    double least_factor = std::numeric_limits<double>::infinity();
    for (int mode = kSL; mode < kModes; ++mode) {
      if (!analysis.HasMode(x, mode)) continue;
      modes |= 1 << mode;
      least_factor = std::min(least_factor, static_cast<double>(analysis.Factor(x, mode)));
    }
    if (modes != 0 && !graph_output && reader.beside) {
      double loads = static_cast<double>(own(x));
      if (g_upstream_streams && (modes == 1 << kSL || modes == 1 << kSR)) {
        const int strip_mode = modes == 1 << kSL ? kSL : kSR;
        const TensorId t = op.inputs[strip_mode == kSL ? 1 : 0];
        const int64_t tiles = analysis.StripTiles(x, strip_mode);
        if (op.inputs[0] != op.inputs[1] && p.IsGraphInput(t) && p.consumers[t].size() == 1 && too_large(t) &&
            tiles > 1) {
          loads += static_cast<double>(p.tensors[t].size() * (tiles - 1));
        }
      }
      points.emplace_back(native_compute * (g_upstream_factor ? least_factor : 1.0), loads / bandwidth);
    }

    const bool same = op.inputs[0] == op.inputs[1];
    // side 0: LHS (reloaded per column tile), 1: RHS (per row tile).
    struct Side {
      Elements size = 0;
      bool ws_split = false;   // its slice is in every step's working set when k < K
      bool ws_full = false;    // ... when k = K
      bool streamed = false;   // every F request of it is loaded when k < K
      bool once = false;       // loaded at least once when k = K
      Elements share = 1;      // readers that may split its loads
      bool staged_split = false;  // H1: its slice is in every step's matrix staging when k < K
      bool staged_full = false;   // ... when k = K
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
      // Staging counts loaded slices only: retained tensors count in W alone, ephemerals nowhere.
      d.staged_split = d.ws_split && never_retained;
      d.staged_full = d.ws_full && never_retained;
    }
    const Elements out_size = p.tensors[out].size();
    const bool write = graph_output || too_large(out);
    // x in F without being a sink: a Pointwise op e reads its output in S, an epilogue (G3) whose
    // region is the tile and whose boundary inputs are requested at the tile's last k-step (D1).
    // Each other input u of e adds to that step (distinct tensors): when k < K, r c if u is
    // loaded, retained (whole) or a MatMul's output (then that MatMul is in F: its accumulator,
    // W4); when k = K, r c if u has no producer or a Layout one, min(r c, K c) if a MatMul makes
    // it from an RHS that it alone reads and that cannot be ephemeral (its slice [0, K) x C).
    // Pointwise-made inputs may be ephemeral at no cost: 0. Per epilogue (the least is taken).
    struct Epilogue {
      Elements split = 0;        // inputs adding r c when k < K
      Elements full_tiles = 0;   // inputs adding r c when k = K
      Elements full_strips = 0;  // inputs adding min(r, K) c when k = K
      Elements made = 0;         // inputs a MatMul makes (H1: r c of accumulator when made in S)
      Elements written = 0;      // P53: elements this configuration writes and reloads beyond x's
    };
    std::vector<Epilogue> epilogues;
    for (OpId e : p.consumers[out]) {
      if (graph_output || p.ops[e].kind != OpKind::Pointwise) continue;
      if (reader.exists && !reader.beside) break;  // its picked instance is a sink (below)
      Epilogue ep;
      const auto& in = p.ops[e].inputs;
      for (size_t i = 0; i < in.size(); ++i) {
        const TensorId u = in[i];
        if (u == out || u == op.inputs[0] || u == op.inputs[1]) continue;
        if (std::find(in.begin(), in.begin() + i, u) != in.begin() + i) continue;
        const OpId pu = p.producer[u];
        const bool loaded = pu == kNoOp || p.IsLayout(pu);
        if (loaded || p.ops[pu].kind == OpKind::MatMul) ++ep.split;
        if (!loaded && p.ops[pu].kind == OpKind::MatMul) ++ep.made;
        if (loaded) {
          ++ep.full_tiles;
        } else if (p.ops[pu].kind == OpKind::MatMul) {
          const TensorId rhs = p.ops[pu].inputs[1];
          if (p.ops[pu].inputs[0] != rhs && p.IsGraphInput(rhs) && p.consumers[rhs].size() == 1) ++ep.full_strips;
        }
      }
      // P53: e's output q too large to retain, read by one Pointwise f alone. Either f runs in
      // S too (its other inputs' leaves add a tile, ChainLeaf) or e is a sink there and q is
      // written, then loaded where f runs.
      const EpilogueReader next = epilogue_reader(x, e, islands);
      if (next.f == kNoOp) {
        epilogues.push_back(ep);
        continue;
      }
      Epilogue sink_e = ep;
      sink_e.written = 2 * p.tensors[p.ops[e].output].size();
      epilogues.push_back(sink_e);
      Epilogue with_f = ep;
      if (next.leaf != Leaf::kNone) ++with_f.split;
      if (next.leaf == Leaf::kTile) ++with_f.full_tiles;
      if (next.leaf == Leaf::kStrip) ++with_f.full_strips;
      epilogues.push_back(with_f);
    }
    const Elements rows_max = std::min(m, n), cols_max = std::min(cols, n);
    // The chip's rules (H1-H4; all off for the contest, where nothing below changes a line).
    // H3: h a multiple of the base or covering the height (the sink's output is o's shape, the
    // epilogue being Pointwise); the widest c that fits rounded down to the base unless it
    // covers; every k at least min(base, K).
    const ChipRules& rules = p.chip;
    const auto row_allowed = [&](Elements h) { return h % rules.base_h == 0 || h >= m; };
    const auto align_cols = [&](Elements c) { return c >= cols ? c : c / rules.base_w * rules.base_w; };
    const Elements k_min = std::min(rules.base_k, k_full);
    // H1 with H2's doubling and H4's factor: one accumulator element of an F MatMul's tile
    // takes acc_unit elements of the capacity, a staged slice's element staging_unit.
    const bool acc_on = rules.accumulator_capacity > 0;
    const Elements acc_cap = rules.accumulator_capacity;
    const Elements acc_unit = rules.accumulator_factor * (rules.double_accumulator ? 2 : 1);
    const bool staging_on = rules.staging_capacity > 0;
    const Elements staging_cap = rules.staging_capacity;
    const Elements staging_unit = rules.double_staging ? 2 : 1;
    // Beyond the streamed operands' readers a larger g only tightens the working set.
    const Elements g_max = std::max<Elements>(
        1, std::max(side[0].streamed ? side[0].share : 1, side[1].streamed ? side[1].share : 1));

    // Sink configurations (the picked instance writes o; with `reload`, S_e loads it), then one
    // set per epilogue (the picked instance runs beside e, in S_e when `reload`).
    const double reloaded = reader.load ? static_cast<double>(out_size) : 0.0;
    // The points below and the hull follow from these values alone (the chip's rules, the
    // capacity, n and the bandwidth are the problem's): MatMuls that agree on them (a grouped
    // convolution's, a repeated block's) share the lines.
    std::vector<int64_t> key;
    {
      const auto real = [&](double v) { key.push_back(std::bit_cast<int64_t>(v)); };
      key.push_back(static_cast<int64_t>(points.size()));
      for (const auto& [c, l] : points) real(c), real(l);
      real(native_compute);
      real(op.base_cost);
      real(reloaded);
      key.insert(key.end(), {m, cols, k_full, out_size, write ? 1 : 0});
      for (const Side& d : side) {
        key.insert(key.end(), {d.size, d.share, d.ws_split, d.ws_full, d.streamed, d.once, d.staged_split, d.staged_full});
      }
      for (const Epilogue& ep : epilogues) key.insert(key.end(), {ep.split, ep.full_tiles, ep.full_strips, ep.made, ep.written});
    }
    if (auto it = hull_memo.find(key); it != hull_memo.end() && g_share_work) return it->second;
    for (int which = -1; which < static_cast<int>(epilogues.size()); ++which) {
      const bool sink = which < 0;
      const Epilogue ep = sink ? Epilogue{} : epilogues[which];
      const double written = sink ? (write ? static_cast<double>(out_size) : 0.0) + reloaded : static_cast<double>(ep.written);
      // k < K: n_k >= 2, every F MatMul holds a tile, operands streamed. Under H3 a k < K is a
      // multiple of the base, so none exists when K <= base_k.
      if (k_full >= 2 && (rules.base_k <= 1 || rules.base_k < k_full)) {
        for (Elements g = 1; g <= g_max; ++g) {
          const Elements tiles_held = 1 + (sink ? 0 : 1) + std::max(g - 1, ep.split);
          for (Elements h = 1; h <= rows_max; ++h) {
            if (!row_allowed(h)) continue;
            const Elements r = h;
            const Elements room = cap - (side[0].ws_split ? r : 0);
            if (room <= 0) break;
            Elements c = std::min(cols_max, room / (tiles_held * r + (side[1].ws_split ? 1 : 0)));
            // H1: the g F MatMuls' tiles in the accumulator; x's loaded k-slices in staging.
            if (acc_on) c = std::min(c, acc_cap / (acc_unit * g * r));
            if (staging_on) {
              const Elements staged_room = staging_cap / staging_unit - (side[0].staged_split ? r * k_min : 0);
              if (side[1].staged_split) c = std::min(c, staged_room < 0 ? Elements{0} : staged_room / k_min);
              if (staged_room < 0) c = 0;
            }
            c = align_cols(c);
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
        // H1: of the epilogue's MatMul-made inputs, `inside` are made in S (their tiles in the
        // accumulator beside x's), the others loaded or retained (r c in W each; a strip input
        // already counted min(r, K) c there). Without an accumulator capacity: all inside.
        for (Elements inside = acc_on ? 0 : ep.made; inside <= ep.made; ++inside) {
          const Elements outside = ep.made - inside;
          const Elements upgraded = std::min(outside, ep.full_strips);  // strips now whole tiles
          for (Elements h = 1; h <= rows_max; ++h) {
            if (!row_allowed(h)) continue;
            const Elements r = h;
            const Elements room = cap - (side[0].ws_full ? r * k_full : 0);
            if (room <= 0) break;
            const Elements per_column = r * (1 + ep.full_tiles) + std::min(r, k_full) * ep.full_strips +
                                        (side[1].ws_full ? k_full : 0) +
                                        upgraded * (r - std::min(r, k_full)) + (outside - upgraded) * r;
            Elements c = std::min(cols_max, room / per_column);
            if (acc_on) c = std::min(c, acc_cap / (acc_unit * (1 + inside) * r));
            if (staging_on) {
              const Elements staged_room = staging_cap / staging_unit - (side[0].staged_full ? r * k_full : 0);
              if (side[1].staged_full) c = std::min(c, staged_room < 0 ? Elements{0} : staged_room / k_full);
              if (staged_room < 0) c = 0;
            }
            c = align_cols(c);
            if (c < 1) break;
            points.emplace_back(op.base_cost * static_cast<double>(CeilDiv(m, h) * CeilDiv(cols, c)), loads / bandwidth);
          }
        }
      }
    }
    if (points.empty()) points.emplace_back(native_compute, 0.0);  // no legal tile: any claim holds
    if (!g_share_work) return Hull(std::move(points));
    return hull_memo.emplace(std::move(key), Hull(std::move(points))).first->second;
  };
  // The island-aware lines differ only where a reader in another island was chosen.
  if (island_of != nullptr) result.island_lines.assign(num_ops, {});
  for (OpId x = 0; x < num_ops; ++x) {
    const Reader whole = reader_of(x, nullptr);
    result.lines[x] = lines_of(x, whole, nullptr);
    if (island_of == nullptr) continue;
    const Reader own_island = reader_of(x, island_of);
    const bool same = own_island.exists == whole.exists && own_island.beside == whole.beside && own_island.load == whole.load;
    // P53's reader may lie in another island, so a MatMul's lines are found again.
    result.island_lines[x] = same && p.ops[x].kind != OpKind::MatMul ? result.lines[x] : lines_of(x, own_island, island_of);
  }
  result.value = BestOverWeight(result.lines, [](OpId) { return true; });
  return result;
}

}  // namespace annealer::bound_internal
