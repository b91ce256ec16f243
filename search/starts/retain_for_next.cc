#include "search/starts/retain_for_next.h"

#include <algorithm>
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
  for (int i = 0; i + 1 < static_cast<int>(evaluator.schedule().subgraphs.size()); ++i) {
    if (stop && stop()) break;
    const Schedule& now = evaluator.schedule();
    const Subgraph& a = now.subgraphs[i];
    const Subgraph& b = now.subgraphs[i + 1];
    auto holds = [](const Subgraph& sg, OpId op) { return std::find(sg.ops.begin(), sg.ops.end(), op) != sg.ops.end(); };
    std::vector<TensorId> retain = a.retain;
    for (OpId op : a.ops) {
      const TensorId t = problem.ops[op].output;
      if (problem.IsGraphOutput(t) || std::find(retain.begin(), retain.end(), t) != retain.end()) continue;
      const auto& readers = problem.consumers[t];
      const bool read_next = std::any_of(readers.begin(), readers.end(), [&](OpId r) { return holds(b, r); });
      const bool made_next = std::any_of(b.ops.begin(), b.ops.end(), [&](OpId o) { return problem.ops[o].output == t; });
      if (read_next && !made_next) retain.push_back(t);
    }
    if (retain.size() == a.retain.size()) continue;
    auto first = FitSubgraph(pricer, a.ops, move_kit::RetainedInto(now, i), retain, &a, false, stop);
    if (!first) continue;
    auto second = FitSubgraph(pricer, b.ops, retain, b.retain, &b, false, stop);
    if (!second) continue;
    ScheduleEdit edit;
    edit.begin = i;
    edit.end = i + 2;
    edit.replacement = {first->subgraph, second->subgraph};
    const Candidate& c = evaluator.Propose(std::move(edit));
    if (c.valid && c.total < current.total) {
      evaluator.Commit();
      current = c;
    } else {
      evaluator.Revert();
    }
  }
  return evaluator.schedule();
}

}  // namespace annealer
