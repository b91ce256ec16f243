#include "eval/bound/islands/internal_heads.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "eval/bound/islands/serving_chains.h"

namespace annealer::bound_internal {

bool g_internal_heads = true;

InternalHeads FindInternalHeads(const Problem& problem, const Problem& original, const Analysis& analysis,
                                const Built& built, const std::vector<char>& weights) {
  const auto num_tensors = static_cast<TensorId>(problem.tensors.size());
  const auto num_ops = static_cast<OpId>(problem.ops.size());
  InternalHeads result;
  result.tensors.assign(num_tensors, {});
  result.island_priced.assign(built.islands, 0);
  if (!g_internal_heads || built.islands < 1) return result;
  const auto too_large = [&](TensorId t) { return problem.tensors[t].size() + 1 > problem.fast_memory_capacity; };
  const auto compute_of = [&](OpId x) { return problem.ops[x].base_cost * static_cast<double>(problem.NativeTiles(x)); };
  const auto is_layout = [&](OpId x) { return original.ops[x].kind == OpKind::Layout; };
  int64_t work = 0;
  constexpr int64_t kWorkBudget = int64_t{1} << 26;

  const std::vector<char> crosses = CrossingTensors(problem, built);

  // Heads and their N, on the problem itself.
  std::vector<int64_t> dep(num_ops, -1), plain(num_ops, -1), in_n(num_ops, -1);
  std::vector<std::pair<OpId, bool>> walk;
  std::vector<OpId> queue;
  std::vector<std::vector<OpId>> n_of(num_ops);  // per head, its N
  std::vector<TensorId> head_tensor(num_ops, -1);
  for (OpId h = 0; h < num_ops && work < kWorkBudget; ++h) {
    const Op& op = problem.ops[h];
    if (op.kind != OpKind::MatMul || problem.ReductionLength(h) <= problem.native) continue;
    // The operand made by a Pointwise op of h's island (V11 keeps it out of every subgraph with h
    // in F); the other a graph input or a Layout op's output.
    TensorId x = -1;
    bool other_ok = true;
    for (int slot = 0; slot < 2; ++slot) {
      const TensorId z = op.inputs[slot];
      const OpId q = problem.producer[z];
      if (q != kNoOp && problem.ops[q].kind == OpKind::Pointwise && built.island_of[q] == built.island_of[h] &&
          !too_large(z) && x < 0) {
        x = z;
      } else if (q != kNoOp && problem.ops[q].kind != OpKind::Layout) {
        other_ok = false;
      }
    }
    if (x < 0 || !other_ok || op.inputs[0] == op.inputs[1]) continue;
    // Dep(h) (P26): the ops at or below a Layout op that h reaches; and whether a MatMul is reached
    // through ops outside it (then h may first run upstream of that MatMul's k-loop).
    for (OpId c : original.consumers[original.ops[h].output]) walk.emplace_back(c, is_layout(c));
    while (!walk.empty()) {
      const auto [y, below] = walk.back();
      walk.pop_back();
      ++work;
      if (below ? dep[y] == h : plain[y] == h) continue;
      (below ? dep[y] : plain[y]) = h;
      for (OpId c : original.consumers[original.ops[y].output]) walk.emplace_back(c, below || is_layout(c));
    }
    bool matmul = false;
    queue.clear();
    for (OpId c : original.consumers[original.ops[h].output]) {
      if (dep[c] != h && in_n[c] != h) {
        in_n[c] = h;  // the walk's stamp; N below uses -2 - h
        queue.push_back(c);
      }
    }
    for (size_t i = 0; i < queue.size(); ++i) {
      const OpId y = queue[i];
      ++work;
      if (original.ops[y].kind == OpKind::MatMul) matmul = true;
      for (OpId c : original.consumers[original.ops[y].output]) {
        if (dep[c] == h || in_n[c] == h) continue;
        in_n[c] = h;
        queue.push_back(c);
      }
    }
    if (matmul) continue;
    // N_h: joined to h by edges that may be internal to S_1(h).
    std::vector<OpId>& n = n_of[h];
    const int64_t stamp = -2 - static_cast<int64_t>(h);
    queue.assign(1, h);
    in_n[h] = stamp;
    bool single_matmul = true;
    for (size_t i = 0; i < queue.size() && work < kWorkBudget; ++i) {
      const OpId y = queue[i];
      ++work;
      if (y != h && original.ops[y].kind == OpKind::MatMul) single_matmul = false;
      for (OpId c : original.consumers[original.ops[y].output]) {
        if (is_layout(c) || dep[c] == h || in_n[c] == stamp) continue;  // L1; Dep(h) comes later
        in_n[c] = stamp;
        queue.push_back(c);
      }
      if (is_layout(y)) continue;  // its inputs come from slow memory (L1)
      for (TensorId z : original.ops[y].inputs) {
        const OpId q = original.producer[z];
        if (q == kNoOp || (y == h && z == x) || in_n[q] == stamp) continue;  // V11 for p -> h
        in_n[q] = stamp;
        queue.push_back(q);
      }
    }
    if (!single_matmul) continue;
    n = queue;
    head_tensor[h] = x;
  }

  // Per tensor: its heads; per island: which ops lie in a head's N (the chains stop at them).
  std::vector<std::vector<OpId>> heads_of(num_tensors);
  std::vector<char> in_any_n(num_ops, 0);
  for (OpId h = 0; h < num_ops; ++h) {
    if (head_tensor[h] < 0) continue;
    heads_of[head_tensor[h]].push_back(h);
    for (OpId y : n_of[h]) in_any_n[y] = 1;
  }
  // P35's widest paths, with the ops of every head's N cut out.
  const std::vector<double> inner = WidestInner(problem, built, weights, in_any_n);
  ChainOps chains(problem, original, analysis, built);
  std::vector<int64_t> ancestor(num_ops, -1);
  std::vector<OpId> stack, roots, members;
  std::vector<char> tensor_ok(num_tensors, 0);
  std::vector<std::vector<int>> readers_of(num_tensors);
  for (TensorId t = 0; t < num_tensors && work + chains.Work() < kWorkBudget; ++t) {
    if (!crosses[t] && heads_of[t].empty()) continue;
    const OpId p = problem.producer[t];
    const int home = built.island_of[p];
    std::vector<int>& readers = readers_of[t];
    for (OpId r : problem.consumers[t]) {
      const int j = built.island_of[r];
      if (j != home && std::find(readers.begin(), readers.end(), j) == readers.end()) readers.push_back(j);
    }
    const std::vector<OpId>& cone = chains.Cone(p, t);
    // The ancestors of p on the problem itself, p included (through Layout ops too: L1).
    stack.assign(1, p);
    ancestor[p] = t;
    while (!stack.empty()) {
      const OpId y = stack.back();
      stack.pop_back();
      ++work;
      for (TensorId z : original.ops[y].inputs) {
        const OpId q = original.producer[z];
        if (q == kNoOp || ancestor[q] == t) continue;
        ancestor[q] = t;
        stack.push_back(q);
      }
    }
    members.clear();  // U: the union over the served readers, reading islands and heads alike
    const int groups = static_cast<int>(readers.size() + heads_of[t].size());
    for (int g = 0; g < groups; ++g) {
      // The ops that come after the reader's first subgraph: those depending on a reader of t in
      // J, or on the head (the head included), on the problem itself.
      roots.clear();
      if (g < static_cast<int>(readers.size())) {
        for (OpId r : problem.consumers[t]) {
          if (built.island_of[r] != readers[g]) continue;
          for (OpId c : original.consumers[original.ops[r].output]) roots.push_back(c);
        }
      } else {
        roots.push_back(heads_of[t][g - readers.size()]);
      }
      chains.Join(home, cone, roots, t, members);
    }
    // U holds no tensor too large to retain. Its ops outside p's ancestry (whose counted amounts
    // a late chain may hold): their compute, weights and P24 claims, and graph inputs they read.
    bool ok = true;
    double late_compute = 0, late_traffic = 0, late_weight = 0;
    std::vector<OpId> late_matmuls;
    std::vector<TensorId> inputs;
    for (OpId y : members) {
      const Op& op = problem.ops[y];
      // A priced head's first instance is its own first subgraph, never a chain's: its compute,
      // weight and P24 claim fall outside the chains (only its graph output may be written there).
      const bool late = ancestor[y] != t && head_tensor[y] < 0;
      if (too_large(op.output)) ok = false;
      if (problem.consumers[op.output].empty()) late_traffic += static_cast<double>(problem.tensors[op.output].size());
      for (TensorId z : op.inputs) {
        if (too_large(z)) ok = false;
        if (late && problem.producer[z] == kNoOp) inputs.push_back(z);
      }
      if (!late) continue;
      late_compute += compute_of(y);
      if (op.kind != OpKind::MatMul) continue;
      late_matmuls.push_back(y);
      for (TensorId z : op.inputs) {
        for (const auto& [island, elements] : built.weight_claims[z]) {
          if (island == home) late_weight += static_cast<double>(elements);
        }
      }
    }
    if (!ok) continue;
    late_traffic += InputClaimsIn(built, inputs, home);
    HeadedTensor& entry = result.tensors[t];
    entry.any = inner[p];
    entry.late_compute = late_compute;
    entry.late_traffic = late_traffic;
    entry.late_weight = late_weight;
    entry.late_matmuls = std::move(late_matmuls);
    for (OpId h : heads_of[t]) {
      HeadedTensor::Head head{h, 0, 0};
      for (OpId y : n_of[h]) {
        head.compute += compute_of(y);
        if (original.ops[y].kind != OpKind::MatMul) continue;
        for (TensorId z : original.ops[y].inputs) {
          if (z >= num_tensors) continue;
          for (const auto& [island, elements] : built.weight_claims[z]) {
            if (island == home) head.weight += static_cast<double>(elements);
          }
        }
      }
      entry.heads.push_back(head);
    }
    tensor_ok[t] = 1;
  }
  if (work + chains.Work() >= kWorkBudget) return result;
  // Per island: every tensor it would price priced, reading islands disjoint, no head in another's N.
  std::vector<char> island_ok(built.islands, 1);
  std::vector<int> taken(built.islands, -1);
  for (TensorId t = 0; t < num_tensors; ++t) {
    if (!crosses[t] && heads_of[t].empty()) continue;
    const int home = built.island_of[problem.producer[t]];
    if (!tensor_ok[t]) island_ok[home] = 0;
    for (int j : readers_of[t]) {
      if (taken[j] == home) island_ok[home] = 0;
      taken[j] = home;
    }
    for (OpId h : heads_of[t]) {
      for (OpId y : n_of[h]) {
        if (y != h && head_tensor[y] >= 0) island_ok[home] = 0;
      }
    }
  }
  for (TensorId t = 0; t < num_tensors; ++t) {
    if (!tensor_ok[t]) continue;
    const int home = built.island_of[problem.producer[t]];
    if (!island_ok[home]) continue;
    result.tensors[t].priced = true;
    result.heads += static_cast<int>(result.tensors[t].heads.size());
  }
  result.island_priced = island_ok;
  return result;
}

}  // namespace annealer::bound_internal
