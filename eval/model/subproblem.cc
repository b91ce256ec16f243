#include "eval/model/subproblem.h"

#include <stdexcept>
#include <unordered_map>

namespace annealer {

Subproblem ExtractSubproblem(const Problem& problem, std::span<const OpId> ops) {
  Subproblem sub;
  sub.problem.fast_memory_capacity = problem.fast_memory_capacity;
  sub.problem.slow_memory_bandwidth = problem.slow_memory_bandwidth;
  sub.problem.native = problem.native;
  sub.problem.chip = problem.chip;
  std::unordered_map<TensorId, TensorId> local;
  local.reserve(ops.size() * 3);
  auto map_tensor = [&](TensorId t) {
    const auto [it, added] = local.try_emplace(t, static_cast<TensorId>(sub.tensor_ids.size()));
    if (added) {
      sub.tensor_ids.push_back(t);
      sub.problem.tensors.push_back(problem.tensors[t]);
    }
    return it->second;
  };
  sub.op_ids.assign(ops.begin(), ops.end());
  sub.problem.ops.reserve(ops.size());
  for (const OpId op : ops) {
    const Op& full = problem.ops[op];
    Op copy;
    copy.kind = full.kind;
    copy.base_cost = full.base_cost;
    for (const TensorId t : full.inputs) copy.inputs.push_back(map_tensor(t));
    copy.output = map_tensor(full.output);
    sub.problem.ops.push_back(std::move(copy));
  }
  // A subset of a DAG is a DAG and every tensor keeps at most one producer.
  if (const std::string error = sub.problem.Finalize(); !error.empty()) {
    throw std::logic_error("ExtractSubproblem: " + error);
  }
  return sub;
}

bool ExportsAreSinks(const Problem& problem, const Subproblem& sub) {
  for (size_t t = 0; t < sub.tensor_ids.size(); ++t) {
    if (sub.problem.producer[t] == kNoOp || sub.problem.consumers[t].empty()) continue;
    // Produced and consumed inside: every full-problem consumer must be inside too.
    if (problem.consumers[sub.tensor_ids[t]].size() != sub.problem.consumers[t].size()) return false;
  }
  return true;
}

Schedule MapScheduleToFull(const Subproblem& sub, const Schedule& schedule) {
  Schedule mapped;
  mapped.subgraphs.reserve(schedule.subgraphs.size());
  for (const Subgraph& sg : schedule.subgraphs) {
    Subgraph out;
    out.granularity = sg.granularity;
    out.traversal = sg.traversal;
    out.ops.reserve(sg.ops.size());
    for (const OpId op : sg.ops) out.ops.push_back(sub.op_ids.at(op));
    for (const TensorId t : sg.retain) out.retain.push_back(sub.tensor_ids.at(t));
    mapped.subgraphs.push_back(std::move(out));
  }
  return mapped;
}

bool SameWeightPaths(const Problem& problem, const Subproblem& sub) {
  if (!problem.chip.two_paths()) return true;
  for (size_t t = 0; t < sub.tensor_ids.size(); ++t) {
    if (sub.problem.OnWeightPath(static_cast<TensorId>(t)) != problem.OnWeightPath(sub.tensor_ids[t])) return false;
  }
  return true;
}

}  // namespace annealer
