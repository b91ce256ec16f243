// What every view of a schedule shows — evaluate's table and JSON, the HTML report and the
// trace: the oracle's verdict on the whole schedule, and per subgraph its settings, its cost and
// where it sits on the time axis. Built once by SummarizeSchedule; the views only format it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "eval/bound/bounds.h"
#include "eval/oracle.h"
#include "eval/model/problem.h"
#include "eval/model/schedule.h"

namespace annealer {

struct SubgraphSummary {
  const Subgraph* subgraph = nullptr;    // into the summarised schedule (which must outlive it)
  std::vector<TensorId> retained_in;     // tensors_to_retain of the previous subgraph
  // The oracle's price of the subgraph in its context; nullopt when it cannot be priced (it
  // breaks a rule on its own, see `violation`).
  std::optional<SubgraphReport> report;
  std::optional<Violation> violation;    // the rule it breaks on its own (index set)
  Latency start = 0;                     // sum of the priced latencies before it
  bool partial_edge_tiles = false;       // see SubgraphsWithPartialEdgeTiles
  // H1's buffers for a problem with a chip's rules: each role's peak over the subgraph's steps
  // (after H2 and H4), from the oracle's steps. nullopt without rules or without a report.
  std::optional<RoleFootprints> roles;
  // A subgraph whose steps spend more time moving data than computing, summed over its steps.
  bool memory_bound() const { return report && report->memory_time > report->compute_time; }
};

struct ScheduleSummary {
  Evaluation evaluation;                  // EvaluateOracle on the whole schedule
  std::vector<SubgraphSummary> subgraphs; // one per subgraph of the schedule, in order
  // evaluation.total when the schedule is valid; otherwise the sum of the subgraphs that could
  // be priced on their own (a partial figure, shown as such).
  Latency total = 0;
  LowerBound bound;
  std::optional<double> gap_percent;      // total vs bound.total(); only for a valid schedule
  std::vector<int> partial_edge_tiles;    // subgraph indices

  bool valid() const { return evaluation.ok(); }
};

// The peak footprint of each role (H1) over a subgraph's steps, from the oracle's steps.
RoleFootprints PeakRoles(const Problem& problem, const Subgraph& subgraph,
                         const std::vector<TensorId>& retained_in);

// "VALID", "OOM" or "INVALID": the verdict as `annealer evaluate --json` and the Python package
// name it.
std::string VerdictName(Verdict verdict);

// Runs the oracle once on the whole schedule. A valid schedule takes its per-subgraph reports
// from that run. An invalid one (the oracle stops at the first broken rule) has each subgraph
// priced on its own with EvaluateSubgraphOracle and the previous subgraph's retained tensors,
// so that a report can still draw what is there.
ScheduleSummary SummarizeSchedule(const Problem& problem, const Schedule& schedule);

}  // namespace annealer
