// The scheduling problem: tensors, ops and the hardware, plus the DAG facts derived from them.
// Plain data, immutable after Finalize(); shared read-only by every thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "eval/model/chip_rules.h"

namespace annealer {

using TensorId = int32_t;
using OpId = int32_t;
using Elements = int64_t;  // tensor and slice sizes; the cost model has no bytes
using Latency = double;    // time units of the cost model

inline constexpr OpId kNoOp = -1;

// Layout (docs/cost-model.md, rules L1-L6): a data-movement op, inputs X... and one output Y of
// any shapes, each element of Y a copy of an element of X or a constant (a transpose, a reshape
// across rows and columns, a slice, a pad, a broadcast, a gather of rows). How Y maps to X does
// not enter the cost model: Y's regions are gathered from X in slow memory by the DMA, so the
// problem carries no mapping. No compute (base cost 0). Contest problems never hold one.
enum class OpKind { MatMul, Pointwise, Layout };

struct Tensor {
  Elements width = 0;   // columns
  Elements height = 0;  // rows
  Elements size() const { return width * height; }
  bool operator==(const Tensor&) const = default;
};

struct Op {
  OpKind kind = OpKind::Pointwise;
  std::vector<TensorId> inputs;  // MatMul: {LHS, RHS}; Layout: {X, ...} (one or more)
  TensorId output = 0;
  double base_cost = 0;
  bool operator==(const Op&) const = default;
};

struct Problem {
  std::vector<Tensor> tensors;
  std::vector<Op> ops;
  Elements fast_memory_capacity = 0;
  double slow_memory_bandwidth = 0;  // elements per time unit
  Elements native = 128;             // native w, h and k (spec A.1.4)
  // A real chip's rules (H1-H6, eval/model/chip_rules.h); all off for the contest. Not part of the
  // contest format: a problem file carries them in an optional "chip_rules" object.
  ChipRules chip;

  // Derived by Finalize(): who produces and who consumes each tensor, and a topological order.
  std::vector<OpId> producer;                  // per tensor; kNoOp for graph inputs
  std::vector<std::vector<OpId>> consumers;    // per tensor, ascending op ids
  std::vector<OpId> topological_order;         // Kahn's order, smallest ready id first

  bool operator==(const Problem&) const = default;

  // Fills the derived fields. Returns an empty string on success, otherwise a one-line reason
  // (a tensor produced twice, a cycle, a MatMul or Pointwise op whose shapes do not fit). The
  // reader (src/io/contest/problem_reader) checks every rule first, naming the file's fields; the shape
  // check here guards problems built in code, whose derived fields are filled all the same.
  std::string Finalize();

  bool IsGraphInput(TensorId t) const { return producer[t] == kNoOp && !consumers[t].empty(); }
  bool IsGraphOutput(TensorId t) const { return producer[t] != kNoOp && consumers[t].empty(); }
  bool IsLayout(OpId op) const { return ops[op].kind == OpKind::Layout; }
  // Reduction length of a MatMul: K = width of LHS = height of RHS. Only MatMuls have one.
  Elements ReductionLength(OpId op) const { return tensors[ops[op].inputs[0]].width; }
  // Number of native tiles (ceil(H/n) * ceil(W/n)) of an op's output.
  int64_t NativeTiles(OpId op) const;
  // H6: whether t travels the weight path -- the chip has one, t is a graph input, and every
  // consumer is a MatMul reading t as its RHS only. A property of the tensor, so every slice of
  // it goes the same way whatever the schedule.
  bool OnWeightPath(TensorId t) const;
};

}  // namespace annealer
