#include "src/import/model_lowering.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <variant>

#include "src/io/json_fields.h"
#include "src/io/message_text.h"
#include "src/io/text_format.h"

namespace annealer {
namespace {

int64_t Product(const std::vector<int64_t>& v, size_t from = 0, size_t to = SIZE_MAX) {
  int64_t p = 1;
  for (size_t i = from; i < std::min(to, v.size()); ++i) p *= v[i];
  return p;
}
int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
// The most taps (kh·kw) of a convolution kernel: each is a MatMul of the problem.
constexpr int64_t kMaxTaps = 4096;

std::string DimsText(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

// A runtime value lowered to problem tensors. Its N-D ONNX shape maps to 2-D parts: the
// columns are `col_axis`, the rows every axis in `row_axes` (in storage order); each index of
// the `part_axes` is a separate tensor (attention heads), or, when `col_split`, the parts are
// equal column blocks of `col_axis` (heads merged back, consumed blockwise).
struct Act {
  std::vector<int64_t> dims;
  std::vector<int> row_axes;
  int col_axis = -1;
  std::vector<int> part_axes;
  bool col_split = false;
  std::vector<TensorId> parts;
  bool model_input = false;  // a graph input not yet made a tensor (a Conv may read it as im2col)
  std::string name;
};
// A value known at import time: an initializer or folded shape arithmetic.
struct Const {
  std::vector<int64_t> dims;
  std::optional<std::vector<double>> values;
  bool is_float = false;
  bool initializer = false;
  std::string name;
};
// A reduction over the columns with keepdims (layer-norm means and variances spelled out): not a
// tensor; its consumers read its sources and pay its passes.
struct RowStat {
  std::vector<int64_t> dims;  // the reduced shape (the column axis has size 1)
  Act like;  // the layout of the source (the consumers' shape)
  std::vector<TensorId> sources;  // of part 0 (single-part sources only)
  double passes = 0;
};
using Value = std::variant<Act, Const, RowStat>;

struct Attr {
  const OnnxNode& node;
  int64_t Int(const std::string& k, int64_t def) const {
    auto it = node.attributes.find(k);
    return it == node.attributes.end() || it->second.ints.empty() ? def : it->second.ints[0];
  }
  std::vector<int64_t> Ints(const std::string& k) const {
    auto it = node.attributes.find(k);
    return it == node.attributes.end() ? std::vector<int64_t>{} : it->second.ints;
  }
  double Float(const std::string& k, double def) const {
    auto it = node.attributes.find(k);
    return it == node.attributes.end() || it->second.floats.empty() ? def : it->second.floats[0];
  }
  std::string Text(const std::string& k) const {
    auto it = node.attributes.find(k);
    return it == node.attributes.end() ? "" : it->second.text;
  }
  bool Has(const std::string& k) const { return node.attributes.count(k) > 0; }
};

// Vector passes per element of the elementwise ops (one pass = one ALU op over an n×n tile).
double ElementwisePasses(const std::string& op) {
  static const std::map<std::string, double> kPasses = {
      {"Relu", 1}, {"LeakyRelu", 1}, {"PRelu", 1}, {"Clip", 1}, {"Neg", 1}, {"Abs", 1},
      {"Add", 1}, {"Sub", 1}, {"Mul", 1}, {"Div", 1}, {"Max", 1}, {"Min", 1}, {"Sum", 1},
      {"Pow", 2}, {"Sqrt", 2}, {"Reciprocal", 2}, {"Exp", 2}, {"Log", 2}, {"Elu", 2},
      {"Selu", 2}, {"HardSigmoid", 2}, {"HardSwish", 3}, {"Sigmoid", 4}, {"Tanh", 4},
      {"Erf", 4}, {"Softplus", 4}, {"Mish", 6}, {"Gelu", 8}, {"Floor", 1}, {"Ceil", 1},
      {"Round", 1}, {"Sign", 1}, {"Where", 1}, {"Mean", 1}, {"Celu", 2}, {"ThresholdedRelu", 1},
      {"Sin", 4}, {"Cos", 4}, {"BitShift", 1}, {"Mod", 2}};
  auto it = kPasses.find(op);
  return it == kPasses.end() ? -1 : it->second;
}

constexpr const char* kViewWhat =
    "a view with other rows (stride, pooling window, padding change) is a tensor written by two "
    "ones-MatMuls; traffic = the view's size, data-movement MACs = source + view";

constexpr const char* kHaloWhat =
    "k x k taps read the tile's own rows: the halo (the padded border a window reaches beyond "
    "the tensor) is not loaded; traffic = that border once per convolution";

class Lowering {
 public:
  Lowering(const OnnxGraph& g, const LoweringHardware& hw) : g_(g), hw_(hw) {}

  LoweredModel Run() {
    for (const auto& [name, init] : g_.initializers) {
      Const c;
      c.dims = init.dims;
      c.values = init.values;
      c.is_float = init.is_float;
      c.initializer = true;
      c.name = name;
      values_[name] = c;
      // Parameters: floating-point initializers of rank >= 1 (scalars are constants).
      if (init.is_float && !init.dims.empty()) summary_.params += Product(init.dims);
    }
    // A graph input read only as a weight (a Conv's or Gemm's weight or bias, a MatMul's right
    // operand) is a parameter whose data the file leaves out: tools that strip weights, and
    // exports that pass weights as inputs, write models that way.
    std::map<std::string, bool> weight_only;
    for (const auto& node : g_.nodes)
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        const bool weight_slot = ((node.op_type == "Conv" || node.op_type == "ConvTranspose" || node.op_type == "Gemm") && i >= 1) ||
                                 (node.op_type == "MatMul" && i == 1 && node.inputs[0] != node.inputs[1]);
        auto [it, fresh] = weight_only.emplace(node.inputs[i], weight_slot);
        if (!fresh) it->second = it->second && weight_slot;
      }
    for (const auto& o : g_.outputs) weight_only[o] = false;
    for (const auto& [name, info] : g_.inputs) {
      if (weight_only[name]) {
        values_[name] = Const{info.dims, std::nullopt, true, true, name};
        summary_.params += Product(info.dims);
        ++summary_.weight_inputs;
        continue;
      }
      Act a;
      a.dims = info.dims;
      a.name = name;
      a.model_input = true;
      SetChannelsLayout(a);
      values_[name] = a;
    }
    for (const auto& node : g_.nodes) {
      ++summary_.onnx_ops[node.op_type];
      LowerNode(node);
    }
    return Finish();
  }

 private:
  // ---- problem building -------------------------------------------------------------------
  TensorId NewTensor(Elements rows, Elements cols, TensorOrigin origin) {
    if (rows <= 0 || cols <= 0) throw InputError(g_.origin, "", OneLineForMessage("internal: empty tensor for '" + origin.value + "'"));
    p_.tensors.push_back(Tensor{cols, rows});
    tensor_origins_.push_back(std::move(origin));
    producer_.push_back(kNoOp);
    return static_cast<TensorId>(p_.tensors.size() - 1);
  }
  OpId AddOp(Op op, OpOrigin origin) {
    producer_[op.output] = static_cast<OpId>(p_.ops.size());
    p_.ops.push_back(std::move(op));
    alive_.push_back(true);
    op_origins_.push_back(std::move(origin));
    return static_cast<OpId>(p_.ops.size() - 1);
  }
  OpId AddOp(OpKind kind, std::vector<TensorId> inputs, TensorId out, double base, const OnnxNode& node,
             const std::string& role) {
    return AddOp(Op{kind, std::move(inputs), out, base}, OpOrigin{{node.name}, {node.op_type}, role});
  }
  bool IsComputeRole(const std::string& role) const {
    return role == "matmul" || role == "conv" || role == "conv-tap";
  }
  TensorId MatMul(TensorId l, TensorId r, const OnnxNode& node, const std::string& role, std::optional<double> base = {}) {
    const Elements m = p_.tensors[l].height, k = p_.tensors[l].width, n = p_.tensors[r].width;
    if (p_.tensors[r].height != k)
      throw InputError(g_.origin, NodeField(node), "internal shape mismatch " +
                       std::to_string(m) + "x" + std::to_string(k) + " @ " + std::to_string(p_.tensors[r].height) + "x" +
                       std::to_string(n));
    const TensorId out = NewTensor(m, n, {node.outputs.empty() ? node.name : node.outputs[0], "activation"});
    AddOp(OpKind::MatMul, {l, r}, out, base ? *base : hw_.matmul_base * double(CeilDiv(k, hw_.native)), node, role);
    if (IsComputeRole(role)) summary_.macs += m * k * n;
    return out;
  }
  TensorId Pointwise(std::vector<TensorId> inputs, double passes, const OnnxNode& node, const std::string& role) {
    if (inputs.empty()) Fail(node, "internal: an op without operands");
    const Tensor shape = p_.tensors[inputs[0]];
    for (TensorId t : inputs)
      if (!(p_.tensors[t] == shape))
        Fail(node, "operands of different shapes (" + std::to_string(p_.tensors[t].height) + "x" + std::to_string(p_.tensors[t].width) +
                       " and " + std::to_string(shape.height) + "x" + std::to_string(shape.width) + " as rows x columns) are not supported");
    std::vector<TensorId> unique;
    for (TensorId t : inputs)
      if (std::find(unique.begin(), unique.end(), t) == unique.end()) unique.push_back(t);
    const TensorId out = NewTensor(shape.height, shape.width, {node.outputs.empty() ? node.name : node.outputs[0], "activation"});
    AddOp(OpKind::Pointwise, unique, out, hw_.pointwise_base * passes, node, role);
    summary_.vector_element_passes += static_cast<int64_t>(std::llround(passes * double(shape.size())));
    return out;
  }
  TensorId Weight(const std::string& name, Elements rows, Elements cols, const std::string& suffix = "") {
    const std::string key = name + suffix + "#" + std::to_string(rows) + "x" + std::to_string(cols);
    auto it = weights_.find(key);
    if (it != weights_.end()) return it->second;
    const TensorId t = NewTensor(rows, cols, {name + suffix, "weight"});
    weights_[key] = t;
    return t;
  }
  void Note(const std::string& rule, const std::string& what, int64_t elements, int64_t extra_macs = 0) {
    const bool traffic = rule != "row-reduction";
    for (auto& a : approximations_)
      if (a.rule == rule) {
        ++a.count;
        a.elements += elements;
        a.extra_macs += extra_macs;
        return;
      }
    approximations_.push_back(Approximation{rule, what, 1, elements, traffic, extra_macs});
  }

  // A constant operand smaller than the activation (bias, scale, a class token) is folded into
  // its op: its parameters count, its loads do not.
  void NoteBroadcast(const Const& c) {
    if (Product(c.dims) > 1)
      Note("broadcast-constant",
           "a constant operand smaller than the activation (bias, scale vector, class token) is folded into its op: its loads are not charged",
           -Product(c.dims));
  }

  // ---- values -------------------------------------------------------------------------------
  // "node '<name>' (<op>)"; names from the file may hold line breaks: messages stay one line.
  static std::string NodeField(const OnnxNode& node) {
    return OneLineForMessage("node '" + node.name + "' (" + node.op_type + ")");
  }
  [[noreturn]] void Fail(const OnnxNode& node, const std::string& what) const {
    throw InputError(g_.origin, NodeField(node), OneLineForMessage(what));
  }
  // a * b of dims or attributes, failing (not overflowing) on absurd ones.
  int64_t Mul(const OnnxNode& node, int64_t a, int64_t b) const {
    int64_t product = 0;
    if (__builtin_mul_overflow(a, b, &product)) Fail(node, "the sizes are too large (" + std::to_string(a) + " x " + std::to_string(b) + " overflows)");
    return product;
  }
  // Every value a node makes is within kMaxValueElements (src/import/onnx_graph.h).
  void CheckDims(const OnnxNode& node, const std::vector<int64_t>& dims) const {
    if (!DimsWithinLimit(dims))
      Fail(node, "the output shape " + DimsText(dims) + " has a negative dim or more than " + std::to_string(kMaxValueElements) + " elements");
  }
  const Value& Get(const OnnxNode& node, size_t i) const {
    if (i >= node.inputs.size() || node.inputs[i].empty()) Fail(node, "input " + std::to_string(i) + " is missing");
    auto it = values_.find(node.inputs[i]);
    if (it == values_.end()) Fail(node, "input '" + node.inputs[i] + "' has no value (an unsupported producer?)");
    return it->second;
  }
  bool HasInput(const OnnxNode& node, size_t i) const { return i < node.inputs.size() && !node.inputs[i].empty(); }
  const Const* GetConst(const OnnxNode& node, size_t i) const { return std::get_if<Const>(&Get(node, i)); }
  const Const& NeedConst(const OnnxNode& node, size_t i, const std::string& what) const {
    const Const* c = GetConst(node, i);
    if (!c) Fail(node, what + " (input " + std::to_string(i) + ") must be known at import time, but it is computed by the model");
    return *c;
  }
  std::vector<int64_t> NeedInts(const OnnxNode& node, size_t i, const std::string& what) const {
    const Const& c = NeedConst(node, i, what);
    if (!c.values) Fail(node, what + " '" + c.name + "' has no inline data (stripped or external); it is needed to know shapes");
    std::vector<int64_t> out;
    for (double v : *c.values) out.push_back(static_cast<int64_t>(std::llround(v)));
    return out;
  }
  Act& Materialized(Act& a) {
    if (a.model_input) {
      const auto [rows, cols] = PartShape(a);
      const bool graph_input = std::any_of(g_.inputs.begin(), g_.inputs.end(), [&](const auto& in) { return in.first == a.name; });
      a.parts = {NewTensor(rows, cols, {a.name, graph_input ? "model-input" : "embedding-rows"})};
      a.model_input = false;
      values_[a.name] = a;
    }
    return a;
  }
  Act NeedAct(const OnnxNode& node, size_t i) {
    const Value& v = Get(node, i);
    if (const Act* a = std::get_if<Act>(&v)) {
      Act copy = *a;
      if (copy.model_input) {
        Materialized(copy);
      }
      return copy;
    }
    Fail(node, "input '" + node.inputs[i] + "' must be an activation computed by the model here");
  }
  void Set(const OnnxNode& node, size_t out, Value v) {
    if (out >= node.outputs.size() || node.outputs[out].empty()) return;
    CheckDims(node, std::visit([](const auto& x) { return x.dims; }, v));
    if (auto* a = std::get_if<Act>(&v)) {
      a->name = node.outputs[out];
      Elements e = 0;
      for (TensorId t : a->parts) {
        tensor_origins_[t].value = node.outputs[out] + (a->parts.size() > 1 ? "[" + std::to_string(&t - a->parts.data()) + "]" : "");
        e += p_.tensors[t].size();
      }
      if (e > summary_.largest_activation) {
        summary_.largest_activation = e;
        summary_.largest_activation_name = node.outputs[out];
      }
    }
    if (auto* c = std::get_if<Const>(&v)) c->name = node.outputs[out];
    values_[node.outputs[out]] = std::move(v);
  }

  // Channels-last 2-D layout: NCHW-like values (rank >= 3 from images) keep axis 1 as columns;
  // rank 2 and sequence values (B, S, D) use the last axis.
  static void SetChannelsLayout(Act& a, std::optional<int> col = std::nullopt) {
    const int r = static_cast<int>(a.dims.size());
    a.col_axis = col ? *col : (r == 4 || r == 5 ? 1 : (r == 0 ? -1 : r - 1));
    a.row_axes.clear();
    for (int i = 0; i < r; ++i) if (i != a.col_axis) a.row_axes.push_back(i);
    a.part_axes.clear();
    a.col_split = false;
  }
  static std::pair<Elements, Elements> PartShape(const Act& a) {
    Elements rows = 1;
    for (int ax : a.row_axes) rows *= a.dims[ax];
    Elements cols = a.col_axis < 0 ? 1 : a.dims[a.col_axis];
    if (a.col_split) cols /= static_cast<Elements>(a.parts.size());
    return {rows, cols};
  }
  static int64_t Elems(const Act& a) { return Product(a.dims); }
  bool SameShapes(const Act& a, const Act& b) const {
    if (a.parts.size() != b.parts.size()) return false;
    for (size_t i = 0; i < a.parts.size(); ++i)
      if (!(p_.tensors[a.parts[i]] == p_.tensors[b.parts[i]])) return false;
    return true;
  }
  bool SameWidths(const Act& a, const Act& b) const {
    if (a.parts.size() != b.parts.size()) return false;
    for (size_t i = 0; i < a.parts.size(); ++i)
      if (p_.tensors[a.parts[i]].width != p_.tensors[b.parts[i]].width) return false;
    return true;
  }

  // ---- rewrites -----------------------------------------------------------------------------
  int AliveConsumers(TensorId t) const {
    int n = 0;
    for (size_t o = 0; o < p_.ops.size(); ++o)
      if (alive_[o]) for (TensorId in : p_.ops[o].inputs) n += in == t;
    return n;
  }
  // Splits tensor t into `parts` equal column blocks by splitting the ops that make it (a
  // projection MatMul splits its weight by columns: exact MACs and parameters).
  std::vector<TensorId> SplitColumns(TensorId t, int parts, const OnnxNode& node, int allowed_consumers) {
    const Tensor shape = p_.tensors[t];
    if (shape.width % parts != 0) Fail(node, "cannot split " + std::to_string(shape.width) + " columns into " + std::to_string(parts) + " equal parts");
    if (AliveConsumers(t) > allowed_consumers)
      Fail(node, "splitting '" + tensor_origins_[t].value + "' into heads needs it to have no other consumer");
    const OpId op = producer_[t];
    const Elements w = shape.width / parts;
    std::vector<TensorId> out;
    if (op == kNoOp) {
      if (tensor_origins_[t].role != "weight") Fail(node, "cannot split the graph input '" + tensor_origins_[t].value + "' into heads");
      for (int i = 0; i < parts; ++i)
        out.push_back(NewTensor(shape.height, w, {tensor_origins_[t].value + "[:," + std::to_string(i) + "]", "weight"}));
      return out;
    }
    const Op o = p_.ops[op];
    const OpOrigin origin = op_origins_[op];
    alive_[op] = false;
    // A MatMul splits its right operand (the weight) by columns; a Pointwise op splits every
    // operand. Each part keeps the op's base cost: both are priced per output tile.
    std::vector<std::vector<TensorId>> split_inputs;
    for (size_t j = 0; j < o.inputs.size(); ++j)
      split_inputs.push_back(o.kind == OpKind::MatMul && j == 0 ? std::vector<TensorId>(parts, o.inputs[0])
                                                                 : SplitColumns(o.inputs[j], parts, node, 1));
    for (int i = 0; i < parts; ++i) {
      std::vector<TensorId> inputs;
      for (const auto& v : split_inputs) inputs.push_back(v[i]);
      const TensorId r = NewTensor(shape.height, w, {tensor_origins_[t].value + "[" + std::to_string(i) + "]", "activation"});
      AddOp(Op{o.kind, std::move(inputs), r, o.base_cost}, origin);
      out.push_back(r);
    }
    return out;
  }

  // A view that changes the row count (stride, pooling windows, row concat/gather): the format
  // has no such op, so the source is read by a MatMul with a ones row (1 × rows) and the view is
  // written by a MatMul with a ones column (rows' × 1). Both keep the model's order; their
  // M·K·N is data movement, reported apart from the model's MACs.
  TensorId View(TensorId src, Elements rows2, double passes, const OnnxNode& node, const std::string& rule,
                const std::string& what) {
    const Tensor s = p_.tensors[src];
    const TensorId u = NewTensor(1, s.height, {node.name + "~read", "view-selector"});
    const TensorId r = MatMul(u, src, node, "view-read", 0.0);
    if (rows2 == 1 && passes == 0) {
      Note(rule, what, 0, s.size());
      return r;
    }
    const TensorId a = NewTensor(rows2, 1, {node.name + "~write", "view-selector"});
    const TensorId v = MatMul(a, r, node, "view-write", hw_.pointwise_base * std::max(passes, 1.0));
    summary_.vector_element_passes += static_cast<int64_t>(std::max(passes, 1.0) * double(rows2 * s.width));
    Note(rule, what, rows2 * s.width, s.size() + rows2 * s.width);
    return v;
  }

  // ---- nodes --------------------------------------------------------------------------------
  void LowerNode(const OnnxNode& node) {
    const std::string& op = node.op_type;
    if (!node.domain.empty() && node.domain != "ai.onnx")
      Fail(node, "operator of domain '" + node.domain + "' is not supported (only the default ONNX domain)");
    if (op == "Constant") return LowerConstant(node);
    if (op == "Identity" || op == "Dropout" || op == "Cast" || op == "CastLike") return Pass(node);
    if (op == "Shape") return LowerShape(node);
    if (op == "Size") {
      const Value& v = Get(node, 0);
      std::vector<int64_t> d = std::visit([](const auto& x) { return x.dims; }, v);
      return Set(node, 0, Const{{}, std::vector<double>{double(Product(d))}, false, false, ""});
    }
    if (op == "Conv") return LowerConv(node);
    if (op == "ConvTranspose") return LowerConvTranspose(node);
    if (op == "Gemm") return LowerGemm(node);
    if (op == "MatMul") return LowerMatMul(node);
    if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") return LowerReshape(node);
    if (op == "Transpose") return LowerTranspose(node);
    if (op == "Softmax" || op == "LogSoftmax") return LowerNormalization(node, 5);
    if (op == "LayerNormalization") return LowerNormalization(node, 8);
    if (op == "BatchNormalization") return LowerNormalization(node, 2);
    if (op == "InstanceNormalization") return LowerNormalization(node, 8);
    if (op == "MaxPool" || op == "AveragePool") return LowerPool(node);
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool") return LowerGlobalPool(node, {2, 3});
    if (op == "ReduceMean" || op == "ReduceSum" || op == "ReduceMax" || op == "ReduceMin" || op == "ReduceL2" ||
        op == "ReduceSumSquare")
      return LowerReduce(node);
    if (op == "Resize" || op == "Upsample" || op == "Pad") return LowerResample(node);
    if (op == "Concat") return LowerConcat(node);
    if (op == "Gather") return LowerGather(node);
    if (op == "Slice") return LowerSlice(node);
    if (op == "Split") return LowerSplit(node);
    if (op == "ConstantOfShape") return LowerConstantOfShape(node);
    if (op == "Range") return LowerRange(node);
    if (op == "Expand") return LowerExpand(node);
    if (ElementwisePasses(op) >= 0 || op == "Equal" || op == "Less" || op == "Greater" || op == "Not" ||
        op == "And" || op == "Or")
      return LowerElementwise(node);
    Fail(node, "operator not supported by the importer; supported: Conv, Gemm, MatMul, elementwise and "
               "activation ops, BatchNormalization, LayerNormalization, Softmax, pooling, Reduce*, "
               "Reshape/Flatten/Squeeze/Unsqueeze/Transpose, Concat/Gather/Slice/Split, shape arithmetic "
               "(see docs/model-import.md); replace the op or export the model without it");
  }

  void Pass(const OnnxNode& node) {
    Value v = Get(node, 0);
    Set(node, 0, std::move(v));
    if (node.op_type == "Dropout" && node.outputs.size() > 1 && !node.outputs[1].empty()) {
      // The mask output: unused at inference.
      values_[node.outputs[1]] = Const{std::visit([](const auto& x) { return x.dims; }, Get(node, 0)), std::nullopt, false, false, node.outputs[1]};
    }
  }

  void LowerConstant(const OnnxNode& node) {
    Attr a{node};
    Const c;
    if (a.Has("value")) {
      const OnnxAttribute& t = node.attributes.at("value");
      c.dims = t.tensor_dims;
      c.values = t.tensor_values;
      c.is_float = t.tensor_is_float;
    } else if (a.Has("value_float")) {
      c.values = std::vector<double>{a.Float("value_float", 0)};
      c.is_float = true;
    } else if (a.Has("value_int")) {
      c.values = std::vector<double>{double(a.Int("value_int", 0))};
    } else if (a.Has("value_ints")) {
      auto v = a.Ints("value_ints");
      c.dims = {int64_t(v.size())};
      c.values = std::vector<double>(v.begin(), v.end());
    } else if (a.Has("value_floats")) {
      c.values = node.attributes.at("value_floats").floats;
      c.dims = {int64_t(c.values->size())};
      c.is_float = true;
    } else {
      Fail(node, "Constant without a value attribute this importer reads (value, value_float(s), value_int(s))");
    }
    Set(node, 0, c);
  }

  void LowerShape(const OnnxNode& node) {
    const Value& v = Get(node, 0);
    std::vector<int64_t> d = std::visit([](const auto& x) { return x.dims; }, v);
    Attr a{node};
    int64_t r = int64_t(d.size());
    int64_t start = a.Int("start", 0), end = a.Int("end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = std::clamp<int64_t>(start, 0, r);
    end = std::clamp<int64_t>(end, start, r);
    Const c;
    c.dims = {end - start};
    c.values = std::vector<double>(d.begin() + start, d.begin() + end);
    Set(node, 0, c);
  }

  // ---- Conv ---------------------------------------------------------------------------------
  void LowerConv(const OnnxNode& node) {
    Attr a{node};
    const Value& xv = Get(node, 0);
    const Act* xp = std::get_if<Act>(&xv);
    if (!xp) Fail(node, "the convolution input must be an activation");
    Act x = *xp;
    const Const& w = NeedConst(node, 1, "the weight");
    if (x.dims.size() != 4 || w.dims.size() != 4)
      Fail(node, "only 2-D convolutions (NCHW input, 4-D weight) are supported; input " + DimsText(x.dims) +
                     ", weight " + DimsText(w.dims));
    if (!x.part_axes.empty() || x.col_axis != 1) Fail(node, "the convolution input is not in NCHW layout here");
    const int64_t n = x.dims[0], cin = x.dims[1], h = x.dims[2], wd = x.dims[3];
    const int64_t cout = w.dims[0], kh = w.dims[2], kw = w.dims[3];
    if (cout <= 0 || w.dims[1] <= 0 || kh <= 0 || kw <= 0) Fail(node, "the weight " + DimsText(w.dims) + " has an empty dim");
    if (Mul(node, kh, kw) > kMaxTaps) Fail(node, "a " + std::to_string(kh) + "x" + std::to_string(kw) + " kernel has more than " + std::to_string(kMaxTaps) + " taps");
    const int64_t group = a.Int("group", 1);
    std::vector<int64_t> strides = a.Ints("strides"), dil = a.Ints("dilations"), pads = a.Ints("pads");
    if (strides.empty()) strides = {1, 1};
    if (dil.empty()) dil = {1, 1};
    if (pads.empty()) pads = {0, 0, 0, 0};
    if (strides.size() != 2 || dil.size() != 2 || pads.size() != 4) Fail(node, "strides/dilations/pads do not match a 2-D convolution");
    const std::string auto_pad = a.Text("auto_pad");
    int64_t ho, wo;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      ho = CeilDiv(h, strides[0]);
      wo = CeilDiv(wd, strides[1]);
    } else {
      if (auto_pad == "VALID") pads = {0, 0, 0, 0};
      ho = (h + pads[0] + pads[2] - dil[0] * (kh - 1) - 1) / strides[0] + 1;
      wo = (wd + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) / strides[1] + 1;
    }
    if (ho <= 0 || wo <= 0) Fail(node, "the output would be empty");
    if (w.dims[1] * group != cin) Fail(node, "weight " + DimsText(w.dims) + " does not match " + std::to_string(cin) + " input channels and group " + std::to_string(group));
    const bool bias = HasInput(node, 2);
    Act out;
    out.dims = {n, cout, ho, wo};
    SetChannelsLayout(out);
    const Elements rows_out = n * ho * wo;
    if (group > 1) {
      if (group != cin || cout != cin)
        Fail(node, "grouped convolution (group " + std::to_string(group) + " of " + std::to_string(cin) +
                       " channels) is not supported; only depthwise (group = channels = output channels) and group 1");
      // Depthwise: vector work, kh·kw multiply-adds per output element; channel blocks (a
      // concatenation) stay blocks.
      Materialized(x);
      if (ho == h && wo == wd && kh * kw > 1)
        Note("conv-halo", kHaloWhat, -(n * cin * ((h + kh - 1) * (wd + kw - 1) - h * wd)));
      if (bias) NoteBroadcast(NeedConst(node, 2, "the bias"));
      const double passes = double(kh * kw) + (bias ? 1 : 0);
      out.parts.clear();
      for (TensorId src : x.parts) {
        if (ho != h || wo != wd) src = View(src, rows_out, 0, node, "strided-view", kViewWhat);
        out.parts.push_back(Pointwise({src}, passes, node, "depthwise"));
      }
      out.col_split = x.col_split;
      summary_.depthwise_macs += rows_out * cout * kh * kw;
      return Set(node, 0, out);
    }
    const Elements k_all = cin * kh * kw;
    TensorId y;
    if (x.model_input) {
      // The model's input can be laid out as the im2col matrix at no cost but its size.
      const TensorId col = NewTensor(rows_out, k_all, {x.name + "~im2col", "im2col-input"});
      const int64_t extra = rows_out * k_all - Elems(x);
      if (extra != 0)
        Note("im2col-input", "a convolution reading the model's input reads it as the im2col matrix (one row per output pixel); traffic = the im2col matrix less the input",
             extra);
      y = MatMul(col, Weight(w.name, k_all, cout), node, "conv");
    } else {
      // Taps (k×k) and channel blocks (a concatenation) each multiply their own rows of the
      // weight; the partial products sum in the accumulator.
      const bool resized = ho != h || wo != wd;
      if (kh * kw > 1) Note("conv-halo", kHaloWhat, -(n * cin * ((h + kh - 1) * (wd + kw - 1) - h * wd)));
      std::vector<TensorId> partial;
      Elements offset = 0;
      for (TensorId src : x.parts) {
        const Elements cb = p_.tensors[src].width;
        if (resized) src = View(src, rows_out, 0, node, "strided-view", kViewWhat);
        const std::string block =
            x.parts.size() > 1 ? "[in " + std::to_string(offset) + ":" + std::to_string(offset + cb) + "]" : "";
        for (int64_t t = 0; t < kh * kw; ++t)
          partial.push_back(MatMul(src, Weight(w.name, cb, cout, (kh * kw > 1 ? "[tap " + std::to_string(t) + "]" : "") + block),
                                   node, kh * kw > 1 ? "conv-tap" : "conv"));
        offset += cb;
      }
      if (partial.size() == 1) {
        y = partial[0];
      } else {
        // No vector pass: the accumulator adds, unless a bias.
        if (bias) NoteBroadcast(NeedConst(node, 2, "the bias"));
        out.parts = {Pointwise(partial, bias ? 1 : 0, node, "tap-sum")};
        return Set(node, 0, out);
      }
    }
    if (bias) {
      NoteBroadcast(NeedConst(node, 2, "the bias"));
      y = Pointwise({y}, 1, node, "bias");
    }
    out.parts = {y};
    Set(node, 0, out);
  }

  // A transposed convolution scatters every input pixel through the k×k kernel: k² tap
  // MatMuls at the input's rows (exact MACs), summed into one input-sized tensor and written to
  // the output's rows by a view. The taps' separate outputs (k² - 1 more input-sized tensors)
  // are not materialized: their traffic is stated as not charged.
  void LowerConvTranspose(const OnnxNode& node) {
    Attr a{node};
    const Value& xv = Get(node, 0);
    if (!std::holds_alternative<Act>(xv)) Fail(node, "the input must be an activation");
    Act x = NeedAct(node, 0);
    const Const& w = NeedConst(node, 1, "the weight");
    if (x.dims.size() != 4 || w.dims.size() != 4 || x.col_axis != 1 || !x.part_axes.empty())
      Fail(node, "only 2-D transposed convolutions on NCHW are supported");
    const int64_t group = a.Int("group", 1);
    const int64_t n = x.dims[0], cin = x.dims[1], h = x.dims[2], wd = x.dims[3];
    if (group != 1) Fail(node, "grouped transposed convolution is not supported");
    if (w.dims[0] != cin) Fail(node, "weight " + DimsText(w.dims) + " does not match " + std::to_string(cin) + " input channels");
    const int64_t cout = w.dims[1], kh = w.dims[2], kw = w.dims[3];
    if (cout <= 0 || kh <= 0 || kw <= 0) Fail(node, "the weight " + DimsText(w.dims) + " has an empty dim");
    if (Mul(node, kh, kw) > kMaxTaps) Fail(node, "a " + std::to_string(kh) + "x" + std::to_string(kw) + " kernel has more than " + std::to_string(kMaxTaps) + " taps");
    std::vector<int64_t> strides = a.Ints("strides"), dil = a.Ints("dilations"), pads = a.Ints("pads"),
                         out_pad = a.Ints("output_padding"), out_shape = a.Ints("output_shape");
    if (strides.empty()) strides = {1, 1};
    if (dil.empty()) dil = {1, 1};
    if (pads.empty()) pads = {0, 0, 0, 0};
    if (out_pad.empty()) out_pad = {0, 0};
    if (strides.size() != 2 || dil.size() != 2 || pads.size() != 4 || out_pad.size() != 2)
      Fail(node, "strides/dilations/pads/output_padding do not match a 2-D transposed convolution");
    int64_t ho = strides[0] * (h - 1) + out_pad[0] + dil[0] * (kh - 1) + 1 - pads[0] - pads[2];
    int64_t wo = strides[1] * (wd - 1) + out_pad[1] + dil[1] * (kw - 1) + 1 - pads[1] - pads[3];
    if (out_shape.size() == 2) { ho = out_shape[0]; wo = out_shape[1]; }
    if (ho <= 0 || wo <= 0 || ho > (1 << 20) || wo > (1 << 20)) Fail(node, "the output size is out of range");
    std::vector<TensorId> partial;
    Elements offset = 0;
    for (TensorId src : x.parts) {
      const Elements cb = p_.tensors[src].width;
      const std::string block = x.parts.size() > 1 ? "[in " + std::to_string(offset) + ":" + std::to_string(offset + cb) + "]" : "";
      for (int64_t t = 0; t < kh * kw; ++t)
        partial.push_back(MatMul(src, Weight(w.name, cb, cout, "[tap " + std::to_string(t) + "]" + block), node, "conv-tap"));
      offset += cb;
    }
    const bool bias = HasInput(node, 2);
    if (bias) NoteBroadcast(NeedConst(node, 2, "the bias"));
    TensorId y = partial.size() == 1 ? partial[0] : Pointwise(partial, bias ? 1 : 0, node, "tap-sum");
    if (partial.size() == 1 && bias) y = Pointwise({y}, 1, node, "bias");
    if (kh * kw > 1)
      Note("transposed-conv-taps", "a transposed convolution's k x k taps are summed at the input's rows before the view to the output's rows: their separate outputs are not materialized; traffic = those outputs",
           -(kh * kw - 1) * n * h * wd * cout);
    Act out;
    out.dims = {n, cout, ho, wo};
    SetChannelsLayout(out);
    const Elements rows_out = n * ho * wo;
    out.parts = {rows_out == p_.tensors[y].height ? y : View(y, rows_out, 1, node, "strided-view", kViewWhat)};
    Set(node, 0, out);
  }

  // ---- Gemm / MatMul ------------------------------------------------------------------------
  Act ActTimesWeight(const Act& x, const Const& w, bool w_transposed, const OnnxNode& node) {
    if (w.dims.size() != 2) Fail(node, "the weight must be 2-D, got " + DimsText(w.dims));
    const int64_t k = w_transposed ? w.dims[1] : w.dims[0], nn = w_transposed ? w.dims[0] : w.dims[1];
    const int last = int(x.dims.size()) - 1;
    if (x.col_axis != last || x.dims[last] != k)
      Fail(node, "the activation " + DimsText(x.dims) + " does not have its reduction axis (" + std::to_string(k) +
                     ") as its last, column axis here");
    Act out = x;
    out.dims[last] = nn;
    out.col_split = false;
    if (x.col_split) {
      // Column blocks (heads merged back, a concatenation): Σ_b x_b · W[rows of b], summed in
      // the accumulator.
      std::vector<TensorId> partial;
      Elements offset = 0;
      for (TensorId part : x.parts) {
        const Elements kp = p_.tensors[part].width;
        partial.push_back(MatMul(part, Weight(w.name, kp, nn, "[rows " + std::to_string(offset) + ":" + std::to_string(offset + kp) + "]"), node, "matmul"));
        offset += kp;
      }
      out.parts = {Pointwise(partial, 0, node, "block-sum")};
      out.part_axes.clear();
      return out;
    }
    const TensorId wt = Weight(w.name, k, nn);
    out.parts.clear();
    for (TensorId part : x.parts) out.parts.push_back(MatMul(part, wt, node, "matmul"));
    return out;
  }

  void AddBias(Act& y, const OnnxNode& node, size_t input) {
    if (!HasInput(node, input)) return;
    const Value& b = Get(node, input);
    if (std::holds_alternative<Act>(b)) Fail(node, "a bias computed by the model is not supported");
    NoteBroadcast(std::get<Const>(b));
    for (TensorId& t : y.parts) t = Pointwise({t}, 1, node, "bias");
  }

  void LowerGemm(const OnnxNode& node) {
    Attr a{node};
    if (a.Int("transA", 0)) Fail(node, "transA = 1 on an activation is not supported");
    const Value& av = Get(node, 0);
    if (!std::holds_alternative<Act>(av)) Fail(node, "the first Gemm operand must be an activation");
    Act x = NeedAct(node, 0);
    if (x.dims.size() != 2) Fail(node, "Gemm input must be 2-D, got " + DimsText(x.dims));
    x.col_axis = 1;
    x.row_axes = {0};
    const Const* w = GetConst(node, 1);
    if (!w) Fail(node, "a Gemm whose second operand is computed by the model is not supported");
    Act y = ActTimesWeight(x, *w, a.Int("transB", 0) != 0, node);
    AddBias(y, node, 2);
    Set(node, 0, y);
  }

  void LowerMatMul(const OnnxNode& node) {
    const Value& av = Get(node, 0);
    const Value& bv = Get(node, 1);
    if (std::holds_alternative<Act>(av) && std::holds_alternative<Const>(bv)) {
      Act x = NeedAct(node, 0);
      return Set(node, 0, ActTimesWeight(x, std::get<Const>(bv), false, node));
    }
    if (std::holds_alternative<Const>(av) && std::holds_alternative<Act>(bv)) {
      const Const& w = std::get<Const>(av);
      Act x = NeedAct(node, 1);
      if (w.dims.size() != 2 || !x.part_axes.empty() || x.dims.size() != 2 || x.col_axis != 1)
        Fail(node, "weight @ activation is supported for 2-D operands only");
      Act out = x;
      out.dims = {w.dims[0], x.dims[1]};
      out.parts = {MatMul(Weight(w.name, w.dims[0], w.dims[1]), x.parts[0], node, "matmul")};
      return Set(node, 0, out);
    }
    if (!std::holds_alternative<Act>(av) || !std::holds_alternative<Act>(bv))
      Fail(node, "a MatMul of two constants is not supported");
    Act x = NeedAct(node, 0), y = NeedAct(node, 1);
    const int rx = int(x.dims.size()), ry = int(y.dims.size());
    if (rx < 2 || ry < 2) Fail(node, "MatMul operands of rank < 2 are not supported");
    if (x.col_axis != rx - 1) Fail(node, "the left operand " + DimsText(x.dims) + " is not laid out with its reduction axis as columns");
    if (x.parts.size() != y.parts.size() || x.col_split || y.col_split)
      Fail(node, "batched MatMul operands must split into the same parts (heads): " + std::to_string(x.parts.size()) +
                     " and " + std::to_string(y.parts.size()));
    // Each part must be one matrix: rows other than M (a batch > 1 folded into the rows) would
    // multiply across batch items.
    for (const Act* v : {&x, &y})
      for (int ax : v->row_axes)
        if (ax < int(v->dims.size()) - 2 && v->dims[ax] > 1)
          Fail(node, "a MatMul of two activations with a batch of " + std::to_string(v->dims[ax]) +
                         " is not supported; import with batch 1 (--input NAME=1x...)");
    const int64_t k = x.dims[rx - 1];
    const bool plain = y.col_axis == ry - 1;
    const bool transposed = y.col_axis == ry - 2;
    if (!plain && !transposed) Fail(node, "the right operand's layout is not supported");
    Act out = x;
    out.dims[rx - 1] = y.dims[ry - 1];
    out.parts.clear();
    for (size_t i = 0; i < x.parts.size(); ++i) {
      const TensorId l = x.parts[i], r = y.parts[i];
      if (plain) {
        if (p_.tensors[r].height != k) Fail(node, "operand shapes do not chain");
        out.parts.push_back(MatMul(l, r, node, "matmul"));
        continue;
      }
      // A transposed operand (attention's K^T): the format cannot transpose, so the kernel reads
      // a transposed copy from slow memory; the order is kept by a free join of the operands,
      // which have the same shape in self-attention.
      const Tensor lt = p_.tensors[l], rt = p_.tensors[r];
      if (lt.width != rt.width || lt.height != rt.height)
        Fail(node, "a transposed right operand is supported when both operands have the same shape (self-attention); got " +
                       std::to_string(lt.height) + "x" + std::to_string(lt.width) + " and " + std::to_string(rt.height) + "x" +
                       std::to_string(rt.width));
      const TensorId join = Pointwise({l, r}, 0, node, "order-join");
      const TensorId copy = NewTensor(rt.width, rt.height, {node.inputs[1] + "^T", "transposed-copy"});
      Note("transposed-operand",
           "a transposed activation operand (K^T) is read as a copy from slow memory, joined to its source by a free Pointwise op; elements = the copy's writes not charged",
           -rt.size());
      out.parts.push_back(MatMul(join, copy, node, "matmul"));
    }
    Set(node, 0, out);
  }

  // ---- layout -------------------------------------------------------------------------------
  void LowerReshape(const OnnxNode& node) {
    const std::string& op = node.op_type;
    const Value& v = Get(node, 0);
    std::vector<int64_t> in_dims = std::visit([](const auto& x) { return x.dims; }, v);
    std::vector<int64_t> out_dims;
    Attr a{node};
    if (op == "Reshape") {
      std::vector<int64_t> shape = NeedInts(node, 1, "the target shape");
      const int64_t total = Product(in_dims);
      int64_t known = 1, infer = -1;
      for (size_t i = 0; i < shape.size(); ++i) {
        int64_t d = shape[i];
        if (d == 0 && !a.Int("allowzero", 0)) d = i < in_dims.size() ? in_dims[i] : 0;
        if (d == -1) {
          if (infer >= 0) Fail(node, "two -1 dims in the target shape");
          infer = int64_t(i);
          out_dims.push_back(1);
          continue;
        }
        if (d < 0) Fail(node, "negative dim in the target shape");
        out_dims.push_back(d);
        known = Mul(node, known, d);
      }
      if (infer >= 0) {
        if (known == 0 || total % known) Fail(node, "cannot infer -1 in " + DimsText(shape) + " for " + DimsText(in_dims));
        out_dims[infer] = total / known;
      }
      if (Product(out_dims) != total) Fail(node, "target shape " + DimsText(out_dims) + " does not hold " + DimsText(in_dims));
    } else if (op == "Flatten") {
      int64_t axis = a.Int("axis", 1);
      if (axis < 0) axis += int64_t(in_dims.size());
      out_dims = {Product(in_dims, 0, axis), Product(in_dims, axis)};
    } else {
      std::vector<int64_t> axes = a.Ints("axes");
      if (axes.empty() && HasInput(node, 1)) axes = NeedInts(node, 1, "the axes");
      if (op == "Squeeze") {
        const int r = int(in_dims.size());
        std::set<int64_t> drop;
        for (int64_t ax : axes) drop.insert(ax < 0 ? ax + r : ax);
        for (int i = 0; i < r; ++i)
          if (!(axes.empty() ? in_dims[i] == 1 : drop.count(i) > 0)) out_dims.push_back(in_dims[i]);
      } else {
        const int r = int(in_dims.size() + axes.size());
        std::set<int64_t> add;
        for (int64_t ax : axes) {
          if (ax < -r || ax >= r) Fail(node, "axis " + std::to_string(ax) + " is out of range for rank " + std::to_string(r));
          add.insert(ax < 0 ? ax + r : ax);
        }
        if (add.size() != axes.size()) Fail(node, "an axis is given twice");
        size_t j = 0;
        for (int i = 0; i < r; ++i) out_dims.push_back(add.count(i) ? 1 : in_dims[j++]);
      }
    }
    if (const Const* c = std::get_if<Const>(&v)) {
      Const out = *c;
      out.dims = out_dims;
      out.initializer = c->initializer;
      return Set(node, 0, out);
    }
    if (const RowStat* s = std::get_if<RowStat>(&v)) {
      RowStat out = *s;
      out.dims = out_dims;
      return Set(node, 0, out);
    }
    Act x = std::get<Act>(v);
    Set(node, 0, ReshapeAct(x, out_dims, node));
  }

  // Storage order of the rows must be the ONNX order for a reshape to be a relabelling.
  static bool RowsInOnnxOrder(const Act& x) {
    std::vector<int> sized;
    for (int ax : x.row_axes) if (x.dims[ax] > 1) sized.push_back(ax);
    return std::is_sorted(sized.begin(), sized.end());
  }

  Act ReshapeAct(Act x, const std::vector<int64_t>& out_dims, const OnnxNode& node) {
    const int r = int(x.dims.size());
    auto fail = [&] {
      Fail(node, "reshape " + DimsText(x.dims) + " -> " + DimsText(out_dims) +
                     " mixes the rows and the columns of the 2-D layout (channels-last), which the format cannot express");
    };
    if (!RowsInOnnxOrder(x)) fail();
    Act out = x;
    out.dims = out_dims;
    if (x.part_axes.empty() && x.col_split) {
      // Channel blocks: only reshapes that keep the column axis (flatten after pooling).
      const int64_t c = x.dims[x.col_axis];
      const int64_t before = Product(x.dims, 0, x.col_axis), after = Product(x.dims, x.col_axis + 1);
      for (int j = 0; j < int(out_dims.size()); ++j)
        if (out_dims[j] == c && Product(out_dims, 0, j) == before && Product(out_dims, j + 1) == after) {
          SetChannelsLayout(out, j);
          out.col_split = true;
          return out;
        }
      fail();
    }
    if (x.part_axes.empty() && !x.col_split) {
      const int64_t c = x.col_axis < 0 ? 1 : x.dims[x.col_axis];
      const int64_t before = x.col_axis < 0 ? Product(x.dims) : Product(x.dims, 0, x.col_axis);
      const int64_t after = x.col_axis < 0 ? 1 : Product(x.dims, x.col_axis + 1);
      // The same column axis (same size, same rows before and after it).
      for (int j = 0; j < int(out_dims.size()); ++j)
        if (out_dims[j] == c && Product(out_dims, 0, j) == before && Product(out_dims, j + 1) == after) {
          SetChannelsLayout(out, j);
          return out;
        }
      // Rank 2 of a plain (rows, cols): also fine when the columns stay last.
      // Head split: the column axis becomes (heads, head_dim).
      for (int j = 0; j + 1 < int(out_dims.size()); ++j)
        if (out_dims[j] * out_dims[j + 1] == c && out_dims[j] > 1 && Product(out_dims, 0, j) == before &&
            Product(out_dims, j + 2) == after) {
          Materialized(x);
          const int heads = int(out_dims[j]);
          out.parts = SplitColumns(x.parts[0], heads, node, 0);
          SetChannelsLayout(out, j + 1);
          out.row_axes.erase(std::find(out.row_axes.begin(), out.row_axes.end(), j));
          out.part_axes = {j};
          out.col_split = false;
          return out;
        }
      fail();
    }
    // Heads merged back: a part axis directly before the column axis joins it.
    if (x.part_axes.size() == 1 && x.part_axes[0] + 1 == x.col_axis && !x.col_split) {
      const int p = x.part_axes[0];
      const int64_t merged = x.dims[p] * x.dims[x.col_axis];
      const int64_t before = Product(x.dims, 0, p), after = Product(x.dims, x.col_axis + 1);
      for (int j = 0; j < int(out_dims.size()); ++j)
        if (out_dims[j] == merged && Product(out_dims, 0, j) == before && Product(out_dims, j + 1) == after) {
          SetChannelsLayout(out, j);
          out.col_split = true;
          return out;
        }
    }
    // A reshape that only adds or removes size-1 axes keeps parts and layout.
    std::vector<int64_t> a, b;
    for (int64_t d : x.dims) if (d != 1) a.push_back(d);
    for (int64_t d : out_dims) if (d != 1) b.push_back(d);
    if (a == b) {
      std::vector<int> map(r, -1);  // old axis -> new axis (sized axes only)
      int j = 0;
      for (int i = 0; i < r; ++i) {
        if (x.dims[i] == 1) continue;
        while (out_dims[j] == 1) ++j;
        map[i] = j++;
      }
      out.row_axes.clear();
      out.part_axes.clear();
      std::set<int> used;
      auto remap = [&](int ax) { return map[ax]; };
      if (x.col_axis >= 0 && x.dims[x.col_axis] != 1) out.col_axis = remap(x.col_axis);
      else out.col_axis = int(out_dims.size()) - 1;
      used.insert(out.col_axis);
      for (int ax : x.part_axes) if (map[ax] >= 0) { out.part_axes.push_back(map[ax]); used.insert(map[ax]); }
      for (int ax : x.row_axes) if (map[ax] >= 0) { out.row_axes.push_back(map[ax]); used.insert(map[ax]); }
      for (int i = 0; i < int(out_dims.size()); ++i) if (!used.count(i)) out.row_axes.push_back(i);
      return out;
    }
    fail();
    return out;  // not reached: fail() throws
  }

  void LowerTranspose(const OnnxNode& node) {
    const Value& v = Get(node, 0);
    Attr a{node};
    std::vector<int64_t> in_dims = std::visit([](const auto& x) { return x.dims; }, v);
    std::vector<int64_t> perm = a.Ints("perm");
    const int r = int(in_dims.size());
    if (perm.empty()) for (int i = r - 1; i >= 0; --i) perm.push_back(i);
    if (int(perm.size()) != r) Fail(node, "perm does not match the rank");
    std::vector<int64_t> out_dims;
    std::vector<int> inv(r);
    for (int i = 0; i < r; ++i) {
      if (perm[i] < 0 || perm[i] >= r) Fail(node, "perm out of range");
      out_dims.push_back(in_dims[perm[i]]);
      inv[perm[i]] = i;
    }
    if (const Const* c = std::get_if<Const>(&v)) {
      Const out = *c;
      out.dims = out_dims;
      if (out.values && Product(in_dims) > 1) out.values.reset();  // values not needed transposed
      return Set(node, 0, out);
    }
    if (std::holds_alternative<RowStat>(v)) Fail(node, "transposing a row statistic is not supported");
    Act x = std::get<Act>(v);
    Act out = x;
    out.dims = out_dims;
    if (x.col_axis >= 0) out.col_axis = inv[x.col_axis];
    for (int& ax : out.row_axes) ax = inv[ax];
    for (int& ax : out.part_axes) ax = inv[ax];
    // Rows keep their storage order: a later reshape checks that it is still the ONNX order
    // (RowsInOnnxOrder), since a transpose that reorders sized row axes moves data.
    Set(node, 0, out);
  }

  // ---- normalisation, pooling, reductions -------------------------------------------------
  void LowerNormalization(const OnnxNode& node, double passes) {
    Act x = NeedAct(node, 0);
    Attr a{node};
    const int r = int(x.dims.size());
    if (node.op_type == "Softmax" || node.op_type == "LogSoftmax" || node.op_type == "LayerNormalization") {
      int64_t axis = a.Int("axis", node.op_type == "LayerNormalization" || g_.opset >= 13 ? -1 : 1);
      if (axis < 0) axis += r;
      const bool over_cols = axis == x.col_axis || (node.op_type != "Softmax" && axis == r - 1 && x.col_axis == r - 1);
      if (!over_cols && !(g_.opset < 13 && node.op_type != "LayerNormalization" && axis == r - 1))
        Fail(node, "normalising over axis " + std::to_string(axis) + " that is not the column axis is not supported");
      Note("row-reduction", "softmax and normalisation reduce along each row; as Pointwise ops a tile does not wait for its whole row (no traffic change); elements = those ops' sizes",
           Elems(x));
    }
    if (x.col_split && node.op_type != "BatchNormalization" && node.op_type != "InstanceNormalization")
      Fail(node, "normalising along the channels of a concatenation (or of merged heads) is not supported");
    Act out = x;
    for (TensorId& t : out.parts) t = Pointwise({t}, passes, node, "normalisation");
    Set(node, 0, out);
  }

  void LowerPool(const OnnxNode& node) {
    Attr a{node};
    Act x = NeedAct(node, 0);
    if (x.dims.size() != 4 || x.col_axis != 1) Fail(node, "only 2-D pooling on NCHW is supported");
    std::vector<int64_t> k = a.Ints("kernel_shape"), s = a.Ints("strides"), p = a.Ints("pads"), d = a.Ints("dilations");
    if (k.size() != 2) Fail(node, "kernel_shape must have 2 entries");
    if (s.empty()) s = {1, 1};
    if (p.empty()) p = {0, 0, 0, 0};
    if (d.empty()) d = {1, 1};
    if (s.size() != 2 || d.size() != 2 || p.size() != 4) Fail(node, "strides/dilations/pads do not match a 2-D pooling");
    const int64_t h = x.dims[2], w = x.dims[3];
    const std::string auto_pad = a.Text("auto_pad");
    int64_t ho, wo;
    auto outdim = [&](int64_t in, int64_t pa, int64_t pb, int64_t kk, int64_t st, int64_t dl) {
      const int64_t span = in + pa + pb - dl * (kk - 1) - 1;
      return (a.Int("ceil_mode", 0) ? CeilDiv(span, st) : span / st) + 1;
    };
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      ho = CeilDiv(h, s[0]);
      wo = CeilDiv(w, s[1]);
    } else {
      if (auto_pad == "VALID") p = {0, 0, 0, 0};
      ho = outdim(h, p[0], p[2], k[0], s[0], d[0]);
      wo = outdim(w, p[1], p[3], k[1], s[1], d[1]);
    }
    Act out = x;
    out.dims = {x.dims[0], x.dims[1], ho, wo};
    SetChannelsLayout(out);
    const double passes = double(k[0] * k[1]);
    out.parts.clear();
    for (TensorId part : x.parts)
      out.parts.push_back(ho == h && wo == w ? Pointwise({part}, passes, node, "pooling")
                                             : View(part, x.dims[0] * ho * wo, passes, node, "strided-view", kViewWhat));
    out.col_split = x.col_split;
    Set(node, 0, out);
  }

  // A reduction over the rows (global pooling): a MatMul with a ones row per image; its M·K·N is
  // the reduction's adds, priced at the vector rate and reported apart from the model's MACs.
  void LowerGlobalPool(const OnnxNode& node, const std::set<int>& axes, bool keepdims = true) {
    Act x = NeedAct(node, 0);
    if (x.dims.size() != 4 || x.col_axis != 1 || axes != std::set<int>{2, 3})
      Fail(node, "global pooling is supported over the spatial axes of NCHW only");
    const int64_t n = x.dims[0];
    const TensorId u = NewTensor(n, p_.tensors[x.parts[0]].height, {node.name + "~ones", "view-selector"});
    const Elements spatial = x.dims[2] * x.dims[3];
    Act out;
    out.dims = keepdims ? std::vector<int64_t>{n, x.dims[1], 1, 1} : std::vector<int64_t>{n, x.dims[1]};
    SetChannelsLayout(out, 1);
    for (TensorId part : x.parts) {
      out.parts.push_back(MatMul(u, part, node, "reduction", hw_.pointwise_base * double(CeilDiv(spatial, hw_.native))));
      Note("row-reduction-matmul", "a reduction over rows (global pooling) is a MatMul with a ones row; extra MACs = the adds (reported apart from the model's MACs)",
           0, n * p_.tensors[part].size());
    }
    out.col_split = x.col_split;
    summary_.vector_element_passes += Elems(x);
    Set(node, 0, out);
  }

  void LowerReduce(const OnnxNode& node) {
    Attr a{node};
    const Value& v = Get(node, 0);
    std::vector<int64_t> axes = a.Ints("axes");
    if (axes.empty() && HasInput(node, 1)) axes = NeedInts(node, 1, "the axes");
    const bool keep = a.Int("keepdims", 1) != 0;
    if (const Const* c = std::get_if<Const>(&v)) {
      Const out = *c;
      out.values.reset();
      return Set(node, 0, out);
    }
    if (std::holds_alternative<RowStat>(v)) Fail(node, "a reduction of a row statistic is not supported");
    Act x = NeedAct(node, 0);
    const int r = int(x.dims.size());
    std::set<int> ax;
    for (int64_t i : axes) ax.insert(int(i < 0 ? i + r : i));
    if (axes.empty()) for (int i = 0; i < r; ++i) ax.insert(i);
    if (ax == std::set<int>{2, 3} && r == 4 && x.col_axis == 1 && x.part_axes.empty())
      return LowerGlobalPool(node, ax, keep);
    if (ax == std::set<int>{x.col_axis} && keep && x.parts.size() == 1) {
      Materialized(x);
      RowStat s;
      s.like = x;
      s.dims = x.dims;
      s.dims[x.col_axis] = 1;
      s.sources = {x.parts[0]};
      s.passes = 1;
      Note("row-reduction", "softmax and normalisation reduce along each row; as Pointwise ops a tile does not wait for its whole row (no traffic change); elements = those ops' sizes",
           Elems(x));
      return Set(node, 0, s);
    }
    Fail(node, "reduction over axes " + DimsText(axes) + " of " + DimsText(x.dims) +
                   " is not supported (supported: the column axis with keepdims, or the spatial axes of NCHW)");
  }

  // ---- elementwise --------------------------------------------------------------------------
  static std::vector<int64_t> Broadcast(std::vector<int64_t> a, std::vector<int64_t> b, bool& ok) {
    ok = true;
    if (a.size() < b.size()) std::swap(a, b);
    std::vector<int64_t> out = a;
    const size_t off = a.size() - b.size();
    for (size_t i = 0; i < b.size(); ++i) {
      int64_t x = a[off + i], y = b[i];
      if (x == y || y == 1) out[off + i] = x;
      else if (x == 1) out[off + i] = y;
      else ok = false;
    }
    return out;
  }

  std::optional<std::vector<double>> FoldBinary(const std::string& op, const Const& a, const Const& b,
                                                const std::vector<int64_t>& out) {
    if (!a.values || !b.values) return std::nullopt;
    const int64_t n = Product(out);
    if (n > kMaxConstantElements) return std::nullopt;
    auto at = [&](const Const& c, int64_t idx) {
      // Broadcast index: walk the output index into c's dims (right-aligned).
      int64_t rem = idx, pos = 0, stride = 1;
      std::vector<int64_t> oi(out.size());
      for (int i = int(out.size()) - 1; i >= 0; --i) { oi[i] = rem % out[i]; rem /= out[i]; }
      const size_t off = out.size() - c.dims.size();
      for (int i = int(c.dims.size()) - 1; i >= 0; --i) {
        const int64_t d = c.dims[i];
        pos += (d == 1 ? 0 : oi[off + i]) * stride;
        stride *= d;
      }
      return (*c.values)[pos];
    };
    std::vector<double> v(n);
    for (int64_t i = 0; i < n; ++i) {
      const double x = at(a, i), y = at(b, i);
      double r;
      if (op == "Add") r = x + y;
      else if (op == "Sub") r = x - y;
      else if (op == "Mul") r = x * y;
      else if (op == "Div") r = (a.is_float || b.is_float) ? x / y : (y == 0 ? 0 : std::floor(x / y));
      else if (op == "Equal") r = x == y;
      else if (op == "Less") r = x < y;
      else if (op == "Greater") r = x > y;
      else if (op == "Max") r = std::max(x, y);
      else if (op == "Min") r = std::min(x, y);
      else if (op == "Pow") r = std::pow(x, y);
      else if (op == "And") r = x != 0 && y != 0;
      else if (op == "Or") r = x != 0 || y != 0;
      else if (op == "Mod") r = y == 0 ? 0 : std::fmod(x, y);
      else return std::nullopt;
      v[i] = r;
    }
    return v;
  }

  void LowerElementwise(const OnnxNode& node) {
    const std::string& op = node.op_type;
    const double passes = std::max(ElementwisePasses(op), 1.0);
    std::vector<const Value*> ins;
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (HasInput(node, i)) ins.push_back(&Get(node, i));
    if (ins.empty()) Fail(node, "no inputs");
    // Where(cond, x, y): the data operands decide.
    std::vector<const Value*> data = ins;
    if (op == "Where" && ins.size() == 3) data = {ins[1], ins[2]};
    if (op == "Clip" && ins.size() > 1) data = {ins[0]};  // min/max operands are constants
    bool any_act = false, any_stat = false;
    for (const Value* v : data) {
      any_act |= std::holds_alternative<Act>(*v);
      any_stat |= std::holds_alternative<RowStat>(*v);
    }
    if (!any_act && !any_stat) {
      // Constant folding (shape arithmetic and scalars).
      Const out;
      bool ok = true;
      out.dims = std::get<Const>(*data[0]).dims;
      for (size_t i = 1; i < data.size(); ++i) out.dims = Broadcast(out.dims, std::get<Const>(*data[i]).dims, ok);
      if (!ok) Fail(node, "operand shapes do not broadcast");
      out.is_float = std::any_of(data.begin(), data.end(), [](const Value* v) { return std::get<Const>(*v).is_float; });
      if (op == "Where" && ins.size() == 3) {
        const Const& c = std::get<Const>(*ins[0]);
        const Const& x = std::get<Const>(*ins[1]);
        const Const& y = std::get<Const>(*ins[2]);
        if (c.values && x.values && y.values && Product(out.dims) <= kMaxConstantElements) {
          Const one{{}, std::vector<double>{1}, false, false, ""};
          auto cx = FoldBinary("Mul", c, x, out.dims);
          Const nc = c;
          for (double& d : *nc.values) d = d != 0 ? 0 : 1;
          auto cy = FoldBinary("Mul", nc, y, out.dims);
          if (cx && cy) {
            out.values = std::vector<double>(cx->size());
            for (size_t i = 0; i < cx->size(); ++i) (*out.values)[i] = (*cx)[i] + (*cy)[i];
          }
        }
      } else if (data.size() == 2) {
        out.values = FoldBinary(op, std::get<Const>(*data[0]), std::get<Const>(*data[1]), out.dims);
      } else if (data.size() == 1 && std::get<Const>(*data[0]).values) {
        std::vector<double> v = *std::get<Const>(*data[0]).values;
        bool known = true;
        for (double& d : v) {
          if (op == "Neg") d = -d;
          else if (op == "Abs") d = std::fabs(d);
          else if (op == "Sqrt") d = std::sqrt(d);
          else if (op == "Floor") d = std::floor(d);
          else if (op == "Ceil") d = std::ceil(d);
          else if (op == "Not") d = d == 0;
          else if (op == "Reciprocal") d = 1 / d;
          else if (op == "Relu") d = std::max(d, 0.0);
          else known = false;
        }
        if (known) out.values = v;
      }
      return Set(node, 0, out);
    }
    if (!any_act) {
      // Row statistics combined with constants (eps, sqrt): still a statistic, more passes.
      RowStat s;
      bool first = true;
      for (const Value* v : data)
        if (const RowStat* r = std::get_if<RowStat>(v)) {
          if (first) s = *r;
          else for (TensorId t : r->sources) if (std::find(s.sources.begin(), s.sources.end(), t) == s.sources.end()) s.sources.push_back(t);
          if (!first) s.passes += r->passes;
          first = false;
        }
      s.passes += passes;
      return Set(node, 0, s);
    }
    // An activation result: all activation operands share one shape and layout.
    const Act* lead = nullptr;
    for (const Value* v : data)
      if (const Act* a = std::get_if<Act>(v)) {
        if (!lead || Elems(*a) > Elems(*lead)) lead = a;
      }
    Act out = *lead;
    if (out.model_input) Materialized(out);
    double total_passes = passes;
    std::vector<std::vector<TensorId>> part_inputs(out.parts.size());
    for (size_t vi = 0; vi < data.size(); ++vi) {
      const Value* v = data[vi];
      if (const Act* a = std::get_if<Act>(v)) {
        Act act = *a;
        if (act.model_input) Materialized(act);
        if (act.dims != out.dims && Product(act.dims) == Elems(out) && act.parts.size() == out.parts.size() &&
            SameShapes(act, out)) {
          // The same 2-D tensors; the N-D shapes differ only by size-1 axes.
        } else if (act.dims != out.dims && act.parts.size() == 1 && p_.tensors[act.parts[0]].height == 1 &&
                   p_.tensors[out.parts[0]].height > 1 && !out.col_split &&
                   p_.tensors[act.parts[0]].width == p_.tensors[out.parts[0]].width && act.dims.size() <= out.dims.size()) {
          // A computed row vector broadcast over the rows (squeeze-excitation scales, an
          // attention mask): written to the output's rows by a ones-MatMul (K = 1), shared by
          // every part.
          const Elements rows = p_.tensors[out.parts[0]].height;
          const TensorId ones = NewTensor(rows, 1, {node.name + "~broadcast", "view-selector"});
          const TensorId wide = MatMul(ones, act.parts[0], node, "view-write", hw_.pointwise_base);
          Note("row-broadcast", "a computed row vector broadcast over an activation's rows is written by a ones-MatMul (K = 1); traffic = the broadcast tensor, data-movement MACs = its size",
               p_.tensors[wide].size(), p_.tensors[wide].size());
          for (size_t p = 0; p < out.parts.size(); ++p) part_inputs[p].push_back(wide);
          continue;
        } else if (act.dims != out.dims || act.parts.size() != out.parts.size() || act.col_split != out.col_split ||
                   !SameWidths(act, out)) {
          Fail(node, "operands of different shapes " + DimsText(act.dims) + " and " + DimsText(out.dims) +
                         " (a broadcast of a computed value) are not supported");
        }
        for (size_t p = 0; p < out.parts.size(); ++p) part_inputs[p].push_back(act.parts[p]);
      } else if (const RowStat* s = std::get_if<RowStat>(v)) {
        if (out.parts.size() != 1) Fail(node, "row statistics of split heads are not supported");
        for (TensorId t : s->sources) part_inputs[0].push_back(t);
        total_passes += s->passes;
      } else {
        const Const& c = std::get<Const>(*v);
        if (c.initializer && c.is_float && Product(c.dims) == Elems(out) && out.parts.size() == 1 && Product(c.dims) > 1) {
          // A full-size parameter (position embedding): a weight tensor of the activation's shape.
          const auto [rows, cols] = PartShape(out);
          part_inputs[0].push_back(Weight(c.name, rows, cols));
        } else {
          NoteBroadcast(c);
        }
      }
    }
    for (size_t p = 0; p < out.parts.size(); ++p) {
      if (part_inputs[p].empty()) Fail(node, "internal: no tensor operand");
      out.parts[p] = Pointwise(part_inputs[p], total_passes, node, "elementwise");
    }
    Set(node, 0, out);
  }

  // ---- concat, gather, slice, split ---------------------------------------------------------
  // Resize/Upsample (scales or sizes) and Pad change the rows of an NCHW activation: a view
  // per channel block, priced by the interpolation's passes.
  void LowerResample(const OnnxNode& node) {
    Attr a{node};
    Act x = NeedAct(node, 0);
    if (x.dims.size() != 4 || x.col_axis != 1 || !x.part_axes.empty())
      Fail(node, "only the spatial axes of an NCHW activation can be resized or padded");
    std::vector<int64_t> out_dims = x.dims;
    double passes = 1;
    if (node.op_type == "Pad") {
      std::vector<int64_t> pads = a.Ints("pads");
      if (pads.empty() && HasInput(node, 1)) pads = NeedInts(node, 1, "the pads");
      if (pads.size() != 8) Fail(node, "pads must have 8 entries for a 4-D input");
      for (int i = 0; i < 4; ++i) {
        if ((i < 2) && (pads[i] != 0 || pads[i + 4] != 0)) Fail(node, "padding the batch or channel axis is not supported");
        if (pads[i] < 0 || pads[i + 4] < 0 || pads[i] > (1 << 20) || pads[i + 4] > (1 << 20)) Fail(node, "pads must be in 0..2^20");
        out_dims[i] += pads[i] + pads[i + 4];
      }
    } else {
      const std::string mode = a.Text("mode");
      passes = mode == "linear" || mode == "bilinear" ? 4 : mode == "cubic" ? 16 : 1;
      std::vector<double> scales;
      std::vector<int64_t> sizes;
      const size_t scales_input = node.op_type == "Upsample" ? 1 : (g_.opset <= 10 ? 1 : 2);
      if (node.op_type == "Upsample" && a.Has("scales")) scales = node.attributes.at("scales").floats;
      if (scales.empty() && HasInput(node, scales_input)) {
        const Const& c = NeedConst(node, scales_input, "the scales");
        if (c.values && !c.values->empty()) scales = *c.values;
      }
      if (scales.empty() && HasInput(node, 3)) sizes = NeedInts(node, 3, "the sizes");
      if (!sizes.empty()) {
        if (sizes.size() != 4) Fail(node, "sizes must have 4 entries");
        out_dims = sizes;
      } else {
        if (scales.size() != 4) Fail(node, "the scales (or sizes) must be known at import time, 4 entries");
        for (int i = 0; i < 4; ++i) {
          if (!(scales[i] > 0) || scales[i] > 1024) Fail(node, "scales must be positive and at most 1024");
          out_dims[i] = static_cast<int64_t>(std::floor(double(x.dims[i]) * scales[i]));
        }
      }
      if (out_dims[0] != x.dims[0] || out_dims[1] != x.dims[1]) Fail(node, "resizing the batch or channel axis is not supported");
      for (int64_t d : out_dims) if (d <= 0 || d > (1 << 20)) Fail(node, "the output dims " + DimsText(out_dims) + " are out of range");
    }
    Act out = x;
    out.dims = out_dims;
    out.parts.clear();
    const Elements rows = out_dims[0] * out_dims[2] * out_dims[3];
    for (TensorId part : x.parts)
      out.parts.push_back(out_dims == x.dims ? part : View(part, rows, passes, node, "strided-view", kViewWhat));
    Set(node, 0, out);
  }

  void LowerConcat(const OnnxNode& node) {
    Attr a{node};
    std::vector<const Value*> ins;
    for (size_t i = 0; i < node.inputs.size(); ++i) if (HasInput(node, i)) ins.push_back(&Get(node, i));
    if (ins.empty()) Fail(node, "no inputs");
    const int r = int(std::visit([](const auto& x) { return x.dims.size(); }, *ins[0]));
    int64_t axis = a.Int("axis", 0);
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) Fail(node, "axis " + std::to_string(a.Int("axis", 0)) + " is out of range for rank " + std::to_string(r));
    std::vector<int64_t> out_dims = std::visit([](const auto& x) { return x.dims; }, *ins[0]);
    out_dims[axis] = 0;
    const Act* act = nullptr;
    int acts = 0;
    bool all_const_values = true;
    for (const Value* v : ins) {
      std::vector<int64_t> d = std::visit([](const auto& x) { return x.dims; }, *v);
      if (int(d.size()) != r) Fail(node, "inputs of different ranks");
      for (int i = 0; i < r; ++i)
        if (i != axis && d[i] != out_dims[i]) Fail(node, "inputs " + DimsText(out_dims) + " and " + DimsText(d) + " differ outside axis " + std::to_string(axis));
      out_dims[axis] += d[axis];
      if (const Act* x = std::get_if<Act>(v)) { act = x; ++acts; }
      if (std::holds_alternative<RowStat>(*v)) Fail(node, "concatenating a row statistic is not supported");
      if (const Const* c = std::get_if<Const>(v)) all_const_values &= c->values.has_value();
    }
    if (acts == 0) {
      Const out;
      out.dims = out_dims;
      if (all_const_values && r == 1) {
        std::vector<double> v;
        for (const Value* x : ins) for (double d : *std::get<Const>(*x).values) v.push_back(d);
        out.values = v;
      }
      out.is_float = std::get<Const>(*ins[0]).is_float;
      return Set(node, 0, out);
    }
    if (axis == act->col_axis && act->part_axes.empty()) {
      // Along the channels: the blocks stay separate tensors (col_split); their consumers work
      // blockwise (a MatMul or convolution multiplies each block by its rows of the weight).
      Act out = *act;
      out.dims = out_dims;
      out.parts.clear();
      for (const Value* v : ins) {
        const Act* x = std::get_if<Act>(v);
        if (!x) Fail(node, "a constant among the channels of a concatenation is not supported");
        Act block = *x;
        if (block.model_input) Materialized(block);
        if (block.col_axis != axis || !block.part_axes.empty() || block.row_axes != act->row_axes)
          Fail(node, "concatenated activations of different layouts are not supported");
        for (int i = 0; i < r; ++i)
          if (i != axis && block.dims[i] != out_dims[i])
            Fail(node, "inputs " + DimsText(act->dims) + " and " + DimsText(block.dims) + " differ outside axis " + std::to_string(axis));
        for (TensorId t : block.parts) out.parts.push_back(t);
      }
      out.col_split = out.parts.size() > 1;
      return Set(node, 0, out);
    }
    if (acts > 1) Fail(node, "concatenating several computed activations along rows is not supported (one activation and constants only)");
    Act x = *act;
    Materialized(x);
    if (!x.part_axes.empty() || x.col_split)
      Fail(node, "concatenating rows of split heads or of channel blocks is not supported");
    Act out = x;
    out.dims = out_dims;
    const auto [rows, cols] = PartShape(out);
    for (const Value* v : ins)
      if (const Const* c = std::get_if<Const>(v)) NoteBroadcast(*c);
    out.parts = {View(x.parts[0], rows, 1, node, "row-concat-view",
                      "rows concatenated with constants (a class token) are a view written by two ones-MatMuls; elements = view size, extra MACs = source + view")};
    (void)cols;
    Set(node, 0, out);
  }

  void LowerGather(const OnnxNode& node) {
    Attr a{node};
    const Value& v = Get(node, 0);
    if (const Const* table = std::get_if<Const>(&v); table && table->is_float && table->dims.size() == 2 &&
                                                     std::holds_alternative<Act>(Get(node, 1))) {
      // An embedding lookup with the model's token ids: the rows are read from the table in
      // slow memory, like a model input (the table's parameters count).
      const Act& ids = std::get<Act>(Get(node, 1));
      if (a.Int("axis", 0) != 0) Fail(node, "an embedding lookup along axis 1 is not supported");
      if (!ids.model_input) Fail(node, "looking up rows with indices computed by the model is not supported");
      Act out;
      out.dims = ids.dims;
      out.dims.push_back(table->dims[1]);
      out.model_input = true;
      out.name = node.outputs.empty() ? node.name : node.outputs[0];
      SetChannelsLayout(out, int(out.dims.size()) - 1);
      return Set(node, 0, out);
    }
    const Const& idx = NeedConst(node, 1, "the indices");
    const int r = int(std::visit([](const auto& x) { return x.dims.size(); }, v));
    int64_t axis = a.Int("axis", 0);
    if (axis < 0) axis += r;
    std::vector<int64_t> in_dims = std::visit([](const auto& x) { return x.dims; }, v);
    std::vector<int64_t> out_dims;
    for (int i = 0; i < r; ++i) {
      if (i == axis) for (int64_t d : idx.dims) out_dims.push_back(d);
      else out_dims.push_back(in_dims[i]);
    }
    if (const Const* c = std::get_if<Const>(&v)) {
      Const out;
      out.dims = out_dims;
      out.is_float = c->is_float;
      if (c->values && idx.values && r == 1) {
        std::vector<double> vals;
        for (double i : *idx.values) {
          int64_t k = int64_t(i);
          if (k < 0) k += in_dims[0];
          if (k < 0 || k >= in_dims[0]) Fail(node, "index out of range");
          vals.push_back((*c->values)[k]);
        }
        out.values = vals;
      }
      return Set(node, 0, out);
    }
    Act x = NeedAct(node, 0);
    if (axis == x.col_axis || !x.part_axes.empty() || x.col_split)
      Fail(node, "gathering along the column axis of an activation (an embedding lookup of a computed value) is not supported");
    Act out = x;
    out.dims = out_dims;
    // The gathered axis is replaced by the index dims (rows); recompute the layout positions.
    out.row_axes.clear();
    int col = x.col_axis > axis ? x.col_axis - 1 + int(idx.dims.size()) : x.col_axis;
    SetChannelsLayout(out, col);
    SetRowView(node, x, std::move(out));
  }

  // Rows gathered or sliced from a single-tensor activation (the class token): a view with the
  // output's rows.
  void SetRowView(const OnnxNode& node, const Act& x, Act out) {
    if (x.parts.size() != 1) Fail(node, "taking rows of split heads or of channel blocks is not supported");
    out.parts = {View(x.parts[0], PartShape(out).first, 0, node, "row-gather-view",
                      "rows gathered from an activation (the class token) are read by a ones-MatMul; extra MACs = the source")};
    Set(node, 0, out);
  }

  void LowerSlice(const OnnxNode& node) {
    const Value& v = Get(node, 0);
    std::vector<int64_t> in_dims = std::visit([](const auto& x) { return x.dims; }, v);
    const int r = int(in_dims.size());
    std::vector<int64_t> starts, ends, axes, steps;
    Attr a{node};
    if (g_.opset < 10) {
      starts = a.Ints("starts");
      ends = a.Ints("ends");
      axes = a.Ints("axes");
    } else {
      starts = NeedInts(node, 1, "starts");
      ends = NeedInts(node, 2, "ends");
      if (HasInput(node, 3)) axes = NeedInts(node, 3, "axes");
      if (HasInput(node, 4)) steps = NeedInts(node, 4, "steps");
    }
    if (axes.empty()) for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    std::vector<int64_t> out_dims = in_dims;
    std::vector<std::array<int64_t, 3>> ranges(r);
    for (int i = 0; i < r; ++i) ranges[i] = {0, in_dims[i], 1};
    for (size_t i = 0; i < starts.size(); ++i) {
      int64_t ax = axes[i] < 0 ? axes[i] + r : axes[i];
      if (ax < 0 || ax >= r || steps[i] == 0) Fail(node, "bad axes or steps");
      const int64_t d = in_dims[ax];
      auto clampi = [&](int64_t x, int64_t lo, int64_t hi) { if (x < 0) x += d; return std::clamp(x, lo, hi); };
      int64_t s, e;
      if (steps[i] > 0) { s = clampi(starts[i], 0, d); e = clampi(ends[i], 0, d); out_dims[ax] = std::max<int64_t>(0, CeilDiv(e - s, steps[i])); }
      else { s = clampi(starts[i], -1, d - 1); e = clampi(ends[i], -1, d - 1); out_dims[ax] = std::max<int64_t>(0, CeilDiv(s - e, -steps[i])); }
      ranges[ax] = {s, e, steps[i]};
    }
    if (const Const* c = std::get_if<Const>(&v)) {
      Const out;
      out.dims = out_dims;
      out.is_float = c->is_float;
      if (c->values && r == 1) {
        std::vector<double> vals;
        for (int64_t k = ranges[0][0]; ranges[0][2] > 0 ? k < ranges[0][1] : k > ranges[0][1]; k += ranges[0][2]) vals.push_back((*c->values)[k]);
        out.values = vals;
      }
      return Set(node, 0, out);
    }
    Act x = NeedAct(node, 0);
    if (out_dims == in_dims) return Set(node, 0, x);
    for (int i = 0; i < r; ++i)
      if (out_dims[i] != in_dims[i] && i == x.col_axis)
        Fail(node, "slicing the column axis of an activation is not supported unless it splits a projection into equal parts (use Split)");
    Act out = x;
    out.dims = out_dims;
    SetRowView(node, x, std::move(out));
  }

  void LowerSplit(const OnnxNode& node) {
    Attr a{node};
    Act x = NeedAct(node, 0);
    const int r = int(x.dims.size());
    int64_t axis = a.Int("axis", 0);
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) Fail(node, "axis " + std::to_string(a.Int("axis", 0)) + " is out of range for rank " + std::to_string(r));
    std::vector<int64_t> split = a.Ints("split");
    if (split.empty() && HasInput(node, 1)) split = NeedInts(node, 1, "split");
    const int parts = int(node.outputs.size());
    if (split.empty()) split.assign(parts, x.dims[axis] / parts);
    if (int(split.size()) != parts) Fail(node, "split has " + std::to_string(split.size()) + " sizes for " + std::to_string(parts) + " outputs");
    if (axis == x.col_axis && x.col_split) {
      // Channel blocks split at block boundaries: each output takes its blocks.
      size_t b = 0;
      for (int i = 0; i < parts; ++i) {
        Act out = x;
        out.dims[axis] = split[i];
        out.parts.clear();
        Elements width = 0;
        while (width < split[i] && b < x.parts.size()) width += p_.tensors[x.parts[b]].width, out.parts.push_back(x.parts[b++]);
        if (width != split[i]) Fail(node, "a split of a concatenation must fall on the concatenated blocks");
        out.col_split = out.parts.size() > 1;
        Set(node, size_t(i), out);
      }
      return;
    }
    for (int64_t s : split)
      if (s != split[0]) Fail(node, "unequal splits are not supported");
    if (axis != x.col_axis || !x.part_axes.empty() || x.col_split)
      Fail(node, "only a split of the column axis (a fused projection into Q, K, V) is supported");
    if (x.model_input) Fail(node, "splitting a model input is not supported");
    std::vector<TensorId> pieces = SplitColumns(x.parts[0], parts, node, 0);
    for (int i = 0; i < parts; ++i) {
      Act out = x;
      out.dims[axis] = split[i];
      out.parts = {pieces[i]};
      Set(node, size_t(i), out);
    }
  }

  void LowerConstantOfShape(const OnnxNode& node) {
    std::vector<int64_t> shape = NeedInts(node, 0, "the shape");
    Const out;
    out.dims = shape;
    double fill = 0;
    auto it = node.attributes.find("value");
    if (it != node.attributes.end() && it->second.tensor_values && !it->second.tensor_values->empty()) fill = (*it->second.tensor_values)[0];
    if (Product(shape) <= kMaxConstantElements) out.values = std::vector<double>(size_t(Product(shape)), fill);
    Set(node, 0, out);
  }
  void LowerRange(const OnnxNode& node) {
    const double s = double(NeedInts(node, 0, "start").at(0)), l = double(NeedInts(node, 1, "limit").at(0)),
                 d = double(NeedInts(node, 2, "delta").at(0));
    if (d == 0) Fail(node, "delta 0");
    Const out;
    std::vector<double> v;
    for (double x = s; d > 0 ? x < l : x > l; x += d) {
      v.push_back(x);
      if (v.size() > size_t(kMaxConstantElements)) break;
    }
    out.dims = {int64_t(v.size())};
    out.values = v;
    Set(node, 0, out);
  }
  void LowerExpand(const OnnxNode& node) {
    const Value& v = Get(node, 0);
    std::vector<int64_t> shape = NeedInts(node, 1, "the shape");
    std::vector<int64_t> d = std::visit([](const auto& x) { return x.dims; }, v);
    bool ok = true;
    std::vector<int64_t> out_dims = Broadcast(d, shape, ok);
    if (!ok) Fail(node, "shapes do not broadcast");
    if (const Const* c = std::get_if<Const>(&v)) {
      Const out = *c;
      out.dims = out_dims;
      Const shape_c{out_dims, std::nullopt, false, false, ""};
      Const ones{{}, std::vector<double>{1}, false, false, ""};
      ones.dims = {};
      out.values = FoldBinary("Mul", *c, ones, out_dims);
      return Set(node, 0, out);
    }
    Act x = NeedAct(node, 0);
    if (Product(out_dims) != Elems(x)) Fail(node, "expanding a computed activation is not supported");
    Set(node, 0, ReshapeAct(x, out_dims, node));
  }

  // ---- the end ------------------------------------------------------------------------------
  LoweredModel Finish() {
    LoweredModel m;
    // Keep the live ops in their order; keep the tensors they use; renumber.
    std::vector<TensorId> remap(p_.tensors.size(), -1);
    Problem& q = m.problem;
    q.fast_memory_capacity = hw_.capacity;
    q.slow_memory_bandwidth = hw_.bandwidth;
    q.native = hw_.native;
    auto keep = [&](TensorId t) {
      if (remap[t] < 0) {
        remap[t] = TensorId(q.tensors.size());
        q.tensors.push_back(p_.tensors[t]);
        m.tensor_origins.push_back(tensor_origins_[t]);
      }
      return remap[t];
    };
    for (size_t o = 0; o < p_.ops.size(); ++o) {
      if (!alive_[o]) continue;
      Op op = p_.ops[o];
      for (TensorId& t : op.inputs) t = keep(t);
      op.output = keep(op.output);
      q.ops.push_back(op);
      m.op_origins.push_back(op_origins_[o]);
    }
    if (q.ops.empty()) throw InputError(g_.origin, "", "the model has no compute to schedule (no op lowers to a MatMul or Pointwise op)");
    const std::string err = q.Finalize();
    if (!err.empty()) throw InputError(g_.origin, "", "internal lowering error: " + err);
    for (size_t t = 0; t < q.tensors.size(); ++t) {
      summary_.problem_tensor_elements += q.tensors[t].size();
      if (m.tensor_origins[t].role == "weight") summary_.params_in_tensors += q.tensors[t].size();
    }
    for (size_t o = 0; o < q.ops.size(); ++o) {
      ++summary_.problem_ops[m.op_origins[o].role];
      (q.ops[o].kind == OpKind::MatMul ? summary_.matmul_ops : summary_.pointwise_ops)++;
    }
    summary_.approximations = approximations_;
    summary_.hardware = hw_;
    m.summary = summary_;
    return m;
  }

  const OnnxGraph& g_;
  LoweringHardware hw_;
  std::map<std::string, Value> values_;
  Problem p_;
  std::vector<bool> alive_;
  std::vector<OpId> producer_;
  std::vector<OpOrigin> op_origins_;
  std::vector<TensorOrigin> tensor_origins_;
  std::map<std::string, TensorId> weights_;
  std::vector<Approximation> approximations_;
  ImportSummary summary_;
};

}  // namespace

LoweredModel LowerOnnxGraph(const OnnxGraph& graph, const LoweringHardware& hardware) {
  if (hardware.native <= 0 || hardware.capacity <= 0 || !(hardware.bandwidth > 0))
    throw InputError("hardware", "", "capacity, bandwidth and native size must be positive");
  return Lowering(graph, hardware).Run();
}

std::string ImportSummaryText(const ImportSummary& s) {
  std::ostringstream out;
  auto num = [](double v) { return Grouped(v); };
  out << "ONNX ops:";
  for (const auto& [k, v] : s.onnx_ops) out << " " << k << " " << v << ",";
  out.seekp(-1, std::ios_base::end);
  out << "\nproblem ops: " << s.matmul_ops << " MatMul, " << s.pointwise_ops << " Pointwise (";
  bool first = true;
  for (const auto& [k, v] : s.problem_ops) { out << (first ? "" : ", ") << k << " " << v; first = false; }
  out << ")\n";
  out << "MACs (Conv/Gemm/MatMul): " << num(double(s.macs)) << "\n";
  if (s.depthwise_macs) out << "depthwise MACs (vector work): " << num(double(s.depthwise_macs)) << "\n";
  out << "vector work: " << num(double(s.vector_element_passes)) << " element-passes\n";
  out << "parameters: " << num(double(s.params)) << " (" << num(double(s.params_in_tensors)) << " in weight tensors of the problem";
  if (s.weight_inputs) out << "; " << s.weight_inputs << " graph inputs read only as weights count as parameters";
  out << ")\n";
  out << "largest activation: " << num(double(s.largest_activation)) << " elements (" << s.largest_activation_name << ")\n";
  const LoweringHardware& h = s.hardware;
  out << "hardware: capacity " << num(double(h.capacity)) << " elements, bandwidth " << Readable(h.bandwidth)
      << " elements/cycle, native " << h.native << ", MatMul base " << Readable(h.matmul_base)
      << " per native tile and " << h.native << " of K, Pointwise base " << Readable(h.pointwise_base) << " per pass\n";
  if (s.approximations.empty()) {
    out << "approximations: none\n";
  } else {
    out << "approximations:\n";
    for (const Approximation& a : s.approximations) {
      out << "  " << a.rule << " x" << a.count << ": ";
      if (!a.traffic) out << "elements affected " << num(double(a.elements));
      else if (a.elements != 0) out << (a.elements > 0 ? "traffic added " : "traffic not charged ") << num(double(std::llabs(a.elements))) << " elements";
      else out << "no traffic change";
      if (a.extra_macs) out << ", data-movement MACs " << num(double(a.extra_macs));
      out << "\n    " << a.what << "\n";
    }
  }
  return out.str();
}

std::string ImportSummaryJson(const ImportSummary& s) {
  std::ostringstream out;
  out << "{\"onnx_ops\": {";
  bool first = true;
  for (const auto& [k, v] : s.onnx_ops) { out << (first ? "" : ", ") << JsonString(k) << ": " << v; first = false; }
  out << "}, \"problem_ops\": {";
  first = true;
  for (const auto& [k, v] : s.problem_ops) { out << (first ? "" : ", ") << JsonString(k) << ": " << v; first = false; }
  out << "}, \"matmul_ops\": " << s.matmul_ops << ", \"pointwise_ops\": " << s.pointwise_ops << ", \"macs\": " << s.macs
      << ", \"depthwise_macs\": " << s.depthwise_macs << ", \"vector_element_passes\": " << s.vector_element_passes
      << ", \"params\": " << s.params << ", \"params_in_tensors\": " << s.params_in_tensors
      << ", \"weight_inputs\": " << s.weight_inputs
      << ", \"largest_activation\": " << s.largest_activation << ", \"largest_activation_name\": " << JsonString(s.largest_activation_name)
      << ", \"hardware\": {\"capacity\": " << s.hardware.capacity << ", \"bandwidth\": " << Readable(s.hardware.bandwidth)
      << ", \"native\": " << s.hardware.native << ", \"matmul_base\": " << Readable(s.hardware.matmul_base)
      << ", \"pointwise_base\": " << Readable(s.hardware.pointwise_base) << "}, \"approximations\": [";
  for (size_t i = 0; i < s.approximations.size(); ++i) {
    const Approximation& a = s.approximations[i];
    out << (i ? ", " : "") << "{\"rule\": " << JsonString(a.rule) << ", \"count\": " << a.count << ", \"elements\": " << a.elements
        << ", \"elements_are_traffic\": " << (a.traffic ? "true" : "false") << ", \"extra_macs\": " << a.extra_macs << ", \"what\": " << JsonString(a.what) << "}";
  }
  out << "]}\n";
  return out.str();
}

}  // namespace annealer
