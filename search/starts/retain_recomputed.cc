#include "search/starts/retain_recomputed.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "eval/cost/incremental.h"
#include "search/moves/move_kit.h"
#include "search/moves/moves.h"

namespace annealer {

Schedule RetainRecomputed(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                          const std::function<bool()>& stop) {
  if (!MergeReadersApplies(problem) || start.subgraphs.size() < 2) return start;
  const std::vector<int> rank = TopologicalRanks(problem);
  IncrementalEvaluator evaluator(problem, pricer.cache());
  Candidate current = evaluator.Reset(start);
  if (!current.valid) return start;
  const MoveContext context{problem, rank, pricer, stop, &evaluator, true, false};
  for (int i = 1; i < static_cast<int>(evaluator.schedule().subgraphs.size()); ++i) {
    if (stop && stop()) break;
    const Schedule& s = evaluator.schedule();
    const Subgraph& before = s.subgraphs[i - 1];
    const Subgraph& sg = s.subgraphs[i];
    std::vector<OpId> rest;
    for (OpId op : sg.ops) {
      if (std::find(before.ops.begin(), before.ops.end(), op) == before.ops.end()) rest.push_back(op);
    }
    if (rest.size() == sg.ops.size() || rest.empty()) continue;
    // A drop that cuts i in two leaves more than one subgraph to take the retained tensors; the
    // moves' drop covers that case.
    if (Components(problem, rest).size() != 1) continue;
    const std::vector<TensorId> made = ProducedTensors(problem, before.ops);
    std::vector<TensorId> retain = before.retain;
    for (TensorId t : BoundaryInputs(problem, rest)) {
      if (std::binary_search(made.begin(), made.end(), t) && !problem.IsGraphOutput(t)) retain.push_back(t);
    }
    std::sort(retain.begin(), retain.end());
    retain.erase(std::unique(retain.begin(), retain.end()), retain.end());
    std::vector<move_kit::Piece> pieces;
    pieces.push_back({before.ops, retain, &before, true});
    pieces.push_back({rest, sg.retain, &sg, true});
    std::optional<ScheduleEdit> edit = move_kit::Finish(context, s, i - 1, i + 1, std::move(pieces));
    if (!edit) continue;
    const Candidate& candidate = evaluator.Propose(std::move(*edit));
    if (candidate.valid && candidate.total < current.total) {
      evaluator.Commit();
      current = candidate;
    } else {
      evaluator.Revert();
    }
  }
  return evaluator.schedule();
}

}  // namespace annealer
