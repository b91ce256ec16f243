#include "search/moves/moves.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <tuple>

#include "eval/traversal.h"
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
  }
  return "?";
}


namespace {

// The schedule a repair works on. Each position points at its current subgraph. A position
// borrowed from something the repair must leave alone (the committed schedule under a move,
// the move's own edit) is copied on its first change, so repairing a move copies only what
// the repair changes instead of the whole schedule.
class RepairTarget {
 public:
  // Borrows every position.
  explicit RepairTarget(std::vector<const Subgraph*> borrowed)
      : current_(std::move(borrowed)), writable_(current_.size(), nullptr) {}
  // Edits the schedule in place.
  explicit RepairTarget(Schedule& schedule) : in_place_(true) {
    for (Subgraph& sg : schedule.subgraphs) {
      current_.push_back(&sg);
      writable_.push_back(&sg);
    }
  }

  int size() const { return static_cast<int>(current_.size()); }
  const Subgraph& operator[](int i) const { return *current_[i]; }
  const Subgraph* at(int i) const { return current_[i]; }
  // True when position i holds a copy made by Write (the repair changed it).
  bool copied(int i) const { return !in_place_ && writable_[i] != nullptr; }
  Subgraph& Write(int i) {
    if (writable_[i] == nullptr) {
      // At most one copy per position, so reserving them all keeps earlier copies in place.
      if (copies_.capacity() == 0) copies_.reserve(current_.size());
      copies_.push_back(*current_[i]);
      writable_[i] = &copies_.back();
      current_[i] = writable_[i];
    }
    return *writable_[i];
  }

 private:
  bool in_place_ = false;
  std::vector<const Subgraph*> current_;
  std::vector<Subgraph*> writable_;  // null while borrowed
  std::vector<Subgraph> copies_;
};

// Buffers of Repair, kept per thread so a move allocates nothing for them.
struct RepairScratch {
  // The facts of every subgraph: subgraph m's boundary inputs are input_of[m], its sinks
  // sink_of[m]. A subgraph of the committed schedule (borrowed, or an equal op list in the
  // edit at or next to its committed place) has them from the evaluator; the others' are
  // derived into `inputs` and `sinks`, back to back (one allocation each).
  std::vector<TensorId> inputs, sinks;
  std::vector<int> input_begin, sink_begin;
  std::vector<int> committed_index;  // per position: the committed subgraph whose facts it has, or -1
  std::vector<std::span<const TensorId>> input_of, sink_of;
  OpsFacts grown;  // of the subgraph being scanned, once the scan added ops to it
  std::vector<int> last_use;  // last subgraph loading each tensor, where last_use_set holds it
  StampSet last_use_set;
  StampSet written;           // written to slow memory by a scanned subgraph
  std::vector<char> changed;
  std::vector<char> ops_grown;  // per position: the scan added ops to it (its facts above are stale)
  std::vector<TensorId> kept;
};

// The thread's buffers of Repair. After a repair, the facts in them are those of the positions
// as they were before it, which LocalRepairedEdit reads back.
RepairScratch& ThreadRepairScratch() {
  thread_local RepairScratch scratch;
  return scratch;
}

// What lies around the positions a repair scans, when they are a window of a longer schedule
// (see LocalRepairedEdit). The default frame is a whole schedule.
struct RepairFrame {
  const std::vector<TensorId>* retained_in = nullptr;  // into the first position (null: none)
  // Written to slow memory before the first position (graph inputs aside); null: nothing.
  std::function<bool(TensorId)> written_before;
  // The subgraph right after the last position (null: none); its loads count for last use.
  const std::vector<OpId>* next_ops = nullptr;
  // Loaded by a subgraph after the next one at or after window position `from`; null: none.
  std::function<bool(TensorId, int from)> loaded_beyond;
  // Whether the window may recompute the producer of unavailable tensor t; null: always.
  std::function<bool(TensorId)> may_pull;
  // The committed subgraph that position m may be a copy of (the same op list is checked), or
  // -1; null: none. Positions that borrow a committed subgraph are found without it.
  std::function<int(int m)> committed_guess;
};

// The committed subgraph whose op list position m of `schedule` has (so its facts are the
// evaluator's), or -1.
int CommittedTwin(const MoveContext& env, const RepairTarget& schedule, const RepairFrame& frame, int m) {
  if (env.committed == nullptr || !env.committed_facts) return -1;
  const std::vector<Subgraph>& committed = env.committed->schedule().subgraphs;
  const int n = static_cast<int>(committed.size());
  const Subgraph* at = schedule.at(m);
  const auto address = reinterpret_cast<uintptr_t>(at);
  const auto base = reinterpret_cast<uintptr_t>(committed.data());
  if (address >= base && address < base + n * sizeof(Subgraph)) {
    return static_cast<int>((address - base) / sizeof(Subgraph));
  }
  if (!frame.committed_guess) return -1;
  // A move that carries a subgraph back to its producer shifts the stretch between them by
  // one, a merge into a later consumer the other way, and most edits keep their neighbours in
  // place.
  const int g = frame.committed_guess(m);
  if (g < 0) return -1;
  for (const int c : {g - 1, g + 1, g}) {
    if (c >= 0 && c < n && committed[c].ops == at->ops) return c;
  }
  return -1;
}

enum class RepairStatus { kDone, kGaveUp, kBeyondWindow };

RepairStatus Repair(const MoveContext& env, RepairTarget& schedule, const RepairFrame& frame) {
  const Problem& problem = env.problem;
  const int n = schedule.size();
  const size_t num_tensors = problem.tensors.size();
  RepairScratch& scratch = ThreadRepairScratch();
  std::vector<char>& changed = scratch.changed;
  std::vector<int>& last_use = scratch.last_use;
  changed.assign(n, 0);
  scratch.ops_grown.assign(n, 0);
  last_use.resize(num_tensors);
  scratch.last_use_set.Clear(num_tensors);
  scratch.written.Clear(num_tensors);
  auto in_slow = [&](TensorId t) {
    return problem.producer[t] == kNoOp || scratch.written.Contains(t) ||
           (frame.written_before && frame.written_before(t));
  };
  // Facts of every subgraph (and of the next one after a window), and the last subgraph
  // loading each tensor. Subgraph i is only modified when the scan reaches it, so both stay
  // exact for the subgraphs after i, which are all the checks below look at.
  scratch.inputs.clear();
  scratch.sinks.clear();
  scratch.input_begin.assign(1, 0);
  scratch.sink_begin.assign(1, 0);
  scratch.committed_index.clear();
  const int with_next = frame.next_ops != nullptr ? n + 1 : n;
  for (int m = 0; m < with_next; ++m) {
    const int c = m < n ? CommittedTwin(env, schedule, frame, m) : -1;
    scratch.committed_index.push_back(c);
    if (c >= 0) env.committed->PrefetchCommittedFacts(c);
    if (c < 0) AppendOpsFacts(problem, m < n ? schedule[m].ops : *frame.next_ops, scratch.inputs, scratch.sinks);
    scratch.input_begin.push_back(static_cast<int>(scratch.inputs.size()));
    scratch.sink_begin.push_back(static_cast<int>(scratch.sinks.size()));
  }
  for (int m = 0; m < with_next; ++m) {
    if (const int c = scratch.committed_index[m]; c >= 0) env.committed->PrefetchCommittedLists(c);
  }
  // Spans once the derived lists stopped growing.
  scratch.input_of.clear();
  scratch.sink_of.clear();
  for (int m = 0; m < with_next; ++m) {
    if (const int c = scratch.committed_index[m]; c >= 0) {
      scratch.input_of.push_back(env.committed->CommittedInputs(c));
      scratch.sink_of.push_back(env.committed->CommittedSinks(c));
    } else {
      scratch.input_of.emplace_back(scratch.inputs.data() + scratch.input_begin[m],
                                    scratch.inputs.data() + scratch.input_begin[m + 1]);
      scratch.sink_of.emplace_back(scratch.sinks.data() + scratch.sink_begin[m],
                                   scratch.sinks.data() + scratch.sink_begin[m + 1]);
    }
    for (TensorId t : scratch.input_of[m]) {
      scratch.last_use_set.Insert(t);
      last_use[t] = m;
    }
  }
  auto loaded_from = [&](TensorId t, int from) {
    if (scratch.last_use_set.Contains(t) && last_use[t] >= from) return true;
    return frame.loaded_beyond && frame.loaded_beyond(t, std::max(from, with_next));
  };
  auto inputs_of = [&](int m) { return scratch.input_of[m]; };
  auto sinks_of = [&](int m) { return scratch.sink_of[m]; };
  const std::vector<TensorId>* retained_in = frame.retained_in != nullptr ? frame.retained_in : &kNothing;
  for (int i = 0; i < n; ++i) {
    // Subgraph i's facts; they move to scratch.grown once the scan adds ops to it.
    std::span<const TensorId> inputs = inputs_of(i);
    std::span<const TensorId> sinks = sinks_of(i);
    // Pull in producers of unavailable inputs until everything it reads is available.
    for (int round = 0; round < static_cast<int>(problem.ops.size()); ++round) {
      bool added = false;
      for (TensorId t : inputs) {
        const bool available =
            in_slow(t) || std::find(retained_in->begin(), retained_in->end(), t) != retained_in->end();
        if (available) continue;
        const OpId p = problem.producer[t];
        if (p == kNoOp || Contains(schedule[i].ops, p)) return RepairStatus::kGaveUp;
        if (frame.may_pull && !frame.may_pull(t)) return RepairStatus::kBeyondWindow;
        schedule.Write(i).ops.push_back(p);
        added = true;
      }
      if (!added) break;
      Subgraph& sg = schedule.Write(i);
      sg.ops = SortTopologically(env.rank, std::move(sg.ops));
      ComputeOpsFacts(problem, sg.ops, scratch.grown);
      inputs = scratch.grown.inputs;
      sinks = scratch.grown.sinks;
      changed[i] = 1;
      scratch.ops_grown[i] = 1;
    }
    const Subgraph& sg = schedule[i];
    // Keep only retains that are allowed and read by the next subgraph (UsefulRetain), and never
    // keep back a tensor that a later subgraph still loads from slow memory.
    std::vector<TensorId>& kept = scratch.kept;
    kept.clear();
    if (i + 1 < with_next && !sg.retain.empty()) {
      const std::span<const TensorId> next_inputs = inputs_of(i + 1);
      for (TensorId t : sg.retain) {
        // Every tensor has one producer op, so "produced by the subgraph" is "its producer is in".
        if (problem.producer[t] == kNoOp || !Contains(sg.ops, problem.producer[t])) continue;
        if (problem.IsGraphOutput(t)) continue;
        if (!std::binary_search(next_inputs.begin(), next_inputs.end(), t)) continue;
        if (loaded_from(t, i + 2)) continue;
        kept.push_back(t);
      }
      std::sort(kept.begin(), kept.end());
      kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
    }
    if (kept != sg.retain) {
      // The next subgraph's context changes: past a window, that is outside the repair.
      if (i + 1 == n && frame.next_ops != nullptr) return RepairStatus::kBeyondWindow;
      schedule.Write(i).retain = kept;
      changed[i] = 1;
      if (i + 1 < n) changed[i + 1] = 1;
    }
    // Sinks not retained are written back.
    const Subgraph& done = schedule[i];
    for (TensorId out : sinks) {
      if (std::find(done.retain.begin(), done.retain.end(), out) == done.retain.end()) scratch.written.Insert(out);
    }
    retained_in = &done.retain;
  }
  // Refit what changed, in order (each refit sees its final retained-in set).
  for (int i = 0; i < n; ++i) {
    if (!changed[i]) continue;
    const std::vector<TensorId>& rin =
        i > 0 ? schedule[i - 1].retain : (frame.retained_in != nullptr ? *frame.retained_in : kNothing);
    Subgraph& sg = schedule.Write(i);
    // FitSubgraph reads its start only while it runs, so the subgraph itself is the hint.
    auto fit = FitSubgraph(env.pricer, sg.ops, rin, sg.retain, &sg, false, env.stop);
    if (!fit) return RepairStatus::kGaveUp;
    sg = std::move(fit->subgraph);
  }
  return RepairStatus::kDone;
}

bool Repair(const MoveContext& env, RepairTarget& schedule) {
  return Repair(env, schedule, RepairFrame{}) == RepairStatus::kDone;
}

}  // namespace

bool RepairAvailability(const MoveContext& env, Schedule& schedule) {
  RepairTarget target(schedule);
  return Repair(env, target);
}

namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }


}  // namespace

namespace move_kit {
const std::vector<TensorId>& RetainedInto(const Schedule& s, int index) {
  static const std::vector<TensorId> kNone;
  return index > 0 ? s.subgraphs[index - 1].retain : kNone;
}
}  // namespace move_kit

namespace {


// The smallest edit of `s` whose new positions [lo, hi) are `window` (the old ones being
// [lo, old_end)): equal positions at both ends are left out. `edit` is the unrepaired edit
// whose replacement the window may borrow (moved from when it does).
ScheduleEdit DiffEdit(const Schedule& s, int lo, int old_end, RepairTarget& window, ScheduleEdit& edit) {
  const int old_n = old_end - lo;
  const int new_n = window.size();
  const int replaced_begin = edit.begin - lo;
  const int replaced_end = replaced_begin + static_cast<int>(edit.replacement.size());
  // A position still borrowing the same subgraph of `s` is equal without comparing.
  auto same = [&](int old_index, int new_index) {
    const Subgraph* now = window.at(new_index);
    const Subgraph& was = s.subgraphs[lo + old_index];
    return now == &was || *now == was;
  };
  int prefix = 0;
  while (prefix < old_n && prefix < new_n && same(prefix, prefix)) ++prefix;
  int suffix = 0;
  while (suffix < old_n - prefix && suffix < new_n - prefix && same(old_n - 1 - suffix, new_n - 1 - suffix)) {
    ++suffix;
  }
  ScheduleEdit diff;
  diff.begin = lo + prefix;
  diff.end = old_end - suffix;
  diff.replacement.reserve(new_n - suffix - prefix);
  for (int k = prefix; k < new_n - suffix; ++k) {
    if (window.copied(k)) {
      diff.replacement.push_back(std::move(window.Write(k)));
    } else if (k >= replaced_begin && k < replaced_end) {
      diff.replacement.push_back(std::move(edit.replacement[k - replaced_begin]));
    } else {
      diff.replacement.push_back(window[k]);
    }
  }
  return diff;
}

// The repair of an edit of the committed (valid) schedule of `committed` on a window: `reach`
// subgraphs before the edit, the replacement and `reach` after it. A valid schedule needs
// no repair elsewhere unless the edit reaches further, which is checked: the window stops
// writing a tensor that a later subgraph loads, the window's last retain set changes, or an
// earlier subgraph retains what the window must load (the whole-schedule repair would drop that
// retain). nullopt then, and the caller repairs the whole schedule.
std::optional<ScheduleEdit> LocalRepairedEdit(const MoveContext& ctx, const IncrementalEvaluator& committed,
                                              const Schedule& s, ScheduleEdit& edit, int reach) {
  const Problem& problem = ctx.problem;
  const int old_n = static_cast<int>(s.subgraphs.size());
  const int m = static_cast<int>(edit.replacement.size());
  const int shift = m - (edit.end - edit.begin);
  const int new_n = old_n + shift;
  const int lo = std::max(0, edit.begin - reach);
  const int hi = std::min(new_n, edit.begin + m + reach);  // the successor included
  const int old_end = hi - shift;                      // committed index after the window
  thread_local std::vector<const Subgraph*> positions;
  positions.clear();
  for (int k = lo; k < hi; ++k) {
    positions.push_back(k < edit.begin ? &s.subgraphs[k]
                        : k < edit.begin + m ? &edit.replacement[k - edit.begin]
                                             : &s.subgraphs[k - shift]);
  }
  RepairTarget window(positions);
  RepairFrame frame;
  frame.retained_in = lo > 0 ? &s.subgraphs[lo - 1].retain : nullptr;
  frame.written_before = [&](TensorId t) { return committed.WrittenBefore(t, lo); };
  // An unavailable tensor that an earlier subgraph keeps back: the whole repair would drop that
  // retain instead of recomputing the tensor.
  frame.may_pull = [&](TensorId t) { return !committed.RetainedBefore(t, lo); };
  frame.next_ops = old_end < old_n ? &s.subgraphs[old_end].ops : nullptr;
  // Window position `from` is committed position lo + from - shift.
  frame.loaded_beyond = [&](TensorId t, int from) { return committed.ReadAfter(t, lo + from - shift - 1); };
  // Window position k of the replacement is edited position lo + k, at or next to the
  // committed subgraph it may copy.
  frame.committed_guess = [&](int k) {
    const int at = lo + k;
    return at >= edit.begin && at < edit.begin + m ? at : -1;
  };
  const RepairStatus status = Repair(ctx, window, frame);
  if (status == RepairStatus::kBeyondWindow) return std::nullopt;
  if (status == RepairStatus::kGaveUp) return std::move(edit);
  // Tensors the committed window wrote and the new one does not: a later load would starve.
  thread_local RepairScratch lost;  // only its sink lists and stamp sets
  const size_t num_tensors = problem.tensors.size();
  lost.written.Clear(num_tensors);
  // The sinks of every window position before the repair, as Repair derived them: still those
  // of a position whose ops it did not grow, and those of the committed subgraph a position
  // borrowed at the start.
  const RepairScratch& repaired = ThreadRepairScratch();
  auto sinks_before = [&](int k) { return repaired.sink_of[k]; };
  // Calls f(t) for every tensor `sg` writes to slow memory (its sinks not retained); `known`
  // holds its sinks when not null.
  auto for_each_write = [&](const Subgraph& sg, const std::span<const TensorId>* known, auto&& f) {
    std::span<const TensorId> sinks;
    if (known != nullptr) {
      sinks = *known;
    } else {
      lost.inputs.clear();
      lost.sinks.clear();
      AppendOpsFacts(problem, sg.ops, lost.inputs, lost.sinks);
      sinks = lost.sinks;
    }
    for (TensorId t : sinks) {
      if (std::find(sg.retain.begin(), sg.retain.end(), t) == sg.retain.end()) f(t);
    }
  };
  for (int k = 0; k < window.size(); ++k) {
    const std::span<const TensorId> known = sinks_before(k);
    for_each_write(window[k], repaired.ops_grown[k] ? nullptr : &known, [&](TensorId t) { lost.written.Insert(t); });
  }
  bool reaches_further = false;
  auto lost_write = [&](TensorId t) {
    reaches_further = reaches_further || (!lost.written.Contains(t) && !committed.WrittenBefore(t, lo) &&
                                          committed.ReadAfter(t, old_end - 1));
  };
  for (int c = lo; c < old_end && !reaches_further; ++c) {
    if (ctx.committed_facts) {
      for (TensorId t : committed.CommittedWrites(c)) lost_write(t);
      continue;
    }
    // Committed positions outside the edit are the window's borrowed ones.
    const int k = c < edit.begin ? c - lo : c >= edit.end ? c + shift - lo : -1;
    const std::span<const TensorId> known = k >= 0 ? sinks_before(k) : std::span<const TensorId>();
    for_each_write(s.subgraphs[c], k >= 0 ? &known : nullptr, lost_write);
  }
  if (reaches_further) return std::nullopt;
  return DiffEdit(s, lo, old_end, window, edit);
}

// The edit after repairing data availability of the whole edited schedule (a merge can make a
// tensor ephemeral that a later subgraph loads, a split or reorder can starve a consumer):
// missing producers are recomputed where needed. The result is the smallest edit that turns
// `s` into the repaired schedule; the unrepaired edit when the repair gives up.
// The first position whose subgraph the whole-schedule repair of `edit` (of the committed, valid
// schedule `s`) can change, at most edit.begin: before the edit it pulls nothing in (every input
// of a valid schedule's subgraph is available) and changes a subgraph only by filtering its
// retain set, which this checks as Repair's scan would, on the edited schedule's loads
// (committed readers from the evaluator, the replacement's derived). The repair of the edited
// schedule from there, after the committed prefix, is then the whole repair.
int UnchangedPrefix(const MoveContext& ctx, const IncrementalEvaluator& committed, const Schedule& s,
                    const ScheduleEdit& edit) {
  const Problem& problem = ctx.problem;
  const int old_n = static_cast<int>(s.subgraphs.size());
  const int m = static_cast<int>(edit.replacement.size());
  const int shift = m - (edit.end - edit.begin);
  const int new_n = old_n + shift;
  // The replacement's boundary inputs, derived on first use.
  thread_local std::vector<TensorId> inputs, sinks;
  thread_local std::vector<int> input_begin;
  bool derived = false;
  auto derive = [&] {
    if (derived) return;
    derived = true;
    inputs.clear();
    sinks.clear();
    input_begin.assign(1, 0);
    for (const Subgraph& sg : edit.replacement) {
      AppendOpsFacts(problem, sg.ops, inputs, sinks);
      input_begin.push_back(static_cast<int>(inputs.size()));
    }
  };
  auto replacement_inputs = [&](int r) {
    derive();
    return std::span<const TensorId>(inputs.data() + input_begin[r], inputs.data() + input_begin[r + 1]);
  };
  // Read as a boundary input at an edited position >= from (from <= edit.begin + 1).
  auto loaded_from = [&](TensorId t, int from) {
    if (committed.ReadBetween(t, from, edit.begin)) return true;
    for (int r = std::max(0, from - edit.begin); r < m; ++r) {
      const std::span<const TensorId> in = replacement_inputs(r);
      if (std::binary_search(in.begin(), in.end(), t)) return true;
    }
    return committed.ReadBetween(t, std::max(edit.end, from - shift), old_n);
  };
  for (int i = 0; i < edit.begin; ++i) {
    const Subgraph& sg = s.subgraphs[i];
    if (sg.retain.empty()) continue;
    if (i + 1 >= new_n) return i;
    // Edited position i + 1: committed, the replacement's first, or the committed one after an
    // erased range.
    const std::span<const TensorId> next_inputs =
        i + 1 < edit.begin ? committed.CommittedInputs(i + 1)
        : m > 0            ? replacement_inputs(0)
                           : committed.CommittedInputs(edit.end);
    // Repair keeps the retained tensors that pass, sorted and distinct: the same list only when
    // the list is sorted and distinct and every tensor passes.
    for (size_t k = 0; k < sg.retain.size(); ++k) {
      const TensorId t = sg.retain[k];
      if (k > 0 && sg.retain[k - 1] >= t) return i;
      if (problem.producer[t] == kNoOp || !Contains(sg.ops, problem.producer[t])) return i;
      if (problem.IsGraphOutput(t)) return i;
      if (!std::binary_search(next_inputs.begin(), next_inputs.end(), t)) return i;
      if (loaded_from(t, i + 2)) return i;
    }
  }
  return edit.begin;
}

// The edit after repairing data availability of the whole edited schedule (a merge can make a
// tensor ephemeral that a later subgraph loads, a split or reorder can starve a consumer):
// missing producers are recomputed where needed. The result is the smallest edit that turns
// `s` into the repaired schedule; the unrepaired edit when the repair gives up.
ScheduleEdit RepairedEdit(const MoveContext& ctx, const Schedule& s, ScheduleEdit edit) {
  const bool on_committed = ctx.committed != nullptr && &ctx.committed->schedule() == &s;
  const bool valid = on_committed && ctx.committed->CommittedValid();
  if (valid && ctx.local_repair) {
    // One subgraph around the edit nearly always holds the repair; when it does not, a wider
    // window usually does, at a fraction of the whole schedule's scan on a long schedule.
    for (int reach : {1, 16}) {
      if (std::optional<ScheduleEdit> local = LocalRepairedEdit(ctx, *ctx.committed, s, edit, reach)) {
        return std::move(*local);
      }
      if (reach >= static_cast<int>(s.subgraphs.size())) break;
    }
  }
  const int old_n = static_cast<int>(s.subgraphs.size());
  const int m = static_cast<int>(edit.replacement.size());
  // The whole repair leaves the committed prefix it cannot change as it is: scan from there.
  const int lo = valid && ctx.committed_facts ? UnchangedPrefix(ctx, *ctx.committed, s, edit) : 0;
  std::vector<const Subgraph*> edited;
  edited.reserve(old_n - (edit.end - edit.begin) + m - lo);
  for (int k = lo; k < edit.begin; ++k) edited.push_back(&s.subgraphs[k]);
  for (const Subgraph& sg : edit.replacement) edited.push_back(&sg);
  for (int k = edit.end; k < old_n; ++k) edited.push_back(&s.subgraphs[k]);
  RepairTarget repaired(std::move(edited));
  RepairFrame whole;
  if (lo > 0) {
    whole.retained_in = &s.subgraphs[lo - 1].retain;
    whole.written_before = [&](TensorId t) { return ctx.committed->WrittenBefore(t, lo); };
  }
  if (on_committed) {
    whole.committed_guess = [&](int k) {
      const int at = lo + k;
      return at >= edit.begin && at < edit.begin + m ? at : -1;
    };
  }
  if (Repair(ctx, repaired, whole) != RepairStatus::kDone) return edit;
  return DiffEdit(s, lo, old_n, repaired, edit);
}

}  // namespace

namespace move_kit {
// Builds the edit replacing [begin, end) by the pieces: filters retain sets to what the next
// subgraph actually reads, fits every piece in its new context, and also rewrites the retain set
// of subgraph begin-1 when the subgraph it fed changed.
std::optional<ScheduleEdit> Finish(const MoveContext& ctx, const Schedule& s, int begin, int end,
                                   std::vector<Piece> pieces) {
  const Problem& problem = ctx.problem;
  for (Piece& piece : pieces) {
    if (piece.Ops().empty()) return std::nullopt;
  }
  const std::vector<OpId>* after =
      end < static_cast<int>(s.subgraphs.size()) ? &s.subgraphs[end].ops : nullptr;

  ScheduleEdit edit;
  edit.begin = begin;
  edit.end = end;
  // Room for every subgraph up front: retained_in points into the replacement as it grows.
  edit.replacement.reserve(pieces.size() + 1);
  const std::vector<TensorId>* retained_in = &RetainedInto(s, begin);
  if (begin > 0) {
    const Subgraph& before = s.subgraphs[begin - 1];
    const std::vector<OpId>* first = pieces.empty() ? after : &pieces[0].Ops();
    std::vector<TensorId> filtered = UsefulRetain(problem, before.ops, before.retain, first);
    if (filtered != before.retain) {
      Subgraph changed = before;
      changed.retain = std::move(filtered);
      edit.begin = begin - 1;
      edit.replacement.push_back(std::move(changed));
      retained_in = &edit.replacement.back().retain;
    }
  }
  for (size_t j = 0; j < pieces.size(); ++j) {
    const Piece& piece = pieces[j];
    const std::vector<OpId>* next = j + 1 < pieces.size() ? &pieces[j + 1].Ops() : after;
    std::vector<TensorId> retain = UsefulRetain(problem, piece.Ops(), piece.Retain(), next);
    if (!piece.refit && piece.hint != nullptr) {
      // The hint's configuration with the filtered retain set (its own is not copied first).
      Subgraph& same = edit.replacement.emplace_back();
      same.ops = piece.hint->ops;
      same.granularity = piece.hint->granularity;
      same.traversal = piece.hint->traversal;
      same.retain = std::move(retain);
    } else {
      std::optional<FitResult> fit =
          FitSubgraph(ctx.pricer, piece.Ops(), *retained_in, retain, piece.hint, false, ctx.stop);
      if (!fit) return std::nullopt;
      edit.replacement.push_back(std::move(fit->subgraph));
    }
    retained_in = &edit.replacement.back().retain;
  }
  return RepairedEdit(ctx, s, std::move(edit));
}
}  // namespace move_kit

namespace {

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
  Piece merged{SortTopologically(ctx.rank, ops), s.subgraphs[i + 1].retain,
               &s.subgraphs[Coin(rng, 0.5) ? i : i + 1], true};
  return Finish(ctx, s, i, i + 2, {merged});
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

// A random topological order of the subgraph's ops (Kahn with random ties).
std::vector<OpId> RandomOrder(const Problem& problem, const std::vector<OpId>& ops, Rng& rng) {
  std::vector<int> missing(ops.size(), 0);
  for (size_t a = 0; a < ops.size(); ++a) {
    for (TensorId t : problem.ops[ops[a]].inputs) {
      const OpId p = problem.producer[t];
      if (p != kNoOp && Contains(ops, p)) ++missing[a];
    }
  }
  std::vector<OpId> order;
  std::vector<char> done(ops.size(), 0);
  while (order.size() < ops.size()) {
    std::vector<int> ready;
    for (size_t a = 0; a < ops.size(); ++a) {
      if (!done[a] && missing[a] == 0) ready.push_back(static_cast<int>(a));
    }
    if (ready.empty()) return ops;  // cannot happen for a DAG
    const int a = ready[Uniform(rng, static_cast<int>(ready.size()))];
    done[a] = 1;
    order.push_back(ops[a]);
    for (size_t b = 0; b < ops.size(); ++b) {
      const auto& in = problem.ops[ops[b]].inputs;
      if (std::find(in.begin(), in.end(), problem.ops[ops[a]].output) != in.end()) --missing[b];
    }
  }
  return order;
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
  for (auto& part : {first, second}) {
    for (auto& component : Components(ctx.problem, SortTopologically(ctx.rank, part))) {
      parts.push_back(SortTopologically(ctx.rank, component));
    }
  }
  std::vector<Piece> pieces;
  for (size_t p = 0; p < parts.size(); ++p) {
    Piece piece{parts[p], {}, &sg, true};
    if (p + 1 == parts.size()) {
      piece.retain = sg.retain;
    } else if (Coin(rng, 0.5)) {
      // Keep tensors that only the next part reads in fast memory (no write, no load).
      for (TensorId t : ProducedTensors(ctx.problem, parts[p])) {
        if (AllConsumersIn(ctx.problem, t, parts[p + 1])) piece.retain.push_back(t);
      }
    }
    pieces.push_back(std::move(piece));
  }
  return Finish(ctx, s, i, i + 1, std::move(pieces));
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
  return Finish(ctx, s, j, j + 1, {{SortTopologically(ctx.rank, ops), sg.retain, &sg, true}});
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
    pieces.push_back({SortTopologically(ctx.rank, component), sg.retain, &sg, true});
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
  if (Coin(rng, 0.25)) return Finish(ctx, s, i, i + 1, {{sg.ops, sg.retain, &sg, true}});
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
  const std::vector<TensorId> produced = ProducedTensors(ctx.problem, a.ops);
  std::vector<TensorId> candidates;
  for (TensorId t : BoundaryInputs(ctx.problem, b.ops)) {
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
  return Finish(ctx, s, i, i + 2, {{a.ops, retain, &a, refit}, {b.ops, b.retain, &b, refit}});
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
      weights.weight_partition * weights.gather_kloop_share};
  // Without the fan-out the draw is over the first eleven kinds exactly as before kMergeReaders
  // existed (a zero weight at the end could still shift a draw: the last cumulative sum is
  // rounded to one).
  // kGatherKLoop likewise, only where a Pointwise op sums MatMuls of different K; with it, the
  // merge-readers weight stays in the list (zero when that move does not apply).
  const bool readers = context.merge_readers && weights.merge_readers_share > 0;
  const bool gather = context.gather_kloop && weights.gather_kloop_share > 0;
  double w_used[kNumMoveKinds];
  std::copy(std::begin(w), std::end(w), w_used);
  if (gather && !readers) w_used[kNumMoveKinds - 2] = 0;
  const size_t kinds = gather ? kNumMoveKinds : kNumMoveKinds - (readers ? 1 : 2);
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
