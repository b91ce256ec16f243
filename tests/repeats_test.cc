// The repeated-block start (search/repeats.h) and sub-problem extraction (eval/subproblem.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>

#include "eval/oracle.h"
#include "eval/random_schedule.h"
#include "eval/subgraph_cost.h"
#include "eval/subproblem.h"
#include "search/baseline.h"
#include "search/driver.h"
#include "search/repeats.h"
#include "src/problem_reader.h"
#include "src/problem_stack.h"

namespace annealer {
namespace {

Problem Bundled(int number) {
  return ReadProblemFile(std::string(ANNEALER_SOURCE_DIR) + "/problems/mlsys-2026-" + std::to_string(number) + ".json");
}

Problem Stack(const Problem& one, int copies) { return StackProblem(one, PlanStack(one, std::nullopt), copies); }

// The same problem with op and tensor ids permuted at random (operand order kept).
Problem Relabelled(const Problem& problem, std::mt19937_64& rng) {
  std::vector<OpId> op_perm(problem.ops.size());
  std::iota(op_perm.begin(), op_perm.end(), 0);
  std::shuffle(op_perm.begin(), op_perm.end(), rng);
  std::vector<TensorId> tensor_perm(problem.tensors.size());
  std::iota(tensor_perm.begin(), tensor_perm.end(), 0);
  std::shuffle(tensor_perm.begin(), tensor_perm.end(), rng);
  Problem out;
  out.fast_memory_capacity = problem.fast_memory_capacity;
  out.slow_memory_bandwidth = problem.slow_memory_bandwidth;
  out.native = problem.native;
  out.tensors.resize(problem.tensors.size());
  for (size_t t = 0; t < problem.tensors.size(); ++t) out.tensors[tensor_perm[t]] = problem.tensors[t];
  out.ops.resize(problem.ops.size());
  for (size_t o = 0; o < problem.ops.size(); ++o) {
    Op op = problem.ops[o];
    for (TensorId& t : op.inputs) t = tensor_perm[t];
    op.output = tensor_perm[op.output];
    out.ops[op_perm[o]] = op;
  }
  REQUIRE(out.Finalize().empty());
  return out;
}

std::string Describe(const RepeatPlan& plan) {
  std::string s;
  for (const RepeatBlock& b : plan.blocks) s += std::to_string(b.class_id) + ":" + std::to_string(b.sub.op_ids.size()) + " ";
  return s;
}

TEST_CASE("repeats: debug") {
  const Problem p = Stack(Bundled(5), 32);
  const RepeatPlan plan = FindRepeatedBlocks(p);
  MESSAGE(Describe(plan));
  std::string ids;
  for (const RepeatBlock& b : plan.blocks) { for (OpId o : b.sub.op_ids) ids += std::to_string(o) + ","; ids += " | "; }
  MESSAGE(ids.substr(0, 600));
}

}  // namespace
}  // namespace annealer
