#include "eval/bound/islands/activations.h"

#include "eval/bound/traffic/streaming.h"

namespace annealer::bound_internal {

bool g_island_activations = true;

namespace {

// Calls visit(island) once per island whose subgraphs must load t (a reader apart from p), or
// does nothing when t does not qualify.
template <class Visit>
void ApartIslands(const Problem& problem, const Analysis& a, const Built& built, TensorId t, std::vector<TensorId>& seen,
                  const Visit& visit) {
  const OpId p = problem.producer[t];
  const auto& consumers = problem.consumers[t];
  if (p == kNoOp || consumers.empty() || !a.TooLarge(t)) return;
  const int home = built.island_of[p];
  for (OpId c : consumers) {
    const int island = built.island_of[c];
    if (seen[island] == t) continue;
    bool apart = island != home;
    if (!apart) {
      // c and p share no subgraph when each mode of c has an edge from t that cannot be internal.
      apart = true;
      const auto& in = problem.ops[c].inputs;
      for (int m = 0; m < kModes && apart; ++m) {
        if (!a.HasMode(c, m)) continue;
        bool all = true;
        for (int slot = 0; slot < static_cast<int>(in.size()); ++slot) {
          if (in[slot] == t) all = all && a.EdgeFeasible(p, c, slot, m);
        }
        if (all) apart = false;
      }
    }
    if (!apart) continue;
    seen[island] = t;
    visit(island);
  }
}

}  // namespace

std::vector<char> ForcedWrites(const Problem& problem, const Analysis& a, const Built& built) {
  std::vector<char> forced(problem.tensors.size(), 0);
  if (!g_island_activations) return forced;
  std::vector<TensorId> seen(built.islands, -1);
  for (TensorId t = 0; t < static_cast<TensorId>(problem.tensors.size()); ++t) {
    ApartIslands(problem, a, built, t, seen, [&](int) { forced[t] = 1; });
  }
  return forced;
}

std::vector<Elements> IslandActivationLoads(const Problem& problem, const Analysis& a, const Built& built) {
  std::vector<Elements> loads(built.islands, 0);
  if (!g_island_activations) return loads;
  std::vector<TensorId> seen(built.islands, -1);
  for (TensorId t = 0; t < static_cast<TensorId>(problem.tensors.size()); ++t) {
    bool streamed = false;  // P19: its loads are its readers' P14 claims
    for (OpId c : problem.consumers[t]) {
      const Op& op = problem.ops[c];
      if (op.kind != OpKind::MatMul) continue;
      for (int slot = 0; slot < 2; ++slot) {
        streamed = streamed || (op.inputs[slot] == t && problem.ReductionLength(c) > problem.native &&
                                StreamedActivationSide(problem, c, slot));
      }
    }
    if (streamed) continue;
    ApartIslands(problem, a, built, t, seen, [&](int island) { loads[island] += problem.tensors[t].size(); });
  }
  return loads;
}

}  // namespace annealer::bound_internal
