// What an imported model computes, counted on the problem itself: Σ M·K·N of the MatMul ops of
// a compute role (matmul, conv, conv-tap). Data-movement and reduction MatMuls do not count;
// depthwise convolutions are vector work (the summary's depthwise_macs).
#pragma once

#include <cstdint>
#include <string>

#include "src/import/model_lowering.h"

namespace annealer::testing {

inline int64_t ComputeMatMulMacs(const LoweredModel& m) {
  int64_t macs = 0;
  for (size_t o = 0; o < m.problem.ops.size(); ++o) {
    const Op& op = m.problem.ops[o];
    const std::string& role = m.op_origins[o].role;
    if (op.kind != OpKind::MatMul || (role != "matmul" && role != "conv" && role != "conv-tap")) continue;
    macs += m.problem.tensors[op.inputs[0]].size() * m.problem.tensors[op.inputs[1]].width;
  }
  return macs;
}

}  // namespace annealer::testing
