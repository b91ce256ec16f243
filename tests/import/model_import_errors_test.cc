// Bad ONNX models, built in memory with the ONNX protobuf API: each is one exact line naming the
// file (and the node or input), from the importer and from `annealer import` (exit 1, the same
// line on stderr after "annealer: ", no output file). Usage errors of `import` exit 2.
#include <doctest/doctest.h>

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "src/io/json_fields.h"
#include "src/import/lowering/registry.h"
#include "src/import/model_lowering.h"
#include "src/import/onnx_graph.h"
#include "tests/support/annealer_binary.h"
#include "tests/import/onnx_model_builder.h"
#include "tests/support/test_files.h"

namespace annealer {
namespace {

// The shared builder (opset 13, graph "g") with the initializer these cases use: zeros with
// their data, not a stripped weight.
struct ModelBuilder : testing::OnnxModelBuilder {
  // The base's chainable calls, returning this type so that Initializer chains after them.
  ModelBuilder& Input(const std::string& name, const std::vector<int64_t>& dims) {
    OnnxModelBuilder::Input(name, dims);
    return *this;
  }
  ModelBuilder& Output(const std::string& name) {
    OnnxModelBuilder::Output(name);
    return *this;
  }
  // A float initializer of zeros (or int64 `values` when given: shape constants).
  ModelBuilder& Initializer(const std::string& name, const std::vector<int64_t>& dims,
                            const std::vector<int64_t>& values = {}) {
    onnx::TensorProto* t = graph().add_initializer();
    t->set_name(name);
    int64_t count = 1;
    for (int64_t d : dims) {
      t->add_dims(d);
      count *= d;
    }
    if (values.empty()) {
      t->set_data_type(onnx::TensorProto::FLOAT);
      for (int64_t i = 0; i < count; ++i) t->add_float_data(0);
    } else {
      t->set_data_type(onnx::TensorProto::INT64);
      for (int64_t v : values) t->add_int64_data(v);
    }
    return *this;
  }
};

using testing::SetInt;
using testing::SetInts;

// x (`dims`) -> one node `name` reading `inputs` -> y.
ModelBuilder OneNode(const std::string& name, const std::string& op, std::initializer_list<std::string> inputs,
                     const std::vector<int64_t>& dims = {2, 8}) {
  ModelBuilder m;
  m.Input("x", dims).Output("y");
  m.Node(name, op, inputs, {"y"});
  return m;
}

// x [1,4,8,8] -> Conv(w) -> y: a valid model the Conv cases change one thing of.
ModelBuilder ConvModel(const std::vector<int64_t>& weight, int64_t group) {
  ModelBuilder m;
  m.Input("x", {1, 4, 8, 8}).Initializer("w", weight).Output("y");
  SetInt(m.Node("conv", "Conv", {"x", "w"}, {"y"}), "group", group);
  return m;
}

// The importer's message for `bytes` saved as `path` (the file the CLI reads), as `import`
// makes it: read, lowered for a small core.
std::string ImportMessage(const std::string& bytes, const std::string& path) {
  std::ofstream(path, std::ios::binary) << bytes;
  try {
    LowerOnnxGraph(ParseOnnx(bytes, path, {}), LoweringHardware{4 << 20, 64, 128, 32, 8});
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// The same file through `annealer import`: exit 1, exactly the line on stderr, no output.
void CheckCli(const std::string& path, const std::string& message) {
  const std::string out = path + ".json";
  const testing::RunResult r =
      testing::Run("import " + testing::Quote(path) + " --hardware tpu-v5e -o " + testing::Quote(out));
  CHECK(r.exit_code == 1);
  CHECK(r.err == "annealer: " + message + "\n");
  CHECK_FALSE(std::filesystem::exists(out));
}

struct BadModel {
  std::string name;  // the file's name (in a scratch directory)
  std::string bytes;
  std::string what;  // the message after "<file>: "
};

// A model whose one node calls the local function local.Block (x -> y), whose body, written at
// `opset` of the default domain, is one node `op` of `domain` (a -> b).
ModelBuilder BlockCall(int64_t opset, const std::string& op, const std::string& domain) {
  ModelBuilder m;
  m.Input("x", {2, 8}).Output("y");
  m.Node("call", "Block", {"x"}, {"y"}).set_domain("local");
  m.model.add_opset_import()->set_domain("local");
  onnx::FunctionProto* f = m.model.add_functions();
  f->set_name("Block");
  f->set_domain("local");
  f->add_input("a");
  f->add_output("b");
  f->add_opset_import()->set_version(opset);
  onnx::NodeProto* inner = f->add_node();
  inner->set_op_type(op);
  inner->set_domain(domain);
  inner->add_input("a");
  inner->add_output("b");
  return m;
}

std::vector<BadModel> BadModels() {
  std::vector<BadModel> bad;
  bad.push_back({"text.onnx", "This is a plain text file, not a model.\n",
                 "not an ONNX model (the protobuf does not parse: truncated or another format)"});
  const std::string mlp = testing::ReadFile(std::string(ANNEALER_SOURCE_DIR) + "/tests/models/mlp.onnx");
  bad.push_back({"truncated.onnx", mlp.substr(0, mlp.size() / 2),
                 "not an ONNX model (the protobuf does not parse: truncated or another format)"});
  bad.push_back({"empty.onnx", "", "the file is empty"});
  {
    ModelBuilder m;
    m.Input("x", {2, 8}).Output("x");
    bad.push_back({"no_nodes.onnx", m.Bytes(), "not an ONNX model (no graph, or a graph without nodes)"});
  }
  bad.push_back({"dangling.onnx", OneNode("relu", "Relu", {"ghost"}).Bytes(),
                 "node 'relu' (Relu): input 'ghost' is not produced by any node, nor an initializer or a graph input"});
  {
    ModelBuilder m;
    m.Input("x", {2, 8}).Output("b");
    m.Node("first", "Add", {"x", "b"}, {"a"});
    m.Node("second", "Relu", {"a"}, {"b"});
    bad.push_back({"cycle.onnx", m.Bytes(), "the graph has a cycle through node 'first' (Add)"});
  }
  {
    ModelBuilder m;
    m.Input("x", {2, 8}).Output("y");
    m.Node("one", "Relu", {"x"}, {"y"});
    m.Node("two", "Sigmoid", {"x"}, {"y"});
    bad.push_back({"twice.onnx", m.Bytes(), "node 'two' (Sigmoid): value 'y' is defined twice"});
  }
  {
    ModelBuilder m = OneNode("relu", "Relu", {"x"});
    m.model.clear_opset_import();
    bad.push_back({"no_opset.onnx", m.Bytes(), "the model imports no opset of the default ONNX domain"});
  }
  {
    ModelBuilder m;
    m.graph().add_input()->set_name("x");
    m.Output("y");
    m.Node("relu", "Relu", {"x"}, {"y"});
    bad.push_back({"no_shape.onnx", m.Bytes(), "graph input 'x' has no shape; give it with --input x=DIMS"});
  }
  bad.push_back({"dynamic.onnx", OneNode("relu", "Relu", {"x"}, {-1, 8}).Bytes(),
                 "graph input 'x' has dynamic dims Nx8; give them with --input x=DIMS (e.g. x=1x8 with N = 1 as examples)"});
  {
    // The message lists the op types with a converter (src/import/lowering/registry.h).
    std::string ops;
    for (const std::string& op : lowering::RegisteredOpTypes()) ops += (ops.empty() ? "" : ", ") + op;
    bad.push_back({"unsupported.onnx", OneNode("hardmax", "Hardmax", {"x"}).Bytes(),
                   "node 'hardmax' (Hardmax): operator not supported by the importer, which lowers " + ops +
                       " (see docs/model-import.md); replace the op or export the model without it"});
  }
  // Grouped convolutions are tap MatMuls per group (tests/import/model_import_conv_test.cc); their
  // output channels must split into the groups.
  bad.push_back({"grouped.onnx", ConvModel({6, 1, 3, 3}, 4).Bytes(),
                 "node 'conv' (Conv): the 6 output channels are not a multiple of group 4"});
  // A reshape across rows and columns is a Layout op now (tests/import/model_zoo_test.cc), but a
  // reshape to other elements is still an error.
  bad.push_back({"reshape.onnx", OneNode("reshape", "Reshape", {"x", "shape"}, {8, 16}).Initializer("shape", {2}, {16, 9}).Bytes(),
                 "node 'reshape' (Reshape): target shape [16,9] does not hold [8,16]"});
  bad.push_back({"conv_weight.onnx", ConvModel({8, 3, 3, 3}, 1).Bytes(),
                 "node 'conv' (Conv): weight [8,3,3,3] does not match 4 input channels and group 1"});
  bad.push_back({"no_compute.onnx", OneNode("same", "Identity", {"x"}).Bytes(),
                 "the model has no compute to schedule (no op lowers to a MatMul or Pointwise op)"});
  // Found by fuzz/onnx_import_fuzz: a name with a line break split the message in two lines.
  bad.push_back({"line_break.onnx", OneNode("relu\n1", "Relu", {"ghost\r"}).Bytes(),
                 "node 'relu\\n1' (Relu): input 'ghost\\r' is not produced by any node, nor an initializer or a graph input"});
  // Found by fuzz/onnx_import_fuzz: a Reshape target whose dims multiply past 64 bits
  // (UBSan: signed integer overflow).
  bad.push_back({"reshape_overflow.onnx",
                 OneNode("reshape", "Reshape", {"x", "shape"}).Initializer("shape", {2}, {int64_t{1} << 62, int64_t{1} << 62}).Bytes(),
                 "node 'reshape' (Reshape): the sizes are too large (4611686018427387904 x 4611686018427387904 overflows)"});
  // Found by fuzz/onnx_import_fuzz: a zero stride divided by zero in ONNX's shape inference (SIGFPE).
  {
    ModelBuilder m = ConvModel({4, 4, 3, 3}, 1);
    SetInts(*m.graph().mutable_node(0), "strides", {0, 1});
    bad.push_back({"zero_stride.onnx", m.Bytes(), "node 'conv' (Conv): attribute strides must be in 1..1048576"});
  }
  // Found by probing the fuzz target with hand-made models (ASan/UBSan reports before the fix):
  // a dilation whose window size overflows, ...
  {
    ModelBuilder m = ConvModel({4, 4, 3, 3}, 1);
    SetInts(*m.graph().mutable_node(0), "dilations", {int64_t{1} << 62, 1});
    bad.push_back({"huge_dilation.onnx", m.Bytes(), "node 'conv' (Conv): attribute dilations must be in 1..1048576"});
  }
  // ... pooling strides of one entry (read past the end), ...
  {
    ModelBuilder m = OneNode("pool", "MaxPool", {"x"}, {1, 4, 8, 8});
    SetInts(*m.graph().mutable_node(0), "kernel_shape", {2, 2});
    SetInts(*m.graph().mutable_node(0), "strides", {2});
    bad.push_back({"pool_strides.onnx", m.Bytes(), "node 'pool' (MaxPool): strides/dilations/pads do not match the kernel's rank"});
  }
  // ... Concat and Split axes and Unsqueeze axes out of range (read and written past the end), ...
  {
    ModelBuilder m = OneNode("concat", "Concat", {"x", "c"}, {1, 4, 8, 8}).Initializer("c", {1, 4, 8, 8});
    SetInt(*m.graph().mutable_node(0), "axis", 9);
    bad.push_back({"concat_axis.onnx", m.Bytes(), "node 'concat' (Concat): axis 9 is out of range for rank 4"});
  }
  {
    ModelBuilder m = OneNode("split", "Split", {"x"}, {1, 4, 8, 8});
    SetInt(*m.graph().mutable_node(0), "axis", 7);
    bad.push_back({"split_axis.onnx", m.Bytes(), "node 'split' (Split): axis 7 is out of range for rank 4"});
  }
  bad.push_back({"unsqueeze_axis.onnx",
                 OneNode("unsqueeze", "Unsqueeze", {"x", "axes"}, {1, 4, 8, 8}).Initializer("axes", {1}, {40}).Bytes(),
                 "node 'unsqueeze' (Unsqueeze): axis 40 is out of range for rank 5"});
  // ... a Split without outputs (SIGFPE in ONNX's shape inference), ...
  {
    ModelBuilder m = OneNode("split", "Split", {"x"}, {1, 4, 8, 8});
    m.graph().mutable_node(0)->clear_output();
    bad.push_back({"split_no_outputs.onnx", m.Bytes(), "node 'split' (Split): the node has no outputs"});
  }
  // Found by fuzz/onnx_import_fuzz from a torch export's seed: a Slice whose axes are out of
  // range, read by a Shape (a SEGV in libonnx 1.12's shape inference with data propagation,
  // which the import no longer runs).
  {
    ModelBuilder m = OneNode("slice", "Slice", {"x", "starts", "ends", "axes"}, {1, 16, 32});
    m.Initializer("starts", {1}, {4}).Initializer("ends", {1}, {8}).Initializer("axes", {1}, {5});
    m.graph().mutable_node(0)->set_output(0, "s");
    m.Node("shape", "Shape", {"s"}, {"sh"});
    m.Node("expand", "Expand", {"x", "sh"}, {"y"});
    bad.push_back({"slice_axes_shape.onnx", m.Bytes(), "node 'slice' (Slice): bad axes or steps"});
  }
  // ... a ConstantOfShape of a negative dim (std::length_error, a message without the file), ...
  bad.push_back({"constant_of_shape_negative.onnx",
                 OneNode("fill", "ConstantOfShape", {"shape"}).Initializer("shape", {2}, {-3, 4}).Bytes(),
                 "node 'fill' (ConstantOfShape): the output shape [-3,4] has a negative dim or more than 1099511627776 elements"});
  // ... an Expand of a constant to dims whose product overflows (UBSan: signed overflow), ...
  bad.push_back({"expand_overflow.onnx",
                 OneNode("expand", "Expand", {"c", "shape"}).Initializer("c", {1}, {1})
                     .Initializer("shape", {2}, {int64_t{1} << 40, int64_t{1} << 32}).Bytes(),
                 "node 'expand' (Expand): the output shape [1099511627776,4294967296] has a negative dim or more than "
                 "1099511627776 elements"});
  // ... a Slice whose ends are shorter than its starts (read past the end), ...
  bad.push_back({"slice_short_ends.onnx",
                 OneNode("slice", "Slice", {"x", "starts", "ends"}).Initializer("starts", {2}, {0, 1}).Initializer("ends", {1}, {1}).Bytes(),
                 "node 'slice' (Slice): starts, ends, axes and steps have 2, 1, 2 and 2 entries: they must match"});
  // ... a reduction and a Flatten along an axis the input does not have (imported silently), ...
  bad.push_back({"reduce_axis.onnx",
                 OneNode("sum", "ReduceSum", {"x", "axes"}, {1, 16, 32}).Initializer("axes", {1}, {-4}).Bytes(),
                 "node 'sum' (ReduceSum): axis -4 is out of range for rank 3"});
  {
    ModelBuilder m = OneNode("flat", "Flatten", {"x"}, {1, 16, 32});
    SetInt(*m.graph().mutable_node(0), "axis", -9);
    bad.push_back({"flatten_axis.onnx", m.Bytes(), "node 'flat' (Flatten): axis -9 is out of range for rank 3"});
  }
  // ... an empty Range bound (std::out_of_range, a message without the file), ...
  {
    ModelBuilder m = OneNode("relu", "Relu", {"x"});
    m.Initializer("start", {0}, {}).Initializer("limit", {}, {5}).Initializer("delta", {}, {1}).Output("r");
    m.Node("range", "Range", {"start", "limit", "delta"}, {"r"});
    bad.push_back({"range_empty.onnx", m.Bytes(), "node 'range' (Range): start (input 0) is empty; Range needs a scalar"});
  }
  // ... and a kernel of 65 x 65 taps, each a MatMul (a huge kernel ran out of time and memory).
  bad.push_back({"many_taps.onnx", ConvModel({4, 4, 65, 65}, 1).Bytes(),
                 "node 'conv' (Conv): a 65x65 kernel has more than 4096 taps"});
  // ... a channel concatenation of activations of different sizes (the blocks reached a
  // Pointwise op of two shapes, which the contest reader rejected), ...
  {
    ModelBuilder m;
    m.Input("x", {1, 4, 8, 8}).Input("z", {1, 4, 6, 6}).Output("y");
    m.Node("relu_x", "Relu", {"x"}, {"a"});
    m.Node("relu_z", "Relu", {"z"}, {"b"});
    SetInt(m.Node("concat", "Concat", {"a", "b"}, {"y"}), "axis", 1);
    bad.push_back({"concat_sizes.onnx", m.Bytes(), "node 'concat' (Concat): inputs [1,4,8,8] and [1,4,6,6] differ outside axis 1"});
  }
  // ... and elementwise operands of as many elements in other shapes.
  {
    ModelBuilder m;
    m.Input("x", {1, 4, 8, 8}).Input("z", {1, 8, 4, 8}).Output("y");
    m.Node("relu_x", "Relu", {"x"}, {"a"});
    m.Node("relu_z", "Relu", {"z"}, {"b"});
    m.Node("add", "Add", {"a", "b"}, {"y"});
    bad.push_back({"add_shapes.onnx", m.Bytes(),
                   "node 'add' (Add): operands of shapes [1,8,4,8] and [1,4,8,8] do not broadcast to the result"});
  }
  // ... a kernel with an empty dim (no taps: a sum of nothing) ...
  bad.push_back({"empty_kernel.onnx", ConvModel({4, 4, 1, 0}, 1).Bytes(), "node 'conv' (Conv): the weight [4,4,1,0] has an empty dim"});
  // ... a local function that calls itself (torch's export_modules_as_functions writes calls of
  // a custom domain, expanded in place; this one would never end: the error names the call 64
  // levels down) ...
  {
    const ModelBuilder m = BlockCall(13, "Block", "local");
    std::string name = "call";
    for (int i = 0; i < 64; ++i) name += "/Block#0";
    bad.push_back({"recursive_function.onnx", m.Bytes(),
                   "node '" + name + "' (Block): local functions nest deeper than 64 calls (a function calling itself?)"});
  }
  // ... and one whose body is written against another opset of the default domain than the model
  // (its nodes would be read by the model's rules) ...
  {
    const ModelBuilder m = BlockCall(11, "Relu", "");
    bad.push_back({"function_opset.onnx", m.Bytes(),
                   "node 'call' (Block): its local function imports opset 11 of the default domain, the model 13; "
                   "export the model with one opset"});
  }
  // Dims whose product passes 2^40 elements (the most a problem tensor holds) are rejected at once.
  bad.push_back({"huge_input.onnx", OneNode("relu", "Relu", {"x"}, {1 << 20, 1 << 20, 2}).Bytes(),
                 "graph input 'x' of dims 1048576x1048576x2 is too large (more than 1099511627776 elements)"});
  return bad;
}

TEST_CASE("import errors: each bad model is one exact line, from the importer and from the CLI") {
  const auto dir = testing::ScratchDir("import-errors", "models");
  for (const BadModel& model : BadModels()) {
    CAPTURE(model.name);
    const std::string path = (dir / model.name).string();
    const std::string message = path + ": " + model.what;
    CHECK(ImportMessage(model.bytes, path) == message);
    CheckCli(path, message);
  }
}

// Local functions that call the next one twice, 40 levels, the last with an empty body: the
// expansion would make 2^40 calls. It stops at 2^21 nodes and calls with one line naming the
// call it reached.
TEST_CASE("import errors: local functions doubling at every level stop at 2^21 nodes and calls") {
  ModelBuilder m;
  m.Input("x", {2, 8}).Output("y");
  m.Node("call", "F0", {"x"}, {"y"}).set_domain("local");
  m.model.add_opset_import()->set_domain("local");
  // Names built by appends: GCC 12 flags `"F" + std::to_string(i)` with a false -Wrestrict.
  auto name = [](int level) {
    std::string n = "F";
    n += std::to_string(level);
    return n;
  };
  for (int level = 0; level < 40; ++level) {
    onnx::FunctionProto* f = m.model.add_functions();
    f->set_name(name(level));
    f->set_domain("local");
    *f->add_input() = std::string("a");
    *f->add_output() = std::string("b");
    f->add_opset_import()->set_version(13);
    if (level == 39) continue;
    for (const auto& [in, out] : {std::pair{"a", "t"}, std::pair{"t", "b"}}) {
      onnx::NodeProto* inner = f->add_node();
      inner->set_op_type(name(level + 1));
      inner->set_domain("local");
      inner->add_input(in);
      inner->add_output(out);
    }
  }
  const auto dir = testing::ScratchDir("import-errors", "models");
  const std::string path = (dir / "doubling_functions.onnx").string();
  const std::string message = ImportMessage(m.Bytes(), path);
  std::string start = path;
  start += ": node 'call/F1#0/";
  CHECK(message.rfind(start, 0) == 0);
  CHECK(message.find("): the local functions expand into more than 2097152 nodes and calls") != std::string::npos);
  CHECK(message.find('\n') == std::string::npos);
}

TEST_CASE("import errors: usage errors exit 2, an unknown profile 1") {
  const auto dir = testing::ScratchDir("import-errors", "usage");
  const std::string model = testing::Quote(std::string(ANNEALER_SOURCE_DIR) + "/tests/models/mlp.onnx");
  const std::string out = (dir / "out.json").string();
  const testing::RunResult no_hardware = testing::Run("import " + model + " -o " + testing::Quote(out));
  CHECK(no_hardware.exit_code == 2);
  CHECK(no_hardware.err.rfind("annealer: import needs a hardware profile: --hardware NAME", 0) == 0);
  const testing::RunResult zero_dim =
      testing::Run("import " + model + " --hardware tpu-v5e --input x=0 -o " + testing::Quote(out));
  CHECK(zero_dim.exit_code == 2);
  CHECK(zero_dim.err.find("--input x=0: dimension \"0\" is not a positive integer") != std::string::npos);
  const testing::RunResult unknown = testing::Run("import " + model + " --hardware no-such-chip -o " + testing::Quote(out));
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.err.rfind("annealer: ", 0) == 0);
  CHECK(unknown.err.find("no-such-chip") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace annealer
