#include "eval/model/problem.h"

#include <functional>
#include <queue>

namespace annealer {

namespace {
int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

std::string Problem::Finalize() {
  const int num_tensors = static_cast<int>(tensors.size());
  const int num_ops = static_cast<int>(ops.size());
  producer.assign(num_tensors, kNoOp);
  consumers.assign(num_tensors, {});
  for (OpId op = 0; op < num_ops; ++op) {
    const TensorId out = ops[op].output;
    if (producer[out] != kNoOp) {
      return "tensor " + std::to_string(out) + " is produced by both op " +
             std::to_string(producer[out]) + " and op " + std::to_string(op);
    }
    producer[out] = op;
    for (TensorId in : ops[op].inputs) consumers[in].push_back(op);
  }
  // Ops were visited in ascending order, so every consumer list is already sorted.

  std::vector<int> missing_inputs(num_ops, 0);
  for (OpId op = 0; op < num_ops; ++op) {
    for (TensorId in : ops[op].inputs) {
      if (producer[in] != kNoOp) ++missing_inputs[op];
    }
  }
  std::priority_queue<OpId, std::vector<OpId>, std::greater<>> ready;
  for (OpId op = 0; op < num_ops; ++op) {
    if (missing_inputs[op] == 0) ready.push(op);
  }
  topological_order.clear();
  while (!ready.empty()) {
    const OpId op = ready.top();
    ready.pop();
    topological_order.push_back(op);
    for (OpId next : consumers[ops[op].output]) {
      if (--missing_inputs[next] == 0) ready.push(next);
    }
  }
  if (static_cast<int>(topological_order.size()) != num_ops) {
    for (OpId op = 0; op < num_ops; ++op) {
      if (missing_inputs[op] > 0) {
        return "the graph has a cycle through op " + std::to_string(op);
      }
    }
  }
  // The shapes every rule assumes; the reader reports them first with the file's field names,
  // so this catches problems built in code (sub-problems, the importer, tests' generators).
  const auto shape = [&](TensorId t) {
    return std::to_string(tensors[t].height) + "x" + std::to_string(tensors[t].width);
  };
  for (OpId op = 0; op < num_ops; ++op) {
    const Op& o = ops[op];
    if (o.kind == OpKind::MatMul) {
      if (o.inputs.size() != 2) return "MatMul op " + std::to_string(op) + " needs 2 inputs";
      const Tensor& lhs = tensors[o.inputs[0]];
      const Tensor& rhs = tensors[o.inputs[1]];
      const Tensor& out = tensors[o.output];
      if (lhs.width != rhs.height || out.height != lhs.height || out.width != rhs.width) {
        return "MatMul op " + std::to_string(op) + ": " + shape(o.inputs[0]) + " @ " + shape(o.inputs[1]) +
               " does not make its output " + shape(o.output);
      }
    } else if (o.kind == OpKind::Pointwise) {
      for (TensorId in : o.inputs) {
        if (!(tensors[in] == tensors[o.output])) {
          return "Pointwise op " + std::to_string(op) + ": input " + shape(in) + " differs from its output " +
                 shape(o.output);
        }
      }
    }
  }
  return {};
}

int64_t Problem::NativeTiles(OpId op) const {
  const Tensor& out = tensors[ops[op].output];
  return CeilDiv(out.height, native) * CeilDiv(out.width, native);
}

bool Problem::OnWeightPath(TensorId t) const {
  if (!chip.two_paths() || producer[t] != kNoOp || consumers[t].empty()) return false;
  for (OpId c : consumers[t]) {
    const Op& op = ops[c];
    if (op.kind != OpKind::MatMul || op.inputs[0] == t) return false;
  }
  return true;
}

}  // namespace annealer
