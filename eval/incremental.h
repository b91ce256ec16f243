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
//   At most one proposal is pending: a second Propose without Commit/Revert discards the first.
// - Commit() makes the pending proposal the committed schedule. Revert() drops it.
//   Both are O(edit size + number of subgraphs) at worst (a vector splice), never a re-pricing.
//
// The result of every committed state equals EvaluateOracle on the same schedule (latency to
// 1e-9 relative, same verdict); tests/incremental_test.cc checks this on long random runs.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "eval/flat_problem.h"
#include "eval/oracle.h"
#include "eval/problem.h"
#include "eval/schedule.h"

namespace annealer {

class CostCache;

// Replace subgraphs [begin, end) of the current schedule by `replacement`.
// begin == end inserts; an empty replacement erases.
struct ScheduleEdit {
  int begin = 0;
  int end = 0;
  std::vector<Subgraph> replacement;
};

// The schedule with the edit applied (what Commit() makes of the committed schedule).
Schedule ApplyEdit(const Schedule& schedule, const ScheduleEdit& edit);

struct Candidate {
  bool valid = false;
  Latency total = 0;     // meaningful when valid
  Violation violation;   // first failing rule when !valid
};

class IncrementalEvaluator {
 public:
  // `cache` may be null (no caching). Both must outlive the evaluator.
  IncrementalEvaluator(const Problem& problem, CostCache* cache);

  Candidate Reset(const Schedule& schedule);
  // The pending candidate: valid until the next Reset, Propose, Commit or Revert.
  const Candidate& Propose(const ScheduleEdit& edit);
  void Commit();
  void Revert();

  const Schedule& schedule() const { return schedule_; }
  const Candidate& committed() const { return committed_; }
  // Per-subgraph results of the committed schedule, parallel to schedule().subgraphs.
  const std::vector<SubgraphResult>& subgraph_results() const { return results_; }

 private:
  const Problem& problem_;
  CostCache* cache_;
  Schedule schedule_;
  Candidate committed_;
  std::vector<SubgraphResult> results_;

  // The pending proposal.
  bool pending_ = false;
  ScheduleEdit pending_edit_;
  Candidate pending_candidate_;
  // The replacement's results, then (at index m) the successor's when it was re-priced.
  std::vector<SubgraphResult> pending_results_;
  bool pending_successor_repriced_ = false;

  // What the sequence rules (V1 coverage, V7, V9) need to know about one subgraph.
  struct SequenceFacts {
    std::vector<std::pair<OpId, TensorId>> boundary_inputs;  // in the oracle's check order
    std::vector<TensorId> writes;                            // outputs written to slow memory
    std::vector<OpId> valid_ops;                             // ops with ids in range
  };
  void Facts(const Subgraph& subgraph, SequenceFacts& facts);  // refills, keeping capacity
  void Price(const Subgraph& subgraph, const std::vector<TensorId>& retained_in,
             SubgraphResult& result);
  // Rebuilds the committed sequence state (writers, flags, counts, total) in one linear pass.
  void RebuildSequenceState();
  Candidate CommittedCandidate() const;
  Violation V7Violation(int position, OpId op, TensorId tensor) const;

  FlatProblem flat_;                         // the problem's DAG facts, laid out flat
  std::vector<SequenceFacts> facts_;         // parallel to schedule_.subgraphs
  std::vector<char> subgraph_ok_;            // local result ok and V7 holds, per subgraph
  std::vector<int> failing_;                 // ascending positions where subgraph_ok_ is false
  std::vector<int> first_writer_;            // per tensor: first position writing it, or INT_MAX
  std::vector<int> cover_count_;             // per op: subgraphs containing it
  std::vector<int> write_count_;             // per tensor: subgraphs writing it
  int uncovered_ops_ = 0;
  int unwritten_outputs_ = 0;
  Latency latency_sum_ = 0;                  // sum of committed subgraph latencies

  std::vector<SequenceFacts> pending_facts_;  // for the replacement
  bool pending_has_successor_ = false;
  // The proposal replaced one subgraph by one with the same op list and retained set (a new
  // granularity or traversal): the sequence facts are the committed ones.
  // Only its granularity and traversal are kept (pending_edit_ holds just begin and end).
  bool pending_same_facts_ = false;
  Granularity pending_granularity_;
  std::optional<std::vector<int64_t>> pending_traversal_;
  const Candidate& ProposeSameFacts(int position, const Subgraph& replacement);
  void SpliceCommitted(int begin, int end, int replacement_size);
  // With ANNEALER_HEAVY_CHECKS: aborts when the committed state differs from EvaluateOracle.
  void CheckAgainstOracle() const;

  // Scratch, sized to the problem; stamps avoid clearing between proposals.
  std::vector<uint32_t> op_stamp_;
  std::vector<uint32_t> tensor_stamp_;
  uint32_t stamp_ = 0;
  std::vector<int> old_region_writes_, new_region_writes_;  // per tensor, for the edited range
  std::vector<int> running_writes_, suffix_writes_;         // per tensor, while scanning
  std::vector<int> cover_delta_;                                           // per op
  std::vector<TensorId> touched_tensors_;
  std::vector<OpId> touched_ops_;
};

}  // namespace annealer
