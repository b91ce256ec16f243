// Deep graphs for benchmarks: N copies of a problem chained one after the other, the single
// graph output of copy i feeding, in place of one graph input of the same shape (the "chained
// input"), copy i+1. Every other graph input (the weights) is duplicated per copy, so the copies
// share nothing but the chain; the hardware is the original's. A problem qualifies when it has
// exactly one graph output and a graph input of that output's shape.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "eval/model/problem.h"

namespace annealer {

// Why a problem cannot be stacked, in one line naming the tensors concerned.
class StackError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct StackPlan {
  TensorId output = 0;         // the problem's single graph output
  TensorId chained_input = 0;  // the graph input that copy i+1 reads copy i's output through
  std::string note;            // non-empty when the choice was not the only one
};

// Checks that `problem` (finalized) qualifies and picks the chained input: `requested` when
// given (it must be a graph input of the output's shape), else the lowest-id graph input of the
// output's shape (the note then lists the other candidates). Throws StackError.
StackPlan PlanStack(const Problem& problem, std::optional<TensorId> requested);

// `copies` >= 1 copies chained by `plan`; copy k's ops are ops [k * ops, (k + 1) * ops) in the
// original order, copy 0's tensors keep their ids, copy k > 0 appends its own tensors in the
// original order, minus the chained input. Returns a finalized problem.
Problem StackProblem(const Problem& problem, const StackPlan& plan, int copies);

}  // namespace annealer
