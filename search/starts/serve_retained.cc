#include "search/starts/serve_retained.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "eval/cost/incremental.h"
#include "search/moves/moves.h"

namespace annealer {
namespace {

// A loader tried per (subgraph, tensor): enough for ViT's twelve key projections of a block, and
// a bound on the work where a tensor has hundreds of readers.
constexpr int kMaxLoaders = 32;

bool Makes(const Problem& problem, const Subgraph& s, TensorId t) {
  return std::any_of(s.ops.begin(), s.ops.end(), [&](OpId op) { return problem.ops[op].output == t; });
}

bool Reads(const Problem& problem, const Subgraph& s, TensorId t) {
  for (OpId op : s.ops) {
    const auto& in = problem.ops[op].inputs;
    if (std::find(in.begin(), in.end(), t) != in.end()) return true;
  }
  return false;
}

// j loads t and can take it retained instead: no Layout op of j reads it (L1 gathers from slow
// memory), j passes nothing on by retention, and nothing j reads comes retained from before it
// (that would be lost where j goes).
bool Loader(const Problem& problem, const Schedule& schedule, int j, TensorId t) {
  const Subgraph& s = schedule.subgraphs[j];
  if (!s.retain.empty() || Makes(problem, s, t)) return false;
  bool reads = false;
  for (OpId op : s.ops) {
    const auto& in = problem.ops[op].inputs;
    if (std::find(in.begin(), in.end(), t) == in.end()) continue;
    if (problem.IsLayout(op)) return false;
    reads = true;
  }
  if (!reads) return false;
  if (j > 0) {
    for (TensorId r : schedule.subgraphs[j - 1].retain) {
      if (Reads(problem, s, r) && !Makes(problem, s, r)) return false;
    }
  }
  return true;
}

// i retains t and j runs right after it; the subgraphs between them keep their order.
ScheduleEdit ServeEdit(int i, int j, Subgraph server, Subgraph loader) {
  ScheduleEdit edit;
  edit.replacement = {std::move(server), std::move(loader)};
  if (j > i) {
    edit.begin = i;
    edit.end = j + 1;
    edit.kept_at = 2;
    edit.kept_begin = i + 1;
    edit.kept_end = j;
  } else {
    edit.begin = j;
    edit.end = i + 1;
    edit.kept_at = 0;
    edit.kept_begin = j + 1;
    edit.kept_end = i;
  }
  return edit;
}

}  // namespace

Schedule ServeLoadsByRetention(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                               const std::function<bool()>& stop) {
  if (!MergeReadersApplies(problem)) return start;
  IncrementalEvaluator evaluator(problem, pricer.cache());
  Candidate current = evaluator.Reset(start);
  if (!current.valid) return start;
  for (int i = 0; i < static_cast<int>(evaluator.schedule().subgraphs.size()); ++i) {
    if (!evaluator.schedule().subgraphs[i].retain.empty()) continue;
    // A copy: proposals splice the evaluator's schedule.
    const std::vector<OpId> ops = evaluator.schedule().subgraphs[i].ops;
    for (OpId op : ops) {
      const TensorId t = problem.ops[op].output;
      if (problem.consumers[t].size() < 3 || problem.IsGraphOutput(t)) continue;
      const int n = static_cast<int>(evaluator.schedule().subgraphs.size());
      Latency best_total = current.total;
      std::optional<ScheduleEdit> best;
      int tried = 0;
      for (int j = 0; j < n && tried < kMaxLoaders; ++j) {
        if (stop && stop()) return evaluator.schedule();
        if (j == i || !Loader(problem, evaluator.schedule(), j, t)) continue;
        ++tried;
        const Schedule& now = evaluator.schedule();
        Subgraph server = now.subgraphs[i];
        server.retain = {t};
        Subgraph loader = now.subgraphs[j];
        // The loader's tiles may grow once t no longer crosses slow memory.
        if (auto fit = FitSubgraph(pricer, loader.ops, {t}, {}, &loader, false, stop)) loader = fit->subgraph;
        ScheduleEdit edit = ServeEdit(i, j, server, loader);
        const Candidate& c = evaluator.Propose(edit);
        if (c.valid && c.total < best_total) {
          best_total = c.total;
          best = std::move(edit);
        }
        evaluator.Revert();
      }
      if (!best) continue;
      const Candidate& c = evaluator.Propose(std::move(*best));
      if (c.valid && c.total < current.total) {
        evaluator.Commit();
        current = c;
        break;  // i now retains t; the server moved at most one place down
      }
      evaluator.Revert();
    }
  }
  return evaluator.schedule();
}

}  // namespace annealer
