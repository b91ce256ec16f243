// What an evaluation says of a schedule or one subgraph: the verdict, the first rule broken and
// the priced report. Shared by the oracle (eval/oracle.h), the fast path (eval/cost/) and every
// reader of results, so none of them needs another to name a result.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "eval/model/problem.h"
#include "eval/model/schedule.h"

namespace annealer {

enum class Verdict {
  kValid,
  kOutOfMemory,  // rule W / V4: a step's working set exceeds fast_memory_capacity
  kInvalid,      // any other rule of spec A.3
};

// The first rule a schedule breaks. `rule` is the spec's id ("V1".."V13", "W", "G3", ...).
struct Violation {
  std::string rule;
  int subgraph = -1;    // index in the schedule, -1 when the rule is about the whole schedule
  std::string detail;   // names the step, tensor or op where it fails
  std::string Message() const;  // one line: "V7 in subgraph 3: tensor 12 ..."
};

struct SubgraphReport {
  Latency latency = 0;
  Latency compute_time = 0;  // sum over steps of the compute term
  Latency memory_time = 0;   // sum over steps of the memory term
  Elements peak_working_set = 0;
  int64_t tiles = 0;
  int64_t k_steps = 0;  // per tile
  bool operator==(const SubgraphReport&) const = default;
};

struct SubgraphResult {
  Verdict verdict = Verdict::kValid;
  Violation violation;  // meaningful when verdict != kValid (subgraph index left at -1)
  SubgraphReport report;
  bool ok() const { return verdict == Verdict::kValid; }
};

struct Evaluation {
  Verdict verdict = Verdict::kValid;
  Violation violation;
  std::vector<SubgraphReport> subgraphs;
  Latency total = 0;
  std::vector<std::string> warnings;  // spec V13: reported latencies that differ from ours
  bool ok() const { return verdict == Verdict::kValid; }
};

// Spec V13: one warning per subgraph whose reported latency (if the schedule carries any)
// differs from the computed one by more than 1e-6 relative.
std::vector<std::string> LatencyWarnings(const Schedule& schedule,
                                         const std::vector<SubgraphReport>& computed);

}  // namespace annealer
