#include "eval/bound/islands/serving_chains.h"

#include <algorithm>

namespace annealer::bound_internal {

namespace {

bool TooLarge(const Problem& problem, TensorId t) { return problem.tensors[t].size() + 1 > problem.fast_memory_capacity; }

}  // namespace

std::vector<char> CrossingTensors(const Problem& problem, const Built& built) {
  const auto num_tensors = static_cast<TensorId>(problem.tensors.size());
  std::vector<char> crosses(num_tensors, 0);
  for (TensorId t = 0; t < num_tensors; ++t) {
    const OpId p = problem.producer[t];
    if (p == kNoOp || TooLarge(problem, t)) continue;
    for (OpId r : problem.consumers[t]) crosses[t] |= built.island_of[r] != built.island_of[p];
  }
  return crosses;
}

std::vector<double> WidestInner(const Problem& problem, const Built& built, const std::vector<char>& weights,
                                const std::vector<char>& cut) {
  // widest[z]: the same over the paths ending at z, z included.
  std::vector<double> widest(problem.tensors.size(), 0);
  std::vector<double> inner(problem.ops.size(), 0);
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
    const bool zero = TooLarge(problem, out) || (!cut.empty() && cut[q]);
    widest[out] = zero ? 0.0 : std::min(static_cast<double>(problem.tensors[out].size()), best);
  }
  return inner;
}

double InputClaimsIn(const Built& built, std::vector<TensorId>& inputs, int home) {
  std::sort(inputs.begin(), inputs.end());
  inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
  double elements = 0;
  for (TensorId z : inputs) {
    for (const auto& [island, claimed] : built.input_claims[z]) {
      if (island == home) elements += static_cast<double>(claimed);
    }
  }
  return elements;
}

ChainOps::ChainOps(const Problem& problem, const Problem& original, const Analysis& analysis, const Built& built)
    : problem_(problem),
      original_(original),
      analysis_(analysis),
      built_(built),
      ordered_(built.islands),
      later_(problem.ops.size(), -1),
      reaches_(problem.ops.size(), -1),
      joined_(problem.ops.size(), -1),
      in_union_(problem.ops.size(), -1),
      in_cone_(problem.ops.size(), -1),
      reaches_matmul_(problem.ops.size(), 0) {
  for (OpId q : problem.topological_order) ordered_[built.island_of[q]].push_back(q);
}

const std::vector<OpId>& ChainOps::Cone(OpId p, TensorId t) {
  const int home = built_.island_of[p];
  cone_.assign(1, p);
  in_cone_[p] = t;
  for (size_t i = 0; i < cone_.size(); ++i) {
    for (TensorId z : problem_.ops[cone_[i]].inputs) {
      const OpId from = problem_.producer[z];
      if (from == kNoOp || in_cone_[from] == t || built_.island_of[from] != home) continue;
      in_cone_[from] = t;
      cone_.push_back(from);
    }
  }
  return cone_;
}

void ChainOps::Join(int home, const std::vector<OpId>& cone, const std::vector<OpId>& later_roots, TensorId t,
                    std::vector<OpId>& members) {
  const int64_t pass = ++pass_;
  // What comes after the reader's first subgraph, on the problem itself (its Layout ops read
  // their inputs from slow memory, L1, so they come after their producers too).
  stack_.clear();
  for (OpId root : later_roots) {
    if (later_[root] != pass) {
      later_[root] = pass;
      stack_.push_back(root);
    }
  }
  while (!stack_.empty()) {
    const OpId x = stack_.back();
    stack_.pop_back();
    ++work_;
    for (OpId c : original_.consumers[original_.ops[x].output]) {
      if (later_[c] != pass) {
        later_[c] = pass;
        stack_.push_back(c);
      }
    }
  }
  const auto free = [&](OpId x) { return built_.island_of[x] == home && later_[x] != pass; };
  // Per op of the home island outside those: whether it reaches a MatMul that is too.
  for (auto it = ordered_[home].rbegin(); it != ordered_[home].rend(); ++it) {
    const OpId x = *it;
    bool any_matmul = false;
    for (OpId y : problem_.consumers[problem_.ops[x].output]) {
      if (free(y) && (problem_.ops[y].kind == OpKind::MatMul || (reaches_[y] == pass && reaches_matmul_[y]))) {
        any_matmul = true;
      }
    }
    reaches_[x] = pass;
    reaches_matmul_[x] = any_matmul;
    ++work_;
  }
  // An internal edge producer -> consumer: feasible in a mode of the consumer, which runs
  // upstream of a k-loop only if it reaches a MatMul outside the ops that come later.
  const auto edge = [&](OpId producer, OpId consumer) {
    const auto& in = problem_.ops[consumer].inputs;
    for (int slot = 0; slot < static_cast<int>(in.size()); ++slot) {
      if (in[slot] != problem_.ops[producer].output) continue;
      for (int m = 0; m < kModes; ++m) {
        if (!analysis_.HasMode(consumer, m) || !analysis_.EdgeFeasible(producer, consumer, slot, m)) continue;
        if (m == kT || reaches_matmul_[consumer]) return true;
      }
    }
    return false;
  };
  stack_.clear();
  for (OpId x : cone) {
    if (later_[x] == pass) continue;
    joined_[x] = pass;
    stack_.push_back(x);
  }
  while (!stack_.empty()) {
    const OpId x = stack_.back();
    stack_.pop_back();
    ++work_;
    if (in_union_[x] != t) {
      in_union_[x] = t;
      members.push_back(x);
    }
    for (OpId y : problem_.consumers[problem_.ops[x].output]) {
      if (joined_[y] == pass || !free(y) || !edge(x, y)) continue;
      joined_[y] = pass;
      stack_.push_back(y);
    }
    for (TensorId z : problem_.ops[x].inputs) {
      const OpId q = problem_.producer[z];
      if (q == kNoOp || joined_[q] == pass || !free(q) || !edge(q, x)) continue;
      joined_[q] = pass;
      stack_.push_back(q);
    }
  }
}

}  // namespace annealer::bound_internal
