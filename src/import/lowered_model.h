// What an ONNX lowering (src/import/model_lowering.h) produces: the problem, where each of its ops
// and tensors came from, and the import's summary with every approximation and its size. Shared by
// the lowering's converters (src/import/lowering/), which fill it, and by the map file, the
// reports and the commands, which read it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "eval/model/problem.h"

namespace annealer {

// The numbers of a hardware profile the lowering needs (src/import/hardware_profile.h derives them).
struct LoweringHardware {
  Elements capacity = 0;
  double bandwidth = 0;        // elements per cycle
  Elements native = 128;
  double matmul_base = 0;      // cycles of one native n×n×n MatMul tile
  double pointwise_base = 0;   // cycles of one elementwise pass over an n×n tile
};

// Where a problem op or tensor came from.
struct OpOrigin {
  std::vector<std::string> nodes;     // ONNX node names
  std::vector<std::string> op_types;  // their op types
  std::string role;  // "matmul", "conv-tap", "tap-sum", "elementwise", "view", "reduction", ...
};
struct TensorOrigin {
  std::string value;  // ONNX value name (with "[h]" for a head part, "~view" for a view...)
  std::string role;   // "activation", "weight", "model-input", "im2col-input", "view-selector", "transposed-copy"
};

// One kind of approximation and how much it moves, summed over the model.
struct Approximation {
  std::string rule;    // e.g. "conv-halo", "strided-view", "transposed-operand"
  std::string what;    // one line: what the lowering does instead of the model
  int64_t count = 0;   // occurrences
  // Its size in elements: traffic the lowering adds (> 0) or leaves uncharged (< 0) against the
  // model's own tensors, or, for rules that move no traffic, the elements of the ops affected.
  int64_t elements = 0;
  bool traffic = true;  // `elements` is traffic (signed); false: elements affected
  int64_t extra_macs = 0;  // multiply-accumulates of data-movement MatMuls (not model work)
};

struct ImportSummary {
  std::map<std::string, int> onnx_ops;      // by op type
  std::map<std::string, int> problem_ops;   // by role
  int matmul_ops = 0, pointwise_ops = 0, layout_ops = 0;
  int64_t macs = 0;            // of Conv/ConvTranspose/Gemm/MatMul, = Σ M·K·N of compute MatMuls
  int64_t depthwise_macs = 0;  // depthwise convolutions, priced as vector work
  int64_t vector_element_passes = 0;  // Σ elements × passes of the Pointwise work
  int64_t params = 0;          // elements of floating-point initializers with 2+ elements
  int64_t params_in_tensors = 0;   // of those, carried by weight tensors of the problem
  int weight_inputs = 0;           // graph inputs read only as weights (counted as parameters)
  int64_t largest_activation = 0;  // elements
  std::string largest_activation_name;
  int64_t problem_tensor_elements = 0;
  std::vector<Approximation> approximations;
  LoweringHardware hardware;
};

struct LoweredModel {
  Problem problem;  // finalized
  std::vector<OpOrigin> op_origins;          // per problem op
  std::vector<TensorOrigin> tensor_origins;  // per problem tensor
  ImportSummary summary;
};

}  // namespace annealer
