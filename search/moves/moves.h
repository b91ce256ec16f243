// Neighbourhood moves on a schedule. A move never touches the schedule: it returns a
// ScheduleEdit for IncrementalEvaluator::Propose, or nullopt when it does not apply here.
// New or changed subgraphs get their granularity and traversal from FitSubgraph, so a
// partition move is priced at a good configuration rather than a stale one.
//
// Families (weights in WorkerParams):
//   partition   merge adjacent subgraphs, merge a producer subgraph into a later consumer,
//               split one (random topological cut or its components), move a boundary op
//               across, duplicate a producer into a consumer (recompute), drop a duplicate,
//               merge the readers of one tensor (recomputing its producer) so it loads once,
//               gather the MatMuls of one K into the k-loop of a sum of MatMuls (evicting the
//               other K's), split one in two parts that both compute its cheap first ops again
//   order       swap independent neighbours, move a consumer right after its producer
//   granularity halve / double one of w, h, k, or refit all of them
//   traversal   another named traversal order
//   retention   toggle one tensor of P(S_i) ∩ IN(S_i+1) in tensors_to_retain[i]
#pragma once

#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "eval/cost/incremental.h"
#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "search/params.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"

namespace annealer {

enum class MoveKind {
  kMergeAdjacent,
  kMergeIntoConsumer,
  kSplit,
  kMoveOp,
  kDuplicate,
  kDropDuplicate,
  kSwap,
  kMoveNextToProducer,
  kGranularity,
  kTraversal,
  kRetention,
  // Drawn only where some produced tensor has at least three reading ops (see
  // MergeReadersApplies): elsewhere the draw over the other kinds is the same as before it existed.
  kMergeReaders,
  // Drawn only where a Pointwise op reads MatMuls of different reduction lengths, or three
  // taps of one LHS larger than fast memory (see GatherKLoopApplies).
  kGatherKLoop,
  // Drawn only where kMergeReaders is (see SplitRecomputeAt): a subgraph cut in two whose parts
  // both compute its cheap first ops again.
  kSplitRecompute,
};
inline constexpr int kNumMoveKinds = 14;
const char* MoveName(MoveKind kind);

struct MoveContext {
  const Problem& problem;
  const std::vector<int>& rank;  // TopologicalRanks(problem)
  const SubgraphPricer& pricer;
  std::function<bool()> stop;    // polled inside granularity fitting
  // Optional: the evaluator whose committed schedule the moves are made on. When a move's
  // schedule is that committed schedule and it is valid, the repair of the move's edit works on
  // a window around the edit, reading what lies before and after it from the evaluator's
  // per-tensor lists, instead of re-scanning the whole schedule (which made a move cost time
  // proportional to the graph). It falls back to the whole-schedule repair when the edit's
  // effects reach past the window (a tensor the window no longer writes is read later, a
  // retain set the window must drop belongs to an earlier subgraph).
  const IncrementalEvaluator* committed = nullptr;
  // MergeReadersApplies(problem): RandomMove draws kMergeReaders (and kSplitRecompute, which
  // undoes too large a merge of readers) only when true.
  bool merge_readers = false;
  // GatherKLoopApplies(problem): RandomMove draws kGatherKLoop only when true.
  bool gather_kloop = false;
  // Whether a repair reads the boundary inputs and sinks of the committed subgraphs it scans
  // from `committed` (IncrementalEvaluator::CommittedInputs, ...) instead of deriving them: the
  // same lists, so the same edits (tests compare both ways).
  bool committed_facts = true;
  // Whether the repair tries windows around the edit before the whole schedule (tests turn it
  // off to compare whole-schedule repairs).
  bool local_repair = true;
  // An edit keeps a run of at least this many committed subgraphs that it leaves as they are
  // (a move across a stretch) in place (ScheduleEdit::kept_begin) instead of copying them into
  // its replacement; 0: never. The same edit once the run is copied in (tests compare both ways).
  int min_kept_run = 4;
};

// True when some tensor made by an op is read by at least three ops: the fan-out (a normalised
// activation feeding many projections) where merging its readers can save loads. False on
// every contest problem (at most two readers per tensor), whose move stream stays as it was.
bool MergeReadersApplies(const Problem& problem);
// True when some Pointwise op sums MatMuls of different reduction lengths, three or more of
// them of one K (a convolution over a concatenation of many equal blocks, one MatMul per block,
// as in DenseNet): only one K can be its subgraph's k-loop (G3), and the many blocks of one K are
// what the move gains most on. Also true when some Pointwise op sums three or more MatMuls of
// one K that read one LHS tensor larger than fast memory (a convolution's taps on a small
// scratchpad): in one k-loop a slice of the shared LHS that several taps request in a step is
// loaded once (D5), while the taps' separate subgraphs each stream it again, and a 10-s search
// left them separate. Where the LHS fits (GoogLeNet, ResNet-50 on tpu-v5e) the draw stays that of
// before: there the taps were fused already, and drawing the move on GoogLeNet cost 4 % at 10 s.
// False on every contest problem (problems 5 and 17 sum two MatMuls of different K, none sums
// three) and on GoogLeNet (its inception concatenations sum at most two blocks of one width, and
// the move's reshuffles there cost more than they gained at equal work).
bool GatherKLoopApplies(const Problem& problem);

// The merge-readers move (kMergeReaders) at a chosen place, without its random draws: whether
// subgraph j loads the produced tensor t in a way the move works on (t has three or more
// reading ops, its producer is not a Layout op, it is not retained into j nor read there by a
// Layout op), and the move's edit for that j and t (nullopt when no other subgraph can be
// absorbed). The move draws j and t and calls these; the start MergeReaderGroups
// (search/starts/constructive.h) tries every place.
bool MergeReadersCandidate(const MoveContext& context, const Schedule& schedule, int j, TensorId t);
std::optional<ScheduleEdit> MergeReadersAt(const MoveContext& context, const Schedule& schedule, int j,
                                           TensorId t);

// The gather-k-loop move (kGatherKLoop) at a chosen place, without its random draws: the
// reduction lengths of the MatMuls whose outputs subgraph j's Pointwise ops load (made elsewhere,
// not retained into j), in the order first met, and the move's edit pulling those of length K
// into j (nullopt when there are none, or the merged ops cannot form a subgraph). The move draws
// j and K and calls these; the start GatherTapGroups (search/starts/constructive.h) tries every
// sum of taps.
std::vector<Elements> GatherKLoopLengths(const MoveContext& context, const Schedule& schedule, int j);
std::optional<ScheduleEdit> GatherKLoopAt(const MoveContext& context, const Schedule& schedule, int j, Elements K);

// Regrouping the readers of one produced tensor t by parts (docs/search.md, "Regroup reader
// parts"). Every subgraph that loads t (does not make it, t not retained into it, no Layout op
// there reads it) is split into one part per reader of t it holds: an op goes to the part of the
// reader it descends from inside; ops that descend from several readers, and what they feed, go
// to the `join`-th of those readers (modulo their number); ops descending from none go to the
// part of their first consumer. Parts of equal shape (kinds, sides, reduction lengths in
// topological order), in schedule order, then form groups of `group`, each with t's producer
// recomputed inside (so the group loads t's inputs once instead of t once per part); a part left
// alone keeps loading t. The loaders' span is rebuilt in a stable topological order (each piece
// at its last source's place unless it must wait for a piece it reads); nullopt when the parts
// cannot be split this way, a group has no valid configuration by the structural rules, or the
// pieces form a cycle. RegroupReaderTensors lists the tensors worth trying (made by a non-Layout
// op, three or more reading ops).
std::vector<TensorId> RegroupReaderTensors(const Problem& problem);
std::optional<ScheduleEdit> RegroupReaderPartsAt(const MoveContext& context, const Schedule& schedule, TensorId t,
                                                 int join, int group);

// The split-recompute move (kSplitRecompute) at a chosen place (docs/search.md, "Split with
// recompute"). A subgraph's head is its Pointwise, non-Layout ops whose producers inside it are
// all head ops too (a residual add and the LayerNorm after it); the rest is its body. The body
// is cut in two: the first part is every body op of the pivot's class (same kind, depth inside
// the subgraph and output shape: the same op of each parallel branch) with its ancestors in the
// body (the pivot alone with its ancestors when that is the whole body), the second part the
// rest; each part takes the head ops it descends from, so both compute them again rather than
// the second loading what the first made. Each part's connected components become subgraphs,
// the first part's before the second's; with `retain` a piece keeps what only the next piece
// reads in fast memory. nullopt when the subgraph has no head, the cut leaves a part empty,
// fewer than two parts recompute a head op, or the fit or repair fails.
struct SplitRecomputeShape {
  std::vector<char> head;   // per position in the subgraph's ops
  std::vector<int> depth;   // longest path from the subgraph's sources, in ops inside it
  std::vector<int> body;    // positions of the non-head ops, in order
  int head_ops = 0;
};
SplitRecomputeShape SplitRecomputeShapeOf(const Problem& problem, const std::vector<OpId>& ops);
std::optional<ScheduleEdit> SplitRecomputeAt(const MoveContext& context, const Schedule& schedule, int i,
                                             OpId pivot, bool retain);

// One move of the given kind at a random place; nullopt when it does not apply.
std::optional<ScheduleEdit> MakeMove(const MoveContext& context, MoveKind kind,
                                     const Schedule& schedule, std::mt19937_64& rng);

// A move of a random kind drawn with the family weights (retries a few kinds when one does not
// apply). `kind` receives the kind drawn.
std::optional<ScheduleEdit> RandomMove(const MoveContext& context, const WorkerParams& weights,
                                       const Schedule& schedule, std::mt19937_64& rng,
                                       MoveKind* kind);

// Makes every boundary input available (V7) by recomputing missing producers inside the
// subgraph that reads them, drops retains that starve later loads, and refits what changed.
// False when it gave up (the schedule is then partly repaired; callers discard it).
bool RepairAvailability(const MoveContext& context, Schedule& schedule);

}  // namespace annealer
