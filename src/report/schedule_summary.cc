#include "src/report/schedule_summary.h"

#include <algorithm>
#include <string>

#include "eval/model/subgraph_structure.h"
#include "src/io/text_format.h"

namespace annealer {

RoleFootprints PeakRoles(const Problem& problem, const Subgraph& subgraph,
                         const std::vector<TensorId>& retained_in) {
  RoleFootprints peak;
  EvaluateSubgraphOracleSteps(problem, subgraph, retained_in, [&](const StepRecord& r) {
    peak.staging = std::max(peak.staging, r.roles.staging);
    peak.accumulator = std::max(peak.accumulator, r.roles.accumulator);
    peak.vector = std::max(peak.vector, r.roles.vector);
    peak.weight_fifo = std::max(peak.weight_fifo, r.roles.weight_fifo);
  });
  return peak;
}

ScheduleSummary SummarizeSchedule(const Problem& problem, const Schedule& schedule) {
  ScheduleSummary summary;
  summary.evaluation = EvaluateOracle(problem, schedule);
  summary.bound = ComputeLowerBound(problem);
  summary.partial_edge_tiles = SubgraphsWithPartialEdgeTiles(problem, schedule);

  const int num_tensors = static_cast<int>(problem.tensors.size());
  std::vector<TensorId> retained_in;
  Latency start = 0;
  for (int i = 0; i < static_cast<int>(schedule.subgraphs.size()); ++i) {
    const Subgraph& subgraph = schedule.subgraphs[i];
    SubgraphSummary& s = summary.subgraphs.emplace_back();
    s.subgraph = &subgraph;
    s.retained_in = retained_in;
    s.start = start;
    s.partial_edge_tiles = std::binary_search(summary.partial_edge_tiles.begin(),
                                              summary.partial_edge_tiles.end(), i);
    if (summary.valid()) {
      s.report = summary.evaluation.subgraphs[i];
    } else {
      SubgraphResult result = EvaluateSubgraphOracle(problem, subgraph, retained_in);
      if (result.ok()) {
        s.report = result.report;
      } else {
        result.violation.subgraph = i;
        s.violation = std::move(result.violation);
      }
    }
    if (s.report) start += s.report->latency;
    if (s.report && problem.chip.any()) s.roles = PeakRoles(problem, subgraph, retained_in);
    // An invalid subgraph may retain ids that are not tensors (V8); its successor is priced as
    // if only the real ones were kept, which is the best the report can do.
    retained_in.clear();
    for (TensorId t : subgraph.retain) {
      if (t >= 0 && t < num_tensors) retained_in.push_back(t);
    }
  }
  summary.total = summary.valid() ? summary.evaluation.total : start;
  if (summary.valid()) summary.gap_percent = GapPercent(summary.total, summary.bound.total());
  return summary;
}

std::string VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kValid: return "VALID";
    case Verdict::kOutOfMemory: return "OOM";
    case Verdict::kInvalid: return "INVALID";
  }
  return "INVALID";
}

}  // namespace annealer
