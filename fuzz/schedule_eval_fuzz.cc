// libFuzzer target: the schedule reader (src/io/contest/schedule_io.h) on arbitrary bytes, then every
// evaluator on what it accepts, against two fixed problems (the second with Layout ops): the
// oracle (eval/oracle.h), the fast path cold and through a cost cache (eval/cost/subgraph_cost.h)
// and the incremental evaluator (eval/cost/incremental.h). The fast ones must give the oracle's verdict, rule, failing subgraph and
// latencies (the property tests' comparison, here on inputs nobody generated on purpose).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "eval/cost/cost_cache.h"
#include "eval/cost/incremental.h"
#include "eval/oracle.h"
#include "eval/cost/evaluate_fast.h"
#include "fuzz/fixed_problem.h"
#include "fuzz/fuzz_checks.h"
#include "src/io/contest/problem_reader.h"
#include "src/io/contest/schedule_io.h"

namespace annealer {
namespace {

constexpr int64_t kLargestSide = 256;  // of fuzz::kFixedProblem
// The oracle walks every step; beyond this many the input is only read, not evaluated (a
// granularity of [1, 1, 1] has 2^24 steps per MatMul here, seconds per input).
constexpr double kMaxSteps = 200000;

bool Close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }

double StepsAtMost(const Schedule& schedule) {
  double steps = 0;
  for (const Subgraph& sg : schedule.subgraphs) {
    const Granularity& g = sg.granularity;
    const auto count = [](int64_t side) {
      return side <= 0 ? 1.0 : std::ceil(static_cast<double>(kLargestSide) / static_cast<double>(side));
    };
    steps += count(g.w) * count(g.h) * count(g.k);
  }
  return steps;
}

void Compare(const char* path, const Evaluation& fast, const Evaluation& oracle) {
  const std::string who = path;
  if (fast.verdict != oracle.verdict) fuzz::Finding(who + ": verdict differs from the oracle's");
  if (fast.violation.rule != oracle.violation.rule || fast.violation.subgraph != oracle.violation.subgraph) {
    fuzz::Finding(who + ": " + fast.violation.Message() + " but the oracle: " + oracle.violation.Message());
  }
  if (!oracle.ok()) return;
  if (!Close(fast.total, oracle.total)) fuzz::Finding(who + ": total differs from the oracle's");
  if (fast.subgraphs.size() != oracle.subgraphs.size()) fuzz::Finding(who + ": subgraph count differs");
  for (size_t i = 0; i < oracle.subgraphs.size(); ++i) {
    if (!Close(fast.subgraphs[i].latency, oracle.subgraphs[i].latency) ||
        fast.subgraphs[i].peak_working_set != oracle.subgraphs[i].peak_working_set) {
      fuzz::Finding(who + ": subgraph " + std::to_string(i) + " differs from the oracle's");
    }
  }
  // The same subgraphs flagged (the texts quote each path's latency, equal only to 1e-9).
  if (fast.warnings.size() != oracle.warnings.size()) fuzz::Finding(who + ": V13 warnings differ");
}

// Every evaluator on `schedule` against `problem`, with `cache` kept across inputs.
void CheckAll(const Problem& problem, CostCache& cache, const Schedule& schedule) {
  const Evaluation oracle = EvaluateOracle(problem, schedule);
  Compare("EvaluateFast", EvaluateFast(problem, schedule), oracle);
  // One cache for the whole run, like a search: entries of earlier inputs must never leak into
  // the answer for this one.
  Compare("EvaluateFast with a cache", EvaluateFast(problem, schedule, &cache), oracle);
  IncrementalEvaluator incremental(problem, &cache);
  const Candidate candidate = incremental.Reset(schedule);
  if (candidate.valid != oracle.ok()) fuzz::Finding("IncrementalEvaluator: verdict differs from the oracle's");
  if (oracle.ok() && !Close(candidate.total, oracle.total)) fuzz::Finding("IncrementalEvaluator: total differs");
  if (!oracle.ok() && candidate.violation.rule != oracle.violation.rule) {
    fuzz::Finding("IncrementalEvaluator: " + candidate.violation.Message() + " but the oracle: " +
                  oracle.violation.Message());
  }
}

}  // namespace
}  // namespace annealer

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace annealer;
  static const Problem problem = ParseProblem(fuzz::kFixedProblem, "fixed problem");
  // The same schedule against the graph with Layout ops (one cache per problem: a cache serves
  // one problem).
  static const Problem layout_problem = ParseProblem(fuzz::kFixedLayoutProblem, "fixed Layout problem");
  static const std::string origin = "fuzz-solution.json";
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Schedule schedule;
  try {
    schedule = ParseSchedule(text, origin);
  } catch (const InputError& error) {
    fuzz::CheckErrorMessage(error.what(), origin);
    return 0;
  }
  if (StepsAtMost(schedule) > kMaxSteps) return 0;
  static CostCache cache(4096);
  static CostCache layout_cache(4096);
  CheckAll(problem, cache, schedule);
  CheckAll(layout_problem, layout_cache, schedule);
  return 0;
}
