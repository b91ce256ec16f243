#include "eval/flat_problem.h"

namespace annealer {

void FlatProblem::Build(const Problem& p) {
  problem = &p;
  num_ops = static_cast<int>(p.ops.size());
  num_tensors = static_cast<int>(p.tensors.size());
  input_begin.assign(1, 0);
  input_tensor.clear();
  input_producer.clear();
  output.clear();
  consumer_begin.assign(1, 0);
  consumer.clear();
  for (const Op& op : p.ops) {
    for (TensorId in : op.inputs) {
      input_tensor.push_back(in);
      input_producer.push_back(p.producer[in]);
    }
    input_begin.push_back(static_cast<int32_t>(input_tensor.size()));
    output.push_back(op.output);
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

}  // namespace annealer
