#include "search/starts/gather_partials.h"

#include <algorithm>
#include <vector>

#include "eval/cost/incremental.h"
#include "search/starts/gather_strays.h"

namespace annealer {
namespace {

// How far before the sum's subgraph a partial product is looked for: the gather-strays window.
constexpr int kPartialWindow = 64;

}  // namespace

std::vector<OpId> PartialProducts(const Problem& problem, OpId sum) {
  const Op& op = problem.ops[sum];
  std::vector<OpId> parts;
  if (op.kind != OpKind::Pointwise || op.inputs.size() < 2) return parts;
  for (TensorId t : op.inputs) {
    const OpId p = problem.producer[t];
    if (p == kNoOp || problem.ops[p].kind != OpKind::MatMul) continue;
    const auto& readers = problem.consumers[t];
    if (readers.size() != 1 || readers[0] != sum) continue;
    if (std::find(parts.begin(), parts.end(), p) == parts.end()) parts.push_back(p);
  }
  if (parts.size() < 2) parts.clear();
  return parts;
}

std::optional<ScheduleEdit> GatherPartialsAt(const MoveContext& ctx, const Schedule& s, int x, OpId sum,
                                             bool retain_next) {
  const std::vector<OpId> parts = PartialProducts(ctx.problem, sum);
  if (parts.empty()) return std::nullopt;
  const std::vector<OpId>& held = s.subgraphs[x].ops;
  std::vector<OpId> strays;
  int lo = x;
  for (OpId op : parts) {
    if (std::find(held.begin(), held.end(), op) != held.end()) continue;
    bool found = false;
    for (int j = std::max(0, x - kPartialWindow); j < x; ++j) {
      const std::vector<OpId>& ops = s.subgraphs[j].ops;
      if (std::find(ops.begin(), ops.end(), op) == ops.end()) continue;
      found = true;
      lo = std::min(lo, j);
    }
    // A product made only outside the window stays where it is.
    if (!found) return std::nullopt;
    strays.push_back(op);
  }
  if (strays.empty()) return std::nullopt;
  return GatherInto(ctx, s, x, lo, x, strays, retain_next);
}

Schedule GatherPartials(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                        const std::function<bool()>& stop) {
  if (!MergeReadersApplies(problem) || start.subgraphs.size() < 2) return start;
  std::vector<OpId> sums;
  for (OpId op = 0; op < static_cast<OpId>(problem.ops.size()); ++op) {
    if (!PartialProducts(problem, op).empty()) sums.push_back(op);
  }
  if (sums.empty()) return start;
  const std::vector<int> rank = TopologicalRanks(problem);
  IncrementalEvaluator evaluator(problem, pricer.cache());
  Candidate current = evaluator.Reset(start);
  if (!current.valid) return start;
  const MoveContext ctx{problem, rank, pricer, stop, &evaluator, true, false};
  Latency total = current.total;
  for (OpId sum : sums) {
    if (stop && stop()) break;
    // The sum's home: the one subgraph that runs it (a sum run twice is left alone).
    const Schedule& s = evaluator.schedule();
    int x = -1;
    bool twice = false;
    for (int j = 0; j < static_cast<int>(s.subgraphs.size()); ++j) {
      const std::vector<OpId>& ops = s.subgraphs[j].ops;
      if (std::find(ops.begin(), ops.end(), sum) == ops.end()) continue;
      twice = x >= 0;
      x = j;
    }
    if (x < 0 || twice) continue;
    int pick = -1;
    Latency pick_total = 0;
    for (int retain_next = 0; retain_next < 2; ++retain_next) {
      std::optional<ScheduleEdit> edit = GatherPartialsAt(ctx, evaluator.schedule(), x, sum, retain_next);
      if (!edit) continue;
      const Candidate& candidate = evaluator.Propose(std::move(*edit));
      if (candidate.valid && (pick < 0 || candidate.total < pick_total)) {
        pick = retain_next;
        pick_total = candidate.total;
      }
      evaluator.Revert();
    }
    if (pick < 0 || pick_total >= total) continue;
    std::optional<ScheduleEdit> edit = GatherPartialsAt(ctx, evaluator.schedule(), x, sum, pick);
    const Candidate candidate = evaluator.Propose(std::move(*edit));
    evaluator.Commit();
    total = candidate.total;
  }
  return evaluator.schedule();
}

}  // namespace annealer
