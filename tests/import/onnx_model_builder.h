// Small ONNX models built in memory with the protobuf API, for the importer's tests: graph
// inputs (a dim < 0 is the symbol "N"), stripped float weights, int64 shape constants, nodes
// and their attributes.
#pragma once

#include <doctest/doctest.h>

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace annealer::testing {

struct OnnxModelBuilder {
  onnx::ModelProto model;
  explicit OnnxModelBuilder(int64_t opset = 13) {
    model.set_ir_version(8);
    model.add_opset_import()->set_version(opset);
    model.mutable_graph()->set_name("g");
  }
  onnx::GraphProto& graph() { return *model.mutable_graph(); }
  OnnxModelBuilder& Input(const std::string& name, const std::vector<int64_t>& dims,
                          int elem_type = onnx::TensorProto::FLOAT) {
    onnx::ValueInfoProto* v = graph().add_input();
    v->set_name(name);
    auto* type = v->mutable_type()->mutable_tensor_type();
    type->set_elem_type(elem_type);
    for (int64_t d : dims) {
      if (d < 0) type->mutable_shape()->add_dim()->set_dim_param("N");
      else type->mutable_shape()->add_dim()->set_dim_value(d);
    }
    return *this;
  }
  OnnxModelBuilder& Output(const std::string& name) {
    graph().add_output()->set_name(name);
    return *this;
  }
  // A float initializer without data (a stripped weight).
  OnnxModelBuilder& Weight(const std::string& name, const std::vector<int64_t>& dims) {
    onnx::TensorProto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    return *this;
  }
  // An int64 initializer with its values (shapes, axes, split sizes, k).
  OnnxModelBuilder& Ints(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& values) {
    onnx::TensorProto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : values) t->add_int64_data(v);
    return *this;
  }
  // A float initializer with its values (scales).
  OnnxModelBuilder& Floats(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& values) {
    onnx::TensorProto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return *this;
  }
  onnx::NodeProto& Node(const std::string& name, const std::string& op, std::initializer_list<std::string> inputs,
                        std::initializer_list<std::string> outputs) {
    onnx::NodeProto* n = graph().add_node();
    n->set_name(name);
    n->set_op_type(op);
    for (const auto& in : inputs) n->add_input(in);
    for (const auto& out : outputs) n->add_output(out);
    return *n;
  }
  std::string Bytes() const {
    std::string bytes;
    REQUIRE(model.SerializeToString(&bytes));
    return bytes;
  }
};

inline onnx::NodeProto& SetInt(onnx::NodeProto& node, const std::string& name, int64_t value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
  return node;
}

inline onnx::NodeProto& SetFloat(onnx::NodeProto& node, const std::string& name, float value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
  return node;
}

inline onnx::NodeProto& SetInts(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
  return node;
}

inline onnx::NodeProto& SetText(onnx::NodeProto& node, const std::string& name, const std::string& value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
  return node;
}

// A subgraph attribute (an If's branch) of one node `op` reading `inputs` and writing `output`,
// which is also the branch's output. Returns the branch's node for more attributes.
inline onnx::NodeProto& SetBranch(onnx::NodeProto& node, const std::string& name, const std::string& op,
                                  std::initializer_list<std::string> inputs, const std::string& output) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* g = a->mutable_g();
  g->set_name(name);
  onnx::NodeProto* n = g->add_node();
  n->set_name(name + "_" + op);
  n->set_op_type(op);
  for (const auto& in : inputs) n->add_input(in);
  n->add_output(output);
  g->add_output()->set_name(output);
  return *n;
}

}  // namespace annealer::testing
