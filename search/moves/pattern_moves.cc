// The move kinds drawn only where a graph pattern exists: merging the readers of one produced
// tensor (a normalised activation feeding many projections) and gathering one reduction length
// into a sum's k-loop (a convolution over a concatenation of many blocks). Each is drawn only
// when its *Applies(problem) holds, so graphs without the pattern keep the move stream of the
// general kinds (search/moves/moves.cc) exactly; docs/search.md describes both. Also the edit of
// the regrouping of reader parts (RegroupReaderPartsAt), which is no move kind: the start pass
// RegroupReaderParts (search/starts/constructive.h) tries it at every such tensor.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

#include "search/moves/move_kit.h"
#include "search/moves/moves.h"
#include "search/fit/no_fit_memo.h"
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
    if (NoGranularityFitsAlone(ctx.pricer, problem, candidate)) continue;
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

// The MatMul-made tensors subgraph j's Pointwise ops read: `loaded` (made elsewhere, not
// retained into j, one entry per producer), `inside` (made in j) and the reduction lengths of the
// loaded ones, in the order first met.
namespace {
void GatherSources(const Problem& problem, const Schedule& s, int j, std::vector<OpId>& loaded,
                   std::vector<OpId>& inside, std::vector<Elements>& lengths) {
  const Subgraph& sg = s.subgraphs[j];
  const std::vector<TensorId>& retained = RetainedInto(s, j);
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
}
}  // namespace

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
  std::vector<OpId> loaded, inside;
  std::vector<Elements> lengths;
  GatherSources(problem, s, j, loaded, inside, lengths);
  if (loaded.empty()) return std::nullopt;
  const Elements K = lengths[Uniform(rng, static_cast<int>(lengths.size()))];
  return GatherKLoopAt(ctx, s, j, K);
}

}  // namespace move_kit

std::vector<Elements> GatherKLoopLengths(const MoveContext& ctx, const Schedule& s, int j) {
  using namespace move_kit;
  std::vector<OpId> loaded, inside;
  std::vector<Elements> lengths;
  GatherSources(ctx.problem, s, j, loaded, inside, lengths);
  return lengths;
}

std::optional<ScheduleEdit> GatherKLoopAt(const MoveContext& ctx, const Schedule& s, int j, Elements K) {
  using namespace move_kit;
  const Problem& problem = ctx.problem;
  const int n = static_cast<int>(s.subgraphs.size());
  const Subgraph& sg = s.subgraphs[j];
  std::vector<OpId> loaded, inside;
  std::vector<Elements> lengths;
  GatherSources(problem, s, j, loaded, inside, lengths);
  if (loaded.empty()) return std::nullopt;

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
  if (!IsConnected(problem, merged) || NoGranularityFitsAlone(ctx.pricer, problem, merged)) return std::nullopt;

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

namespace annealer {

namespace {

// The first position of each op in a list, looked up in O(log n): the linear scans they replace
// made a loader of hundreds of ops quadratic (DenseNet-121's start regrouped 112 tensors in 2.3 s).
class OpPositions {
 public:
  explicit OpPositions(const std::vector<OpId>& ops) {
    sorted_.reserve(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) sorted_.emplace_back(ops[i], static_cast<int>(i));
    std::sort(sorted_.begin(), sorted_.end());
  }
  int operator()(OpId op) const {
    const auto at = std::lower_bound(sorted_.begin(), sorted_.end(), std::make_pair(op, -1));
    return at != sorted_.end() && at->first == op ? at->second : -1;
  }

 private:
  std::vector<std::pair<OpId, int>> sorted_;
};

// Per op of `ops` (a subgraph's op list, topologically sorted), the bit set of the readers of t
// in `ops` (bit r: readers[r]) it descends from within `ops`; readers are their own ancestors.
std::vector<uint32_t> ReaderAncestry(const Problem& problem, const std::vector<OpId>& ops,
                                     const std::vector<OpId>& readers, const OpPositions& index_of) {
  std::vector<uint32_t> mask(ops.size(), 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    for (size_t r = 0; r < readers.size(); ++r) {
      if (ops[i] == readers[r]) mask[i] |= 1u << r;
    }
    for (TensorId u : problem.ops[ops[i]].inputs) {
      const OpId q = problem.producer[u];
      if (q == kNoOp) continue;
      const int at = index_of(q);
      if (at >= 0) mask[i] |= mask[at];
    }
  }
  return mask;
}

// The shape of a part: per op in topological order its kind, output sides and (MatMul) reduction
// length. Parts of equal shape (one per head) are what a group puts together.
std::vector<int64_t> PartShape(const Problem& problem, const std::vector<OpId>& ops) {
  std::vector<int64_t> shape;
  for (OpId op : ops) {
    const Op& o = problem.ops[op];
    shape.push_back(static_cast<int64_t>(o.kind));
    shape.push_back(problem.tensors[o.output].width);
    shape.push_back(problem.tensors[o.output].height);
    shape.push_back(o.kind == OpKind::MatMul ? problem.ReductionLength(op) : -1);
    shape.push_back(static_cast<int64_t>(o.inputs.size()));
  }
  return shape;
}

}  // namespace

std::vector<TensorId> RegroupReaderTensors(const Problem& problem) {
  std::vector<TensorId> tensors;
  for (TensorId t = 0; t < static_cast<TensorId>(problem.consumers.size()); ++t) {
    const OpId p = problem.producer[t];
    if (p == kNoOp || problem.IsLayout(p)) continue;
    const std::vector<OpId>& readers = problem.consumers[t];  // ascending, maybe repeated
    int distinct = 0;
    for (size_t i = 0; i < readers.size(); ++i) distinct += i == 0 || readers[i] != readers[i - 1];
    if (distinct >= 3) tensors.push_back(t);
  }
  return tensors;
}

std::optional<ScheduleEdit> RegroupReaderPartsAt(const MoveContext& ctx, const Schedule& s, TensorId t, int join,
                                                 int group) {
  using namespace move_kit;
  constexpr int kMaxReadersInSubgraph = 8;
  const Problem& problem = ctx.problem;
  const int n = static_cast<int>(s.subgraphs.size());
  const OpId p = problem.producer[t];
  if (p == kNoOp || problem.IsLayout(p) || group < 2) return std::nullopt;

  // The subgraphs that load t (do not make it, t not retained into them, no Layout op reads it).
  std::vector<int> loaders;
  for (int i = 0; i < n; ++i) {
    const std::vector<OpId>& ops = s.subgraphs[i].ops;
    if (Contains(ops, p)) continue;
    bool reads = false, layout = false;
    for (OpId op : ops) {
      const auto& ins = problem.ops[op].inputs;
      if (std::find(ins.begin(), ins.end(), t) == ins.end()) continue;
      reads = true;
      layout = layout || problem.IsLayout(op);
    }
    if (!reads || layout) continue;
    const std::vector<TensorId>& in = RetainedInto(s, i);
    if (std::find(in.begin(), in.end(), t) != in.end()) continue;
    loaders.push_back(i);
  }
  if (loaders.size() < 2) return std::nullopt;

  // Split each loader into one part per reader of t in it: an op goes to the part of the one
  // reader it descends from; ops descending from several go (with what follows them) to the
  // `join`-th of those readers (modulo their count); ops descending from none go to the part of
  // their first consumer inside.
  struct Part {
    std::vector<OpId> ops;
    int from;  // the loader it came from
  };
  std::vector<Part> parts;
  for (int i : loaders) {
    const std::vector<OpId> ops = SortTopologically(ctx.rank, s.subgraphs[i].ops);
    std::vector<OpId> readers;
    for (OpId op : ops) {
      const auto& ins = problem.ops[op].inputs;
      if (std::find(ins.begin(), ins.end(), t) != ins.end()) readers.push_back(op);
    }
    if (readers.size() > kMaxReadersInSubgraph) return std::nullopt;
    const OpPositions position(ops);
    const std::vector<uint32_t> mask = ReaderAncestry(problem, ops, readers, position);
    std::vector<int> part_of(ops.size(), -1);
    for (size_t k = 0; k < ops.size(); ++k) {
      const uint32_t m = mask[k];
      if (m == 0) continue;
      if ((m & (m - 1)) == 0) {
        part_of[k] = std::countr_zero(m);
        continue;
      }
      std::vector<int> bits;
      for (int r = 0; r < static_cast<int>(readers.size()); ++r) {
        if (m >> r & 1) bits.push_back(r);
      }
      part_of[k] = bits[join % static_cast<int>(bits.size())];
    }
    // An op descending from several readers pulls what it feeds along (its descendants' masks
    // hold its readers too, but they must follow it, not the rule above).
    // (A subgraph lists each op once, so an op's first position is its only one.)
    for (size_t k = 0; k < ops.size(); ++k) {
      for (TensorId u : problem.ops[ops[k]].inputs) {
        const int a = position(problem.producer[u]);
        if (a < 0 || a >= static_cast<int>(k)) continue;
        const uint32_t mq = mask[a];
        if ((mq & (mq - 1)) != 0) part_of[k] = part_of[a];
      }
    }
    for (size_t k = ops.size(); k-- > 0;) {
      if (part_of[k] >= 0) continue;
      for (OpId c : problem.consumers[problem.ops[ops[k]].output]) {
        const int a = position(c);
        if (a > static_cast<int>(k) && part_of[k] < 0) part_of[k] = part_of[a];
      }
      if (part_of[k] < 0) return std::nullopt;  // a sink of no reader's chain: leave it whole
    }
    for (int r = 0; r < static_cast<int>(readers.size()); ++r) {
      Part part{{}, i};
      for (size_t k = 0; k < ops.size(); ++k) {
        if (part_of[k] == r) part.ops.push_back(ops[k]);
      }
      if (!part.ops.empty()) parts.push_back(std::move(part));
    }
  }

  // Same-shaped parts, in schedule order, form groups of `group` (the last one smaller), each
  // with t's producer recomputed inside; a shape with one part keeps it alone.
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<int>> buckets;
  for (int k = 0; k < static_cast<int>(parts.size()); ++k) {
    std::vector<int64_t> shape = PartShape(problem, parts[k].ops);
    auto at = std::find(shapes.begin(), shapes.end(), shape);
    if (at == shapes.end()) {
      shapes.push_back(std::move(shape));
      buckets.push_back({k});
    } else {
      buckets[at - shapes.begin()].push_back(k);
    }
  }
  struct NewPiece {
    std::vector<OpId> ops;
    int key;  // the last loader it takes ops from: where it goes in the order, if it can
  };
  std::vector<NewPiece> made;
  bool grouped = false;
  for (const std::vector<int>& bucket : buckets) {
    for (size_t b = 0; b < bucket.size(); b += group) {
      const size_t e = std::min(bucket.size(), b + static_cast<size_t>(group));
      NewPiece piece{{}, 0};
      for (size_t k = b; k < e; ++k) {
        for (OpId op : parts[bucket[k]].ops) piece.ops.push_back(op);
        piece.key = std::max(piece.key, parts[bucket[k]].from);
      }
      if (e - b >= 2) {
        piece.ops.push_back(p);
        piece.ops = SortTopologically(ctx.rank, piece.ops);
        if (!NoGranularityFitsAlone(ctx.pricer, problem, piece.ops)) {
          made.push_back(std::move(piece));
          grouped = true;
          continue;
        }
      }
      // A part alone, or a group without a valid configuration (e.g. t's producer would be a
      // Pointwise prologue of a k-split MatMul, V11): its parts stay alone, loading t.
      for (size_t k = b; k < e; ++k) {
        NewPiece alone{parts[bucket[k]].ops, parts[bucket[k]].from};
        if (NoGranularityFitsAlone(ctx.pricer, problem, alone.ops)) return std::nullopt;
        made.push_back(std::move(alone));
      }
    }
  }
  if (!grouped) return std::nullopt;

  // The new order of [first loader, last loader]: the subgraphs left there and the new pieces,
  // each where its key puts it unless a piece it reads from must come first (a stable
  // topological order of the pieces; none when they form a cycle).
  const int begin = loaders.front();
  const int end = loaders.back() + 1;
  struct Node {
    const std::vector<OpId>* ops;
    int key;
    int kept;  // the subgraph index kept, or -1 for a new piece
  };
  std::vector<Node> nodes;
  for (int m = begin; m < end; ++m) {
    if (!std::binary_search(loaders.begin(), loaders.end(), m)) nodes.push_back({&s.subgraphs[m].ops, m, m});
  }
  for (const NewPiece& piece : made) nodes.push_back({&piece.ops, piece.key, -1});
  const int count = static_cast<int>(nodes.size());
  // An op made in several pieces (t's producer, or one a loader recomputed) is a recompute: its
  // output comes from slow memory, written before the span, and orders nothing. Any other op
  // orders its one holder before every other node that reads its output. (Looked up in a sorted
  // list: the span can hold hundreds of subgraphs, DenseNet-121's features read across a dense
  // block, where comparing every pair of nodes was most of the start's time.)
  std::vector<std::pair<OpId, int>> holder;  // (op, node), sorted
  for (int a = 0; a < count; ++a) {
    for (OpId op : *nodes[a].ops) holder.emplace_back(op, a);
  }
  std::sort(holder.begin(), holder.end());
  auto sole_holder = [&](OpId q) {
    if (q == p) return -1;
    const auto at = std::lower_bound(holder.begin(), holder.end(), std::make_pair(q, -1));
    if (at == holder.end() || at->first != q) return -1;
    return at + 1 != holder.end() && (at + 1)->first == q ? -1 : at->second;
  };
  std::vector<std::pair<int, int>> edges;  // (a, b): b reads what a alone makes
  for (int b = 0; b < count; ++b) {
    for (OpId op : *nodes[b].ops) {
      for (TensorId u : problem.ops[op].inputs) {
        const OpId q = problem.producer[u];
        if (q == kNoOp) continue;
        const int a = sole_holder(q);
        if (a >= 0 && a != b) edges.emplace_back(a, b);
      }
    }
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  std::vector<std::vector<int>> after(count);
  std::vector<int> waiting(count, 0);
  for (const auto& [a, b] : edges) {
    after[a].push_back(b);
    ++waiting[b];
  }
  const std::optional<std::vector<int>> order =
      move_kit::OrderByLeastKey(after, std::move(waiting), [&](int a) { return nodes[a].key; });
  if (!order) return std::nullopt;
  std::vector<Piece> pieces;
  for (int a : *order) {
    if (nodes[a].kept >= 0) {
      pieces.push_back(Kept(s.subgraphs[nodes[a].kept]));
    } else {
      pieces.push_back({*nodes[a].ops, {}, nullptr, true});
    }
  }
  return Finish(ctx, s, begin, end, std::move(pieces));
}

}  // namespace annealer
