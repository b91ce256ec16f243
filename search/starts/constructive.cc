#include "search/starts/constructive.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "eval/cost/incremental.h"
#include "search/moves/moves.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"

namespace annealer {

namespace {

const std::vector<TensorId> kNothing;

// Fits every group as a subgraph with no retention; nullopt-free because each group was fitted
// before (falls back to the group's own fit).
Schedule Assemble(const SubgraphPricer& pricer, const std::vector<std::vector<OpId>>& groups,
                  const std::function<bool()>& stop) {
  Schedule schedule;
  for (const auto& ops : groups) {
    auto fit = FitSubgraph(pricer, ops, kNothing, kNothing, nullptr, false, stop);
    if (!fit) {
      // Cannot happen for groups built from fitting pieces; keep the ops so the caller's
      // evaluator rejects the schedule instead of silently losing ops.
      Subgraph sg;
      sg.ops = ops;
      schedule.subgraphs.push_back(sg);
      continue;
    }
    schedule.subgraphs.push_back(std::move(fit->subgraph));
  }
  return schedule;
}

// A merge GreedyFusion considers: subgraph i (a producer) into subgraph j (a consumer), i < j,
// and the latency it saves as the two subgraphs price alone.
struct FusionOption {
  Latency estimate;
  int i, j;
};

// kGreedyBatchFrom (constructive.h): from that many subgraphs on, a round of GreedyFusion
// commits every merge of its list that still pays on the whole schedule (MergeBatch) instead of
// the best one. One merge per round costs a scan of every pair per merge, O(n^2) on a graph of
// n ops, and it stops as soon as its six best estimates fail on the whole schedule: on
// ResNeXt-50 (7,843 ops, tpu-v1) it made 29 merges (33.2 M) where the batched rounds make 4,384
// (15.5 M, in 1.3 s). Below it (every contest problem) the rounds are those of before.
// A merge of i into j moves the subgraphs between them one place up. Within this many
// positions no later merge of the round may touch them (the next round re-estimates them on
// the merged schedule); a longer merge blocks only its two ends, or one producer read far
// ahead would hold back every merge in between. Blocking the whole range of every merge cost
// MaxViT-T (9,985 ops) 3.3 s instead of 0.8 s for the same start; blocking only the ends left
// ResNeXt-50 on tpu-v1 at 16.2 M instead of 15.5 M (and took 3.8 s instead of 1.3 s).
constexpr int kGreedyBatchSpan = 64;

// Proposes to the evaluator the merge of subgraphs i and j (i < j) of its committed schedule:
// the merged ops fitted in j's place, the subgraphs between kept before it. Null (nothing
// proposed) when no granularity fits the merged ops.
const Candidate* ProposeMerge(const SubgraphPricer& pricer, const std::vector<int>& rank,
                              IncrementalEvaluator& evaluator, int i, int j, const std::function<bool()>& stop) {
  const Schedule& s = evaluator.schedule();
  std::vector<OpId> ops = s.subgraphs[i].ops;
  ops.insert(ops.end(), s.subgraphs[j].ops.begin(), s.subgraphs[j].ops.end());
  ops = SortTopologically(rank, ops);
  // The subgraphs between i and j stay as they are: a kept run, which the evaluator reads in
  // place (eval/cost/incremental.h) where copying it cost O(j - i) per proposal (DenseNet-121:
  // merges across hundreds of subgraphs).
  ScheduleEdit edit;
  edit.begin = i;
  edit.end = j + 1;
  edit.kept_begin = i + 1;
  edit.kept_end = j;
  const std::vector<TensorId>& retained_in = j > i + 1 ? s.subgraphs[j - 1].retain : (i > 0 ? s.subgraphs[i - 1].retain : kNothing);
  auto fit = FitSubgraph(pricer, ops, retained_in, kNothing, &s.subgraphs[j], false, stop);
  if (!fit) return nullptr;
  edit.replacement.push_back(fit->subgraph);
  return &evaluator.Propose(edit);
}

// One batched round (see kGreedyBatchFrom): `options` sorted by estimate, indices into the
// evaluator's committed schedule at the start of the round. Each option that no merge of the
// round has blocked (kGreedyBatchSpan) is proposed on the current schedule, at its subgraphs'
// current positions, and committed when the whole schedule's total falls. Returns the merges
// committed.
int MergeBatch(const SubgraphPricer& pricer, const std::vector<int>& rank,
               const std::vector<FusionOption>& options, IncrementalEvaluator& evaluator, Candidate& current,
               const std::function<bool()>& stop) {
  const int n = static_cast<int>(evaluator.schedule().subgraphs.size());
  // at[x]: the current position of the round's subgraph x; a merge of i into j removes i and
  // moves every later subgraph one place up, the merged subgraph taking j's place.
  std::vector<int> at(n);
  for (int x = 0; x < n; ++x) at[x] = x;
  std::vector<char> blocked(n, 0);
  int merges = 0;
  for (const FusionOption& option : options) {
    if (stop && stop()) break;
    if (blocked[option.i] || blocked[option.j]) continue;
    const bool near = option.j - option.i <= kGreedyBatchSpan;
    if (near && std::find(blocked.begin() + option.i, blocked.begin() + option.j, 1) != blocked.begin() + option.j) {
      continue;
    }
    const Candidate* candidate = ProposeMerge(pricer, rank, evaluator, at[option.i], at[option.j], stop);
    if (!candidate) continue;
    if (candidate->valid && candidate->total < current.total) {
      evaluator.Commit();
      current = *candidate;
      blocked[option.i] = blocked[option.j] = 1;
      if (near) std::fill(blocked.begin() + option.i, blocked.begin() + option.j + 1, 1);
      for (int x = option.i + 1; x < n; ++x) --at[x];
      ++merges;
    } else {
      evaluator.Revert();
    }
  }
  return merges;
}

}  // namespace

std::vector<std::vector<OpId>> DepthFirstOrder(const Problem& problem,
                                               std::vector<std::vector<OpId>> groups) {
  const std::vector<int> rank = TopologicalRanks(problem);
  const int n = static_cast<int>(groups.size());
  // Which group produces each tensor (first one wins; recomputed copies are not expected here).
  std::map<TensorId, int> maker;
  for (int g = 0; g < n; ++g) {
    for (TensorId t : ProducedTensors(problem, groups[g])) maker.emplace(t, g);
  }
  std::vector<std::set<int>> needs(n);
  for (int g = 0; g < n; ++g) {
    for (TensorId t : BoundaryInputs(problem, groups[g])) {
      auto it = maker.find(t);
      if (it != maker.end() && it->second != g) needs[g].insert(it->second);
    }
  }
  auto min_rank = [&](int g) {
    int r = std::numeric_limits<int>::max();
    for (OpId op : groups[g]) r = std::min(r, rank[op]);
    return r;
  };
  std::vector<char> done(n, 0);
  std::vector<std::vector<OpId>> order;
  int last = -1;
  for (int emitted = 0; emitted < n; ++emitted) {
    int pick = -1;
    bool pick_follows = false;
    for (int g = 0; g < n; ++g) {
      if (done[g]) continue;
      bool ready = true;
      for (int d : needs[g]) ready &= done[d] != 0;
      if (!ready) continue;
      const bool follows = last >= 0 && needs[g].count(last) > 0;
      if (pick < 0 || (follows && !pick_follows) ||
          (follows == pick_follows && min_rank(g) < min_rank(pick))) {
        pick = g;
        pick_follows = follows;
      }
    }
    if (pick < 0) break;  // a cycle between groups: leave the rest out, the caller rejects
    done[pick] = 1;
    last = pick;
    order.push_back(groups[pick]);
  }
  return order;
}

Schedule GreedyFusion(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                      const std::function<bool()>& stop, int batch_from) {
  const std::vector<int> rank = TopologicalRanks(problem);
  IncrementalEvaluator evaluator(problem, pricer.cache());
  Candidate current = evaluator.Reset(start);
  if (!current.valid) return start;
  // The fitted latency of a merged pair, by (merged ops, retained-in set, start of the fit);
  // FitSubgraph is a function of these, so a remembered fit is the fit.
  struct KeyHash {
    size_t operator()(const std::vector<int64_t>& key) const {
      uint64_t h = 1469598103934665603ull;
      for (int64_t v : key) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
      return static_cast<size_t>(h);
    }
  };
  std::unordered_map<std::vector<int64_t>, std::optional<Latency>, KeyHash> fitted;
  std::vector<std::vector<int>> holders;
  std::vector<int64_t> key;
  while (!(stop && stop())) {
    const Schedule& s = evaluator.schedule();
    const auto& results = evaluator.subgraph_results();
    using Option = FusionOption;
    std::vector<Option> options;
    const int n = static_cast<int>(s.subgraphs.size());
    // holders[op]: the subgraphs holding op, ascending (several when it is recomputed); scanning
    // back from each reader instead cost O(n) per input on a long schedule.
    SubgraphsHoldingInto(s, problem.ops.size(), holders);
    for (int j = 1; j < n; ++j) {
      std::set<int> producers;
      for (TensorId t : BoundaryInputs(problem, s.subgraphs[j].ops)) {
        const OpId p = problem.producer[t];
        if (p == kNoOp) continue;
        // The nearest subgraph before j that holds the producer.
        const auto after = std::lower_bound(holders[p].begin(), holders[p].end(), j);
        if (after != holders[p].begin()) producers.insert(*(after - 1));
      }
      for (int i : producers) {
        std::vector<OpId> ops = s.subgraphs[i].ops;
        ops.insert(ops.end(), s.subgraphs[j].ops.begin(), s.subgraphs[j].ops.end());
        ops = SortTopologically(rank, ops);
        const std::vector<TensorId>& retained_in = j > 0 ? s.subgraphs[j - 1].retain : kNothing;
        const std::vector<TensorId>& context = i == j - 1 && i > 0 ? s.subgraphs[i - 1].retain : retained_in;
        // Most pairs are the same from one round to the next: their fit is remembered.
        const Subgraph& hint = s.subgraphs[j];
        key.assign(ops.begin(), ops.end());
        key.push_back(-1);
        key.insert(key.end(), context.begin(), context.end());
        key.insert(key.end(), {-2, hint.granularity.w, hint.granularity.h, hint.granularity.k});
        if (hint.traversal) {
          key.push_back(-3);
          key.insert(key.end(), hint.traversal->begin(), hint.traversal->end());
        }
        auto known = fitted.find(key);
        if (known == fitted.end()) {
          auto fit = FitSubgraph(pricer, ops, context, kNothing, &hint, false, stop);
          if (stop && stop()) break;  // a cut fit is not the fit: do not remember it
          known = fitted.emplace(key, fit ? std::optional<Latency>(fit->latency) : std::nullopt).first;
        }
        if (!known->second) continue;
        const Latency estimate = results[i].report.latency + results[j].report.latency - *known->second;
        if (estimate > 0) options.push_back({estimate, i, j});
      }
    }
    std::stable_sort(options.begin(), options.end(),
                     [](const Option& a, const Option& b) { return a.estimate > b.estimate; });
    if (n >= batch_from) {
      if (stop && stop()) break;
      const int merged_now = MergeBatch(pricer, rank, options, evaluator, current, stop);
      if (merged_now == 0) break;
      continue;
    }
    bool merged = false;
    for (size_t o = 0; o < options.size() && o < 6 && !merged; ++o) {
      const Candidate* candidate = ProposeMerge(pricer, rank, evaluator, options[o].i, options[o].j, stop);
      if (!candidate) continue;
      if (candidate->valid && candidate->total < current.total) {
        evaluator.Commit();
        current = *candidate;
        merged = true;
      } else {
        evaluator.Revert();
      }
    }
    if (!merged) break;
  }
  return evaluator.schedule();
}

Schedule MergeReaderGroups(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                           const std::function<bool()>& stop, int passes) {
  const std::vector<int> rank = TopologicalRanks(problem);
  IncrementalEvaluator evaluator(problem, pricer.cache());
  Candidate current = evaluator.Reset(start);
  if (!current.valid) return start;
  const MoveContext context{problem, rank, pricer, stop, &evaluator, true, false};
  std::vector<TensorId> inputs;
  for (int pass = 0; pass < passes; ++pass) {
    bool committed = false;
    for (int j = 0; j < static_cast<int>(evaluator.schedule().subgraphs.size()); ++j) {
      if (stop && stop()) return evaluator.schedule();
      // The tensors j loads, and those it makes that ops elsewhere read too: other subgraphs
      // that recompute their producer (an earlier merge, or a fused elementwise op whose output
      // feeds many) each load its inputs again, and the move takes them in as well.
      const std::vector<OpId>& ops = evaluator.schedule().subgraphs[j].ops;
      inputs = BoundaryInputs(problem, ops);
      for (OpId op : ops) {
        const TensorId t = problem.ops[op].output;
        if (problem.consumers[t].size() < 3) continue;
        const bool outside = std::any_of(problem.consumers[t].begin(), problem.consumers[t].end(),
                                         [&](OpId c) { return std::find(ops.begin(), ops.end(), c) == ops.end(); });
        if (outside) inputs.push_back(t);
      }
      for (TensorId t : inputs) {
        const Schedule& s = evaluator.schedule();
        if (!MergeReadersCandidate(context, s, j, t)) continue;
        std::optional<ScheduleEdit> edit = MergeReadersAt(context, s, j, t);
        if (!edit) continue;
        const Candidate& candidate = evaluator.Propose(std::move(*edit));
        if (candidate.valid && candidate.total < current.total) {
          evaluator.Commit();
          current = candidate;
          committed = true;
          // Position j now holds another subgraph (the merged one, or the one after it when
          // readers before j moved into it): it is looked at again.
          --j;
          break;
        }
        evaluator.Revert();
      }
    }
    if (!committed) break;
  }
  return evaluator.schedule();
}

Schedule GatherTapGroups(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                         const std::function<bool()>& stop, bool partial_edge_tiles) {
  static constexpr int kMinTaps = 3;
  const std::vector<int> rank = TopologicalRanks(problem);
  IncrementalEvaluator evaluator(problem, pricer.cache());
  Candidate current = evaluator.Reset(start);
  if (!current.valid) return start;
  const MoveContext context{problem, rank, pricer, stop, &evaluator, true, false};
  // The loaded MatMuls of reduction length K that j's Pointwise ops read.
  auto loaded_taps = [&](const Schedule& s, int j, Elements K) {
    const std::vector<OpId>& ops = s.subgraphs[j].ops;
    std::vector<OpId> taps;
    for (OpId op : ops) {
      if (problem.ops[op].kind != OpKind::Pointwise) continue;
      for (TensorId t : problem.ops[op].inputs) {
        const OpId p = problem.producer[t];
        if (p == kNoOp || problem.ops[p].kind != OpKind::MatMul || problem.ReductionLength(p) != K) continue;
        if (std::find(ops.begin(), ops.end(), p) != ops.end()) continue;
        if (std::find(taps.begin(), taps.end(), p) == taps.end()) taps.push_back(p);
      }
    }
    return taps;
  };
  for (int j = 0; j < static_cast<int>(evaluator.schedule().subgraphs.size()); ++j) {
    if (stop && stop()) break;
    const std::vector<Elements> lengths = GatherKLoopLengths(context, evaluator.schedule(), j);
    for (Elements K : lengths) {
      const Schedule& s = evaluator.schedule();
      if (static_cast<int>(loaded_taps(s, j, K).size()) < kMinTaps) continue;
      // The subgraph keeps its last op (a sum is after its taps in every topological order).
      const OpId anchor = s.subgraphs[j].ops.back();
      std::optional<ScheduleEdit> edit = GatherKLoopAt(context, s, j, K);
      if (!edit) continue;
      const Schedule before = s;
      if (!evaluator.Propose(std::move(*edit)).valid) {
        evaluator.Revert();
        continue;
      }
      evaluator.Commit();
      Schedule trial = evaluator.schedule();
      int at = -1;
      for (int m = 0; m < static_cast<int>(trial.subgraphs.size()) && at < 0; ++m) {
        const std::vector<OpId>& ops = trial.subgraphs[m].ops;
        if (std::find(ops.begin(), ops.end(), anchor) != ops.end()) at = m;
      }
      if (at >= 0) trial = Polish(problem, pricer, trial, stop, partial_edge_tiles, at, at + 1);
      const Candidate tried = evaluator.Reset(trial);
      if (tried.valid && tried.total < current.total) {
        current = tried;
        // The taps left earlier subgraphs, so the gathered one may sit before j now: go on
        // after it (its other lengths are another group's).
        if (at >= 0) j = at;
        break;
      }
      current = evaluator.Reset(before);
    }
  }
  return evaluator.schedule();
}

Schedule RegroupReaderParts(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                            const std::function<bool()>& stop, std::size_t* cursor) {
  static constexpr int kJoins = 2;
  static constexpr int kGroups[] = {2, 3, 4, 5, 6, 8};
  const std::vector<TensorId> tensors = RegroupReaderTensors(problem);
  if (tensors.empty()) return start;
  const std::vector<int> rank = TopologicalRanks(problem);
  IncrementalEvaluator evaluator(problem, pricer.cache());
  Candidate current = evaluator.Reset(start);
  if (!current.valid) return start;
  const MoveContext context{problem, rank, pricer, stop, &evaluator, true, false};
  const std::size_t first = cursor ? *cursor % tensors.size() : 0;
  for (std::size_t done = 0; done < tensors.size(); ++done) {
    const TensorId t = tensors[(first + done) % tensors.size()];
    if (cursor) *cursor = (first + done) % tensors.size();
    // Every way tried on the same schedule; the best that lowers the total is committed.
    int best_join = -1, best_group = 0;
    Latency best_total = current.total;
    for (int join = 0; join < kJoins; ++join) {
      for (int group : kGroups) {
        if (stop && stop()) return evaluator.schedule();
        std::optional<ScheduleEdit> edit = RegroupReaderPartsAt(context, evaluator.schedule(), t, join, group);
        if (!edit) continue;
        const Candidate& candidate = evaluator.Propose(std::move(*edit));
        if (candidate.valid && candidate.total < best_total) {
          best_total = candidate.total;
          best_join = join;
          best_group = group;
        }
        evaluator.Revert();
      }
    }
    if (best_join < 0) continue;
    std::optional<ScheduleEdit> edit = RegroupReaderPartsAt(context, evaluator.schedule(), t, best_join, best_group);
    evaluator.CommitIfLower(std::move(*edit), current);
  }
  return evaluator.schedule();
}

Schedule PatternGrouping(const Problem& problem, const SubgraphPricer& pricer,
                         const std::function<bool()>& stop) {
  const std::vector<int> rank = TopologicalRanks(problem);
  std::vector<std::vector<OpId>> groups;
  std::vector<Latency> latency;
  std::vector<int> group_of(problem.ops.size(), -1);
  for (OpId op : problem.topological_order) {
    auto alone = FitSubgraph(pricer, {op}, kNothing, kNothing, nullptr, false, stop);
    const Latency alone_latency = alone ? alone->latency : std::numeric_limits<Latency>::infinity();
    // Candidate groups: those producing an input of this op. Joining is allowed only when
    // every other consumer of the joined tensors is already in the group or is this op, so the
    // group stays a clean chain / diamond / epilogue and nothing must come back out of it.
    int best_group = -1;
    Latency best_gain = 0;
    std::vector<OpId> best_ops;
    Latency best_latency = 0;
    std::set<int> seen;
    for (TensorId t : problem.ops[op].inputs) {
      const OpId p = problem.producer[t];
      if (p == kNoOp) continue;
      const int g = group_of[p];
      if (g < 0 || !seen.insert(g).second) continue;
      std::vector<OpId> ops = groups[g];
      ops.push_back(op);
      // Pull in another producer group too when the op joins two branches (diamond).
      std::vector<int> others;
      for (TensorId u : problem.ops[op].inputs) {
        const OpId q = problem.producer[u];
        if (q != kNoOp && group_of[q] >= 0 && group_of[q] != g) others.push_back(group_of[q]);
      }
      ops = SortTopologically(rank, ops);
      // Joining one branch of a diamond alone would leave the group and come back: only the
      // merge of both branches (below) is considered then.
      std::optional<FitResult> fit;
      if (!LeavesAndReturns(problem, rank, ops)) {
        fit = FitSubgraph(pricer, ops, kNothing, kNothing, nullptr, false, stop);
      }
      const Latency gain = fit ? latency[g] + alone_latency - fit->latency : 0;
      if (fit && gain > best_gain) {
        best_gain = gain;
        best_group = g;
        best_ops = fit->subgraph.ops;
        best_latency = fit->latency;
      }
      for (int h : others) {
        std::vector<OpId> both = ops;
        both.insert(both.end(), groups[h].begin(), groups[h].end());
        both = SortTopologically(rank, both);
        if (LeavesAndReturns(problem, rank, both)) continue;
        auto fit2 = FitSubgraph(pricer, both, kNothing, kNothing, nullptr, false, stop);
        if (!fit2) continue;
        const Latency gain2 = latency[g] + latency[h] + alone_latency - fit2->latency;
        if (gain2 > best_gain) {
          best_gain = gain2;
          best_group = g;
          best_ops = fit2->subgraph.ops;
          best_latency = fit2->latency;
        }
      }
    }
    if (best_group >= 0) {
      // Absorb every group whose ops were merged in.
      for (OpId member : best_ops) {
        const int h = group_of[member];
        if (h >= 0 && h != best_group) {
          for (OpId moved : groups[h]) group_of[moved] = best_group;
          groups[h].clear();
        }
      }
      groups[best_group] = best_ops;
      latency[best_group] = best_latency;
      group_of[op] = best_group;
    } else {
      group_of[op] = static_cast<int>(groups.size());
      groups.push_back({op});
      latency.push_back(alone_latency);
    }
  }
  std::vector<std::vector<OpId>> nonempty;
  for (auto& g : groups) {
    if (!g.empty()) nonempty.push_back(g);
  }
  return Assemble(pricer, DepthFirstOrder(problem, nonempty), stop);
}

Schedule Polish(const Problem& problem, const SubgraphPricer& pricer, const Schedule& schedule,
                const std::function<bool()>& stop, bool partial_edge_tiles, int begin, int end) {
  Schedule s = schedule;
  const int total = static_cast<int>(s.subgraphs.size());
  begin = std::clamp(begin, 0, total);
  end = end < 0 ? total : std::clamp(end, begin, total);
  // The DP below runs on the window's subgraphs, indexed from 0.
  const int n = end - begin;
  if (n == 0) return s;
  auto sub = [&](int i) -> const Subgraph& { return s.subgraphs[begin + i]; };
  // The last subgraph loading each tensor, over the whole schedule.
  std::vector<int> last_use(problem.tensors.size(), -1);
  {
    std::vector<TensorId> inputs, sinks;
    for (int m = 0; m < total; ++m) {
      inputs.clear();
      sinks.clear();
      AppendOpsFacts(problem, s.subgraphs[m].ops, inputs, sinks);
      for (TensorId t : inputs) last_use[t] = m;
    }
  }
  // Retention options per boundary i (between subgraph i and i+1); the window's last subgraph
  // keeps its retain set when a subgraph follows the window.
  std::vector<std::vector<std::vector<TensorId>>> options(n);
  for (int i = 0; i < n; ++i) {
    if (i + 1 == n) {
      options[i] = {end < total ? sub(i).retain : std::vector<TensorId>{}};
      continue;
    }
    const std::vector<TensorId> produced = ProducedTensors(problem, sub(i).ops);
    std::vector<TensorId> consumed_inside;
    for (OpId op : sub(i).ops) {
      for (TensorId t : problem.ops[op].inputs) consumed_inside.push_back(t);
    }
    std::vector<TensorId> optional_set, mandatory;
    for (TensorId t : BoundaryInputs(problem, sub(i + 1).ops)) {
      if (!std::binary_search(produced.begin(), produced.end(), t) || problem.IsGraphOutput(t)) continue;
      // A Layout op reading it needs it in slow memory (spec L1): retaining it would not serve.
      bool layout_reader = false;
      for (OpId op : sub(i + 1).ops) {
        layout_reader = layout_reader || (problem.IsLayout(op) && std::find(problem.ops[op].inputs.begin(), problem.ops[op].inputs.end(), t) != problem.ops[op].inputs.end());
      }
      if (layout_reader) continue;
      const bool needed_later = last_use[t] >= begin + i + 2;
      const bool ephemeral = std::find(consumed_inside.begin(), consumed_inside.end(), t) != consumed_inside.end();
      const bool currently = std::find(sub(i).retain.begin(), sub(i).retain.end(), t) != sub(i).retain.end();
      if (ephemeral && currently) {
        mandatory.push_back(t);
      } else if (!needed_later) {
        optional_set.push_back(t);
      }
    }
    if (optional_set.size() > 3) optional_set.resize(3);
    const int subsets = 1 << optional_set.size();
    for (int mask = 0; mask < subsets; ++mask) {
      std::vector<TensorId> r = mandatory;
      for (size_t b = 0; b < optional_set.size(); ++b) {
        if (mask & (1 << b)) r.push_back(optional_set[b]);
      }
      std::sort(r.begin(), r.end());
      options[i].push_back(r);
    }
  }
  const std::vector<TensorId>& window_in = begin > 0 ? s.subgraphs[begin - 1].retain : kNothing;
  // cost[i][a][b]: subgraph i with retained-in option a (of i-1) and retain option b (of i).
  constexpr Latency kInf = std::numeric_limits<Latency>::infinity();
  std::vector<std::vector<Latency>> best(n);      // best[i][b]: min cost of 0..i with option b at i
  std::vector<std::vector<int>> from(n);
  std::vector<std::vector<std::vector<Subgraph>>> chosen(n);  // chosen[i][a * nb + b]
  for (int i = 0; i < n; ++i) {
    const int na = i == 0 ? 1 : static_cast<int>(options[i - 1].size());
    const int nb = static_cast<int>(options[i].size());
    best[i].assign(nb, kInf);
    from[i].assign(nb, -1);
    chosen[i].assign(1, std::vector<Subgraph>(na * nb));
    for (int a = 0; a < na; ++a) {
      const Latency before = i == 0 ? 0 : best[i - 1][a];
      if (before == kInf) continue;
      const std::vector<TensorId>& retained_in = i == 0 ? window_in : options[i - 1][a];
      for (int b = 0; b < nb; ++b) {
        if (stop && stop()) return schedule;
        auto fit = FitSubgraph(pricer, sub(i).ops, retained_in, options[i][b], &sub(i), true, stop,
                               partial_edge_tiles);
        if (!fit) continue;
        chosen[i][0][a * nb + b] = fit->subgraph;
        if (before + fit->latency < best[i][b]) {
          best[i][b] = before + fit->latency;
          from[i][b] = a;
        }
      }
    }
  }
  int b = 0;
  if (best[n - 1][b] == kInf) return schedule;
  for (int i = n - 1; i >= 0; --i) {
    const int a = i == 0 ? 0 : from[i][b];
    const int nb = static_cast<int>(options[i].size());
    s.subgraphs[begin + i] = chosen[i][0][a * nb + b];
    b = a;
  }
  return s;
}

}  // namespace annealer
