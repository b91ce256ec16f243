#include "eval/bound/islands/squeeze.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <queue>
#include <vector>

namespace annealer::bound_internal {

bool g_squeeze = true;

namespace {

constexpr int64_t kInfinite = std::numeric_limits<int64_t>::max() / 4;
// Ancestors of X walked for the cut; past it the walk stops and the tensors it leaves cost
// nothing (a smaller cut: the claim only falls). Small enough that Dinic's recursive push stays
// shallow on any thread's stack and the part costs little per multiply.
constexpr size_t kCutOps = 512;

// Dinic's max-flow on integer capacities (elements).
class MaxFlow {
 public:
  explicit MaxFlow(int nodes) : head_(nodes, -1), level_(nodes), next_edge_(nodes) {}
  void Add(int from, int to, int64_t capacity) {
    edges_.push_back({to, head_[from], capacity});
    head_[from] = static_cast<int>(edges_.size()) - 1;
    edges_.push_back({from, head_[to], 0});
    head_[to] = static_cast<int>(edges_.size()) - 1;
  }
  int64_t Run(int source, int sink) {
    int64_t flow = 0;
    while (Levels(source, sink)) {
      next_edge_ = head_;
      while (const int64_t pushed = Push(source, sink, kInfinite)) flow += pushed;
    }
    return flow;
  }

 private:
  struct Edge {
    int to, next;
    int64_t capacity;
  };
  bool Levels(int source, int sink) {
    std::fill(level_.begin(), level_.end(), -1);
    level_[source] = 0;
    std::queue<int> queue;
    queue.push(source);
    while (!queue.empty()) {
      const int v = queue.front();
      queue.pop();
      for (int e = head_[v]; e >= 0; e = edges_[e].next) {
        if (edges_[e].capacity > 0 && level_[edges_[e].to] < 0) {
          level_[edges_[e].to] = level_[v] + 1;
          queue.push(edges_[e].to);
        }
      }
    }
    return level_[sink] >= 0;
  }
  int64_t Push(int v, int sink, int64_t limit) {
    if (v == sink) return limit;
    for (int& e = next_edge_[v]; e >= 0; e = edges_[e].next) {
      Edge& edge = edges_[e];
      if (edge.capacity <= 0 || level_[edge.to] != level_[v] + 1) continue;
      const int64_t pushed = Push(edge.to, sink, std::min(limit, edge.capacity));
      if (pushed > 0) {
        edge.capacity -= pushed;
        edges_[e ^ 1].capacity += pushed;
        return pushed;
      }
    }
    return 0;
  }
  std::vector<Edge> edges_;
  std::vector<int> head_, level_, next_edge_;
};

// What loading t in S_1 costs at least, in elements on the activation path: a graph input is
// never retained (V8), a produced tensor too large to retain never is (P4); a weight on H6's path
// costs that path, not this one.
Elements LoadCost(const Problem& p, TensorId t) {
  if (p.producer[t] == kNoOp) return p.OnWeightPath(t) ? 0 : p.tensors[t].size();
  return p.tensors[t].size() + 1 > p.fast_memory_capacity ? p.tensors[t].size() : 0;
}

// The least elements S_1 loads to make X itself (p_X run again there): a vertex cut between the
// graph inputs and Layout outputs and X over X's ancestry, each tensor at LoadCost, X uncut.
Elements CutBelow(const Problem& p, TensorId x) {
  std::vector<int> index(p.tensors.size(), -1);
  std::vector<TensorId> tensors;
  const auto node = [&](TensorId t) {
    if (index[t] < 0) {
      index[t] = static_cast<int>(tensors.size());
      tensors.push_back(t);
    }
    return index[t];
  };
  node(x);
  std::vector<OpId> ops;  // walked producers (never Layout ops: their outputs are leaves)
  std::vector<char> seen(p.ops.size(), 0);
  std::vector<OpId> stack{p.producer[x]};
  seen[p.producer[x]] = 1;
  while (!stack.empty() && ops.size() < kCutOps) {
    const OpId q = stack.back();
    stack.pop_back();
    ops.push_back(q);
    for (TensorId i : p.ops[q].inputs) {
      node(i);
      const OpId r = p.producer[i];
      if (r != kNoOp && !p.IsLayout(r) && !seen[r]) {
        seen[r] = 1;
        stack.push_back(r);
      }
    }
  }
  std::vector<char> walked(p.ops.size(), 0);
  for (OpId q : ops) walked[q] = 1;
  const int n = static_cast<int>(tensors.size());
  const int source = 2 * n, sink = 1;  // X's out-node is 2 * 0 + 1
  MaxFlow flow(2 * n + 1);
  for (int v = 0; v < n; ++v) {
    const TensorId t = tensors[v];
    const OpId q = p.producer[t];
    if (v == 0) {
      flow.Add(0, 1, kInfinite);
    } else if (q != kNoOp && !walked[q] && !p.IsLayout(q)) {
      // Left by the walk: free (its own ancestry might cost nothing).
      flow.Add(2 * v, 2 * v + 1, 0);
    } else {
      flow.Add(2 * v, 2 * v + 1, LoadCost(p, t));
    }
    if (q == kNoOp || p.IsLayout(q)) flow.Add(source, 2 * v, kInfinite);
  }
  for (OpId q : ops) {
    const int out = index[p.ops[q].output];
    for (TensorId i : p.ops[q].inputs) flow.Add(2 * index[i] + 1, 2 * out, kInfinite);
  }
  return flow.Run(source, sink);
}

}  // namespace

double Squeeze::Value(const std::vector<OpId>& ops) const {
  double total = 0;
  for (OpId op : ops) total += native[op] + claim[op];
  return total;
}

Squeeze SqueezeFloor(const Problem& p) {
  const auto num_ops = static_cast<OpId>(p.ops.size());
  Squeeze result;
  result.claim.assign(num_ops, 0);
  result.native.assign(num_ops, 0);
  for (OpId o = 0; o < num_ops; ++o) result.native[o] = p.ops[o].base_cost * static_cast<double>(p.NativeTiles(o));
  const auto finish = [&]() {
    std::vector<OpId> all(num_ops);
    for (OpId o = 0; o < num_ops; ++o) all[o] = o;
    result.value = result.Value(all);
    return result;
  };
  if (!g_squeeze) return finish();
  const Elements capacity = p.fast_memory_capacity;
  const auto too_large = [&](TensorId t) { return p.tensors[t].size() + 1 > capacity; };

  // Candidates: the shape of the fact (one non-Layout input X, one or more Layout inputs, Y read
  // by nothing or by MatMuls with K > n only).
  struct Candidate {
    OpId m;
    TensorId x;
    std::vector<TensorId> gathered;
  };
  std::vector<Candidate> candidates;
  std::vector<char> is_candidate(num_ops, 0);
  for (OpId m = 0; m < num_ops; ++m) {
    const Op& op = p.ops[m];
    if (op.kind != OpKind::Pointwise) continue;
    std::vector<TensorId> inputs = op.inputs;
    std::sort(inputs.begin(), inputs.end());
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
    Candidate c{m, -1, {}};
    int others = 0;
    for (TensorId t : inputs) {
      const OpId q = p.producer[t];
      if (q != kNoOp && p.IsLayout(q)) {
        c.gathered.push_back(t);
      } else {
        c.x = t;
        ++others;
      }
    }
    if (others != 1 || c.gathered.empty()) continue;
    bool sink = true;
    for (OpId r : p.consumers[op.output]) {
      sink = sink && p.ops[r].kind == OpKind::MatMul && p.ReductionLength(r) > p.native;
    }
    if (!sink) continue;
    candidates.push_back(c);
    is_candidate[m] = 1;
  }

  std::vector<int> in_p(num_ops, -1), in_d(num_ops, -1), in_c(num_ops, -1);
  std::vector<OpId> stack;
  for (const Candidate& c : candidates) {
    const OpId m = c.m;
    // P: every op with a path to an input of a Layout op that makes an E_i.
    for (TensorId e : c.gathered) {
      for (TensorId in : p.ops[p.producer[e]].inputs) {
        const OpId q = p.producer[in];
        if (q != kNoOp && in_p[q] != m) {
          in_p[q] = m;
          stack.push_back(q);
        }
      }
    }
    while (!stack.empty()) {
      const OpId q = stack.back();
      stack.pop_back();
      for (TensorId in : p.ops[q].inputs) {
        const OpId r = p.producer[in];
        if (r != kNoOp && in_p[r] != m) {
          in_p[r] = m;
          stack.push_back(r);
        }
      }
    }
    const OpId px = p.producer[c.x];
    if (px != kNoOp && !p.IsLayout(px) && in_p[px] != m) continue;  // X might be made first in S_1
    // D: every op depending on Y.
    for (OpId r : p.consumers[p.ops[m].output]) {
      if (in_d[r] != m) {
        in_d[r] = m;
        stack.push_back(r);
      }
    }
    while (!stack.empty()) {
      const OpId q = stack.back();
      stack.pop_back();
      for (OpId r : p.consumers[p.ops[q].output]) {
        if (in_d[r] != m) {
          in_d[r] = m;
          stack.push_back(r);
        }
      }
    }
    // U: joined to m by op edges outside D, not in P.
    double first_runs = result.native[m];
    bool shared = false;
    in_c[m] = m;
    stack.push_back(m);
    const auto visit = [&](OpId r) {
      if (r == kNoOp || in_d[r] == m || in_c[r] == m) return;
      in_c[r] = m;
      stack.push_back(r);
      if (in_p[r] == m) return;
      first_runs += result.native[r];
      shared = shared || is_candidate[r];
    };
    while (!stack.empty()) {
      const OpId q = stack.back();
      stack.pop_back();
      for (TensorId in : p.ops[q].inputs) visit(p.producer[in]);
      for (OpId r : p.consumers[p.ops[q].output]) visit(r);
    }
    if (shared) continue;

    Elements fixed = 0;  // T_E + T_Y
    for (TensorId e : c.gathered) fixed += too_large(e) ? p.tensors[e].size() : 0;
    const TensorId y = p.ops[m].output;
    if (too_large(y) || p.consumers[y].empty()) fixed += p.tensors[y].size();
    const double bandwidth = p.slow_memory_bandwidth;
    double claim = static_cast<double>(fixed + LoadCost(p, c.x)) / bandwidth - first_runs;
    if (px != kNoOp && !p.IsLayout(px)) {
      const double made =
          std::max(result.native[px], static_cast<double>(fixed + CutBelow(p, c.x)) / bandwidth - first_runs);
      claim = std::min(claim, made);
    }
    if (claim <= 0) continue;
    result.claim[m] = claim;
    ++result.count;
  }
  return finish();
}

}  // namespace annealer::bound_internal
