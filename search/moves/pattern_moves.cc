// The move kinds drawn only where a graph pattern exists: merging the readers of one produced
// tensor (a normalised activation feeding many projections) and gathering one reduction length
// into a sum's k-loop (a convolution over a concatenation of many blocks). Each is drawn only
// when its *Applies(problem) holds, so graphs without the pattern keep the move stream of the
// general kinds (search/moves/moves.cc) exactly; docs/search.md describes both.
#include <algorithm>
#include <vector>

#include "search/moves/move_kit.h"
#include "search/moves/moves.h"
#include "search/subgraph_tools.h"

namespace annealer {

namespace move_kit {

// Subgraphs that each load the same produced tensor t pay its load each time. This merges a
// subgraph with other readers of t nearby and with subgraphs that make t themselves (an earlier
// merge, which recomputes it), each absorbed only when the union can still have a valid
// configuration by the structural rules and when it can move to the subgraph's position without
// passing a subgraph that reads its outputs or writes its inputs; t's producer is recomputed
// inside, which connects them (V5): t is then made once, its producer's inputs loaded once. One
// step from several separate heads to one subgraph, which pairwise merges reach only through
// worse schedules (the producer's recompute pays off from the third reader on).
std::optional<ScheduleEdit> MergeReaders(const MoveContext& ctx, const Schedule& s, Rng& rng) {
  const Problem& problem = ctx.problem;
  const int n = static_cast<int>(s.subgraphs.size());
  if (n < 2) return std::nullopt;
  const int j = Uniform(rng, n);
  const Subgraph& sg = s.subgraphs[j];
  std::vector<TensorId> shared;
  for (TensorId t : BoundaryInputs(problem, sg.ops)) {
    if (!MergeReadersCandidate(ctx, s, j, t)) continue;
    if (problem.ops[problem.producer[t]].kind == OpKind::MatMul && !Coin(rng, 0.25)) continue;
    shared.push_back(t);
  }
  if (shared.empty()) return std::nullopt;
  const TensorId t = shared[Uniform(rng, static_cast<int>(shared.size()))];
  return MergeReadersAt(ctx, s, j, t);
}

}  // namespace move_kit

bool MergeReadersCandidate(const MoveContext& ctx, const Schedule& s, int j, TensorId t) {
  using move_kit::RetainedInto;
  const Problem& problem = ctx.problem;
  const OpId p = problem.producer[t];
  // consumers may list an op twice: fewer than three entries is fewer than three readers
  if (p == kNoOp || problem.IsLayout(p) || problem.consumers[t].size() < 3) return false;
  const std::vector<TensorId>& in = RetainedInto(s, j);
  if (std::find(in.begin(), in.end(), t) != in.end()) return false;
  for (OpId op : s.subgraphs[j].ops) {
    if (!problem.IsLayout(op)) continue;
    const auto& ins = problem.ops[op].inputs;
    if (std::find(ins.begin(), ins.end(), t) != ins.end()) return false;
  }
  return true;
}

std::optional<ScheduleEdit> MergeReadersAt(const MoveContext& ctx, const Schedule& s, int j, TensorId t) {
  using namespace move_kit;
  constexpr int kWindow = 64;     // readers searched within this many subgraphs of the chosen one
  constexpr int kMaxAbsorbed = 16;
  const Problem& problem = ctx.problem;
  const int n = static_cast<int>(s.subgraphs.size());
  const Subgraph& sg = s.subgraphs[j];
  auto retained_into = [&](int i, TensorId u) {
    const std::vector<TensorId>& in = RetainedInto(s, i);
    return std::find(in.begin(), in.end(), u) != in.end();
  };
  auto layout_reads = [&](const std::vector<OpId>& ops, TensorId u) {
    for (OpId op : ops) {
      if (!problem.IsLayout(op)) continue;
      const auto& ins = problem.ops[op].inputs;
      if (std::find(ins.begin(), ins.end(), u) != ins.end()) return true;
    }
    return false;
  };
  const OpId p = problem.producer[t];

  std::vector<int> readers;
  for (int i = std::max(0, j - kWindow); i < std::min(n, j + kWindow + 1); ++i) {
    if (i == j) continue;
    const std::vector<OpId>& ops = s.subgraphs[i].ops;
    // A subgraph that makes t itself (an earlier merge of readers, which recomputes it) takes
    // the chosen one in as well: t is ephemeral there, so that reader's load goes too.
    if (Contains(ops, p)) {
      readers.push_back(i);
      continue;
    }
    if (retained_into(i, t) || layout_reads(ops, t)) continue;
    bool reads = false;
    for (OpId op : ops) {
      const auto& ins = problem.ops[op].inputs;
      reads = reads || std::find(ins.begin(), ins.end(), t) != ins.end();
    }
    if (reads) readers.push_back(i);
  }
  if (readers.empty()) return std::nullopt;
  std::stable_sort(readers.begin(), readers.end(), [&](int a, int b) { return std::abs(a - j) < std::abs(b - j); });

  std::vector<OpId> merged = sg.ops;
  merged.push_back(p);
  std::vector<char> absorbed(n, 0);
  int count = 0;
  for (int i : readers) {
    if (count == kMaxAbsorbed) break;
    // Moving i to j must not pass a subgraph (left in place) that reads what i makes (i < j) or
    // makes what i reads (i > j).
    // i's side of Feeds derived once for the subgraphs between.
    bool blocked = false;
    if (i + 1 < j) {
      const FeedsFrom feeds_from_i(problem, s.subgraphs[i].ops);
      for (int m = i + 1; m < j && !blocked; ++m) blocked = !absorbed[m] && feeds_from_i(s.subgraphs[m].ops);
    } else if (i > j + 1) {
      const FeedsInto feeds_into_i(problem, s.subgraphs[i].ops);
      for (int m = j + 1; m < i && !blocked; ++m) blocked = !absorbed[m] && feeds_into_i(s.subgraphs[m].ops);
    }
    if (blocked) continue;
    std::vector<OpId> candidate = merged;
    for (OpId op : s.subgraphs[i].ops) {
      if (!Contains(candidate, op)) candidate.push_back(op);
    }
    candidate = SortTopologically(ctx.rank, candidate);  // V6 is among the rules checked
    if (NoGranularityFits(problem, candidate, kNothing, kNothing)) continue;
    merged = std::move(candidate);
    absorbed[i] = 1;
    ++count;
  }
  if (count == 0) return std::nullopt;
  int begin = j;
  int end = j + 1;
  for (int i = 0; i < n; ++i) {
    if (!absorbed[i]) continue;
    begin = std::min(begin, i);
    end = std::max(end, i + 1);
  }
  std::vector<Piece> pieces;
  for (int m = begin; m < end; ++m) {
    if (m == j) {
      pieces.push_back({SortTopologically(ctx.rank, merged), sg.retain, &sg, true});
    } else if (!absorbed[m]) {
      pieces.push_back(Kept(s.subgraphs[m]));
    }
  }
  return Finish(ctx, s, begin, end, std::move(pieces));
}

namespace move_kit {

// A Pointwise op that sums MatMuls of different reduction lengths (a convolution over a channel
// concatenation: one MatMul per concatenated block) can hold only the MatMuls of one K in its
// subgraph's k-loop (G3); the others are made elsewhere and their outputs, as wide as the sum,
// loaded. Which K should stay is a whole-group choice: moving one MatMul at a time breaks G3
// until the last one has moved. This move makes it in one step: it picks a subgraph j and a
// reduction length K among the MatMuls whose outputs j's Pointwise ops load, pulls every such
// MatMul of that K into j (taken out of the subgraphs that made it when j now reads all it
// makes), and moves the MatMuls of j that its Pointwise ops read with another K, with the ops
// of j that only feed them, into a subgraph of their own just before j. The repair recomputes
// what the moved MatMuls read that is not in slow memory, and the fit prices the result.
std::optional<ScheduleEdit> GatherKLoop(const MoveContext& ctx, const Schedule& s, Rng& rng) {
  const Problem& problem = ctx.problem;
  const int n = static_cast<int>(s.subgraphs.size());
  // Only subgraphs with a Pointwise op that reads two or more MatMul outputs, one of them made
  // elsewhere: the others cannot give this move anything to do.
  const int j = RandomPosition(rng, n, [&](int at) {
    const std::vector<OpId>& ops = s.subgraphs[at].ops;
    for (OpId op : ops) {
      if (problem.ops[op].kind != OpKind::Pointwise || problem.ops[op].inputs.size() < 2) continue;
      int matmuls = 0;
      bool outside = false;
      for (TensorId t : problem.ops[op].inputs) {
        const OpId p = problem.producer[t];
        if (p == kNoOp || problem.ops[p].kind != OpKind::MatMul) continue;
        ++matmuls;
        outside = outside || !Contains(ops, p);
      }
      if (matmuls >= 2 && outside) return true;
    }
    return false;
  });
  if (j < 0) return std::nullopt;
  const Subgraph& sg = s.subgraphs[j];
  const std::vector<TensorId>& retained = RetainedInto(s, j);
  // MatMul-made tensors j's Pointwise ops read: loaded (outside) or made inside.
  std::vector<OpId> loaded, inside;
  std::vector<Elements> lengths;
  const std::vector<TensorId> made = ProducedTensors(problem, sg.ops);
  for (OpId op : sg.ops) {
    if (problem.ops[op].kind != OpKind::Pointwise) continue;
    for (TensorId t : problem.ops[op].inputs) {
      const OpId p = problem.producer[t];
      if (p == kNoOp || problem.ops[p].kind != OpKind::MatMul) continue;
      if (std::binary_search(made.begin(), made.end(), t)) {
        if (Contains(sg.ops, p) && !Contains(inside, p)) inside.push_back(p);
        continue;
      }
      if (std::find(retained.begin(), retained.end(), t) != retained.end() || Contains(loaded, p)) continue;
      loaded.push_back(p);
      const Elements k = problem.ReductionLength(p);
      if (std::find(lengths.begin(), lengths.end(), k) == lengths.end()) lengths.push_back(k);
    }
  }
  if (loaded.empty()) return std::nullopt;
  const Elements K = lengths[Uniform(rng, static_cast<int>(lengths.size()))];

  std::vector<OpId> merged = sg.ops;
  std::vector<OpId> pulled;
  for (OpId p : loaded) {
    if (problem.ReductionLength(p) != K) continue;
    merged.push_back(p);
    pulled.push_back(p);
  }
  // Evict the inside MatMuls of another K and the ops of j that feed only evicted ops.
  std::vector<OpId> evicted;
  for (OpId p : inside) {
    if (problem.ReductionLength(p) != K) evicted.push_back(p);
  }
  if (!evicted.empty()) {
    for (bool grew = true; grew;) {
      grew = false;
      for (OpId op : merged) {
        if (Contains(evicted, op)) continue;
        bool feeds = false, only_evicted = true;
        for (OpId c : problem.consumers[problem.ops[op].output]) {
          if (!Contains(merged, c)) continue;
          feeds = true;
          only_evicted = only_evicted && Contains(evicted, c);
        }
        if (feeds && only_evicted) {
          evicted.push_back(op);
          grew = true;
        }
      }
    }
    std::erase_if(merged, [&](OpId op) { return Contains(evicted, op); });
  }
  if (merged.empty()) return std::nullopt;
  merged = SortTopologically(ctx.rank, merged);
  if (!IsConnected(problem, merged) || NoGranularityFits(problem, merged, kNothing, kNothing)) return std::nullopt;

  // Take a pulled MatMul out of an earlier subgraph where nothing else reads it (it is a sink
  // there) when j now makes every reader's input.
  int begin = j;
  std::vector<std::vector<OpId>> rest(n);
  std::vector<char> changed(n, 0);
  for (OpId p : pulled) {
    const TensorId out = problem.ops[p].output;
    if (!AllConsumersIn(problem, out, merged)) continue;
    for (int i = std::max(0, j - 256); i < j; ++i) {
      const std::vector<OpId>& ops = changed[i] ? rest[i] : s.subgraphs[i].ops;
      if (!Contains(ops, p)) continue;
      std::vector<OpId> left = ops;
      std::erase(left, p);
      rest[i] = std::move(left);
      changed[i] = 1;
      begin = std::min(begin, i);
    }
  }
  std::vector<Piece> pieces;
  for (int m = begin; m < j; ++m) {
    const Subgraph& at = s.subgraphs[m];
    if (!changed[m]) {
      pieces.push_back(Kept(at));
      continue;
    }
    for (auto& component : Components(problem, rest[m])) {
      pieces.push_back({SortTopologically(ctx.rank, component), at.retain, &at, true});
    }
  }
  if (!evicted.empty()) {
    for (auto& component : Components(problem, SortTopologically(ctx.rank, evicted))) {
      pieces.push_back({SortTopologically(ctx.rank, component), {}, nullptr, true});
    }
  }
  pieces.push_back({merged, sg.retain, &sg, true});
  return Finish(ctx, s, begin, j + 1, std::move(pieces));
}

}  // namespace move_kit

using move_kit::Contains;

bool GatherKLoopApplies(const Problem& problem) {
  for (const Op& op : problem.ops) {
    if (op.kind != OpKind::Pointwise) continue;
    std::vector<OpId> matmuls;
    for (TensorId t : op.inputs) {
      const OpId p = problem.producer[t];
      if (p != kNoOp && problem.ops[p].kind == OpKind::MatMul && !Contains(matmuls, p)) matmuls.push_back(p);
    }
    bool mixed = false;
    int most = 0;       // the most MatMuls of one reduction length
    // the most MatMuls of one reduction length and one LHS tensor larger than fast memory
    int most_taps = 0;
    for (OpId p : matmuls) {
      const Elements k = problem.ReductionLength(p);
      const TensorId lhs = problem.ops[p].inputs[0];
      mixed = mixed || k != problem.ReductionLength(matmuls[0]);
      most = std::max(most, static_cast<int>(std::count_if(matmuls.begin(), matmuls.end(), [&](OpId q) {
                              return problem.ReductionLength(q) == k;
                            })));
      if (problem.tensors[lhs].size() <= problem.fast_memory_capacity) continue;
      most_taps = std::max(most_taps, static_cast<int>(std::count_if(matmuls.begin(), matmuls.end(), [&](OpId q) {
                                        return problem.ReductionLength(q) == k && problem.ops[q].inputs[0] == lhs;
                                      })));
    }
    if ((mixed && most >= 3) || most_taps >= 3) return true;
  }
  return false;
}

bool MergeReadersApplies(const Problem& problem) {
  for (TensorId t = 0; t < static_cast<TensorId>(problem.consumers.size()); ++t) {
    if (problem.producer[t] == kNoOp) continue;
    const std::vector<OpId>& readers = problem.consumers[t];  // ascending, maybe repeated
    int distinct = 0;
    for (size_t i = 0; i < readers.size(); ++i) distinct += i == 0 || readers[i] != readers[i - 1];
    if (distinct >= 3) return true;
  }
  return false;
}

}  // namespace annealer
