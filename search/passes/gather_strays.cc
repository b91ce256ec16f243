#include "search/passes/gather_strays.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "eval/cost/incremental.h"
#include "search/moves/move_kit.h"

namespace annealer {
namespace {

// How far from x a stray may sit: the merge-readers move's reach.
constexpr int kStrayWindow = 64;
// Rounds of refinement: three tell a head's query, key and value projections apart (their
// consumers differ one and two steps on); more separate nothing further on the transformers.
constexpr int kRefineRounds = 6;

}  // namespace

std::vector<int> SiblingClasses(const Problem& problem) {
  const int n = static_cast<int>(problem.ops.size());
  std::vector<int> depth(n, 0);
  for (OpId op : problem.topological_order) {
    for (TensorId t : problem.ops[op].inputs) {
      const OpId p = problem.producer[t];
      if (p != kNoOp) depth[op] = std::max(depth[op], depth[p] + 1);
    }
  }
  std::vector<int> cls(n, 0);
  auto assign = [&](const std::vector<std::vector<int64_t>>& keys) {
    std::map<std::vector<int64_t>, int> ids;
    for (int op = 0; op < n; ++op) cls[op] = ids.emplace(keys[op], static_cast<int>(ids.size())).first->second;
    return static_cast<int>(ids.size());
  };
  std::vector<std::vector<int64_t>> keys(n);
  for (int op = 0; op < n; ++op) {
    const Op& o = problem.ops[op];
    const Tensor& out = problem.tensors[o.output];
    keys[op] = {static_cast<int64_t>(o.kind), problem.IsLayout(op), out.width, out.height, depth[op],
                static_cast<int64_t>(o.inputs.size())};
  }
  int count = assign(keys);
  for (int round = 0; round < kRefineRounds; ++round) {
    for (int op = 0; op < n; ++op) {
      const Op& o = problem.ops[op];
      std::vector<int64_t>& key = keys[op];
      key.assign(1, cls[op]);
      // A Pointwise op's inputs count as a set (a sum of six heads' projections reads each head
      // at another position); a MatMul's and a Layout op's by position.
      const bool ordered = o.kind != OpKind::Pointwise;
      std::vector<std::vector<int64_t>> inputs;
      for (TensorId t : o.inputs) {
        const OpId p = problem.producer[t];
        if (p == kNoOp) {
          inputs.push_back({-1, problem.tensors[t].width, problem.tensors[t].height});
        } else {
          inputs.push_back({-2, cls[p]});
        }
      }
      if (!ordered) std::sort(inputs.begin(), inputs.end());
      for (const auto& in : inputs) key.insert(key.end(), in.begin(), in.end());
      std::vector<std::pair<int, int>> readers;
      for (OpId c : problem.consumers[o.output]) {
        const auto& in = problem.ops[c].inputs;
        const bool by_position = problem.ops[c].kind != OpKind::Pointwise;
        for (size_t k = 0; k < in.size(); ++k) {
          if (in[k] == o.output) readers.emplace_back(cls[c], by_position ? static_cast<int>(k) : 0);
        }
      }
      std::sort(readers.begin(), readers.end());
      key.push_back(-3);
      for (const auto& [c, k] : readers) key.insert(key.end(), {c, k});
    }
    const int refined = assign(keys);
    if (refined == count) break;
    count = refined;
  }
  return cls;
}

std::optional<ScheduleEdit> GatherStraysAt(const MoveContext& ctx, const Schedule& s, int x,
                                           const std::vector<int>& classes, bool retain_next) {
  const Problem& problem = ctx.problem;
  const int n = static_cast<int>(s.subgraphs.size());
  const Subgraph& target = s.subgraphs[x];
  std::map<int, int> held;
  for (OpId op : target.ops) ++held[classes[op]];
  std::vector<char> in_target(problem.ops.size(), 0), stray(problem.ops.size(), 0);
  for (OpId op : target.ops) in_target[op] = 1;
  std::vector<OpId> strays;
  int lo = x, hi = x;
  for (int j = std::max(0, x - kStrayWindow); j < std::min(n, x + kStrayWindow + 1); ++j) {
    if (j == x) continue;
    for (OpId op : s.subgraphs[j].ops) {
      if (in_target[op]) continue;
      const auto it = held.find(classes[op]);
      if (it == held.end() || it->second < 2) continue;
      if (!stray[op]) strays.push_back(op);
      stray[op] = 1;
      lo = std::min(lo, j);
      hi = std::max(hi, j);
    }
  }
  if (strays.empty()) return std::nullopt;
  return GatherInto(ctx, s, x, lo, hi, strays, retain_next);
}

std::optional<ScheduleEdit> GatherInto(const MoveContext& ctx, const Schedule& s, int x, int lo, int hi,
                                       const std::vector<OpId>& strays, bool retain_next) {
  using namespace move_kit;
  const Problem& problem = ctx.problem;
  const Subgraph& target = s.subgraphs[x];
  std::vector<char> stray(problem.ops.size(), 0);
  for (OpId op : strays) stray[op] = 1;

  // The span's pieces in their original order: x with the strays, every other subgraph without
  // them (cut into its components), or kept as it is.
  std::vector<Piece> pieces;
  for (int j = lo; j <= hi; ++j) {
    const Subgraph& sg = s.subgraphs[j];
    if (j == x) {
      std::vector<OpId> ops = target.ops;
      ops.insert(ops.end(), strays.begin(), strays.end());
      pieces.push_back({SortTopologically(ctx.rank, std::move(ops)), target.retain, &target, true});
      continue;
    }
    std::vector<OpId> rest;
    for (OpId op : sg.ops) {
      if (!stray[op]) rest.push_back(op);
    }
    if (rest.size() == sg.ops.size()) {
      pieces.push_back(Kept(sg));
      continue;
    }
    if (rest.empty()) continue;
    std::vector<std::vector<OpId>> parts = Components(problem, rest);
    for (size_t p = 0; p < parts.size(); ++p) {
      Piece piece{SortTopologically(ctx.rank, std::move(parts[p])), {}, &sg, true};
      if (p + 1 == parts.size()) piece.retain = sg.retain;
      pieces.push_back(std::move(piece));
    }
  }

  // A piece waits for the piece that made each tensor it reads: the nearest before it that makes
  // it, or, where none before does, the first after it. What a subgraph before the span makes
  // (or the graph's inputs) constrains nothing here.
  const int count = static_cast<int>(pieces.size());
  std::vector<char> made_before(problem.tensors.size(), 0);
  for (int j = 0; j < lo; ++j) {
    for (OpId op : s.subgraphs[j].ops) made_before[problem.ops[op].output] = 1;
  }
  std::vector<std::vector<TensorId>> made(count);
  for (int a = 0; a < count; ++a) made[a] = ProducedTensors(problem, pieces[a].Ops());
  std::vector<std::vector<int>> after(count);
  std::vector<int> waiting(count, 0);
  for (int b = 0; b < count; ++b) {
    std::vector<int> from;
    for (TensorId t : BoundaryInputs(problem, pieces[b].Ops())) {
      if (problem.producer[t] == kNoOp || made_before[t]) continue;
      int pick = -1;
      for (int a = 0; a < count; ++a) {
        if (a == b || !std::binary_search(made[a].begin(), made[a].end(), t)) continue;
        if (a < b) {
          pick = a;
        } else if (pick < 0) {
          pick = a;
          break;
        }
      }
      if (pick >= 0 && std::find(from.begin(), from.end(), pick) == from.end()) from.push_back(pick);
    }
    for (int a : from) {
      after[a].push_back(b);
      ++waiting[b];
    }
  }
  const std::optional<std::vector<int>> order = OrderByLeastKey(after, std::move(waiting), [](int a) { return a; });
  if (!order) return std::nullopt;
  std::vector<Piece> ordered;
  ordered.reserve(count);
  for (int a : *order) ordered.push_back(std::move(pieces[a]));
  if (retain_next) {
    for (int k = 0; k + 1 < count; ++k) {
      Piece& piece = ordered[k];
      if (!piece.refit) continue;
      for (TensorId t : ProducedTensors(problem, piece.ops)) {
        if (!problem.IsGraphOutput(t) && AllConsumersIn(problem, t, ordered[k + 1].Ops())) piece.retain.push_back(t);
      }
      std::sort(piece.retain.begin(), piece.retain.end());
      piece.retain.erase(std::unique(piece.retain.begin(), piece.retain.end()), piece.retain.end());
    }
  }
  return Finish(ctx, s, lo, hi + 1, std::move(ordered));
}

Schedule GatherStrays(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                      const std::function<bool()>& stop) {
  if (!MergeReadersApplies(problem) || start.subgraphs.size() < 2) return start;
  const std::vector<int> classes = SiblingClasses(problem);
  const std::vector<int> rank = TopologicalRanks(problem);
  IncrementalEvaluator evaluator(problem, pricer.cache());
  Candidate current = evaluator.Reset(start);
  if (!current.valid) return start;
  const MoveContext ctx{problem, rank, pricer, stop, &evaluator, true, false};
  // Each gather is kept whenever it is valid, the lowest schedule met is the result: a head
  // gathered into the first half of a split layer leaves its other half with the output
  // projection, reading what the first now writes, until the second half takes it too (the GPT
  // decoder, tpu-v5e: +160 for the first gather on a 10-s schedule at 29,937.7; with both
  // layers' gathers the pass ends at 29,177.3).
  Schedule best = start;
  Latency best_total = current.total;
  for (int x = 0; x < static_cast<int>(evaluator.schedule().subgraphs.size()); ++x) {
    if (stop && stop()) break;
    // Both ways of each gather priced on the same schedule, the lower valid one kept.
    int pick = -1;
    Latency pick_total = 0;
    for (int retain_next = 0; retain_next < 2; ++retain_next) {
      std::optional<ScheduleEdit> edit = GatherStraysAt(ctx, evaluator.schedule(), x, classes, retain_next);
      if (!edit) continue;
      const Candidate& candidate = evaluator.Propose(std::move(*edit));
      if (candidate.valid && (pick < 0 || candidate.total < pick_total)) {
        pick = retain_next;
        pick_total = candidate.total;
      }
      evaluator.Revert();
    }
    if (pick < 0) continue;
    std::optional<ScheduleEdit> edit = GatherStraysAt(ctx, evaluator.schedule(), x, classes, pick);
    const Candidate candidate = evaluator.Propose(std::move(*edit));
    evaluator.Commit();
    if (candidate.total < best_total) {
      best_total = candidate.total;
      best = evaluator.schedule();
    }
  }
  return best;
}

}  // namespace annealer
