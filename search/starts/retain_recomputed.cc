#include "search/starts/retain_recomputed.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "eval/cost/incremental.h"
#include "search/moves/move_kit.h"
#include "search/moves/moves.h"
#include "search/starts/constructive.h"

namespace annealer {

Schedule RetainRecomputed(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                          const std::function<bool()>& stop, bool partial_edge_tiles) {
  if (!MergeReadersApplies(problem) || start.subgraphs.size() < 2) return start;
  IncrementalEvaluator evaluator(problem, pricer.cache());
  Candidate current = evaluator.Reset(start);
  if (!current.valid) return start;
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
    // Both fitted again in their context (what i-1 finds retained, what i retains for the
    // subgraph after it), then polished as a pair: on a ResNet-50 bottleneck cut out
    // (ascend910-core) the fits alone priced the block at 289,737, the polish takes it to
    // 126,443 (165,478 recomputed), the pair at the sides it had.
    const std::vector<TensorId>& retained_in = move_kit::RetainedInto(s, i - 1);
    std::optional<FitResult> first = FitSubgraph(pricer, before.ops, retained_in, retain, &before, true, stop);
    if (!first) continue;
    // What i retained and still makes (a tensor of a dropped op is no longer i's to retain).
    const std::vector<TensorId> still = ProducedTensors(problem, rest);
    std::vector<TensorId> passed;
    for (TensorId t : sg.retain) {
      if (std::binary_search(still.begin(), still.end(), t)) passed.push_back(t);
    }
    std::optional<FitResult> second = FitSubgraph(pricer, rest, first->subgraph.retain, passed, &sg, true, stop);
    if (!second) continue;
    Schedule trial = s;
    trial.subgraphs[i - 1] = std::move(first->subgraph);
    trial.subgraphs[i] = std::move(second->subgraph);
    trial = Polish(problem, pricer, trial, stop, partial_edge_tiles, i - 1, i + 1);
    ScheduleEdit edit;
    edit.begin = i - 1;
    edit.end = i + 1;
    edit.replacement = {std::move(trial.subgraphs[i - 1]), std::move(trial.subgraphs[i])};
    evaluator.CommitIfLower(std::move(edit), current);
  }
  return evaluator.schedule();
}

}  // namespace annealer
