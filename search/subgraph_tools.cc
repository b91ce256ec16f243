#include "search/subgraph_tools.h"

#include <algorithm>
#include <cassert>
#include <numeric>

namespace annealer {

std::vector<int> TopologicalRanks(const Problem& problem) {
  std::vector<int> rank(problem.ops.size(), 0);
  for (size_t i = 0; i < problem.topological_order.size(); ++i) {
    rank[problem.topological_order[i]] = static_cast<int>(i);
  }
  return rank;
}

std::vector<OpId> SortTopologically(const std::vector<int>& rank, std::vector<OpId> ops) {
  const auto before = [&](OpId a, OpId b) { return rank[a] < rank[b]; };
  // The ranks are distinct (a permutation of the ops), so the sorted, de-duplicated list is the
  // same however it is reached. Most lists come as one rising run (a subgraph's ops, a part of
  // one) or two (two subgraphs' ops one after the other, an op appended): those are checked or
  // merged in one pass instead of sorted (on ResNet-50's subgraphs of 50-70 ops the sort was
  // ~1.3k instructions per move). SortTopologicallyReference is the plain sort.
  const size_t n = ops.size();
  size_t mid = 1;
  while (mid < n && before(ops[mid - 1], ops[mid])) ++mid;
  if (mid >= n) return ops;
  size_t end = mid + 1;
  while (end < n && before(ops[end - 1], ops[end])) ++end;
  if (end < n) return SortTopologicallyReference(rank, std::move(ops));
  thread_local std::vector<OpId> merged;
  merged.resize(n);
  // Equal elements (one op in both runs) are adjacent after the merge.
  std::merge(ops.begin(), ops.begin() + static_cast<std::ptrdiff_t>(mid), ops.begin() + static_cast<std::ptrdiff_t>(mid),
             ops.end(), merged.begin(), before);
  merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
  ops.assign(merged.begin(), merged.end());
  return ops;
}

std::vector<OpId> SortTopologicallyReference(const std::vector<int>& rank, std::vector<OpId> ops) {
  std::sort(ops.begin(), ops.end(), [&](OpId a, OpId b) { return rank[a] < rank[b]; });
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  return ops;
}

namespace {

// Union-find over the positions of `ops` (a produces what b reads joins them): parent[i] ends as
// a position of i's component, and the return value is the number of components. Buffers are
// per thread; `parent` is the caller's.
int ComponentRoots(const Problem& problem, const std::vector<OpId>& ops, std::vector<int>& parent) {
  const int n = static_cast<int>(ops.size());
  parent.resize(n);
  std::iota(parent.begin(), parent.end(), 0);
  int components = n;
  // Iterative, with path halving: a long chain of unions must not become a deep recursion.
  auto find = [&](int x) {
    while (parent[x] != x) {
      parent[x] = parent[parent[x]];
      x = parent[x];
    }
    return x;
  };
  auto join = [&](int a, int b) {
    const int ra = find(a), rb = find(b);
    if (ra != rb) --components;
    parent[ra] = rb;
  };
  // Each input's producer, found by position, when no op is listed twice; else every pair (a
  // produces what b reads), whose unions the lookup would not repeat. The components are the
  // same either way (the connected components of one relation), and so is every root below:
  // find(a) after all unions, whichever order they came in, names a's component, and the
  // callers read only which positions share one.
  thread_local std::vector<int> position;  // per op: its index in `ops` + 1 (0: absent)
  if (position.size() < problem.ops.size()) position.resize(problem.ops.size(), 0);
  bool pairwise = false;
  int set = 0;
  for (; set < n && !pairwise; ++set) {
    if (position[ops[set]] != 0) pairwise = true;
    position[ops[set]] = set + 1;
  }
  if (!pairwise) {
    for (int b = 0; b < n; ++b) {
      for (TensorId t : problem.ops[ops[b]].inputs) {
        const OpId producer = problem.producer[t];
        if (producer == kNoOp || position[producer] == 0 || position[producer] - 1 == b) continue;
        join(position[producer] - 1, b);
      }
    }
  }
  for (int a = 0; a < set; ++a) position[ops[a]] = 0;
  if (pairwise) {
    for (int a = 0; a < n; ++a) {
      for (int b = 0; b < n; ++b) {
        if (a == b) continue;
        const TensorId out = problem.ops[ops[a]].output;
        const auto& inputs = problem.ops[ops[b]].inputs;
        if (std::find(inputs.begin(), inputs.end(), out) != inputs.end()) join(a, b);
      }
    }
  }
  for (int a = 0; a < n; ++a) parent[a] = find(a);
  return components;
}

}  // namespace

std::vector<std::vector<OpId>> Components(const Problem& problem, const std::vector<OpId>& ops) {
  const int n = static_cast<int>(ops.size());
  thread_local std::vector<int> root, index_of_root;
  ComponentRoots(problem, ops, root);
  std::vector<std::vector<OpId>> components;
  index_of_root.assign(n, -1);
  for (int a = 0; a < n; ++a) {
    if (index_of_root[root[a]] < 0) {
      index_of_root[root[a]] = static_cast<int>(components.size());
      components.emplace_back();
    }
    components[index_of_root[root[a]]].push_back(ops[a]);
  }
  return components;
}

bool IsConnected(const Problem& problem, const std::vector<OpId>& ops) {
  thread_local std::vector<int> root;
  return ops.size() <= 1 || ComponentRoots(problem, ops, root) == 1;
}

bool LeavesAndReturns(const Problem& problem, const std::vector<int>& rank, const std::vector<OpId>& ops) {
  if (ops.size() <= 1) return false;
  std::vector<char> member(problem.ops.size(), 0), seen(problem.ops.size(), 0);
  int top = 0;
  for (OpId op : ops) {
    member[op] = 1;
    top = std::max(top, rank[op]);
  }
  // Walk downstream from the members through non-members; only ops ranked below the last member
  // can lie on a path back into the set.
  std::vector<OpId> frontier;
  for (OpId op : ops) {
    for (OpId c : problem.consumers[problem.ops[op].output]) {
      if (!member[c] && rank[c] < top && !seen[c]) {
        seen[c] = 1;
        frontier.push_back(c);
      }
    }
  }
  while (!frontier.empty()) {
    const OpId op = frontier.back();
    frontier.pop_back();
    for (OpId c : problem.consumers[problem.ops[op].output]) {
      if (member[c]) return true;
      if (rank[c] < top && !seen[c]) {
        seen[c] = 1;
        frontier.push_back(c);
      }
    }
  }
  return false;
}

void ProducedTensorsInto(const Problem& problem, const std::vector<OpId>& ops, std::vector<TensorId>& out) {
  out.clear();
  for (OpId op : ops) out.push_back(problem.ops[op].output);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

std::vector<TensorId> ProducedTensors(const Problem& problem, const std::vector<OpId>& ops) {
  std::vector<TensorId> produced;
  ProducedTensorsInto(problem, ops, produced);
  return produced;
}

void SubgraphsHoldingInto(const Schedule& s, size_t op_count, std::vector<std::vector<int>>& holding) {
  holding.resize(op_count);
  for (auto& h : holding) h.clear();
  for (int i = 0; i < static_cast<int>(s.subgraphs.size()); ++i) {
    for (OpId op : s.subgraphs[i].ops) holding[op].push_back(i);
  }
}

void BoundaryInputsInto(const Problem& problem, const std::vector<OpId>& ops, std::vector<TensorId>& out) {
  thread_local StampSet produced;
  thread_local StampSet listed;
  produced.Clear(problem.tensors.size());
  listed.Clear(problem.tensors.size());
  for (OpId op : ops) produced.Insert(problem.ops[op].output);
  out.clear();
  for (OpId op : ops) {
    for (TensorId t : problem.ops[op].inputs) {
      if (!produced.Contains(t) && listed.InsertNew(t)) out.push_back(t);
    }
  }
  std::sort(out.begin(), out.end());
}

std::vector<TensorId> BoundaryInputs(const Problem& problem, const std::vector<OpId>& ops) {
  std::vector<TensorId> inputs;
  BoundaryInputsInto(problem, ops, inputs);
  return inputs;
}

bool Feeds(const Problem& problem, const std::vector<OpId>& from, const std::vector<OpId>& to) {
  thread_local StampSet made_by_from;
  thread_local StampSet made_by_to;
  made_by_from.Clear(problem.tensors.size());
  made_by_to.Clear(problem.tensors.size());
  for (OpId op : from) made_by_from.Insert(problem.ops[op].output);
  for (OpId op : to) made_by_to.Insert(problem.ops[op].output);
  for (OpId op : to) {
    for (TensorId t : problem.ops[op].inputs) {
      if (made_by_from.Contains(t) && !made_by_to.Contains(t)) return true;
    }
  }
  return false;
}

FeedsFrom::FeedsFrom(const Problem& problem, const std::vector<OpId>& from)
    : problem_(problem), made_(ProducedTensors(problem, from)) {}

bool FeedsFrom::operator()(const std::vector<OpId>& to) const {
  // A tensor `to` reads that `from` makes and `to` does not (its one producer is not in `to`).
  for (OpId op : to) {
    for (TensorId t : problem_.ops[op].inputs) {
      if (!std::binary_search(made_.begin(), made_.end(), t)) continue;
      if (std::find(to.begin(), to.end(), problem_.producer[t]) == to.end()) return true;
    }
  }
  return false;
}

FeedsInto::FeedsInto(const Problem& problem, const std::vector<OpId>& to)
    : problem_(problem), inputs_(BoundaryInputs(problem, to)) {}

bool FeedsInto::operator()(const std::vector<OpId>& from) const {
  for (OpId op : from) {
    if (std::binary_search(inputs_.begin(), inputs_.end(), problem_.ops[op].output)) return true;
  }
  return false;
}

void AppendOpsFacts(const Problem& problem, const std::vector<OpId>& ops, std::vector<TensorId>& inputs,
                    std::vector<TensorId>& sinks) {
  const size_t first_input = inputs.size();
  if (ops.size() == 1) {
    // Most subgraphs are one op: its distinct inputs, and its output unless it reads it.
    const Op& op = problem.ops[ops[0]];
    bool reads_own_output = false;
    for (TensorId t : op.inputs) {
      if (t == op.output) {
        reads_own_output = true;
      } else {
        inputs.push_back(t);
      }
    }
    std::sort(inputs.begin() + first_input, inputs.end());
    inputs.erase(std::unique(inputs.begin() + first_input, inputs.end()), inputs.end());
    if (!reads_own_output) sinks.push_back(op.output);
    return;
  }
  thread_local StampSet produced;
  thread_local StampSet consumed;
  const size_t num_tensors = problem.tensors.size();
  produced.Clear(num_tensors);
  consumed.Clear(num_tensors);
  for (OpId op : ops) produced.Insert(problem.ops[op].output);
  for (OpId op : ops) {
    for (TensorId t : problem.ops[op].inputs) {
      if (!consumed.InsertNew(t)) continue;
      if (!produced.Contains(t)) inputs.push_back(t);
    }
  }
  std::sort(inputs.begin() + first_input, inputs.end());
  for (OpId op : ops) {
    const TensorId out = problem.ops[op].output;
    if (!consumed.Contains(out)) sinks.push_back(out);
  }
}

void GrowOpsFacts(const Problem& problem, const std::vector<int>& rank, const std::vector<OpId>& ops,
                  std::span<const TensorId> inputs, std::span<const TensorId> sinks,
                  const std::vector<OpId>& pulled, OpsFacts& facts) {
  facts.inputs.clear();
  facts.sinks.clear();
  // Made inside the grown list: its producer is among `ops` (found by rank).
  auto made_inside = [&](TensorId t) {
    const OpId p = problem.producer[t];
    if (p == kNoOp) return false;
    const auto at = std::lower_bound(ops.begin(), ops.end(), p, [&](OpId a, OpId b) { return rank[a] < rank[b]; });
    return at != ops.end() && *at == p;
  };
  // The old inputs but those the pulled ops make (no old op makes one), then the pulled ops'
  // inputs made outside.
  auto pulled_makes = [&](TensorId t) {
    const OpId p = problem.producer[t];
    if (p == kNoOp) return false;
    for (const OpId q : pulled) {
      if (q == p) return true;
    }
    return false;
  };
  const bool few = pulled.size() <= 8;
  for (TensorId t : inputs) {
    if (!(few ? pulled_makes(t) : made_inside(t))) facts.inputs.push_back(t);
  }
  const size_t old_inputs = facts.inputs.size();
  for (OpId p : pulled) {
    for (TensorId t : problem.ops[p].inputs) {
      if (!made_inside(t)) facts.inputs.push_back(t);
    }
  }
  if (facts.inputs.size() > old_inputs) {
    std::sort(facts.inputs.begin(), facts.inputs.end());
    facts.inputs.erase(std::unique(facts.inputs.begin(), facts.inputs.end()), facts.inputs.end());
  }
  // The old sinks but those a pulled op reads, in their order (the old ops' order in `ops`).
  for (TensorId s : sinks) {
    bool read = false;
    for (OpId p : pulled) {
      for (TensorId t : problem.ops[p].inputs) read = read || t == s;
    }
    if (!read) facts.sinks.push_back(s);
  }
}

void ComputeOpsFacts(const Problem& problem, const std::vector<OpId>& ops, OpsFacts& facts) {
  facts.inputs.clear();
  facts.sinks.clear();
  AppendOpsFacts(problem, ops, facts.inputs, facts.sinks);
}

std::vector<TensorId> UsefulRetain(const Problem& problem, const std::vector<OpId>& ops,
                                   const std::vector<TensorId>& retain, const Subgraph* next) {
  return UsefulRetain(problem, ops, retain, next != nullptr ? &next->ops : nullptr);
}

std::vector<TensorId> UsefulRetain(const Problem& problem, const std::vector<OpId>& ops,
                                   const std::vector<TensorId>& retain, const std::vector<OpId>* next_ops) {
  std::vector<TensorId> kept;
  UsefulRetainInto(problem, ops, retain, next_ops, kept);
  return kept;
}

void UsefulRetainInto(const Problem& problem, const std::vector<OpId>& ops, const std::vector<TensorId>& retain,
                      const std::vector<OpId>* next_ops, std::vector<TensorId>& kept) {
  kept.clear();
  if (retain.empty() || next_ops == nullptr) return;
  thread_local StampSet produced;
  thread_local std::vector<TensorId> next_inputs;
  produced.Clear(problem.tensors.size());
  for (OpId op : ops) produced.Insert(problem.ops[op].output);
  BoundaryInputsInto(problem, *next_ops, next_inputs);
  for (TensorId t : retain) {
    if (!produced.Contains(t)) continue;
    if (problem.IsGraphOutput(t)) continue;
    if (!std::binary_search(next_inputs.begin(), next_inputs.end(), t)) continue;
    kept.push_back(t);
  }
  std::sort(kept.begin(), kept.end());
  kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
}

}  // namespace annealer
