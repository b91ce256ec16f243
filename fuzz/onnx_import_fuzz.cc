// libFuzzer target: the ONNX importer (src/import/onnx_graph.h, src/import/model_lowering.h) on arbitrary
// bytes, lowered for a fixed small core. A bad model is one InputError of one line naming the
// input; a model it lowers must be a problem the rest of the program accepts as written: it
// finalizes and round-trips through the contest JSON writer and reader unchanged.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_checks.h"
#include "src/io/json_fields.h"
#include "src/import/model_lowering.h"
#include "src/import/onnx_graph.h"
#include "src/io/contest/problem_reader.h"
#include "src/io/contest/problem_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace annealer;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  static const std::string origin = "fuzz.onnx";
  // tests/import/model_import_test.cc's core: 4 Mi elements of fast memory, 128-wide native tiles.
  static const LoweringHardware hardware{4 << 20, 64, 128, 32, 8};
  LoweredModel model;
  try {
    model = LowerOnnxGraph(ParseOnnx(bytes, origin, {}), hardware);
  } catch (const InputError& error) {
    fuzz::CheckErrorMessage(error.what(), origin);
    return 0;
  }
  Problem copy = model.problem;
  const std::string finalize = copy.Finalize();
  if (!finalize.empty()) fuzz::Finding("the lowered problem does not finalize: " + finalize);
  if (model.op_origins.size() != model.problem.ops.size() ||
      model.tensor_origins.size() != model.problem.tensors.size()) {
    fuzz::Finding("origins do not match the problem's ops and tensors");
  }
  Problem back;
  try {
    back = ParseProblem(ProblemToJson(model.problem), origin);
  } catch (const InputError& error) {
    fuzz::Finding(std::string("the contest reader rejects the lowered problem: ") + error.what());
  }
  if (!(back == model.problem)) fuzz::Finding("the lowered problem does not round-trip through JSON");
  return 0;
}
