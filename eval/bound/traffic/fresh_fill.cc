#include "eval/bound/traffic/fresh_fill.h"

#include <algorithm>
#include <vector>

#include "eval/bound/traffic/first_instance.h"

namespace annealer::bound_internal {

bool g_fresh_fill = true;

double FreshFillCap(const Problem& problem, const std::vector<OpId>& class_ops, const std::vector<OpId>& twins,
                    double enough) {
  const int num_ops = static_cast<int>(problem.ops.size());
  double cap = 0;
  std::vector<char> ancestor(num_ops);
  std::vector<OpId> stack;
  for (OpId y : twins) {
    MarkAncestors(problem, y, ancestor, stack);
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
