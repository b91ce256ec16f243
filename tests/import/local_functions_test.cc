// Local functions as newer ONNX writes them, with fields that libonnx 1.12's protobuf predates
// and keeps as unknown fields (src/import/onnx_graph.cc): an attribute's default
// (FunctionProto.attribute_proto) and overloads (FunctionProto.overload, NodeProto.overload).
// Built in memory with those fields added by number, as a newer exporter writes them.
#include <doctest/doctest.h>

#include <onnx/onnx_pb.h>

#include <google/protobuf/unknown_field_set.h>

#include <string>

#include "src/import/model_lowering.h"
#include "src/import/onnx_graph.h"
#include "src/io/json_fields.h"
#include "tests/import/onnx_model_builder.h"

namespace annealer {
namespace {

void AddUnknown(google::protobuf::Message& m, int number, const std::string& bytes) {
  m.GetReflection()->MutableUnknownFields(&m)->AddLengthDelimited(number, bytes);
}

// local.Lin(a, b) -> c. Overload "t": Gemm(a, b) with transB bound to the function's attribute
// `tb`, whose default is 1 (or `default_bytes`, when given). Overload "": Relu(a).
// The graph: y1 = Lin["t"](x [4,8], w [16,8]), y = Lin(y1, w).
testing::OnnxModelBuilder TwoOverloads(const std::string& default_bytes = "") {
  testing::OnnxModelBuilder m(17);
  m.model.set_ir_version(10);
  m.Input("x", {4, 8}).Weight("w", {16, 8}).Output("y");
  onnx::NodeProto& first = m.Node("first", "Lin", {"x", "w"}, {"y1"});
  first.set_domain("local");
  AddUnknown(first, 8, "t");
  m.Node("second", "Lin", {"y1", "w"}, {"y"}).set_domain("local");
  m.model.add_opset_import()->set_domain("local");
  // Names as strings, not literals: GCC 12 flags protobuf's setters of a literal with a false
  // -Wrestrict.
  const std::string lin = "Lin", local = "local", a = "a", b = "b", c = "c";
  for (const std::string overload : {"t", ""}) {
    onnx::FunctionProto* f = m.model.add_functions();
    f->set_name(lin);
    f->set_domain(local);
    if (!overload.empty()) AddUnknown(*f, 13, overload);
    f->add_input(a);
    f->add_input(b);
    f->add_output(c);
    f->add_opset_import()->set_version(17);
    onnx::NodeProto* n = f->add_node();
    n->add_output(c);
    n->add_input(a);
    if (overload.empty()) {
      n->set_op_type("Relu");
      continue;
    }
    n->set_op_type("Gemm");
    n->add_input(b);
    onnx::AttributeProto* ref = n->add_attribute();
    ref->set_name("transB");
    ref->set_type(onnx::AttributeProto::INT);
    ref->set_ref_attr_name("tb");
    onnx::AttributeProto tb;
    tb.set_name("tb");
    tb.set_type(onnx::AttributeProto::INT);
    tb.set_i(1);
    AddUnknown(*f, 11, default_bytes.empty() ? tb.SerializeAsString() : default_bytes);
  }
  return m;
}

LoweredModel Lower(const std::string& bytes) {
  return LowerOnnxGraph(ParseOnnx(bytes, "functions.onnx", {}), LoweringHardware{4 << 20, 64, 128, 32, 8});
}

TEST_CASE("import: local functions of newer ONNX: a call takes its overload, an unset attribute the function's default") {
  const LoweredModel m = Lower(TwoOverloads().Bytes());
  // Gemm with transB = 1: [4,8] x [16,8]^T, 4 * 8 * 16 MACs; then the other overload's Relu.
  CHECK(m.summary.macs == 4 * 8 * 16);
  CHECK(m.summary.onnx_ops.at("Gemm") == 1);
  CHECK(m.summary.onnx_ops.at("Relu") == 1);
  CHECK(m.problem.ops.size() == 2);

  // The call's own attribute comes before the default: transB = 0 makes [4,8] x [16,8], which
  // does not multiply.
  testing::OnnxModelBuilder set = TwoOverloads();
  testing::SetInt(*set.graph().mutable_node(0), "tb", 0);
  try {
    Lower(set.Bytes());
    FAIL("transB = 0 imported");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("first/") != std::string::npos);
  }

  // A default that is not an AttributeProto is one line naming the function.
  try {
    Lower(TwoOverloads("\xff\xff\xff").Bytes());
    FAIL("a broken default imported");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == "functions.onnx: local function 'local.Lin': attribute default 0 does not parse");
  }

  // A call of an overload the model does not define names the overloads it does.
  testing::OnnxModelBuilder missing = TwoOverloads();
  missing.graph().mutable_node(0)->mutable_unknown_fields()->Clear();
  AddUnknown(*missing.graph().mutable_node(0), 8, "u");
  try {
    Lower(missing.Bytes());
    FAIL("a call of an undefined overload imported");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) ==
          "functions.onnx: node 'first' (Lin): calls overload 'u' of local function 'local.Lin', which the model "
          "defines only as overload '', 't'");
  }
}

}  // namespace
}  // namespace annealer
