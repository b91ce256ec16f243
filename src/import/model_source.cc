#include "src/import/model_source.h"

#include "src/io/json_fields.h"
#include "src/import/model_lowering.h"
#include "src/import/onnx_graph.h"
#include "src/io/contest/problem_reader.h"
#include "src/io/contest/problem_writer.h"

namespace annealer {

bool IsOnnxPath(const std::string& path) {
  return path.size() >= 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
}

LoweringHardware LoweringHardwareOf(const DerivedHardware& h) {
  return LoweringHardware{h.capacity, h.bandwidth, h.native, h.matmul_base, h.pointwise_base};
}

namespace {

// The hardware is read before the model, so a bad profile is reported without parsing anything.
LoweredModel LowerChecked(const OnnxGraph& graph, const DerivedHardware& derived, const std::string& origin) {
  LoweredModel model = LowerOnnxGraph(graph, LoweringHardwareOf(derived));
  model.problem.chip = derived.chip;  // the chip's rules (H1-H6) do not change the lowering
  // The problem as a file must read back to itself: the reader's checks (sizes, shapes) apply.
  const Problem back = ParseProblem(ProblemToJson(model.problem), origin + " (imported)");
  if (!(back == model.problem)) throw InputError(origin, "", "internal: the imported problem does not read back");
  return model;
}

}  // namespace

LoweredModel ImportModel(const std::string& path, const std::string& hardware,
                         const std::map<std::string, std::vector<int64_t>>& inputs,
                         const HardwareOverrides& hardware_overrides) {
  const DerivedHardware derived = Derive(LoadHardwareProfile(hardware, hardware_overrides));
  return LowerChecked(ReadOnnxFile(path, inputs), derived, path);
}

LoweredModel ImportModelBytes(const std::string& bytes, const std::string& origin, const std::string& hardware,
                              const std::map<std::string, std::vector<int64_t>>& inputs,
                              const HardwareOverrides& hardware_overrides) {
  const DerivedHardware derived = Derive(LoadHardwareProfile(hardware, hardware_overrides));
  return LowerChecked(ParseOnnx(bytes, origin, inputs), derived, origin);
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
