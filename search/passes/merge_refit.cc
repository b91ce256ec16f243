#include "search/passes/merge_refit.h"

#include <utility>
#include <vector>

#include "eval/cost/incremental.h"
#include "search/moves/move_kit.h"
#include "search/moves/moves.h"

namespace annealer {

Schedule MergeAndRefit(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                       const std::function<bool()>& stop) {
  if (!MergeReadersApplies(problem)) return start;
  IncrementalEvaluator evaluator(problem, pricer.cache());
  Candidate current = evaluator.Reset(start);
  if (!current.valid) return start;
  const std::vector<int> rank = TopologicalRanks(problem);
  for (int i = 0; i < static_cast<int>(evaluator.schedule().subgraphs.size()); ++i) {
    if (stop && stop()) break;
    {
      const Schedule& now = evaluator.schedule();
      const Subgraph& sg = now.subgraphs[i];
      if (auto fit = FitSubgraph(pricer, sg.ops, move_kit::RetainedInto(now, i), sg.retain, &sg, true, stop)) {
        ScheduleEdit edit;
        edit.begin = i;
        edit.end = i + 1;
        edit.replacement = {std::move(fit->subgraph)};
        evaluator.CommitIfLower(std::move(edit), current);
      }
    }
    const Schedule& now = evaluator.schedule();
    if (i + 1 >= static_cast<int>(now.subgraphs.size())) break;
    std::vector<OpId> ops = now.subgraphs[i].ops;
    ops.insert(ops.end(), now.subgraphs[i + 1].ops.begin(), now.subgraphs[i + 1].ops.end());
    auto fit = FitSubgraph(pricer, SortTopologically(rank, std::move(ops)), move_kit::RetainedInto(now, i),
                           now.subgraphs[i + 1].retain, &now.subgraphs[i], true, stop);
    if (!fit) continue;
    ScheduleEdit edit;
    edit.begin = i;
    edit.end = i + 2;
    edit.replacement = {std::move(fit->subgraph)};
    if (evaluator.CommitIfLower(std::move(edit), current)) --i;  // the merged subgraph meets its new neighbour
  }
  return evaluator.schedule();
}

}  // namespace annealer
