#include "search/passes/retain_recomputed.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "eval/cost/incremental.h"
#include "search/moves/move_kit.h"
#include "search/moves/moves.h"
#include "search/starts/constructive.h"

namespace annealer {
namespace {

// The ops of `before` outside `shared` that read a tensor `shared` makes and whose own outputs
// no op of `before` reads: the taps of t that i-1 runs, which could run in i as well.
std::vector<OpId> MovableReaders(const Problem& problem, const std::vector<OpId>& before, const std::vector<OpId>& shared) {
  const std::vector<TensorId> made = ProducedTensors(problem, shared);
  const std::vector<TensorId> read_in_before = [&] {
    std::vector<TensorId> read;
    for (OpId op : before) read.insert(read.end(), problem.ops[op].inputs.begin(), problem.ops[op].inputs.end());
    std::sort(read.begin(), read.end());
    return read;
  }();
  std::vector<OpId> movable;
  for (OpId op : before) {
    if (std::find(shared.begin(), shared.end(), op) != shared.end()) continue;
    const auto& inputs = problem.ops[op].inputs;
    const bool reads_shared = std::any_of(inputs.begin(), inputs.end(),
                                          [&](TensorId t) { return std::binary_search(made.begin(), made.end(), t); });
    const bool read_after_it =
        std::binary_search(read_in_before.begin(), read_in_before.end(), problem.ops[op].output);
    if (reads_shared && !read_after_it) movable.push_back(op);
  }
  return movable;
}

}  // namespace

Schedule RetainRecomputed(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                          const std::function<bool()>& stop, bool partial_edge_tiles) {
  if (!MergeReadersApplies(problem) || start.subgraphs.size() < 2) return start;
  IncrementalEvaluator evaluator(problem, pricer.cache());
  Candidate current = evaluator.Reset(start);
  if (!current.valid) return start;
  const std::vector<int> rank = TopologicalRanks(problem);
  // Subgraphs i-1 and i as `first_ops` and `second_ops`: i-1 retains every tensor of its own that
  // i reads; i passes on what it retained and still makes, or nothing (`drop_onward`: the
  // subgraph after it then loads those, and is fitted again). Polished over the subgraphs it
  // touched; committed when the whole total falls.
  auto try_pair = [&](int i, const std::vector<OpId>& first_ops, const std::vector<OpId>& second_ops,
                      bool drop_onward) {
    const Schedule& s = evaluator.schedule();
    const Subgraph& before = s.subgraphs[i - 1];
    const Subgraph& sg = s.subgraphs[i];
    const std::vector<TensorId> made = ProducedTensors(problem, first_ops);
    std::vector<TensorId> retain;
    for (TensorId t : before.retain) {
      if (std::binary_search(made.begin(), made.end(), t)) retain.push_back(t);
    }
    for (TensorId t : BoundaryInputs(problem, second_ops)) {
      if (std::binary_search(made.begin(), made.end(), t) && !problem.IsGraphOutput(t)) retain.push_back(t);
    }
    std::sort(retain.begin(), retain.end());
    retain.erase(std::unique(retain.begin(), retain.end()), retain.end());
    // Both fitted again in their context (what i-1 finds retained, what i retains for the
    // subgraph after it), then polished as a pair: on a ResNet-50 bottleneck cut out
    // (ascend910-core) the fits alone priced the block at 289,737, the polish takes it to
    // 126,443 (165,478 recomputed), the pair at the sides it had.
    const std::vector<TensorId>& retained_in = move_kit::RetainedInto(s, i - 1);
    std::optional<FitResult> first = FitSubgraph(pricer, first_ops, retained_in, retain, &before, true, stop);
    if (!first) return false;
    // What i retained and still makes (a tensor of a dropped op is no longer i's to retain).
    std::vector<TensorId> passed;
    if (!drop_onward) {
      const std::vector<TensorId> still = ProducedTensors(problem, second_ops);
      for (TensorId t : sg.retain) {
        if (std::binary_search(still.begin(), still.end(), t)) passed.push_back(t);
      }
    }
    std::optional<FitResult> second = FitSubgraph(pricer, second_ops, first->subgraph.retain, passed, &sg, true, stop);
    if (!second) return false;
    const bool refit_next = drop_onward && !sg.retain.empty() && i + 1 < static_cast<int>(s.subgraphs.size());
    std::optional<FitResult> third;
    if (refit_next) {
      const Subgraph& next = s.subgraphs[i + 1];
      third = FitSubgraph(pricer, next.ops, passed, next.retain, &next, true, stop);
      if (!third) return false;
    }
    const int end = refit_next ? i + 2 : i + 1;
    Schedule trial = s;
    trial.subgraphs[i - 1] = std::move(first->subgraph);
    trial.subgraphs[i] = std::move(second->subgraph);
    if (refit_next) trial.subgraphs[i + 1] = std::move(third->subgraph);
    trial = Polish(problem, pricer, trial, stop, partial_edge_tiles, i - 1, end);
    ScheduleEdit edit;
    edit.begin = i - 1;
    edit.end = end;
    for (int j = i - 1; j < end; ++j) edit.replacement.push_back(std::move(trial.subgraphs[j]));
    return evaluator.CommitIfLower(std::move(edit), current);
  };
  for (int i = 1; i < static_cast<int>(evaluator.schedule().subgraphs.size()); ++i) {
    if (stop && stop()) break;
    const Schedule& s = evaluator.schedule();
    const std::vector<OpId> before = s.subgraphs[i - 1].ops;
    const std::vector<OpId>& sg = s.subgraphs[i].ops;
    std::vector<OpId> rest;
    std::vector<OpId> shared;
    for (OpId op : sg) {
      (std::find(before.begin(), before.end(), op) == before.end() ? rest : shared).push_back(op);
    }
    if (shared.empty() || rest.empty()) continue;
    // A drop that cuts i in two leaves more than one subgraph to take the retained tensors; the
    // moves' drop covers that case.
    if (Components(problem, rest).size() != 1) continue;
    if (try_pair(i, before, rest, false)) continue;
    // Where i-1 cannot retain t beside the taps it runs (ResNet-50's stage 1 on ascend910-core:
    // t and each tap output are 200,704 elements of a 524,288 scratchpad, and i-1 ran two taps),
    // all but one of them move to i, which then holds the rest of the taps and the sum (all nine
    // taps with the sum have no valid fit there). i's own retention (the sum for the next
    // subgraph) may no longer fit beside t and the kept tap's output (634,880 elements at
    // [64, 128, 64]): where keeping it does not commit, the sum is written and the next subgraph
    // loads it (+10.7k there, against 35k a block).
    const std::vector<OpId> movable = MovableReaders(problem, before, shared);
    if (movable.size() < 2) continue;
    const std::vector<OpId> moved(movable.begin(), movable.end() - 1);
    std::vector<OpId> first_ops;
    for (OpId op : before) {
      if (std::find(moved.begin(), moved.end(), op) == moved.end()) first_ops.push_back(op);
    }
    std::vector<OpId> second_ops = rest;
    second_ops.insert(second_ops.end(), moved.begin(), moved.end());
    second_ops = SortTopologically(rank, std::move(second_ops));
    if (Components(problem, second_ops).size() != 1) continue;
    if (try_pair(i, first_ops, second_ops, false)) continue;
    if (!s.subgraphs[i].retain.empty()) try_pair(i, first_ops, second_ops, true);
  }
  return evaluator.schedule();
}

}  // namespace annealer
