// Naive placeholder (lead): re-evaluates the whole schedule with the oracle on every proposal.
// Correct but slow; helper "fast" replaces it with the incremental, cached implementation.
#include "eval/incremental.h"

namespace annealer {

namespace {
Schedule Apply(const Schedule& schedule, const ScheduleEdit& edit) {
  Schedule next;
  next.subgraphs.assign(schedule.subgraphs.begin(), schedule.subgraphs.begin() + edit.begin);
  next.subgraphs.insert(next.subgraphs.end(), edit.replacement.begin(), edit.replacement.end());
  next.subgraphs.insert(next.subgraphs.end(), schedule.subgraphs.begin() + edit.end,
                        schedule.subgraphs.end());
  return next;
}

Candidate ToCandidate(const Evaluation& evaluation) {
  return {evaluation.ok(), evaluation.total, evaluation.violation};
}
}  // namespace

IncrementalEvaluator::IncrementalEvaluator(const Problem& problem, CostCache* cache)
    : problem_(problem), cache_(cache) {}

Candidate IncrementalEvaluator::Reset(const Schedule& schedule) {
  schedule_ = schedule;
  const Evaluation evaluation = EvaluateOracle(problem_, schedule_);
  committed_ = ToCandidate(evaluation);
  results_.clear();
  for (const SubgraphReport& report : evaluation.subgraphs) results_.push_back({Verdict::kValid, {}, report});
  pending_ = false;
  return committed_;
}

Candidate IncrementalEvaluator::Propose(const ScheduleEdit& edit) {
  pending_ = true;
  pending_edit_ = edit;
  const Evaluation evaluation = EvaluateOracle(problem_, Apply(schedule_, edit));
  pending_candidate_ = ToCandidate(evaluation);
  pending_results_.clear();
  for (const SubgraphReport& report : evaluation.subgraphs) {
    pending_results_.push_back({Verdict::kValid, {}, report});
  }
  return pending_candidate_;
}

void IncrementalEvaluator::Commit() {
  if (!pending_) return;
  schedule_ = Apply(schedule_, pending_edit_);
  committed_ = pending_candidate_;
  results_ = pending_results_;
  pending_ = false;
}

void IncrementalEvaluator::Revert() { pending_ = false; }

}  // namespace annealer
