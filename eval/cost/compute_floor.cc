#include "eval/cost/compute_floor.h"

#include <cstdint>

namespace annealer {

double ComputeFloorPerTile(const Problem& problem, const std::vector<OpId>& ops) {
  // Per op of the problem: 1 = in the list, 2 = reached by the walk. Reset before returning.
  thread_local std::vector<uint8_t> marks;
  thread_local std::vector<OpId> stack;
  if (marks.size() < problem.ops.size()) marks.resize(problem.ops.size(), 0);
  for (OpId op : ops) marks[op] = 1;
  stack.clear();
  for (OpId op : ops) {
    bool consumed = false;
    for (OpId c : problem.consumers[problem.ops[op].output]) {
      if (marks[c] != 0) {
        consumed = true;
        break;
      }
    }
    if (!consumed) stack.push_back(op);
  }
  for (OpId op : stack) marks[op] |= 2;
  double per_tile = 0;
  while (!stack.empty()) {
    const OpId op = stack.back();
    stack.pop_back();
    const Op& o = problem.ops[op];
    if (o.kind == OpKind::Layout) continue;
    per_tile += o.base_cost;
    if (o.kind == OpKind::MatMul) continue;
    for (TensorId in : o.inputs) {
      const OpId p = problem.producer[in];
      if (p != kNoOp && marks[p] == 1) {
        marks[p] |= 2;
        stack.push_back(p);
      }
    }
  }
  for (OpId op : ops) marks[op] = 0;
  return per_tile;
}

}  // namespace annealer
