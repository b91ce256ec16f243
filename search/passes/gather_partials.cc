#include "search/passes/gather_partials.h"

#include <algorithm>
#include <map>
#include <vector>

#include "eval/cost/incremental.h"
#include "search/passes/gather_strays.h"

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

// `next` (an edit of `s`) with the retain sets of `s` given back to every subgraph outside
// [lo, x] of `s` that `next` holds with the same ops: the edit's repair drops a retention where a
// later subgraph loads the tensor from slow memory, which a served loader (a producer run again
// for it, ServeLoadsByRecompute) needs all the same.
namespace {

Schedule WithRetainsBack(const Schedule& s, int lo, int x, Schedule next) {
  std::map<std::vector<OpId>, const std::vector<TensorId>*> kept;
  for (int j = 0; j < static_cast<int>(s.subgraphs.size()); ++j) {
    if (j < lo || j > x) kept.emplace(s.subgraphs[j].ops, &s.subgraphs[j].retain);
  }
  for (Subgraph& sg : next.subgraphs) {
    const auto it = kept.find(sg.ops);
    if (it != kept.end()) sg.retain = *it->second;
  }
  return next;
}

}  // namespace

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
  IncrementalEvaluator whole(problem, pricer.cache());
  Schedule best = start;
  Latency total = current.total;
  for (OpId sum : sums) {
    if (stop && stop()) break;
    // The sum's home: the one subgraph that runs it (a sum run twice is left alone).
    int x = -1;
    bool twice = false;
    for (int j = 0; j < static_cast<int>(best.subgraphs.size()); ++j) {
      const std::vector<OpId>& ops = best.subgraphs[j].ops;
      if (std::find(ops.begin(), ops.end(), sum) == ops.end()) continue;
      twice = x >= 0;
      x = j;
    }
    if (x < 0 || twice) continue;
    int lo = x;
    for (OpId op : PartialProducts(problem, sum)) {
      for (int j = std::max(0, x - kPartialWindow); j < x; ++j) {
        const std::vector<OpId>& ops = best.subgraphs[j].ops;
        if (std::find(ops.begin(), ops.end(), op) != ops.end()) lo = std::min(lo, j);
      }
    }
    // Each way of retaining, as the edit's repair left the retentions outside the span (priced
    // by the evaluator) and with them given back where that differs (priced whole); the lowest
    // valid one is kept where it lowers the total.
    std::optional<Schedule> pick;
    Latency pick_total = total;
    for (int retain_next = 0; retain_next < 2; ++retain_next) {
      std::optional<ScheduleEdit> edit = GatherPartialsAt(ctx, best, x, sum, retain_next);
      if (!edit) continue;
      const Candidate plain = evaluator.Propose(*edit);
      evaluator.Revert();
      Schedule next = ApplyEdit(best, *edit);
      if (plain.valid && plain.total < pick_total) {
        pick_total = plain.total;
        pick = next;
      }
      Schedule back = WithRetainsBack(best, lo, x, next);
      if (back == next) continue;
      const Candidate c = whole.Reset(back);
      if (c.valid && c.total < pick_total) {
        pick_total = c.total;
        pick = std::move(back);
      }
    }
    if (!pick) continue;
    best = std::move(*pick);
    total = pick_total;
    evaluator.Reset(best);
  }
  return best;
}

}  // namespace annealer
