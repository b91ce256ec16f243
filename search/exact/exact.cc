#include "search/exact/exact.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <queue>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "eval/bound/bounds.h"
#include "eval/cost/cost_cache.h"
#include "eval/oracle.h"
#include "eval/cost/pricing_stop.h"
#include "eval/cost/subgraph_cost.h"
#include "eval/model/subgraph_structure.h"
#include "eval/model/traversal.h"
#include "search/starts/baseline.h"
#include "search/starts/constructive.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"

namespace annealer {

std::string_view ExactStatusName(ExactStatus status) {
  switch (status) {
    case ExactStatus::kOptimal: return "optimal";
    case ExactStatus::kFeasible: return "feasible";
    case ExactStatus::kNone: return "none";
  }
  return "none";
}

Latency ComputeOpsBound(const Problem& problem, const std::vector<char>& ops) {
  // Each step costs max(compute, memory), so a set of subgraphs costs at least the larger of
  // their total compute and their total transfers. Compute: every op at least base x its native
  // tiles (spec C3). Transfers: every graph input an op reads is loaded by that op's subgraph
  // (graph inputs cannot be retained, V8) and every graph output written (V9, O5).
  Latency compute = 0;
  Elements io = 0;
  std::vector<char> counted(problem.tensors.size(), 0);
  // A Layout op loads no input: it gathers its whole output at least once (spec L2, L4), even
  // where a copy is retained in.
  for (OpId op = 0; op < static_cast<OpId>(problem.ops.size()); ++op) {
    if (!ops[op]) continue;
    compute += problem.ops[op].base_cost * static_cast<double>(problem.NativeTiles(op));
    if (problem.ops[op].kind == OpKind::Layout) {
      io += problem.tensors[problem.ops[op].output].size();
      if (problem.IsGraphOutput(problem.ops[op].output)) io += problem.tensors[problem.ops[op].output].size();
      continue;
    }
    for (TensorId t : problem.ops[op].inputs) {
      if (problem.producer[t] == kNoOp && !counted[t]) {
        counted[t] = 1;
        io += problem.tensors[t].size();
      }
    }
    const TensorId out = problem.ops[op].output;
    if (problem.IsGraphOutput(out)) io += problem.tensors[out].size();
  }
  // H6: with a weight path beside the slow memory, max(w / Bw, o / B) >= (w + o) / (B + Bw).
  return std::max(compute, static_cast<double>(io) / (problem.slow_memory_bandwidth + problem.chip.weight_bandwidth));
}

std::string ExactFamilyText(int max_subgraph_ops_bound) {
  std::string text =
      "no recomputation (every op in exactly one subgraph, ops in topological order); "
      "w | output width, h | output height, k | K* (k = 1 without MatMul), all <= native; "
      "traversal raster, row-snake, column-major or column-snake; "
      "retain: every ephemeral read later (forced) plus any subset of the sinks read later, "
      "all of whose later readers are in the next subgraph (any other retention is invalid or "
      "changes nothing but the working set)";
  if (max_subgraph_ops_bound > 0) {
    text += "; at most " + std::to_string(max_subgraph_ops_bound) + " ops per subgraph";
  }
  return text;
}

namespace {

using Clock = std::chrono::steady_clock;
constexpr Latency kInf = std::numeric_limits<Latency>::infinity();
// Sums taken in another order differ in the last bits; a candidate must beat a bound by more
// than this relative margin to count (and the optimality claim is up to it).
constexpr double kRelativeSlack = 1e-9;
// Explicit traversals are vectors of the tile count; beyond this (never reached on the contest
// problems: tiles are cut by the floors long before) only raster is priced.
constexpr int64_t kMaxExplicitTraversalTiles = int64_t{1} << 20;

std::vector<Elements> DivisorsUpTo(Elements dim, Elements top) {
  std::vector<Elements> values;
  for (Elements v = std::min(dim, top); v >= 1; --v) {
    if (dim % v == 0) values.push_back(v);
  }
  return values;  // descending
}

// What the configuration space of a subgraph depends on: its tile grid's source (the sinks'
// common output shape, spec G2) and the k-loop's reduction length K* with its MatMuls F (spec
// G3). eval/model/subgraph_structure.h checks V1 (local), V2, V6, V5, V8, V12 and G3 before anything
// that depends on the granularity, so one analysis at [1, 1, 1] in raster order tells both the
// grid facts and whether the op set can be valid at all: only V11 (w or h against K for a
// Pointwise prologue) and H3 (a chip's tile base) can still fail there and pass at another
// granularity.
struct GridFacts {
  bool valid = false;  // false: no configuration of this op list and retain set is valid
  Elements height = 0, width = 0;
  Elements reduction = 0;    // 0: no k-loop
  std::vector<OpId> k_loop;  // F
};

GridFacts AnalyseGrid(const Problem& problem, const std::vector<OpId>& ops, const std::vector<TensorId>& retain) {
  GridFacts facts;
  Subgraph probe;
  probe.ops = ops;
  probe.granularity = {1, 1, 1};
  probe.retain = retain;
  thread_local SubgraphStructure structure;
  const std::optional<Violation> violation = AnalyseSubgraph(problem, probe, structure);
  // V11 and H3 (the chip's tile base) are the rules that depend on the granularity.
  if (violation && violation->rule != "V11" && violation->rule != "H3") return facts;
  facts.valid = true;
  facts.height = structure.output_height;
  facts.width = structure.output_width;
  facts.reduction = structure.reduction;
  facts.k_loop = structure.k_loop_matmuls;
  return facts;
}

// Shared by the components of one solve: budgets, counters, the clock.
struct SolveContext {
  const Problem& problem;
  const ExactOptions& options;
  Clock::time_point started;
  Clock::time_point last_progress;
  std::function<bool()> stop_test;
  int64_t states = 0;
  int64_t expansions = 0;
  int64_t pricings = 0;
  int64_t contexts = 0;
  bool incomplete = false;  // a configuration of the family was not priced (traversal cap)
  int components = 0;
  int component = 0;
  Latency incumbent = 0;
  std::string stop_reason;

  bool OutOfTime() {
    if (!stop_reason.empty()) return true;
    if (options.stop != nullptr && options.stop->load(std::memory_order_relaxed)) {
      stop_reason = "stopped";
    } else if (Clock::now() >= options.deadline) {
      stop_reason = "time";
    }
    return !stop_reason.empty();
  }
};

// The best configuration of one (S, R, Q) context. `limit`: it was searched for costs below
// `limit`; `best` is exact when best < limit, otherwise the minimum is at least `limit`.
struct ContextEntry {
  Latency best = kInf;
  Latency limit = 0;
  Granularity granularity;
  int pattern = 0;
};

struct Config {
  Latency cost = kInf;
  Granularity granularity;
  int pattern = 0;
};

class ComponentSolver {
 public:
  enum class Outcome { kSolved, kNothingBelow, kAborted };

  ComponentSolver(SolveContext& ctx, std::vector<OpId> ops)
      : ctx_(ctx), problem_(ctx.problem), global_(std::move(ops)) {
    m_ = static_cast<int>(global_.size());
    words_ = (m_ + 63) / 64;
    local_.assign(problem_.ops.size(), -1);
    for (int i = 0; i < m_; ++i) local_[global_[i]] = i;
    preds_.resize(m_);
    readers_.resize(m_);
    for (int i = 0; i < m_; ++i) {
      const Op& op = problem_.ops[global_[i]];
      for (TensorId t : op.inputs) {
        const OpId p = problem_.producer[t];
        if (p != kNoOp && local_[p] >= 0) preds_[i].push_back(local_[p]);
      }
      for (OpId c : problem_.consumers[op.output]) {
        if (local_[c] >= 0) readers_[i].push_back(local_[c]);
      }
      Dedup(preds_[i]);
      Dedup(readers_[i]);
    }
    max_ops_ = std::min(m_, std::max(1, ctx_.options.max_subgraph_ops));
    mark_.assign(problem_.ops.size(), 0);
  }

  // Lower bound of executing every op of the component outside `done` (the RemainingBound).
  Latency Bound(const uint64_t* done) {
    std::fill(mark_.begin(), mark_.end(), 0);
    for (int i = 0; i < m_; ++i) {
      if (!Test(done, i)) mark_[global_[i]] = 1;
    }
    return ctx_.options.remaining_bound ? ctx_.options.remaining_bound(problem_, mark_)
                                        : ComputeOpsBound(problem_, mark_);
  }

  // A* below `threshold` (exclusive). On kSolved, `opt` and `subgraphs` hold the optimum.
  Outcome Solve(Latency threshold, Latency& opt, std::vector<Subgraph>& subgraphs) {
    threshold_ = threshold;
    std::vector<uint64_t> empty(words_, 0);
    if (Intern(empty.data(), {}, 0, -1, {}, 0) < 0) return Outcome::kAborted;
    while (!open_.empty()) {
      if (ctx_.OutOfTime()) return Outcome::kAborted;
      const auto [f, id] = open_.top();
      open_.pop();
      State& s = states_[id];
      if (s.expanded_g <= s.g || f > s.g + s.h) continue;  // stale entry
      s.expanded_g = s.g;
      if (IsGoal(id)) {
        opt = s.g;
        subgraphs = Reconstruct(id);
        return Outcome::kSolved;
      }
      ++ctx_.expansions;
      Report(f);
      try {
        if (!Expand(id)) return Outcome::kAborted;
      } catch (const PricingCancelled&) {
        ctx_.OutOfTime();
        if (ctx_.stop_reason.empty()) ctx_.stop_reason = "stopped";
        return Outcome::kAborted;
      }
    }
    return Outcome::kNothingBelow;
  }

 private:
  struct State {
    int64_t parent = -1;
    Latency g = 0;
    Latency h = 0;
    Latency expanded_g = kInf;
    Granularity granularity;
    int8_t pattern = 0;
    uint32_t r_begin = 0;
    uint16_t r_count = 0;
  };

  static void Dedup(std::vector<int>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  static bool Test(const uint64_t* bits, int i) { return (bits[i >> 6] >> (i & 63)) & 1; }
  static void Set(uint64_t* bits, int i) { bits[i >> 6] |= uint64_t{1} << (i & 63); }
  const uint64_t* Bits(int64_t id) const { return bits_.data() + id * words_; }
  const TensorId* RBegin(const State& s) const { return retained_.data() + s.r_begin; }

  bool IsGoal(int64_t id) const {
    const uint64_t* b = Bits(id);
    for (int i = 0; i < m_; ++i) {
      if (!Test(b, i)) return false;
    }
    return states_[id].r_count == 0;
  }

  uint64_t Hash(const uint64_t* bits, const std::vector<TensorId>& r) const {
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    auto mix = [&](uint64_t x) {
      h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
      h *= 0xff51afd7ed558ccdULL;
    };
    for (int w = 0; w < words_; ++w) mix(bits[w]);
    for (TensorId t : r) mix(static_cast<uint64_t>(t) + 1);
    return h;
  }

  bool SameState(int64_t id, const uint64_t* bits, const std::vector<TensorId>& r) const {
    const State& s = states_[id];
    if (s.r_count != r.size()) return false;
    if (std::memcmp(Bits(id), bits, sizeof(uint64_t) * words_) != 0) return false;
    return std::equal(r.begin(), r.end(), RBegin(s));
  }

  // The state (bits, r), created when new; -1 when the state budget is spent. A known state
  // takes the new g (and parent, configuration) only when it improves.
  int64_t Intern(const uint64_t* bits, const std::vector<TensorId>& r, Latency g, int64_t parent,
                 const Granularity& granularity, int pattern) {
    if (slots_.empty()) slots_.assign(1024, -1);
    const uint64_t h = Hash(bits, r);
    size_t mask = slots_.size() - 1;
    size_t i = h & mask;
    while (slots_[i] >= 0) {
      if (SameState(slots_[i], bits, r)) {
        State& s = states_[slots_[i]];
        if (g < s.g) {
          s.g = g;
          s.parent = parent;
          s.granularity = granularity;
          s.pattern = static_cast<int8_t>(pattern);
          Push(slots_[i]);
        }
        return slots_[i];
      }
      i = (i + 1) & mask;
    }
    if (ctx_.states >= ctx_.options.max_states) {
      if (ctx_.stop_reason.empty()) ctx_.stop_reason = "state budget";
      return -1;
    }
    ++ctx_.states;
    const int64_t id = static_cast<int64_t>(states_.size());
    State s;
    s.parent = parent;
    s.g = g;
    s.granularity = granularity;
    s.pattern = static_cast<int8_t>(pattern);
    s.r_begin = static_cast<uint32_t>(retained_.size());
    s.r_count = static_cast<uint16_t>(r.size());
    retained_.insert(retained_.end(), r.begin(), r.end());
    bits_.insert(bits_.end(), bits, bits + words_);
    s.h = Bound(bits);
    states_.push_back(s);
    slots_[i] = id;
    if (states_.size() * 2 > slots_.size()) Rehash();
    Push(id);
    return id;
  }

  void Rehash() {
    std::vector<int64_t> slots(slots_.size() * 2, -1);
    const size_t mask = slots.size() - 1;
    for (int64_t id = 0; id < static_cast<int64_t>(states_.size()); ++id) {
      const State& s = states_[id];
      const std::vector<TensorId> r(RBegin(s), RBegin(s) + s.r_count);
      size_t i = Hash(Bits(id), r) & mask;
      while (slots[i] >= 0) i = (i + 1) & mask;
      slots[i] = id;
    }
    slots_.swap(slots);
  }

  void Push(int64_t id) { open_.push({states_[id].g + states_[id].h, id}); }

  void Report(Latency frontier) {
    if (!ctx_.options.on_progress) return;
    const Clock::time_point now = Clock::now();
    if (std::chrono::duration<double>(now - ctx_.last_progress).count() < ctx_.options.progress_interval) return;
    ctx_.last_progress = now;
    ExactProgress progress;
    progress.elapsed_seconds = std::chrono::duration<double>(now - ctx_.started).count();
    progress.states = ctx_.states;
    progress.expansions = ctx_.expansions;
    progress.component = ctx_.component;
    progress.components = ctx_.components;
    progress.frontier = frontier;
    progress.incumbent = ctx_.incumbent;
    ctx_.options.on_progress(progress);
  }

  // ---- candidate subgraphs: connected and closed over the executed set -------------------
  //
  // A closed set S (every predecessor of an op of S executed or in S) is the union of the
  // ancestor sets anc(u) = u and its unexecuted ancestors, over its ops; anc(u) is connected
  // (every ancestor reaches u through unexecuted ops, since the executed set is downward
  // closed). So every connected closed S is reached from anc(v), v in S, by repeatedly adding
  // anc(u) for an op u read-adjacent to the current set (u reads an output of it; a producer of
  // its inputs is already inside or executed): the search below walks exactly the connected
  // closed sets of at most max_ops_ ops, each once (a visited set), and never the far more
  // numerous connected sets that are not closed.

  // Appends every transition out of state `id`; false when a budget ran out.
  bool Expand(int64_t id) {
    const State parent = states_[id];
    done_.assign(Bits(id), Bits(id) + words_);
    r_in_.assign(RBegin(parent), RBegin(parent) + parent.r_count);
    // Every remaining reader of a retained tensor must run in this very subgraph.
    must_.clear();
    for (TensorId t : r_in_) {
      for (int c : readers_[local_[problem_.producer[t]]]) {
        if (!Test(done_.data(), c)) must_.push_back(c);
      }
    }
    Dedup(must_);
    anc_.assign(static_cast<size_t>(m_) * words_, 0);
    anc_size_.assign(m_, -1);
    visited_.clear();
    pending_.clear();
    auto offer = [&](std::vector<uint64_t> set) {
      int size = 0;
      for (uint64_t w : set) size += __builtin_popcountll(w);
      if (size > max_ops_) return;
      std::string key(reinterpret_cast<const char*>(set.data()), sizeof(uint64_t) * words_);
      if (!visited_.insert(std::move(key)).second) return;
      // The candidates of one state share the state budget: a very wide graph cannot make the
      // enumeration outgrow what the configuration allows.
      if (static_cast<int64_t>(visited_.size()) > ctx_.options.max_states) {
        if (ctx_.stop_reason.empty()) ctx_.stop_reason = "state budget";
        ok_ = false;
        return;
      }
      pending_.push_back(std::move(set));
    };
    ok_ = true;
    for (int v = 0; v < m_ && ok_; ++v) {
      if (Test(done_.data(), v)) continue;
      if (!must_.empty() && v != must_.front()) continue;  // S contains anc(must_[0])
      if (Ancestors(v) > max_ops_) continue;
      offer(std::vector<uint64_t>(AncBits(v), AncBits(v) + words_));
    }
    while (!pending_.empty() && ok_) {
      std::vector<uint64_t> set = std::move(pending_.back());
      pending_.pop_back();
      in_s_.assign(m_, 0);
      sub_.clear();
      for (int i = 0; i < m_; ++i) {
        if (Test(set.data(), i)) {
          in_s_[i] = 1;
          sub_.push_back(i);
        }
      }
      Emit(id);
      if (static_cast<int>(sub_.size()) >= max_ops_) continue;
      for (int v : sub_) {
        for (int u : readers_[v]) {
          if (in_s_[u] || Ancestors(u) > max_ops_) continue;
          std::vector<uint64_t> grown = set;
          const uint64_t* a = AncBits(u);
          for (int w = 0; w < words_; ++w) grown[w] |= a[w];
          offer(std::move(grown));
        }
      }
    }
    return ok_;
  }

  const uint64_t* AncBits(int u) const { return anc_.data() + static_cast<size_t>(u) * words_; }

  // anc(u) into anc_ (computed once per expansion); returns its size.
  int Ancestors(int u) {
    if (anc_size_[u] >= 0) return anc_size_[u];
    uint64_t* bits = anc_.data() + static_cast<size_t>(u) * words_;
    std::vector<int> stack{u};
    Set(bits, u);
    int size = 1;
    while (!stack.empty()) {
      const int v = stack.back();
      stack.pop_back();
      for (int p : preds_[v]) {
        if (Test(done_.data(), p) || Test(bits, p)) continue;
        Set(bits, p);
        ++size;
        stack.push_back(p);
      }
    }
    return anc_size_[u] = size;
  }

  // One candidate set sub_ (ascending; in_s_ marks it): checks the retained readers, then
  // prices every retain set.
  void Emit(int64_t parent_id) {
    if (ctx_.OutOfTime()) {
      ok_ = false;
      return;
    }
    Report(states_[parent_id].g + states_[parent_id].h);
    for (int c : must_) {
      if (!in_s_[c]) return;
    }
    std::vector<int> local_ops = sub_;
    std::sort(local_ops.begin(), local_ops.end());
    std::vector<uint64_t> next_done = done_;
    for (int v : local_ops) Set(next_done.data(), v);
    // Retain options: ephemerals read later are forced, sinks read later are free choices.
    std::vector<TensorId> forced, optional;
    for (int v : local_ops) {
      bool read_inside = false, read_later = false, layout_later = false;
      for (int c : readers_[v]) {
        if (in_s_[c]) {
          read_inside = true;
        } else {
          read_later = true;  // not executed: it comes after v
          layout_later = layout_later || problem_.ops[global_[c]].kind == OpKind::Layout;
        }
      }
      if (!read_later) continue;
      if (layout_later) {
        // A later Layout op gathers it from slow memory (spec L1): an ephemeral is never
        // written, so no schedule continues from here; a sink must be written, not retained.
        if (read_inside) return;
        continue;
      }
      (read_inside ? forced : optional).push_back(problem_.ops[global_[v]].output);
    }
    std::vector<OpId> ops;
    for (int v : local_ops) ops.push_back(global_[v]);
    const State parent = states_[parent_id];
    const Latency h_next = Bound(next_done.data());
    const Latency room = threshold_ - parent.g - h_next;  // a transition costing >= room is useless
    if (!(room > 0)) return;
    if (optional.size() > 20) optional.resize(20);  // 2^20 retain sets would never be priced anyway
    const uint64_t choices = uint64_t{1} << optional.size();
    for (uint64_t mask = 0; mask < choices && ok_; ++mask) {
      std::vector<TensorId> q = forced;
      for (size_t b = 0; b < optional.size(); ++b) {
        if ((mask >> b) & 1) q.push_back(optional[b]);
      }
      std::sort(q.begin(), q.end());
      const Config config = BestConfig(ops, q, room);
      if (!ok_) return;
      if (!(config.cost < room)) continue;
      const int64_t child = Intern(next_done.data(), q, parent.g + config.cost, parent_id,
                                   config.granularity, config.pattern);
      if (child < 0) {
        ok_ = false;
        return;
      }
    }
  }

  // ---- configurations ------------------------------------------------------------------------

  Config BestConfig(const std::vector<OpId>& ops, const std::vector<TensorId>& q, Latency limit) {
    std::string key;
    auto put = [&key](const auto& values) {
      for (auto v : values) key.append(reinterpret_cast<const char*>(&v), sizeof v);
      const int32_t sep = -1;
      key.append(reinterpret_cast<const char*>(&sep), sizeof sep);
    };
    put(ops);
    put(r_in_);
    put(q);
    auto it = memo_.find(key);
    if (it != memo_.end()) {
      const ContextEntry& e = it->second;
      if (e.best < e.limit || limit <= e.limit) return {e.best < e.limit ? e.best : kInf, e.granularity, e.pattern};
    }
    ++ctx_.contexts;
    ContextEntry entry = Search(ops, q, limit);
    if (!ok_) return {};
    if (static_cast<int64_t>(memo_.size()) >= ctx_.options.max_contexts) memo_.clear();
    memo_[key] = entry;
    return {entry.best < entry.limit ? entry.best : kInf, entry.granularity, entry.pattern};
  }

  ContextEntry Search(const std::vector<OpId>& ops, const std::vector<TensorId>& q, Latency limit) {
    ContextEntry entry;
    entry.limit = limit;
    const GridFacts grid = AnalyseGrid(problem_, ops, q);
    if (!grid.valid) return entry;
    Latency base_sum = 0;
    for (OpId op : ops) base_sum += problem_.ops[op].base_cost;
    const std::vector<Elements>& ws = Divisors(grid.width);
    const std::vector<Elements>& hs = Divisors(grid.height);
    const std::vector<Elements>& ks = Divisors(grid.reduction == 0 ? 1 : grid.reduction);
    struct Sides {
      Elements w, h;
      int64_t tiles;
    };
    std::vector<Sides> sides;
    for (Elements w : ws) {
      for (Elements h : hs) sides.push_back({w, h, (grid.width / w) * (grid.height / h)});
    }
    std::stable_sort(sides.begin(), sides.end(), [](const Sides& a, const Sides& b) { return a.tiles < b.tiles; });
    // Whatever the configuration, every element of every boundary input not retained in is
    // loaded at least once (all of it is read by some step, and a first read is never free),
    // and every sink not retained is written whole: a floor on the memory time, hence on the
    // latency (each step costs at least its memory time).
    Elements moved = 0;
    // Streamed operands: a boundary input not retained in whose only reader in S is a k-loop
    // MatMul (F). With n_k > 1 consecutive steps ask for different k-slices of it and nothing
    // else asks for it, so every step loads its slice (spec D2, M1): h x k per step for an LHS,
    // k x w for an RHS, in place of the one whole load counted above.
    Elements streamed_lhs = 0, streamed_rhs = 0;  // how many such operands, and their whole sizes
    Elements streamed_whole = 0;
    {
      std::vector<char> produced(problem_.tensors.size(), 0), read(problem_.tensors.size(), 0);
      std::vector<int> readers(problem_.tensors.size(), 0);
      for (OpId op : ops) produced[problem_.ops[op].output] = 1;
      for (OpId op : ops) {
        for (TensorId t : problem_.ops[op].inputs) ++readers[t];
      }
      for (OpId op : ops) {
        if (problem_.ops[op].kind == OpKind::Layout) {
          // Not its input: every element of its output is gathered at least once (L2, L4), a
          // copy retained in notwithstanding.
          moved += problem_.tensors[problem_.ops[op].output].size();
          continue;
        }
        for (TensorId t : problem_.ops[op].inputs) {
          if (read[t]) continue;
          read[t] = 1;
          if (produced[t] || std::find(r_in_.begin(), r_in_.end(), t) != r_in_.end()) continue;
          moved += problem_.tensors[t].size();
          const Op& reader = problem_.ops[op];
          if (readers[t] == 1 && reader.kind == OpKind::MatMul && reader.inputs[0] != reader.inputs[1] &&
              std::find(grid.k_loop.begin(), grid.k_loop.end(), op) != grid.k_loop.end()) {
            (t == reader.inputs[0] ? streamed_lhs : streamed_rhs) += 1;
            streamed_whole += problem_.tensors[t].size();
          }
        }
      }
      for (OpId op : ops) {
        const TensorId out = problem_.ops[op].output;
        if (!read[out] && std::find(q.begin(), q.end(), out) == q.end()) moved += problem_.tensors[out].size();
      }
    }
    // Working set every step holds whatever the configuration (rule W): the retained tensors in
    // and out, a tile of each sink written back, and the slices of the streamed operands.
    Elements resident = 0, written_sinks = 0;
    for (TensorId t : r_in_) resident += problem_.tensors[t].size();
    for (TensorId t : q) resident += problem_.tensors[t].size();
    for (OpId op : ops) {
      const TensorId out = problem_.ops[op].output;
      bool read_inside = false;
      for (OpId other : ops) {
        for (TensorId in : problem_.ops[other].inputs) read_inside = read_inside || in == out;
      }
      if (!read_inside && std::find(q.begin(), q.end(), out) == q.end()) ++written_sinks;
    }
    // H6: both paths together move at most B + Bw per time unit (max(w / Bw, o / B) >= (w + o) / (B + Bw)).
    const double paths_bandwidth = problem_.slow_memory_bandwidth + problem_.chip.weight_bandwidth;
    const Latency memory_floor = static_cast<double>(moved) / paths_bandwidth * (1 - kRelativeSlack);
    if (memory_floor >= limit) return entry;
    Subgraph scratch;
    scratch.ops = ops;
    scratch.retain = q;
    for (const Sides& s : sides) {
      // Each tile charges every op at least its base cost (spec C1-C4): no configuration with
      // this many tiles or more can beat the best or fit under the limit.
      const Latency floor =
          std::max(static_cast<double>(s.tiles) * base_sum * (1 - kRelativeSlack), memory_floor);
      if (floor >= std::min(entry.best, limit)) break;
      const int64_t rows = grid.height / s.h, cols = grid.width / s.w;
      int patterns = rows == 1 || cols == 1 ? 1 : static_cast<int>(std::size(kAllTraversalPatterns));
      if (patterns > 1 && s.tiles > kMaxExplicitTraversalTiles) {
        // An explicit order of this many tiles is too big to build; only raster is priced, and
        // the run can no longer claim the family exhausted.
        patterns = 1;
        ctx_.incomplete = true;
      }
      std::optional<std::vector<int64_t>> orders[std::size(kAllTraversalPatterns)];
      for (int t = 1; t < patterns; ++t) orders[t] = MakeTraversal(kAllTraversalPatterns[t], rows, cols);
      for (Elements k : ks) {
        const Elements k_slice = grid.reduction == 0 ? 0 : k;
        // (H6: a streamed weight sits in the FIFO, not in the fast memory: no such shortcut.)
        if (!problem_.chip.two_paths() &&
            resident + written_sinks * s.w * s.h + k_slice * (streamed_lhs * s.h + streamed_rhs * s.w) >
                problem_.fast_memory_capacity) {
          continue;  // out of memory in every step (rule W), whatever the traversal
        }
        if (grid.reduction / k > 1 && streamed_lhs + streamed_rhs > 0) {
          const Elements steps = s.tiles * (grid.reduction / k);
          const Elements loads = moved - streamed_whole + steps * k * (streamed_lhs * s.h + streamed_rhs * s.w);
          const Latency floor_k = static_cast<double>(loads) / paths_bandwidth * (1 - kRelativeSlack);
          if (floor_k >= std::min(entry.best, limit)) continue;
        }
        for (int t = 0; t < patterns; ++t) {
          if (ctx_.OutOfTime()) {
            ok_ = false;
            return entry;
          }
          scratch.granularity = {s.w, s.h, k};
          scratch.traversal.swap(orders[t]);
          ++ctx_.pricings;
          const SubgraphResult result = CostSubgraph(problem_, scratch, r_in_);
          scratch.traversal.swap(orders[t]);
          // Validity does not depend on the traversal (a step's working set is that of its
          // tile and k-range, rule W): when raster fails, every order fails.
          if (!result.ok()) break;
          if (result.report.latency < entry.best) {
            entry.best = result.report.latency;
            entry.granularity = scratch.granularity;
            entry.pattern = t;
            if (entry.best <= memory_floor) return entry;  // nothing can be cheaper
          }
        }
      }
    }
    return entry;
  }

  // ---- the optimum -------------------------------------------------------------------------

  std::vector<Subgraph> Reconstruct(int64_t goal) const {
    std::vector<Subgraph> out;
    for (int64_t id = goal; states_[id].parent >= 0; id = states_[id].parent) {
      const State& s = states_[id];
      const uint64_t* now = Bits(id);
      const uint64_t* before = Bits(s.parent);
      Subgraph sg;
      for (int i = 0; i < m_; ++i) {
        if (Test(now, i) && !Test(before, i)) sg.ops.push_back(global_[i]);
      }
      sg.granularity = s.granularity;
      sg.retain.assign(RBegin(s), RBegin(s) + s.r_count);
      const GridFacts grid = AnalyseGrid(problem_, sg.ops, sg.retain);
      sg.traversal = MakeTraversal(kAllTraversalPatterns[s.pattern], grid.height / s.granularity.h,
                                   grid.width / s.granularity.w);
      out.push_back(std::move(sg));
    }
    std::reverse(out.begin(), out.end());
    return out;
  }

  SolveContext& ctx_;
  const Problem& problem_;
  std::vector<OpId> global_;  // local index -> op id, in topological order
  std::vector<int> local_;    // op id -> local index or -1
  int m_ = 0, words_ = 0, max_ops_ = 1;
  std::vector<std::vector<int>> preds_, readers_;
  std::vector<char> mark_;
  // DivisorsUpTo(dim, native) per dim: every context searched asks for three (nodes: references
  // stay valid as the map grows).
  std::unordered_map<Elements, std::vector<Elements>> divisors_;
  const std::vector<Elements>& Divisors(Elements dim) {
    auto it = divisors_.find(dim);
    if (it == divisors_.end()) it = divisors_.emplace(dim, DivisorsUpTo(dim, problem_.native)).first;
    return it->second;
  }
  Latency threshold_ = kInf;

  std::vector<State> states_;
  std::vector<uint64_t> bits_;
  std::vector<TensorId> retained_;
  std::vector<int64_t> slots_;
  using Entry = std::pair<Latency, int64_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> open_;
  std::unordered_map<std::string, ContextEntry> memo_;

  // Expansion scratch.
  std::vector<uint64_t> done_;
  std::vector<TensorId> r_in_;
  std::vector<int> must_, sub_, in_s_;
  std::vector<uint64_t> anc_;
  std::vector<int> anc_size_;
  std::unordered_set<std::string> visited_;
  std::vector<std::vector<uint64_t>> pending_;
  bool ok_ = true;
};

}  // namespace

std::optional<Schedule> ConstructiveIncumbent(const Problem& problem, const std::function<bool()>& stop) {
  std::optional<Schedule> best;
  Latency best_total = kInf;
  auto consider = [&](const Schedule& schedule) {
    const Evaluation evaluation = EvaluateOracle(problem, schedule);
    if (evaluation.ok() && evaluation.total < best_total) {
      best_total = evaluation.total;
      best = schedule;
    }
  };
  Schedule baseline;
  try {
    baseline = BuildBaseline(problem);
  } catch (const std::runtime_error&) {
    return best;  // some op fits alone at no granularity: no start
  }
  consider(baseline);
  CostCache cache(1 << 18);
  const SubgraphPricer pricer(problem, &cache);
  const ScopedPricingStop pricing_stop(stop);
  try {
    if (!stop()) {
      const Schedule fused = GreedyFusion(problem, pricer, baseline, stop);
      consider(fused);
      if (!stop()) consider(Polish(problem, pricer, fused, stop, false));
    }
    if (!stop()) {
      const Schedule grouped = PatternGrouping(problem, pricer, stop);
      consider(grouped);
      if (!stop()) consider(Polish(problem, pricer, grouped, stop, false));
    }
  } catch (const PricingCancelled&) {
    // Out of time: what was considered stands.
  }
  return best;
}

RemainingBound DefaultRemainingBound(std::shared_ptr<const BoundModel> model) {
  return [model = std::move(model)](const Problem& p, const std::vector<char>& ops) {
    return std::max(ComputeOpsBound(p, ops), RemainingLowerBound(*model, ops));
  };
}

ExactResult SolveExact(const Problem& problem, const ExactOptions& given) {
  // The default heuristic: the larger of ComputeOpsBound and eval/bounds' remaining-ops bound
  // (RemainingLowerBound holds after any prefix, with or without recomputation, so it is
  // admissible here; the brute-force test in tests/search/exact_test.cc checks the optimum with it).
  ExactOptions options = given;
  if (!options.remaining_bound) {
    options.remaining_bound = DefaultRemainingBound(std::make_shared<const BoundModel>(BuildBoundModel(problem)));
  }
  ExactResult result;
  SolveContext ctx{problem, options, Clock::now(), Clock::now(), {}, 0, 0, 0, 0, false, 0, 0, 0, {}};
  ctx.stop_test = [&ctx] { return ctx.OutOfTime(); };
  const ScopedPricingStop pricing_stop(ctx.stop_test);
  auto finish = [&](ExactResult& r) -> ExactResult& {
    r.states = ctx.states;
    r.expansions = ctx.expansions;
    r.pricings = ctx.pricings;
    r.contexts = ctx.contexts;
    r.seconds = std::chrono::duration<double>(Clock::now() - ctx.started).count();
    return r;
  };

  // Weakly connected components through produced tensors (V5's notion), each in topological
  // order, ordered by their first op.
  const std::vector<std::vector<OpId>> components = Components(problem, problem.topological_order);
  result.components = static_cast<int>(components.size());
  ctx.components = result.components;
  size_t largest = 0;
  for (const auto& c : components) largest = std::max(largest, c.size());
  result.family = ExactFamilyText(options.max_subgraph_ops < static_cast<int>(largest) ? options.max_subgraph_ops : 0);

  // The incumbent, when valid, bounds everything.
  Latency upper = kInf;
  if (options.incumbent) {
    const Evaluation evaluation = EvaluateOracle(problem, *options.incumbent);
    if (evaluation.ok()) {
      upper = evaluation.total;
      result.best = *options.incumbent;
      std::vector<double> latencies;
      for (const SubgraphReport& r : evaluation.subgraphs) latencies.push_back(r.latency);
      result.best->reported_latencies = latencies;
      result.total = evaluation.total;
      ctx.incumbent = upper;
    }
  }

  // Per component: a lower bound until solved, then its optimum. The threshold of one
  // component is what the incumbent leaves after the others' bounds: a schedule that beats the
  // incumbent has this component below it.
  std::vector<Latency> known(components.size());
  for (size_t c = 0; c < components.size(); ++c) {
    std::vector<char> marks(problem.ops.size(), 0);
    for (OpId op : components[c]) marks[op] = 1;
    known[c] = options.remaining_bound ? options.remaining_bound(problem, marks) : ComputeOpsBound(problem, marks);
  }
  // Small components first: their optima tighten the thresholds of the big ones.
  std::vector<size_t> order(components.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return components[a].size() < components[b].size(); });
  std::vector<std::vector<Subgraph>> solved(components.size());
  for (size_t idx = 0; idx < order.size(); ++idx) {
    const size_t c = order[idx];
    ctx.component = static_cast<int>(idx);
    Latency others = 0;
    for (size_t d = 0; d < components.size(); ++d) {
      if (d != c) others += known[d];
    }
    const Latency threshold = upper == kInf ? kInf : upper * (1 - kRelativeSlack) - others;
    ComponentSolver solver(ctx, components[c]);
    Latency opt = 0;
    const ComponentSolver::Outcome outcome = solver.Solve(threshold, opt, solved[c]);
    if (outcome == ComponentSolver::Outcome::kAborted) {
      result.status = result.best ? ExactStatus::kFeasible : ExactStatus::kNone;
      result.stop_reason = ctx.stop_reason;
      return finish(result);
    }
    if (outcome == ComponentSolver::Outcome::kNothingBelow) {
      // Nothing in the family beats the incumbent (or, without one, the family is empty).
      result.status = result.best ? ExactStatus::kOptimal : ExactStatus::kNone;
      if (ctx.incomplete && result.best) {
        result.status = ExactStatus::kFeasible;
        result.stop_reason = "traversal cap";
      }
      return finish(result);
    }
    known[c] = opt;
  }

  Schedule schedule;
  for (const auto& subgraphs : solved) {
    schedule.subgraphs.insert(schedule.subgraphs.end(), subgraphs.begin(), subgraphs.end());
  }
  const Evaluation evaluation = EvaluateOracle(problem, schedule);
  if (!evaluation.ok()) {
    // The pricing agrees with the oracle by contract; a disagreement is a bug, never written.
    throw std::logic_error("exact solver: the optimal schedule fails the oracle: " + evaluation.violation.Message());
  }
  if (!result.best || evaluation.total < result.total) {
    std::vector<double> latencies;
    for (const SubgraphReport& r : evaluation.subgraphs) latencies.push_back(r.latency);
    schedule.reported_latencies = latencies;
    result.best = std::move(schedule);
    result.total = evaluation.total;
    result.found_by_solver = true;
  }
  result.status = ExactStatus::kOptimal;
  if (ctx.incomplete) {
    result.status = ExactStatus::kFeasible;
    result.stop_reason = "traversal cap";
  }
  return finish(result);
}

}  // namespace annealer
