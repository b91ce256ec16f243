// The DAG facts the sequence rules (V1 coverage, V7, V9) read for every subgraph, laid out flat
// (one array per fact, indexed by op or tensor) and derived once per problem: the hot loops of
// EvaluateFast and IncrementalEvaluator then read a few contiguous arrays instead of chasing
// each Op's and each tensor's own vectors.
#pragma once

#include <cstdint>
#include <vector>

#include "eval/model/problem.h"
#include "eval/model/schedule.h"

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
  std::vector<char> layout;      // per op: a Layout op (its input must be in slow memory, L1)
  // Consumers of each op's OUTPUT in CSR form (the sequence rules only ask about outputs).
  std::vector<int32_t> consumer_begin;  // per op
  std::vector<OpId> consumer;
  std::vector<char> graph_input_or_unproduced;  // per tensor: producer == kNoOp
  std::vector<TensorId> graph_outputs;          // ascending

  // Refills from `problem` (keeps capacity).
  void Build(const Problem& problem);
};

// The sequence-rule facts of a small subgraph: the inputs it reads from outside (in op order,
// then input order: what V7 checks) and the outputs it writes to slow memory (consumed by no op
// inside, not retained). They depend on the op list and the retained list alone, so a cache
// entry keyed by those can carry them, and a full evaluation then checks V7 without walking
// the DAG. A subgraph with a Layout op has no small facts (unknown): its input must be in slow
// memory, not merely retained (spec L1), which the facts' one test does not tell apart.
struct SmallSequenceFacts {
  static constexpr int kCapacity = 3;
  int8_t num_boundary = -1;  // -1: unknown, or more tensors than kCapacity
  int8_t num_writes = 0;
  TensorId tensors[kCapacity] = {};  // the boundary inputs, then the writes

  bool known() const { return num_boundary >= 0; }
  const TensorId* boundary_begin() const { return tensors; }
  const TensorId* boundary_end() const { return tensors + num_boundary; }
  const TensorId* writes_begin() const { return tensors + num_boundary; }
  const TensorId* writes_end() const { return tensors + num_boundary + num_writes; }
  // Derives them for `subgraph`, whose op ids must be in range; unknown when they do not fit.
  void Derive(const FlatProblem& flat, const Subgraph& subgraph);
};

}  // namespace annealer
