// A set of ops of a problem as a standalone problem, and a schedule of it mapped back.
//
// Why this is exact: a subgraph's cost depends only on its ops, the shapes of the tensors they
// touch, which of those tensors are produced inside it, the tensors retained into it and the
// hardware (spec A.4-A.11). A tensor produced outside the op set is loaded from slow memory
// exactly like a graph input, so it becomes a graph input of the sub-problem. The sub-problem's
// graph outputs are the tensors no op of the set consumes. A schedule of the sub-problem costs the
// same, subgraph by subgraph, in the full problem, PROVIDED that (a) every tensor the set
// produces and ops outside the set consume is consumed by no op of the set (else the
// sub-problem may keep it ephemeral where the full problem needs it written; see
// ExportsAreSinks), (b) the subgraph before the first one retains nothing, (c) every tensor
// the set loads is in slow memory before it runs and (d) with a weight path (H6), every tensor
// travels the same path in both (SameWeightPaths: a tensor produced outside the set, or a graph
// input that ops outside read otherwise, would become a weight of the sub-problem when the set
// reads it only as a MatMul's RHS). Checking (b), (c) and (d) is the caller's job.
#pragma once

#include <span>
#include <vector>

#include "eval/model/problem.h"
#include "eval/model/schedule.h"

namespace annealer {

struct Subproblem {
  Problem problem;                 // finalized
  std::vector<OpId> op_ids;        // sub-problem op -> full problem op
  std::vector<TensorId> tensor_ids;  // sub-problem tensor -> full problem tensor
};

// `ops` (distinct, valid ids) become ops 0..n-1 in the given order; tensors are numbered in the
// order the ops first touch them (inputs in operand order, then the output). So two op sets
// that are isomorphic under a bijection which maps `ops` position by position give EQUAL
// problems (operator==), and equal problems are isomorphic: the equality is the exact check.
Subproblem ExtractSubproblem(const Problem& problem, std::span<const OpId> ops);

// Condition (a) above: no tensor produced by the set is consumed both inside and outside it.
bool ExportsAreSinks(const Problem& problem, const Subproblem& sub);

// The sub-problem's schedule in the full problem's ids (ops, retained tensors); granularity
// and traversal unchanged.
Schedule MapScheduleToFull(const Subproblem& sub, const Schedule& schedule);

// Condition (d) above: every tensor of `sub` is on H6's weight path exactly when its full-problem
// tensor is. True without a weight path.
bool SameWeightPaths(const Problem& problem, const Subproblem& sub);

}  // namespace annealer
