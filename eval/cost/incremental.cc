// Incremental evaluation: a proposal re-prices only the replaced subgraphs and the successor
// whose retained-in context may have changed, and re-checks the sequence rules from what the
// edit touched:
// - a per-subgraph failure before the edit stays the first failure;
// - the replacement and the successor are checked in full;
// - a later subgraph can only change its V7 status if the edit changed whether some tensor it
//   reads is written inside the edited range (the set "delta"); without such tensors the
//   committed per-subgraph flags answer, otherwise the later subgraphs are re-checked with the
//   writers of the new sequence;
// - V1 coverage and V9 use per-op and per-tensor counters updated by the edit's ops and writes.
#include "eval/cost/incremental.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "eval/cost/cost_cache.h"
#include "eval/cost/subgraph_cost.h"
#include "eval/oracle.h"

// Small lambdas of the proposal's loops, kept inline (outlined, their calls cost more than them).
#define ANNEALER_INLINE __attribute__((always_inline))

namespace annealer {

Schedule ApplyEdit(const Schedule& schedule, const ScheduleEdit& edit) {
  Schedule next;
  const auto& sgs = schedule.subgraphs;
  next.subgraphs.assign(sgs.begin(), sgs.begin() + edit.begin);
  next.subgraphs.insert(next.subgraphs.end(), edit.replacement.begin(), edit.replacement.begin() + edit.kept_at);
  next.subgraphs.insert(next.subgraphs.end(), sgs.begin() + edit.kept_begin, sgs.begin() + edit.kept_end);
  next.subgraphs.insert(next.subgraphs.end(), edit.replacement.begin() + edit.kept_at, edit.replacement.end());
  next.subgraphs.insert(next.subgraphs.end(), sgs.begin() + edit.end, sgs.end());
  return next;
}

void MaterializeKept(const Schedule& schedule, ScheduleEdit& edit) {
  if (edit.kept() > 0) {
    edit.replacement.insert(edit.replacement.begin() + edit.kept_at,
                            schedule.subgraphs.begin() + edit.kept_begin,
                            schedule.subgraphs.begin() + edit.kept_end);
  }
  edit.kept_at = edit.kept_begin = edit.kept_end = 0;
}


namespace {

const std::vector<TensorId> kNoTensors;

bool Contains(const std::vector<TensorId>& set, TensorId t) {
  return std::find(set.begin(), set.end(), t) != set.end();
}

// Element-wise equality of short id lists: a loop, where vector's == calls memcmp.
bool SameList(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t size = a.size();
  if (size != b.size()) return false;
  for (size_t i = 0; i < size; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

bool SameSet(const std::vector<TensorId>& a, const std::vector<TensorId>& b) {
  if (a.size() != b.size()) return false;
  for (TensorId t : a) {
    if (std::count(a.begin(), a.end(), t) != std::count(b.begin(), b.end(), t)) return false;
  }
  return true;
}

Candidate Invalid(Violation violation) {
  Candidate candidate;
  candidate.valid = false;
  candidate.violation = std::move(violation);
  return candidate;
}

}  // namespace

IncrementalEvaluator::IncrementalEvaluator(const Problem& problem, CostCache* cache)
    : problem_(problem), cache_(cache) {
  flat_.Build(problem);
  const size_t num_ops = problem.ops.size();
  const size_t num_tensors = problem.tensors.size();
  op_stamp_.assign(num_ops, 0);
  tensor_stamp_.assign(num_tensors, 0);
  old_region_writes_.assign(num_tensors, 0);
  new_region_writes_.assign(num_tensors, 0);
  running_writes_.assign(num_tensors, 0);
  old_part_writes_.assign(num_tensors, 0);
  new_part_writes_.assign(num_tensors, 0);
  cover_delta_.assign(num_ops, 0);
}

void IncrementalEvaluator::Price(const Subgraph& subgraph, const std::vector<TensorId>& retained_in,
                                 SubgraphResult& result) {
  if (cache_) {
    cache_->LookupOrCompute(problem_, subgraph, retained_in, result);
  } else {
    result = CostSubgraph(problem_, subgraph, retained_in);
  }
}

void IncrementalEvaluator::Facts(const Subgraph& subgraph, SequenceFacts& facts) {
  facts.boundary_inputs.clear();
  facts.writes.clear();
  facts.valid_ops.clear();
  facts.inputs.clear();
  facts.sinks.clear();
  const int num_ops = static_cast<int>(problem_.ops.size());
  if (++stamp_ == 0) {  // wrapped: stale stamps could collide
    std::fill(op_stamp_.begin(), op_stamp_.end(), 0);
    std::fill(tensor_stamp_.begin(), tensor_stamp_.end(), 0);
    stamp_ = 1;
  }
  for (OpId op : subgraph.ops) {
    if (op < 0 || op >= num_ops) continue;
    op_stamp_[op] = stamp_;
    facts.valid_ops.push_back(op);
  }
  for (OpId op : facts.valid_ops) {
    for (int32_t x = flat_.input_begin[op]; x < flat_.input_begin[op + 1]; ++x) {
      const OpId p = flat_.input_producer[x];
      if (p != kNoOp && op_stamp_[p] == stamp_) continue;
      facts.boundary_inputs.emplace_back(op, flat_.input_tensor[x]);
      facts.inputs.push_back(flat_.input_tensor[x]);
    }
  }
  std::sort(facts.inputs.begin(), facts.inputs.end());
  facts.inputs.erase(std::unique(facts.inputs.begin(), facts.inputs.end()), facts.inputs.end());
  for (OpId op : facts.valid_ops) {
    bool consumed_inside = false;
    for (int32_t x = flat_.consumer_begin[op]; x < flat_.consumer_begin[op + 1] && !consumed_inside; ++x) {
      consumed_inside = op_stamp_[flat_.consumer[x]] == stamp_;
    }
    const TensorId out = flat_.output[op];
    if (consumed_inside) continue;
    facts.sinks.push_back(out);
    if (!Contains(subgraph.retain, out)) facts.writes.push_back(out);
  }
}

bool IncrementalEvaluator::Available(OpId op, TensorId t, bool written,
                                     const std::vector<TensorId>& retained_in) const {
  return problem_.producer[t] == kNoOp || written || (!flat_.layout[op] && Contains(retained_in, t));
}

Violation IncrementalEvaluator::V7Violation(int position, OpId op, TensorId tensor) const {
  if (flat_.layout[op]) {
    return {"L1", position,
            "Layout op " + std::to_string(op) + " reads tensor " + std::to_string(tensor) +
                ", which is not in slow memory"};
  }
  return {"V7", position,
          "input tensor " + std::to_string(tensor) + " of op " + std::to_string(op) +
              " is neither in slow memory nor retained by the previous subgraph"};
}

namespace {

// Spacing of fresh labels: room for 2^20 insertions at one place before a relabelling.
constexpr int64_t kLabelGap = int64_t{1} << 20;

void InsertSorted(std::vector<int64_t>& list, int64_t label) {
  list.insert(std::upper_bound(list.begin(), list.end(), label), label);
}

// Replaces v[b, e) by the m elements from `first`, shifting the tail once (erase then insert
// would shift it twice; on a long schedule the shift is the cost of a commit). The elements
// are swapped: `first`'s range receives the replaced ones (or empty ones where v grew).
template <typename T, typename It>
void SpliceInto(std::vector<T>& v, int b, int e, It first, int m) {
  const int old = e - b;
  if (m > old) {
    v.insert(v.begin() + e, m - old, T{});
  } else if (m < old) {
    v.erase(v.begin() + b + m, v.begin() + e);
  }
  for (int k = 0; k < m; ++k, ++first) std::swap(v[b + k], *first);
}

void EraseOne(std::vector<int64_t>& list, int64_t label) {
  const auto it = std::lower_bound(list.begin(), list.end(), label);
  if (it != list.end() && *it == label) list.erase(it);
}

}  // namespace

std::vector<Subgraph>& SpareSubgraphs::Pool() {
  thread_local std::vector<Subgraph> pool;
  return pool;
}

void SpareSubgraphs::Give(std::vector<Subgraph>& from) {
  std::vector<Subgraph>& pool = Pool();
  for (Subgraph& sg : from) {
    if (pool.size() >= kMaxSpares) break;
    if (sg.ops.capacity() == 0) continue;  // nothing to lend
    pool.push_back(std::move(sg));
  }
  from.clear();
}

Subgraph SpareSubgraphs::Take() {
  std::vector<Subgraph>& pool = Pool();
  if (pool.empty()) return Subgraph{};
  Subgraph sg = std::move(pool.back());
  pool.pop_back();
  return sg;
}

int64_t IncrementalEvaluator::LabelAt(int position) const {
  return position < static_cast<int>(labels_.size()) ? labels_[position] : INT64_MAX;
}

int IncrementalEvaluator::PositionOfLabel(int64_t label) const {
  return static_cast<int>(std::lower_bound(labels_.begin(), labels_.end(), label) - labels_.begin());
}

bool IncrementalEvaluator::WrittenBefore(TensorId t, int position) const {
  const int64_t first = first_writer_[t];
  return first != INT64_MAX && first < LabelAt(position);
}

bool IncrementalEvaluator::RetainedBefore(TensorId t, int position) const {
  const std::vector<int64_t>& r = retainers_[t];
  return !r.empty() && r.front() < LabelAt(position);
}

bool IncrementalEvaluator::ReadAfter(TensorId t, int position) const {
  const std::vector<int64_t>& r = readers_[t];
  return !r.empty() && r.back() > LabelAt(position);
}

bool IncrementalEvaluator::ReadBetween(TensorId t, int from, int to) const {
  if (from >= to) return false;
  const std::vector<int64_t>& r = readers_[t];
  const auto it = std::lower_bound(r.begin(), r.end(), LabelAt(from));
  return it != r.end() && *it < LabelAt(to);
}

bool IncrementalEvaluator::WrittenBetween(TensorId t, int from, int to) const {
  if (from >= to) return false;
  const std::vector<int64_t>& w = writers_[t];
  const auto it = std::lower_bound(w.begin(), w.end(), LabelAt(from));
  return it != w.end() && *it < LabelAt(to);
}

int IncrementalEvaluator::NextRetaining(int from) const {
  const auto it = std::lower_bound(retaining_.begin(), retaining_.end(), LabelAt(from));
  return it == retaining_.end() ? static_cast<int>(labels_.size()) : PositionOfLabel(*it);
}

void IncrementalEvaluator::Account(int i, int sign) {
  const int64_t label = labels_[i];
  const SequenceFacts& facts = facts_[i];
  const int num_tensors = static_cast<int>(problem_.tensors.size());
  for (TensorId t : facts.writes) {
    const bool output = problem_.IsGraphOutput(t);
    if (sign > 0) {
      unwritten_outputs_ -= output && writers_[t].empty();
      InsertSorted(writers_[t], label);
    } else {
      EraseOne(writers_[t], label);
      unwritten_outputs_ += output && writers_[t].empty();
    }
    first_writer_[t] = writers_[t].empty() ? INT64_MAX : writers_[t].front();
  }
  for (const auto& [op, t] : facts.boundary_inputs) {
    if (sign > 0) {
      InsertSorted(readers_[t], label);
    } else {
      EraseOne(readers_[t], label);
    }
  }
  if (!schedule_.subgraphs[i].retain.empty()) {
    if (sign > 0) {
      InsertSorted(retaining_, label);
    } else {
      EraseOne(retaining_, label);
    }
  }
  for (TensorId t : schedule_.subgraphs[i].retain) {
    if (t < 0 || t >= num_tensors) continue;
    if (sign > 0) {
      InsertSorted(retainers_[t], label);
    } else {
      EraseOne(retainers_[t], label);
    }
  }
  for (OpId op : facts.valid_ops) {
    if (sign > 0) {
      uncovered_ops_ -= cover_count_[op] == 0;
      recomputed_ops_ += cover_count_[op] == 1;
      recomputed_places_ += cover_count_[op] == 1 ? 2 : cover_count_[op] >= 2 ? 1 : 0;
      ++cover_count_[op];
    } else {
      --cover_count_[op];
      uncovered_ops_ += cover_count_[op] == 0;
      recomputed_ops_ -= cover_count_[op] == 1;
      recomputed_places_ -= cover_count_[op] == 1 ? 2 : cover_count_[op] >= 2 ? 1 : 0;
    }
  }
}

bool IncrementalEvaluator::SubgraphOk(int i) const {
  if (!results_[i].ok()) return false;
  const std::vector<TensorId>& retained_in = i > 0 ? schedule_.subgraphs[i - 1].retain : kNoTensors;
  for (const auto& [op, t] : facts_[i].boundary_inputs) {
    if (problem_.producer[t] != kNoOp && !Available(op, t, WrittenBefore(t, i), retained_in)) {
      return false;
    }
  }
  return true;
}

void IncrementalEvaluator::RebuildSequenceState() {
  const int n = static_cast<int>(schedule_.subgraphs.size());
  const int num_ops = static_cast<int>(problem_.ops.size());
  const int num_tensors = static_cast<int>(problem_.tensors.size());
  labels_.resize(n);
  for (int i = 0; i < n; ++i) labels_[i] = (i + 1) * kLabelGap;
  writers_.resize(num_tensors);
  readers_.resize(num_tensors);
  retainers_.resize(num_tensors);
  for (TensorId t = 0; t < num_tensors; ++t) {
    writers_[t].clear();
    readers_[t].clear();
    retainers_[t].clear();
  }
  first_writer_.assign(num_tensors, INT64_MAX);
  retaining_.clear();
  cover_count_.assign(num_ops, 0);
  uncovered_ops_ = num_ops;
  recomputed_ops_ = 0;
  recomputed_places_ = 0;
  unwritten_outputs_ = 0;
  for (TensorId t = 0; t < num_tensors; ++t) unwritten_outputs_ += problem_.IsGraphOutput(t);
  latency_sum_ = 0;
  latencies_.resize(n);
  prefix_sums_.resize(n);
  for (int i = 0; i < n; ++i) {
    Account(i, +1);  // labels ascend with i, so every list stays sorted by appending
    latencies_[i] = results_[i].report.latency;
    latency_sum_ += latencies_[i];
    prefix_sums_[i] = latency_sum_;
  }
  subgraph_ok_.assign(n, 0);
  failing_.clear();
  for (int i = 0; i < n; ++i) {
    subgraph_ok_[i] = SubgraphOk(i);
    if (!subgraph_ok_[i]) failing_.push_back(i);
  }
}

Candidate IncrementalEvaluator::CommittedCandidate() const {
  const int n = static_cast<int>(schedule_.subgraphs.size());
  for (int i = 0; i < n; ++i) {
    if (subgraph_ok_[i]) continue;
    if (!results_[i].ok()) {
      Violation v = results_[i].violation;
      v.subgraph = i;
      return Invalid(std::move(v));
    }
    const std::vector<TensorId>& retained_in = i > 0 ? schedule_.subgraphs[i - 1].retain : kNoTensors;
    for (const auto& [op, t] : facts_[i].boundary_inputs) {
      if (problem_.producer[t] != kNoOp && !Available(op, t, WrittenBefore(t, i), retained_in)) {
        return Invalid(V7Violation(i, op, t));
      }
    }
  }
  if (uncovered_ops_ > 0) {
    for (OpId op = 0; op < static_cast<OpId>(problem_.ops.size()); ++op) {
      if (cover_count_[op] == 0) {
        return Invalid({"V1", -1, "op " + std::to_string(op) + " appears in no subgraph"});
      }
    }
  }
  if (unwritten_outputs_ > 0) {
    for (TensorId t = 0; t < static_cast<TensorId>(problem_.tensors.size()); ++t) {
      if (problem_.IsGraphOutput(t) && writers_[t].empty()) {
        return Invalid({"V9", -1,
                        "graph output tensor " + std::to_string(t) +
                            " is never written to slow memory"});
      }
    }
  }
  Candidate candidate;
  candidate.valid = true;
  candidate.total = latency_sum_;
  return candidate;
}

Candidate IncrementalEvaluator::Reset(const Schedule& schedule) {
  schedule_ = schedule;
  pending_ = false;
  const int n = static_cast<int>(schedule_.subgraphs.size());
  facts_.resize(n);
  results_.resize(n);
  for (int i = 0; i < n; ++i) {
    const Subgraph& subgraph = schedule_.subgraphs[i];
    Facts(subgraph, facts_[i]);
    Price(subgraph, i > 0 ? schedule_.subgraphs[i - 1].retain : kNoTensors, results_[i]);
  }
  RebuildSequenceState();
  committed_ = CommittedCandidate();
  return committed_;
}

const Candidate& IncrementalEvaluator::Propose(const ScheduleEdit& edit) {
  return ProposeFrom(edit, nullptr);
}

const Candidate& IncrementalEvaluator::Propose(ScheduleEdit&& edit) {
  return ProposeFrom(edit, &edit);
}

// The edited range of the pending proposal, as ProposeFrom's steps read it: replacement
// positions k in [0, m) stand for committed [b, e); the kept run (none when kl == 0), new
// positions [ka, ka + kl), is committed [kb, ke), read in place.
struct IncrementalEvaluator::EditView {
  const IncrementalEvaluator& ev;
  int n, b, e, m, shift, kl, ka, kb, ke;
  const std::vector<TensorId>& before_edit;  // retained into the edited range

  ANNEALER_INLINE int KeptIndex(int k) const { return k >= ka && k < ka + kl ? kb + (k - ka) : -1; }
  ANNEALER_INLINE const Subgraph& Sub(int k) const {
    const auto& repl = ev.pending_edit_.replacement;
    return k < ka ? repl[k] : k < ka + kl ? ev.schedule_.subgraphs[kb + (k - ka)] : repl[k - kl];
  }
  ANNEALER_INLINE const std::vector<TensorId>& RetainedInto(int k) const {
    return k == 0 ? before_edit : Sub(k - 1).retain;
  }
  // What the successor finds retained.
  const std::vector<TensorId>& SuccessorIn() const { return m > 0 ? Sub(m - 1).retain : before_edit; }
  ANNEALER_INLINE const SequenceFacts& PendingFacts(int k) const {
    return ev.pending_twin_[k] >= 0 ? ev.facts_[ev.pending_twin_[k]] : ev.pending_facts_[k];
  }
  // A kept subgraph's result is the committed one (not copied).
  ANNEALER_INLINE const SubgraphResult& Result(int k) const {
    const int c = KeptIndex(k);
    return c >= 0 ? ev.results_[c] : ev.pending_results_[k];
  }
  // The kept run writes t (it writes the same on both sides of the edit).
  ANNEALER_INLINE bool KeptWrites(TensorId t) const {
    if (kl == 0) return false;
    const std::vector<int64_t>& writers = ev.writers_[t];
    const auto it = std::lower_bound(writers.begin(), writers.end(), ev.labels_[kb]);
    return it != writers.end() && *it <= ev.labels_[ke - 1];
  }
  // Whether t is written in the edited range changes with the edit (the kept run left out).
  ANNEALER_INLINE bool InDelta(TensorId t) const {
    return ev.tensor_stamp_[t] == ev.stamp_ && (ev.old_region_writes_[t] > 0) != (ev.new_region_writes_[t] > 0) &&
           !KeptWrites(t);
  }
  // Whether t is written before the kept run changes with the edit.
  ANNEALER_INLINE bool InPartDelta(TensorId t) const {
    return (ev.old_part_writes_[t] > 0) != (ev.new_part_writes_[t] > 0);
  }
};

const Candidate& IncrementalEvaluator::ProposeFrom(const ScheduleEdit& edit, ScheduleEdit* take) {
  const int n = static_cast<int>(schedule_.subgraphs.size());
  const int b = edit.begin, e = edit.end;
  if (b < 0 || b > e || e > n) {
    throw std::out_of_range("ScheduleEdit [" + std::to_string(b) + ", " + std::to_string(e) +
                            ") is outside a schedule of " + std::to_string(n) + " subgraphs");
  }
  if (edit.kept_begin != edit.kept_end || edit.kept_at != 0) {
    if (edit.kept_begin < b || edit.kept_begin > edit.kept_end || edit.kept_end > e || edit.kept_at < 0 ||
        edit.kept_at > static_cast<int>(edit.replacement.size())) {
      throw std::out_of_range("ScheduleEdit [" + std::to_string(b) + ", " + std::to_string(e) + ") keeps [" +
                              std::to_string(edit.kept_begin) + ", " + std::to_string(edit.kept_end) +
                              ") at " + std::to_string(edit.kept_at) + " of " +
                              std::to_string(edit.replacement.size()) + " replacement subgraphs");
    }
  }
  if (edit.kept() > 0) {
    // The kept run is read in place only where the same edit with the run copied in would find
    // every subgraph of it a twin (PriceReplacement): a shift of at most one, no committed
    // failure in the run, and the first one after the retained-in list it had. Otherwise it is
    // copied in.
    const int kb = edit.kept_begin, ke = edit.kept_end, ka = edit.kept_at;
    const int shift = b + ka - kb;
    const std::vector<TensorId>& before_run = ka > 0 ? edit.replacement[ka - 1].retain
                                              : b > 0 ? schedule_.subgraphs[b - 1].retain
                                                      : kNoTensors;
    const std::vector<TensorId>& committed_in = kb > 0 ? schedule_.subgraphs[kb - 1].retain : kNoTensors;
    const auto failure = std::lower_bound(failing_.begin(), failing_.end(), kb);
    const bool in_place = shift >= -1 && shift <= 1 && (failure == failing_.end() || *failure >= ke) &&
                          before_run == committed_in && !(edit.size() == 1 && e == b + 1);
    if (!in_place) {
      ScheduleEdit plain;
      if (take != nullptr) {
        plain = std::move(*take);
      } else {
        plain = edit;
      }
      MaterializeKept(schedule_, plain);
      return ProposeFrom(plain, &plain);
    }
  }
  pending_ = true;
  pending_same_facts_ = edit.size() == 1 && e == b + 1 && edit.kept() == 0 &&
                        SameList(edit.replacement[0].ops, schedule_.subgraphs[b].ops) &&
                        SameList(edit.replacement[0].retain, schedule_.subgraphs[b].retain) &&
                        uncovered_ops_ == 0 && unwritten_outputs_ == 0;
  if (pending_same_facts_) return ProposeSameFacts(b, edit.replacement[0]);
  if (take != nullptr) {
    // The last edit's subgraphs (a dropped proposal's, or those a commit replaced) lend their
    // storage to the next edits.
    SpareSubgraphs::Give(pending_edit_.replacement);
    pending_edit_ = std::move(*take);  // `edit` is not read below: pending_edit_ stands for it
  } else {
    pending_edit_ = edit;
  }
  const int m = pending_edit_.size();
  const EditView v{*this, n, b, e, m, m - (e - b), pending_edit_.kept(), pending_edit_.kept_at,
                   pending_edit_.kept_begin, pending_edit_.kept_end,
                   b > 0 ? schedule_.subgraphs[b - 1].retain : kNoTensors};
  PriceReplacement(v);
  const Latency total = ProposedTotal(v);
  CountRangeChanges(v);
  Candidate candidate = CheckProposal(v);
  if (candidate.valid) candidate.total = total;
  for (TensorId t : touched_tensors_) {
    old_region_writes_[t] = new_region_writes_[t] = running_writes_[t] = 0;
  }
  for (TensorId t : part_tensors_) old_part_writes_[t] = new_part_writes_[t] = 0;
  for (OpId op : touched_ops_) cover_delta_[op] = 0;
  pending_candidate_ = std::move(candidate);
  return pending_candidate_;
}

void IncrementalEvaluator::PriceReplacement(const EditView& v) {
  const int b = v.b, e = v.e, m = v.m, ka = v.ka, kb = v.kb, kl = v.kl;
  // Results are written in place (resize keeps the elements' string storage).
  pending_facts_.resize(m);
  pending_results_.resize(m + 1);
  // A replacement subgraph equal to a committed one one position away or in place, after the
  // same retained-in list, has that one's facts and (valid) result: both are functions of the
  // subgraph and its retained-in list alone, and the cache is exact. A move that carries a
  // subgraph across a long stretch (kMoveNextToProducer) replaces the whole stretch by itself
  // shifted by one: this spares a cache lookup per shifted subgraph (and a kept run, all
  // twins by the conditions in ProposeFrom, is not even compared).
  auto twin = [&](int k, const std::vector<TensorId>& retained_in) {
    for (const int p : {b + k - 1, b + k + 1, b + k}) {
      if (p < b || p >= e || !results_[p].ok()) continue;
      const std::vector<TensorId>& committed_in = p > 0 ? schedule_.subgraphs[p - 1].retain : kNoTensors;
      if (schedule_.subgraphs[p] == v.Sub(k) && committed_in == retained_in) return p;
    }
    return -1;
  };
  // A twin's facts are not copied: the proposal reads the committed ones, and Commit moves them
  // over (the committed subgraph is among those the edit replaces). Each committed subgraph
  // lends its facts once; a second twin of it (an op list repeated) copies them.
  pending_twin_.assign(m, -1);
  twin_lent_.assign(e - b, 0);
  for (int k = ka; k < ka + kl; ++k) {
    pending_twin_[k] = kb + (k - ka);
    twin_lent_[kb + (k - ka) - b] = 1;
  }
  for (int k = 0; k < m; ++k) {
    if (k == ka && kl > 0) {
      k += kl - 1;
      continue;
    }
    const std::vector<TensorId>& retained_in = v.RetainedInto(k);
    if (const int p = twin(k, retained_in); p >= 0) {
      if (!twin_lent_[p - b]) {
        twin_lent_[p - b] = 1;
        pending_twin_[k] = p;
      } else {
        SequenceFacts& facts = pending_facts_[k];
        const SequenceFacts& known = facts_[p];
        facts.boundary_inputs.assign(known.boundary_inputs.begin(), known.boundary_inputs.end());
        facts.writes.assign(known.writes.begin(), known.writes.end());
        facts.valid_ops.assign(known.valid_ops.begin(), known.valid_ops.end());
        facts.inputs.assign(known.inputs.begin(), known.inputs.end());
        facts.sinks.assign(known.sinks.begin(), known.sinks.end());
      }
      pending_results_[k] = results_[p];
      continue;
    }
    Facts(v.Sub(k), pending_facts_[k]);
    Price(v.Sub(k), retained_in, pending_results_[k]);
  }
}

Latency IncrementalEvaluator::ProposedTotal(const EditView& v) {
  const int b = v.b, e = v.e, m = v.m;
  pending_has_successor_ = e < v.n;
  pending_successor_repriced_ = false;
  if (pending_has_successor_) {
    const std::vector<TensorId>& old_in = e > 0 ? schedule_.subgraphs[e - 1].retain : kNoTensors;
    const std::vector<TensorId>& successor_in = v.SuccessorIn();
    if (!SameSet(successor_in, old_in)) {
      Price(schedule_.subgraphs[e], successor_in, pending_results_[m]);
      pending_successor_repriced_ = true;
    }
  }
  // The same adds in the same order as over copies of the kept run (latencies_ holds results_'
  // latencies, packed).
  Latency total = latency_sum_;
  for (int i = b; i < e; ++i) total -= latencies_[i];
  for (int k = 0; k < m; ++k) {
    const int c = v.KeptIndex(k);
    total += c >= 0 ? latencies_[c] : pending_results_[k].report.latency;
  }
  if (pending_successor_repriced_) {
    total += pending_results_[m].report.latency - results_[e].report.latency;
  }
  return total;
}

void IncrementalEvaluator::CountRangeChanges(const EditView& v) {
  const int b = v.b, e = v.e, m = v.m, ka = v.ka, kb = v.kb, ke = v.ke, kl = v.kl;
  // Writes inside the edited range, before and after the edit. The kept run writes the same on
  // both sides, so it is left out of the counts; a tensor it writes is written in the range
  // either way (KeptWrites), which the checks that ask "written in the new range" add.
  if (++stamp_ == 0) {
    std::fill(op_stamp_.begin(), op_stamp_.end(), 0);
    std::fill(tensor_stamp_.begin(), tensor_stamp_.end(), 0);
    stamp_ = 1;
  }
  touched_tensors_.clear();
  auto touch = [&](TensorId t) {
    if (tensor_stamp_[t] != stamp_) {
      tensor_stamp_[t] = stamp_;
      touched_tensors_.push_back(t);
    }
  };
  // Before the kept run (old [b, kb), new [0, ka)) the writes are counted apart too: whether a
  // tensor is written there changes what a kept subgraph finds written before it.
  part_tensors_.clear();
  for (int i = b; i < e; ++i) {
    if (i == kb && kl > 0) {
      i = ke - 1;
      continue;
    }
    for (TensorId t : facts_[i].writes) touch(t), ++old_region_writes_[t];
  }
  for (int k = 0; k < m; ++k) {
    if (k == ka && kl > 0) {
      k += kl - 1;
      continue;
    }
    for (TensorId t : v.PendingFacts(k).writes) touch(t), ++new_region_writes_[t];
  }
  // Out of line, and only with a kept run: the proposal's loops stay as compact as they were.
  auto count_part = [&]() __attribute__((noinline)) {
    for (int i = b; i < kb; ++i) {
      for (TensorId t : facts_[i].writes) {
        if (old_part_writes_[t] == 0 && new_part_writes_[t] == 0) part_tensors_.push_back(t);
        ++old_part_writes_[t];
      }
    }
    for (int k = 0; k < ka; ++k) {
      for (TensorId t : v.PendingFacts(k).writes) {
        if (old_part_writes_[t] == 0 && new_part_writes_[t] == 0) part_tensors_.push_back(t);
        ++new_part_writes_[t];
      }
    }
  };
  if (kl > 0) count_part();
  delta_tensors_.clear();
  for (TensorId t : touched_tensors_) {
    if (v.InDelta(t)) delta_tensors_.push_back(t);
  }
  // The kept subgraphs after the first whose status can change: those reading a tensor whose
  // written-or-not status before the run changed (the others find what they found: the same
  // retained-in list, the same writes before them). Committed positions, ascending.
  kept_recheck_.clear();
  auto find_recheck = [&]() __attribute__((noinline)) {
    for (TensorId t : part_tensors_) {
      if (!v.InPartDelta(t)) continue;
      const std::vector<int64_t>& readers = readers_[t];
      for (auto it = std::upper_bound(readers.begin(), readers.end(), labels_[kb]);
           it != readers.end() && *it <= labels_[ke - 1]; ++it) {
        kept_recheck_.push_back(PositionOfLabel(*it));
      }
    }
    std::sort(kept_recheck_.begin(), kept_recheck_.end());
    kept_recheck_.erase(std::unique(kept_recheck_.begin(), kept_recheck_.end()), kept_recheck_.end());
  };
  if (kl > 1) find_recheck();
  touched_ops_.clear();
  for (int i = b; i < e; ++i) {
    if (i == kb && kl > 0) {
      i = ke - 1;
      continue;
    }
    for (OpId op : facts_[i].valid_ops) {
      if (op_stamp_[op] != stamp_) touched_ops_.push_back(op);
      op_stamp_[op] = stamp_;
      --cover_delta_[op];
    }
  }
  for (int k = 0; k < m; ++k) {
    if (k == ka && kl > 0) {
      k += kl - 1;
      continue;
    }
    for (OpId op : v.PendingFacts(k).valid_ops) {
      if (op_stamp_[op] != stamp_) touched_ops_.push_back(op);
      op_stamp_[op] = stamp_;
      ++cover_delta_[op];
    }
  }
}

Candidate IncrementalEvaluator::CheckProposal(const EditView& v) {
  const int b = v.b, e = v.e, m = v.m, ka = v.ka, kb = v.kb, kl = v.kl, shift = v.shift;
  const bool delta = !delta_tensors_.empty();
  auto local_failure = [&](const SubgraphResult& result, int position) {
    Violation violation = result.violation;
    violation.subgraph = position;
    return Invalid(std::move(violation));
  };

  // 1. A failure before the edit stays the first one.
  if (!failing_.empty() && failing_.front() < b) return Invalid(committed_.violation);

  // The kept subgraphs in kept_recheck_, in order: the first V7 failure among them, or null.
  Candidate recheck_failure;
  auto recheck_kept = [&]() __attribute__((noinline)) -> const Candidate* {
    for (const int r : kept_recheck_) {
      const std::vector<TensorId>& in = schedule_.subgraphs[r - 1].retain;
      for (const auto& [op, t] : facts_[r].boundary_inputs) {
        bool written;
        if (v.InPartDelta(t)) {
          // Written before the edit, before the run in the new range, or by the run before r.
          const std::vector<int64_t>& writers = writers_[t];
          const auto it = std::lower_bound(writers.begin(), writers.end(), labels_[kb]);
          written = WrittenBefore(t, b) || new_part_writes_[t] > 0 || (it != writers.end() && *it < labels_[r]);
        } else {
          written = WrittenBefore(t, r);
        }
        if (problem_.producer[t] != kNoOp && !Available(op, t, written, in)) {
          recheck_failure = Invalid(V7Violation(b + ka + (r - kb), op, t));
          return &recheck_failure;
        }
      }
    }
    return nullptr;
  };
  // 2. The replacement and the successor, in full; of the kept run the first subgraph (a new
  // retained-in list) and those in kept_recheck_, the others passing as they did.
  for (int k = 0; k < m; ++k) {
    const int c = v.KeptIndex(k);
    if (c > kb) continue;
    if (!v.Result(k).ok()) return local_failure(v.Result(k), b + k);
    const std::vector<TensorId>& retained_in = v.RetainedInto(k);
    const bool after_run = kl > 0 && k >= ka + kl;
    for (const auto& [op, t] : v.PendingFacts(k).boundary_inputs) {
      const bool written = WrittenBefore(t, b) || running_writes_[t] > 0 || (after_run && v.KeptWrites(t));
      if (problem_.producer[t] != kNoOp && !Available(op, t, written, retained_in)) {
        return Invalid(V7Violation(b + k, op, t));
      }
    }
    if (c < 0) {
      for (TensorId t : v.PendingFacts(k).writes) ++running_writes_[t];
    }
    if (c == kb && !kept_recheck_.empty()) {
      if (const Candidate* failure = recheck_kept()) return *failure;
    }
  }
  // The successor with its old retained-in set and no tensor in delta has its committed status
  // (same result; every tensor it reads is written before it exactly when it was): then the
  // suffix scan below covers it too.
  const bool successor_as_committed = pending_has_successor_ && !pending_successor_repriced_ && !delta;
  if (pending_has_successor_ && !successor_as_committed) {
    const SubgraphResult& successor = pending_successor_repriced_ ? pending_results_[m] : results_[e];
    if (!successor.ok()) return local_failure(successor, b + m);
    const std::vector<TensorId>& successor_in = v.SuccessorIn();
    for (const auto& [op, t] : facts_[e].boundary_inputs) {
      const bool written = WrittenBefore(t, b) || new_region_writes_[t] > 0 || v.KeptWrites(t);
      if (problem_.producer[t] != kNoOp && !Available(op, t, written, successor_in)) {
        return Invalid(V7Violation(b + m, op, t));
      }
    }
  }

  // 3. The subgraphs after the successor keep their local results; their V7 status changes
  // only through tensors in delta. So only the committed failures and (with delta) the
  // subgraphs reading a tensor in delta can fail, and the first of them in sequence order
  // does: those candidates are checked in order instead of walking the suffix.
  if (pending_has_successor_) {
    const int after = delta || !successor_as_committed ? e : e - 1;
    candidates_.clear();
    for (auto it = std::upper_bound(failing_.begin(), failing_.end(), after); it != failing_.end(); ++it) {
      candidates_.push_back(*it);
    }
    if (delta) {
      for (TensorId t : delta_tensors_) {
        const std::vector<int64_t>& readers = readers_[t];
        for (auto it = std::upper_bound(readers.begin(), readers.end(), labels_[e]); it != readers.end(); ++it) {
          candidates_.push_back(PositionOfLabel(*it));
        }
      }
      std::sort(candidates_.begin(), candidates_.end());
      candidates_.erase(std::unique(candidates_.begin(), candidates_.end()), candidates_.end());
    }
    for (int i : candidates_) {
      if (!results_[i].ok()) return local_failure(results_[i], i + shift);
      const std::vector<TensorId>& retained_in = schedule_.subgraphs[i - 1].retain;
      for (const auto& [op, t] : facts_[i].boundary_inputs) {
        bool written;
        if (delta && v.InDelta(t)) {
          // Written before the edit, by the replacement, or by the successor or a later
          // subgraph before i (committed labels in [label(e), label(i))).
          const std::vector<int64_t>& writers = writers_[t];
          const auto it = std::lower_bound(writers.begin(), writers.end(), labels_[e]);
          written = WrittenBefore(t, b) || new_region_writes_[t] > 0 || (it != writers.end() && *it < labels_[i]);
        } else {
          written = WrittenBefore(t, i);
        }
        if (problem_.producer[t] != kNoOp && !Available(op, t, written, retained_in)) {
          return Invalid(V7Violation(i + shift, op, t));
        }
      }
    }
  }

  // 4. V1 coverage and V9 end state from the counters.
  int uncovered = uncovered_ops_;
  for (OpId op : touched_ops_) {
    uncovered += (cover_count_[op] + cover_delta_[op] == 0) - (cover_count_[op] == 0);
  }
  if (uncovered > 0) {
    for (OpId op = 0; op < static_cast<OpId>(problem_.ops.size()); ++op) {
      if (cover_count_[op] + cover_delta_[op] == 0) {
        return Invalid({"V1", -1, "op " + std::to_string(op) + " appears in no subgraph"});
      }
    }
  }
  int unwritten = unwritten_outputs_;
  for (TensorId t : touched_tensors_) {
    if (!problem_.IsGraphOutput(t)) continue;
    const int written = static_cast<int>(writers_[t].size());
    const int count = written - old_region_writes_[t] + new_region_writes_[t];
    unwritten += (count == 0) - (written == 0);
  }
  if (unwritten > 0) {
    for (TensorId t = 0; t < static_cast<TensorId>(problem_.tensors.size()); ++t) {
      if (!problem_.IsGraphOutput(t)) continue;
      const int written = static_cast<int>(writers_[t].size());
      const int count = tensor_stamp_[t] == stamp_ ? written - old_region_writes_[t] + new_region_writes_[t]
                                                   : written;
      if (count == 0) {
        return Invalid({"V9", -1,
                        "graph output tensor " + std::to_string(t) + " is never written to slow memory"});
      }
    }
  }
  Candidate candidate;
  candidate.valid = true;
  return candidate;
}

// Same ops and retained set as the subgraph it replaces: the same boundary inputs and writes,
// so every other subgraph, the successor's context, V1 coverage and V9 are as committed (both
// hold: the caller checked the counters). Only this subgraph's own result is new; its V7
// status is the committed derivation, which is re-run here because a committed local failure
// hid it.
const Candidate& IncrementalEvaluator::ProposeSameFacts(int b, const Subgraph& replacement) {
  const int n = static_cast<int>(schedule_.subgraphs.size());
  // Only what differs is kept for Commit (ops and retained list are equal to the committed).
  pending_edit_.begin = b;
  pending_edit_.end = b + 1;
  pending_granularity_ = replacement.granularity;
  pending_traversal_ = replacement.traversal;
  pending_has_successor_ = b + 1 < n;
  pending_successor_repriced_ = false;
  if (pending_results_.size() < 2) pending_results_.resize(2);
  SubgraphResult& result = pending_results_[0];
  const std::vector<TensorId>& retained_in = b > 0 ? schedule_.subgraphs[b - 1].retain : kNoTensors;
  Price(replacement, retained_in, result);

  // The common case: every committed subgraph passes (so V7 holds here, with the same inputs,
  // context and writers before it) and the new result does too.
  const Latency total = latency_sum_ - results_[b].report.latency + result.report.latency;
  auto keep_valid = [&]() -> const Candidate& {
    pending_candidate_.valid = true;
    pending_candidate_.total = total;
    pending_candidate_.violation.rule.clear();
    pending_candidate_.violation.detail.clear();
    pending_candidate_.violation.subgraph = -1;
    return pending_candidate_;
  };
  if (failing_.empty() && result.ok()) return keep_valid();

  auto keep = [&](Candidate c) -> const Candidate& {
    pending_candidate_ = std::move(c);
    return pending_candidate_;
  };
  if (!failing_.empty() && failing_.front() < b) return keep(Invalid(committed_.violation));
  if (!result.ok()) {
    Violation v = result.violation;
    v.subgraph = b;
    return keep(Invalid(std::move(v)));
  }
  for (const auto& [op, t] : facts_[b].boundary_inputs) {
    if (problem_.producer[t] != kNoOp && !Available(op, t, WrittenBefore(t, b), retained_in)) {
      return keep(Invalid(V7Violation(b, op, t)));
    }
  }
  // The first committed failure after b is the first one now.
  const auto it = std::upper_bound(failing_.begin(), failing_.end(), b);
  if (it != failing_.end()) {
    const int i = *it;
    if (!results_[i].ok()) {
      Violation v = results_[i].violation;
      v.subgraph = i;
      return keep(Invalid(std::move(v)));
    }
    const std::vector<TensorId>& in = schedule_.subgraphs[i - 1].retain;
    for (const auto& [op, t] : facts_[i].boundary_inputs) {
      if (problem_.producer[t] != kNoOp && !Available(op, t, WrittenBefore(t, i), in)) {
        return keep(Invalid(V7Violation(i, op, t)));
      }
    }
  }
  return keep_valid();
}

void IncrementalEvaluator::Commit() {
  if (!pending_) return;
  pending_ = false;
  const int b = pending_edit_.begin, e = pending_edit_.end;
  const int m = pending_edit_.size();
  auto& subgraphs = schedule_.subgraphs;
  if (pending_same_facts_) {
    // Same facts: only this subgraph's own status can change.
    subgraphs[b].granularity = pending_granularity_;
    subgraphs[b].traversal = std::move(pending_traversal_);
    results_[b] = pending_results_[0];
    latencies_[b] = results_[b].report.latency;
    subgraph_ok_[b] = SubgraphOk(b);
    const auto it = std::lower_bound(failing_.begin(), failing_.end(), b);
    const bool listed = it != failing_.end() && *it == b;
    if (!subgraph_ok_[b] && !listed) failing_.insert(it, b);
    if (subgraph_ok_[b] && listed) failing_.erase(it);
  } else {
    SpliceCommitted(b, e, m);
  }
  // Summed afresh in sequence order from the edit on: no drift over commits, the same value as
  // a full pass (the positions before the edit keep their latencies and their prefix sums,
  // which are the full pass's partial sums). Each add waits for the one before, so on a long
  // schedule the pass's length is its time. Into a local: summing into a member stored it on
  // every element (it may alias).
  const int n = static_cast<int>(latencies_.size());
  prefix_sums_.resize(n);
  Latency sum = b > 0 ? prefix_sums_[b - 1] : 0;
  for (int i = b; i < n; ++i) {
    sum += latencies_[i];
    prefix_sums_[i] = sum;
  }
  latency_sum_ = sum;
  committed_ = pending_candidate_;
  if (committed_.valid) committed_.total = latency_sum_;
  CheckAgainstOracle();
}

void IncrementalEvaluator::SpliceCommitted(int b, int e, int m) {
  const int n = static_cast<int>(schedule_.subgraphs.size());
  const int64_t low = b > 0 ? labels_[b - 1] : 0;
  const int64_t high = e < n ? labels_[e] : low + (m + 1) * kLabelGap;
  // A twin (a replacement subgraph equal to a replaced one after the same retained-in list:
  // the same facts) keeps its committed subgraph's label when the kept labels rise along the
  // replacement and leave room between them for the other new subgraphs: its accounting
  // (Account -1 with that label and facts, then +1 with the same) cancels and is skipped. A
  // stretch shifted by one keeps all of its labels but the carried subgraph's. Labels are only
  // ever compared, so which increasing labels the positions get changes no answer.
  kept_label_.assign(m, 0);
  label_kept_.assign(e - b, 0);
  {
    int64_t previous = low;
    int waiting = 0;  // new subgraphs since the last kept label
    int kept = 0;
    for (int k = 0; k < m; ++k) {
      const int c = pending_twin_[k];
      if (c >= 0 && labels_[c] > previous && labels_[c] - previous - 1 >= waiting) {
        kept_label_[k] = labels_[c];
        label_kept_[c - b] = 1;
        previous = labels_[c];
        waiting = 0;
        ++kept;
      } else {
        ++waiting;
      }
    }
    if (kept > 0 && high - previous - 1 < waiting) {  // no room after the last one: keep none
      std::fill(kept_label_.begin(), kept_label_.end(), 0);
      std::fill(label_kept_.begin(), label_kept_.end(), 0);
      kept = 0;
    }
    labels_kept_ = kept > 0;
  }
  for (int i = b; i < e; ++i) {
    if (!label_kept_[i - b]) Account(i, -1);
  }
  // Old failures outside the edited range, at their new positions.
  const int shift = m - (e - b);
  candidates_.clear();
  for (int p : failing_) {
    if (p < b) candidates_.push_back(p);
    if (p >= e) candidates_.push_back(p + shift);
  }
  // Labels for the replacement, evenly between its neighbours' (or the kept ones).
  const bool relabel = !labels_kept_ && high - low - 1 < m;

  auto& subgraphs = schedule_.subgraphs;
  auto& repl = pending_edit_.replacement;
  const int kl = pending_edit_.kept(), ka = pending_edit_.kept_at, kb = pending_edit_.kept_begin,
            ke = pending_edit_.kept_end;
  if (kl == 0) {
    SpliceInto(subgraphs, b, e, repl.begin(), m);
  } else {
    // The tail shifts once (as SpliceInto's), the kept run moves to its place within the range
    // (by at most one), then the two parts around it are swapped in. What the run's move
    // overwrites of the replaced subgraphs is dropped instead of lent to the next edits.
    const int old = e - b;
    if (m > old) subgraphs.insert(subgraphs.begin() + e, m - old, Subgraph{});
    const auto first = subgraphs.begin();
    if (b + ka < kb) {
      std::move(first + kb, first + ke, first + b + ka);
    } else if (b + ka > kb) {
      std::move_backward(first + kb, first + ke, first + b + ka + kl);
    }
    for (int k = 0; k < ka; ++k) std::swap(subgraphs[b + k], repl[k]);
    for (int k = ka + kl; k < m; ++k) std::swap(subgraphs[b + k], repl[k - kl]);
    if (m < old) subgraphs.erase(first + b + m, first + e);
    kept_latencies_.assign(latencies_.begin() + kb, latencies_.begin() + ke);
  }
  // The successor's re-priced result sits at pending index m: saved before the splice hands
  // the pending slots the replaced results.
  if (pending_successor_repriced_) std::swap(pending_results_[m], results_[e]);
  // A kept subgraph's result is the committed one: moved, not copied.
  for (int k = ka; k < ka + kl; ++k) pending_results_.SwapItem(k, results_, kb + (k - ka));
  results_.Splice(b, e, pending_results_, m);
  // A twin's facts are the committed subgraph's, which the splice takes out: moved, not copied.
  for (int k = 0; k < m; ++k) {
    if (pending_twin_[k] >= 0) pending_facts_.SwapItem(k, facts_, pending_twin_[k]);
  }
  facts_.Splice(b, e, pending_facts_, m);
  // The labels' and flags' tails shift the same way (plain memmove).
  const int old = e - b;
  if (m > old) {
    labels_.insert(labels_.begin() + e, m - old, 0);
    subgraph_ok_.insert(subgraph_ok_.begin() + e, m - old, 1);
    latencies_.insert(latencies_.begin() + e, m - old, 0);
  } else if (m < old) {
    labels_.erase(labels_.begin() + b + m, labels_.begin() + e);
    subgraph_ok_.erase(subgraph_ok_.begin() + b + m, subgraph_ok_.begin() + e);
    latencies_.erase(latencies_.begin() + b + m, latencies_.begin() + e);
  }
  if (labels_kept_) {
    // Each run of new subgraphs evenly between the labels around it.
    int64_t previous = low;
    for (int k = 0; k < m;) {
      if (kept_label_[k] != 0) {
        labels_[b + k] = previous = kept_label_[k];
        ++k;
        continue;
      }
      int end = k;
      while (end < m && kept_label_[end] == 0) ++end;
      const int64_t next = end < m ? kept_label_[end] : high;
      const int run = end - k;
      for (int j = 0; j < run; ++j) labels_[b + k + j] = previous + (next - previous) / (run + 1) * (j + 1);
      k = end;
    }
  } else {
    for (int k = 0; k < m; ++k) labels_[b + k] = low + (high - low) / (m + 1) * (k + 1);
  }
  for (int k = 0; k <= m && b + k < static_cast<int>(results_.size()); ++k) {
    if (k == ka && kl > 0) {
      std::copy(kept_latencies_.begin(), kept_latencies_.end(), latencies_.begin() + b + k);
      k += kl - 1;
      continue;
    }
    latencies_[b + k] = results_[b + k].report.latency;
  }
  if (relabel) {  // no room between the neighbours' labels: all afresh (rare)
    RebuildSequenceState();
    return;
  }
  for (int k = 0; k < m; ++k) {
    if (kept_label_[k] == 0) Account(b + k, +1);
  }

  // V7 status can change only for the new subgraphs, the successor (new retained-in set), the
  // old failures, and the readers of a tensor that the old range wrote and the new one does not
  // or the reverse (delta_tensors_ of the proposal): a reader after the range finds such a
  // tensor written before it exactly when it did before, and one before the range does not see
  // the range. A long stretch shifted by one writes what it wrote: no reader to re-check.
  // Every other subgraph stays ok.
  // Of a kept run, the first subgraph (a new retained-in list) and those the proposal found
  // reading a tensor whose written-or-not status before the run changed; the others stay ok
  // (the run had no failure).
  const int new_n = static_cast<int>(subgraphs.size());
  for (int p = b; p <= b + m && p < new_n; ++p) {
    if (kl > 0 && p > b + ka && p < b + ka + kl) {
      subgraph_ok_[p] = 1;
      continue;
    }
    candidates_.push_back(p);
  }
  for (const int r : kept_recheck_) candidates_.push_back(b + ka + (r - kb));
  for (TensorId t : delta_tensors_) {
    for (int64_t label : readers_[t]) candidates_.push_back(PositionOfLabel(label));
  }
  std::sort(candidates_.begin(), candidates_.end());
  candidates_.erase(std::unique(candidates_.begin(), candidates_.end()), candidates_.end());
  failing_.clear();
  for (int p : candidates_) {
    subgraph_ok_[p] = SubgraphOk(p);
    if (!subgraph_ok_[p]) failing_.push_back(p);
  }
}

void IncrementalEvaluator::CheckAgainstOracle() const {
#ifdef ANNEALER_HEAVY_CHECKS
  const Evaluation full = EvaluateOracle(problem_, schedule_);
  const bool same_verdict = full.ok() == committed_.valid &&
                            (full.ok() || (full.violation.rule == committed_.violation.rule &&
                                           full.violation.subgraph == committed_.violation.subgraph));
  const bool same_total =
      !full.ok() || std::abs(full.total - committed_.total) <= 1e-9 * std::max(1.0, std::abs(full.total));
  if (!same_verdict || !same_total) {
    std::fprintf(stderr,
                 "ANNEALER_HEAVY_CHECKS: incremental evaluation differs from the oracle after a "
                 "commit: incremental %s %.17g (%s), oracle %s %.17g (%s)\n",
                 committed_.valid ? "valid" : "invalid", committed_.total,
                 committed_.violation.Message().c_str(), full.ok() ? "valid" : "invalid", full.total,
                 full.violation.Message().c_str());
    std::abort();
  }
#endif
}

void IncrementalEvaluator::Revert() { pending_ = false; }

bool IncrementalEvaluator::CommitIfLower(ScheduleEdit&& edit, Candidate& current) {
  const Candidate& candidate = Propose(std::move(edit));
  if (!candidate.valid || !(candidate.total < current.total)) {
    Revert();
    return false;
  }
  current = candidate;
  Commit();
  return true;
}

}  // namespace annealer
