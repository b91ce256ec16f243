#include "search/passes/lone_taps.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "eval/cost/incremental.h"
#include "search/moves/move_kit.h"
#include "search/moves/moves.h"
#include "search/passes/gather_partials.h"

namespace annealer {

std::vector<std::vector<OpId>> TapsBySharedLhs(const Problem& problem, OpId sum) {
  std::vector<std::vector<OpId>> groups;
  std::vector<TensorId> lhs;
  for (OpId tap : PartialProducts(problem, sum)) {
    const Op& op = problem.ops[tap];
    if (op.inputs.empty()) continue;
    const TensorId t = op.inputs[0];
    const OpId maker = problem.producer[t];
    if (maker == kNoOp || problem.ops[maker].kind != OpKind::Pointwise) continue;
    const auto it = std::find(lhs.begin(), lhs.end(), t);
    if (it == lhs.end()) {
      lhs.push_back(t);
      groups.push_back({tap});
    } else {
      groups[it - lhs.begin()].push_back(tap);
    }
  }
  std::erase_if(groups, [](const std::vector<OpId>& g) { return g.size() < 2; });
  return groups;
}

namespace {

// The edit of `s` that puts the lone taps at subgraphs `at` (ascending) into runs of q, each run
// [maker, its taps], where at[0] was, followed by the other subgraphs of [at[0], at.back()] in
// order. With `home` >= 0 (the one subgraph before at[0] that runs `maker`, whose output then
// has no reader left outside the runs) `maker` leaves it as well: the subgraph goes when it held
// `maker` alone, else it is fitted again without it. Each kept subgraph's retain set is cut to
// what its new next subgraph reads. nullopt when a subgraph has no valid fit.
std::optional<ScheduleEdit> GroupEdit(const Problem& problem, const SubgraphPricer& pricer,
                                      const std::vector<int>& rank, const Schedule& s, const std::vector<int>& at,
                                      OpId maker, int q, int home, const std::function<bool()>& stop) {
  static const std::vector<TensorId> kNone;
  ScheduleEdit edit;
  edit.begin = home >= 0 ? home : at.front();
  edit.end = at.back() + 1;
  std::vector<char> fixed;  // per replacement subgraph: whether its retain set stays as fitted
  for (int j = edit.begin; j < at.front(); ++j) {
    if (j != home) {
      edit.replacement.push_back(s.subgraphs[j]);
      fixed.push_back(0);
      continue;
    }
    std::vector<OpId> ops = s.subgraphs[j].ops;
    std::erase(ops, maker);
    if (ops.empty()) continue;
    auto fit = FitSubgraph(pricer, ops, move_kit::RetainedInto(s, j), kNone, &s.subgraphs[j], false, stop);
    if (!fit) return std::nullopt;
    edit.replacement.push_back(std::move(fit->subgraph));
    fixed.push_back(0);
  }
  const int n = static_cast<int>(at.size());
  for (int first = 0; first < n; first += q) {
    std::vector<OpId> ops{maker};
    for (int j = first; j < std::min(n, first + q); ++j) ops.push_back(s.subgraphs[at[j]].ops[0]);
    // The first run is retained into by what now comes before it.
    const std::vector<TensorId>& retained_in =
        first > 0                        ? kNone
        : !edit.replacement.empty()      ? edit.replacement.back().retain
                                         : move_kit::RetainedInto(s, edit.begin);
    auto fit = FitSubgraph(pricer, SortTopologically(rank, std::move(ops)), retained_in, kNone,
                           &s.subgraphs[at[first]], false, stop);
    if (!fit) return std::nullopt;
    edit.replacement.push_back(std::move(fit->subgraph));
    fixed.push_back(1);
  }
  int next_tap = 0;
  for (int j = at.front(); j <= at.back(); ++j) {
    if (next_tap < n && at[next_tap] == j) {
      ++next_tap;
      continue;
    }
    edit.replacement.push_back(s.subgraphs[j]);
    fixed.push_back(0);
  }
  // A retention meant for a subgraph that moved away or changed is dropped.
  for (std::size_t r = 0; r < edit.replacement.size(); ++r) {
    if (fixed[r]) continue;
    const std::vector<OpId>* next_ops = r + 1 < edit.replacement.size() ? &edit.replacement[r + 1].ops
                                        : edit.end < static_cast<int>(s.subgraphs.size()) ? &s.subgraphs[edit.end].ops
                                                                                          : nullptr;
    Subgraph& sg = edit.replacement[r];
    sg.retain = UsefulRetain(problem, sg.ops, sg.retain, next_ops);
  }
  return edit;
}

}  // namespace

Schedule GroupLoneTaps(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                       const std::function<bool()>& stop) {
  if (!MergeReadersApplies(problem) || start.subgraphs.size() < 2) return start;
  std::vector<std::pair<OpId, std::vector<std::vector<OpId>>>> sums;
  for (OpId op = 0; op < static_cast<OpId>(problem.ops.size()); ++op) {
    auto groups = TapsBySharedLhs(problem, op);
    if (!groups.empty()) sums.emplace_back(op, std::move(groups));
  }
  if (sums.empty()) return start;
  const std::vector<int> rank = TopologicalRanks(problem);
  IncrementalEvaluator evaluator(problem, pricer.cache());
  Candidate current = evaluator.Reset(start);
  if (!current.valid) return start;
  // Where each op sits alone in a subgraph (-1: nowhere alone, or also elsewhere); refreshed
  // after each commit.
  std::vector<int> alone(problem.ops.size(), -1);
  auto locate = [&] {
    std::fill(alone.begin(), alone.end(), -1);
    std::vector<int> seen(problem.ops.size(), 0);
    const Schedule& s = evaluator.schedule();
    for (int j = 0; j < static_cast<int>(s.subgraphs.size()); ++j) {
      for (OpId op : s.subgraphs[j].ops) ++seen[op];
      if (s.subgraphs[j].ops.size() == 1) alone[s.subgraphs[j].ops[0]] = j;
    }
    for (OpId op = 0; op < static_cast<OpId>(problem.ops.size()); ++op) {
      if (seen[op] != 1) alone[op] = -1;
    }
  };
  locate();
  for (const auto& [sum, groups] : sums) {
    for (const std::vector<OpId>& taps : groups) {
      if (stop && stop()) return evaluator.schedule();
      std::vector<int> at;
      for (OpId tap : taps) {
        if (alone[tap] >= 0) at.push_back(alone[tap]);
      }
      if (at.size() < 2) continue;
      std::sort(at.begin(), at.end());
      const TensorId lhs = problem.ops[taps[0]].inputs[0];
      const OpId maker = problem.producer[lhs];
      const Schedule& s = evaluator.schedule();
      // Where every reader of the LHS is one of these taps, the one subgraph before them that
      // runs its producer may drop it: nothing reads what it wrote any more.
      int home = -1;
      if (at.size() == problem.consumers[lhs].size()) {
        int count = 0;
        for (int j = 0; j < static_cast<int>(s.subgraphs.size()); ++j) {
          const std::vector<OpId>& ops = s.subgraphs[j].ops;
          if (std::find(ops.begin(), ops.end(), maker) == ops.end()) continue;
          ++count;
          home = j;
        }
        if (count != 1 || home >= at.front()) home = -1;
      }
      std::optional<ScheduleEdit> pick;
      Latency pick_total = current.total;
      for (int drop = home >= 0 ? 1 : 0; drop >= 0; --drop) {
        for (int q = 2; q <= static_cast<int>(at.size()); ++q) {
          if (stop && stop()) break;
          std::optional<ScheduleEdit> edit =
              GroupEdit(problem, pricer, rank, s, at, maker, q, drop ? home : -1, stop);
          if (!edit) break;
          const Candidate& c = evaluator.Propose(*edit);
          const bool lower = c.valid && c.total < pick_total;
          if (lower) pick_total = c.total;
          evaluator.Revert();
          if (lower) pick = std::move(edit);
        }
      }
      if (!pick) continue;
      if (evaluator.CommitIfLower(std::move(*pick), current)) locate();
    }
  }
  return evaluator.schedule();
}

}  // namespace annealer
