// P17 (eval/bound/traffic/memory_floor.h).
#include "eval/bound/traffic/memory_floor.h"

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

  // The readers that must sit alone (R_t, below).
  const Elements n = problem.native;
  auto only_layout_readers = [&](TensorId out) {  // must be written, and no reader shares a subgraph
    const std::vector<OpId>& readers = problem.consumers[out];
    return std::all_of(readers.begin(), readers.end(), [&](OpId c) { return problem.IsLayout(c); });
  };
  auto must_write = [&](TensorId out) {
    const std::vector<OpId>& readers = problem.consumers[out];
    return readers.empty() || std::any_of(readers.begin(), readers.end(), [&](OpId c) { return problem.IsLayout(c); });
  };
  // c qualifies for t: a MatMul with K > n reading t and a graph input, whose output must be
  // written (a), or is read only by a Pointwise epilogue e whose other inputs are graph inputs
  // and whose output only Layout ops read, or nobody (b). A picked subgraph of (b) may retain
  // c's and e's outputs, which serve nothing else (e reads c's, Layout ops e's: L1).
  auto qualifies = [&](TensorId t, OpId c) {
    const Op& o = problem.ops[c];
    if (o.kind != OpKind::MatMul || problem.ReductionLength(c) <= n) return false;
    if (o.inputs[0] == o.inputs[1]) return false;
    const TensorId other_operand = o.inputs[0] == t ? o.inputs[1] : o.inputs[0];
    if (problem.producer[other_operand] != kNoOp) return false;
    if (must_write(o.output)) return true;
    const std::vector<OpId>& readers = problem.consumers[o.output];
    const OpId e = readers.front();
    if (!std::all_of(readers.begin(), readers.end(), [&](OpId r) { return r == e; })) return false;
    const Op& eo = problem.ops[e];
    if (eo.kind != OpKind::Pointwise || !only_layout_readers(eo.output)) return false;
    for (TensorId in : eo.inputs) {
      if (in != o.output && problem.producer[in] != kNoOp) return false;
    }
    return true;
  };
  std::vector<Elements> alone(num_tensors, 0);
  for (TensorId t = 0; t < num_tensors; ++t) {
    const OpId p = problem.producer[t];
    if (p == kNoOp || problem.ops[p].kind != OpKind::Pointwise) continue;
    const std::vector<OpId>& readers = problem.consumers[t];
    for (size_t i = 0; i < readers.size(); ++i) {
      if (i > 0 && readers[i] == readers[i - 1]) continue;
      if (qualifies(t, readers[i])) ++alone[t];
    }
  }

  // f in topological order: the least a stretch, starting with nothing useful retained, loads
  // to make t.
  std::vector<Elements> f(num_tensors, 0);
  for (TensorId t = 0; t < num_tensors; ++t) {
    if (problem.producer[t] == kNoOp) f[t] = two_paths && problem.OnWeightPath(t) ? 0 : problem.tensors[t].size();
  }
  for (OpId op : problem.topological_order) {
    const Op& o = problem.ops[op];
    const Elements size = problem.tensors[o.output].size();
    if (o.kind == OpKind::Layout) {
      f[o.output] = size;
    } else {
      Elements most = 0;
      for (TensorId in : o.inputs) most = std::max(most, f[in]);
      f[o.output] = std::min(size, most);
    }
  }
  for (TensorId t = 0; t < num_tensors; ++t) {
    if (alone[t] >= 2) other += (alone[t] - 1) * f[t];
  }
  if (!two_paths) return static_cast<double>(weight + other) / problem.slow_memory_bandwidth;
  return std::max(static_cast<double>(weight) / problem.chip.weight_bandwidth,
                  static_cast<double>(other) / problem.slow_memory_bandwidth);
}

}  // namespace annealer::bound_internal
