#include "search/passes/serve_every_loader.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "eval/cost/incremental.h"
#include "search/moves/move_kit.h"
#include "search/moves/moves.h"

namespace annealer {
namespace {

// Copies of p a tensor: enough for ViT's twelve key projections of a block, and a bound on the
// work where a tensor has hundreds of readers.
constexpr int kMaxLoaders = 32;

bool Holds(const Subgraph& sg, OpId op) { return std::find(sg.ops.begin(), sg.ops.end(), op) != sg.ops.end(); }

bool Reads(const Problem& problem, const Subgraph& sg, TensorId t) {
  return std::any_of(sg.ops.begin(), sg.ops.end(), [&](OpId op) {
    const auto& in = problem.ops[op].inputs;
    return std::find(in.begin(), in.end(), t) != in.end();
  });
}

bool Retains(const Subgraph& sg, TensorId t) { return std::find(sg.retain.begin(), sg.retain.end(), t) != sg.retain.end(); }

// The edit that drops subgraph i (p alone, writing t) and puts p alone, retaining t, before each
// loader of t; nullopt where some reader cannot be served so (it would lose what the subgraph
// before it retains for it, or t is read before i) or a fit fails.
std::optional<ScheduleEdit> ServeAll(const Problem& problem, const SubgraphPricer& pricer, const Schedule& now, int i,
                                     const std::function<bool()>& stop) {
  const auto& subs = now.subgraphs;
  const int n = static_cast<int>(subs.size());
  const OpId p = subs[i].ops[0];
  const TensorId t = problem.ops[p].output;
  for (int j = 0; j < i; ++j) {
    if (Reads(problem, subs[j], t) && !Holds(subs[j], p)) return std::nullopt;
  }
  std::vector<int> loaders;
  for (int j = i + 1; j < n; ++j) {
    if (!Reads(problem, subs[j], t) || Holds(subs[j], p)) continue;
    if (j - 1 != i && Retains(subs[j - 1], t)) continue;  // served already
    // p alone goes between j - 1 and j: whatever j - 1 retains for j would be lost.
    if (j - 1 != i && std::any_of(subs[j - 1].retain.begin(), subs[j - 1].retain.end(),
                                  [&](TensorId r) { return Reads(problem, subs[j], r); })) {
      return std::nullopt;
    }
    loaders.push_back(j);
    if (static_cast<int>(loaders.size()) > kMaxLoaders) return std::nullopt;
  }
  if (loaders.empty()) return std::nullopt;
  auto copy = FitSubgraph(pricer, {p}, {}, {t}, &subs[i], false, stop);
  if (!copy) return std::nullopt;
  ScheduleEdit edit;
  edit.begin = i;
  edit.end = loaders.back() + 1;
  for (int k = i + 1, next = 0; k <= loaders.back(); ++k) {
    if (k != loaders[next]) {
      edit.replacement.push_back(subs[k]);
      continue;
    }
    ++next;
    // The loader's tiles may grow once t no longer crosses slow memory.
    auto served = FitSubgraph(pricer, subs[k].ops, {t}, subs[k].retain, &subs[k], false, stop);
    if (!served) return std::nullopt;
    edit.replacement.push_back(copy->subgraph);
    edit.replacement.push_back(served->subgraph);
  }
  return edit;
}

}  // namespace

Schedule ServeEveryLoader(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                          const std::function<bool()>& stop) {
  if (!MergeReadersApplies(problem)) return start;
  IncrementalEvaluator evaluator(problem, pricer.cache());
  Candidate current = evaluator.Reset(start);
  if (!current.valid) return start;
  for (int i = 0; i < static_cast<int>(evaluator.schedule().subgraphs.size()); ++i) {
    if (stop && stop()) break;
    const Subgraph& w = evaluator.schedule().subgraphs[i];
    if (w.ops.size() != 1 || !w.retain.empty()) continue;
    const OpId p = w.ops[0];
    if (problem.ops[p].kind == OpKind::MatMul || problem.IsLayout(p)) continue;
    const TensorId t = problem.ops[p].output;
    const auto& readers = problem.consumers[t];
    if (readers.size() < 3 || problem.IsGraphOutput(t)) continue;
    // A Layout op gathers from slow memory (L1): t must be written for it.
    if (std::any_of(readers.begin(), readers.end(), [&](OpId r) { return problem.IsLayout(r); })) continue;
    std::optional<ScheduleEdit> edit = ServeAll(problem, pricer, evaluator.schedule(), i, stop);
    if (!edit) continue;
    evaluator.CommitIfLower(std::move(*edit), current);
  }
  return evaluator.schedule();
}

}  // namespace annealer
