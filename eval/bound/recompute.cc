#include "eval/bound/recompute.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace annealer::bound_internal {

bool g_recompute_cuts = true;

std::vector<RecomputeCut> RecomputeCuts(const Problem& problem, const Problem& original, const Analysis& analysis,
                                        const Built& built, const std::vector<char>& weights) {
  const auto num_tensors = static_cast<TensorId>(problem.tensors.size());
  const auto num_ops = static_cast<OpId>(problem.ops.size());
  std::vector<RecomputeCut> cuts(num_tensors);
  if (!g_recompute_cuts || built.islands < 2) return cuts;
  const auto too_large = [&](TensorId t) { return problem.tensors[t].size() + 1 > problem.fast_memory_capacity; };
  // widest[y]: over the paths from a graph input to y (y included) whose ops lie in y's
  // producer's island, the largest least tensor; inner[q]: the same over the paths ending at an
  // input of q (the tensor q makes excluded), in q's island.
  std::vector<double> widest(num_tensors, 0);
  std::vector<double> inner(num_ops, 0);
  for (OpId q : problem.topological_order) {
    const int island = built.island_of[q];
    double best = 0;
    for (TensorId z : problem.ops[q].inputs) {
      const OpId from = problem.producer[z];
      double value = 0;
      if (from == kNoOp) {
        value = weights[z] ? 0.0 : static_cast<double>(problem.tensors[z].size());
      } else if (built.island_of[from] == island) {
        value = widest[z];
      }
      best = std::max(best, value);
    }
    inner[q] = best;
    const TensorId out = problem.ops[q].output;
    widest[out] = too_large(out) ? 0.0 : std::min(static_cast<double>(problem.tensors[out].size()), best);
  }
  // The crossing tensors (P16's: produced, small enough to retain, read in another island).
  std::vector<char> crosses(num_tensors, 0);
  for (TensorId t = 0; t < num_tensors; ++t) {
    const OpId p = problem.producer[t];
    if (p == kNoOp || too_large(t)) continue;
    for (OpId r : problem.consumers[t]) crosses[t] |= built.island_of[r] != built.island_of[p];
  }
  // Each island's ops in topological order (for the MatMuls reached, per reading island).
  std::vector<std::vector<OpId>> ordered(built.islands);
  for (OpId q : problem.topological_order) ordered[built.island_of[q]].push_back(q);

  struct Candidate {
    TensorId tensor;
    std::vector<int> readers;
    double potential;
  };
  std::vector<std::vector<Candidate>> by_home(built.islands);
  // Stamps: per op, the (tensor, reading island) pass that last marked it.
  std::vector<int64_t> later(num_ops, -1), reaches(num_ops, -1), joined(num_ops, -1), in_union(num_ops, -1);
  std::vector<int64_t> in_cone(num_ops, -1);
  std::vector<char> reaches_matmul(num_ops, 0);
  int64_t pass = 0;
  int64_t work = 0;
  constexpr int64_t kWorkBudget = int64_t{1} << 26;
  std::vector<OpId> stack, cone, members;
  for (TensorId t = 0; t < num_tensors && work < kWorkBudget; ++t) {
    if (!crosses[t]) continue;
    const OpId p = problem.producer[t];
    const int home = built.island_of[p];
    if (inner[p] <= 0) continue;
    std::vector<int> readers;
    for (OpId r : problem.consumers[t]) {
      const int j = built.island_of[r];
      if (j != home && std::find(readers.begin(), readers.end(), j) == readers.end()) readers.push_back(j);
    }
    // A: the ops of the home island from which p is reached inside it.
    cone.assign(1, p);
    in_cone[p] = t;
    for (size_t i = 0; i < cone.size(); ++i) {
      for (TensorId z : problem.ops[cone[i]].inputs) {
        const OpId from = problem.producer[z];
        if (from == kNoOp || in_cone[from] == t || built.island_of[from] != home) continue;
        in_cone[from] = t;
        cone.push_back(from);
      }
    }
    work += static_cast<int64_t>(cone.size());
    members.clear();  // U, the union over the reading islands
    bool ok = true;
    for (int j : readers) {
      ++pass;
      // The ops that depend on a reader of t in J (P16's readers: the image's, so no Layout op),
      // on the problem itself (its Layout ops read their inputs from slow memory, L1, so they come
      // after their producers too).
      stack.clear();
      for (OpId r : problem.consumers[t]) {
        if (built.island_of[r] != j) continue;
        for (OpId c : original.consumers[original.ops[r].output]) {
          if (later[c] != pass) {
            later[c] = pass;
            stack.push_back(c);
          }
        }
      }
      while (!stack.empty()) {
        const OpId x = stack.back();
        stack.pop_back();
        ++work;
        for (OpId c : original.consumers[original.ops[x].output]) {
          if (later[c] != pass) {
            later[c] = pass;
            stack.push_back(c);
          }
        }
      }
      const auto free = [&](OpId x) { return built.island_of[x] == home && later[x] != pass; };
      // Per op of the home island outside those: whether it reaches a MatMul that is too.
      for (auto it = ordered[home].rbegin(); it != ordered[home].rend(); ++it) {
        const OpId x = *it;
        bool any_matmul = false;
        for (OpId y : problem.consumers[problem.ops[x].output]) {
          if (free(y) && (problem.ops[y].kind == OpKind::MatMul || (reaches[y] == pass && reaches_matmul[y]))) any_matmul = true;
        }
        reaches[x] = pass;
        reaches_matmul[x] = any_matmul;
        ++work;
      }
      // An internal edge producer -> consumer: feasible in a mode of the consumer, which runs
      // upstream of a k-loop only if it reaches a MatMul outside the ops that come later.
      const auto edge = [&](OpId producer, OpId consumer) {
        const auto& in = problem.ops[consumer].inputs;
        for (int slot = 0; slot < static_cast<int>(in.size()); ++slot) {
          if (in[slot] != problem.ops[producer].output) continue;
          for (int m = 0; m < kModes; ++m) {
            if (!analysis.HasMode(consumer, m) || !analysis.EdgeFeasible(producer, consumer, slot, m)) continue;
            if (m == kT || reaches_matmul[consumer]) return true;
          }
        }
        return false;
      };
      stack.clear();
      for (OpId x : cone) {
        if (later[x] == pass) continue;  // never: A precedes t's readers
        joined[x] = pass;
        stack.push_back(x);
      }
      while (!stack.empty()) {
        const OpId x = stack.back();
        stack.pop_back();
        ++work;
        if (in_union[x] != t) {
          in_union[x] = t;
          members.push_back(x);
        }
        for (OpId y : problem.consumers[problem.ops[x].output]) {
          if (joined[y] == pass || !free(y) || !edge(x, y)) continue;
          joined[y] = pass;
          stack.push_back(y);
        }
        for (TensorId z : problem.ops[x].inputs) {
          const OpId q = problem.producer[z];
          if (q == kNoOp || joined[q] == pass || !free(q) || !edge(q, x)) continue;
          joined[q] = pass;
          stack.push_back(q);
        }
      }
    }
    // No MatMul, no producer of another crossing tensor, no tensor too large to retain.
    double compute = 0, traffic = 0;
    std::vector<TensorId> inputs;
    for (OpId x : members) {
      const Op& op = problem.ops[x];
      const TensorId out = op.output;
      if (op.kind == OpKind::MatMul || (out != t && crosses[out]) || too_large(out)) ok = false;
      compute += op.base_cost * static_cast<double>(problem.NativeTiles(x));
      if (problem.consumers[out].empty()) traffic += static_cast<double>(problem.tensors[out].size());
      for (TensorId z : op.inputs) {
        if (too_large(z)) ok = false;
        if (problem.producer[z] == kNoOp) inputs.push_back(z);
      }
    }
    if (!ok) continue;
    std::sort(inputs.begin(), inputs.end());
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
    for (TensorId z : inputs) {
      for (const auto& [island, elements] : built.input_claims[z]) {
        if (island == home) traffic += static_cast<double>(elements);
      }
    }
    cuts[t].any = inner[p];
    cuts[t].compute = compute;
    cuts[t].traffic = traffic;
    const double potential = static_cast<double>(readers.size()) * cuts[t].any;
    by_home[home].push_back({t, std::move(readers), potential});
  }
  if (work >= kWorkBudget) return std::vector<RecomputeCut>(num_tensors);  // too large to price
  // Per home island, the tensors priced: greedily by potential (ties by tensor id), each reading
  // islands disjoint from those already taken.
  std::vector<int> taken(built.islands, -1);
  for (int home = 0; home < built.islands; ++home) {
    auto& list = by_home[home];
    std::stable_sort(list.begin(), list.end(), [](const Candidate& x, const Candidate& y) { return x.potential > y.potential; });
    for (const Candidate& c : list) {
      if (std::any_of(c.readers.begin(), c.readers.end(), [&](int j) { return taken[j] == home; })) continue;
      for (int j : c.readers) taken[j] = home;
      cuts[c.tensor].priced = true;
    }
  }
  return cuts;
}

}  // namespace annealer::bound_internal
