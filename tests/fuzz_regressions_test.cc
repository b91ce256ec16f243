// Inputs the fuzz targets of fuzz/ found, kept as literals: each failed (crash, sanitizer
// report or a broken promise) before its fix.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "eval/cost/cost_cache.h"
#include "eval/cost/incremental.h"
#include "eval/oracle.h"
#include "eval/cost/evaluate_fast.h"
#include "eval/cost/subgraph_cost.h"
#include "fuzz/fixed_problem.h"
#include "src/io/contest/problem_reader.h"
#include "src/io/contest/schedule_io.h"

namespace annealer {
namespace {

// schedule_eval_fuzz: subgraph 0 retains a tensor id that does not exist. The oracle stops at
// subgraph 0 (V8), but the cached fast path prices every subgraph in one batch first, and the
// incremental evaluator prices them all too: subgraph 1 was priced with retained_in = {49999}
// and read past the tensor table (ASan: heap-use-after-free in the pricer's BuildTemplates, eval/cost/pricer).
TEST_CASE("fuzz regression: a retained id out of range is V8, also for the next subgraph's pricing") {
  const Problem problem = ParseProblem(fuzz::kFixedProblem, "fixed problem");
  const Schedule schedule = ParseSchedule(R"({"subgraphs": [[0, 1, 4], [2, 3]],
 "granularities": [[128, 64, 32], [64, 28, 54]],
 "tensors_to_retain": [[49999], []],
 "t99999sal_orders": [[0, 2, 1, 3], null],
 "subgraph_nulllatencies": [12345.5, 6789]})",
                                          "crash-d1182377");
  const Evaluation oracle = EvaluateOracle(problem, schedule);
  REQUIRE_FALSE(oracle.ok());
  CHECK(oracle.violation.rule == "V8");
  CHECK(oracle.violation.subgraph == 0);
  CostCache cache(256);
  const Evaluation fast = EvaluateFast(problem, schedule, &cache);
  CHECK(fast.violation.rule == "V8");
  CHECK(fast.violation.subgraph == 0);
  IncrementalEvaluator incremental(problem, &cache);
  const Candidate candidate = incremental.Reset(schedule);
  CHECK_FALSE(candidate.valid);
  CHECK(candidate.violation.rule == "V8");

  // Priced on its own after that retain, subgraph 1 fails the same way in both pricers.
  const std::vector<TensorId> bad_in = {49999};
  const SubgraphResult cold = CostSubgraph(problem, schedule.subgraphs[1], bad_in);
  const SubgraphResult reference = EvaluateSubgraphOracle(problem, schedule.subgraphs[1], bad_in);
  CHECK(cold.violation.rule == "V8");
  CHECK(cold.violation.detail == "tensors_to_retain[0] = 49999 of the previous subgraph is not a tensor id");
  CHECK(reference.violation.detail == cold.violation.detail);
  CHECK(cache.LookupOrCompute(problem, schedule.subgraphs[1], {-1}).violation.rule == "V8");
}

// problem_reader_fuzz: a chip_rules key of the file was echoed raw in the "unknown key" message,
// control bytes and all; it is quoted now, as every other key of the readers.
TEST_CASE("fuzz regression: an unknown chip_rules key is quoted in one line") {
  const std::string json = R"({"base_costs": [4000], "chip_rules": {"double_buffr\u0001": ["staging"]},
 "fast_memory_capacity": 100000, "heights": [128, 128, 128], "inputs": [[0, 1]],
 "native_granularity": [128, 128], "op_types": ["MatMul"], "outputs": [[2]],
 "slow_memory_bandwidth": 95, "widths": [128, 128, 128]})";
  std::string message;
  try {
    ParseProblem(json, "crash-99fcf3fa");
  } catch (const InputError& e) {
    message = e.what();
  }
  CHECK(message.rfind("crash-99fcf3fa: chip_rules: unknown key \"double_buffr\\x01\" (known: ", 0) == 0);
  CHECK(message.find('\x01') == std::string::npos);
}

}  // namespace
}  // namespace annealer
