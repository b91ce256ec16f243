#include "eval/bound/traffic/fresh_fill.h"

#include <algorithm>
#include <vector>

namespace annealer::bound_internal {

bool g_fresh_fill = true;

double FreshFillCap(const Problem& problem, const std::vector<OpId>& class_ops, const std::vector<OpId>& twins,
                    double enough) {
  const int num_ops = static_cast<int>(problem.ops.size());
  double cap = 0;
  std::vector<char> ancestor(num_ops);
  std::vector<OpId> stack;
  for (OpId y : twins) {
    std::fill(ancestor.begin(), ancestor.end(), 0);
    stack.assign(1, y);
    while (!stack.empty()) {
      const OpId v = stack.back();
      stack.pop_back();
      for (TensorId t : problem.ops[v].inputs) {
        const OpId p = problem.producer[t];
        if (p == kNoOp || ancestor[p]) continue;
        ancestor[p] = 1;
        stack.push_back(p);
      }
    }
    double fill = 0;
    for (OpId e : class_ops) {
      if (problem.ops[e].kind == OpKind::Pointwise && !ancestor[e]) fill += problem.ops[e].base_cost;
    }
    cap = std::max(cap, fill);
    if (cap >= enough) break;
  }
  return cap;
}

}  // namespace annealer::bound_internal
