#include "search/moves/moves.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <tuple>

#include "eval/model/traversal.h"
#include "search/moves/move_kit.h"

namespace annealer {

using namespace move_kit;  // the helpers the move kinds share with search/moves/pattern_moves.cc

const char* MoveName(MoveKind kind) {
  switch (kind) {
    case MoveKind::kMergeAdjacent: return "merge-adjacent";
    case MoveKind::kMergeIntoConsumer: return "merge-into-consumer";
    case MoveKind::kSplit: return "split";
    case MoveKind::kMoveOp: return "move-op";
    case MoveKind::kDuplicate: return "duplicate";
    case MoveKind::kDropDuplicate: return "drop-duplicate";
    case MoveKind::kSwap: return "swap";
    case MoveKind::kMoveNextToProducer: return "move-next-to-producer";
    case MoveKind::kGranularity: return "granularity";
    case MoveKind::kTraversal: return "traversal";
    case MoveKind::kRetention: return "retention";
    case MoveKind::kMergeReaders: return "merge-readers";
    case MoveKind::kGatherKLoop: return "gather-k-loop";
    case MoveKind::kSplitRecompute: return "split-recompute";
  }
  return "?";
}

namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Index of the last subgraph before `before` that produces tensor t, or -1.
int LastProducerBefore(const Problem& problem, const Schedule& s, int before, TensorId t) {
  const OpId producer = problem.producer[t];
  if (producer == kNoOp) return -1;
  for (int i = before - 1; i >= 0; --i) {
    if (Contains(s.subgraphs[i].ops, producer)) return i;
  }
  return -1;
}

}  // namespace

namespace move_kit {
bool Feeds(const Problem& problem, const Subgraph& from, const Subgraph& to) {
  return Feeds(problem, from.ops, to.ops);
}

// Tensors whose every consumer is among `ops`: retaining them into `ops` cannot starve a later
// subgraph.
bool AllConsumersIn(const Problem& problem, TensorId t, const std::vector<OpId>& ops) {
  for (OpId c : problem.consumers[t]) {
    if (!Contains(ops, c)) return false;
  }
  return true;
}

std::vector<OpId> RandomOrder(const Problem& problem, const std::vector<OpId>& ops, Rng& rng) {
  // Per-thread buffers: a split draws one order per move, and the ready list was a fresh
  // allocation per op placed.
  thread_local std::vector<int> missing, ready;
  thread_local std::vector<char> done;
  // The position of each op in `ops` (-1 elsewhere): membership without a scan of `ops`, and
  // a placed op's readers found among its output's consumers instead of by a scan of every
  // op's inputs. A list holding an op twice keeps the latter scan (each position reading the
  // output counts).
  thread_local std::vector<int> position;
  if (position.size() < problem.ops.size()) position.assign(problem.ops.size(), -1);
  bool distinct = true;
  for (size_t a = 0; a < ops.size(); ++a) {
    distinct = distinct && position[ops[a]] < 0;
    position[ops[a]] = static_cast<int>(a);
  }
  // An op waits for each producer in the list once, however many of its inputs that producer
  // makes (x * x): the decrements below come once per producer placed.
  missing.assign(ops.size(), 0);
  for (size_t a = 0; a < ops.size(); ++a) {
    const std::vector<TensorId>& in = problem.ops[ops[a]].inputs;
    for (size_t i = 0; i < in.size(); ++i) {
      const OpId p = problem.producer[in[i]];
      if (p != kNoOp && position[p] >= 0 && std::find(in.begin(), in.begin() + i, in[i]) == in.begin() + i) {
        ++missing[a];
      }
    }
  }
  std::vector<OpId> order;
  order.reserve(ops.size());
  done.assign(ops.size(), 0);
  while (order.size() < ops.size()) {
    ready.clear();
    for (size_t a = 0; a < ops.size(); ++a) {
      if (!done[a] && missing[a] == 0) ready.push_back(static_cast<int>(a));
    }
    if (ready.empty()) break;  // cannot happen for a DAG
    const int a = ready[Uniform(rng, static_cast<int>(ready.size()))];
    done[a] = 1;
    order.push_back(ops[a]);
    const TensorId out = problem.ops[ops[a]].output;
    if (distinct) {
      // Each reader once, however often it reads `out` (consumers ascend, repeats adjacent).
      OpId last = kNoOp;
      for (const OpId c : problem.consumers[out]) {
        if (c == last) continue;
        last = c;
        if (position[c] >= 0) --missing[position[c]];
      }
    } else {
      // Only the first copy placed releases the readers.
      bool first = true;
      for (size_t b = 0; b < ops.size(); ++b) {
        if (static_cast<int>(b) != a && done[b] && ops[b] == ops[a]) first = false;
      }
      for (size_t b = 0; first && b < ops.size(); ++b) {
        const auto& in = problem.ops[ops[b]].inputs;
        if (std::find(in.begin(), in.end(), out) != in.end()) --missing[b];
      }
    }
  }
  for (const OpId op : ops) position[op] = -1;
  if (order.size() < ops.size()) return ops;
  return order;
}
}  // namespace move_kit

namespace {

// Feeds(s[at], s[at + 1]); on the committed schedule from the evaluator's boundary inputs of
// s[at + 1] (a tensor made by s[at] is one whose one producer is in it), without two stamp sets
// per pair: merge-adjacent asks it of every neighbouring pair of a schedule under 256 subgraphs.
bool FeedsNext(const MoveContext& ctx, const Schedule& s, int at) {
  if (ctx.committed_facts && ctx.committed != nullptr && &ctx.committed->schedule() == &s) {
    const std::vector<OpId>& from = s.subgraphs[at].ops;
    for (TensorId t : ctx.committed->CommittedInputs(at + 1)) {
      const OpId p = ctx.problem.producer[t];
      if (p != kNoOp && Contains(from, p)) return true;
    }
    return false;
  }
  return Feeds(ctx.problem, s.subgraphs[at], s.subgraphs[at + 1]);
}

std::optional<ScheduleEdit> MergeAdjacent(const MoveContext& ctx, const Schedule& s, Rng& rng) {
  const int n = static_cast<int>(s.subgraphs.size());
  if (n < 2) return std::nullopt;
  const int i = RandomPosition(rng, n - 1, [&](int at) { return FeedsNext(ctx, s, at); });
  if (i < 0) return std::nullopt;
  std::vector<OpId> ops = s.subgraphs[i].ops;
  ops.insert(ops.end(), s.subgraphs[i + 1].ops.begin(), s.subgraphs[i + 1].ops.end());
  Piece merged{SortTopologically(ctx.rank, std::move(ops)), s.subgraphs[i + 1].retain,
               &s.subgraphs[Coin(rng, 0.5) ? i : i + 1], true};
  return Finish(ctx, s, i, i + 2, PiecesOf(std::move(merged)));
}

std::optional<ScheduleEdit> MergeIntoConsumer(const MoveContext& ctx, const Schedule& s, Rng& rng) {
  const int n = static_cast<int>(s.subgraphs.size());
  if (n < 2) return std::nullopt;
  const int j = 1 + Uniform(rng, n - 1);
  const std::vector<TensorId> inputs = BoundaryInputs(ctx.problem, s.subgraphs[j].ops);
  std::vector<int> producers;
  for (TensorId t : inputs) {
    const int i = LastProducerBefore(ctx.problem, s, j, t);
    if (i >= 0) producers.push_back(i);
  }
  if (producers.empty()) return std::nullopt;
  const int i = producers[Uniform(rng, static_cast<int>(producers.size()))];
  std::vector<OpId> ops = s.subgraphs[i].ops;
  ops.insert(ops.end(), s.subgraphs[j].ops.begin(), s.subgraphs[j].ops.end());
  std::vector<Piece> pieces;
  pieces.reserve(j - i);
  for (int m = i + 1; m < j; ++m) pieces.push_back(Kept(s.subgraphs[m]));
  pieces.push_back({SortTopologically(ctx.rank, ops), s.subgraphs[j].retain, &s.subgraphs[j], true});
  return Finish(ctx, s, i, j + 1, std::move(pieces));
}

std::optional<ScheduleEdit> Split(const MoveContext& ctx, const Schedule& s, Rng& rng) {
  const int i = RandomPosition(rng, static_cast<int>(s.subgraphs.size()),
                               [&](int at) { return s.subgraphs[at].ops.size() >= 2; });
  if (i < 0) return std::nullopt;
  const Subgraph& sg = s.subgraphs[i];
  const std::vector<OpId> order = RandomOrder(ctx.problem, sg.ops, rng);
  const int cut = 1 + Uniform(rng, static_cast<int>(order.size()) - 1);
  std::vector<OpId> first(order.begin(), order.begin() + cut);
  std::vector<OpId> second(order.begin() + cut, order.end());
  std::vector<std::vector<OpId>> parts;
  for (std::vector<OpId>* part : {&first, &second}) {
    for (auto& component : Components(ctx.problem, SortTopologically(ctx.rank, std::move(*part)))) {
      parts.push_back(SortTopologically(ctx.rank, std::move(component)));
    }
  }
  return Finish(ctx, s, i, i + 1, PiecesOfParts(ctx.problem, std::move(parts), sg, [&] { return Coin(rng, 0.5); }));
}

std::optional<ScheduleEdit> MoveOp(const MoveContext& ctx, const Schedule& s, Rng& rng) {
  const int n = static_cast<int>(s.subgraphs.size());
  if (n < 2) return std::nullopt;
  const int i = Uniform(rng, n - 1);
  const Subgraph& a = s.subgraphs[i];
  const Subgraph& b = s.subgraphs[i + 1];
  std::vector<OpId> movable;
  const bool forward = Coin(rng, 0.5);
  if (forward) {
    // A sink of a whose output b reads.
    const std::vector<TensorId> b_inputs = BoundaryInputs(ctx.problem, b.ops);
    for (OpId op : a.ops) {
      const TensorId out = ctx.problem.ops[op].output;
      bool consumed_in_a = false;
      for (OpId c : a.ops) {
        const auto& in = ctx.problem.ops[c].inputs;
        consumed_in_a |= std::find(in.begin(), in.end(), out) != in.end();
      }
      if (!consumed_in_a && std::binary_search(b_inputs.begin(), b_inputs.end(), out)) movable.push_back(op);
    }
  } else {
    // A source of b (reads nothing produced inside b).
    const std::vector<TensorId> b_made = ProducedTensors(ctx.problem, b.ops);
    for (OpId op : b.ops) {
      bool reads_inside = false;
      for (TensorId t : ctx.problem.ops[op].inputs) {
        reads_inside |= std::binary_search(b_made.begin(), b_made.end(), t);
      }
      if (!reads_inside) movable.push_back(op);
    }
  }
  if (movable.empty()) return std::nullopt;
  const OpId op = movable[Uniform(rng, static_cast<int>(movable.size()))];
  std::vector<OpId> new_a = a.ops, new_b = b.ops;
  if (forward) {
    new_a.erase(std::find(new_a.begin(), new_a.end(), op));
    if (!Contains(new_b, op)) new_b.push_back(op);
  } else {
    new_b.erase(std::find(new_b.begin(), new_b.end(), op));
    if (!Contains(new_a, op)) new_a.push_back(op);
  }
  std::vector<Piece> pieces;
  if (!new_a.empty()) pieces.push_back({SortTopologically(ctx.rank, new_a), a.retain, &a, true});
  if (!new_b.empty()) pieces.push_back({SortTopologically(ctx.rank, new_b), b.retain, &b, true});
  for (const Piece& piece : pieces) {
    if (!IsConnected(ctx.problem, piece.ops)) return std::nullopt;
  }
  return Finish(ctx, s, i, i + 2, std::move(pieces));
}

std::optional<ScheduleEdit> Duplicate(const MoveContext& ctx, const Schedule& s, Rng& rng) {
  const int n = static_cast<int>(s.subgraphs.size());
  const int j = Uniform(rng, n);
  const Subgraph& sg = s.subgraphs[j];
  std::vector<OpId> producers;
  for (TensorId t : BoundaryInputs(ctx.problem, sg.ops)) {
    const OpId p = ctx.problem.producer[t];
    if (p == kNoOp) continue;
    // A Layout op does not fuse with the producer of its input (spec L1): never useful.
    bool layout_reader = false;
    for (OpId op : sg.ops) {
      layout_reader = layout_reader || (ctx.problem.IsLayout(op) && std::find(ctx.problem.ops[op].inputs.begin(), ctx.problem.ops[op].inputs.end(), t) != ctx.problem.ops[op].inputs.end());
    }
    if (layout_reader) continue;
    // Recompute cheap producers most of the time; MatMuls occasionally.
    if (ctx.problem.ops[p].kind == OpKind::MatMul && !Coin(rng, 0.25)) continue;
    producers.push_back(p);
  }
  if (producers.empty()) return std::nullopt;
  const OpId p = producers[Uniform(rng, static_cast<int>(producers.size()))];
  std::vector<OpId> ops = sg.ops;
  ops.push_back(p);
  return Finish(ctx, s, j, j + 1, PiecesOf(Piece{SortTopologically(ctx.rank, std::move(ops)), sg.retain, &sg, true}));
}

std::optional<ScheduleEdit> DropDuplicate(const MoveContext& ctx, const Schedule& s, Rng& rng) {
  // A uniform place (subgraph, op) among those of ops in more than one subgraph, in schedule
  // order. The committed evaluator knows the counts and the number of places, so only the walk
  // up to the drawn place remains (the same draw and the same place as counting first).
  int i = -1;
  OpId op = kNoOp;
  if (ctx.committed != nullptr && &ctx.committed->schedule() == &s) {
    const IncrementalEvaluator& committed = *ctx.committed;
    if (committed.RecomputedOps() == 0) return std::nullopt;
    int left = Uniform(rng, committed.RecomputedPlaces());
    for (int k = 0; k < static_cast<int>(s.subgraphs.size()) && i < 0; ++k) {
      for (OpId candidate : s.subgraphs[k].ops) {
        if (committed.CoverCount(candidate) >= 2 && left-- == 0) {
          i = k;
          op = candidate;
          break;
        }
      }
    }
  } else {
    thread_local std::vector<int> count;
    count.assign(ctx.problem.ops.size(), 0);
    for (const Subgraph& sg : s.subgraphs) {
      for (OpId o : sg.ops) ++count[o];
    }
    thread_local std::vector<std::pair<int, OpId>> places;
    places.clear();
    for (int k = 0; k < static_cast<int>(s.subgraphs.size()); ++k) {
      for (OpId o : s.subgraphs[k].ops) {
        if (count[o] >= 2) places.push_back({k, o});
      }
    }
    if (places.empty()) return std::nullopt;
    std::tie(i, op) = places[Uniform(rng, static_cast<int>(places.size()))];
  }
  if (i < 0) return std::nullopt;
  const Subgraph& sg = s.subgraphs[i];
  std::vector<OpId> rest = sg.ops;
  rest.erase(std::find(rest.begin(), rest.end(), op));
  std::vector<Piece> pieces;
  for (auto& component : Components(ctx.problem, rest)) {
    pieces.push_back({SortTopologically(ctx.rank, std::move(component)), sg.retain, &sg, true});
  }
  return Finish(ctx, s, i, i + 1, std::move(pieces));
}

std::optional<ScheduleEdit> Swap(const MoveContext& ctx, const Schedule& s, Rng& rng) {
  const int n = static_cast<int>(s.subgraphs.size());
  if (n < 2) return std::nullopt;
  const int i = Uniform(rng, n - 1);
  if (FeedsNext(ctx, s, i)) return std::nullopt;
  const Subgraph& a = s.subgraphs[i];
  const Subgraph& b = s.subgraphs[i + 1];
  return Finish(ctx, s, i, i + 2, {Kept(b), Kept(a)});
}

std::optional<ScheduleEdit> MoveNextToProducer(const MoveContext& ctx, const Schedule& s, Rng& rng) {
  const int n = static_cast<int>(s.subgraphs.size());
  if (n < 3) return std::nullopt;
  const int j = 2 + Uniform(rng, n - 2);
  const Subgraph& sg = s.subgraphs[j];
  std::vector<std::pair<int, TensorId>> sources;
  const std::vector<TensorId> inputs = BoundaryInputs(ctx.problem, sg.ops);
  for (TensorId t : inputs) {
    const int i = LastProducerBefore(ctx.problem, s, j, t);
    if (i >= 0 && i < j - 1) sources.push_back({i, t});
  }
  if (sources.empty()) return std::nullopt;
  const auto [i, t] = sources[Uniform(rng, static_cast<int>(sources.size()))];
  // The moved subgraph must not need anything produced between i and j: no op there makes one
  // of its boundary inputs (Feeds, with the moved subgraph's side derived once for the stretch,
  // which may be most of the schedule).
  for (int m = i + 1; m < j; ++m) {
    for (OpId op : s.subgraphs[m].ops) {
      if (std::binary_search(inputs.begin(), inputs.end(), ctx.problem.ops[op].output)) return std::nullopt;
    }
  }
  const Subgraph& producer = s.subgraphs[i];
  std::vector<Piece> pieces;
  pieces.reserve(j - i + 1);
  Piece head{producer.ops, {}, &producer, false};
  const bool retain = AllConsumersIn(ctx.problem, t, sg.ops) && Coin(rng, 0.7);
  if (retain) {
    head.retain = {t};
    head.refit = true;
  }
  pieces.push_back(head);
  pieces.push_back({sg.ops, sg.retain, &sg, retain});
  for (int m = i + 1; m < j; ++m) pieces.push_back(Kept(s.subgraphs[m]));
  return Finish(ctx, s, i, j + 1, std::move(pieces));
}

std::optional<ScheduleEdit> ChangeGranularity(const MoveContext& ctx, const Schedule& s, Rng& rng) {
  const int i = Uniform(rng, static_cast<int>(s.subgraphs.size()));
  const Subgraph& sg = s.subgraphs[i];
  if (Coin(rng, 0.25)) return Finish(ctx, s, i, i + 1, PiecesOf(Piece{sg.ops, sg.retain, &sg, true}));
  Subgraph changed = sg;
  Granularity& g = changed.granularity;
  const Elements n = ctx.problem.native;
  const int axis = Uniform(rng, 3);
  Elements& v = axis == 0 ? g.w : axis == 1 ? g.h : g.k;
  const bool up = Coin(rng, 0.5);
  const Elements next = up ? v * 2 : v / 2;
  if (next < 1 || next > n) return std::nullopt;
  if (ctx.problem.chip.aligned() && axis < 2) {  // H3: a side off the chip's base is never valid
    const Tensor& sink = ctx.problem.tensors[ctx.problem.ops[sg.ops.back()].output];
    if (!SideAllowed(ctx.problem.chip, axis == 0 ? SideAxis::kW : SideAxis::kH, next,
                     axis == 0 ? sink.width : sink.height)) {
      return std::nullopt;
    }
  }
  v = next;
  if (axis < 2) {
    // The grid changed: rebuild the traversal with the same named pattern (raster if unknown).
    TraversalPattern pattern = TraversalPattern::kRaster;
    const Tensor& sink = ctx.problem.tensors[ctx.problem.ops[sg.ops.back()].output];
    const int64_t rows = CeilDiv(sink.height, sg.granularity.h), cols = CeilDiv(sink.width, sg.granularity.w);
    // The last pattern whose order it is (on a grid of one row or column several are): the
    // first from the end.
    for (size_t p = std::size(kAllTraversalPatterns); p-- > 0;) {
      if (IsTraversal(kAllTraversalPatterns[p], rows, cols, sg.traversal)) {
        pattern = kAllTraversalPatterns[p];
        break;
      }
    }
    changed.traversal = MakeTraversal(pattern, CeilDiv(sink.height, g.h), CeilDiv(sink.width, g.w));
  }
  ScheduleEdit edit{i, i + 1, {std::move(changed)}};
  return edit;
}

std::optional<ScheduleEdit> ChangeTraversal(const MoveContext& ctx, const Schedule& s, Rng& rng) {
  const int i = Uniform(rng, static_cast<int>(s.subgraphs.size()));
  const Subgraph& sg = s.subgraphs[i];
  // The grid comes from a sink's shape; the last op in topological order is always a sink.
  const Tensor& sink = ctx.problem.tensors[ctx.problem.ops[sg.ops.back()].output];
  const int64_t rows = CeilDiv(sink.height, sg.granularity.h), cols = CeilDiv(sink.width, sg.granularity.w);
  if (rows * cols < 2) return std::nullopt;
  const TraversalPattern pattern = kAllTraversalPatterns[Uniform(rng, std::size(kAllTraversalPatterns))];
  Subgraph changed = sg;
  changed.traversal = MakeTraversal(pattern, rows, cols);
  if (changed.traversal == sg.traversal) return std::nullopt;
  return ScheduleEdit{i, i + 1, {std::move(changed)}};
}

std::optional<ScheduleEdit> ToggleRetention(const MoveContext& ctx, const Schedule& s, Rng& rng) {
  const int n = static_cast<int>(s.subgraphs.size());
  if (n < 2) return std::nullopt;
  const int i = Uniform(rng, n - 1);
  const Subgraph& a = s.subgraphs[i];
  const Subgraph& b = s.subgraphs[i + 1];
  // Buffers per thread: a move allocates nothing for them.
  thread_local std::vector<TensorId> produced, inputs, candidates;
  ProducedTensorsInto(ctx.problem, a.ops, produced);
  BoundaryInputsInto(ctx.problem, b.ops, inputs);
  candidates.clear();
  for (TensorId t : inputs) {
    if (std::binary_search(produced.begin(), produced.end(), t) && !ctx.problem.IsGraphOutput(t)) {
      candidates.push_back(t);
    }
  }
  if (candidates.empty()) return std::nullopt;
  const TensorId t = candidates[Uniform(rng, static_cast<int>(candidates.size()))];
  std::vector<TensorId> retain = a.retain;
  auto it = std::find(retain.begin(), retain.end(), t);
  if (it != retain.end()) {
    retain.erase(it);
  } else {
    retain.push_back(t);
    std::sort(retain.begin(), retain.end());
  }
  const bool refit = Coin(rng, 0.5);
  return Finish(ctx, s, i, i + 2, PiecesOf(Piece{a.ops, std::move(retain), &a, refit}, Piece{b.ops, b.retain, &b, refit}));
}

}  // namespace

std::optional<ScheduleEdit> MakeMove(const MoveContext& context, MoveKind kind,
                                     const Schedule& schedule, std::mt19937_64& rng) {
  if (schedule.subgraphs.empty()) return std::nullopt;
  switch (kind) {
    case MoveKind::kMergeAdjacent: return MergeAdjacent(context, schedule, rng);
    case MoveKind::kMergeIntoConsumer: return MergeIntoConsumer(context, schedule, rng);
    case MoveKind::kSplit: return Split(context, schedule, rng);
    case MoveKind::kMoveOp: return MoveOp(context, schedule, rng);
    case MoveKind::kDuplicate: return Duplicate(context, schedule, rng);
    case MoveKind::kDropDuplicate: return DropDuplicate(context, schedule, rng);
    case MoveKind::kSwap: return Swap(context, schedule, rng);
    case MoveKind::kMoveNextToProducer: return MoveNextToProducer(context, schedule, rng);
    case MoveKind::kGranularity: return ChangeGranularity(context, schedule, rng);
    case MoveKind::kTraversal: return ChangeTraversal(context, schedule, rng);
    case MoveKind::kRetention: return ToggleRetention(context, schedule, rng);
    case MoveKind::kMergeReaders: return MergeReaders(context, schedule, rng);
    case MoveKind::kGatherKLoop: return GatherKLoop(context, schedule, rng);
    case MoveKind::kSplitRecompute: return SplitRecompute(context, schedule, rng);
  }
  return std::nullopt;
}

std::optional<ScheduleEdit> RandomMove(const MoveContext& context, const WorkerParams& weights,
                                       const Schedule& schedule, std::mt19937_64& rng,
                                       MoveKind* kind) {
  // Partition weight spread over its six kinds, order over its two.
  const double w[kNumMoveKinds] = {
      weights.weight_partition * 0.25, weights.weight_partition * 0.15, weights.weight_partition * 0.2,
      weights.weight_partition * 0.2,  weights.weight_partition * 0.1,  weights.weight_partition * 0.1,
      weights.weight_order * 0.4,      weights.weight_order * 0.6,      weights.weight_granularity,
      weights.weight_traversal,        weights.weight_retention,
      weights.weight_partition * weights.merge_readers_share,
      weights.weight_partition * weights.gather_kloop_share,
      weights.weight_partition * weights.split_recompute_share};
  // Without the fan-out the draw is over the first eleven kinds exactly as before kMergeReaders
  // existed (a zero weight at the end could still shift a draw: the last cumulative sum is
  // rounded to one).
  // kGatherKLoop likewise, only where a Pointwise op sums MatMuls of different K; with it, the
  // merge-readers weight stays in the list (zero when that move does not apply).
  const bool readers = context.merge_readers && weights.merge_readers_share > 0;
  const bool gather = context.gather_kloop && weights.gather_kloop_share > 0;
  // kSplitRecompute only where kMergeReaders may be drawn (the merged heads it cuts come from
  // there); with it the list is whole, the kinds that do not apply weighted zero.
  const bool split = context.merge_readers && weights.split_recompute_share > 0;
  double w_used[kNumMoveKinds];
  std::copy(std::begin(w), std::end(w), w_used);
  size_t kinds;
  if (split) {
    if (!readers) w_used[kNumMoveKinds - 3] = 0;
    if (!gather) w_used[kNumMoveKinds - 2] = 0;
    kinds = kNumMoveKinds;
  } else {
    if (gather && !readers) w_used[kNumMoveKinds - 3] = 0;
    kinds = gather ? kNumMoveKinds - 1 : kNumMoveKinds - (readers ? 2 : 3);
  }
  // Built once per thread and set of weights (it allocates); drawing from it keeps no state.
  thread_local std::array<double, kNumMoveKinds> built_for{};
  thread_local std::discrete_distribution<int> pick;
  if (!std::equal(std::begin(w_used), std::end(w_used), built_for.begin()) || pick.probabilities().size() != kinds) {
    std::copy(std::begin(w_used), std::end(w_used), built_for.begin());
    pick = std::discrete_distribution<int>(std::begin(w_used), std::begin(w_used) + kinds);
  }
  for (int attempt = 0; attempt < 8; ++attempt) {
    const MoveKind drawn = static_cast<MoveKind>(pick(rng));
    if (kind != nullptr) *kind = drawn;
    if (auto edit = MakeMove(context, drawn, schedule, rng)) return edit;
  }
  return std::nullopt;
}

}  // namespace annealer
