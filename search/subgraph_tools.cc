#include "search/subgraph_tools.h"

#include <algorithm>
#include <numeric>
#include <tuple>

#include "eval/cost_cache.h"

// Set to 0 to price with the oracle directly (debugging the cache).
#ifndef ANNEALER_SEARCH_USE_CACHE
#define ANNEALER_SEARCH_USE_CACHE 1
#endif
#include "eval/traversal.h"

namespace annealer {

std::vector<int> TopologicalRanks(const Problem& problem) {
  std::vector<int> rank(problem.ops.size(), 0);
  for (size_t i = 0; i < problem.topological_order.size(); ++i) {
    rank[problem.topological_order[i]] = static_cast<int>(i);
  }
  return rank;
}

std::vector<OpId> SortTopologically(const std::vector<int>& rank, std::vector<OpId> ops) {
  std::sort(ops.begin(), ops.end(), [&](OpId a, OpId b) { return rank[a] < rank[b]; });
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  return ops;
}

std::vector<std::vector<OpId>> Components(const Problem& problem, const std::vector<OpId>& ops) {
  const int n = static_cast<int>(ops.size());
  std::vector<int> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  std::function<int(int)> find = [&](int x) { return parent[x] == x ? x : parent[x] = find(parent[x]); };
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      const TensorId out = problem.ops[ops[a]].output;
      const auto& inputs = problem.ops[ops[b]].inputs;
      if (std::find(inputs.begin(), inputs.end(), out) != inputs.end()) parent[find(a)] = find(b);
    }
  }
  std::vector<std::vector<OpId>> components;
  std::vector<int> index_of_root(n, -1);
  for (int a = 0; a < n; ++a) {
    const int root = find(a);
    if (index_of_root[root] < 0) {
      index_of_root[root] = static_cast<int>(components.size());
      components.emplace_back();
    }
    components[index_of_root[root]].push_back(ops[a]);
  }
  return components;
}

bool IsConnected(const Problem& problem, const std::vector<OpId>& ops) {
  return ops.size() <= 1 || Components(problem, ops).size() == 1;
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

std::vector<TensorId> ProducedTensors(const Problem& problem, const std::vector<OpId>& ops) {
  std::vector<TensorId> produced;
  for (OpId op : ops) produced.push_back(problem.ops[op].output);
  std::sort(produced.begin(), produced.end());
  produced.erase(std::unique(produced.begin(), produced.end()), produced.end());
  return produced;
}

std::vector<TensorId> BoundaryInputs(const Problem& problem, const std::vector<OpId>& ops) {
  const std::vector<TensorId> produced = ProducedTensors(problem, ops);
  std::vector<TensorId> inputs;
  for (OpId op : ops) {
    for (TensorId t : problem.ops[op].inputs) {
      if (!std::binary_search(produced.begin(), produced.end(), t)) inputs.push_back(t);
    }
  }
  std::sort(inputs.begin(), inputs.end());
  inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
  return inputs;
}

SubgraphResult SubgraphPricer::Price(const Subgraph& subgraph,
                                     const std::vector<TensorId>& retained_in) const {
#if ANNEALER_SEARCH_USE_CACHE
  if (cache_ != nullptr) return cache_->LookupOrCompute(problem_, subgraph, retained_in);
#endif
  return EvaluateSubgraphOracle(problem_, subgraph, retained_in);
}

std::vector<TensorId> UsefulRetain(const Problem& problem, const std::vector<OpId>& ops,
                                   const std::vector<TensorId>& retain, const Subgraph* next) {
  const std::vector<TensorId> produced = ProducedTensors(problem, ops);
  std::vector<TensorId> next_inputs;
  if (next != nullptr) next_inputs = BoundaryInputs(problem, next->ops);
  std::vector<TensorId> kept;
  for (TensorId t : retain) {
    if (!std::binary_search(produced.begin(), produced.end(), t)) continue;
    if (problem.IsGraphOutput(t)) continue;
    if (next == nullptr || !std::binary_search(next_inputs.begin(), next_inputs.end(), t)) continue;
    kept.push_back(t);
  }
  std::sort(kept.begin(), kept.end());
  kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
  return kept;
}

namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The candidate values of one axis, largest first: native, native/2, ... (at most `count`).
std::vector<Elements> Halvings(Elements top, int count) {
  std::vector<Elements> values;
  for (Elements v = top; v >= 1 && static_cast<int>(values.size()) < count; v /= 2) values.push_back(v);
  return values;
}

constexpr int64_t kMaxExplicitTraversalTiles = 2048;

struct Key {
  int w, h, k, t;
  auto operator<=>(const Key&) const = default;
};

}  // namespace

std::optional<FitResult> FitSubgraph(const SubgraphPricer& pricer, const std::vector<OpId>& ops,
                                     const std::vector<TensorId>& retained_in,
                                     const std::vector<TensorId>& retain,
                                     const Subgraph* start, bool thorough,
                                     const std::function<bool()>& stop) {
  const Problem& problem = pricer.problem();
  const Elements n = problem.native;
  Elements min_reduction = 0;
  for (OpId op : ops) {
    if (problem.ops[op].kind == OpKind::MatMul) {
      const Elements k = problem.ReductionLength(op);
      min_reduction = min_reduction == 0 ? k : std::min(min_reduction, k);
    }
  }
  // The sink shape fixes the tile grid (spec G2); any sink will do, V12 rejects mixed shapes.
  std::vector<char> consumed_inside(problem.tensors.size(), 0);
  for (OpId op : ops) {
    for (TensorId t : problem.ops[op].inputs) consumed_inside[t] = 1;
  }
  Tensor sink_shape = problem.tensors[problem.ops[ops.back()].output];
  for (OpId op : ops) {
    if (!consumed_inside[problem.ops[op].output]) {
      sink_shape = problem.tensors[problem.ops[op].output];
      break;
    }
  }

  const std::vector<Elements> sides = Halvings(n, thorough ? 6 : 5);
  const std::vector<Elements> ks =
      min_reduction == 0 ? std::vector<Elements>{1} : Halvings(std::min(n, min_reduction), thorough ? 8 : 6);
  const int num_traversals = static_cast<int>(std::size(kAllTraversalPatterns));

  const int num_sides = static_cast<int>(sides.size());
  const int num_ks = static_cast<int>(ks.size());
  auto grid_rows = [&](int h) { return CeilDiv(sink_shape.height, sides[h]); };
  auto grid_cols = [&](int w) { return CeilDiv(sink_shape.width, sides[w]); };
  // Explicit traversals are O(tiles) to build, hash, compare and copy; on large grids (tiny
  // tiles, never the winners) only raster is tried.
  auto traversal_allowed = [&](const Key& key) {
    return key.t == 0 || grid_rows(key.h) * grid_cols(key.w) <= kMaxExplicitTraversalTiles;
  };
  // One scratch subgraph is priced for every key; the traversal of each (pattern, rows, cols)
  // is built once and swapped in and out, so a key costs one cache lookup and no allocation.
  Subgraph scratch;
  scratch.ops = ops;
  scratch.retain = retain;
  std::vector<std::optional<std::vector<int64_t>>> traversals(
      static_cast<size_t>(num_traversals * num_sides * num_sides));
  std::vector<char> traversal_built(traversals.size(), 0);
  // Memo of priced keys: 0 = not priced, 1 = invalid, 2 = valid with latency.
  std::vector<char> memo_state(static_cast<size_t>(num_sides * num_sides * num_ks * num_traversals), 0);
  std::vector<Latency> memo_latency(memo_state.size(), 0);
  auto price = [&](const Key& key) -> std::optional<Latency> {
    const size_t slot = ((static_cast<size_t>(key.w) * num_sides + key.h) * num_ks + key.k) * num_traversals + key.t;
    if (memo_state[slot] != 0) {
      return memo_state[slot] == 2 ? std::optional<Latency>(memo_latency[slot]) : std::nullopt;
    }
    memo_state[slot] = 1;
    if (!traversal_allowed(key)) return std::nullopt;
    const size_t t_slot = (static_cast<size_t>(key.t) * num_sides + key.h) * num_sides + key.w;
    if (!traversal_built[t_slot]) {
      traversal_built[t_slot] = 1;
      traversals[t_slot] = MakeTraversal(kAllTraversalPatterns[key.t], grid_rows(key.h), grid_cols(key.w));
    }
    scratch.granularity = {sides[key.w], sides[key.h], ks[key.k]};
    scratch.traversal.swap(traversals[t_slot]);
    const SubgraphResult result = pricer.Price(scratch, retained_in);
    scratch.traversal.swap(traversals[t_slot]);
    if (!result.ok()) return std::nullopt;
    memo_state[slot] = 2;
    memo_latency[slot] = result.report.latency;
    return result.report.latency;
  };
  auto index_of = [](const std::vector<Elements>& values, Elements v) {
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i] <= v) return static_cast<int>(i);
    }
    return static_cast<int>(values.size()) - 1;
  };

  Key current{0, 0, 0, 0};
  if (start != nullptr) {
    current = {index_of(sides, start->granularity.w), index_of(sides, start->granularity.h),
               index_of(ks, start->granularity.k), 0};
    if (start->traversal.has_value()) {
      const int64_t rows = grid_rows(current.h), cols = grid_cols(current.w);
      if (static_cast<int64_t>(start->traversal->size()) == rows * cols) {
        for (int t = 1; t < num_traversals; ++t) {
          if (MakeTraversal(kAllTraversalPatterns[t], rows, cols) == start->traversal) {
            current.t = t;
            break;
          }
        }
      }
    }
  }
  if (!traversal_allowed(current)) current.t = 0;
  std::optional<Latency> best = price(current);
  if (!best) {
    // Too big (or an illegal k): walk down the tile sizes, largest area first, until one fits.
    std::vector<Key> fallbacks;
    for (int w = 0; w < static_cast<int>(sides.size()); ++w) {
      for (int h = 0; h < static_cast<int>(sides.size()); ++h) {
        for (int k = 0; k < static_cast<int>(ks.size()); ++k) fallbacks.push_back({w, h, k, current.t});
      }
    }
    std::stable_sort(fallbacks.begin(), fallbacks.end(), [&](const Key& a, const Key& b) {
      const Elements area_a = sides[a.w] * sides[a.h], area_b = sides[b.w] * sides[b.h];
      if (area_a != area_b) return area_a > area_b;
      return ks[a.k] > ks[b.k];
    });
    int tries = 0;
    const int max_tries = thorough ? 400 : 60;
    for (const Key& key : fallbacks) {
      if (++tries > max_tries || (stop && stop())) break;
      if (auto latency = price(key)) {
        current = key;
        best = latency;
        break;
      }
    }
    if (!best) return std::nullopt;
  }

  // Best-improvement descent over single-axis steps and traversal changes.
  for (int round = 0; round < 64; ++round) {
    std::vector<Key> neighbours;
    auto add = [&](Key key) {
      if (key.w < 0 || key.h < 0 || key.k < 0 || key.w >= static_cast<int>(sides.size()) ||
          key.h >= static_cast<int>(sides.size()) || key.k >= static_cast<int>(ks.size())) {
        return;
      }
      neighbours.push_back(key);
    };
    for (int d : {-1, 1}) {
      add({current.w + d, current.h, current.k, current.t});
      add({current.w, current.h + d, current.k, current.t});
      add({current.w, current.h, current.k + d, current.t});
      if (thorough) {
        add({current.w + d, current.h - d, current.k, current.t});
        add({current.w + d, current.h, current.k - d, current.t});
        add({current.w, current.h + d, current.k - d, current.t});
      }
    }
    for (int t = 0; t < num_traversals; ++t) {
      if (t != current.t) add({current.w, current.h, current.k, t});
    }
    Key next = current;
    Latency next_latency = *best;
    for (const Key& key : neighbours) {
      if (stop && stop()) break;
      if (auto latency = price(key); latency && *latency < next_latency) {
        next = key;
        next_latency = *latency;
      }
    }
    if (next == current) break;
    current = next;
    best = next_latency;
  }
  FitResult fit{std::move(scratch), *best};
  fit.subgraph.granularity = {sides[current.w], sides[current.h], ks[current.k]};
  const size_t t_slot = (static_cast<size_t>(current.t) * num_sides + current.h) * num_sides + current.w;
  fit.subgraph.traversal = std::move(traversals[t_slot]);
  return fit;
}

}  // namespace annealer
