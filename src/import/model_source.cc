#include "src/import/model_source.h"

#include "src/io/json_fields.h"
#include "src/import/onnx_graph.h"
#include "src/io/problem_reader.h"
#include "src/io/problem_writer.h"

namespace annealer {

bool IsOnnxPath(const std::string& path) {
  return path.size() >= 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
}

LoweringHardware LoweringHardwareOf(const DerivedHardware& h) {
  return LoweringHardware{h.capacity, h.bandwidth, h.native, h.matmul_base, h.pointwise_base};
}

LoweredModel ImportModel(const std::string& path, const std::string& hardware,
                         const std::map<std::string, std::vector<int64_t>>& inputs,
                         const HardwareOverrides& hardware_overrides) {
  const DerivedHardware derived = Derive(LoadHardwareProfile(hardware, hardware_overrides));
  LoweredModel model = LowerOnnxGraph(ReadOnnxFile(path, inputs), LoweringHardwareOf(derived));
  model.problem.chip = derived.chip;  // the chip's rules (H1-H5) do not change the lowering
  // The problem as a file must read back to itself: the reader's checks (sizes, shapes) apply.
  const Problem back = ParseProblem(ProblemToJson(model.problem), path + " (imported)");
  if (!(back == model.problem)) throw InputError(path, "", "internal: the imported problem does not read back");
  return model;
}

LoadedProblem LoadProblem(const ProblemSource& source) {
  if (!IsOnnxPath(source.path)) {
    if (source.hardware) throw InputError(source.path, "", "--hardware applies to .onnx models; a problem JSON has its hardware");
    if (!source.inputs.empty()) throw InputError(source.path, "", "--input applies to .onnx models");
    if (!source.hardware_overrides.empty()) throw InputError(source.path, "", "hardware overrides apply to .onnx models");
    return LoadedProblem{ReadProblemFile(source.path), std::nullopt};
  }
  if (!source.hardware)
    throw InputError(source.path, "", "a model needs a hardware profile: --hardware NAME (see `annealer hardware`) or --hardware PROFILE.yaml");
  LoweredModel model = ImportModel(source.path, *source.hardware, source.inputs, source.hardware_overrides);
  Problem problem = model.problem;
  return LoadedProblem{std::move(problem), std::move(model)};
}

}  // namespace annealer
