#include "eval/bound/islands/islands.h"

namespace annealer::bound_internal {

// P12. Islands: the classes of ops joined by an edge that is feasible in some mode of its
// consumer. Every internal edge of a valid subgraph is feasible in its consumer's mode (the
// premise of P9), and a subgraph is connected through internal edges (V5), so every subgraph
// lies within one island. Per island, the least compute of its ops (P7) and the traffic that
// subgraphs of that island must move: a graph input one of its ops reads (P3, V8), a graph
// output one of its ops produces (V9), and a tensor too large to retain (P4) that crosses
// islands, written in its producer's island (P8) and loaded in each consumer's (P3). Each
// amount is a load or write made in a subgraph of that island, so summing per island
// max(compute, traffic / B) never exceeds the sum of the subgraphs' latencies (L1, L2).
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
  built.input_claims.assign(problem.tensors.size(), {});
  built.weight_claims.assign(problem.tensors.size(), {});
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
      if (p == kNoOp) (weights[t] ? built.weight_claims : built.input_claims)[t].emplace_back(island, load);
    }
    if (crosses && home >= 0) built.island_traffic[home] += size;  // written for them (P8)
  }
}

}  // namespace annealer::bound_internal
