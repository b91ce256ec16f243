// ONNX graph (src/import/onnx_graph.h) -> the contest's Problem: MatMul and Pointwise ops on 2-D
// tensors. The rules, one converter per ONNX op in src/import/lowering/ (registry.h), are the
// table of docs/model-import.md; in short:
//  - an activation of N-D shape is one 2-D tensor: its channel axis gives the columns, every
//    other axis (batch, space, sequence) the rows, in order (channels-last);
//  - compute is exact: every Conv/Gemm/MatMul becomes MatMul ops whose M·K·N sum to its
//    multiply-accumulates (a k×k convolution as k² tap MatMuls summed in the accumulator);
//  - vector work (elementwise, normalisation, softmax, depthwise, pooling) becomes Pointwise ops
//    priced as passes over their elements at the profile's vector rate; never dropped;
//  - what the format cannot say (a view that changes the row count: stride, pooling windows,
//    row concat/gather; a transposed operand) is approximated by a stated construction whose
//    size is added to ImportSummary::approximations.
// Nothing here knows about files: the caller reads the graph and the hardware.
#pragma once

#include <string>

#include "src/import/lowered_model.h"
#include "src/import/onnx_graph.h"

namespace annealer {

// Throws InputError "<file>: node '<name>' (<op>): <what> ..." for anything it cannot lower.
LoweredModel LowerOnnxGraph(const OnnxGraph& graph, const LoweringHardware& hardware);

// The map file (problem op -> ONNX nodes, problem tensor -> ONNX value): src/import/lowering_map.h.
// The summary as text (the `import` command) and as JSON (--json).
std::string ImportSummaryText(const ImportSummary& summary);
std::string ImportSummaryJson(const ImportSummary& summary);

}  // namespace annealer
