#include "eval/bound/traffic/first_instance.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace annealer::bound_internal {

bool g_first_instance_in_loop = true;

void MarkAncestors(const Problem& problem, OpId x, std::vector<char>& ancestor, std::vector<OpId>& stack) {
  std::fill(ancestor.begin(), ancestor.end(), 0);
  stack.assign(1, x);
  while (!stack.empty()) {
    const OpId y = stack.back();
    stack.pop_back();
    for (TensorId v : problem.ops[y].inputs) {
      const OpId p = problem.producer[v];
      if (p == kNoOp || ancestor[p]) continue;
      ancestor[p] = 1;
      stack.push_back(p);
    }
  }
}

void MarkDep(const Problem& problem, OpId x, std::vector<int>& in_dep, std::vector<int>& below_seen,
             std::vector<std::pair<OpId, bool>>& walk) {
  for (OpId c : problem.consumers[problem.ops[x].output]) walk.emplace_back(c, problem.ops[c].kind == OpKind::Layout);
  while (!walk.empty()) {
    const auto [y, below] = walk.back();
    walk.pop_back();
    if (below ? in_dep[y] == x : below_seen[y] == x) continue;
    (below ? in_dep[y] : below_seen[y]) = x;
    for (OpId c : problem.consumers[problem.ops[y].output]) {
      walk.emplace_back(c, below || problem.ops[c].kind == OpKind::Layout);
    }
  }
}

std::vector<char> FirstInstanceInLoop(const Problem& problem) {
  const int num_ops = static_cast<int>(problem.ops.size());
  std::vector<char> result(num_ops, 0);
  if (!g_first_instance_in_loop) return result;
  // Per op, the stamp of the last x whose walk reached it: below a Layout op (in Dep(x)), and
  // through ops outside Dep(x).
  std::vector<int> in_dep(num_ops, -1), reached(num_ops, -1), below_seen(num_ops, -1);
  std::vector<OpId> stack;
  std::vector<std::pair<OpId, bool>> walk;  // (op, a Layout op lies on the path to it)
  for (OpId x = 0; x < num_ops; ++x) {
    const Op& op = problem.ops[x];
    if (op.kind != OpKind::MatMul || problem.ReductionLength(x) <= problem.native) continue;
    // (a) Written at some point, hence a sink there.
    bool written = problem.consumers[op.output].empty();
    for (OpId c : problem.consumers[op.output]) written = written || problem.ops[c].kind == OpKind::Layout;
    if (written) {
      result[x] = 1;
      continue;
    }
    // (b) Dep(x): every op at or below a Layout op that x reaches.
    MarkDep(problem, x, in_dep, below_seen, walk);
    // A MatMul other than x reached from x through ops outside Dep(x) could take x upstream.
    bool matmul = false;
    for (OpId c : problem.consumers[op.output]) {
      if (in_dep[c] != x && reached[c] != x) {
        reached[c] = x;
        stack.push_back(c);
      }
    }
    while (!stack.empty() && !matmul) {
      const OpId y = stack.back();
      stack.pop_back();
      if (problem.ops[y].kind == OpKind::MatMul) {
        matmul = true;
        break;
      }
      for (OpId c : problem.consumers[problem.ops[y].output]) {
        if (in_dep[c] != x && reached[c] != x) {
          reached[c] = x;
          stack.push_back(c);
        }
      }
    }
    stack.clear();
    result[x] = matmul ? 0 : 1;
  }
  return result;
}

}  // namespace annealer::bound_internal
