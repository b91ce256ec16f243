#include "eval/bounds.h"

namespace annealer {

LowerBound ComputeLowerBound(const Problem& problem) {
  LowerBound bound;
  for (OpId op = 0; op < static_cast<OpId>(problem.ops.size()); ++op) {
    bound.compute += problem.ops[op].base_cost * static_cast<double>(problem.NativeTiles(op));
  }
  Elements io = 0;
  for (TensorId t = 0; t < static_cast<TensorId>(problem.tensors.size()); ++t) {
    if (problem.IsGraphInput(t) || problem.IsGraphOutput(t)) io += problem.tensors[t].size();
  }
  bound.graph_io = static_cast<double>(io) / problem.slow_memory_bandwidth;
  return bound;
}

}  // namespace annealer
