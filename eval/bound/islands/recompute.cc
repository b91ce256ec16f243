#include "eval/bound/islands/recompute.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "eval/bound/islands/serving_chains.h"

namespace annealer::bound_internal {

bool g_recompute_cuts = true;

std::vector<RecomputeCut> RecomputeCuts(const Problem& problem, const Problem& original, const Analysis& analysis,
                                        const Built& built, const std::vector<char>& weights) {
  const auto num_tensors = static_cast<TensorId>(problem.tensors.size());
  std::vector<RecomputeCut> cuts(num_tensors);
  if (!g_recompute_cuts || built.islands < 2) return cuts;
  const auto too_large = [&](TensorId t) { return problem.tensors[t].size() + 1 > problem.fast_memory_capacity; };
  const std::vector<double> inner = WidestInner(problem, built, weights, {});
  const std::vector<char> crosses = CrossingTensors(problem, built);
  ChainOps chains(problem, original, analysis, built);

  struct Candidate {
    TensorId tensor;
    std::vector<int> readers;
    double potential;
  };
  std::vector<std::vector<Candidate>> by_home(built.islands);
  int64_t work = 0;  // besides chains.Work()
  constexpr int64_t kWorkBudget = int64_t{1} << 26;
  std::vector<OpId> roots, members;
  for (TensorId t = 0; t < num_tensors && work + chains.Work() < kWorkBudget; ++t) {
    if (!crosses[t]) continue;
    const OpId p = problem.producer[t];
    const int home = built.island_of[p];
    if (inner[p] <= 0) continue;
    std::vector<int> readers;
    for (OpId r : problem.consumers[t]) {
      const int j = built.island_of[r];
      if (j != home && std::find(readers.begin(), readers.end(), j) == readers.end()) readers.push_back(j);
    }
    const std::vector<OpId>& cone = chains.Cone(p, t);
    work += static_cast<int64_t>(cone.size());
    members.clear();  // U, the union over the reading islands
    bool ok = true;
    for (int j : readers) {
      // The ops that depend on a reader of t in J (P16's readers: the image's, so no Layout op).
      roots.clear();
      for (OpId r : problem.consumers[t]) {
        if (built.island_of[r] != j) continue;
        for (OpId c : original.consumers[original.ops[r].output]) roots.push_back(c);
      }
      chains.Join(home, cone, roots, t, members);
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
    traffic += InputClaimsIn(built, inputs, home);
    cuts[t].any = inner[p];
    cuts[t].compute = compute;
    cuts[t].traffic = traffic;
    const double potential = static_cast<double>(readers.size()) * cuts[t].any;
    by_home[home].push_back({t, std::move(readers), potential});
  }
  if (work + chains.Work() >= kWorkBudget) return std::vector<RecomputeCut>(num_tensors);  // too large to price
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
