// Where a command's problem comes from: a contest problem JSON, or an ONNX model imported in
// memory with a hardware profile (`annealer ... MODEL.onnx --hardware tpu-v5e`). Every command
// that takes PROBLEM.json goes through LoadProblem, so a model works wherever a problem does.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "eval/model/problem.h"
#include "src/import/hardware_profile.h"
#include "src/import/lowered_model.h"

namespace annealer {

struct ProblemSource {
  std::string path;                       // .json (contest problem) or .onnx (model)
  std::optional<std::string> hardware;    // a built-in profile name or a YAML path; .onnx only
  std::map<std::string, std::vector<int64_t>> inputs;  // --input NAME=DIMS; .onnx only
  HardwareOverrides hardware_overrides;   // keys of the profile replaced (sweeps); .onnx only
};

struct LoadedProblem {
  Problem problem;
  std::optional<LoweredModel> model;  // set for an imported model (op and tensor origins)
};

bool IsOnnxPath(const std::string& path);

LoweringHardware LoweringHardwareOf(const DerivedHardware& hardware);

// Reads the model, lowers it with the profile and checks that the contest reader accepts the
// problem as written (so `import`'s file and the in-memory problem are the same). Throws
// InputError; a .onnx without a profile is an InputError naming --hardware.
LoweredModel ImportModel(const std::string& path, const std::string& hardware,
                         const std::map<std::string, std::vector<int64_t>>& inputs,
                         const HardwareOverrides& hardware_overrides = {});
// The same from a model's bytes in memory (Problem.from_torch exports into a buffer); `origin`
// names them in messages. The problem is the one ImportModel gives for a file of these bytes.
LoweredModel ImportModelBytes(const std::string& bytes, const std::string& origin, const std::string& hardware,
                              const std::map<std::string, std::vector<int64_t>>& inputs,
                              const HardwareOverrides& hardware_overrides = {});

// A contest JSON, or a model imported in memory. --hardware/--input with a JSON problem are an
// InputError (the problem already has its hardware).
LoadedProblem LoadProblem(const ProblemSource& source);

}  // namespace annealer
