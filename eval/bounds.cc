// The facts P1..P15 and the coupling are stated in the header; comments here say which one a
// block applies.
#include "eval/bounds.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>

namespace annealer {

namespace {

enum Mode : int { kT = 0, kSL = 1, kSR = 2, kFL = 3, kFR = 4, kModes = 5 };
constexpr const char* kModeName[kModes] = {"T", "SL", "SR", "FL", "FR"};

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

class Analysis {
 public:
  explicit Analysis(const Problem& problem) : p_(problem), n_(problem.native) {
    const int num_ops = static_cast<int>(p_.ops.size());
    for (const Op& op : p_.ops) max_inputs_ = std::max(max_inputs_, static_cast<int>(op.inputs.size()));
    modes_.assign(num_ops, 0);
    factor_.assign(num_ops, {1, 1, 1, 1, 1});
    stream_tiles_.assign(num_ops, {0, 0, 0, 0, 0});
    passes_.assign(num_ops, {1, 1, 1, 1, 1});
    ComputeModes();
  }

  const Problem& problem() const { return p_; }
  bool HasMode(OpId op, int m) const { return (modes_[op] >> m) & 1; }
  int64_t Factor(OpId op, int m) const { return factor_[op][m]; }
  int64_t StreamTiles(OpId op, int m) const { return stream_tiles_[op][m]; }
  // The input slot in which the only consumer of op's output reads it, when there is one
  // consumer and it reads the output once; else -1 (P6, P10 need op's strip mode unique).
  int OnlyConsumerSlot(OpId op) const {
    const TensorId out = p_.ops[op].output;
    if (p_.consumers[out].size() != 1) return -1;
    const auto& in = p_.ops[p_.consumers[out][0]].inputs;
    if (std::count(in.begin(), in.end(), out) != 1) return -1;
    return static_cast<int>(std::find(in.begin(), in.end(), out) - in.begin());
  }

  // A MatMul without Pointwise consumers is in F only as a sink: F is what the sinks reach
  // through Pointwise ops (G3), so in mode T no op of its subgraph consumes its output.
  bool SinkWhenTile(OpId op) const {
    if (p_.ops[op].kind != OpKind::MatMul) return false;
    for (OpId z : p_.consumers[p_.ops[op].output]) {
      if (p_.ops[z].kind == OpKind::Pointwise) return false;
    }
    return true;
  }
  // In mode T the op is in no other mode: it can only be T, or it is a sink when T.
  bool TileModeAlone(OpId op) const { return modes_[op] == 1 || SinkWhenTile(op); }

  // The mode in which a consumer in mode m demands the producer of its input `slot` (D1-D3).
  int Demand(OpId consumer, int slot, int m) const {
    if (p_.ops[consumer].kind == OpKind::Pointwise) return m;
    if (m == kT) return slot == 0 ? kSL : kSR;
    return slot == 0 ? kFL : kFR;
  }

  // Can tensor t (|t| elements) never fit beside one more element (P2, P4)?
  bool TooLarge(TensorId t) const { return p_.tensors[t].size() + 1 > p_.fast_memory_capacity; }

  // Can `producer` serve demand d inside a subgraph (P2)?
  bool CanServe(OpId producer, int d) const {
    const Op& op = p_.ops[producer];
    if (op.kind != OpKind::MatMul) return true;
    if (d != kFL && d != kFR) return true;
    const TensorId whole = op.inputs[d == kFL ? 1 : 0];
    return p_.producer[whole] != kNoOp || !TooLarge(whole);
  }

  // Can the edge producer -> consumer (input `slot`) be internal with the consumer in mode m?
  bool EdgeFeasible(OpId producer, OpId consumer, int slot, int m) const {
    const Op& c = p_.ops[consumer];
    if (c.kind == OpKind::MatMul && m == kT && p_.ops[producer].kind == OpKind::Pointwise &&
        p_.ReductionLength(consumer) > n_) {
      return false;  // P1
    }
    return CanServe(producer, Demand(consumer, slot, m));
  }

  // Ops that can share a subgraph with `start` (P9). The walk visits (op, mode, entry) states;
  // past kReachBudget of them it stops and answers "every op" (ReachSet::all). Claiming more
  // ops may share a subgraph only merges consumers' loads (P9) and drops P10 groups, so a
  // saturated answer keeps the bound valid, only weaker. A walk has at most ops x 5 modes x
  // (inputs + 1) entries states, so below 273 ops of at most two inputs no walk saturates:
  // contest-size problems (up to ~150 ops) never see it; a 10,000-op stack walks in linear time.
  struct ReachSet {
    bool all = false;
    std::vector<OpId> ops;  // sorted, when !all
    bool Contains(OpId op) const { return all || std::binary_search(ops.begin(), ops.end(), op); }
  };
  static constexpr size_t kReachBudget = 1 << 12;
  ReachSet Reach(OpId start, int only_mode = -1) const {
    struct State {
      OpId op;
      int mode;
      int entry;  // input slot the path came in by, -1 when it came from a consumer or started
    };
    const int entries = max_inputs_ + 1;
    // Scratch reused across calls: a state is seen when its stamp is the current generation.
    if (reach_seen_.size() != p_.ops.size() * kModes * entries) {
      reach_seen_.assign(p_.ops.size() * kModes * entries, 0);
      reach_op_seen_.assign(p_.ops.size(), 0);
      reach_generation_ = 0;
    }
    if (++reach_generation_ == 0) {
      std::fill(reach_seen_.begin(), reach_seen_.end(), 0);
      std::fill(reach_op_seen_.begin(), reach_op_seen_.end(), 0);
      reach_generation_ = 1;
    }
    const uint32_t generation = reach_generation_;
    ReachSet result;
    std::vector<State> stack;
    size_t visited = 0;
    auto push = [&](OpId op, int mode, int entry) {
      const size_t key = (static_cast<size_t>(op) * kModes + mode) * entries + (entry + 1);
      if (reach_seen_[key] == generation) return;
      reach_seen_[key] = generation;
      ++visited;
      if (reach_op_seen_[op] != generation) {
        reach_op_seen_[op] = generation;
        result.ops.push_back(op);
      }
      stack.push_back({op, mode, entry});
    };
    for (int m = 0; m < kModes; ++m) {
      if (HasMode(start, m) && (only_mode < 0 || m == only_mode)) push(start, m, -1);
    }
    while (!stack.empty()) {
      if (visited > kReachBudget) return ReachSet{true, {}};
      const State s = stack.back();
      stack.pop_back();
      const Op& op = p_.ops[s.op];
      // Up an input edge: the producer is demanded by this op's mode.
      for (int slot = 0; slot < static_cast<int>(op.inputs.size()); ++slot) {
        if (slot == s.entry) continue;
        const OpId y = p_.producer[op.inputs[slot]];
        if (y == kNoOp || !EdgeFeasible(y, s.op, slot, s.mode)) continue;
        push(y, Demand(s.op, slot, s.mode), -1);
      }
      // Down an output edge: the consumer picks a mode; if it demands this op in another mode,
      // the op is in both and the edge it came in by must allow that mode too. A MatMul without
      // Pointwise consumers is in F only as a sink (G3): in mode T nothing inside consumes it.
      if (s.mode == kT && SinkWhenTile(s.op)) continue;
      for (OpId z : p_.consumers[op.output]) {
        const Op& zop = p_.ops[z];
        for (int slot = 0; slot < static_cast<int>(zop.inputs.size()); ++slot) {
          if (zop.inputs[slot] != op.output) continue;
          for (int mz = 0; mz < kModes; ++mz) {
            if (!HasMode(z, mz) || !EdgeFeasible(s.op, z, slot, mz)) continue;
            const int d = Demand(z, slot, mz);
            if (d != s.mode && s.entry >= 0) {
              const OpId y = p_.producer[op.inputs[s.entry]];
              if (!EdgeFeasible(y, s.op, s.entry, d)) continue;
            }
            push(z, mz, slot);
          }
        }
      }
    }
    std::sort(result.ops.begin(), result.ops.end());
    return result;
  }

 private:
  mutable std::vector<uint32_t> reach_seen_;     // Reach's scratch, per (op, mode, entry)
  mutable std::vector<uint32_t> reach_op_seen_;  // per op
  mutable uint32_t reach_generation_ = 0;

  // P13: a lower bound on how many times an op further upstream of the k-loop MatMul f makes
  // its whole output over one subgraph (C3, C6): its region each step is full along one side and
  // along the other a tile's rows (passes: columns x k-steps), a tile's columns (rows x
  // k-steps), a k-range (tiles) or everything (every step).
  int64_t TerminalPasses(OpId f) const {
    const Tensor& out = p_.tensors[p_.ops[f].output];
    const int64_t rows = CeilDiv(out.height, n_), cols = CeilDiv(out.width, n_);
    const int64_t ks = CeilDiv(p_.ReductionLength(f), n_);
    return std::min({rows * cols, rows * ks, cols * ks});
  }

  // Reverse topological order: an op's possible modes follow from its consumers' (P1, P2),
  // with the recomputation factor (P7) and the streaming tile count (P6) of the strip modes.
  void ComputeModes() {
    const auto& order = p_.topological_order;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const OpId x = *it;
      int mask = 1 << kT;
      int64_t factor[kModes] = {1, 1, 1, 1, 1};
      int64_t stream[kModes] = {0, 0, 0, 0, 0};
      bool strip_seen[kModes] = {false, false, false, false, false};
      bool full_seen[kModes] = {false, false, false, false, false};
      int64_t passes[kModes] = {1, 1, 1, 1, 1};
      const TensorId out = p_.ops[x].output;
      for (OpId z : p_.consumers[out]) {
        const Op& zop = p_.ops[z];
        for (int slot = 0; slot < static_cast<int>(zop.inputs.size()); ++slot) {
          if (zop.inputs[slot] != out) continue;
          for (int mz = 0; mz < kModes; ++mz) {
            if (!HasMode(z, mz) || !EdgeFeasible(x, z, slot, mz)) continue;
            const int d = Demand(z, slot, mz);
            if (d == kT) continue;
            mask |= 1 << d;
            if (d == kFL || d == kFR) {
              // P13: a full-mode op makes its region every step of the terminal k-loop.
              const int64_t f = zop.kind == OpKind::MatMul ? passes_[z][mz] : passes_[z][d];
              factor[d] = full_seen[d] ? std::min(factor[d], f) : f;
              full_seen[d] = true;
              passes[d] = factor[d];
              continue;
            }
            // Direct entry into a k-loop MatMul, or through a Pointwise op in the same mode.
            int64_t f = 0;
            int64_t tiles = 0;
            if (zop.kind == OpKind::MatMul) {
              const int64_t p = TerminalPasses(z);
              passes[d] = strip_seen[d] ? std::min(passes[d], p) : p;
              const Tensor& zo = p_.tensors[zop.output];
              f = CeilDiv(d == kSL ? zo.width : zo.height, n_);
              tiles = p_.ReductionLength(z) > n_ ? CeilDiv(zo.width, n_) * CeilDiv(zo.height, n_) : 0;
            } else {
              f = factor_[z][d];
              tiles = 0;  // a Pointwise op in a strip: K* <= n, no streaming claim
              passes[d] = strip_seen[d] ? std::min(passes[d], passes_[z][d]) : passes_[z][d];
            }
            factor[d] = strip_seen[d] ? std::min(factor[d], f) : f;
            stream[d] = strip_seen[d] ? std::min(stream[d], tiles) : tiles;
            strip_seen[d] = true;
          }
        }
      }
      modes_[x] = mask;
      for (int m = 0; m < kModes; ++m) {
        factor_[x][m] = std::max<int64_t>(1, factor[m]);
        stream_tiles_[x][m] = stream[m];
        passes_[x][m] = std::max<int64_t>(1, passes[m]);
      }
    }
  }

  const Problem& p_;
  const Elements n_;
  int max_inputs_ = 0;
  std::vector<int> modes_;  // bit m set: the op can be demanded in mode m
  std::vector<std::array<int64_t, kModes>> factor_;
  std::vector<std::array<int64_t, kModes>> stream_tiles_;
  // Per op and mode (SL, SR, FL, FR): the least TerminalPasses of the k-loop MatMuls the op
  // can sit upstream of in that mode (P13); 1 for T.
  std::vector<std::array<int64_t, kModes>> passes_;
};

struct TermInfo {
  BoundTerm term;
  int option = -1;      // -1: fixed term; otherwise the option index of `owner` it belongs to
  OpId owner = kNoOp;   // the op whose option carries the term
};

struct Built {
  BoundModel model;
  std::vector<TermInfo> terms;  // for the explanation
  // P12: per island (ids 0..islands-1), its least compute and forced traffic (elements).
  int islands = 0;
  std::vector<int> island_of;  // per op
  std::vector<double> island_compute;
  std::vector<Elements> island_traffic;
  std::vector<Elements> island_weight_traffic;  // H6: the part on the weight path
};

std::string Str(int64_t v) { return std::to_string(v); }

// P11: the least a MatMul c with K <= n, alone with both operands (boundary, loaded, only c
// requests them, c in mode T only), loads of them over one subgraph, whatever w, h, k and
// traversal. With k = K (one k-step per tile) a tile's LHS strip R x [0,K) is free only when
// the tile before had the same row, its RHS strip [0,K) x C only when it had the same column
// (M1); consecutive tiles differ in one of them, so every tile loads at least K x min(|R|, |C|).
// The step of tile (0,0) holds both strips and its output tile: h'K + Kw' + h'w' <= capacity
// (W; h' = min(h, M), w' = min(w, N)). With k < K every step loads new slices (P5): |LHS| x
// columns + |RHS| x rows, with h'w' + h' + w' <= capacity. The least over all w, h of both.
Elements StripLoads(const Problem& problem, OpId c) {
  const Op& op = problem.ops[c];
  const Elements k = problem.ReductionLength(c);
  const Tensor& out = problem.tensors[op.output];
  const Elements rows_total = out.height, cols_total = out.width;
  const Elements lhs = problem.tensors[op.inputs[0]].size(), rhs = problem.tensors[op.inputs[1]].size();
  const Elements n = problem.native, capacity = problem.fast_memory_capacity;
  // A side beyond the output's behaves like the output's side; a grid of sides too large to
  // scan makes no claim (a minimum over part of it would not be a bound).
  const Elements max_h = std::min(n, rows_total), max_w = std::min(n, cols_total);
  if (max_h * max_w > (Elements{1} << 16)) return 0;
  Elements best = std::numeric_limits<Elements>::max();
  for (Elements h = 1; h <= max_h; ++h) {
    const Elements hh = std::min(h, rows_total);
    const Elements nr = CeilDiv(rows_total, h), h_last = rows_total - (nr - 1) * h;
    for (Elements w = 1; w <= max_w; ++w) {
      const Elements ww = std::min(w, cols_total);
      const Elements nc = CeilDiv(cols_total, w), w_last = cols_total - (nc - 1) * w;
      if (hh * k + k * ww + hh * ww <= capacity) {
        const Elements sum = (nr - 1) * (nc - 1) * std::min(h, w) + (nr - 1) * std::min(h, w_last) +
                             (nc - 1) * std::min(h_last, w) + std::min(h_last, w_last);
        best = std::min(best, k * sum);
      }
      if (k > 1 && hh * ww + hh + ww <= capacity) best = std::min(best, lhs * nc + rhs * nr);
    }
  }
  return best == std::numeric_limits<Elements>::max() ? 0 : best;
}

// P12. Islands: the classes of ops joined by an edge that is feasible in some mode of its
// consumer. Every internal edge of a valid subgraph is feasible in its consumer's mode (the
// premise of P9), and a subgraph is connected through internal edges (V5), so every subgraph
// lies within one island. Per island, the least compute of its ops (P7) and the traffic that
// subgraphs of that island must move: a graph input one of its ops reads (P3, V8), a graph
// output one of its ops produces (V9), and a tensor too large to retain (P4) that crosses
// islands, written in its producer's island (P8) and loaded in each consumer's (P3). Each
// amount is a load or write made in a subgraph of that island, so summing per island
// max(compute, traffic / B) never exceeds the sum of the subgraphs' latencies (L1, L2).
template <class LoadCost>
void Islands(const Problem& problem, const Analysis& a, const LoadCost& load_cost, Built& built,
             const std::vector<char>& weights) {
  const int num_ops = static_cast<int>(problem.ops.size());
  std::vector<int> parent(num_ops);
  for (int i = 0; i < num_ops; ++i) parent[i] = i;
  const auto find = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (OpId c = 0; c < num_ops; ++c) {
    const Op& op = problem.ops[c];
    for (int slot = 0; slot < static_cast<int>(op.inputs.size()); ++slot) {
      const OpId p = problem.producer[op.inputs[slot]];
      if (p == kNoOp) continue;
      bool feasible = false;
      for (int m = 0; m < kModes && !feasible; ++m) feasible = a.HasMode(c, m) && a.EdgeFeasible(p, c, slot, m);
      if (feasible) parent[find(p)] = find(c);
    }
  }
  built.island_of.assign(num_ops, -1);
  std::vector<int> id_of_root(num_ops, -1);
  built.islands = 0;
  for (OpId x = 0; x < num_ops; ++x) {
    const int root = find(x);
    if (id_of_root[root] < 0) id_of_root[root] = built.islands++;
    built.island_of[x] = id_of_root[root];
  }
  built.island_compute.assign(built.islands, 0);
  built.island_traffic.assign(built.islands, 0);
  built.island_weight_traffic.assign(built.islands, 0);
  for (OpId x = 0; x < num_ops; ++x) {
    built.island_compute[built.island_of[x]] +=
        problem.ops[x].base_cost * static_cast<double>(problem.NativeTiles(x));
  }
  // The least a consumer c loads of its input `slot` when it reads it alone and can see it
  // neither ephemeral nor retained: the cheapest of its modes (P3, P5, P6).
  const auto least_load = [&](OpId c, int slot) {
    Elements least = std::numeric_limits<Elements>::max();
    for (int m = 0; m < kModes; ++m) {
      if (a.HasMode(c, m)) least = std::min(least, load_cost(c, m, slot).first);
    }
    return least;
  };
  std::vector<int> seen(built.islands, -1);  // stamp: the tensor last counted in the island
  for (TensorId t = 0; t < static_cast<TensorId>(problem.tensors.size()); ++t) {
    const auto& consumers = problem.consumers[t];
    const OpId p = problem.producer[t];
    const Elements size = problem.tensors[t].size();
    if (p != kNoOp && consumers.empty()) {
      built.island_traffic[built.island_of[p]] += size;  // a graph output (V9)
      continue;
    }
    if (consumers.empty()) continue;
    const int home = p == kNoOp ? -1 : built.island_of[p];
    if (p != kNoOp && !a.TooLarge(t)) continue;  // may be retained into another island
    bool crosses = false;
    for (OpId c : consumers) {
      const int island = built.island_of[c];
      if (island == home || seen[island] == t) continue;
      seen[island] = t;
      crosses = true;
      // Consumers of t in this island: one reading it once loads at least its least load,
      // several at least |t| together (they may share a subgraph).
      int readers = 0;
      OpId only = kNoOp;
      for (OpId o : consumers) {
        if (built.island_of[o] != island) continue;
        const auto& in = problem.ops[o].inputs;
        readers += static_cast<int>(std::count(in.begin(), in.end(), t));
        only = o;
      }
      Elements load = size;
      if (readers == 1) {
        const auto& in = problem.ops[only].inputs;
        load = std::max(size, least_load(only, static_cast<int>(std::find(in.begin(), in.end(), t) - in.begin())));
      }
      (weights[t] ? built.island_weight_traffic : built.island_traffic)[island] += load;  // H6
    }
    if (crosses && home >= 0) built.island_traffic[home] += size;  // written for them (P8)
  }
}

// P14. Weights that no compute of another op can hide (docs/lower-bound.md, "Streamed weights
// (P14)"; the header states the fact). Per MatMul x, c_x = base x native tiles and, for its two
// kinds of instance:
//   T-only (x in F, in no other mode): it loads its own graph inputs (read by x alone) in full,
//     streamed once per column / row tile when K > n (P5), and writes its output when that is a
//     graph output and this is the instance that writes it (V9, M2): W_T;
//   other (some mode upstream of the k-loop): those inputs at least once (P3), W_N, and it
//     computes at least f_N x c_x, f_N its least factor over those modes (P7, P13's passes).
// x is heavy when g_x = min(W_T/B - c_x, max(W_N/B - c_x, (f_N - 1) c_x)) > 0 (a graph output
// is counted at its writing instance, a sink: only W_T). An instance "pays on memory" when its
// own traffic covers c_x + g_x (T-only always; the other kind when W_N/B - c_x >= g_x and the
// compute side does not already cover it), else "on compute".
// A subgraph with F of reduction K* and sinks of shape (H, W) (G3, V12; Pointwise ops keep
// shapes) is a "world": its ops are F (MatMuls of that K* and shape), E (Pointwise ops of that
// shape, fed by E, F or Layout ops) and U (ops with an upstream mode, upstream of a producer of
// an F input: a MatMul, or any op when K* <= n; V11), joined by internal edges (V5). The classes
// of a world's edge graph hold every subgraph of that world. A subgraph with an activated
// instance that pays on memory pays M_S >= its instances' own loads; any other subgraph
// a C_S + (1 - a) M_S. So each op claims the least of the lines of where its picked instance
// can be, and the total is at least their sum for every a (Hid: the members of every class in
// which an activated op may pay on memory, except the heavy ops that pay on memory wherever
// they sit in that class; they can be beside one).
struct Line {  // at0 + a (at1 - at0): a claim at the weight a
  double at0 = 0, at1 = 0;
};
struct Streaming {
  Latency value = 0;   // the best over a of the sum of the ops' least lines, plus `retention`
  int activated = 0;   // heavy ops whose gain counts
  std::vector<std::vector<Line>> lines;  // per op, its claim is the least of these
  // P15: the reloads of produced inputs by activated ops that always sit alone, at weight a
  // (whole problem only: a host may lie in another island).
  std::function<double(double)> retention;
};

// The maximum over a in [0, 1] of the sum over the selected ops of their least line, plus
// `extra` (the sum is concave, P15's term need not be: a ternary search, then the ends; any a
// gives a bound, so an approximate maximum is still one).
template <class Selected>
double BestOverWeight(const std::vector<std::vector<Line>>& lines, const Selected& selected,
                      const std::function<double(double)>& extra = {}) {
  const auto sum = [&](double w) {
    double total = extra ? extra(w) : 0;
    for (size_t op = 0; op < lines.size(); ++op) {
      if (!selected(static_cast<OpId>(op))) continue;
      double least = std::numeric_limits<double>::infinity();
      for (const Line& l : lines[op]) least = std::min(least, l.at0 + w * (l.at1 - l.at0));
      total += least;
    }
    return total;
  };
  double lo = 0, hi = 1;
  for (int i = 0; i < 40; ++i) {
    const double m1 = lo + (hi - lo) / 3, m2 = hi - (hi - lo) / 3;
    if (sum(m1) < sum(m2)) {
      lo = m1;
    } else {
      hi = m2;
    }
  }
  return std::max({sum((lo + hi) / 2), sum(0), sum(1)});
}

Streaming StreamingBound(const Problem& problem, const Analysis& a) {
  const int num_ops = static_cast<int>(problem.ops.size());
  const Elements n = problem.native;
  // H6: on a chip with a weight path the problem here is WeightPathRelaxed's, and a subgraph's
  // memory time max(w / Bw, o / B) is at least (w + o) / (B + Bw): the loads count at the sum.
  const double bandwidth = problem.slow_memory_bandwidth + problem.chip.weight_bandwidth;
  std::vector<double> compute(num_ops);
  Streaming result;
  for (OpId x = 0; x < num_ops; ++x) {
    compute[x] = problem.ops[x].base_cost * static_cast<double>(problem.NativeTiles(x));
  }
  // Per op, the loads and writes an instance makes of tensors no other op touches: T-only, its
  // graph inputs (streamed per column / row tile when a MatMul has K > n, P5) and its graph
  // output (at the writing instance); other, those inputs once (P3); and the least factor of its
  // non-T modes (P7, P13), infinite when it has none. Layout ops claim nothing.
  std::vector<double> own_t(num_ops, 0), own_n(num_ops, 0),
      factor_n(num_ops, std::numeric_limits<double>::infinity());
  std::vector<char> claims(num_ops, 0);
  // Heavy ops, their gains and the side the other kind of instance pays on.
  std::vector<double> gain(num_ops, 0);
  std::vector<char> other_on_memory(num_ops, 0);
  std::vector<double> retain_load(num_ops, 0);  // P15: produced inputs / B of a T-only MatMul
  std::vector<char> retainer(num_ops, 0);        // heavy only with them
  bool any_heavy = false;
  for (OpId x = 0; x < num_ops; ++x) {
    const Op& op = problem.ops[x];
    if (op.kind == OpKind::Layout) continue;
    claims[x] = 1;
    const Tensor& out = problem.tensors[op.output];
    const bool k_split = op.kind == OpKind::MatMul && problem.ReductionLength(x) > n;
    Elements streamed = 0, once = 0;
    for (int slot = 0; slot < static_cast<int>(op.inputs.size()); ++slot) {
      const TensorId t = op.inputs[slot];
      if (problem.producer[t] != kNoOp || problem.consumers[t].size() != 1) continue;
      const Elements size = problem.tensors[t].size();
      once += size;
      streamed += k_split ? size * (slot == 0 ? CeilDiv(out.width, n) : CeilDiv(out.height, n)) : size;
    }
    const bool graph_output = problem.IsGraphOutput(op.output);
    if (graph_output) streamed += out.size();
    own_t[x] = static_cast<double>(streamed) / bandwidth;
    own_n[x] = static_cast<double>(once) / bandwidth;
    double least_factor = std::numeric_limits<double>::infinity();
    for (int m = 0; m < kModes && !graph_output; ++m) {
      if (m != kT && a.HasMode(x, m)) least_factor = std::min(least_factor, static_cast<double>(a.Factor(x, m)));
    }
    factor_n[x] = least_factor;
    if (op.kind != OpKind::MatMul || op.inputs[0] == op.inputs[1]) continue;
    double g = own_t[x] - compute[x];
    bool memory_side = false;
    if (least_factor < std::numeric_limits<double>::infinity()) {
      const double memory_n = own_n[x] - compute[x];
      const double compute_n = (least_factor - 1) * compute[x];
      g = std::min(g, std::max(memory_n, compute_n));
      memory_side = compute_n < g;
    }
    if (least_factor == std::numeric_limits<double>::infinity()) {
      // P15: a T-only MatMul also loads its produced inputs in each subgraph unless the one
      // before retains them; one that may gain only with them is a candidate ("retainer").
      Elements produced = 0;
      for (size_t slot = 0; slot < op.inputs.size(); ++slot) {
        const TensorId t = op.inputs[slot];
        const OpId p = problem.producer[t];
        if (p == kNoOp || problem.ops[p].kind == OpKind::Layout) continue;
        if (slot == 1 && op.inputs[0] == t) continue;
        produced += problem.tensors[t].size();
      }
      retain_load[x] = static_cast<double>(produced) / bandwidth;
      if (g <= 0 && g + retain_load[x] > 0) {
        g += retain_load[x];
        retainer[x] = 1;
      }
    }
    if (g > 0) {
      gain[x] = g;
      other_on_memory[x] = memory_side;
      any_heavy = true;
    }
  }
  // What each op's picked instance claims, as lines in the weight a of the subgraphs that pay
  // a C_S + (1 - a) M_S (those without an activated instance paying on memory; the others pay
  // M_S): the least over where that instance can be.
  const auto fill_lines = [&](const std::vector<char>& activated, const std::vector<char>& hidden) {
    result.lines.assign(num_ops, {});
    for (OpId y = 0; y < num_ops; ++y) {
      auto& lines = result.lines[y];
      if (!claims[y]) {
        lines.push_back({0, 0});
        continue;
      }
      const bool other = factor_n[y] < std::numeric_limits<double>::infinity();
      const double c = compute[y];
      const Line t_mixed{own_t[y], c};                        // a c + (1 - a) W_T
      const Line n_mixed{own_n[y], other ? factor_n[y] * c : 0};  // a f c + (1 - a) W_N
      if (hidden[y]) {  // beside an activated op paying on memory: its own loads; or elsewhere
        lines.push_back({own_t[y], own_t[y]});
        if (other) lines.push_back({own_n[y], own_n[y]});
        if (!activated[y]) lines.push_back(t_mixed);
        if (other && !(activated[y] && other_on_memory[y])) lines.push_back(n_mixed);
      } else if (activated[y]) {  // pays on memory, or on compute away from them
        lines.push_back({own_t[y], own_t[y]});
        if (other) lines.push_back(other_on_memory[y] ? Line{own_n[y], own_n[y]} : n_mixed);
      } else {  // away from them, unless it pays on memory beside one (then it is heavy)
        lines.push_back(t_mixed);
        if (other) lines.push_back(n_mixed);
        if (gain[y] > 0) {
          lines.push_back({own_t[y], own_t[y]});
          if (other && other_on_memory[y]) lines.push_back({own_n[y], own_n[y]});
        }
      }
    }
  };
  if (!any_heavy) {
    fill_lines(std::vector<char>(num_ops, 0), std::vector<char>(num_ops, 0));
    result.value = BestOverWeight(result.lines, [](OpId) { return true; });
    return result;
  }

  bool keeps_shape = true;  // every Pointwise op's inputs have its output's shape (the reader checks)
  for (const Op& op : problem.ops) {
    if (op.kind != OpKind::Pointwise) continue;
    const Tensor& out = problem.tensors[op.output];
    for (TensorId t : op.inputs) {
      const Tensor& in = problem.tensors[t];
      keeps_shape = keeps_shape && in.width == out.width && in.height == out.height;
    }
  }
  struct WorldClass {
    std::vector<OpId> requirers;  // heavy ops that may pay on memory in this class
    std::vector<OpId> hiders;     // members that may sit beside them without paying on memory
    std::vector<OpId> members;    // every op of the class
  };
  std::vector<WorldClass> classes;
  const auto find = [](std::vector<int>& parent, int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  // The worlds: one per reduction length and output shape of a MatMul (one per reduction
  // length when some Pointwise op changes shape).
  std::vector<OpId> world_of;
  {
    std::vector<std::array<Elements, 3>> seen;
    for (OpId x = 0; x < num_ops; ++x) {
      if (problem.ops[x].kind != OpKind::MatMul) continue;
      const Tensor& t = problem.tensors[problem.ops[x].output];
      const std::array<Elements, 3> key{problem.ReductionLength(x), keeps_shape ? t.height : 0,
                                        keeps_shape ? t.width : 0};
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
      seen.push_back(key);
      world_of.push_back(x);
    }
  }
  std::vector<char> u(num_ops, 0), f(num_ops, 0), e(num_ops, 0), relevant(num_ops, 0);
  std::vector<int> local(num_ops), class_of_root(num_ops, -1);
  for (OpId w : world_of) {
    const Elements k_star = problem.ReductionLength(w);
    const Tensor& shape = problem.tensors[problem.ops[w].output];
    auto same_shape = [&](OpId y) {
      const Tensor& t = problem.tensors[problem.ops[y].output];
      return !keeps_shape || (t.width == shape.width && t.height == shape.height);
    };
    for (OpId y = 0; y < num_ops; ++y) {
      const Op& op = problem.ops[y];
      f[y] = op.kind == OpKind::MatMul && problem.ReductionLength(y) == k_star && same_shape(y);
      e[y] = op.kind == OpKind::Pointwise && same_shape(y);
    }
    // U: a producer of an F candidate's input (a MatMul; also a Pointwise op when K* <= n, V11),
    // and every op feeding a U op (reverse topological order).
    const auto& order = problem.topological_order;
    bool any_relevant = false;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const OpId y = *it;
      const OpKind kind = problem.ops[y].kind;
      const bool strip_kind = kind == OpKind::MatMul || (kind == OpKind::Pointwise && k_star <= n);
      u[y] = 0;
      // Only an op with a mode upstream of the k-loop can be in U (P1, P2 already ruled the
      // others out: a MatMul whose whole weight cannot fit, a Pointwise op into K > n).
      if (factor_n[y] < std::numeric_limits<double>::infinity()) {
        for (OpId c : problem.consumers[problem.ops[y].output]) {
          if ((f[c] && strip_kind) || u[c]) u[y] = 1;
        }
      }
      relevant[y] = gain[y] > 0 && (f[y] || (u[y] && other_on_memory[y]));
      any_relevant = any_relevant || relevant[y];
    }
    if (!any_relevant) continue;
    for (int i = 0; i < num_ops; ++i) local[i] = i;
    for (OpId c = 0; c < num_ops; ++c) {
      for (TensorId t : problem.ops[c].inputs) {
        const OpId p = problem.producer[t];
        if (p == kNoOp) continue;
        const OpKind pk = problem.ops[p].kind;
        const bool into_f = pk == OpKind::MatMul || pk == OpKind::Layout || (pk == OpKind::Pointwise && k_star <= n);
        const bool edge = (f[c] && into_f) || (e[c] && (f[p] || e[p] || pk == OpKind::Layout)) || u[c];
        if (edge) local[find(local, p)] = find(local, c);
      }
    }
    std::fill(class_of_root.begin(), class_of_root.end(), -1);
    for (OpId y = 0; y < num_ops; ++y) {
      if (relevant[y]) class_of_root[find(local, y)] = 0;
    }
    for (OpId y = 0; y < num_ops; ++y) {
      const int root = find(local, y);
      if (class_of_root[root] < 0) continue;  // no relevant op: no class
      if (class_of_root[root] == 0) {         // 1-based index once assigned
        class_of_root[root] = static_cast<int>(classes.size()) + 1;
        classes.push_back({});
      }
      WorldClass& c = classes[class_of_root[root] - 1];
      if (relevant[y]) c.requirers.push_back(y);
      // A heavy op pays on memory wherever it sits in this class: in F only (T-only), or
      // upstream with its other kind paying on memory. Any other member may hide.
      const bool pays = gain[y] > 0 && (f[y] || u[y]) && (!u[y] || other_on_memory[y]);
      if (!pays) c.hiders.push_back(y);
      c.members.push_back(y);
    }
  }
  // P15 needs a retainer alone among the requirers of its class, its produced inputs neither
  // produced nor read by another member (then a subgraph holding it loads them for it alone);
  // else it requires nothing (it stays heavy: beside an activated op it claims only its own
  // loads).
  std::vector<char> solitary(num_ops, 0);
  for (WorldClass& c : classes) {
    for (OpId y : c.requirers) {
      if (factor_n[y] < std::numeric_limits<double>::infinity() || retain_load[y] <= 0) continue;
      bool alone = c.requirers.size() == 1;
      const auto& in = problem.ops[y].inputs;
      for (OpId m : c.members) {
        if (m == y || !alone) continue;
        // A member that produces one of them could make it ephemeral; one that reads it could
        // share its load.
        const TensorId out = problem.ops[m].output;
        if (std::find(in.begin(), in.end(), out) != in.end()) alone = false;
        for (TensorId t : problem.ops[m].inputs) {
          if (problem.producer[t] != kNoOp && std::find(in.begin(), in.end(), t) != in.end()) alone = false;
        }
      }
      solitary[y] = alone;
    }
    if (std::any_of(c.requirers.begin(), c.requirers.end(), [&](OpId y) { return retainer[y] && !solitary[y]; })) {
      c.requirers.erase(std::remove_if(c.requirers.begin(), c.requirers.end(),
                                       [&](OpId y) { return retainer[y] && !solitary[y]; }),
                        c.requirers.end());
    }
  }
  // Activation units: the classes an activated op requires, joined through shared requirers.
  const int num_classes = static_cast<int>(classes.size());
  std::vector<int> unit(num_classes);
  for (int i = 0; i < num_classes; ++i) unit[i] = i;
  {
    std::vector<int> first_class(num_ops, -1);
    for (int i = 0; i < num_classes; ++i) {
      for (OpId x : classes[i].requirers) {
        if (first_class[x] < 0) {
          first_class[x] = i;
        } else {
          unit[find(unit, i)] = find(unit, first_class[x]);
        }
      }
    }
  }
  std::vector<std::vector<int>> units(num_classes);
  for (int i = 0; i < num_classes; ++i) units[find(unit, i)].push_back(i);
  // Which units to activate: first those with a positive gain of their own, then toggles that
  // raise the sum, a few passes. Every choice is a bound; this only picks a good one.
  std::vector<int> active_count(num_ops, 0), hidden_count(num_ops, 0);
  std::vector<char> on(num_classes, 0);
  const auto value_of = [&](OpId y) {
    return hidden_count[y] > 0 ? 0.0 : compute[y] + (active_count[y] > 0 ? gain[y] : 0.0);
  };
  const auto toggle = [&](int root, int delta) {
    for (int i : units[root]) {
      for (OpId x : classes[i].requirers) active_count[x] += delta;
      for (OpId y : classes[i].hiders) hidden_count[y] += delta;
    }
    on[root] = delta > 0;
  };
  std::vector<uint32_t> stamp(num_ops, 0);
  uint32_t generation = 0;
  const auto touched = [&](int root) {  // the sum over the unit's ops, each once
    double sum = 0;
    ++generation;
    for (int i : units[root]) {
      for (const auto* list : {&classes[i].requirers, &classes[i].hiders}) {
        for (OpId y : *list) {
          if (stamp[y] == generation) continue;
          stamp[y] = generation;
          sum += value_of(y);
        }
      }
    }
    return sum;
  };
  for (int pass = 0; pass < 4; ++pass) {
    bool changed = false;
    for (int root = 0; root < num_classes; ++root) {
      if (units[root].empty()) continue;
      const double before = touched(root);
      toggle(root, on[root] ? -1 : 1);
      if (touched(root) > before + 1e-9) {
        changed = true;
      } else {
        toggle(root, on[root] ? -1 : 1);  // undo
      }
    }
    if (!changed) break;
  }
  // The claims of the chosen units: lines, P15's term and the best weight.
  const auto finish = [&]() {
    std::vector<char> activated(num_ops, 0), hidden(num_ops, 0);
    result.activated = 0;
    result.retention = nullptr;
    for (OpId y = 0; y < num_ops; ++y) {
      activated[y] = active_count[y] > 0;
      hidden[y] = hidden_count[y] > 0;
      result.activated += activated[y] && !hidden[y] ? 1 : 0;
    }
    fill_lines(activated, hidden);

    // P15: an activated T-only MatMul y alone among its class's requirers, its produced inputs
    // read by no other member, loads them in every subgraph that holds it (each pays M_S, and
    // nothing else there claims them) unless the subgraph before holds their producer and retains
    // them (R1, V8). The subgraphs before distinct such y are distinct "hosts". A host without
    // slack is the subgraph of the picked instance of an activated op (paying on memory) whose
    // class holds a producer, or of a producer's picked instance: at most F of them. Any other
    // host has an unclaimed activated instance paying on memory (M_S >= its own loads) or an
    // unclaimed producer instance (a c_p in a C_S + (1 - a) M_S subgraph).
    std::vector<double> alone_load;
    std::vector<char> is_producer(num_ops, 0);
    for (OpId y = 0; y < num_ops; ++y) {
      if (!solitary[y] || !activated[y] || hidden[y]) continue;
      for (TensorId t : problem.ops[y].inputs) {
        const OpId p = problem.producer[t];
        if (p != kNoOp && problem.ops[p].kind != OpKind::Layout) is_producer[p] = 1;
      }
      alone_load.push_back(retain_load[y]);
    }
    if (!alone_load.empty()) {
      double host_memory = std::numeric_limits<double>::infinity();
      double host_compute = std::numeric_limits<double>::infinity();
      int free_hosts = 0;
      std::vector<char> counted(num_ops, 0);
      for (OpId p = 0; p < num_ops; ++p) {
        if (!is_producer[p]) continue;
        ++free_hosts;
        host_compute = std::min(host_compute, compute[p]);
      }
      for (int i = 0; i < num_classes; ++i) {
        if (!on[find(unit, i)]) continue;
        bool holds_producer = false;
        for (OpId m : classes[i].members) holds_producer = holds_producer || is_producer[m];
        if (!holds_producer) continue;
        for (OpId x : classes[i].requirers) {
          host_memory = std::min({host_memory, own_t[x], other_on_memory[x] ? own_n[x] : own_t[x]});
          if (!counted[x]) {
            counted[x] = 1;
            ++free_hosts;
          }
        }
      }
      result.retention = [alone_load, host_memory, host_compute, free_hosts](double w) {
        double sum = 0, most = 0;
        for (double load : alone_load) {
          const double lambda = std::min({load, host_memory, w * host_compute});
          sum += lambda;
          most = std::max(most, lambda);
        }
        return std::max(0.0, sum - static_cast<double>(free_hosts) * most);
      };
    }
    result.value = BestOverWeight(result.lines, [](OpId) { return true; }, result.retention);
  };
  finish();
  // An activated retainer claims only its own loads: without P15's term it loses. Keep the
  // better of the choice above and the same without units whose requirers are all retainers.
  bool any_retainer_unit = false;
  for (int root = 0; root < num_classes; ++root) {
    if (!on[root] || units[root].empty()) continue;
    bool all_retainers = true;
    for (int i : units[root]) {
      for (OpId x : classes[i].requirers) all_retainers = all_retainers && retainer[x];
    }
    if (!all_retainers) continue;
    toggle(root, -1);
    any_retainer_unit = true;
  }
  if (any_retainer_unit) {
    Streaming with = std::move(result);
    result = Streaming{};
    finish();
    if (with.value >= result.value) result = std::move(with);
  }
  return result;
}

// `weights`: per tensor, whether it travels H6's weight path (WeightTensors); empty: none does.
Built Build(const Problem& problem, const std::vector<char>& weights = {}) {
  Built built;
  BoundModel& model = built.model;
  const Analysis a(problem);
  const int num_ops = static_cast<int>(problem.ops.size());
  const int num_tensors = static_cast<int>(problem.tensors.size());
  const Elements n = problem.native;
  // H6: the two paths' sum (the traffic terms count both kinds of elements; see WeightPathRelaxed).
  model.bandwidth = problem.slow_memory_bandwidth + problem.chip.weight_bandwidth;

  // Reach of the ops that read a tensor with several consumers (the only ones P9 asks about),
  // computed once each, on demand.
  std::vector<std::optional<Analysis::ReachSet>> reach(num_ops);
  auto reaches = [&](OpId from, OpId to) {
    if (!reach[from]) reach[from] = a.Reach(from);
    return reach[from]->Contains(to);
  };

  // Per tensor: which consumers load it alone (their mode decides the amount) and which write
  // the consumer designated to carry the write (P8) must add.
  std::vector<std::vector<char>> alone(num_tensors);   // per consumer position
  std::vector<OpId> write_owner(num_tensors, kNoOp);   // designated consumer, or kNoOp
  std::vector<std::vector<Elements>> sl_share(num_tensors);  // P10 charge per consumer, or -1
  for (TensorId t = 0; t < num_tensors; ++t) {
    const auto& consumers = problem.consumers[t];
    if (consumers.empty()) continue;
    const OpId producer = problem.producer[t];
    const Elements size = problem.tensors[t].size();
    const bool retainable = producer != kNoOp && !a.TooLarge(t);
    // Classes of consumers that may share a subgraph (P9): union-find over the pairs.
    const int k = static_cast<int>(consumers.size());
    std::vector<int> cls(k);
    for (int i = 0; i < k; ++i) cls[i] = i;
    auto find = [&](int x) {
      while (cls[x] != x) x = cls[x] = cls[cls[x]];
      return x;
    };
    for (int i = 0; i < k; ++i) {
      for (int j = i + 1; j < k; ++j) {
        if (reaches(consumers[i], consumers[j]) || reaches(consumers[j], consumers[i])) {
          cls[find(i)] = find(j);
        }
      }
    }
    alone[t].assign(k, 0);
    sl_share[t].assign(k, -1);
    bool forced_shared_load = false;
    for (int root = 0; root < k; ++root) {
      if (find(root) != root) continue;
      std::vector<OpId> members;
      for (int i = 0; i < k; ++i) {
        if (find(i) == root) members.push_back(consumers[i]);
      }
      if (members.size() == 1) {
        for (int i = 0; i < k; ++i) {
          if (consumers[i] == members[0]) alone[t][i] = 1;
        }
        continue;
      }
      // Several consumers may share a subgraph: |t| once for the class, unless one of them may
      // see it ephemeral (its producer inside, in a legal mode) or it may be retained (P3, P4).
      bool may_be_free = retainable;
      for (OpId c : members) {
        const Op& cop = problem.ops[c];
        for (int slot = 0; slot < static_cast<int>(cop.inputs.size()) && !may_be_free; ++slot) {
          if (cop.inputs[slot] != t || producer == kNoOp) continue;
          for (int m = 0; m < kModes; ++m) {
            if (a.HasMode(c, m) && a.EdgeFeasible(producer, c, slot, m)) may_be_free = true;
          }
        }
      }
      if (may_be_free) continue;
      if (producer == kNoOp && a.TooLarge(t) && problem.fast_memory_capacity > 1) {
        // P10: strip producers sharing a streamed weight. Every member uses t as its RHS, can
        // only be T (a sink, alone: no other member reachable) or SL toward k-loop MatMuls with
        // K > n, and its LHS strip R x [0,K_c) is a boundary request of a tensor only it reads.
        // In a subgraph holding g' of them, every step holds all g' strips, so the tile height
        // h <= (capacity - 1) / sum K_c and the k-loop has at least M x sum K_c / (capacity - 1)
        // row tiles; all members request the same slice [0,K) x kappa_j of t, a different one
        // each step (P6), so t is loaded at least |t| x that many times, and at least |t|.
        // Charging each member's SL mode |t| x max(min(1, a_min), 1/g), a_min = min |LHS_c| /
        // (capacity - 1), never exceeds any group's load; mode T loads as if alone (P5).
        bool group = true;
        double a_min = 1;
        for (OpId c : members) {
          const Op& cop = problem.ops[c];
          const TensorId lhs = cop.inputs[0];
          const OpId lhs_producer = problem.producer[lhs];
          const int only_slot = a.OnlyConsumerSlot(c);
          const Analysis::ReachSet alone_reach = a.Reach(c, kT);
          bool reaches_other = false;
          for (OpId o : members) reaches_other = reaches_other || (o != c && alone_reach.Contains(o));
          const bool ok = cop.kind == OpKind::MatMul && cop.inputs[1] == t && lhs != t &&
                          a.SinkWhenTile(c) && !reaches_other && a.HasMode(c, kSL) &&
                          !a.HasMode(c, kSR) && !a.HasMode(c, kFL) && !a.HasMode(c, kFR) &&
                          a.StreamTiles(c, kSL) > 0 && only_slot == 0 &&
                          problem.consumers[lhs].size() == 1 &&
                          (lhs_producer == kNoOp || !a.EdgeFeasible(lhs_producer, c, 0, kSL));
          if (!ok) {
            group = false;
            break;
          }
          a_min = std::min(a_min, static_cast<double>(problem.tensors[lhs].size()) /
                                      static_cast<double>(problem.fast_memory_capacity - 1));
        }
        if (group) {
          const double share = std::max(a_min, 1.0 / static_cast<double>(members.size()));
          for (int i = 0; i < k; ++i) {
            if (find(i) == root) sl_share[t][i] = static_cast<Elements>(share * static_cast<double>(size));
          }
          continue;
        }
      }
      forced_shared_load = true;
      std::string names;
      for (size_t i = 0; i < members.size(); ++i) {
        if (i > 0) names += ",";
        names += Str(members[i]);
      }
      BoundModel::Fixed fixed;
      fixed.owners = members;
      fixed.elements = size;
      model.fixed.push_back(fixed);
      built.terms.push_back({{t, members[0],
                              "loaded once by ops " + names +
                                  ", which may share a subgraph (P3, P9; " +
                                  (producer == kNoOp ? "a graph input, never retained, V8"
                                                     : "never ephemeral nor retained, V11/R5") +
                                  ")",
                              size},
                             -1});
    }
    if (producer == kNoOp) continue;
    if (problem.IsGraphOutput(t)) continue;
    if (forced_shared_load) {
      BoundModel::Fixed fixed;
      fixed.owners = {producer};
      fixed.elements = size;
      model.fixed.push_back(fixed);
      built.terms.push_back(
          {{t, producer, "written once: a subgraph must load it (P8, V7)", size}, -1});
    } else {
      for (int i = 0; i < k; ++i) {
        if (alone[t][i]) {
          write_owner[t] = consumers[i];
          break;
        }
      }
    }
  }
  // Graph outputs are written at least once (V9, P8).
  for (TensorId t = 0; t < num_tensors; ++t) {
    if (!problem.IsGraphOutput(t)) continue;
    BoundModel::Fixed fixed;
    fixed.owners = {problem.producer[t]};
    fixed.elements = problem.tensors[t].size();
    model.fixed.push_back(fixed);
    built.terms.push_back(
        {{t, problem.producer[t], "graph output, written at least once (V9)", fixed.elements},
         -1});
  }

  // What op c moves for its input `slot` (tensor t) in mode m when t is a boundary input that
  // is loaded (P3, P5, P6), with the reason.
  auto load_cost = [&](OpId c, int m, int slot) -> std::pair<Elements, std::string> {
    const Op& op = problem.ops[c];
    const TensorId t = op.inputs[slot];
    const Elements size = problem.tensors[t].size();
    const Tensor& out = problem.tensors[op.output];
    const bool twice = std::count(op.inputs.begin(), op.inputs.end(), t) > 1;
    std::string why = "loaded at least once (P3)";
    Elements loads = size;
    if (op.kind == OpKind::MatMul && !twice) {
      const Elements reduction = problem.ReductionLength(c);
      const int only_slot = a.OnlyConsumerSlot(c);
      if (m == kT && reduction > n && (a.TooLarge(t) || a.TileModeAlone(c))) {
        // P5: streamed by the k-loop, once per column tile (LHS) or row tile (RHS).
        const int64_t times = slot == 0 ? CeilDiv(out.width, n) : CeilDiv(out.height, n);
        loads = size * times;
        why = std::string(slot == 0 ? "LHS" : "RHS") + " of k-split MatMul (K=" + Str(reduction) +
              " > n), streamed once per " + (slot == 0 ? "column" : "row") + " tile: x" +
              Str(times) + " (P5, V2)";
      } else if ((m == kSL || m == kSR) && slot == (m == kSL ? 1 : 0) &&
                 problem.producer[t] == kNoOp && a.TooLarge(t) && a.StreamTiles(c, m) > 0 &&
                 only_slot == (m == kSL ? 0 : 1)) {
        // P6: an upstream strip producer streams its other operand once per k-loop tile.
        loads = size * a.StreamTiles(c, m);
        why = "operand of an upstream strip producer, streamed once per tile of the k-loop: x" +
              Str(a.StreamTiles(c, m)) + " (P6, C3)";
      }
    }
    if (problem.producer[t] == kNoOp) why += "; a graph input (V8)";
    return {loads, why + " [mode " + kModeName[m] + "]"};
  };

  // Coupled inputs (P8, P9): t's only consumer c is a MatMul and t can never be retained.
  // Case A: an instance of c sees t ephemeral; pick it and the instance of p beside it, which c
  // demands in a strip or full mode (never T), and c's mode allows the edge. Case B: no instance
  // of c has p beside it; every instance of p is then a sink (mode T) and c, in any mode m,
  // loads L(m) of t, which p wrote. With z = min over c's modes of L(m): p's mode T carries z
  // and the write, c's modes that cannot see t ephemeral carry L(m) - z, the others nothing.
  // Both cases are then counted at most once.
  std::vector<char> coupled(num_tensors, 0);
  std::vector<Elements> coupled_least(num_tensors, 0);
  std::vector<std::string> coupled_why(num_tensors);
  for (TensorId t = 0; t < num_tensors; ++t) {
    const OpId p = problem.producer[t];
    if (p == kNoOp || !a.TooLarge(t)) continue;
    const int slot = a.OnlyConsumerSlot(p);
    if (slot < 0) continue;
    const OpId c = problem.consumers[t][0];
    if (problem.ops[c].kind != OpKind::MatMul) continue;
    coupled[t] = 1;
    write_owner[t] = kNoOp;
    bool first = true;
    for (int mz = 0; mz < kModes; ++mz) {
      if (!a.HasMode(c, mz)) continue;
      auto cost = load_cost(c, mz, slot);
      if (first || cost.first < coupled_least[t]) {
        coupled_least[t] = cost.first;
        coupled_why[t] = std::move(cost.second);
      }
      first = false;
    }
  }

  // Options: one per mode an op can be in.
  model.options.resize(num_ops);
  for (OpId c = 0; c < num_ops; ++c) {
    const Op& op = problem.ops[c];
    const double native_compute = op.base_cost * static_cast<double>(problem.NativeTiles(c));
    for (int m = 0; m < kModes; ++m) {
      if (!a.HasMode(c, m)) continue;
      BoundModel::Option option;
      option.mode = m;
      option.compute = native_compute * static_cast<double>(a.Factor(c, m));  // P7
      const int option_index = static_cast<int>(model.options[c].size());
      auto note = [&](TensorId t, OpId who, const std::string& why, Elements e) {
        built.terms.push_back({{t, who, why, e}, option_index, c});
      };
      Elements loaded_alone[2] = {-1, -1};  // P11: per MatMul operand loaded by c alone
      for (int slot = 0; slot < static_cast<int>(op.inputs.size()); ++slot) {
        const TensorId t = op.inputs[slot];
        if (coupled[t]) {
          const OpId producer = problem.producer[t];
          if (a.EdgeFeasible(producer, c, slot, m)) continue;  // case A possible
          const auto [loads, why] = load_cost(c, m, slot);
          const Elements rest = loads - coupled_least[t];
          if (rest > 0) {
            option.loads += rest;
            note(t, c, why + " (coupled, P9: this part beyond the least load, which op " +
                           Str(producer) + " carries)", rest);
          }
          continue;
        }
        const auto& cons = problem.consumers[t];
        const int pos = static_cast<int>(std::find(cons.begin(), cons.end(), c) - cons.begin());
        if (sl_share[t][pos] >= 0) {  // P10
          if (m == kT) {
            const auto [loads, why] = load_cost(c, m, slot);
            option.loads += loads;
            note(t, c, why, loads);
          } else if (m == kSL) {
            option.loads += sl_share[t][pos];
            note(t, c,
                 "weight streamed by strip producers that may share a subgraph only with fewer "
                 "rows per tile; this op's share (P10, P6, W) [mode SL]",
                 sl_share[t][pos]);
          }
          continue;
        }
        if (!alone[t][pos]) continue;  // a shared class, counted above
        if (std::find(op.inputs.begin(), op.inputs.begin() + slot, t) != op.inputs.begin() + slot) {
          continue;  // the same tensor in two slots: counted at its first
        }
        const OpId producer = problem.producer[t];
        if (producer != kNoOp && a.EdgeFeasible(producer, c, slot, m)) continue;  // may be ephemeral
        if (producer != kNoOp && !a.TooLarge(t)) continue;                       // may be retained
        const auto [loads, why] = load_cost(c, m, slot);
        option.loads += loads;
        note(t, c, why, loads);
        if (slot < 2) loaded_alone[slot] = loads;
        if (write_owner[t] == c) {
          option.writes.push_back({producer, problem.tensors[t].size()});
          note(t, producer,
               "written once so that op " + Str(c) + " can load it (P8, V7) [mode " +
                   kModeName[m] + "]",
               problem.tensors[t].size());
        }
      }
      if (m == kT && op.kind == OpKind::MatMul && loaded_alone[0] >= 0 && loaded_alone[1] >= 0 &&
          op.inputs[0] != op.inputs[1] && problem.ReductionLength(c) <= n && a.TileModeAlone(c)) {
        const Elements strips = StripLoads(problem, c);
        const Elements extra = strips - loaded_alone[0] - loaded_alone[1];
        if (extra > 0) {
          option.loads += extra;
          note(op.inputs[0], c,
               "LHS and RHS strips reloaded as the tiles change row or column, at the largest "
               "tiles that fit: this much beyond one load of each (P11, M1, W) [mode T]",
               extra);
        }
      }
      if (m == kT && coupled[op.output]) {
        const TensorId t = op.output;
        const OpId z = problem.consumers[t][0];
        option.loads += coupled_least[t];
        note(t, z, coupled_why[t] + "; op " + Str(c) + " runs as a sink, so op " + Str(z) +
                       " loads it at least this much in any mode (coupled, P9)",
             coupled_least[t]);
        option.writes.push_back({c, problem.tensors[t].size()});
        note(t, c, "written once: op " + Str(c) + " runs as a sink and op " + Str(z) +
                       " loads it (P8, V7) [mode T]",
             problem.tensors[t].size());
      }
      model.options[c].push_back(std::move(option));
    }
  }
  const std::vector<char> none(weights.empty() ? problem.tensors.size() : 0, 0);
  Islands(problem, a, load_cost, built, weights.empty() ? none : weights);
  return built;
}

// The combined bound at weight a over the ops (and fixed terms) selected by `live`.
struct Evaluated {
  Latency value = 0;
  std::vector<int> choice;  // option index per op (-1 when not live)
};

template <class Live>
Evaluated Evaluate(const BoundModel& model, double a, const Live& live, bool want_choice) {
  Evaluated result;
  if (want_choice) result.choice.assign(model.options.size(), -1);
  const double per_element = (1 - a) / model.bandwidth;
  for (size_t op = 0; op < model.options.size(); ++op) {
    if (!live(static_cast<OpId>(op))) continue;
    double best = std::numeric_limits<double>::infinity();
    int best_index = 0;
    for (size_t i = 0; i < model.options[op].size(); ++i) {
      const BoundModel::Option& o = model.options[op][i];
      Elements moved = o.loads;
      for (const BoundModel::Write& w : o.writes) moved += live(w.producer) ? w.elements : 0;
      const double value = a * o.compute + per_element * static_cast<double>(moved);
      if (value < best) {
        best = value;
        best_index = static_cast<int>(i);
      }
    }
    result.value += best;
    if (want_choice) result.choice[op] = best_index;
  }
  for (const BoundModel::Fixed& f : model.fixed) {
    bool any = false;
    for (OpId o : f.owners) any = any || live(o);
    if (any) result.value += per_element * static_cast<double>(f.elements);
  }
  return result;
}

// The maximum over a in [0, 1] of a concave piecewise-linear function: ternary search, then
// the endpoints. Any a gives a valid bound, so an approximate maximum is still a bound.
template <class Live>
double BestWeight(const BoundModel& model, const Live& live) {
  double lo = 0, hi = 1;
  for (int i = 0; i < 60; ++i) {
    const double m1 = lo + (hi - lo) / 3, m2 = hi - (hi - lo) / 3;
    if (Evaluate(model, m1, live, false).value < Evaluate(model, m2, live, false).value) {
      lo = m1;
    } else {
      hi = m2;
    }
  }
  double best_a = (lo + hi) / 2;
  double best = Evaluate(model, best_a, live, false).value;
  for (double end : {0.0, 1.0}) {
    const double v = Evaluate(model, end, live, false).value;
    if (v > best) best = v, best_a = end;
  }
  return best_a;
}

// The problem the facts are applied to when Layout ops are present (docs/lower-bound.md,
// "Layout ops"): each Layout op X -> Y reads instead a fresh graph input Z of Y's shape. A
// region of Y the op's consumers need is then a region of Z loaded through the op, the same
// request the Layout op makes (L2); alone, the op loads Z and writes Y tile by tile (L4); Y
// may be retained (L5) or, the op in another subgraph, loaded from slow memory — every
// schedule of the problem is a schedule of the image at the same cost, with one rule fewer
// (L1: X in slow memory). The facts treat the image's Layout ops as producers that serve any
// demand (no V11, P1, nor P2 for them). X loses the Layout op as a consumer: never loaded by
// it (a graph input read only by Layout ops is not a graph input of the image), and a graph
// output of the image when no other op reads it (L1: it is written at least once). Z, a graph
// input, is loaded at least once: the whole of Y is gathered once. Op ids are unchanged;
// tensor ids past the problem's are the Zs, `layout_source` maps them back to their Y.
struct Decoupled {
  Problem problem;
  std::vector<TensorId> layout_source;  // per extra tensor: the Y it stands for
};

bool HasLayoutOps(const Problem& problem) {
  return std::any_of(problem.ops.begin(), problem.ops.end(),
                     [](const Op& op) { return op.kind == OpKind::Layout; });
}

Decoupled Decouple(const Problem& problem) {
  Decoupled d;
  d.problem.tensors = problem.tensors;
  d.problem.ops = problem.ops;
  d.problem.fast_memory_capacity = problem.fast_memory_capacity;
  d.problem.slow_memory_bandwidth = problem.slow_memory_bandwidth;
  d.problem.native = problem.native;
  d.problem.chip = problem.chip;
  for (Op& op : d.problem.ops) {
    if (op.kind != OpKind::Layout) continue;
    d.problem.tensors.push_back(problem.tensors[op.output]);
    d.layout_source.push_back(op.output);
    op.inputs = {static_cast<TensorId>(d.problem.tensors.size() - 1)};
  }
  d.problem.Finalize();  // acyclic: only edges were removed, and the Zs have no producer
  return d;
}

// The bound of a problem whose Layout ops, if any, read graph inputs of their own (the image of
// Decouple, or a problem without Layout ops).
BoundModel BuildDecoupledBoundModel(const Problem& problem) {
  Built built = Build(problem);
  auto all = [](OpId) { return true; };
  built.model.weight = BestWeight(built.model, all);
  return std::move(built.model);
}

LowerBound ComputeDecoupledLowerBound(const Problem& problem, BoundModel* model_out, const std::vector<char>& weights);
LowerBound ComputeOneLowerBound(const Problem& problem, BoundModel* model_out);

// H6: per tensor, whether it travels the weight path. Taken from the problem itself, before
// Decouple, whose image could turn a graph input read by a Layout op into a weight.
std::vector<char> WeightTensors(const Problem& problem) {
  std::vector<char> weights(problem.tensors.size(), 0);
  for (TensorId t = 0; t < static_cast<TensorId>(problem.tensors.size()); ++t) weights[t] = problem.OnWeightPath(t);
  return weights;
}

// H6 (a weight path beside the slow memory). Every step of a valid schedule holds its weight
// slices in the FIFO, not in the fast memory, so it fits a one-path chip whose fast memory is
// the capacity plus the FIFO (plus every weight once per consumer when the FIFO is not
// checked), and it moves the same elements there. Its memory time max(w / Bw, o / B) is at
// least (w + o) / (Bw + B): the mode-based terms (traffic, combined) are those of that chip at
// bandwidth B + Bw (BoundModel::bandwidth), while graph I/O and the islands keep the two paths
// apart, max(weight elements / Bw, other elements / B), since each of their amounts is one
// tensor's and so wholly on one path.
Problem WeightPathRelaxed(const Problem& problem) {
  Problem relaxed = problem;
  Elements fifo = problem.chip.weight_fifo_capacity;
  if (fifo <= 0) {
    for (TensorId t = 0; t < static_cast<TensorId>(problem.tensors.size()); ++t) {
      if (problem.OnWeightPath(t)) fifo += problem.tensors[t].size() * static_cast<Elements>(problem.consumers[t].size());
    }
  }
  relaxed.fast_memory_capacity += fifo;
  return relaxed;
}

}  // namespace

BoundModel BuildBoundModel(const Problem& problem) {
  if (problem.chip.two_paths()) {
    const Problem relaxed = WeightPathRelaxed(problem);
    if (HasLayoutOps(relaxed)) return BuildDecoupledBoundModel(Decouple(relaxed).problem);
    return BuildDecoupledBoundModel(relaxed);
  }
  if (HasLayoutOps(problem)) return BuildDecoupledBoundModel(Decouple(problem).problem);
  return BuildDecoupledBoundModel(problem);
}

LowerBound ComputeLowerBound(const Problem& problem, BoundModel* model_out) {
  if (problem.chip.two_paths()) return ComputeOneLowerBound(WeightPathRelaxed(problem), model_out);
  return ComputeOneLowerBound(problem, model_out);
}

namespace {

LowerBound ComputeOneLowerBound(const Problem& problem, BoundModel* model_out) {
  if (HasLayoutOps(problem)) {
    const Decoupled d = Decouple(problem);
    std::vector<char> weights = WeightTensors(problem);
    weights.resize(d.problem.tensors.size(), 0);  // the Zs are read by Layout ops: never weights
    LowerBound bound = ComputeDecoupledLowerBound(d.problem, model_out, weights);
    const auto first_extra = static_cast<TensorId>(problem.tensors.size());
    for (BoundTerm& term : bound.explanation) {
      if (term.tensor >= first_extra) {
        term.tensor = d.layout_source[term.tensor - first_extra];
        term.why += " [gathered through Layout op " + std::to_string(problem.producer[term.tensor]) + "]";
      }
    }
    return bound;
  }
  return ComputeDecoupledLowerBound(problem, model_out, WeightTensors(problem));
}

LowerBound ComputeDecoupledLowerBound(const Problem& problem, BoundModel* model_out, const std::vector<char>& weights) {
  LowerBound bound;
  for (OpId op = 0; op < static_cast<OpId>(problem.ops.size()); ++op) {
    bound.compute += problem.ops[op].base_cost * static_cast<double>(problem.NativeTiles(op));
  }
  // H6: the two paths apart, each amount being one tensor's and a tensor travelling one path
  // (`weights`, classified on the problem before Decouple).
  const auto paths_time = [&](Elements weight, Elements other) {
    if (!problem.chip.two_paths()) return static_cast<double>(weight + other) / problem.slow_memory_bandwidth;
    return std::max(static_cast<double>(weight) / problem.chip.weight_bandwidth,
                    static_cast<double>(other) / problem.slow_memory_bandwidth);
  };
  Elements io = 0, weight_io = 0;
  for (TensorId t = 0; t < static_cast<TensorId>(problem.tensors.size()); ++t) {
    if (problem.IsGraphInput(t) || problem.IsGraphOutput(t)) (weights[t] ? weight_io : io) += problem.tensors[t].size();
  }
  bound.graph_io = paths_time(weight_io, io);

  Built built = Build(problem, weights);
  const BoundModel& model = built.model;
  auto all = [](OpId) { return true; };
  bound.traffic = Evaluate(model, 0, all, false).value;
  bound.weight = BestWeight(model, all);
  const Evaluated at = Evaluate(model, bound.weight, all, true);
  bound.combined = at.value;
  bound.island_count = built.islands;
  const Streaming streaming = StreamingBound(problem, Analysis(problem));
  bound.streaming = streaming.value;
  bound.streaming_ops = streaming.activated;
  // P12 with P14 inside each island: every subgraph lies in one island, so P14's sum over the
  // island's ops outside Hid bounds the island's subgraphs as well as its compute does.
  std::vector<double> island_streaming(built.islands, 0);
  if (built.islands == 1) {
    island_streaming[0] = streaming.value;
  } else {
    std::vector<std::vector<OpId>> members(built.islands);
    for (OpId op = 0; op < static_cast<OpId>(problem.ops.size()); ++op) members[built.island_of[op]].push_back(op);
    for (int i = 0; i < built.islands; ++i) {
      std::vector<std::vector<Line>> lines;
      for (OpId op : members[i]) lines.push_back(streaming.lines[op]);
      island_streaming[i] = BestOverWeight(lines, [](OpId) { return true; });
    }
  }
  for (int i = 0; i < built.islands; ++i) {
    bound.islands += std::max({built.island_compute[i], island_streaming[i],
                               paths_time(built.island_weight_traffic[i], built.island_traffic[i])});
  }
  // The explanation follows the modes chosen at the best weight.
  for (const TermInfo& info : built.terms) {
    if (info.option >= 0 && at.choice[info.owner] != info.option) continue;
    bound.explanation.push_back(info.term);
  }
  std::stable_sort(bound.explanation.begin(), bound.explanation.end(),
                   [](const BoundTerm& x, const BoundTerm& y) { return x.elements > y.elements; });
  if (model_out != nullptr) {
    *model_out = std::move(built.model);
    model_out->weight = bound.weight;  // BuildBoundModel's weight: the same BestWeight
  }
  return bound;
}

}  // namespace

Latency RemainingLowerBound(const BoundModel& model, const std::vector<char>& op_remaining) {
  auto live = [&](OpId op) { return op_remaining[op] != 0; };
  double compute = 0;
  for (size_t op = 0; op < model.options.size(); ++op) {
    if (!op_remaining[op]) continue;
    double least = std::numeric_limits<double>::infinity();
    for (const BoundModel::Option& o : model.options[op]) least = std::min(least, o.compute);
    compute += least;
  }
  const double traffic = Evaluate(model, 0, live, false).value;
  const double combined = Evaluate(model, model.weight, live, false).value;
  return std::max({compute, traffic, combined});
}

}  // namespace annealer
