#include "eval/model/flat_problem.h"

#include <algorithm>

namespace annealer {

void FlatProblem::Build(const Problem& p) {
  problem = &p;
  num_ops = static_cast<int>(p.ops.size());
  num_tensors = static_cast<int>(p.tensors.size());
  input_begin.assign(1, 0);
  input_tensor.clear();
  input_producer.clear();
  output.clear();
  layout.clear();
  consumer_begin.assign(1, 0);
  consumer.clear();
  for (const Op& op : p.ops) {
    for (TensorId in : op.inputs) {
      input_tensor.push_back(in);
      input_producer.push_back(p.producer[in]);
    }
    input_begin.push_back(static_cast<int32_t>(input_tensor.size()));
    output.push_back(op.output);
    layout.push_back(op.kind == OpKind::Layout);
    for (OpId c : p.consumers[op.output]) consumer.push_back(c);
    consumer_begin.push_back(static_cast<int32_t>(consumer.size()));
  }
  graph_input_or_unproduced.resize(num_tensors);
  graph_outputs.clear();
  for (TensorId t = 0; t < num_tensors; ++t) {
    graph_input_or_unproduced[t] = p.producer[t] == kNoOp;
    if (p.IsGraphOutput(t)) graph_outputs.push_back(t);
  }
}

void SmallSequenceFacts::Derive(const FlatProblem& flat, const Subgraph& subgraph) {
  num_boundary = -1;
  num_writes = 0;
  const auto& ops = subgraph.ops;
  auto produced_inside = [&](TensorId t) {
    return std::any_of(ops.begin(), ops.end(), [&](OpId op) { return flat.output[op] == t; });
  };
  auto consumed_inside = [&](TensorId t) {
    for (OpId op : ops) {
      for (int32_t x = flat.input_begin[op]; x < flat.input_begin[op + 1]; ++x) {
        if (flat.input_tensor[x] == t) return true;
      }
    }
    return false;
  };
  for (OpId op : ops) {
    if (flat.layout[op]) return;
  }
  int n = 0;
  for (OpId op : ops) {
    for (int32_t x = flat.input_begin[op]; x < flat.input_begin[op + 1]; ++x) {
      const TensorId in = flat.input_tensor[x];
      if (produced_inside(in)) continue;
      if (n == kCapacity) return;
      tensors[n++] = in;
    }
  }
  const int boundary = n;
  for (OpId op : ops) {
    const TensorId out = flat.output[op];
    if (consumed_inside(out) ||
        std::find(subgraph.retain.begin(), subgraph.retain.end(), out) != subgraph.retain.end()) {
      continue;
    }
    if (n == kCapacity) return;
    tensors[n++] = out;
  }
  num_boundary = static_cast<int8_t>(boundary);
  num_writes = static_cast<int8_t>(n - boundary);
}

}  // namespace annealer
