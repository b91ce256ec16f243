// Incremental evaluation of a schedule under edits, for one search worker.
//
// Protocol (one worker, one thread; the CostCache behind it is shared and thread-safe):
//
//   Reset(schedule)  (Propose (Commit | Revert))*
//
// - Reset prices the whole schedule from scratch.
// - Propose(edit) prices the schedule with subgraphs [begin, end) replaced by `replacement`
//   without changing the committed state. It re-prices only the replaced subgraphs and the
//   subgraph right after them (its retained-in context may have changed), re-checks the
//   sequence rules (V1 coverage, V7 availability, V9 end state) and returns the candidate.
//   An edit's kept run (ScheduleEdit::kept_begin) is read in place, neither copied nor priced:
//   the candidate is the one of the same edit with the run copied in, to the bit.
//   At most one proposal is pending: a second Propose without Commit/Revert discards the first.
// - Commit() makes the pending proposal the committed schedule. Revert() drops it (O(1)).
//   Commit never re-prices and never walks the whole schedule's facts: it updates per-tensor
//   writer / reader / retainer lists for the ops and tensors the edit touched, re-checks the
//   subgraphs whose inputs those tensors are, and splices the per-subgraph vectors (a memmove,
//   plus one sequential sum of the latencies so the committed total is summed afresh and does
//   not drift). Per move, time grows with what the edit touches, not with the graph.
//
// Positions of the committed schedule carry labels, increasing along the sequence and kept
// when other subgraphs are inserted or erased, so that "written before position p" is one
// comparison of labels whatever the edits before p did (relabelled evenly when an insertion
// finds no room; rare). The queries below read the committed schedule only.
//
// The result of every committed state equals EvaluateOracle on the same schedule (latency to
// 1e-9 relative, same verdict); tests/eval/cost/incremental_test.cc checks this on long random runs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "eval/model/flat_problem.h"
#include "eval/model/evaluation.h"
#include "eval/model/problem.h"
#include "eval/model/schedule.h"

namespace annealer {

class CostCache;

// Replace subgraphs [begin, end) of the current schedule by `replacement`.
// begin == end inserts; an empty replacement erases.
//
// A run of the replaced subgraphs the edit keeps as they are may stay out of `replacement`
// (kept_begin < kept_end): the new range is then replacement[0, kept_at), the subgraphs
// [kept_begin, kept_end) of the schedule edited, then replacement[kept_at, ...). So a move that
// carries a subgraph across a stretch of hundreds (kMoveNextToProducer, kMergeIntoConsumer) is two
// edits around the stretch, which is neither copied nor compared again. Invariant:
// begin <= kept_begin <= kept_end <= end and kept_at <= replacement.size().
struct ScheduleEdit {
  int begin = 0;
  int end = 0;
  std::vector<Subgraph> replacement;
  int kept_at = 0;
  int kept_begin = 0;
  int kept_end = 0;
  int kept() const { return kept_end - kept_begin; }
  // Subgraphs in the new range.
  int size() const { return static_cast<int>(replacement.size()) + kept(); }
};

// The schedule with the edit applied (what Commit() makes of the committed schedule).
Schedule ApplyEdit(const Schedule& schedule, const ScheduleEdit& edit);
// Copies the kept run of `edit` (of `schedule`) into its replacement: the same edit, with
// nothing kept.
void MaterializeKept(const Schedule& schedule, ScheduleEdit& edit);

struct Candidate {
  bool valid = false;
  Latency total = 0;     // meaningful when valid
  Violation violation;   // first failing rule when !valid
};

// A sequence of heap objects that a splice shifts as pointers: inserting into or erasing from
// the middle of a long schedule moves 8 bytes per later subgraph instead of a whole result or
// fact record (which made each commit cost time in proportion to the schedule). Elements keep
// their storage across splices: what a splice takes out goes back to the pending buffer.
template <typename T>
class PointerVector {
 public:
  PointerVector() = default;
  PointerVector(const PointerVector&) = delete;
  PointerVector& operator=(const PointerVector&) = delete;
  ~PointerVector() {
    for (T* item : items_) delete item;
    for (T* item : spare_) delete item;
  }

  size_t size() const { return items_.size(); }
  T& operator[](size_t i) { return *items_[i]; }
  const T& operator[](size_t i) const { return *items_[i]; }
  // Grows with default-constructed elements or shrinks (keeping the first n).
  void resize(size_t n) {
    for (size_t i = n; i < items_.size(); ++i) spare_.push_back(items_[i]);
    const size_t old = items_.size();
    items_.resize(n, nullptr);
    for (size_t i = old; i < n; ++i) items_[i] = Take();
  }
  // Exchanges element i with element j of `other` (their storage).
  void SwapItem(size_t i, PointerVector& other, size_t j) { std::swap(items_[i], other.items_[j]); }
  // Replaces [b, e) by the first m elements of `pending`, which receives the replaced ones
  // (fresh ones where the range grew): no element is copied, and the shift of the tail moves
  // raw pointers (a memmove).
  void Splice(size_t b, size_t e, PointerVector& pending, size_t m) {
    const size_t old = e - b;
    if (m > old) {
      items_.insert(items_.begin() + static_cast<std::ptrdiff_t>(e), m - old, nullptr);
    } else if (m < old) {
      spare_.insert(spare_.end(), items_.begin() + static_cast<std::ptrdiff_t>(b + m),
                    items_.begin() + static_cast<std::ptrdiff_t>(e));
      items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(b + m),
                   items_.begin() + static_cast<std::ptrdiff_t>(e));
    }
    for (size_t k = 0; k < m; ++k) {
      std::swap(items_[b + k], pending.items_[k]);
      if (pending.items_[k] == nullptr) pending.items_[k] = Take();
    }
  }

 private:
  T* Take() {
    if (spare_.empty()) return new T();
    T* item = spare_.back();
    spare_.pop_back();
    return item;
  }
  std::vector<T*> items_;  // owned
  std::vector<T*> spare_;  // owned: taken out by splices, reused by the next ones
};

// Subgraphs whose storage nobody needs any more (those a committed edit replaced, a dropped
// proposal's), kept per thread so that the next edits are built in their buffers instead of
// allocating: on a network a move across a stretch copies hundreds of subgraphs into its edit.
// Only storage passes through: a taken subgraph's contents are unspecified, and the taker sets
// every field.
class SpareSubgraphs {
 public:
  // Moves the elements of `from` into the thread's spares (up to a bound) and empties `from`.
  static void Give(std::vector<Subgraph>& from);
  // A spare, or a new subgraph when there is none.
  static Subgraph Take();

 private:
  static constexpr size_t kMaxSpares = 4096;
  static std::vector<Subgraph>& Pool();
};

class IncrementalEvaluator {
 public:
  // `cache` may be null (no caching). Both must outlive the evaluator.
  IncrementalEvaluator(const Problem& problem, CostCache* cache);

  Candidate Reset(const Schedule& schedule);
  // The pending candidate: valid until the next Reset, Propose, Commit or Revert.
  const Candidate& Propose(const ScheduleEdit& edit);
  // The same, taking the edit's replacement instead of copying it (a caller done with it).
  const Candidate& Propose(ScheduleEdit&& edit);
  void Commit();
  void Revert();
  // Propose(edit), then Commit where the candidate is valid and totals below `current` (which
  // takes it), else Revert: the starts' passes keep strict gains only. Whether it committed.
  bool CommitIfLower(ScheduleEdit&& edit, Candidate& current);

  const Schedule& schedule() const { return schedule_; }
  const Candidate& committed() const { return committed_; }
  // Per-subgraph results of the committed schedule, parallel to schedule().subgraphs.
  const PointerVector<SubgraphResult>& subgraph_results() const { return results_; }

  // Committed-schedule queries for callers that repair edits locally (search/moves/moves.cc), all
  // O(number of writers / readers / retainers of t), which is small:
  // t is written to slow memory by a subgraph before `position` (position may be n);
  bool WrittenBefore(TensorId t, int position) const;
  // a subgraph before `position` lists t in its tensors_to_retain;
  bool RetainedBefore(TensorId t, int position) const;
  // a subgraph after `position` reads t as a boundary input (loads it or takes it retained);
  bool ReadAfter(TensorId t, int position) const;
  // a subgraph at a position in [from, to) reads t as a boundary input;
  bool ReadBetween(TensorId t, int from, int to) const;
  // a subgraph at a position in [from, to) writes t to slow memory;
  bool WrittenBetween(TensorId t, int from, int to) const;
  // the first position at or after `from` whose subgraph retains something (n when none).
  int NextRetaining(int from) const;
  // the committed schedule has no failing subgraph, covers every op and writes every output.
  bool CommittedValid() const { return committed_.valid; }
  // ops the committed schedule runs in more than one subgraph (recomputation);
  int RecomputedOps() const { return recomputed_ops_; }
  // their places: the sum of their subgraph counts;
  int RecomputedPlaces() const { return recomputed_places_; }
  // the subgraphs of the committed schedule that list `op` (0 for an id out of range).
  int CoverCount(OpId op) const {
    return op >= 0 && op < static_cast<OpId>(cover_count_.size()) ? cover_count_[op] : 0;
  }
  // Of committed subgraph i, over its ops with ids in range: the tensors its ops read and none
  // of them produces, sorted and distinct; its sinks (outputs no op of it reads) in op order;
  // and those of its sinks it writes to slow memory (not retained), in op order. The first two
  // are search/subgraph_tools.h's OpsFacts of its op list, kept here (derived with the sequence
  // facts at no extra walk) so that a repair need not derive them again for every committed
  // subgraph it scans.
  std::span<const TensorId> CommittedInputs(int i) const { return facts_[i].inputs; }
  std::span<const TensorId> CommittedSinks(int i) const { return facts_[i].sinks; }
  std::span<const TensorId> CommittedWrites(int i) const { return facts_[i].writes; }
  // Hints for a caller about to read those of many committed subgraphs (each subgraph's facts,
  // and each list, is a heap block of its own): fetch subgraph i's record, then, once that is
  // in, its inputs and sinks, so that the reads wait for many blocks at once instead of one by
  // one. No effect on any answer.
  void PrefetchCommittedFacts(int i) const { __builtin_prefetch(&facts_[i]); }
  void PrefetchCommittedLists(int i) const {
    const SequenceFacts& facts = facts_[i];
    __builtin_prefetch(facts.inputs.data());
    __builtin_prefetch(facts.sinks.data());
  }

 private:
  const Problem& problem_;
  CostCache* cache_;
  Schedule schedule_;
  Candidate committed_;
  PointerVector<SubgraphResult> results_;

  // The pending proposal.
  bool pending_ = false;
  ScheduleEdit pending_edit_;
  Candidate pending_candidate_;
  // The replacement's results, then (at index m) the successor's when it was re-priced.
  PointerVector<SubgraphResult> pending_results_;
  bool pending_successor_repriced_ = false;

  // What the sequence rules (V1 coverage, V7, V9) need to know about one subgraph.
  struct SequenceFacts {
    std::vector<std::pair<OpId, TensorId>> boundary_inputs;  // in the oracle's check order
    std::vector<TensorId> writes;                            // outputs written to slow memory
    std::vector<OpId> valid_ops;                             // ops with ids in range
    std::vector<TensorId> inputs;                            // boundary input tensors, sorted, distinct
    std::vector<TensorId> sinks;                             // outputs no op of it reads, in op order
  };
  void Facts(const Subgraph& subgraph, SequenceFacts& facts);  // refills, keeping capacity
  void Price(const Subgraph& subgraph, const std::vector<TensorId>& retained_in,
             SubgraphResult& result);
  // Rebuilds the committed sequence state (labels, per-tensor lists, flags, counts, total) in
  // one linear pass (Reset, and after a relabelling).
  void RebuildSequenceState();
  // Adds (+1) or removes (-1) the per-op and per-tensor entries of committed subgraph i.
  void Account(int i, int sign);
  // Local result ok and V7 holds for committed subgraph i (subgraph_ok_'s definition).
  bool SubgraphOk(int i) const;
  int64_t LabelAt(int position) const;
  int PositionOfLabel(int64_t label) const;
  Candidate CommittedCandidate() const;
  // V7 for input t of op: a graph input, `written` to slow memory before, or retained by the
  // previous subgraph; a Layout op gathers from slow memory, so retained is not enough (L1).
  bool Available(OpId op, TensorId t, bool written, const std::vector<TensorId>& retained_in) const;
  // The V7 violation, or L1's for a Layout op.
  Violation V7Violation(int position, OpId op, TensorId tensor) const;

  FlatProblem flat_;                         // the problem's DAG facts, laid out flat
  PointerVector<SequenceFacts> facts_;       // parallel to schedule_.subgraphs
  std::vector<char> subgraph_ok_;            // local result ok and V7 holds, per subgraph
  std::vector<int> failing_;                 // ascending positions where subgraph_ok_ is false
  std::vector<int64_t> labels_;              // parallel to schedule_.subgraphs, increasing
  std::vector<Latency> latencies_;           // of results_, packed for the sum of every commit
  std::vector<Latency> prefix_sums_;         // [i]: latencies_[0] + ... + latencies_[i], in order
  // Per tensor, ascending labels of the committed subgraphs that write it to slow memory, read
  // it as a boundary input (once per reading op), and list it in tensors_to_retain.
  std::vector<std::vector<int64_t>> writers_, readers_, retainers_;
  // Per tensor, the first label of writers_ (INT64_MAX when none), packed: WrittenBefore, asked
  // for every input a repair scans, reads one word instead of a list's header and its block.
  std::vector<int64_t> first_writer_;
  // Ascending labels of the committed subgraphs with a non-empty retain list.
  std::vector<int64_t> retaining_;
  std::vector<int> cover_count_;             // per op: subgraphs containing it
  int uncovered_ops_ = 0;
  int recomputed_ops_ = 0;  // ops in more than one subgraph
  int recomputed_places_ = 0;  // and the number of subgraphs listing them
  int unwritten_outputs_ = 0;
  Latency latency_sum_ = 0;                  // sum of committed subgraph latencies

  PointerVector<SequenceFacts> pending_facts_;  // for the replacement
  // Per replacement subgraph: the committed subgraph of the replaced range it equals after the
  // same retained-in list, whose facts stand for its own (pending_facts_ then unused), or -1.
  std::vector<int> pending_twin_;
  std::vector<char> twin_lent_;  // per replaced subgraph: its facts stand for a twin's
  // Of the commit being spliced: per replacement subgraph, the label it keeps from its twin (0:
  // a new one); per replaced subgraph, whether a twin keeps its label (see SpliceCommitted).
  std::vector<int64_t> kept_label_;
  std::vector<char> label_kept_;
  bool labels_kept_ = false;
  bool pending_has_successor_ = false;
  // The proposal replaced one subgraph by one with the same op list and retained set (a new
  // granularity or traversal): the sequence facts are the committed ones.
  // Only its granularity and traversal are kept (pending_edit_ holds just begin and end).
  bool pending_same_facts_ = false;
  Granularity pending_granularity_;
  std::optional<std::vector<int64_t>> pending_traversal_;
  const Candidate& ProposeSameFacts(int position, const Subgraph& replacement);
  // Propose; `take` (null, or `edit` itself when it was passed as an rvalue) is moved from.
  // Its steps, in order, over the edited range as EditView (incremental.cc) reads it:
  const Candidate& ProposeFrom(const ScheduleEdit& edit, ScheduleEdit* take);
  struct EditView;
  // the replacement's facts and results (a committed twin's lent, the rest derived and priced);
  void PriceReplacement(const EditView& v);
  // the successor re-priced when what it finds retained changed; the proposal's total;
  Latency ProposedTotal(const EditView& v);
  // the writes and covers of the old range and the new one: touched_tensors_, delta_tensors_,
  // touched_ops_ and the kept run's part (part_tensors_, kept_recheck_);
  void CountRangeChanges(const EditView& v);
  // the sequence rules from those counts: the first failure in sequence order, else valid
  // (its total left to the caller). ProposeFrom then clears the counts.
  Candidate CheckProposal(const EditView& v);
  void SpliceCommitted(int begin, int end, int replacement_size);
  // With ANNEALER_HEAVY_CHECKS: aborts when the committed state differs from EvaluateOracle.
  void CheckAgainstOracle() const;

  // Scratch, sized to the problem; stamps avoid clearing between proposals.
  std::vector<uint32_t> op_stamp_;
  std::vector<uint32_t> tensor_stamp_;
  uint32_t stamp_ = 0;
  std::vector<int> old_region_writes_, new_region_writes_;  // per tensor, for the edited range
  std::vector<int> running_writes_;                         // per tensor, while scanning
  // Per tensor, the writes before an edit's kept run (old [begin, kept_begin), new [0, kept_at)),
  // and the tensors they count.
  std::vector<int> old_part_writes_, new_part_writes_;
  std::vector<TensorId> part_tensors_;
  // Of the pending proposal's kept run: the committed positions after its first whose V7 status
  // the edit may change (they read a tensor written before the run in one and not the other).
  std::vector<int> kept_recheck_;
  std::vector<Latency> kept_latencies_;  // Commit's scratch: the kept run's latencies
  std::vector<int> cover_delta_;                                           // per op
  std::vector<int> candidates_;  // positions whose V7 status an edit may change (Propose, Commit)
  std::vector<TensorId> touched_tensors_;
  // Of the pending proposal's touched tensors, those the old range writes and the new one does
  // not or the reverse (Commit re-checks their readers).
  std::vector<TensorId> delta_tensors_;
  std::vector<OpId> touched_ops_;
};

}  // namespace annealer
