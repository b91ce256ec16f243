#include "search/passes/retain_for_next.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "eval/cost/incremental.h"
#include "search/moves/move_kit.h"
#include "search/moves/moves.h"

namespace annealer {

Schedule RetainForNext(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                       const std::function<bool()>& stop) {
  if (!MergeReadersApplies(problem)) return start;
  IncrementalEvaluator evaluator(problem, pricer.cache());
  Candidate current = evaluator.Reset(start);
  if (!current.valid) return start;
  const std::vector<int> rank = TopologicalRanks(problem);
  auto holds = [](const Subgraph& sg, OpId op) { return std::find(sg.ops.begin(), sg.ops.end(), op) != sg.ops.end(); };
  // i's retain set grown by what it makes that `next` reads (not made there, not graph outputs).
  auto grown = [&](const Subgraph& a, const Subgraph& next) {
    std::vector<TensorId> retain = a.retain;
    for (OpId op : a.ops) {
      const TensorId t = problem.ops[op].output;
      if (problem.IsGraphOutput(t) || std::find(retain.begin(), retain.end(), t) != retain.end()) continue;
      const auto& readers = problem.consumers[t];
      const bool read_next = std::any_of(readers.begin(), readers.end(), [&](OpId r) { return holds(next, r); });
      const bool made_next = std::any_of(next.ops.begin(), next.ops.end(), [&](OpId o) { return problem.ops[o].output == t; });
      if (read_next && !made_next) retain.push_back(t);
    }
    return retain;
  };
  for (int i = 0; i + 1 < static_cast<int>(evaluator.schedule().subgraphs.size()); ++i) {
    if (stop && stop()) break;
    const Schedule& now = evaluator.schedule();
    const int n = static_cast<int>(now.subgraphs.size());
    const Subgraph& a = now.subgraphs[i];
    Latency best_total = current.total;
    std::optional<ScheduleEdit> best;
    auto consider = [&](int end, const Subgraph& next) {
      const std::vector<TensorId> retain = grown(a, next);
      if (retain.size() == a.retain.size()) return;
      auto first = FitSubgraph(pricer, a.ops, move_kit::RetainedInto(now, i), retain, &a, false, stop);
      if (!first) return;
      auto second = FitSubgraph(pricer, next.ops, retain, next.retain, &next, false, stop);
      if (!second) return;
      ScheduleEdit edit;
      edit.begin = i;
      edit.end = end;
      edit.replacement = {first->subgraph, second->subgraph};
      const Candidate& c = evaluator.Propose(edit);
      if (c.valid && c.total < best_total) {
        best_total = c.total;
        best = std::move(edit);
      }
      evaluator.Revert();
    };
    consider(i + 2, now.subgraphs[i + 1]);
    // The next two merged, where what they read from i then comes retained (ViT's twelfth head's
    // query projection, alone after the last value group, joined to the output projection).
    if (i + 2 < n) {
      Subgraph merged = now.subgraphs[i + 2];
      std::vector<OpId> ops = now.subgraphs[i + 1].ops;
      ops.insert(ops.end(), merged.ops.begin(), merged.ops.end());
      merged.ops = SortTopologically(rank, std::move(ops));
      consider(i + 3, merged);
    }
    if (!best) continue;
    evaluator.CommitIfLower(std::move(*best), current);
  }
  return evaluator.schedule();
}

}  // namespace annealer
