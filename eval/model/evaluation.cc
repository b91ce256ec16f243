#include "eval/model/evaluation.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace annealer {

std::string Violation::Message() const {
  std::string where = subgraph >= 0 ? " in subgraph " + std::to_string(subgraph) : "";
  return rule + where + ": " + detail;
}

namespace {

std::string ShortestNumber(double v) {
  char buffer[32];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, v).ptr;
  return std::string(buffer, end);
}

}  // namespace

std::vector<std::string> LatencyWarnings(const Schedule& schedule,
                                         const std::vector<SubgraphReport>& computed) {
  std::vector<std::string> warnings;
  if (!schedule.reported_latencies) return warnings;
  const auto& reported = *schedule.reported_latencies;
  for (size_t i = 0; i < reported.size() && i < computed.size(); ++i) {
    const double ours = computed[i].latency;
    if (std::abs(reported[i] - ours) > 1e-6 * std::max(1.0, ours)) {
      warnings.push_back("V13: reported latency of subgraph " + std::to_string(i) +
                         " differs from the computed one (reported " +
                         ShortestNumber(reported[i]) + ", computed " + ShortestNumber(ours) +
                         ")");
    }
  }
  return warnings;
}

}  // namespace annealer
