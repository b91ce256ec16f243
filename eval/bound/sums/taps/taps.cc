// P25 (eval/bound/sums/taps/taps.h).
#include "eval/bound/sums/taps/taps.h"

#include "eval/bound/sums/taps/strip_frontier.h"
#include "eval/bound/traffic/alone.h"
#include "eval/bound/traffic/lone_matmul_memo.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <functional>
#include <cmath>
#include <limits>
#include <deque>
#include <map>
#include <utility>

namespace annealer::bound_internal {

bool g_tap_excess = true;
bool g_pointwise_lhs_loaded = true;

namespace {

// Is some op that `t` is made from (directly or through other ops) a MatMul?
bool MatMulAncestor(const Problem& p, TensorId t) {
  std::vector<char> seen(p.ops.size(), 0);
  std::vector<OpId> stack;
  if (p.producer[t] != kNoOp) stack.push_back(p.producer[t]);
  while (!stack.empty()) {
    const OpId o = stack.back();
    stack.pop_back();
    if (seen[o]) continue;
    seen[o] = 1;
    if (p.ops[o].kind == OpKind::MatMul) return true;
    for (TensorId in : p.ops[o].inputs) {
      if (p.producer[in] != kNoOp) stack.push_back(p.producer[in]);
    }
  }
  return false;
}

}  // namespace
bool g_share_work = true;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Past this many ops the walk of what may sit beside a tap gives up: the tap then claims only
// at theta >= 1/tau, where no op has a deficit.
constexpr size_t kWalkBudget = 4096;
// How far up `need` follows producers that may run upstream; beyond, it counts nothing.
constexpr int kNeedDepth = 8;

using Key = std::array<Elements, 3>;  // output height, width, reduction length

// What a subgraph holding tap t as a sink, in a class whose fast memory leaves no room for a
// Pointwise sink, may hold besides: MatMul sinks of t's key and ops upstream of them (G3, D3).
struct Beside {
  bool saturated = false;
  std::vector<OpId> ops;  // t's own key's MatMuls included
  bool Holds(OpId x) const { return std::find(ops.begin(), ops.end(), x) != ops.end(); }
};

// The least value of a concave function over [0, 1] is not needed; its maximum is: a grid, then
// a golden-section refinement around the best point (any lambda gives a bound).
template <class F>
double MaximizeOverWeight(const F& f) {
  constexpr int kGrid = 64;
  double best = -kInf, best_x = 0;
  for (int i = 0; i <= kGrid; ++i) {
    const double x = static_cast<double>(i) / kGrid;
    const double v = f(x);
    if (v > best) best = v, best_x = x;
  }
  double lo = std::max(0.0, best_x - 1.0 / kGrid), hi = std::min(1.0, best_x + 1.0 / kGrid);
  for (int it = 0; it < 40; ++it) {
    const double m1 = lo + (hi - lo) * 0.381966, m2 = hi - (hi - lo) * 0.381966;
    if (f(m1) < f(m2)) lo = m1; else hi = m2;
  }
  return std::max(best, f((lo + hi) / 2));
}

}  // namespace

TapLines TapFloor(const Problem& p, const Analysis& a, const SumLines& sums) {
  TapLines r;
  const auto num_ops = static_cast<OpId>(p.ops.size());
  r.compute = sums.compute;
  r.priced = sums.priced;
  r.taps.assign(num_ops, {});
  r.lone.assign(num_ops, 0);
  r.sole.assign(num_ops, 0);  // not computed: no claim
  std::vector<OpId> all(num_ops);
  for (OpId o = 0; o < num_ops; ++o) all[o] = o;
  if (!g_tap_excess || p.chip.two_paths()) {
    r.value = r.Value(p, all);
    return r;
  }
  const Elements n = p.native;
  const Elements cap = p.fast_memory_capacity;
  const double bandwidth = p.slow_memory_bandwidth;
  // P31 prices an isolated tap alone as P21 does, which H5's prefetch into double-buffered
  // staging can undercut (P21's proof); one path here (P25 is off with a weight path).
  r.isolated.assign(num_ops, 0);
  const bool lone_prefetch = p.chip.prefetch && p.chip.double_staging;
  const std::vector<char> no_weights(p.tensors.size(), 0);
  LoneMatMulMemo lone_memo;  // P31's price per tap shape (a network repeats them)
  std::vector<int> group_of(num_ops, -1);
  for (size_t g = 0; g < r.priced.size(); ++g) {
    for (OpId x : r.priced[g].producers) group_of[x] = static_cast<int>(g);
  }
  std::map<std::pair<Elements, Elements>, double> least_tau;  // per output shape of the priced sums
  for (const SumLines::Priced& s : r.priced) {
    const Tensor& out = p.tensors[p.ops[s.sum].output];
    auto [it, fresh] = least_tau.try_emplace({out.height, out.width}, s.least_tau);
    if (!fresh) it->second = std::min(it->second, s.least_tau);
  }
  const auto key_of = [&](OpId x) -> Key {
    const Tensor& out = p.tensors[p.ops[x].output];
    return {out.height, out.width, p.ReductionLength(x)};
  };
  const auto upstream_capable = [&](OpId x) {
    for (int m = kSL; m < kModes; ++m) {
      if (a.HasMode(x, m)) return true;
    }
    return false;
  };
  // Taps: a MatMul whose output never fits, read by nothing or by a priced sum alone (P23's
  // designated inputs are read by the sum alone), whose RHS is a graph input only it reads.
  std::vector<char> tap(num_ops, 0);
  std::map<Key, std::vector<OpId>> by_key;
  for (OpId t = 0; t < num_ops; ++t) {
    const Op& op = p.ops[t];
    if (op.kind != OpKind::MatMul || !a.TooLarge(op.output)) continue;
    const TensorId lhs = op.inputs[0], rhs = op.inputs[1];
    if (lhs == rhs || p.producer[rhs] != kNoOp || p.consumers[rhs].size() != 1) continue;
    // Read by nothing, a tap claims its write and weight loads against the compute of what may
    // share its subgraph. The walks' deficits below price Pointwise ops upstream of it (the hand
    // case "an upstream producer hides part of a tap's weight reloads"), not MatMuls: four MatMuls
    // summed into F's LHS hide F's loads beyond those deficits (docs/lower-bound.md, the case at
    // the end of P34's section: the bound 329 against a valid 320.25). So a MatMul read by nothing
    // with a MatMul among its LHS's ancestors is no tap.
    const bool lone = p.consumers[op.output].empty() && !MatMulAncestor(p, lhs);
    if (!lone && group_of[t] < 0) continue;
    tap[t] = 1;
    r.lone[t] = lone ? 1 : 0;
    by_key[key_of(t)].push_back(t);
  }
  bool keeps_shape = true;  // every Pointwise input has its op's output shape (W's second tile)
  for (const Op& op : p.ops) {
    if (op.kind != OpKind::Pointwise) continue;
    const Tensor& out = p.tensors[op.output];
    for (TensorId t : op.inputs) {
      keeps_shape = keeps_shape && p.tensors[t].height == out.height && p.tensors[t].width == out.width;
    }
  }
  std::map<std::array<Elements, 3>, Elements> need_memo;  // per (tensor, rows, cols)
  const StripFrontier frontier = g_strip_frontier ? RowFrontier(p, a) : StripFrontier{};
  r.lhs_rows.assign(num_ops, 0);
  for (OpId x = 0; x < num_ops && g_strip_frontier; ++x) {
    if (p.ops[x].kind != OpKind::MatMul) continue;
    const TensorId lhs = p.ops[x].inputs[0];
    // In a subgraph that also runs a Pointwise op of x's output shape (P28's S_1), only where no
    // tensor of A's shape can be read at a tile's columns (K != N), x's RHS is a graph input only x
    // reads, and no other k-loop MatMul's RHS side can ask A's rows (M != K).
    const TensorId rhs = p.ops[x].inputs[1];
    const Elements kx = p.ReductionLength(x);
    if (!a.TooLarge(lhs) || kx == p.tensors[p.ops[x].output].width || kx == p.tensors[lhs].height || rhs == lhs ||
        p.producer[rhs] != kNoOp || p.consumers[rhs].size() != 1) {
      continue;
    }
    const OpId y = p.producer[lhs];
    // Made beside x only by a producer that may run upstream of a k-loop, and by no Pointwise op
    // when K > n (V11, P31).
    const bool loaded = y == kNoOp || !upstream_capable(y) ||
                        (p.ops[y].kind == OpKind::Pointwise && p.ReductionLength(x) > n);
    const Elements rw = loaded ? p.tensors[lhs].width : frontier.row_width[lhs];
    r.lhs_rows[x] = static_cast<double>(p.tensors[lhs].height * rw) / bandwidth;
  }
  std::map<TensorId, std::vector<char>> paths;             // per LHS: ops on its path
  std::vector<uint32_t> seen(num_ops, 0);
  std::vector<uint32_t> asked(num_ops, 0);  // per op: asked `fits` in the walk of this stamp
  uint32_t stamp = 0;
  for (const auto& by_key_entry : by_key) {
    // Named, not bound: clang 14 (the fuzz targets' compiler) cannot capture structured bindings.
    const auto& key = by_key_entry.first;
    const auto& members = by_key_entry.second;
    const Elements height = key[0], width = key[1], reduction = key[2];
    const auto in_key = [&](OpId x) { return p.ops[x].kind == OpKind::MatMul && key_of(x) == key; };
    // The walks, one per LHS tensor (taps of one convolution share it): up from the LHS
    // producer to producers that can run upstream, down into ops that can run upstream and into
    // MatMuls of the key (co-sinks), up again from those. A T-only op (a priced sum, a tap) can
    // be in such an S as a sink only, and the only sinks are the key's MatMuls.
    // Two walks per LHS: with co-sinks (mode 0), and without them (mode 1), for the classes where
    // a second sink tile does not fit beside t's (W1): then F = {t} and only t's LHS producer
    // makes a k-loop operand.
    std::map<std::pair<TensorId, int>, Beside> walks;
    for (OpId t : members) {
      const TensorId lhs = p.ops[t].inputs[0];
      for (int mode = 0; mode <= 1; ++mode) {
        if (walks.count({lhs, mode}) != 0) continue;
        Beside& b = walks[{lhs, mode}];
        const OpId start = p.producer[lhs];
        if (start == kNoOp) continue;  // a graph input: t connects to nothing (V5, O8)
        ++stamp;
        std::vector<OpId> stack;
        const auto push = [&](OpId x) {
          if (x == kNoOp || seen[x] == stamp) return;
          if (!(mode == 0 && in_key(x)) && !upstream_capable(x)) return;
          seen[x] = stamp;
          stack.push_back(x);
        };
        push(start);
        while (!stack.empty() && !b.saturated) {
          const OpId u = stack.back();
          stack.pop_back();
          b.ops.push_back(u);
          if (b.ops.size() > kWalkBudget) b.saturated = true;
          for (TensorId in : p.ops[u].inputs) push(p.producer[in]);
          if (!upstream_capable(u)) continue;  // a sink: its output leaves S
          for (OpId v : p.consumers[p.ops[u].output]) push(v);
        }
      }
    }
    // Does every MatMul of the key read a weight of its own? Then a co-sink also holds its
    // weight's slice (V8, D2).
    bool all_own = true;
    for (OpId x = 0; x < num_ops; ++x) {
      if (!in_key(x)) continue;
      const TensorId rhs = p.ops[x].inputs[1];
      all_own = all_own && rhs != p.ops[x].inputs[0] && p.producer[rhs] == kNoOp && p.consumers[rhs].size() == 1;
    }
    bool any_saturated = false;
    for (const auto& [where, b] : walks) any_saturated = any_saturated || b.saturated;
    const double native_t = static_cast<double>(CeilDiv(height, n) * CeilDiv(width, n));
    const double out_size = static_cast<double>(height * width);
    const double weight_size = static_cast<double>(reduction * width);
    const double k_tiles = static_cast<double>(CeilDiv(reduction, n));
    const auto shape_tau = least_tau.find({height, width});
    const double sum_tau = shape_tau == least_tau.end() ? kInf : shape_tau->second;
    std::vector<double> least_const(members.size(), kInf);
    std::vector<double> sole_const(members.size(), kInf);  // every class at theta, none a line (P28)
    // A tap whose LHS never fits and cannot be made in its subgraph (a graph input, the image's
    // gather of one, or a producer that cannot run upstream) loads all of it once per column tile
    // when n_k >= 2 (M1: consecutive steps ask different k-ranges), at least once otherwise; in a
    // subgraph without co-sinks no other op shares that load but a Pointwise reader of A (K = N,
    // beside t only through A's gather, V5), whose region at a first-column tile's last step may
    // be the next tile's first k-slice (w = k): at most M k in all, below the |A| its sink
    // writes, unclaimed unless a priced sum is that sink, where P23's line (`memory`) leaves A's
    // load out.
    std::vector<double> lhs_load(members.size(), 0);
    std::vector<Elements> row_width(members.size(), 0);  // P54: per row of a strip of A, at n_k = 1
    std::vector<char> slice_made(members.size(), 0);  // P54 at n_k >= 2: 1 where not open, 2 anywhere
    for (size_t i = 0; i < members.size(); ++i) {
      const TensorId lhs = p.ops[members[i]].inputs[0];
      const OpId x = p.producer[lhs];
      bool loaded = x == kNoOp || !upstream_capable(x);
      // P31: a Pointwise producer never makes the LHS of a MatMul with K > n in its subgraph
      // (V11: it would need w >= K > n; P1), whatever else it may feed upstream.
      loaded = loaded || (g_pointwise_lhs_loaded && p.ops[x].kind == OpKind::Pointwise && reduction > n);
      if (x != kNoOp && p.ops[x].kind == OpKind::Layout && p.ops[x].inputs.size() == 1) {
        const TensorId z = p.ops[x].inputs[0];
        loaded = loaded || (p.producer[z] == kNoOp && p.consumers[z].size() == 1 &&
                            p.tensors[z].height == p.tensors[lhs].height && p.tensors[z].width == p.tensors[lhs].width);
      }
      if (loaded && a.TooLarge(lhs)) lhs_load[i] = static_cast<double>(p.tensors[lhs].size()) / bandwidth;
      // P54: at n_k = 1 the LHS's row strips cost their frontier's width per row, at every entry
      // into a row, also where A may be made beside t.
      if (g_strip_frontier) row_width[i] = lhs_load[i] > 0 ? p.tensors[lhs].width : frontier.row_width[lhs];
      // P54: at n_k >= 2, alone, A made beside t still costs the loads its k-slices are made from,
      // where no request of the step before can equal them: no Pointwise sink in S, or none that
      // reads a tensor of A's shape (K != N) and no reader of A but the key's MatMuls.
      if (g_strip_frontier && lhs_load[i] == 0 && a.TooLarge(lhs)) {
        bool key_only = reduction != width;
        for (OpId c : p.consumers[lhs]) key_only = key_only && in_key(c) && p.ops[c].inputs[0] == lhs;
        slice_made[i] = key_only ? 2 : 1;
      }
    }
    // Can another MatMul of the key join t at all: its walk (with co-sinks) reaches one.
    std::vector<char> has_cosink(members.size(), 0);
    for (size_t i = 0; i < members.size(); ++i) {
      const Beside& b = walks[{p.ops[members[i]].inputs[0], 0}];
      for (OpId o : b.ops) has_cosink[i] = has_cosink[i] || (o != members[i] && in_key(o));
      has_cosink[i] = has_cosink[i] || b.saturated;
    }
    std::vector<char> own_entry(members.size(), 0);  // t itself is in its walk's entries
    for (size_t i = 0; i < members.size(); ++i) own_entry[i] = walks[{p.ops[members[i]].inputs[0], 0}].Holds(members[i]);
    // A member's open-class lines depend on its compute alone: members of one compute (a grouped
    // convolution's) share them. Per member, its set; per set, the lines.
    std::vector<int> line_set(members.size());
    std::vector<double> set_compute;
    for (size_t i = 0; i < members.size(); ++i) {
      const double c = r.compute[members[i]];
      const auto same = std::find_if(set_compute.begin(), set_compute.end(),
                                     [&](double x) { return std::bit_cast<uint64_t>(x) == std::bit_cast<uint64_t>(c); });
      line_set[i] = g_share_work ? static_cast<int>(same - set_compute.begin()) : static_cast<int>(set_compute.size());
      if (same == set_compute.end() || !g_share_work) set_compute.push_back(c);
    }
    std::vector<std::vector<Line>> lines(set_compute.size());
    // A walk's op: c_o, its native tiles, whether it may make a k-loop operand (a consumer in the
    // key), and its kind: 0 upstream, 1 a tap of the key, 2 another MatMul of the key.
    struct Entry {
      double compute;
      double native;
      bool direct;
      int kind;
      bool upstream;
      bool writes = false;      // a MatMul of the key whose output never fits
      bool own_weight = false;  // ... whose RHS is a graph input only it reads
      double count = 1;         // identical entries merged (kind 0: computes added instead)
      bool Same(const Entry& o) const {
        return native == o.native && direct == o.direct && kind == o.kind && upstream == o.upstream &&
               writes == o.writes && own_weight == o.own_weight && (kind == 0 || compute == o.compute);
      }
    };
    const auto make_entries = [&](TensorId lhs, bool alone, const std::vector<OpId>& ops) {
      std::vector<Entry> list;
      for (OpId o : ops) {
        Entry e;
        e.compute = r.compute[o];
        e.native = static_cast<double>(p.NativeTiles(o));
        e.direct = o == p.producer[lhs];
        for (OpId v : p.consumers[p.ops[o].output]) e.direct = e.direct || (!alone && in_key(v));
        e.kind = !alone && in_key(o) ? (tap[o] ? 1 : 2) : 0;
        e.upstream = upstream_capable(o);
        if (e.kind == 2) {
          const TensorId rhs = p.ops[o].inputs[1];
          e.writes = a.TooLarge(p.ops[o].output);
          e.own_weight = rhs != p.ops[o].inputs[0] && p.producer[rhs] == kNoOp && p.consumers[rhs].size() == 1;
        }
        if (e.compute == 0 && e.kind != 1) continue;  // Layout ops: no deficit
        // A kind-0 deficit is linear in c_o: such entries merge by adding their computes.
        const auto same = std::find_if(list.begin(), list.end(), [&](const Entry& x) { return x.Same(e); });
        if (same == list.end()) {
          list.push_back(e);
        } else if (e.kind == 0) {
          same->compute += e.compute;
        } else {
          same->count += 1;
        }
      }
      return list;
    };
    std::map<std::pair<TensorId, int>, std::vector<Entry>> entries;
    // Gated walks already made for this key, per (LHS, mode): the path ops they asked `fits`
    // about with its answers, and their entries.
    struct Trace {
      std::vector<std::pair<OpId, bool>> asked;
      std::vector<Entry> entries;
    };
    std::map<std::pair<TensorId, int>, std::deque<Trace>> traces;
    for (const auto& [where, b] : walks) entries[where] = make_entries(where.first, where.second == 1, b.ops);
    // The least the fast memory holds for the region rows x cols of tensor u at one step (W):
    // its slice when loaded (D4; a graph input is never retained, V8), all of it when retained
    // (R5), or, when its producer runs upstream in S (D3), what the producer's inputs need: a
    // Pointwise or Layout op the same region of its inputs of that shape, a MatMul rows x K of
    // its LHS and K x cols of its RHS (the larger of each; deeper than kNeedDepth, nothing).
    std::function<Elements(TensorId, Elements, Elements, int)> need = [&](TensorId u, Elements rows,
                                                                          Elements cols, int depth) -> Elements {
      const Tensor& tu = p.tensors[u];
      rows = std::min(rows, tu.height);
      cols = std::min(cols, tu.width);
      const Elements slice = rows * cols;
      const OpId x = p.producer[u];
      if (x == kNoOp || !upstream_capable(x)) return slice;
      if (depth > kNeedDepth) return 0;
      const std::array<Elements, 3> memo_key{u, rows, cols};
      if (auto it = need_memo.find(memo_key); it != need_memo.end()) return it->second;
      Elements made = 0;
      const Op& op = p.ops[x];
      if (op.kind == OpKind::MatMul) {
        const Elements k = p.ReductionLength(x);
        made = std::max(need(op.inputs[0], rows, k, depth + 1), need(op.inputs[1], k, cols, depth + 1));
      } else {
        for (TensorId in : op.inputs) {
          if (p.tensors[in].height != tu.height || p.tensors[in].width != tu.width) continue;
          made = std::max(made, need(in, rows, cols, depth + 1));
        }
      }
      const Elements least = std::min(slice, made);
      need_memo[memo_key] = least;
      return least;
    };
    // The members' LHS tensors, each once, in the order of their first member: asking `need`
    // again about one is a memo hit, so asking once changes nothing.
    std::vector<TensorId> member_lhs;
    for (OpId t : members) {
      const TensorId lhs = p.ops[t].inputs[0];
      if (std::find(member_lhs.begin(), member_lhs.end(), lhs) == member_lhs.end()) member_lhs.push_back(lhs);
    }
    const auto tap_value = [&](double c, double memory, double tau, double theta) {
      return (theta * tau - 1) * c + (1 - theta) * memory;
    };
    for (Elements h = 1; h <= std::min(n, height); ++h) {
      const Elements rows = CeilDiv(height, h);
      if (CeilDiv(height, rows) != h) continue;  // the least h of its row count
      // What the LHS needs depends on (h, k0), not on w: asked once per k0 (again, a memo hit).
      std::vector<std::pair<Elements, Elements>> lhs_need_of;  // (k0, its least need)
      for (Elements w = 1; w <= std::min(n, width); ++w) {
        const Elements cols = CeilDiv(width, w);
        if (CeilDiv(width, cols) != w) continue;
        // The k-step counts in buckets [1], [2], [3, 4], [5, 8], ...: a bucket's least k (the
        // smallest working set) and its least n_k (the fewest steps).
        for (Elements lo = 1, hi = 1; lo <= reduction; lo = hi + 1, hi *= 2) {
          const bool split = hi >= 2;
          const Elements k0 = split ? CeilDiv(reduction, hi) : reduction;
          if (k0 > n) continue;                     // V2, V3: k <= n
          if (CeilDiv(reduction, k0) < lo) continue;  // no k gives n_k in [lo, hi]
          const int nk = split ? 2 : 1;
          // W_t's slice and o_t's tile (V8, W1, R5), and what t's LHS needs (the same for every
          // tap of the key when they share it; the least over them otherwise).
          const Elements own = k0 * w + h * w;
          const auto known = std::find_if(lhs_need_of.begin(), lhs_need_of.end(), [&](const auto& e) { return e.first == k0; });
          Elements lhs_need = std::numeric_limits<Elements>::max();
          if (known != lhs_need_of.end() && g_share_work) {
            lhs_need = known->second;
          } else {
            for (TensorId lhs : member_lhs) lhs_need = std::min(lhs_need, need(lhs, h, k0, 0));
            lhs_need_of.emplace_back(k0, lhs_need);
          }
          if (own + lhs_need > cap) continue;
          const double tiles = static_cast<double>(rows * cols);
          const double tau = tiles / native_t;
          const double memory = (out_size + weight_size * (nk == 2 ? static_cast<double>(rows) : 1.0)) / bandwidth;
          // A Pointwise (or Layout) sink brings its tile and, for n_k >= 2, a slice (or an
          // accumulator) of its input's tile size (W, W1, W4, D1). Without one, S holds no
          // priced sum (T only: a sink or an epilogue, and an epilogue needs a Pointwise sink).
          const bool open = any_saturated || (nk == 2 && keeps_shape ? own + h * w + std::max(lhs_need, h * w)
                                                                     : own + lhs_need + h * w) <= cap;
          // Another MatMul of the key as a sink brings its own tile (W1).
          const bool cosinks = own + lhs_need + h * w + (all_own ? k0 * w : 0) <= cap;
          // Where a priced sum of t's shape may share S, P23's line at lambda; P28 (sole_sums.h) also
          // asks the class's value as if none could (no other priced sum of the shape), below.
          const bool lambda_line = open && tau >= sum_tau;
          if (lambda_line) {
            for (size_t j = 0; j < set_compute.size(); ++j) {
              const double c = set_compute[j];
              lines[j].push_back({(tau - 1) * c, (1 - 1 / tau) * memory});
            }
          }
          const double steps = tiles * static_cast<double>(lo);
          // How many native tiles' worth an upstream op makes at least: a k-loop operand's strip
          // per tile (C3), a region further upstream every step (C6); an op that may be either
          // takes the lesser.
          const auto Made = [&](const Entry& e) {
            return e.direct ? std::min(tiles * k_tiles, steps) : steps;
          };
          const auto deficit = [&](const Entry& e, double theta) {
            if (e.kind == 1) return std::max(0.0, -tap_value(e.compute, memory, tau, theta));
            double d = 0;
            if (e.kind == 2) {  // a co-sink: writes its output if it never fits, loads its own weight
              const double own_memory = (e.writes ? out_size : 0.0) +
                                        (e.own_weight ? weight_size * (nk == 2 ? static_cast<double>(rows) : 1.0) : 0.0);
              d = std::max(0.0, -tap_value(e.compute, own_memory / bandwidth, tau, theta));
            }
            if (e.kind == 0 || e.upstream) {
              const double f = std::max(tau, Made(e) / e.native);
              d = std::max(d, std::max(0.0, 1 - theta * f) * e.compute);
            }
            return d;
          };
          // Without co-sinks, near native tiles: the walk without the ops on A's Pointwise path
          // whose distinct inputs' own slices cannot fit beside t's (a loaded or unmade input's
          // slice h x k, or the slice K_x x k of the weight of its own that an upstream MatMul
          // making it reads: distinct tensors, none W_t or o_t; W with max against A's need).
          std::map<std::pair<TensorId, int>, const std::vector<Entry>*> gated;
          // A's path: its producer, and every op of A's shape whose readers are all Pointwise ops
          // on the path. In S such an op makes at least h x k_j of its output every step: A's
          // producer for t (D2), the others for a reader on the path that S holds (it feeds S,
          // and a Pointwise op needs its own region of each input, D3).
          const auto path_of = [&](TensorId lhs) -> const std::vector<char>& {
            auto [it, fresh] = paths.try_emplace(lhs);
            if (!fresh) return it->second;
            std::vector<char>& on = it->second;
            on.assign(num_ops, 0);
            const OpId first = p.producer[lhs];
            if (first == kNoOp) return on;
            on[first] = 1;
            std::vector<OpId> frontier = {first};
            while (!frontier.empty()) {
              const OpId u = frontier.back();
              frontier.pop_back();
              if (p.ops[u].kind != OpKind::Pointwise) continue;  // a MatMul's inputs change region
              for (TensorId in : p.ops[u].inputs) {
                const OpId x = p.producer[in];
                if (x == kNoOp || on[x] || p.tensors[in].height != p.tensors[lhs].height ||
                    p.tensors[in].width != p.tensors[lhs].width) {
                  continue;
                }
                bool all = true;
                for (OpId c : p.consumers[in]) all = all && on[c] && p.ops[c].kind == OpKind::Pointwise;
                if (!all) continue;
                on[x] = 1;
                frontier.push_back(x);
              }
            }
            return on;
          };
          const auto gated_entries = [&](TensorId lhs, int mode) -> const std::vector<Entry>& {
            auto [it, fresh] = gated.try_emplace({lhs, mode}, nullptr);
            if (!fresh) return *it->second;
            // With a co-sink, its tile and its weight's slice too (W1, D2).
            const Elements room = cap - own - (mode == 0 ? h * w + (all_own ? k0 * w : 0) : 0);
            const auto own_slice = [&](TensorId u) -> Elements {
              const OpId x = p.producer[u];
              const Elements slice = std::min(h, p.tensors[u].height) * std::min(k0, p.tensors[u].width);
              if (x == kNoOp || !upstream_capable(x)) return slice;
              if (p.ops[x].kind != OpKind::MatMul) return 0;
              const TensorId rhs = p.ops[x].inputs[1];
              const bool own_rhs = rhs != p.ops[x].inputs[0] && p.producer[rhs] == kNoOp && p.consumers[rhs].size() == 1;
              return own_rhs ? std::min(slice, p.ReductionLength(x) * std::min(k0, p.tensors[u].width)) : 0;
            };
            // Can op x of A's path run beside t at this class, when it is entered from its output?
            const auto fits = [&](OpId x) {
              if (p.ops[x].kind == OpKind::MatMul) {
                // An upstream MatMul makes its rows whole: h x K_x of its LHS, and K_x x k of a
                // weight of its own (D3; distinct tensors).
                const Elements kx = p.ReductionLength(x);
                const TensorId rhs = p.ops[x].inputs[1];
                const bool own_rhs = rhs != p.ops[x].inputs[0] && p.producer[rhs] == kNoOp && p.consumers[rhs].size() == 1;
                return need(p.ops[x].inputs[0], h, kx, 0) + (own_rhs ? kx * std::min(k0, p.tensors[rhs].width) : 0) <= room;
              }
              Elements inputs = 0;
              const auto& in = p.ops[x].inputs;
              for (size_t j = 0; j < in.size(); ++j) {
                if (std::find(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(j), in[j]) != in.begin() + static_cast<std::ptrdiff_t>(j)) continue;
                if (p.tensors[in[j]].height != p.tensors[lhs].height || p.tensors[in[j]].width != p.tensors[lhs].width) continue;
                inputs += own_slice(in[j]);
              }
              return inputs <= room;  // else it cannot run beside t at this class
            };
            // The walk is a function of (A, mode), fixed per key, and of the answers of `fits` to
            // the path ops it asks about, in the order it first asks: a trace. Classes whose
            // answers follow a recorded trace share its entries. Checking a trace asks along the
            // true sequence of questions until the first answer that differs, so `need` sees its
            // first calls in the order the walk makes them (it memoizes with a depth cutoff, so
            // that order could matter); asking again is a memo hit.
            std::deque<Trace>& recorded = traces[{lhs, mode}];
            for (const Trace& trace : recorded) {
              if (!g_share_work) break;
              bool follows = true;
              for (const auto& [x, answer] : trace.asked) {
                if (fits(x) != answer) {
                  follows = false;
                  break;
                }
              }
              if (follows) {
                it->second = &trace.entries;
                return trace.entries;
              }
            }
            const std::vector<char>& on_path = path_of(lhs);
            Trace& trace = recorded.emplace_back();
            ++stamp;
            std::vector<std::pair<OpId, bool>> stack;  // op, on A's Pointwise path
            std::vector<OpId> ops;
            const auto push = [&](OpId x, bool path) {
              if (x == kNoOp || seen[x] == stamp) return;
              if (!(mode == 0 && in_key(x)) && !upstream_capable(x)) return;
              if (path) {
                const bool ok = fits(x);
                if (asked[x] != stamp) {
                  asked[x] = stamp;
                  trace.asked.push_back({x, ok});
                }
                if (!ok) return;  // cannot run beside t at this class
              }
              seen[x] = stamp;
              stack.push_back({x, path});
            };
            push(p.producer[lhs], true);
            while (!stack.empty()) {
              const auto [u, path] = stack.back();
              stack.pop_back();
              ops.push_back(u);
              for (TensorId in : p.ops[u].inputs) {
                const OpId x = p.producer[in];
                push(x, x != kNoOp && on_path[x]);
              }
              if (!upstream_capable(u)) continue;  // a co-sink: its output leaves S
              for (OpId v : p.consumers[p.ops[u].output]) push(v, false);
            }
            trace.entries = make_entries(lhs, mode == 1, ops);
            it->second = &trace.entries;
            return trace.entries;
          };
          const bool gate = tau <= 1.5;
          // t's value at theta: its own, less the deficits of what its walk may put beside it
          // (itself excepted); at theta >= 1/tau no op has one.
          std::map<TensorId, double> walk_deficit;  // per walk (2 lhs + mode)
          // One walk's deficits at theta, cached per (LHS, mode).
          const auto walk_sum = [&](TensorId lhs, int mode, double theta) {
            auto [it, fresh] = walk_deficit.try_emplace(lhs * 2 + mode, 0.0);
            if (fresh) {
              const bool saturated = walks[{lhs, mode}].saturated;
              const std::vector<Entry>& list = gate && !saturated ? gated_entries(lhs, mode) : entries[{lhs, mode}];
              for (const Entry& e : list) it->second += e.count * deficit(e, theta);
            }
            return it->second;
          };
          // Where a co-sink may join t, the least of S with one (no LHS load of t's own) and
          // without (t's walk alone, its LHS load).
          // P54: at n_k = 1, alone, A's rows at each entry into a row strip (once per row, and the
          // re-entries the traversal cannot avoid, shared with the weight's column strips).
          std::vector<std::pair<Elements, double>> strip_loads;  // per row width, its loads / B
          const auto strip_load = [&](size_t i) {
            const Elements rw = row_width[i];
            for (const auto& [x, v] : strip_loads) {
              if (x == rw) return v;
            }
            const double v = (static_cast<double>(height * rw) +
                              StripReentries(height, width, reduction, rw, rows, cols, n)) / bandwidth;
            strip_loads.emplace_back(rw, v);
            return v;
          };
          std::vector<std::pair<TensorId, double>> slice_loads;  // per LHS, its loads / B
          const auto slice_load = [&](size_t i) {
            if (slice_made[i] == 0 || (open && slice_made[i] == 1)) return 0.0;
            const TensorId lhs = p.ops[members[i]].inputs[0];
            for (const auto& [x, v] : slice_loads) {
              if (x == lhs) return v;
            }
            const double v = SliceLoads(p, a, frontier, lhs, tiles, static_cast<double>(cols)) / bandwidth;
            slice_loads.emplace_back(lhs, v);
            return v;
          };
          // P54 beside co-sinks: the LHS loads above, which t shares with the other sinks of S
          // (each holds its tile and, with weights of their own, its weight's slice, W1, D2): at
          // most q_max of the key's MatMuls share them, so each claims a q_max-th.
          const double q_max = 1 + std::floor(static_cast<double>(cap - own - lhs_need) /
                                              static_cast<double>(h * w + (all_own ? k0 * w : 0)));
          const auto shared_lhs = [&](size_t i) {
            // A co-sink's RHS side asks rows k-ranges of a tensor K high: never one of A's rows
            // where M != K.
            if (!g_strip_frontier || height == reduction) return 0.0;
            if (!split) return strip_load(i) / q_max;
            // No request of the step before equals a slice of A's chain where no tensor of A's shape
            // is read at the tile's columns (K != N); made through a MatMul, only where every reader
            // of A is one of the key's MatMuls, which ask A's k-slices alone.
            const double loaded = lhs_load[i] > 0 && width != reduction ? lhs_load[i] * static_cast<double>(cols) : 0.0;
            return (loaded + (slice_made[i] == 2 ? slice_load(i) : 0.0)) / q_max;
          };
          const auto value_at = [&](size_t i, double theta) {
            const OpId t = members[i];
            const TensorId lhs = p.ops[t].inputs[0];
            const bool with = cosinks && has_cosink[i];
            const double alone_memory =
                memory + (!split && g_strip_frontier ? strip_load(i)
                                                     : lhs_load[i] * (split ? static_cast<double>(cols) : 1.0) + (split ? slice_load(i) : 0.0));
            const double alone_value = tap_value(r.compute[t], alone_memory, tau, theta);
            const double with_value = tap_value(r.compute[t], memory + shared_lhs(i), tau, theta);
            if (theta >= 1 / tau) return with ? with_value : alone_value;
            double v = alone_value - walk_sum(lhs, 1, theta);
            if (with) {
              v = std::min(v, with_value - walk_sum(lhs, 0, theta) +
                                  (own_entry[i] ? std::max(0.0, -with_value) : 0.0));
            }
            return v;
          };
          std::vector<double> thetas = {1 / tau, 1.0};
          if (!open) {
            thetas.push_back(0.0);
            for (const auto& [where, list] : entries) {
              if (where.second == 0 && !cosinks) continue;
              for (const Entry& e : list) {
                if (e.kind != 0) {
                  // where a co-sink's own value crosses 0
                  const double own_memory =
                      e.kind == 1 ? memory
                                  : ((e.writes ? out_size : 0.0) +
                                     (e.own_weight ? weight_size * (nk == 2 ? static_cast<double>(rows) : 1.0) : 0.0)) /
                                        bandwidth;
                  const double slope = tau * e.compute - own_memory;
                  if (slope != 0) {
                    const double x = (e.compute - own_memory) / slope;
                    if (x > 0 && x < 1 / tau) thetas.push_back(x);
                  }
                }
                if (e.kind == 1 || (e.kind == 2 && !e.upstream)) continue;
                const double f = std::max(tau, Made(e) / e.native);
                if (1 / f < 1 / tau) thetas.push_back(1 / f);
              }
            }
          }
          // theta for the class: the best total over the key's taps (one theta for every tap S
          // may hold, all of this key).
          double best_total = -kInf, best_theta = 1.0;
          for (double theta : thetas) {
            walk_deficit.clear();
            double total = 0;
            for (size_t i = 0; i < members.size(); ++i) total += value_at(i, theta);
            if (total > best_total) best_total = total, best_theta = theta;
          }
          walk_deficit.clear();
          for (size_t i = 0; i < members.size(); ++i) {
            const double v = value_at(i, best_theta);
            if (!lambda_line) least_const[i] = std::min(least_const[i], v);
            sole_const[i] = std::min(sole_const[i], v);
          }
        }
      }
    }
    // Keep the lines no other undercuts at both ends, and the least constant.
    std::vector<std::vector<Line>> undercut(lines.size());
    for (size_t j = 0; j < lines.size(); ++j) {
      std::vector<Line>& l = lines[j];
      std::sort(l.begin(), l.end(), [](const Line& x, const Line& y) {
        return x.at0 < y.at0 || (x.at0 == y.at0 && x.at1 < y.at1);
      });
      double least_at1 = kInf;
      for (const Line& x : l) {
        if (x.at1 < least_at1) undercut[j].push_back(x), least_at1 = x.at1;
      }
    }
    for (size_t i = 0; i < members.size(); ++i) {
      const OpId t = members[i];
      r.sole[t] = sole_const[i];
      std::vector<Line> kept = undercut[line_set[i]];
      if (least_const[i] < kInf) kept.push_back({least_const[i], least_const[i]});
      if (kept.empty()) continue;  // no subgraph holds t as a sink: every instance is fused
      bool positive = false;
      for (int end = 0; end <= 1; ++end) {
        double least = kInf;
        for (const Line& x : kept) least = std::min(least, end == 0 ? x.at0 : x.at1);
        positive = positive || least > 0;
      }
      // P31: an isolated tap (K > n, its LHS a graph input or made by a Pointwise op, which V11
      // keeps out of every subgraph where t is in F) has no internal edge in a sink instance S, so
      // S = {t} (V5) and costs at least P21's lone price: its slack over c_t, whatever lambda.
      const TensorId lhs = p.ops[t].inputs[0];
      const OpId maker = p.producer[lhs];
      if (g_pointwise_lhs_loaded && reduction > n && !lone_prefetch &&
          (maker == kNoOp || p.ops[maker].kind == OpKind::Pointwise)) {
        const bool may_keep = maker != kNoOp && !a.TooLarge(lhs);
        double alone = lone_memo.Latency(p, t, no_weights, false, false, false);
        if (may_keep) alone = std::min(alone, lone_memo.Latency(p, t, no_weights, true, false, false));
        r.isolated[t] = std::max(0.0, alone - r.compute[t]);
        positive = positive || r.isolated[t] > 0;
      }
      r.taps[t] = std::move(kept);
      r.tap_count += positive ? 1 : 0;
    }
  }
  r.value = r.Value(p, all);
  return r;
}

double TapLines::Value(const Problem& p, const std::vector<OpId>& ops) const {
  double total = 0;
  std::vector<char> in(p.ops.size(), 0);
  for (OpId o : ops) {
    total += compute[o];
    in[o] = 1;
  }
  // Per output shape: the groups (index into priced) and the lone taps among `ops`.
  std::map<std::pair<Elements, Elements>, std::pair<std::vector<int>, std::vector<OpId>>> by_shape;
  for (size_t g = 0; g < priced.size(); ++g) {
    if (!in[priced[g].sum]) continue;
    const Tensor& out = p.tensors[p.ops[priced[g].sum].output];
    by_shape[{out.height, out.width}].first.push_back(static_cast<int>(g));
  }
  for (OpId o : ops) {
    if (!lone[o] || taps[o].empty()) continue;
    const Tensor& out = p.tensors[p.ops[o].output];
    by_shape[{out.height, out.width}].second.push_back(o);
  }
  const auto excess = [&](OpId t, double lambda) {
    if (t == kNoOp || !in[t] || taps[t].empty()) return 0.0;
    double least = kInf;
    for (const Line& x : taps[t]) least = std::min(least, x.at0 + lambda * (x.at1 - x.at0));
    return std::max({0.0, least, isolated.empty() ? 0.0 : isolated[t]});
  };
  for (const auto& [shape, members] : by_shape) {
    const auto& groups = members.first;  // named, not bound: captured below (clang 14)
    const auto& lone_taps = members.second;
    const auto value = [&](double lambda) {
      double sum = 0;
      std::vector<double> e;
      for (int g : groups) {
        const SumLines::Priced& s = priced[g];
        const int m = static_cast<int>(s.producers.size());
        e.clear();
        for (OpId x : s.producers) e.push_back(excess(x, lambda));
        std::sort(e.begin(), e.end());
        std::vector<double> prefix(m + 1, 0);
        for (int i = 0; i < m; ++i) prefix[i + 1] = prefix[i] + e[i];
        double fused_any = kInf, fused_one = kInf, first = kInf;
        for (int j = 0; j <= m; ++j) {
          if (!s.possible[j]) continue;
          const double line = s.by_j[j].at0 + lambda * (s.by_j[j].at1 - s.by_j[j].at0);
          fused_any = std::min(fused_any, line);
          if (j >= 1) fused_one = std::min(fused_one, line);
          first = std::min(first, line + prefix[m - j]);
        }
        sum += std::min(first, fused_any + fused_one);
      }
      for (OpId t : lone_taps) sum += excess(t, lambda);
      return sum;
    };
    total += MaximizeOverWeight(value);
  }
  return total;
}

}  // namespace annealer::bound_internal
