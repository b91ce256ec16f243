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

#include "eval/bound/lower_bound.h"

namespace annealer::bound_internal {

// Test switch: false recomputes what the parts share between ops or classes that agree on what
// decides it (P18's lines, P24's worlds, P25's gated walks, lines and LHS needs), so that a test
// can check the sharing changes no value (defined in eval/bound/sums/taps/taps.cc).
extern bool g_share_work;

enum Mode : int { kT = 0, kSL = 1, kSR = 2, kFL = 3, kFR = 4, kModes = 5 };
inline constexpr const char* kModeName[kModes] = {"T", "SL", "SR", "FL", "FR"};

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The inputs of op s that a MatMul makes and no op but s reads, each once: (tensor, its MatMul),
// in input order. The sums P23 and P33 price are Pointwise ops over such outputs.
inline std::vector<std::pair<TensorId, OpId>> MatMulInputsReadOnlyBy(const Problem& p, OpId s) {
  std::vector<std::pair<TensorId, OpId>> found;
  const std::vector<TensorId>& inputs = p.ops[s].inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorId t = inputs[i];
    if (std::find(inputs.begin(), inputs.begin() + i, t) != inputs.begin() + i) continue;
    const OpId x = p.producer[t];
    if (x == kNoOp || p.ops[x].kind != OpKind::MatMul) continue;
    if (std::any_of(p.consumers[t].begin(), p.consumers[t].end(), [s](OpId c) { return c != s; })) continue;
    found.emplace_back(t, x);
  }
  return found;
}

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
  // Mode T only: the op is never upstream of a k-loop in a strip or full mode, so every
  // instance of it computes a tile of its own output.
  bool OnlyTileMode(OpId op) const { return (modes_[op] >> kSL) == 0; }
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
  // The walk stops past the budget as soon as more than kReachBudget states are seen, whatever
  // their order, so its answer is a function of the set of states reachable from the start:
  // "every op" when there are more than kReachBudget of them, else their ops. Reach computes
  // that on the condensation of the state graph (its strongly connected components, built once
  // per Analysis): a component larger than the budget saturates at once, and the many walks of
  // a large graph share the components instead of revisiting their states. ReachWalk is the
  // walk itself, the reference Reach answers to (tests/eval/bound/bounds_test.cc).
  ReachSet Reach(OpId start, int only_mode = -1) const {
    if (!condensed_) Condense();
    const uint32_t generation = NextGeneration();
    std::vector<int>& stack = comp_stack_;
    stack.clear();
    size_t visited = 0;
    for (int m = 0; m < kModes; ++m) {
      if (!HasMode(start, m) || (only_mode >= 0 && m != only_mode)) continue;
      const int c = comp_[StateIndex(start, m, -1)];
      if (comp_seen_[c] == generation) continue;
      comp_seen_[c] = generation;
      stack.push_back(c);
    }
    std::vector<int> comps;
    while (!stack.empty()) {
      const int c = stack.back();
      stack.pop_back();
      visited += comp_size_[c];
      if (visited > kReachBudget) return ReachSet{true, {}};
      comps.push_back(c);
      for (int e = comp_edge_begin_[c]; e < comp_edge_begin_[c + 1]; ++e) {
        const int d = comp_edges_[e];
        if (comp_seen_[d] == generation) continue;
        comp_seen_[d] = generation;
        stack.push_back(d);
      }
    }
    ReachSet result;
    for (int c : comps) {
      for (int i = comp_op_begin_[c]; i < comp_op_begin_[c + 1]; ++i) {
        const OpId op = comp_ops_[i];
        if (reach_op_seen_[op] == generation) continue;
        reach_op_seen_[op] = generation;
        result.ops.push_back(op);
      }
    }
    std::sort(result.ops.begin(), result.ops.end());
    return result;
  }

  // The walk over (op, mode, entry) states that Reach's answer is defined by.
  ReachSet ReachWalk(OpId start, int only_mode = -1) const {
    PrepareStates();
    const uint32_t generation = NextGeneration();
    ReachSet result;
    std::vector<int> stack;
    size_t visited = 0;
    auto push = [&](int s) {
      if (reach_seen_[s] == generation) return;
      reach_seen_[s] = generation;
      ++visited;
      const OpId op = state_op_[s];
      if (reach_op_seen_[op] != generation) {
        reach_op_seen_[op] = generation;
        result.ops.push_back(op);
      }
      stack.push_back(s);
    };
    for (int m = 0; m < kModes; ++m) {
      if (HasMode(start, m) && (only_mode < 0 || m == only_mode)) push(StateIndex(start, m, -1));
    }
    while (!stack.empty()) {
      if (visited > kReachBudget) return ReachSet{true, {}};
      const int s = stack.back();
      stack.pop_back();
      ForEachSuccessor(s, push);
    }
    std::sort(result.ops.begin(), result.ops.end());
    return result;
  }

 private:
  // States (op, mode, entry), entry the input slot the path came in by (-1 when it came from a
  // consumer or started), numbered densely op by op.
  int StateIndex(OpId op, int mode, int entry) const {
    return state_begin_[op] + mode * (static_cast<int>(p_.ops[op].inputs.size()) + 1) + entry + 1;
  }
  void PrepareStates() const {
    if (!state_begin_.empty()) return;
    const int num_ops = static_cast<int>(p_.ops.size());
    state_begin_.assign(num_ops + 1, 0);
    for (int op = 0; op < num_ops; ++op) {
      state_begin_[op + 1] = state_begin_[op] + kModes * (static_cast<int>(p_.ops[op].inputs.size()) + 1);
    }
    const int states = state_begin_[num_ops];
    state_op_.resize(states);
    state_mode_.resize(states);
    state_entry_.resize(states);
    for (int op = 0; op < num_ops; ++op) {
      const int entries = static_cast<int>(p_.ops[op].inputs.size()) + 1;
      for (int m = 0; m < kModes; ++m) {
        for (int e = 0; e < entries; ++e) {
          const int s = StateIndex(op, m, e - 1);
          state_op_[s] = op;
          state_mode_[s] = static_cast<int8_t>(m);
          state_entry_[s] = e - 1;
        }
      }
    }
    reach_seen_.assign(states, 0);
    reach_op_seen_.assign(num_ops, 0);
  }
  uint32_t NextGeneration() const {
    if (++reach_generation_ == 0) {
      std::fill(reach_seen_.begin(), reach_seen_.end(), 0);
      std::fill(reach_op_seen_.begin(), reach_op_seen_.end(), 0);
      std::fill(comp_seen_.begin(), comp_seen_.end(), 0);
      reach_generation_ = 1;
    }
    return reach_generation_;
  }
  // The states one step from state s (P9's walk), each handed to f once per way it is reached.
  template <class F>
  void ForEachSuccessor(int s, F&& f) const {
    const OpId x = state_op_[s];
    const int mode = state_mode_[s];
    const int entry = state_entry_[s];
    const Op& op = p_.ops[x];
    // Up an input edge: the producer is demanded by this op's mode.
    for (int slot = 0; slot < static_cast<int>(op.inputs.size()); ++slot) {
      if (slot == entry) continue;
      const OpId y = p_.producer[op.inputs[slot]];
      if (y == kNoOp || !EdgeFeasible(y, x, slot, mode)) continue;
      f(StateIndex(y, Demand(x, slot, mode), -1));
    }
    // Down an output edge: the consumer picks a mode; if it demands this op in another mode,
    // the op is in both and the edge it came in by must allow that mode too. A MatMul without
    // Pointwise consumers is in F only as a sink (G3): in mode T nothing inside consumes it.
    if (mode == kT && SinkWhenTile(x)) return;
    for (OpId z : p_.consumers[op.output]) {
      const Op& zop = p_.ops[z];
      for (int slot = 0; slot < static_cast<int>(zop.inputs.size()); ++slot) {
        if (zop.inputs[slot] != op.output) continue;
        for (int mz = 0; mz < kModes; ++mz) {
          if (!HasMode(z, mz) || !EdgeFeasible(x, z, slot, mz)) continue;
          const int d = Demand(z, slot, mz);
          if (d != mode && entry >= 0) {
            const OpId y = p_.producer[op.inputs[entry]];
            if (!EdgeFeasible(y, x, entry, d)) continue;
          }
          f(StateIndex(z, mz, slot));
        }
      }
    }
  }
  // Tarjan's components of the states reachable from any start state (op, mode, -1), numbered in
  // the order they complete (a component's successors come first), with their sizes, their
  // distinct ops and the edges between them.
  void Condense() const {
    PrepareStates();
    condensed_ = true;
    const int states = static_cast<int>(state_op_.size());
    // Successor lists of the reachable states (CSR, in discovery order).
    std::vector<int> order;  // discovered states
    std::vector<int> where(states, -1);
    std::vector<int> succ_begin, succ;
    {
      std::vector<int> todo;
      const auto discover = [&](int s) {
        if (where[s] >= 0) return;
        where[s] = static_cast<int>(order.size());
        order.push_back(s);
        todo.push_back(s);
      };
      for (OpId op = 0; op < static_cast<OpId>(p_.ops.size()); ++op) {
        for (int m = 0; m < kModes; ++m) {
          if (HasMode(op, m)) discover(StateIndex(op, m, -1));
        }
      }
      // Lists in the order of `order`: fill them one discovered state at a time.
      size_t next = 0;
      succ_begin.push_back(0);
      while (next < order.size()) {
        const int s = order[next++];
        ForEachSuccessor(s, [&](int t) {
          succ.push_back(t);
          discover(t);
        });
        succ_begin.push_back(static_cast<int>(succ.size()));
      }
    }
    const int count = static_cast<int>(order.size());
    std::vector<int> index(count, -1), low(count, 0), on_stack(count, 0), tstack;
    std::vector<std::pair<int, int>> call;  // (node, next successor position)
    comp_.assign(states, -1);
    std::vector<int> comp_of(count, -1);
    int counter = 0, comps = 0;
    for (int root = 0; root < count; ++root) {
      if (index[root] >= 0) continue;
      call.push_back({root, succ_begin[root]});
      index[root] = low[root] = counter++;
      tstack.push_back(root);
      on_stack[root] = 1;
      while (!call.empty()) {
        auto& [v, pos] = call.back();
        if (pos < succ_begin[v + 1]) {
          const int w = where[succ[pos++]];
          if (index[w] < 0) {
            index[w] = low[w] = counter++;
            tstack.push_back(w);
            on_stack[w] = 1;
            call.push_back({w, succ_begin[w]});
          } else if (on_stack[w]) {
            low[v] = std::min(low[v], index[w]);
          }
          continue;
        }
        const int done = v;
        call.pop_back();
        if (!call.empty()) low[call.back().first] = std::min(low[call.back().first], low[done]);
        if (low[done] != index[done]) continue;
        int w;
        do {
          w = tstack.back();
          tstack.pop_back();
          on_stack[w] = 0;
          comp_of[w] = comps;
        } while (w != done);
        ++comps;
      }
    }
    comp_size_.assign(comps, 0);
    for (int v = 0; v < count; ++v) {
      comp_[order[v]] = comp_of[v];
      ++comp_size_[comp_of[v]];
    }
    // Members grouped by component: their distinct ops, and the distinct edges to other ones.
    std::vector<int> member_begin(comps + 1, 0);
    for (int v = 0; v < count; ++v) ++member_begin[comp_of[v] + 1];
    for (int c = 0; c < comps; ++c) member_begin[c + 1] += member_begin[c];
    std::vector<int> members(count), fill(member_begin.begin(), member_begin.end() - 1);
    for (int v = 0; v < count; ++v) members[fill[comp_of[v]]++] = v;
    comp_seen_.assign(comps, 0);
    std::vector<int> op_mark(p_.ops.size(), -1), comp_mark(comps, -1);
    comp_op_begin_.assign(1, 0);
    comp_edge_begin_.assign(1, 0);
    comp_ops_.clear();
    comp_edges_.clear();
    for (int c = 0; c < comps; ++c) {
      for (int i = member_begin[c]; i < member_begin[c + 1]; ++i) {
        const int v = members[i];
        const OpId op = state_op_[order[v]];
        if (op_mark[op] != c) {
          op_mark[op] = c;
          comp_ops_.push_back(op);
        }
        for (int e = succ_begin[v]; e < succ_begin[v + 1]; ++e) {
          const int d = comp_of[where[succ[e]]];
          if (d == c || comp_mark[d] == c) continue;
          comp_mark[d] = c;
          comp_edges_.push_back(d);
        }
      }
      comp_op_begin_.push_back(static_cast<int>(comp_ops_.size()));
      comp_edge_begin_.push_back(static_cast<int>(comp_edges_.size()));
    }
  }

  mutable std::vector<int> state_begin_;  // per op, its first state; then the count
  mutable std::vector<OpId> state_op_;
  mutable std::vector<int8_t> state_mode_;
  mutable std::vector<int> state_entry_;
  mutable std::vector<uint32_t> reach_seen_;     // ReachWalk's scratch, per state
  mutable std::vector<uint32_t> reach_op_seen_;  // per op
  mutable uint32_t reach_generation_ = 0;
  mutable bool condensed_ = false;
  mutable std::vector<int> comp_;  // per state, its component (-1: unreachable from any start)
  mutable std::vector<size_t> comp_size_;
  mutable std::vector<int> comp_op_begin_, comp_ops_;
  mutable std::vector<int> comp_edge_begin_, comp_edges_;
  mutable std::vector<uint32_t> comp_seen_;
  mutable std::vector<int> comp_stack_;

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
  // Per graph input on the activation path, the elements P12 counts for it, per island that reads
  // it: (island, elements). P35 subtracts them from the loads it claims (eval/bound/islands/recompute.h).
  std::vector<std::vector<std::pair<int, Elements>>> input_claims;
  // The same for graph inputs on the weight path (H6): P43 gives a head's weight to its budget.
  std::vector<std::vector<std::pair<int, Elements>>> weight_claims;
};

inline std::string Str(int64_t v) { return std::to_string(v); }

}  // namespace annealer::bound_internal
