// The oracle: a plain, step-by-step simulation of docs/cost-model.md (the rules by id).
// It is the ground truth every fast path is tested against, so it favours being obviously
// right over being fast: every execution step is derived, deduplicated and priced on its own.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "eval/model/evaluation.h"
#include "eval/model/problem.h"
#include "eval/model/schedule.h"

namespace annealer {

// Prices one subgraph in its context: `retained_in` is tensors_to_retain of the previous
// subgraph (empty for the first). Checks every rule that depends on the subgraph alone and its
// retained-in set: V1 (local part), V2, V3, V5, V6, V8, V10, V11, V12, G3, L1 (local part), H3,
// W, H1 (the chip's rules, eval/model/chip_rules.h, when the problem has them).
SubgraphResult EvaluateSubgraphOracle(const Problem& problem, const Subgraph& subgraph,
                                      const std::vector<TensorId>& retained_in);

// One execution step as the oracle priced it, for views of a schedule (the trace's per-step
// detail); the search never asks for it.
struct StepRecord {
  int64_t step = 0;    // execution order within the subgraph
  int64_t tile = 0;    // tile index in raster numbering
  int64_t k_step = 0;  // 0 .. k_steps-1 within the tile
  Latency compute = 0;
  Latency memory = 0;  // exposed: after H5's prefetch into the step before, when the chip has it
  Elements working_set = 0;
  RoleFootprints roles;  // H1's footprints (after H2, H4); all 0 when the chip has no rules
  Latency latency() const { return compute > memory ? compute : memory; }  // T1
};
using StepObserver = std::function<void(const StepRecord&)>;

// EvaluateSubgraphOracle, calling `on_step` with every step once it is priced, in execution
// order (a step that breaks rule W is not reported). The steps' latencies sum to the report's.
// (Not an overload: the benchmarks take EvaluateSubgraphOracle's address.)
SubgraphResult EvaluateSubgraphOracleSteps(const Problem& problem, const Subgraph& subgraph,
                                           const std::vector<TensorId>& retained_in,
                                           const StepObserver& on_step);

// Evaluates a whole schedule: every subgraph via EvaluateSubgraphOracle, plus the rules about
// the sequence (V1 coverage, V7 availability and L1 for Layout ops, V9 end state) and the V13
// warnings.
// With threads > 1, a schedule of at least 256 subgraphs has its subgraphs evaluated first, on
// that many threads (a subgraph's own verdict and report depend only on it and the retain list
// before it), and the scan in sequence order then reads them: the same result, the first
// violation included. For a caller with idle cores and a long schedule (10,000 subgraphs of
// -9's ops take the oracle half a second).
inline constexpr size_t kOracleThreadsFrom = 256;
Evaluation EvaluateOracle(const Problem& problem, const Schedule& schedule, int threads = 1);

// The subgraphs' latencies of an evaluation, in order: what a schedule file carries as
// subgraph_latencies.
std::vector<Latency> SubgraphLatencies(const Evaluation& evaluation);

}  // namespace annealer
