// The repair of a move's edit (RepairAvailability, move_kit::Finish): what makes a move's
// rearranged subgraphs a valid schedule again (search/moves/moves.h). A window around the edit
// is repaired first, reading the committed schedule's facts from the evaluator; the whole
// schedule only when the edit's effects reach past the window.
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "search/moves/move_kit.h"
#include "search/moves/moves.h"

namespace annealer {

using namespace move_kit;  // Piece, RetainedInto, Contains: shared with the move kinds

namespace {

// The schedule a repair works on. Each position points at its current subgraph. A position
// borrowed from something the repair must leave alone (the committed schedule under a move,
// the move's own edit) is copied on its first change, so repairing a move copies only what
// the repair changes instead of the whole schedule.
class RepairTarget {
 public:
  RepairTarget() = default;
  // Borrows every position.
  explicit RepairTarget(std::vector<const Subgraph*> borrowed)
      : current_(std::move(borrowed)), writable_(current_.size(), nullptr) {}
  // Borrows every position again, keeping the buffers: a thread's window reuses one target,
  // so a move allocates nothing for it but the copies Write makes.
  void Borrow(const std::vector<const Subgraph*>& borrowed) {
    current_.assign(borrowed.begin(), borrowed.end());
    writable_.assign(current_.size(), nullptr);
    copies_.clear();
    if (copies_.capacity() < current_.size()) copies_.reserve(current_.size());
  }
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
  OpsFacts grown_next;  // the next round's, derived from `grown` (GrowOpsFacts), then swapped in
  std::vector<OpId> pulled;  // the producers a round pulls in
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
  // Positions [skip_begin, skip_end) (none when equal) borrow the committed subgraphs from
  // skip_committed on, and position skip_begin - 1 borrows skip_committed - 1: a stretch an edit
  // keeps (ScheduleEdit::kept_begin). The scan passes them as they are, their loads and writes
  // read from the evaluator (ReadBetween, WrittenBetween), when it can tell that it would leave
  // them so: see Repair; else it answers kRetry. committed_lo is the committed position where
  // the window starts (the first of the positions it replaces: a window of the committed
  // schedule, which holds before it what the committed schedule holds).
  int skip_begin = 0, skip_end = 0, skip_committed = 0, committed_lo = 0;
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

enum class RepairStatus { kDone, kGaveUp, kBeyondWindow, kRetry };

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
  const bool skip = frame.skip_end > frame.skip_begin;
  auto skipped = [&](int m) { return skip && m >= frame.skip_begin && m < frame.skip_end; };
  // The committed position of skipped position m (or of skip_end).
  auto committed_of = [&](int m) { return frame.skip_committed + (m - frame.skip_begin); };
  bool past_skip = false;  // the scan passed the skipped positions: their writes count
  auto in_slow = [&](TensorId t) {
    return problem.producer[t] == kNoOp || scratch.written.Contains(t) ||
           (frame.written_before && frame.written_before(t)) ||
           (past_skip && env.committed->WrittenBetween(t, frame.skip_committed, committed_of(frame.skip_end)));
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
    // A skipped position has no facts here (-1, empty lists).
    const bool skip_m = skipped(m);
    const int c = m < n && !skip_m ? CommittedTwin(env, schedule, frame, m) : -1;
    scratch.committed_index.push_back(c);
    if (c >= 0) env.committed->PrefetchCommittedFacts(c);
    if (c < 0 && !skip_m) AppendOpsFacts(problem, m < n ? schedule[m].ops : *frame.next_ops, scratch.inputs, scratch.sinks);
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
  // Of the skipped positions only the first one's inputs are read (the retain check of the
  // position before it); their loads are the evaluator's (loaded_from).
  if (skip) scratch.input_of[frame.skip_begin] = env.committed->CommittedInputs(frame.skip_committed);
  auto loaded_from = [&](TensorId t, int from) {
    if (scratch.last_use_set.Contains(t) && last_use[t] >= from) return true;
    if (skip && from < frame.skip_end &&
        env.committed->ReadBetween(t, committed_of(std::max(from, frame.skip_begin)), committed_of(frame.skip_end))) {
      return true;
    }
    return frame.loaded_beyond && frame.loaded_beyond(t, std::max(from, with_next));
  };
  // The filter of the retain list of position i (the next one's inputs are `next_inputs`):
  // allowed, read by the next subgraph, and not loaded again later. Into scratch.kept. The scan
  // below writes the same loop out.
  auto filter_retain = [&](int i, const Subgraph& sg, std::span<const TensorId> next_inputs) {
    std::vector<TensorId>& kept = scratch.kept;
    kept.clear();
    if (i + 1 < with_next && !sg.retain.empty()) {
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
    return &kept;
  };
  auto inputs_of = [&](int m) { return scratch.input_of[m]; };
  auto sinks_of = [&](int m) { return scratch.sink_of[m]; };
  // The skipped subgraphs are committed ones after their committed predecessor (position
  // skip_begin - 1, unchanged), so each finds what it found in the valid committed schedule,
  // where all it reads was available, unless a tensor written before the stretch there is not
  // written before it here: checked on the committed writes between the window's start and the
  // stretch. Then none pulls anything; and each keeps its retain list as it is when the filter
  // passes it (checked on those that retain something). Their writes are theirs in the
  // committed schedule. False: the scan would change one (or cannot tell). Out of line: the
  // scan's loop stays as compact as it was.
  auto pass_skipped = [&]() __attribute__((noinline)) {
    const int i = frame.skip_begin;
    if (changed[i - 1]) return false;
    const int stretch_end = committed_of(frame.skip_end);
    for (int c = frame.committed_lo; c < frame.skip_committed; ++c) {
      for (TensorId t : env.committed->CommittedWrites(c)) {
        if (!in_slow(t) && env.committed->ReadBetween(t, frame.skip_committed, stretch_end)) return false;
      }
    }
    for (int c = env.committed->NextRetaining(frame.skip_committed); c < stretch_end;
         c = env.committed->NextRetaining(c + 1)) {
      const int at = frame.skip_begin + (c - frame.skip_committed);
      const std::span<const TensorId> next_inputs = at + 1 < frame.skip_end ? env.committed->CommittedInputs(c + 1)
                                                    : at + 1 < with_next   ? inputs_of(at + 1)
                                                                           : std::span<const TensorId>();
      if (*filter_retain(at, schedule[at], next_inputs) != schedule[at].retain) return false;
    }
    return true;
  };
  const std::vector<TensorId>* retained_in = frame.retained_in != nullptr ? frame.retained_in : &kNothing;
  for (int i = 0; i < n; ++i) {
    if (skip && i == frame.skip_begin) {
      if (!pass_skipped()) return RepairStatus::kRetry;
      past_skip = true;
      i = frame.skip_end - 1;
      retained_in = &schedule[i].retain;
      continue;
    }
    // Subgraph i's facts; they move to scratch.grown once the scan adds ops to it.
    std::span<const TensorId> inputs = inputs_of(i);
    std::span<const TensorId> sinks = sinks_of(i);
    // Pull in producers of unavailable inputs until everything it reads is available.
    for (int round = 0; round < static_cast<int>(problem.ops.size()); ++round) {
      bool added = false;
      scratch.pulled.clear();
      for (TensorId t : inputs) {
        const bool available =
            in_slow(t) || Contains(*retained_in, t);
        if (available) continue;
        const OpId p = problem.producer[t];
        if (p == kNoOp || Contains(schedule[i].ops, p)) return RepairStatus::kGaveUp;
        if (frame.may_pull && !frame.may_pull(t)) return RepairStatus::kBeyondWindow;
        schedule.Write(i).ops.push_back(p);
        scratch.pulled.push_back(p);
        added = true;
      }
      if (!added) break;
      Subgraph& sg = schedule.Write(i);
      sg.ops = SortTopologically(env.rank, std::move(sg.ops));
      // Each pulled op makes an input of the list (its producer), as GrowOpsFacts requires.
      GrowOpsFacts(problem, env.rank, sg.ops, inputs, sinks, scratch.pulled, scratch.grown_next);
      std::swap(scratch.grown, scratch.grown_next);
      inputs = scratch.grown.inputs;
      sinks = scratch.grown.sinks;
      changed[i] = 1;
      scratch.ops_grown[i] = 1;
    }
    const Subgraph& sg = schedule[i];
    // Keep only retains that are allowed and read by the next subgraph (UsefulRetain), and never
    // keep back a tensor that a later subgraph still loads from slow memory. (filter_retain's
    // loop, written out: the scan's loop stays as compact as it was.)
    std::vector<TensorId>& kept = scratch.kept;
    kept.clear();
    if (i + 1 < with_next && !sg.retain.empty()) {
      const std::span<const TensorId> next_inputs = inputs_of(i + 1);
      for (TensorId t : sg.retain) {
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
      if (!Contains(done.retain, out)) scratch.written.Insert(out);
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

namespace move_kit {
const std::vector<TensorId>& RetainedInto(const Schedule& s, int index) {
  static const std::vector<TensorId> kNone;
  return index > 0 ? s.subgraphs[index - 1].retain : kNone;
}
}  // namespace move_kit

namespace {

// Subgraph r of the new range of `edit` (of `s`): of its replacement, or of its kept run.
const Subgraph* EditAt(const Schedule& s, const ScheduleEdit& edit, int r) {
  if (r < edit.kept_at) return &edit.replacement[r];
  if (r < edit.kept_at + edit.kept()) return &s.subgraphs[edit.kept_begin + (r - edit.kept_at)];
  return &edit.replacement[r - edit.kept()];
}

// The smallest edit of `s` whose new positions [lo, hi) are `window` (the old ones being
// [lo, old_end)): equal positions at both ends are left out. `edit` is the unrepaired edit
// whose replacement the window may borrow (moved from when it does). The longest run of window
// positions that still borrow consecutive subgraphs of `s` at most one place from where they
// were (at least ctx.min_kept_run) is kept in place (ScheduleEdit::kept_begin), not copied.
ScheduleEdit DiffEdit(const MoveContext& ctx, const Schedule& s, int lo, int old_end, RepairTarget& window,
                      ScheduleEdit& edit) {
  const int old_n = old_end - lo;
  const int new_n = window.size();
  const int replaced_begin = edit.begin - lo;
  const int replaced_end = replaced_begin + edit.size();
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
  // The kept run: window positions [run_begin, run_end), committed [run_c, ...).
  int run_begin = 0, run_end = 0, run_c = 0;
  // Only where the edit kept a stretch: elsewhere the window borrows too few in a row.
  if (ctx.min_kept_run > 0 && edit.kept() > 0) {
    const Subgraph* const base = s.subgraphs.data();
    // The committed index position k borrows, within the diff's old range, or -1.
    auto borrowed = [&](int k) {
      if (window.copied(k)) return -1;
      const Subgraph* at = window.at(k);
      if (at < base + diff.begin || at >= base + diff.end) return -1;
      const int c = static_cast<int>(at - base);
      const int offset = lo + k - c;
      return offset >= -1 && offset <= 1 ? c : -1;
    };
    int start = -1;
    for (int k = prefix; k <= new_n - suffix; ++k) {
      const int c = k < new_n - suffix ? borrowed(k) : -1;
      const bool continues = c >= 0 && start >= 0 && c == borrowed(k - 1) + 1;
      if (start >= 0 && !continues) {
        if (k - start > run_end - run_begin) run_begin = start, run_end = k, run_c = borrowed(start);
        start = -1;
      }
      if (c >= 0 && start < 0) start = k;
    }
    if (run_end > run_begin) {
      // Its first after the retained-in list it had (the others follow their committed one).
      const std::vector<TensorId>& now_in =
          run_begin > 0 ? window[run_begin - 1].retain : RetainedInto(s, lo);
      if (now_in != RetainedInto(s, run_c)) ++run_begin, ++run_c;
      if (run_end - run_begin < ctx.min_kept_run) run_begin = run_end = 0;
    }
  }
  diff.replacement.reserve(new_n - suffix - prefix - (run_end - run_begin));
  for (int k = prefix; k < new_n - suffix; ++k) {
    if (k == run_begin && run_end > run_begin) {
      diff.kept_at = static_cast<int>(diff.replacement.size());
      diff.kept_begin = run_c;
      diff.kept_end = run_c + (run_end - run_begin);
      k = run_end - 1;
      continue;
    }
    const int r = k - replaced_begin;
    const bool own = k >= replaced_begin && k < replaced_end && (r < edit.kept_at || r >= edit.kept_at + edit.kept());
    if (window.copied(k)) {
      diff.replacement.push_back(std::move(window.Write(k)));
    } else if (own) {
      diff.replacement.push_back(std::move(edit.replacement[r < edit.kept_at ? r : r - edit.kept()]));
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
  const int m = edit.size();
  const int shift = m - (edit.end - edit.begin);
  const int new_n = old_n + shift;
  const int lo = std::max(0, edit.begin - reach);
  const int hi = std::min(new_n, edit.begin + m + reach);  // the successor included
  const int old_end = hi - shift;                      // committed index after the window
  thread_local std::vector<const Subgraph*> positions;
  positions.clear();
  for (int k = lo; k < hi; ++k) {
    positions.push_back(k < edit.begin ? &s.subgraphs[k]
                        : k < edit.begin + m ? EditAt(s, edit, k - edit.begin)
                                             : &s.subgraphs[k - shift]);
  }
  RepairFrame frame;
  frame.retained_in = lo > 0 ? &s.subgraphs[lo - 1].retain : nullptr;
  frame.written_before = [&](TensorId t) { return committed.WrittenBefore(t, lo); };
  // An unavailable tensor that an earlier subgraph keeps back: the whole repair would drop that
  // retain instead of recomputing the tensor.
  frame.may_pull = [&](TensorId t) { return !committed.RetainedBefore(t, lo); };
  frame.next_ops = old_end < old_n ? &s.subgraphs[old_end].ops : nullptr;
  // Window position `from` is committed position lo + from - shift.
  // The captures are by value where references would not fit std::function's local storage
  // (16 bytes): a repair allocates nothing for its frame.
  frame.loaded_beyond = [&committed, before = lo - shift - 1](TensorId t, int from) {
    return committed.ReadAfter(t, before + from);
  };
  // Window position k of the replacement is edited position lo + k, at or next to the
  // committed subgraph it may copy.
  frame.committed_guess = [lo, begin = edit.begin, m](int k) {
    const int at = lo + k;
    return at >= begin && at < begin + m ? at : -1;
  };
  // The edit's kept stretch but its first subgraph is passed as it is when the scan can tell
  // it would leave it so (Repair); else the window is repaired again without that.
  const int stretch = edit.begin + edit.kept_at + 1 - lo;  // window position of its second one
  if (ctx.committed_facts && edit.kept() >= 3) {
    frame.skip_begin = stretch;
    frame.skip_end = stretch + edit.kept() - 1;
    frame.skip_committed = edit.kept_begin + 1;
    frame.committed_lo = lo;
  }
  // Read until DiffEdit has moved its copies out; nothing repairs a window meanwhile.
  thread_local RepairTarget window;
  window.Borrow(positions);
  RepairStatus status = Repair(ctx, window, frame);
  if (status == RepairStatus::kRetry) {
    frame.skip_begin = frame.skip_end = 0;
    window.Borrow(positions);
    status = Repair(ctx, window, frame);
  }
  const bool skipped = frame.skip_end > frame.skip_begin;
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
  // A skipped subgraph writes what it wrote, in the window either way: left out on both sides.
  for (int k = 0; k < window.size(); ++k) {
    if (skipped && k >= frame.skip_begin && k < frame.skip_end) continue;
    const std::span<const TensorId> known = sinks_before(k);
    for_each_write(window[k], repaired.ops_grown[k] ? nullptr : &known, [&](TensorId t) { lost.written.Insert(t); });
  }
  bool reaches_further = false;
  const int skipped_end = frame.skip_committed + (frame.skip_end - frame.skip_begin);
  auto lost_write = [&](TensorId t) {
    reaches_further = reaches_further ||
                      (!lost.written.Contains(t) && !committed.WrittenBefore(t, lo) &&
                       committed.ReadAfter(t, old_end - 1) &&
                       !(skipped && committed.WrittenBetween(t, frame.skip_committed, skipped_end)));
  };
  for (int c = lo; c < old_end && !reaches_further; ++c) {
    if (skipped && c >= frame.skip_committed && c < skipped_end) continue;
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
  return DiffEdit(ctx, s, lo, old_end, window, edit);
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
  // The whole repair reads the edit's subgraphs from its replacement.
  MaterializeKept(s, edit);
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
  return DiffEdit(ctx, s, lo, old_n, repaired, edit);
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
  // Kept pieces of consecutive subgraphs of `s` whose retain sets pass the filter as they are
  // (a stretch the move leaves as it is) wait in [run_begin, run_end) of the pieces; the first
  // run of at least ctx.min_kept_run stays out of the replacement (ScheduleEdit::kept_begin),
  // shorter ones are copied in as any piece.
  const Subgraph* const base = s.subgraphs.data();
  size_t run_begin = 0, run_end = 0;
  // Too few pieces for a run: as if none could be (no retain lists compared).
  bool run_taken = ctx.min_kept_run <= 0 || static_cast<int>(pieces.size()) < ctx.min_kept_run;
  auto copy_kept = [&](const Piece& piece) {
    // The hint's configuration with its own retain set, in a spare subgraph's buffers.
    Subgraph& same = edit.replacement.emplace_back(SpareSubgraphs::Take());
    same.ops.assign(piece.hint->ops.begin(), piece.hint->ops.end());
    same.granularity = piece.hint->granularity;
    if (!piece.hint->traversal) {
      same.traversal.reset();
    } else if (same.traversal) {
      same.traversal->assign(piece.hint->traversal->begin(), piece.hint->traversal->end());
    } else {
      same.traversal = piece.hint->traversal;
    }
    same.retain.assign(piece.hint->retain.begin(), piece.hint->retain.end());
  };
  auto close_run = [&]() __attribute__((noinline)) {
    if (run_end == run_begin) return;
    if (!run_taken && static_cast<int>(run_end - run_begin) >= ctx.min_kept_run && ctx.min_kept_run > 0) {
      run_taken = true;
      edit.kept_at = static_cast<int>(edit.replacement.size());
      edit.kept_begin = static_cast<int>(pieces[run_begin].hint - base);
      edit.kept_end = edit.kept_begin + static_cast<int>(run_end - run_begin);
    } else {
      for (size_t r = run_begin; r < run_end; ++r) copy_kept(pieces[r]);
    }
    run_begin = run_end = 0;
  };
  for (size_t j = 0; j < pieces.size(); ++j) {
    const Piece& piece = pieces[j];
    const std::vector<OpId>* next = j + 1 < pieces.size() ? &pieces[j + 1].Ops() : after;
    // Copied out where kept (into a spare's buffer, or the fit's): one buffer per thread.
    thread_local std::vector<TensorId> retain;
    UsefulRetainInto(problem, piece.Ops(), piece.Retain(), next, retain);
    const bool in_s = piece.hint != nullptr && piece.hint >= base + begin && piece.hint < base + end;
    if (!run_taken && ctx.min_kept_run > 0 && piece.kept && !piece.refit && in_s && retain == piece.hint->retain) {
      if (run_end > run_begin && pieces[run_end - 1].hint + 1 != piece.hint) close_run();
      if (run_end == run_begin) run_begin = run_end = j;
      run_end = j + 1;
      retained_in = &piece.hint->retain;
      continue;
    }
    if (run_end > run_begin) close_run();
    if (!piece.refit && piece.hint != nullptr) {
      // The hint's configuration with the filtered retain set (its own is not copied first),
      // in a spare subgraph's buffers (eval/cost/incremental.h).
      Subgraph& same = edit.replacement.emplace_back(SpareSubgraphs::Take());
      same.ops.assign(piece.hint->ops.begin(), piece.hint->ops.end());
      same.granularity = piece.hint->granularity;
      if (!piece.hint->traversal) {
        same.traversal.reset();
      } else if (same.traversal) {
        same.traversal->assign(piece.hint->traversal->begin(), piece.hint->traversal->end());
      } else {
        same.traversal = piece.hint->traversal;
      }
      same.retain.assign(retain.begin(), retain.end());
    } else {
      std::optional<FitResult> fit =
          FitSubgraph(ctx.pricer, piece.Ops(), *retained_in, retain, piece.hint, false, ctx.stop);
      if (!fit) return std::nullopt;
      edit.replacement.push_back(std::move(fit->subgraph));
    }
    retained_in = &edit.replacement.back().retain;
  }
  if (run_end > run_begin) close_run();
  return RepairedEdit(ctx, s, std::move(edit));
}
}  // namespace move_kit

}  // namespace annealer
