// What the lower bound's parts share (eval/bound/bounds.h states the facts P1-P15 they rest on): the
// modes an op can be demanded in, the Analysis of which modes, edges and reaches the rules allow
// each op, and the model the parts are built into. Internal to eval/bound/bounds.cc and eval/bound/.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "eval/bound/bounds.h"

namespace annealer::bound_internal {

enum Mode : int { kT = 0, kSL = 1, kSR = 2, kFL = 3, kFR = 4, kModes = 5 };
inline constexpr const char* kModeName[kModes] = {"T", "SL", "SR", "FL", "FR"};

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

class Analysis {
 public:
  // `path_cases`: full modes priced by the case their path gives (P13's cases); false takes the
  // least of the three cases for every terminal, as before them (a weaker bound, which P14's
  // choice of heavy ops can nonetheless turn to its advantage, so the streaming part tries both).
  explicit Analysis(const Problem& problem, bool path_cases = true)
      : p_(problem), n_(problem.native), path_cases_(path_cases) {
    const int num_ops = static_cast<int>(p_.ops.size());
    for (const Op& op : p_.ops) max_inputs_ = std::max(max_inputs_, static_cast<int>(op.inputs.size()));
    modes_.assign(num_ops, 0);
    factor_.assign(num_ops, {1, 1, 1, 1, 1});
    stream_tiles_.assign(num_ops, {0, 0, 0, 0, 0});
    strip_tiles_.assign(num_ops, {0, 0, 0, 0, 0});
    std::array<int64_t, 5> none;
    none.fill(std::numeric_limits<int64_t>::max());
    cases_.assign(num_ops, {none, none, none, none, none});
    ComputeModes();
  }

  const Problem& problem() const { return p_; }
  bool HasMode(OpId op, int m) const { return (modes_[op] >> m) & 1; }
  int64_t Factor(OpId op, int m) const { return factor_[op][m]; }
  int64_t StreamTiles(OpId op, int m) const { return stream_tiles_[op][m]; }
  // P22: in a strip mode (SL, SR), the least native tile count ceil(M_f/n) ceil(N_f/n) over the
  // k-loop MatMuls f the op can feed in that mode, directly or through Pointwise ops, whatever
  // f's reduction length (0 in the other modes).
  int64_t StripTiles(OpId op, int m) const { return strip_tiles_[op][m]; }
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

  // P13: how many times an op further upstream of the k-loop MatMul f makes its whole output over
  // one subgraph (C3, C6). Its region each step is full along one side; along the other it is,
  // by the path from f (D2, D3): the tile's rows R (LHS links from an LHS strip: every step of a
  // row of tiles remakes it, columns x k-steps passes), the tile's columns C (rows x k-steps), a
  // k-range (the other operand of a strip producer: the k-steps of a tile partition it, so once
  // per tile) or everything (every step). Cases, per (op, mode), as the least passes over the
  // k-loops reachable with that case; kFull also bounds any case (every step's charge is at most
  // the full one), so it is kept for every terminal reached; kAny, the least of the three cases
  // of every terminal reached, whatever the path (P13 before its cases).
  enum Case : int { kRows = 0, kCols = 1, kRange = 2, kFull = 3, kAny = 4, kCases = 5 };
  using Cases = std::array<int64_t, kCases>;
  static constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  // The cases a strip producer of the k-loop MatMul f hands on (SL: its LHS gets R, its RHS the
  // k-range; SR: its LHS the k-range, its RHS C).
  Cases StripCases(OpId f, int d) const {
    const Tensor& out = p_.tensors[p_.ops[f].output];
    const int64_t rows = CeilDiv(out.height, n_), cols = CeilDiv(out.width, n_);
    const int64_t ks = CeilDiv(p_.ReductionLength(f), n_);
    Cases c{kNone, kNone, kNone, rows * cols * ks, std::min({rows * cols, rows * ks, cols * ks})};
    c[kRange] = rows * cols;
    c[d == kSL ? kRows : kCols] = d == kSL ? cols * ks : rows * ks;
    return c;
  }
  // What a MatMul in mode m with cases v hands to the producer of its input `slot` (D3: a region
  // r x c asks r x [0, K) of the LHS and [0, K) x c of the RHS).
  static Cases Upstream(const Cases& v, int m, int slot) {
    Cases out{kNone, kNone, kNone, v[kFull], v[kAny]};
    const bool keep = (m == kFL && slot == 0) || (m == kFR && slot == 1);
    if (keep) return v;
    if (m == kSL) out[slot == 0 ? kRows : kRange] = v[slot == 0 ? kRows : kRange];
    if (m == kSR) out[slot == 0 ? kRange : kCols] = v[slot == 0 ? kRange : kCols];
    return out;
  }

  // Reverse topological order: an op's possible modes follow from its consumers' (P1, P2),
  // with the recomputation factor (P7, P13) and the streaming tile count (P6) of the strip modes.
  void ComputeModes() {
    const auto& order = p_.topological_order;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const OpId x = *it;
      int mask = 1 << kT;
      int64_t factor[kModes] = {1, 1, 1, 1, 1};
      int64_t stream[kModes] = {0, 0, 0, 0, 0};
      int64_t strip[kModes] = {0, 0, 0, 0, 0};
      bool strip_seen[kModes] = {false, false, false, false, false};
      std::array<Cases, kModes> cases;
      for (Cases& c : cases) c.fill(kNone);
      const auto merge = [&](int d, const Cases& c) {
        for (int i = 0; i < kCases; ++i) cases[d][i] = std::min(cases[d][i], c[i]);
      };
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
              merge(d, zop.kind == OpKind::MatMul ? Upstream(cases_[z][mz], mz, slot) : cases_[z][d]);
              continue;
            }
            // Direct entry into a k-loop MatMul, or through a Pointwise op in the same mode.
            int64_t f = 0;
            int64_t tiles = 0;
            int64_t all_tiles = 0;
            if (zop.kind == OpKind::MatMul) {
              merge(d, StripCases(z, d));
              const Tensor& zo = p_.tensors[zop.output];
              f = CeilDiv(d == kSL ? zo.width : zo.height, n_);
              all_tiles = CeilDiv(zo.width, n_) * CeilDiv(zo.height, n_);
              tiles = p_.ReductionLength(z) > n_ ? all_tiles : 0;
            } else {
              f = factor_[z][d];
              tiles = 0;  // a Pointwise op in a strip: K* <= n, no streaming claim
              all_tiles = strip_tiles_[z][d];  // it passes its region on (D3)
              merge(d, cases_[z][d]);
            }
            factor[d] = strip_seen[d] ? std::min(factor[d], f) : f;
            stream[d] = strip_seen[d] ? std::min(stream[d], tiles) : tiles;
            strip[d] = strip_seen[d] ? std::min(strip[d], all_tiles) : all_tiles;
            strip_seen[d] = true;
          }
        }
      }
      modes_[x] = mask;
      for (int m = 0; m < kModes; ++m) {
        cases_[x][m] = cases[m];
        if (m == kFL || m == kFR) {
          const int64_t least =
              path_cases_ ? *std::min_element(cases[m].begin(), cases[m].begin() + kAny) : cases[m][kAny];
          factor[m] = least == kNone ? 1 : least;
        }
        factor_[x][m] = std::max<int64_t>(1, factor[m]);
        stream_tiles_[x][m] = stream[m];
        strip_tiles_[x][m] = strip[m];
      }
    }
  }

  const Problem& p_;
  const Elements n_;
  int max_inputs_ = 0;
  std::vector<int> modes_;  // bit m set: the op can be demanded in mode m
  std::vector<std::array<int64_t, kModes>> factor_;
  std::vector<std::array<int64_t, kModes>> stream_tiles_;
  std::vector<std::array<int64_t, kModes>> strip_tiles_;
  // Per op and mode (SL, SR, FL, FR): per case of its region, the least passes over the k-loop
  // MatMuls the op can sit upstream of in that mode (P13); none for T.
  std::vector<std::array<std::array<int64_t, 5>, kModes>> cases_;
  bool path_cases_ = true;
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

inline std::string Str(int64_t v) { return std::to_string(v); }

}  // namespace annealer::bound_internal
