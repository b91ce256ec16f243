// The converter registry of the ONNX lowering (src/import/lowering/registry.h): one converter
// per op type and opset, opset ranges where the op's signature changed, weight slots.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "src/import/lowering/registry.h"

namespace annealer::lowering {
namespace {

OnnxNode Node(const std::string& op, std::vector<std::string> inputs) {
  OnnxNode n;
  n.name = op;
  n.op_type = op;
  n.inputs = std::move(inputs);
  n.outputs = {"y"};
  return n;
}

// Whether `op` has the same converter function at opsets a and b (both registered).
bool SameConverter(const std::string& op, int64_t a, int64_t b) {
  const ConverterEntry* x = FindConverter(op, a);
  const ConverterEntry* y = FindConverter(op, b);
  REQUIRE(x != nullptr);
  REQUIRE(y != nullptr);
  return x->lower == y->lower;
}

TEST_CASE("lowering registry: the family tables join without overlaps") {
  const ConverterTable& all = Converters();  // throws std::logic_error on an overlap
  CHECK(all.size() >= 90);
  for (const ConverterEntry& e : all) {
    CAPTURE(e.op_type);
    CHECK(bool(e.lower));
    CHECK(e.since < e.until);
  }
  const std::vector<std::string> ops = RegisteredOpTypes();
  CHECK(std::is_sorted(ops.begin(), ops.end()));
  for (const char* op : {"Conv", "ConvTranspose", "Gemm", "MatMul", "Softmax", "LayerNormalization", "MaxPool",
                         "ReduceMean", "Reshape", "Transpose", "Concat", "Gather", "Slice", "Split", "Resize",
                         "Pad", "Relu", "Add", "Where", "Constant", "Shape", "Identity", "Range"})
    CHECK_MESSAGE(std::count(ops.begin(), ops.end(), op) == 1, op);
  CHECK_FALSE(FindConverter("Hardmax", 13));
  CHECK(ConverterOpsets("Hardmax").empty());
}

TEST_CASE("lowering registry: ops whose signature changed have one converter per opset range") {
  // Slice: attributes before opset 10, inputs from 10.
  CHECK_FALSE(SameConverter("Slice", 9, 10));
  CHECK(SameConverter("Slice", 1, 9));
  CHECK(SameConverter("Slice", 10, 18));
  CHECK(ConverterOpsets("Slice") == "opsets 1 to 9, 10 and later");
  // Softmax and LogSoftmax: the 2-D coercion at `axis` (default 1) before 13, one axis (-1) from 13.
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    CAPTURE(op);
    CHECK_FALSE(SameConverter(op, 12, 13));
    CHECK(ConverterOpsets(op) == "opsets 1 to 12, 13 and later");
  }
  // Resize: scales at input 1 in opset 10, at input 2 (after roi) from 11.
  CHECK_FALSE(SameConverter("Resize", 10, 11));
  // One converter at every opset otherwise.
  CHECK(ConverterOpsets("Conv") == "opsets 1 and later");
}

TEST_CASE("lowering registry: weight slots") {
  OnnxGraph g;
  g.opset = 13;
  CHECK(IsWeightInput(g, Node("Conv", {"x", "w", "b"}), 1));
  CHECK(IsWeightInput(g, Node("Conv", {"x", "w", "b"}), 2));
  CHECK_FALSE(IsWeightInput(g, Node("Conv", {"x", "w", "b"}), 0));
  CHECK(IsWeightInput(g, Node("ConvTranspose", {"x", "w"}), 1));
  CHECK(IsWeightInput(g, Node("Gemm", {"x", "w", "c"}), 2));
  CHECK(IsWeightInput(g, Node("MatMul", {"x", "w"}), 1));
  CHECK_FALSE(IsWeightInput(g, Node("MatMul", {"x", "w"}), 0));
  CHECK_FALSE(IsWeightInput(g, Node("MatMul", {"x", "x"}), 1));  // x @ x: two activations
  CHECK_FALSE(IsWeightInput(g, Node("Add", {"x", "w"}), 1));
  CHECK_FALSE(IsWeightInput(g, Node("Hardmax", {"x"}), 0));
  // W @ x (token mixing with an initializer on the left): x is the data.
  g.initializers["w"] = OnnxInitializer{{16, 16}, true, std::nullopt};
  CHECK_FALSE(IsWeightInput(g, Node("MatMul", {"w", "x"}), 1));
  // A graph input with batch axes on the right is data, a 2-D one a weight passed as an input.
  g.inputs.push_back({"b", OnnxValueInfo{{2, 1, 32, 16}, {"", "", "", ""}, true}});
  g.inputs.push_back({"w2", OnnxValueInfo{{32, 16}, {"", ""}, true}});
  CHECK_FALSE(IsWeightInput(g, Node("MatMul", {"x", "b"}), 1));
  CHECK(IsWeightInput(g, Node("MatMul", {"x", "w2"}), 1));
}

}  // namespace
}  // namespace annealer::lowering
