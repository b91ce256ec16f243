#include "search/starts/baseline.h"

#include <algorithm>
#include <array>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "eval/cost/cache_keys.h"
#include "eval/cost/cost_cache.h"
#include "eval/cost/subgraph_cost.h"
#include "eval/model/traversal.h"

namespace annealer {

namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Tile sides worth trying: the native size and its halvings down to a sixteenth. Smaller
// tiles only add steps (compute is charged per tile, spec C1/C2) and are never needed to fit a
// single op of the bundled problems; they stay reachable by the search.
std::vector<Elements> Sides(Elements native, Elements limit) {
  std::vector<Elements> sides;
  for (Elements s = native; s >= 1 && sides.size() < 5; s /= 2) {
    if (s <= limit) sides.push_back(s);
  }
  if (sides.empty()) sides.push_back(std::min(native, limit));
  return sides;
}

struct SingleOp {
  Subgraph subgraph;
  Latency latency = -1;  // -1: fits at no granularity tried
  bool fits() const { return latency >= 0; }
};

// What BestSingleOp settled on: the candidate's granularity and traversal pattern.
struct SingleOpChoice {
  Granularity granularity;
  TraversalPattern pattern = TraversalPattern::kRaster;
  Latency latency = -1;
};

// BaselineSharing::kByShape: contexts of equal shape keys price to the same bits at every
// granularity and traversal, so BestSingleOp's search settles them on the same candidate, and the
// first op of a shape answers for the others. Keyed by the op's context at one granularity for
// all ops (equal there, equal at every candidate: the granularity is not part of the relabelling).
class SingleOpMemo {
 public:
  explicit SingleOpMemo(BaselineSharing sharing) : on_(sharing == BaselineSharing::kByShape) {}
  // The key of `op` alone after `retained_in`, retaining `retain`; false when it has no shape key.
  bool Key(const Problem& problem, OpId op, const std::vector<TensorId>& retained_in,
           const std::vector<TensorId>& retain) {
    if (!on_) return false;
    Subgraph canonical;
    canonical.ops = {op};
    canonical.granularity = {1, 1, 1};
    canonical.retain = retain;
    if (!ShapeKey(problem, canonical, retained_in, key_)) return false;
    hash_ = HashWords(key_);
    return true;
  }
  const SingleOpChoice* Find() const {
    const auto it = choices_.find(hash_);
    if (it == choices_.end()) return nullptr;
    for (const auto& [key, choice] : it->second) {
      if (key == key_) return &choice;
    }
    return nullptr;
  }
  void Store(const SingleOpChoice& choice) { choices_[hash_].emplace_back(key_, choice); }

 private:
  bool on_;
  std::vector<uint64_t> key_;
  uint64_t hash_ = 0;
  std::unordered_map<uint64_t, std::vector<std::pair<std::vector<uint64_t>, SingleOpChoice>>> choices_;
};

// The op alone in a subgraph after a subgraph that retained `retained_in`, retaining `retain`:
// the candidate tiling and traversal of least latency (the first of equals in the order tried).
SingleOp BestSingleOp(const Problem& problem, OpId op, const std::vector<TensorId>& retained_in,
                      const std::vector<TensorId>& retain, CostCache* cache, SingleOpMemo& memo) {
  const Elements n = problem.native;
  const Op& spec = problem.ops[op];
  const Tensor& out = problem.tensors[spec.output];
  const auto make = [&](const Granularity& g, TraversalPattern pattern) {
    Subgraph candidate;
    candidate.ops = {op};
    candidate.granularity = g;
    candidate.traversal = MakeTraversal(pattern, CeilDiv(out.height, g.h), CeilDiv(out.width, g.w));
    candidate.retain = retain;
    return candidate;
  };
  const bool keyed = memo.Key(problem, op, retained_in, retain);
  if (const SingleOpChoice* known = keyed ? memo.Find() : nullptr) {
    SingleOp best;
    best.latency = known->latency;
    if (best.fits()) best.subgraph = make(known->granularity, known->pattern);
    return best;
  }
  const bool matmul = spec.kind == OpKind::MatMul;
  std::vector<Elements> ks = matmul ? Sides(n, problem.ReductionLength(op)) : std::vector<Elements>{1};
  std::vector<Elements> hs = Sides(n, n), ws = Sides(n, n);
  if (problem.chip.aligned()) {  // H3: the chip's base sides only
    auto align = [&](std::vector<Elements>& values, SideAxis axis, Elements dimension, Elements top) {
      for (Elements& v : values) v = AlignSide(problem.chip, axis, v, dimension, top);
      std::sort(values.begin(), values.end(), std::greater<>());
      values.erase(std::unique(values.begin(), values.end()), values.end());
    };
    align(hs, SideAxis::kH, out.height, n);
    align(ws, SideAxis::kW, out.width, n);
    if (matmul) align(ks, SideAxis::kK, problem.ReductionLength(op), std::min(n, problem.ReductionLength(op)));
  }
  SingleOp best;
  SingleOpChoice chosen;
  for (Elements h : hs) {
    for (Elements w : ws) {
      // With the tile fixed, a smaller k splits the same loads and compute into more steps
      // and hides less of the first load and the last write, so the largest k that fits wins.
      bool fitted = false;
      for (Elements k : ks) {
        if (fitted) break;
        // Every tile charges at least base_cost (spec C1, C2): prune what cannot win.
        const int64_t tiles = CeilDiv(out.height, h) * CeilDiv(out.width, w);
        if (best.fits() && static_cast<double>(tiles) * spec.base_cost >= best.latency) continue;
        for (TraversalPattern pattern : kAllTraversalPatterns) {
          Subgraph candidate = make({w, h, k}, pattern);
          SubgraphReport report;
          bool ok = false;
          if (cache != nullptr) {
            ok = cache->LookupValid(problem, candidate, retained_in, report);
          } else {
            const SubgraphResult result = CostSubgraph(problem, candidate, retained_in);
            ok = result.ok();
            report = result.report;
          }
          fitted = fitted || ok;
          if (ok && (!best.fits() || report.latency < best.latency)) {
            best.latency = report.latency;
            best.subgraph = std::move(candidate);
            chosen = {best.subgraph.granularity, pattern, best.latency};
          }
        }
      }
    }
  }
  if (keyed) memo.Store(chosen);
  return best;
}

[[noreturn]] void ThrowNoFit(OpId op) {
  throw std::runtime_error("op " + std::to_string(op) + " fits in fast memory at no granularity on its own");
}

// Whether the output of order[i] may be retained for order[i+1]: every consumer is that op
// (retention lasts one subgraph, R1, and a retained tensor is never written, R3, so no later
// subgraph could load it) and it is a MatMul or Pointwise op.
bool Retainable(const Problem& problem, const std::vector<OpId>& order, size_t i) {
  if (i + 1 >= order.size()) return false;
  const TensorId t = problem.ops[order[i]].output;
  const OpId next = order[i + 1];
  const std::vector<OpId>& users = problem.consumers[t];
  if (users.empty()) return false;  // a graph output must be written (V9)
  for (OpId user : users) {
    if (user != next) return false;
  }
  const OpKind kind = problem.ops[next].kind;
  return kind == OpKind::MatMul || kind == OpKind::Pointwise;
}

// The resident schedule of `order` (DP of BuildResidentBaseline) and its total.
std::pair<Schedule, Latency> ResidentOver(const Problem& problem, const std::vector<OpId>& order,
                                          CostCache* cache, BaselineSharing sharing) {
  constexpr Latency kInf = std::numeric_limits<Latency>::infinity();
  const size_t count = order.size();
  // choice[i][out][in]: op i's subgraph when it retains its output (out) after retained-in (in).
  std::vector<std::array<std::array<SingleOp, 2>, 2>> choice(count);
  // best[i][out]: least total of positions 0..i with op i retaining (out) or not; from[i][out]
  // the retention into op i on that path.
  std::vector<std::array<Latency, 2>> best(count, {kInf, kInf});
  std::vector<std::array<int, 2>> from(count, {0, 0});
  SingleOpMemo memo(sharing);
  for (size_t i = 0; i < count; ++i) {
    const OpId op = order[i];
    const bool can_in = i > 0 && Retainable(problem, order, i - 1);
    const bool can_out = Retainable(problem, order, i);
    for (int out = 0; out <= (can_out ? 1 : 0); ++out) {
      for (int in = 0; in <= (can_in ? 1 : 0); ++in) {
        const Latency before = i == 0 ? 0 : best[i - 1][in];
        if (before == kInf) continue;
        std::vector<TensorId> retained_in;
        if (in) retained_in.push_back(problem.ops[order[i - 1]].output);
        std::vector<TensorId> retain;
        if (out) retain.push_back(problem.ops[op].output);
        SingleOp& single = choice[i][out][in];
        // Both retained tensors count whole in every step beside at least one element of the
        // sink tile or another slice (R5, W): what cannot fit is not priced (pricing a huge
        // grid of small tiles only to fail is what would take the time).
        Elements held = 0;
        for (TensorId t : retained_in) held += problem.tensors[t].size();
        for (TensorId t : retain) held += problem.tensors[t].size();
        if (held + 1 > problem.fast_memory_capacity) continue;
        single = BestSingleOp(problem, op, retained_in, retain, cache, memo);
        if (!single.fits()) {
          if (in == 0 && out == 0) ThrowNoFit(op);
          continue;
        }
        // Retention only where it strictly lowers the total: ties keep the spilling choice.
        const Latency total = before + single.latency;
        if (total < best[i][out]) {
          best[i][out] = total;
          from[i][out] = in;
        }
      }
    }
  }
  Schedule schedule;
  schedule.subgraphs.resize(count);
  if (count == 0) return {schedule, 0};
  int out = best[count - 1][1] < best[count - 1][0] ? 1 : 0;
  const Latency total = best[count - 1][out];
  for (size_t i = count; i-- > 0;) {
    const int in = from[i][out];
    schedule.subgraphs[i] = choice[i][out][in].subgraph;
    out = in;
  }
  return {std::move(schedule), total};
}

}  // namespace

Schedule BuildBaseline(const Problem& problem, CostCache* cache, BaselineSharing sharing) {
  Schedule schedule;
  static const std::vector<TensorId> kNothing;
  SingleOpMemo memo(sharing);
  for (OpId op : problem.topological_order) {
    SingleOp best = BestSingleOp(problem, op, kNothing, kNothing, cache, memo);
    if (!best.fits()) ThrowNoFit(op);
    schedule.subgraphs.push_back(std::move(best.subgraph));
  }
  return schedule;
}

std::vector<OpId> ResidentOrder(const Problem& problem) {
  const size_t count = problem.ops.size();
  std::vector<char> visited(count, 0);
  std::vector<OpId> order;
  order.reserve(count);
  // Producers of op's inputs in visiting order: the producer of the largest input op alone
  // consumes goes last, so it is emitted immediately before op.
  const auto producers_in_order = [&](OpId op) {
    std::vector<OpId> firsts;
    OpId last = kNoOp;
    Elements last_size = -1;
    for (TensorId t : problem.ops[op].inputs) {
      const OpId p = problem.producer[t];
      if (p == kNoOp) continue;
      const std::vector<OpId>& users = problem.consumers[t];
      const bool sole = std::all_of(users.begin(), users.end(), [&](OpId u) { return u == op; });
      if (sole && problem.tensors[t].size() > last_size) {
        if (last != kNoOp) firsts.push_back(last);
        last = p;
        last_size = problem.tensors[t].size();
      } else {
        firsts.push_back(p);
      }
    }
    if (last != kNoOp) firsts.push_back(last);
    return firsts;
  };
  // Iterative post-order (a deep graph would overflow the call stack).
  struct Frame {
    OpId op;
    std::vector<OpId> next;
    size_t index = 0;
  };
  std::vector<Frame> stack;
  for (OpId root : problem.topological_order) {
    if (!problem.consumers[problem.ops[root].output].empty() || visited[root]) continue;
    visited[root] = 1;
    stack.push_back({root, producers_in_order(root)});
    while (!stack.empty()) {
      Frame& frame = stack.back();
      if (frame.index < frame.next.size()) {
        const OpId p = frame.next[frame.index++];
        if (!visited[p]) {
          visited[p] = 1;
          stack.push_back({p, producers_in_order(p)});
        }
        continue;
      }
      order.push_back(frame.op);
      stack.pop_back();
    }
  }
  // Every op reaches a graph output (an op's output is consumed or is one), so all are placed.
  if (order.size() != count) return problem.topological_order;
  return order;
}

Schedule BuildResidentBaseline(const Problem& problem, CostCache* cache, BaselineSharing sharing) {
  auto [chained, chained_total] = ResidentOver(problem, ResidentOrder(problem), cache, sharing);
  // Also over the spilling baseline's order, where the DP can only improve on it: the
  // result is never worse than BuildBaseline.
  auto [plain, plain_total] = ResidentOver(problem, problem.topological_order, cache, sharing);
  return plain_total < chained_total ? std::move(plain) : std::move(chained);
}

}  // namespace annealer
