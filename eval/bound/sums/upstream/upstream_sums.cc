// P34 (eval/bound/sums/upstream/upstream_sums.h).
#include "eval/bound/sums/upstream/upstream_sums.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>

namespace annealer::bound_internal {

bool g_upstream_sums = true;

namespace {

constexpr int kLambdaSteps = 100;  // lambda on the simplex in steps of 1/100
constexpr size_t kMaxCutOps = 48;  // P34's cut over at most this many ops of the grid's shape

bool OnlyMode(const Analysis& a, OpId op, int keep_mask) {
  for (int m = 0; m < kModes; ++m) {
    if (a.HasMode(op, m) && !((keep_mask >> m) & 1)) return false;
  }
  return true;
}

}  // namespace

std::vector<std::array<double, 3>> ParetoLeast(std::vector<std::array<double, 3>> all) {
  // By sum, then lexicographically; each sum worked out once (the same comparisons, so the same
  // order, as summing at each one).
  std::vector<std::pair<double, std::array<double, 3>>> by_sum;
  by_sum.reserve(all.size());
  for (const auto& v : all) by_sum.emplace_back(v[0] + v[1] + v[2], v);
  std::sort(by_sum.begin(), by_sum.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first < y.first : x.second < y.second;
  });
  std::vector<std::array<double, 3>> kept;
  for (const auto& [sum, v] : by_sum) {
    bool dominated = false;
    for (const auto& k : kept) {
      if (k[0] <= v[0] && k[1] <= v[1] && k[2] <= v[2]) {
        dominated = true;
        break;
      }
    }
    if (!dominated) kept.push_back(v);
  }
  return kept;
}

namespace {

// The most a set P of nodes can gain, sum over P of reward - the penalties it incurs: each
// penalty (its readers, its producer or -1, its amount) is paid once when a reader is in P and its
// producer is not. A project selection: the positive rewards less a minimum cut (Edmonds-Karp on a
// small graph: the set's ops of the grid's shape and their inputs).
struct Penalty {
  std::vector<int> readers;
  int producer = -1;
  double amount = 0;
};
// Each penalty's amount counts `scale` times. The capacities in one flat array: the cut is asked
// for many mu, and row vectors cost an allocation each.
double MostGain(const std::vector<double>& reward, const std::vector<Penalty>& penalties, double scale) {
  const int nodes = static_cast<int>(reward.size()), source = nodes + static_cast<int>(penalties.size()),
            sink = source + 1, total = sink + 1;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> cap(static_cast<size_t>(total) * total, 0);
  const auto at = [&](int u, int v) -> double& { return cap[static_cast<size_t>(u) * total + v]; };
  double gain = 0;
  for (int v = 0; v < nodes; ++v) {
    if (reward[v] > 0) {
      at(source, v) = reward[v];
      gain += reward[v];
    } else {
      at(v, sink) = -reward[v];  // in P at a cost
    }
  }
  for (size_t i = 0; i < penalties.size(); ++i) {
    const int z = nodes + static_cast<int>(i);
    for (int r : penalties[i].readers) at(r, z) = kInf;
    at(z, penalties[i].producer >= 0 ? penalties[i].producer : sink) += penalties[i].amount * scale;
  }
  double cut = 0;
  std::vector<int> from(total), queue;
  while (true) {
    std::fill(from.begin(), from.end(), -1);
    from[source] = source;
    queue.assign(1, source);
    for (size_t head = 0; head < queue.size() && from[sink] < 0; ++head) {
      const int u = queue[head];
      for (int v = 0; v < total; ++v) {
        if (from[v] < 0 && at(u, v) > 1e-9) {
          from[v] = u;
          queue.push_back(v);
        }
      }
    }
    if (from[sink] < 0) break;
    double push = kInf;
    for (int v = sink; v != source; v = from[v]) push = std::min(push, at(from[v], v));
    for (int v = sink; v != source; v = from[v]) {
      at(from[v], v) -= push;
      at(v, from[v]) += push;
    }
    cut += push;
  }
  return std::max(0.0, gain - cut);
}

// P34's targets: the chain of Pointwise ops of one consumer each (reading it once, of s's shape)
// from s to the LHS of one MatMul F with K = s's width <= n and F in mode T only.
StripScope SingleChainTarget(const Problem& p, const Analysis& analysis, OpId s) {
  if (!OnlyMode(analysis, s, (1 << kT) | (1 << kSL)) || !analysis.HasMode(s, kSL)) return {};
  const Tensor& out = p.tensors[p.ops[s].output];
  OpId cur = s;
  OpId f = kNoOp;
  while (true) {
    const TensorId t = p.ops[cur].output;
    if (p.consumers[t].size() != 1) break;
    const OpId z = p.consumers[t][0];
    const auto& in = p.ops[z].inputs;
    if (std::count(in.begin(), in.end(), t) != 1) break;
    if (p.ops[z].kind == OpKind::Pointwise) {
      const Tensor& zo = p.tensors[p.ops[z].output];
      if (zo.height != out.height || zo.width != out.width) break;
      cur = z;
      continue;
    }
    if (p.ops[z].kind == OpKind::MatMul && in[0] == t) f = z;
    break;
  }
  if (f == kNoOp) return {};
  const Tensor& lhs = p.tensors[p.ops[f].inputs[0]];
  if (lhs.height != out.height || lhs.width != out.width || lhs.width > p.native) return {};
  if (!OnlyMode(analysis, f, 1 << kT)) return {};
  StripScope scope;
  scope.in_scope = true;
  scope.fs = {f};
  return scope;
}

}  // namespace

UpstreamSums UpstreamSumFloor(const Problem& p, const Analysis& analysis) {
  return UpstreamSumFloor(p, analysis, g_upstream_sums, &SingleChainTarget);
}

UpstreamSums UpstreamSumFloor(const Problem& p, const Analysis& analysis, bool enabled, StripScopeOf scope_of,
                              ClaimantsFinish finish) {
  UpstreamSums result;
  const auto num_ops = static_cast<OpId>(p.ops.size());
  for (OpId o = 0; o < num_ops; ++o) {
    result.compute.push_back(p.IsLayout(o) ? 0.0 : p.ops[o].base_cost * static_cast<double>(p.NativeTiles(o)));
  }
  std::vector<OpId> all(num_ops);
  for (OpId o = 0; o < num_ops; ++o) all[o] = o;
  const Elements cap = p.fast_memory_capacity;
  if (!enabled || p.chip.two_paths()) {
    result.value = result.Value(p, all);
    return result;
  }
  const auto own_rhs = [&](OpId x) {  // x's RHS is a graph input only x reads
    const TensorId rhs = p.ops[x].inputs[1];
    bool own = p.producer[rhs] == kNoOp && p.ops[x].inputs[0] != rhs;
    for (OpId c : p.consumers[rhs]) own = own && c == x;
    return own;
  };
  for (OpId s = 0; s < num_ops; ++s) {
    const Op& op = p.ops[s];
    if (op.kind != OpKind::Pointwise) continue;
    UpstreamSums::Claimant cl;
    cl.sum = s;
    std::vector<std::pair<double, OpId>> by_load;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const TensorId t = op.inputs[i];
      if (std::find(op.inputs.begin(), op.inputs.begin() + i, t) != op.inputs.begin() + i) continue;
      const OpId x = p.producer[t];
      if (x == kNoOp || p.ops[x].kind != OpKind::MatMul) continue;
      if (p.tensors[t].size() + 1 <= cap) continue;
      bool only_s = true;
      for (OpId c : p.consumers[t]) only_s = only_s && c == s;
      if (!only_s) continue;
      cl.producers.push_back(x);
      cl.loads.push_back(static_cast<double>(p.tensors[t].size()) / p.slow_memory_bandwidth);
      cl.computes.push_back(result.compute[x]);
      cl.q.push_back(own_rhs(x) ? p.ReductionLength(x) : 0);
    }
    if (cl.producers.empty()) continue;
    std::sort(cl.loads.begin(), cl.loads.end());
    std::sort(cl.computes.begin(), cl.computes.end());
    const Tensor& out = p.tensors[op.output];
    if (OnlyMode(analysis, s, 1 << kT)) {
      if (p.IsGraphOutput(op.output)) cl.written = static_cast<double>(out.size()) / p.slow_memory_bandwidth;
      result.claimants.push_back(std::move(cl));
      continue;
    }
    StripScope scope = scope_of(p, analysis, s);
    if (!scope.in_scope) continue;
    cl.fs = std::move(scope.fs);
    cl.f = cl.fs.empty() ? kNoOp : cl.fs.front();
    cl.full_left = scope.full_left;
    cl.tile_rows = scope.tile_rows;
    cl.upstream = true;
    result.claimants.push_back(std::move(cl));
    ++result.upstream_count;
  }
  if (finish != nullptr) finish(p, analysis, result);
  result.value = result.Value(p, all);
  return result;
}

std::vector<std::array<double, 3>> UpstreamSums::Configurations(const Problem& p, const Claimant& cl,
                                                                const std::vector<OpId>& ops) const {
  std::vector<std::array<double, 3>> all;
  for (const Tagged& t : TaggedConfigurations(p, cl, ops)) all.push_back(t.v);
  return ParetoLeast(std::move(all));
}

const std::vector<char>& UpstreamSums::ReadByUpstreamSums(const Problem& p) const {
  // At theta = 1/C with C > tau only the upstream sums claim loads (a mode-T claimant claims 0).
  std::vector<char>& read = memo->read_by_upstream_sums;
  if (read.empty()) {
    read.assign(p.tensors.size(), 0);
    for (const Claimant& other : claimants) {
      if (!other.upstream) continue;
      for (TensorId t : p.ops[other.sum].inputs) read[t] = 1;
    }
  }
  return read;
}

const ConfigurationMemo::Entry& UpstreamSums::Memoized(const Problem& p, size_t i, const std::vector<OpId>& ops,
                                                      std::vector<std::unique_ptr<ConfigurationMemo::Entry>>& slots) const {
  if (!slots[i]) {
    auto entry = std::make_unique<ConfigurationMemo::Entry>();
    entry->tagged = TaggedConfigurations(p, claimants[i], ops);
    std::vector<std::array<double, 3>> all;
    for (const Tagged& t : entry->tagged) all.push_back(t.v);
    entry->least = ParetoLeast(std::move(all));
    const std::vector<double>& lone = claimants[i].lone_floors;
    if (lone.empty()) {
      entry->least_with_lone = entry->least;
    } else {
      // The m - j least floors: the producers left unfused are any m - j of them, all but one per
      // LHS tensor at lone_floors.
      const std::vector<double>& kept = claimants[i].lone_retained;
      std::vector<double> prefix(lone.size() + 1, 0), prefix_kept(lone.size() + 1, 0);
      for (size_t x = 0; x < lone.size(); ++x) {
        prefix[x + 1] = prefix[x] + lone[x];
        prefix_kept[x + 1] = prefix_kept[x] + kept[x];
      }
      std::vector<std::array<double, 3>> raised;
      for (const Tagged& t : entry->tagged) {
        const size_t unfused = lone.size() - static_cast<size_t>(t.fused);
        const double add = std::max(prefix[unfused] - claimants[i].lone_discount, prefix_kept[unfused]);
        raised.push_back({t.v[0] + add, t.v[1] + add, t.v[2] + add});
      }
      entry->least_with_lone = ParetoLeast(std::move(raised));
    }
    slots[i] = std::move(entry);
  }
  return *slots[i];
}

std::vector<UpstreamSums::Tagged> UpstreamSums::TaggedConfigurations(const Problem& p, const Claimant& cl,
                                                                      const std::vector<OpId>& ops) const {
  std::vector<Tagged> configs;
  const Elements n = p.native;
  const Elements cap = p.fast_memory_capacity;
  const auto m = static_cast<int>(cl.loads.size());
  const Tensor& out = p.tensors[p.ops[cl.sum].output];
  // U_j: the m - j least loads; X_j: c_s and the j least producers' compute (each a lower bound
  // of any fused set of j).
  std::vector<double> unfused(m + 1, 0), fused(m + 1, compute[cl.sum]);
  for (int j = 0; j <= m; ++j) {
    for (int i = 0; i < m - j; ++i) unfused[j] += cl.loads[i];
    for (int i = 0; i < j; ++i) fused[j] += cl.computes[i];
  }
  // Mode T (P23's step 2): per r and j the widest c, which gives the least of all three values
  // (tau / C = R / N does not depend on c, and every value falls with C).
  {
    const Elements height = out.height, width = out.width;
    const double native = static_cast<double>(CeilDiv(height, n) * CeilDiv(width, n));
    std::vector<Elements> strip(m);
    for (Elements r = 1; r <= std::min(n, height); ++r) {
      for (int i = 0; i < m; ++i) strip[i] = std::min(r, cl.q[i]);
      std::sort(strip.begin(), strip.end());
      Elements held = 0;
      for (int j = 0; j <= m; ++j) {
        if (j > 0) held += strip[j - 1];
        const Elements per_column = (m - j + 1) * r + held;
        const Elements c = std::min(std::min(n, width), cap / per_column);
        if (c < 1) continue;
        const double rows = static_cast<double>(CeilDiv(height, r)), cols = static_cast<double>(CeilDiv(width, c));
        const double tau = std::max(1.0, rows * cols / native);
        const double u = unfused[j] + cl.written + cl.sink_write;
        const double v1 = (tau - 1) * fused[j];
        const double va = (1 - 1 / tau) * u;
        const double vc = cols <= tau ? va : 0.0;
        configs.push_back({{v1, va, vc}, true, 0, j});
      }
    }
  }
  if (!cl.upstream) return configs;
  // P40's FL: each step s makes rows x [0, W) of its output (its consumer, upstream, asks its full
  // reduction), so every step holds those rows of each unfused input, each fused producer's own
  // RHS whole (K_x x W) and a sink's element: rows <= rho; its rows cover H, so s and its fused
  // producers are charged at least ceil(H / min(rho, n)) native row tiles of their width. With
  // tile_rows those rows are the tile's, so tau_S is at least the same factor.
  if (cl.full_left) {
    const Elements height = out.height, width = out.width;
    std::vector<Elements> qs = cl.q;
    std::sort(qs.begin(), qs.end());
    Elements fused_rhs = 0;
    for (int j = 0; j <= m; ++j) {
      if (j > 0) fused_rhs += qs[j - 1] * width;
      if (fused_rhs + 1 > cap) break;
      double factor = 1;
      if (j < m) {
        const Elements rho = (cap - 1 - fused_rhs) / ((m - j) * width);
        if (rho < 1) continue;
        factor = static_cast<double>(CeilDiv(height, std::min(rho, n))) / static_cast<double>(CeilDiv(height, n));
      }
      const double va = cl.tile_rows ? (1 - 1 / factor) * unfused[j] : 0.0;
      configs.push_back({{(factor - 1) * fused[j], va, 0.0}, false, 0, j});
    }
  }
  if (cl.fs.empty()) return configs;
  // P46: with every target's RHS its own graph input, each k-loop target holds its own RHS slice
  // k x w beside the rest (distinct tensors, D5); at n_k >= 2 also its tile (W1, W4).
  bool all_own = true;
  for (const OpId f : cl.fs) {
    const TensorId rhs = p.ops[f].inputs[1];
    bool own = p.producer[rhs] == kNoOp && p.ops[f].inputs[0] != rhs;
    for (OpId c : p.consumers[rhs]) own = own && c == f;
    all_own = all_own && own;
  }
  const auto held_targets = [&](Elements room, Elements each) {
    const auto t = static_cast<Elements>(cl.fs.size());
    if (each <= 0) return static_cast<int>(t);
    return static_cast<int>(std::clamp<Elements>(room / each, 1, t));
  };
  // SL of F: F's grid (M x NF), K = s's width. The targets differ only in NF and whether F's RHS
  // is its own graph input: one pass for each such pair.
  std::vector<std::pair<Elements, bool>> seen;
  // The deficits' data over `ops`, without s and its producers (their f is at least C).
  std::vector<char> own(p.ops.size(), 0), in_ops(p.ops.size(), 0);
  own[cl.sum] = 1;
  for (OpId x : cl.producers) own[x] = 1;
  for (OpId o : ops) in_ops[o] = 1;
  const std::vector<char>& read_by_claimant = ReadByUpstreamSums(p);
  for (const OpId f : cl.fs) {
    const Tensor& fo = p.tensors[p.ops[f].output];
    const Elements M = fo.height, NF = fo.width, K = out.width;
    const int64_t R0 = CeilDiv(M, n), C0 = CeilDiv(NF, n);
    const double grid_native = static_cast<double>(R0 * C0);
    bool f_own = true;
    {
      const TensorId rhs = p.ops[f].inputs[1];
      f_own = p.producer[rhs] == kNoOp && p.ops[f].inputs[0] != rhs;
      for (OpId c : p.consumers[rhs]) f_own = f_own && c == f;
    }
    if (std::find(seen.begin(), seen.end(), std::make_pair(NF, f_own)) != seen.end()) continue;
    seen.emplace_back(NF, f_own);
    double grid_pointwise = 0;
    std::vector<double> grid_matmuls;
    std::map<int64_t, double> others;  // native tiles -> sum of c
    for (OpId o : ops) {
      if (own[o] || p.IsLayout(o) || compute[o] == 0) continue;
      const Tensor& t = p.tensors[p.ops[o].output];
      // A MatMul of the grid's shape with another K is never in F (G3), so never T there.
      if (t.height == M && t.width == NF && (p.ops[o].kind != OpKind::MatMul || p.ReductionLength(o) == K)) {
        if (p.ops[o].kind == OpKind::MatMul) {
          grid_matmuls.push_back(compute[o]);
        } else {
          grid_pointwise += compute[o];
        }
      } else {
        others[p.NativeTiles(o)] += compute[o];
      }
    }
    // The ops of the grid's shape that may run in S without making the claim's deficit a bound of
    // their compute alone: its Pointwise ops and its MatMuls of reduction K (index_of), and the inputs
    // each of them loads when it runs in S without their producer (every op of S makes all of its
    // output over the steps, so asks all of each input of its shape): a tensor too large to retain
    // (R5) that no upstream sum reads, made outside the set, by a Layout op (L2), or by another such op
    // left out of S. Any other MatMul, or one of s's own ops, may make it in S: no load.
    std::vector<OpId> grid_ops;
    std::vector<int> index_of(p.ops.size(), -1);
    for (OpId o : ops) {
      const Tensor& t = p.tensors[p.ops[o].output];
      if (own[o] || p.IsLayout(o) || t.height != M || t.width != NF) continue;
      if (p.ops[o].kind == OpKind::MatMul && p.ReductionLength(o) != K) continue;
      index_of[o] = static_cast<int>(grid_ops.size());
      grid_ops.push_back(o);
    }
    std::vector<Penalty> penalties;
    {
      std::map<TensorId, size_t> penalty_of;
      for (OpId o : grid_ops) {
        if (p.ops[o].kind != OpKind::Pointwise) continue;
        for (TensorId t : p.ops[o].inputs) {
          const Tensor& tt = p.tensors[t];
          if (tt.height != M || tt.width != NF || tt.size() + 1 <= cap || read_by_claimant[t]) continue;
          const OpId u = p.producer[t];
          if (u != kNoOp && in_ops[u] && (own[u] || (p.ops[u].kind == OpKind::MatMul && index_of[u] < 0))) continue;
          auto [it, fresh] = penalty_of.emplace(t, penalties.size());
          if (fresh) {
            Penalty pen;
            pen.producer = u != kNoOp && in_ops[u] ? index_of[u] : -1;
            pen.amount = static_cast<double>(tt.size()) / p.slow_memory_bandwidth;
            penalties.push_back(pen);
          }
          auto& readers = penalties[it->second].readers;
          if (std::find(readers.begin(), readers.end(), index_of[o]) == readers.end()) readers.push_back(index_of[o]);
        }
      }
    }
    // The deficit of the grid's ops in S at theta = 1/C, at most q of its MatMuls of reduction K
    // holding a tile (the others, if in S, upstream at least up_grid times their price): for any
    // mu >= 0 it is at most mu q plus the most a set can gain with those MatMuls' rewards less mu
    // (Lagrange), each op's reward its shortfall, each load's penalty its share (1 - 1/C) |t| / B.
    std::map<std::array<double, 3>, double> grid_deficit_memo;
    const auto grid_deficit = [&](double tau, double C, double up_grid, size_t q) {
      // The count alone past kMaxCutOps ops (a cut there would cost more than it is likely to give).
      if (grid_ops.size() > kMaxCutOps) return std::numeric_limits<double>::infinity();
      const double a = std::max(0.0, 1 - tau / C), a_up = std::max(0.0, 1 - up_grid / C), b = 1 - 1 / C;
      if (b <= 0) return 0.0;
      const std::array<double, 3> key{a, a_up, static_cast<double>(q)};
      if (auto it = grid_deficit_memo.find(key); it != grid_deficit_memo.end()) return it->second;
      std::vector<double> mus = {0};
      for (OpId o : grid_ops) {
        if (p.ops[o].kind != OpKind::MatMul) continue;
        for (double f : {0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0}) mus.push_back(f * a * compute[o]);
      }
      std::sort(mus.begin(), mus.end());
      mus.erase(std::unique(mus.begin(), mus.end()), mus.end());
      // Each op of the set in S at least up_grid times its price if it runs upstream; in mode T (on a
      // Pointwise path from a sink, so a MatMul there is in F and holds a tile) at least tau times,
      // and then each input of its shape is made in S in mode T too (its producer is on that path) or
      // loaded. So the deficit is at most sum a_up c plus the most the mode-T set gains at (a - a_up) c.
      double upstream_part = 0;
      for (OpId o : grid_ops) upstream_part += a_up * compute[o];
      double least = std::numeric_limits<double>::infinity();
      for (double mu : mus) {
        std::vector<double> reward;
        for (OpId o : grid_ops) {
          reward.push_back((a - a_up) * compute[o] - (p.ops[o].kind == OpKind::MatMul ? mu : 0.0));
        }
        least = std::min(least, upstream_part + mu * static_cast<double>(q) + MostGain(reward, penalties, b));
      }
      return grid_deficit_memo[key] = least;
    };
    std::sort(grid_matmuls.rbegin(), grid_matmuls.rend());
    std::vector<double> prefix(grid_matmuls.size() + 1, 0);
    for (size_t i = 0; i < grid_matmuls.size(); ++i) prefix[i + 1] = prefix[i] + grid_matmuls[i];
    // D at theta = 1/C: every op charged at least tau c_o; one that is not of the grid's shape, or a
    // MatMul of it beyond the q that hold a tile, is upstream: at least min(C, R, T n_k / N_o) too.
    const auto deficit = [&](double tau, double C, double R, double nk, size_t q) {
      const auto short_of = [&](double factor) { return std::max(0.0, 1 - factor / C); };
      const double up_grid = std::max(tau, std::min({C, R, tau * nk}));
      const size_t held = std::min(q, grid_matmuls.size());
      double d = std::min(short_of(tau) * (grid_pointwise + prefix[held]) + short_of(up_grid) * (prefix.back() - prefix[held]),
                          grid_deficit(tau, C, up_grid, q));
      for (const auto& [tiles, sum] : others) {
        d += short_of(std::max(tau, std::min({C, R, R * C * nk / static_cast<double>(tiles)}))) * sum;
      }
      return d;
    };
    std::vector<Elements> fused_k(m + 1, 0);  // the j least q_i
    {
      std::vector<Elements> qs = cl.q;
      std::sort(qs.begin(), qs.end());
      for (int j = 1; j <= m; ++j) fused_k[j] = fused_k[j - 1] + qs[j - 1];
    }
    for (Elements h = 1; h <= std::min(n, M); ++h) {
      const double R = static_cast<double>(CeilDiv(M, h));
      for (int j = 0; j <= m; ++j) {
        // (b) n_k = 1: k >= K; per distinct C the widest w.
        const Elements need = (m - j) * h * K + fused_k[j] * K;
        if (need < cap) {
          const Elements wmax = std::min(std::min(n, NF), (cap - need) / (h + (f_own ? K : 0)));
          int64_t last_c = -1;
          for (Elements w = wmax; w >= 1; --w) {
            const int64_t cols = CeilDiv(NF, w);
            if (cols == last_c) continue;
            last_c = cols;
            const double C = static_cast<double>(cols), tau = std::max(1.0, R * C / grid_native);
            const double fs = std::max(tau, C);
            const double v1 = (fs - 1) * fused[j];
            const double va = (1 - 1 / tau) * unfused[j];
            const double vc = C <= tau ? va
                                       : std::max(0.0, (1 - 1 / C) * unfused[j] - deficit(tau, C, R, 1, std::numeric_limits<size_t>::max()));
            // The narrowest w of these C column tiles holds the most targets: a sink's tile h x w
            // and each target's RHS K x w beside `need`.
            const Elements narrow = CeilDiv(NF, cols);
            configs.push_back({{v1, va, vc}, false, held_targets(cap - need - h * narrow, all_own ? K * narrow : 0), j});
          }
        }
        // (c) n_k >= 2: w >= K (V11); per distinct C the narrowest w and per n_k = ceil(K / k) the
        // smallest k (the most tiles held: the first step holds the (m - j) unfused slices h x k,
        // each fused producer's RHS slice K_x x k and F's RHS slice k x w when they are their own
        // graph inputs, and a tile per k-loop MatMul).
        int64_t last_c = -1;
        for (Elements w = K; w <= n; ++w) {
          const int64_t cols = CeilDiv(NF, w);
          if (cols == last_c) continue;
          last_c = cols;
          const Elements wide = std::min(w, NF);
          const double C = static_cast<double>(cols), tau = std::max(1.0, R * C / grid_native);
          const double fs = std::max(tau, C);
          const double v1 = (fs - 1) * fused[j];
          const double va = (1 - 1 / tau) * C * unfused[j];
          if (C <= tau) {
            // The least k (1) holds the most targets: each its tile h x w and RHS slice k x w.
            const Elements rest = cap - (m - j) * h - fused_k[j];
            if ((m - j) * h + fused_k[j] + (f_own ? wide : 0) + h * wide <= cap) {
              configs.push_back({{v1, va, va}, false, held_targets(rest, h * wide + (all_own ? wide : 0)), j});
            }
            continue;
          }
          for (Elements steps = 2; steps <= K; ++steps) {
            const Elements k = CeilDiv(K, steps);
            if (CeilDiv(K, k) != steps) continue;
            const Elements held = (m - j) * h * k + fused_k[j] * k + (f_own ? k * wide : 0);
            if (held + h * wide > cap) continue;
            const auto q = static_cast<size_t>((cap - held) / (h * wide));
            const double vc = std::max(0.0, (C - 1) * unfused[j] - deficit(tau, C, R, static_cast<double>(steps), q));
            const Elements rest = cap - (m - j) * h * k - fused_k[j] * k;
            configs.push_back({{v1, va, vc}, false, held_targets(rest, h * wide + (all_own ? k * wide : 0)), j});
          }
        }
      }
    }
  }
  return configs;
}

double UpstreamSums::Value(const Problem& p, const std::vector<OpId>& ops) const {
  double total = 0;
  for (OpId o : ops) total += compute[o];
  std::vector<char> in(p.ops.size(), 0);
  for (OpId o : ops) in[o] = 1;
  std::vector<const std::vector<std::array<double, 3>>*> sets;
  bool any_upstream = false;
  auto& slots = memo->Of(ops, claimants.size());
  for (size_t i = 0; i < claimants.size(); ++i) {
    if (!in[claimants[i].sum]) continue;
    any_upstream = any_upstream || claimants[i].upstream;
    // P55's floors are claimed in the producers' own subgraphs, which lie in the set only when the
    // producers do (P12: every subgraph lies in one island).
    bool producers_in = true;
    for (OpId x : claimants[i].producers) producers_in = producers_in && in[x];
    const ConfigurationMemo::Entry& entry = Memoized(p, i, ops, slots);
    sets.push_back(producers_in ? &entry.least_with_lone : &entry.least);
  }
  // Without an upstream sum the part is P23's claims at one mix, never above `sums`: skip it.
  if (!any_upstream) return total;
  double best = 0;
  for (int a = 0; a <= kLambdaSteps; ++a) {
    for (int b = 0; a + b <= kLambdaSteps; ++b) {
      const double l1 = static_cast<double>(a) / kLambdaSteps, la = static_cast<double>(b) / kLambdaSteps;
      const double lc = std::max(0.0, 1 - l1 - la);
      double sum = 0;
      for (const auto* set : sets) {
        double least = std::numeric_limits<double>::infinity();
        for (const auto& v : *set) least = std::min(least, l1 * v[0] + la * v[1] + lc * v[2]);
        if (least < std::numeric_limits<double>::infinity()) sum += std::max(0.0, least);
      }
      best = std::max(best, sum);
    }
  }
  return total + best;
}

}  // namespace annealer::bound_internal
