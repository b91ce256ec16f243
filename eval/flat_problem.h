// The DAG facts the sequence rules (V1 coverage, V7, V9) read for every subgraph, laid out flat
// (one array per fact, indexed by op or tensor) and derived once per problem: the hot loops of
// EvaluateFast and IncrementalEvaluator then read a few contiguous arrays instead of chasing
// each Op's and each tensor's own vectors.
#pragma once

#include <cstdint>
#include <vector>

#include "eval/problem.h"

namespace annealer {

struct FlatProblem {
  const Problem* problem = nullptr;
  int num_ops = 0;
  int num_tensors = 0;
  // Op inputs in CSR form: op's inputs are input_tensor[input_begin[op] .. input_begin[op + 1]),
  // with their producers (kNoOp for graph inputs) alongside.
  std::vector<int32_t> input_begin;
  std::vector<TensorId> input_tensor;
  std::vector<OpId> input_producer;
  std::vector<TensorId> output;  // per op
  // Consumers of each op's OUTPUT in CSR form (the sequence rules only ask about outputs).
  std::vector<int32_t> consumer_begin;  // per op
  std::vector<OpId> consumer;
  std::vector<char> graph_input_or_unproduced;  // per tensor: producer == kNoOp
  std::vector<TensorId> graph_outputs;          // ascending

  // Refills from `problem` (keeps capacity).
  void Build(const Problem& problem);
};

}  // namespace annealer
