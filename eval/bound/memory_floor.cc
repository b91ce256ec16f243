// P17 (eval/bound/memory_floor.h).
#include "eval/bound/memory_floor.h"

#include <algorithm>
#include <vector>

namespace annealer::bound_internal {

double MemoryFloor(const Problem& problem) {
  const auto num_tensors = static_cast<TensorId>(problem.tensors.size());
  const bool two_paths = problem.chip.two_paths();
  Elements weight = 0, other = 0;
  for (TensorId t = 0; t < num_tensors; ++t) {
    const Elements size = problem.tensors[t].size();
    const std::vector<OpId>& readers = problem.consumers[t];
    const bool read_by_layout =
        std::any_of(readers.begin(), readers.end(), [&](OpId c) { return problem.IsLayout(c); });
    if (problem.producer[t] == kNoOp) {
      // Loaded by its non-Layout readers; a Layout reader gathers its own Y instead.
      const bool loaded = std::any_of(readers.begin(), readers.end(), [&](OpId c) { return !problem.IsLayout(c); });
      if (loaded) (two_paths && problem.OnWeightPath(t) ? weight : other) += size;
      continue;
    }
    if (problem.IsLayout(problem.producer[t])) other += size;  // gathered at least once
    if (readers.empty() || read_by_layout) other += size;       // written at least once
  }

  // f in topological order: the least a stretch starting from nothing retained loads to make t.
  std::vector<Elements> f(num_tensors, 0);
  for (TensorId t = 0; t < num_tensors; ++t) {
    if (problem.producer[t] == kNoOp) f[t] = two_paths && problem.OnWeightPath(t) ? 0 : problem.tensors[t].size();
  }
  for (OpId op : problem.topological_order) {
    const Op& o = problem.ops[op];
    const Elements size = problem.tensors[o.output].size();
    if (o.kind == OpKind::Layout) {
      f[o.output] = size;
      continue;
    }
    Elements most = 0;
    for (TensorId in : o.inputs) most = std::max(most, f[in]);
    f[o.output] = std::min(size, most);
  }

  const Elements n = problem.native;
  auto must_write = [&](TensorId out) {
    const std::vector<OpId>& readers = problem.consumers[out];
    return readers.empty() || std::any_of(readers.begin(), readers.end(), [&](OpId c) { return problem.IsLayout(c); });
  };
  for (TensorId t = 0; t < num_tensors; ++t) {
    const OpId p = problem.producer[t];
    if (p == kNoOp || problem.ops[p].kind != OpKind::Pointwise) continue;
    Elements alone = 0;
    for (OpId c : problem.consumers[t]) {
      const Op& o = problem.ops[c];
      if (o.kind != OpKind::MatMul || problem.ReductionLength(c) <= n || !must_write(o.output)) continue;
      const TensorId other_operand = o.inputs[0] == t ? o.inputs[1] : o.inputs[0];
      if (o.inputs[0] == o.inputs[1] || problem.producer[other_operand] != kNoOp) continue;
      ++alone;
    }
    if (alone >= 2) other += (alone - 1) * f[t];
  }
  if (!two_paths) return static_cast<double>(weight + other) / problem.slow_memory_bandwidth;
  return std::max(static_cast<double>(weight) / problem.chip.weight_bandwidth,
                  static_cast<double>(other) / problem.slow_memory_bandwidth);
}

}  // namespace annealer::bound_internal
