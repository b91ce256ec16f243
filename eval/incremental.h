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
#include <vector>

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
  Candidate Propose(const ScheduleEdit& edit);
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
  std::vector<SubgraphResult> pending_results_;  // for replacement + the repriced successor
};

}  // namespace annealer
