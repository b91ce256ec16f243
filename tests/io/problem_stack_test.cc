// bench/tools/stack_problem's library part: chained copies of a problem (src/io/contest/problem_stack.h) and the
// problem writer (src/io/contest/problem_writer.h).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "eval/oracle.h"
#include "search/starts/baseline.h"
#include "src/io/contest/problem_reader.h"
#include "src/io/contest/problem_stack.h"
#include "src/io/contest/problem_writer.h"

namespace annealer {
namespace {

Problem Bundled(int number) {
  return ReadProblemFile(std::string(ANNEALER_SOURCE_DIR) + "/problems/mlsys-2026-" + std::to_string(number) + ".json");
}

TEST_CASE("stack_problem: three copies of -17 chained through tensor 0") {
  const Problem one = Bundled(17);
  const StackPlan plan = PlanStack(one, std::nullopt);
  CHECK(plan.output == 159);
  CHECK(plan.chained_input == 0);
  CHECK(plan.note.find("also of that shape: 4 (128x2048)") != std::string::npos);
  const Problem three = StackProblem(one, plan, 3);
  CHECK(three.ops.size() == 3 * 103);
  CHECK(three.tensors.size() == 160 + 2 * 159);
  // Copy 1 reads copy 0's output where copy 0 read tensor 0, copy 2 reads copy 1's output
  // (copy 1's own tensors, the originals 1..159, are 160..318).
  const TensorId out1 = 160 + 159 - 1;
  int chained_reads = 0;
  for (OpId op = 0; op < 103; ++op) {
    for (size_t x = 0; x < one.ops[op].inputs.size(); ++x) {
      if (one.ops[op].inputs[x] != 0) continue;
      ++chained_reads;
      CHECK(three.ops[op + 103].inputs[x] == 159);
      CHECK(three.ops[op + 206].inputs[x] == out1);
    }
  }
  CHECK(chained_reads > 0);
  int graph_outputs = 0;
  for (TensorId t = 0; t < static_cast<TensorId>(three.tensors.size()); ++t) graph_outputs += three.IsGraphOutput(t);
  CHECK(graph_outputs == 1);
  CHECK(three.IsGraphOutput(static_cast<TensorId>(three.tensors.size()) - 1));
  CHECK(three.consumers[out1].size() == one.consumers[0].size());
  // The writer round-trips, and the one-op-per-subgraph baseline costs three times one copy's.
  CHECK(ParseProblem(ProblemToJson(three), "three.json") == three);
  const Evaluation single = EvaluateOracle(one, BuildBaseline(one));
  const Evaluation stacked = EvaluateOracle(three, BuildBaseline(three));
  REQUIRE(single.ok());
  REQUIRE(stacked.ok());
  CHECK(std::abs(stacked.total - 3 * single.total) <= 1e-9 * stacked.total);
}

TEST_CASE("stack_problem: one copy is the problem itself, -5 and -9 qualify without a choice") {
  const Problem five = Bundled(5);
  const StackPlan plan = PlanStack(five, std::nullopt);
  CHECK(plan.chained_input == 0);
  CHECK(plan.output == 28);
  CHECK(plan.note.empty());
  CHECK(StackProblem(five, plan, 1) == five);
  CHECK(PlanStack(Bundled(9), std::nullopt).chained_input == 0);
  CHECK(PlanStack(Bundled(1), TensorId{2}).chained_input == 2);
}

TEST_CASE("stack_problem: problems that do not qualify are named with their tensors") {
  const Problem thirteen = Bundled(13);
  CHECK_THROWS_WITH_AS(PlanStack(thirteen, std::nullopt),
                       doctest::Contains("no graph input has the shape of graph output tensor 96 (128x128)"),
                       StackError);
  const Problem seventeen = Bundled(17);
  CHECK_THROWS_WITH_AS(PlanStack(seventeen, TensorId{5}), doctest::Contains("tensor 5 is not a graph input"),
                       StackError);
  CHECK_THROWS_WITH_AS(PlanStack(seventeen, TensorId{1}),
                       doctest::Contains("graph input tensor 1 (2048x128) does not have the shape of graph "
                                         "output tensor 159 (128x2048)"),
                       StackError);
  CHECK_THROWS_WITH_AS(StackProblem(seventeen, PlanStack(seventeen, std::nullopt), 0),
                       doctest::Contains("at least 1"), StackError);
  // Two graph outputs: -1's last op (7, 0 -> 8) replaced by one reading tensor 4, so that
  // nothing reads tensor 7 any more.
  Problem two_outputs = Bundled(1);
  two_outputs.ops.pop_back();
  Op extra;
  extra.kind = OpKind::Pointwise;
  extra.inputs = {4};
  extra.output = 8;
  two_outputs.ops.push_back(extra);
  REQUIRE(two_outputs.Finalize().empty());
  CHECK_THROWS_WITH_AS(PlanStack(two_outputs, std::nullopt),
                       doctest::Contains("needs exactly one graph output, has 2: 7 (512x512), 8 (512x512)"),
                       StackError);
}

}  // namespace
}  // namespace annealer
