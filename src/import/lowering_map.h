// The map file of an imported model (`annealer import` writes it beside the problem, default
// <problem stem>.map.json): which ONNX nodes each problem op comes from, which ONNX value each
// problem tensor is.
//   {"ops": [{"op": 0, "kind": "MatMul", "role": "conv-tap", "nodes": ["conv1"],
//             "op_types": ["Conv"]}, ...],
//    "tensors": [{"tensor": 0, "value": "input", "role": "model-input"}, ...]}
// The report reads it back to label ops and tensors with their ONNX names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "eval/model/problem.h"
#include "src/import/lowered_model.h"

namespace annealer {

struct LoweringMap {
  std::vector<OpOrigin> op_origins;          // per problem op
  std::vector<TensorOrigin> tensor_origins;  // per problem tensor
};

// The map file of a lowered model (JSON).
std::string LoweringMapJson(const LoweredModel& model);

// Reads a map file written for `problem`. Throws a one-line InputError naming the file, the
// field and the index ("m.map.json: ops[3].nodes[0]: expected a string, got 7"); a map whose op
// or tensor count, op numbering or op kinds differ from the problem's is an error too.
LoweringMap ParseLoweringMap(std::string_view json, const std::string& origin,
                             const Problem& problem);
LoweringMap ReadLoweringMapFile(const std::string& path, const Problem& problem);

// The map file beside a problem file: "dir/p.json" -> "dir/p.map.json" (what `import` writes
// by default).
std::string DefaultMapPath(const std::string& problem_path);

}  // namespace annealer
