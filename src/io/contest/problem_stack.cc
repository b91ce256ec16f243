#include "src/io/contest/problem_stack.h"

#include <vector>

namespace annealer {

namespace {

std::string Shape(const Tensor& t) { return std::to_string(t.width) + "x" + std::to_string(t.height); }

std::string Listed(const Problem& problem, const std::vector<TensorId>& tensors) {
  std::string out;
  for (TensorId t : tensors) {
    if (!out.empty()) out += ", ";
    out += std::to_string(t) + " (" + Shape(problem.tensors[t]) + ")";
  }
  return out.empty() ? "none" : out;
}

}  // namespace

StackPlan PlanStack(const Problem& problem, std::optional<TensorId> requested) {
  std::vector<TensorId> outputs, inputs;
  for (TensorId t = 0; t < static_cast<TensorId>(problem.tensors.size()); ++t) {
    if (problem.IsGraphOutput(t)) outputs.push_back(t);
    if (problem.IsGraphInput(t)) inputs.push_back(t);
  }
  if (outputs.size() != 1) {
    throw StackError("needs exactly one graph output, has " + std::to_string(outputs.size()) +
                     ": " + Listed(problem, outputs));
  }
  StackPlan plan;
  plan.output = outputs[0];
  const Tensor& out = problem.tensors[plan.output];
  std::vector<TensorId> matching;
  for (TensorId t : inputs) {
    if (problem.tensors[t] == out) matching.push_back(t);
  }
  const std::string out_text = "graph output tensor " + std::to_string(plan.output) + " (" + Shape(out) + ")";
  if (requested) {
    const TensorId t = *requested;
    if (t < 0 || t >= static_cast<TensorId>(problem.tensors.size()) || !problem.IsGraphInput(t)) {
      throw StackError("tensor " + std::to_string(t) + " is not a graph input; graph inputs of the shape of " +
                       out_text + ": " + Listed(problem, matching));
    }
    if (!(problem.tensors[t] == out)) {
      throw StackError("graph input tensor " + std::to_string(t) + " (" + Shape(problem.tensors[t]) +
                       ") does not have the shape of " + out_text);
    }
    plan.chained_input = t;
    return plan;
  }
  if (matching.empty()) {
    throw StackError("no graph input has the shape of " + out_text + "; graph inputs: " + Listed(problem, inputs));
  }
  plan.chained_input = matching[0];
  if (matching.size() > 1) {
    std::vector<TensorId> others(matching.begin() + 1, matching.end());
    plan.note = "chained through graph input tensor " + std::to_string(matching[0]) +
                ", the lowest id of the shape of " + out_text + "; also of that shape: " +
                Listed(problem, others) + " (choose with --input)";
  }
  return plan;
}

Problem StackProblem(const Problem& problem, const StackPlan& plan, int copies) {
  if (copies < 1) throw StackError("the number of copies must be at least 1, got " + std::to_string(copies));
  Problem stacked;
  stacked.fast_memory_capacity = problem.fast_memory_capacity;
  stacked.slow_memory_bandwidth = problem.slow_memory_bandwidth;
  stacked.native = problem.native;
  stacked.chip = problem.chip;
  const int num_tensors = static_cast<int>(problem.tensors.size());
  std::vector<TensorId> id(num_tensors);   // this copy's id of each original tensor
  TensorId previous_output = kNoOp;
  for (int k = 0; k < copies; ++k) {
    for (TensorId t = 0; t < num_tensors; ++t) {
      if (k > 0 && t == plan.chained_input) {
        id[t] = previous_output;
        continue;
      }
      id[t] = static_cast<TensorId>(stacked.tensors.size());
      stacked.tensors.push_back(problem.tensors[t]);
    }
    for (const Op& op : problem.ops) {
      Op copy = op;
      for (TensorId& t : copy.inputs) t = id[t];
      copy.output = id[op.output];
      stacked.ops.push_back(std::move(copy));
    }
    previous_output = id[plan.output];
  }
  if (const std::string error = stacked.Finalize(); !error.empty()) throw StackError(error);
  return stacked;
}

}  // namespace annealer
