// Values known at import time and pass-throughs: Constant, Shape, Size, ConstantOfShape, Range;
// Identity, Dropout and the casts bind their output to their input.
#include <algorithm>

#include "src/import/lowering/registry.h"

namespace annealer::lowering {
namespace {

// Identity, Dropout (inference), Cast, CastLike: the output is the input.
void LowerPass(Context& cx, const OnnxNode& node) {
  Value v = cx.Get(node, 0);
  cx.Set(node, 0, std::move(v));
  if (node.op_type == "Dropout" && node.outputs.size() > 1 && !node.outputs[1].empty()) {
    // The mask output: unused at inference.
    cx.Bind(node.outputs[1], Const{DimsOf(cx.Get(node, 0)), std::nullopt, false, false, node.outputs[1]});
  }
}

// A training-mode Dropout drops elements: one Pointwise op of 2 passes (a random draw compared
// with the ratio; the select and the 1/(1-ratio) scale), the random generator's work priced as
// one pass. From opset 12 the mode is input 2 (`training_mode`; one the model computes counts as
// training) and the ratio input 1 (0.5 by default); before, the mode is the runtime's, and
// torch's TrainingMode.TRAINING export is the one that asks for the mask (output 1): its
// inference export leaves no Dropout. A ratio of 0, or inference, is the identity.
void LowerDropout(Context& cx, const OnnxNode& node) {
  auto known = [&](size_t i) -> std::optional<double> {
    if (!cx.HasInput(node, i)) return std::nullopt;
    const Const* c = cx.GetConst(node, i);
    if (c && c->values && c->values->size() == 1) return (*c->values)[0];
    return c ? std::nullopt : std::optional<double>(1.0);  // computed: training
  };
  const bool mask = node.outputs.size() > 1 && !node.outputs[1].empty();
  const std::optional<double> mode = cx.opset() >= 12 ? known(2) : std::optional<double>(mask ? 1 : 0);
  const std::optional<double> ratio = cx.opset() >= 12 ? known(1) : std::optional<double>(Attr{node}.Float("ratio", 0.5));
  if (!mode || *mode == 0 || (ratio && *ratio == 0) || !std::holds_alternative<Act>(cx.Get(node, 0)))
    return LowerPass(cx, node);
  Act out = cx.NeedAct(node, 0);
  cx.problem().Note("training-dropout",
                    "a training-mode Dropout is one Pointwise op of 2 passes (the random draw compared with the ratio, "
                    "the select and scale): the random generator's work is priced as one pass; elements = those ops' sizes",
                    Elems(out));
  for (TensorId& t : out.parts) t = cx.problem().Pointwise({t}, 2, node, "elementwise");
  const std::vector<int64_t> dims = out.dims;
  cx.Set(node, 0, std::move(out));
  if (node.outputs.size() > 1 && !node.outputs[1].empty())
    cx.Bind(node.outputs[1], Const{dims, std::nullopt, false, false, node.outputs[1]});
}

void LowerConstant(Context& cx, const OnnxNode& node) {
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
    cx.Fail(node, "Constant without a value attribute this importer reads (value, value_float(s), value_int(s))");
  }
  cx.Set(node, 0, c);
}

void LowerShape(Context& cx, const OnnxNode& node) {
  std::vector<int64_t> d = DimsOf(cx.Get(node, 0));
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
  cx.Set(node, 0, c);
}

void LowerSize(Context& cx, const OnnxNode& node) {
  std::vector<int64_t> d = DimsOf(cx.Get(node, 0));
  cx.Set(node, 0, Const{{}, std::vector<double>{double(Product(d))}, false, false, ""});
}

void LowerConstantOfShape(Context& cx, const OnnxNode& node) {
  std::vector<int64_t> shape = cx.NeedInts(node, 0, "the shape");
  cx.CheckDims(node, shape);  // a negative dim would make a vector of 2^64 - n values
  Const out;
  out.dims = shape;
  double fill = 0;
  auto it = node.attributes.find("value");
  if (it != node.attributes.end() && it->second.tensor_values && !it->second.tensor_values->empty()) fill = (*it->second.tensor_values)[0];
  if (Product(shape) <= kMaxConstantElements) out.values = std::vector<double>(size_t(Product(shape)), fill);
  cx.Set(node, 0, out);
}

// Range's start, limit or delta: a scalar (of a longer tensor, the first value).
double RangeScalar(Context& cx, const OnnxNode& node, size_t input, const std::string& what) {
  const std::vector<int64_t> v = cx.NeedInts(node, input, what);
  if (v.empty()) cx.Fail(node, what + " (input " + std::to_string(input) + ") is empty; Range needs a scalar");
  return double(v[0]);
}

void LowerRange(Context& cx, const OnnxNode& node) {
  const double s = RangeScalar(cx, node, 0, "start"), l = RangeScalar(cx, node, 1, "limit"),
               d = RangeScalar(cx, node, 2, "delta");
  if (d == 0) cx.Fail(node, "delta 0");
  Const out;
  std::vector<double> v;
  for (double x = s; d > 0 ? x < l : x > l; x += d) {
    v.push_back(x);
    if (v.size() > size_t(kMaxConstantElements)) break;
  }
  out.dims = {int64_t(v.size())};
  out.values = v;
  cx.Set(node, 0, out);
}

}  // namespace

// CumSum of a constant (DETR's sine position embedding sums a mask known at export time): a
// constant of the same dims (its values are not needed for shapes). Of an activation: one add
// per element, a Pointwise op in any layout.
void LowerCumSum(Context& cx, const OnnxNode& node) {
  const Value& v = cx.Get(node, 0);
  if (std::holds_alternative<RowStat>(v)) cx.Fail(node, "a cumulative sum of a row statistic is not supported");
  if (std::holds_alternative<Act>(v)) {
    Act x = cx.NeedAct(node, 0);
    for (TensorId& t : x.parts) t = cx.problem().Pointwise({t}, 1, node, "scan");
    cx.problem().Note("scan",
                      "a cumulative sum is a Pointwise op: a tile does not wait for the tiles before it along the summed axis "
                      "(no traffic change); elements = those ops' sizes",
                      Elems(x));
    return cx.Set(node, 0, x);
  }
  const Const* c = cx.GetConst(node, 0);
  Const out = *c;
  out.values.reset();
  out.initializer = false;
  cx.Set(node, 0, out);
}

// Trilu (torch.triu / tril; nn.Transformer's generate_square_subsequent_mask at opset 14 and
// later): of a constant, the constant with the other triangle zeroed, its values folded when
// known (a causal mask is then the constant the model adds); of an activation, a Pointwise op of
// one pass (a select by position) in the value's layout.
void LowerTrilu(Context& cx, const OnnxNode& node) {
  const Value& v = cx.Get(node, 0);
  if (std::holds_alternative<RowStat>(v)) cx.Fail(node, "a triangle of a row statistic is not supported");
  const std::vector<int64_t> dims = DimsOf(v);
  if (dims.size() < 2) cx.Fail(node, "the input has rank " + std::to_string(dims.size()) + "; Trilu needs rank 2 or more");
  int64_t k = 0;
  if (cx.HasInput(node, 1)) {
    const std::vector<int64_t> kv = cx.NeedInts(node, 1, "the diagonal offset k");
    if (kv.size() != 1) cx.Fail(node, "the diagonal offset k must be a scalar");
    k = kv[0];
  }
  const bool upper = Attr{node}.Int("upper", 1) != 0;
  if (std::holds_alternative<Act>(v)) {
    Act x = cx.NeedAct(node, 0);
    for (TensorId& t : x.parts) t = cx.problem().Pointwise({t}, 1, node, "elementwise");
    return cx.Set(node, 0, x);
  }
  Const out = *cx.GetConst(node, 0);
  out.initializer = false;
  if (out.values) {
    const int64_t rows = dims[dims.size() - 2], cols = dims.back();
    std::vector<double>& vals = *out.values;
    for (size_t e = 0; e < vals.size(); ++e) {
      const int64_t i = int64_t(e) / cols % rows, j = int64_t(e) % cols;
      if (upper ? j - i < k : j - i > k) vals[e] = 0;
    }
  }
  cx.Set(node, 0, out);
}

// QuantizeLinear and DequantizeLinear (quantization-aware exports): on a weight, the weight
// itself (the cost model has no bytes); on an activation, a Pointwise op of the scaling (two
// passes to quantize: scale and round-clip; one to dequantize).
void LowerQuantize(Context& cx, const OnnxNode& node) {
  const Value& v = cx.Get(node, 0);
  if (const Const* c = std::get_if<Const>(&v)) return cx.Set(node, 0, *c);
  Act x = cx.NeedAct(node, 0);
  const double passes = node.op_type == "QuantizeLinear" ? 2 : 1;
  for (TensorId& t : x.parts) t = cx.problem().Pointwise({t}, passes, node, "quantize");
  cx.Set(node, 0, x);
}

// If whose condition is known at import time (torch 1.13 writes one for squeeze(dim) of a dim
// whose size the exporter did not know, e.g. in F.local_response_norm: Squeeze when the dim is
// 1, else Identity; the condition is shape arithmetic): the taken branch's nodes are lowered in
// place, reading the outer values by name, and its outputs are the If's. A condition the model
// computes is control flow: the data-dependent error.
void LowerIf(Context& cx, const OnnxNode& node) {
  const Const* cond = cx.GetConst(node, 0);
  if (!cond || !cond->values || cond->values->size() != 1) cx.Fail(node, kDataDependentShapes);
  const std::string branch = (*cond->values)[0] != 0 ? "then_branch" : "else_branch";
  const auto it = node.attributes.find(branch);
  if (it == node.attributes.end() || !it->second.graph)
    cx.Fail(node, "the " + branch + " is missing or nested more than " + std::to_string(kMaxSubgraphDepth) + " deep");
  const OnnxSubgraph& g = *it->second.graph;
  if (g.has_initializers) cx.Fail(node, "the " + branch + " has initializers of its own, which are not supported");
  if (g.outputs.size() != node.outputs.size())
    cx.Fail(node, "the " + branch + " has " + std::to_string(g.outputs.size()) + " outputs, the node " +
                      std::to_string(node.outputs.size()));
  for (const OnnxNode& n : g.nodes) {
    ++cx.problem().summary().onnx_ops[n.op_type];
    LowerNode(cx, n);
  }
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    OnnxNode read = node;  // the branch's output, read as this node's input
    read.inputs = {g.outputs[i]};
    cx.Set(node, i, cx.Get(read, 0));
  }
}

// Sequences of values known at import time (torch 1.13 writes torch.tensor_split as a Loop that
// inserts each piece into a sequence, then SequenceAt): the elements are the values themselves.
const std::vector<Value>& NeedSequence(Context& cx, const OnnxNode& node, size_t i) {
  const std::vector<Value>* s = cx.HasInput(node, i) ? cx.Sequence(node.inputs[i]) : nullptr;
  if (!s) cx.Fail(node, "input " + std::to_string(i) + " must be a sequence made by SequenceEmpty, SequenceConstruct or SequenceInsert");
  return *s;
}

// A sequence position: in [-n, n) (at = false), or [-n, n] to insert (at = true).
size_t SequencePosition(Context& cx, const OnnxNode& node, size_t input, size_t n, bool insert) {
  const std::vector<int64_t> p = cx.NeedInts(node, input, "the position");
  if (p.size() != 1) cx.Fail(node, "the position must be one value");
  const int64_t k = p[0] < 0 ? p[0] + int64_t(n) : p[0];
  if (k < 0 || k > int64_t(n) || (!insert && k == int64_t(n)))
    cx.Fail(node, "position " + std::to_string(p[0]) + " is out of range for a sequence of " + std::to_string(n));
  return size_t(k);
}

void LowerSequence(Context& cx, const OnnxNode& node) {
  const std::string& op = node.op_type;
  if (op == "SequenceEmpty") return cx.BindSequence(node.outputs.at(0), {});
  if (op == "SequenceConstruct") {
    std::vector<Value> items;
    for (size_t i = 0; i < node.inputs.size(); ++i) items.push_back(cx.Get(node, i));
    return cx.BindSequence(node.outputs.at(0), std::move(items));
  }
  std::vector<Value> items = NeedSequence(cx, node, 0);
  if (op == "SequenceInsert") {
    const size_t at = cx.HasInput(node, 2) ? SequencePosition(cx, node, 2, items.size(), true) : items.size();
    items.insert(items.begin() + std::ptrdiff_t(at), cx.Get(node, 1));
    return cx.BindSequence(node.outputs.at(0), std::move(items));
  }
  if (op == "SequenceLength") return cx.Set(node, 0, Const{{}, std::vector<double>{double(items.size())}, false, false, ""});
  // SequenceAt
  cx.Set(node, 0, items[SequencePosition(cx, node, 1, items.size(), false)]);
}

// Loop with a trip count and condition known at import time (torch.tensor_split's pieces,
// nn.EmbeddingBag's bags): unrolled, the body lowered once per iteration with the iteration
// number, the condition and the carried values (values or sequences) bound to its inputs; the
// scan outputs stacked along a new first axis (Unsqueeze and Concat, lowered as those ops). A
// trip count or condition the model computes is control flow: the data-dependent error.
constexpr int64_t kMaxLoopIterations = 4096;
constexpr int64_t kMaxUnrolledNodes = int64_t{1} << 16;

void LowerLoop(Context& cx, const OnnxNode& node) {
  const auto body_it = node.attributes.find("body");
  if (body_it == node.attributes.end() || !body_it->second.graph)
    cx.Fail(node, "the body is missing or nested more than " + std::to_string(kMaxSubgraphDepth) + " deep");
  const OnnxSubgraph& body = *body_it->second.graph;
  if (body.has_initializers) cx.Fail(node, "the body has initializers of its own, which are not supported");
  const size_t carried = node.inputs.size() < 2 ? 0 : node.inputs.size() - 2;
  if (body.inputs.size() != carried + 2 || body.outputs.size() < carried + 1)
    cx.Fail(node, "the body's inputs and outputs do not match the node's " + std::to_string(carried) + " carried values");
  const size_t scans = body.outputs.size() - 1 - carried;
  auto known = [&](size_t i) {
    const Const* c = cx.HasInput(node, i) ? cx.GetConst(node, i) : nullptr;
    if (cx.HasInput(node, i) && (!c || !c->values || c->values->size() != 1)) cx.Fail(node, kDataDependentShapes);
    return c;
  };
  const Const* trip = known(0);
  const Const* cond0 = known(1);
  if (!trip && !cond0) cx.Fail(node, kDataDependentShapes);
  const int64_t m = trip ? int64_t((*trip->values)[0]) : kMaxLoopIterations + 1;
  bool cond = !cond0 || (*cond0->values)[0] != 0;
  // The carried values: each a value or a sequence.
  std::vector<std::variant<Value, std::vector<Value>>> state;
  for (size_t i = 0; i < carried; ++i) {
    if (const std::vector<Value>* s = cx.Sequence(node.inputs[i + 2])) state.emplace_back(*s);
    else state.emplace_back(cx.Get(node, i + 2));
  }
  std::vector<std::vector<Value>> scanned(scans);
  auto bind = [&](const std::string& name, const std::variant<Value, std::vector<Value>>& v) {
    if (const Value* x = std::get_if<Value>(&v)) cx.Bind(name, *x);
    else cx.BindSequence(name, std::get<std::vector<Value>>(v));
  };
  auto read = [&](const std::string& name) -> std::variant<Value, std::vector<Value>> {
    if (const std::vector<Value>* s = cx.Sequence(name)) return *s;
    OnnxNode r = node;
    r.inputs = {name};
    return cx.Get(r, 0);
  };
  int64_t i = 0;
  for (; i < m && cond; ++i) {
    if (i >= kMaxLoopIterations) cx.Fail(node, "more than " + std::to_string(kMaxLoopIterations) + " iterations");
    cx.CountUnrolled(node, int64_t(body.nodes.size()), kMaxUnrolledNodes);
    cx.Bind(body.inputs[0], Const{{}, std::vector<double>{double(i)}, false, false, ""});
    cx.Bind(body.inputs[1], Const{{}, std::vector<double>{cond ? 1.0 : 0.0}, false, false, ""});
    for (size_t k = 0; k < carried; ++k) bind(body.inputs[k + 2], state[k]);
    for (const OnnxNode& n : body.nodes) {
      ++cx.problem().summary().onnx_ops[n.op_type];
      LowerNode(cx, n);
    }
    const auto c = read(body.outputs[0]);
    const Const* cv = std::holds_alternative<Value>(c) ? std::get_if<Const>(&std::get<Value>(c)) : nullptr;
    if (!cv || !cv->values || cv->values->size() != 1) cx.Fail(node, kDataDependentShapes);
    cond = (*cv->values)[0] != 0;
    for (size_t k = 0; k < carried; ++k) state[k] = read(body.outputs[k + 1]);
    for (size_t k = 0; k < scans; ++k) {
      auto v = read(body.outputs[1 + carried + k]);
      if (!std::holds_alternative<Value>(v)) cx.Fail(node, "a scan output that is a sequence is not supported");
      scanned[k].push_back(std::get<Value>(v));
    }
  }
  for (size_t k = 0; k < carried && k < node.outputs.size(); ++k) {
    if (const Value* x = std::get_if<Value>(&state[k])) cx.Set(node, k, *x);
    else if (!node.outputs[k].empty()) cx.BindSequence(node.outputs[k], std::get<std::vector<Value>>(state[k]));
  }
  for (size_t k = 0; k < scans && carried + k < node.outputs.size(); ++k) {
    const std::string& out = node.outputs[carried + k];
    if (out.empty()) continue;
    if (i == 0) cx.Fail(node, "a loop that runs no iteration has empty scan outputs, which are not supported");
    // The iterations' values stacked: each unsqueezed at axis 0, then concatenated.
    const std::string axes = out + "~axes";
    cx.Bind(axes, Const{{1}, std::vector<double>{0}, false, false, axes});
    OnnxNode concat;
    concat.name = node.name;
    concat.op_type = "Concat";
    concat.attributes["axis"].ints = {0};
    concat.outputs = {out};
    for (size_t t = 0; t < scanned[k].size(); ++t) {
      const std::string item = out + "~scan[" + std::to_string(t) + "]";
      cx.Bind(item, scanned[k][t]);
      OnnxNode unsqueeze;
      unsqueeze.name = node.name;
      unsqueeze.op_type = "Unsqueeze";
      unsqueeze.inputs = {item, axes};
      unsqueeze.outputs = {item + "~unsqueezed"};
      LowerNode(cx, unsqueeze);
      concat.inputs.push_back(unsqueeze.outputs[0]);
    }
    LowerNode(cx, concat);
  }
}

ConverterTable ConstantConverters() {
  return {
      {"Constant", LowerConstant},
      {"Identity", LowerPass},
      {"Dropout", LowerDropout},
      {"Cast", LowerPass},
      {"CastLike", LowerPass},
      {"Shape", LowerShape},
      {"Size", LowerSize},
      {"ConstantOfShape", LowerConstantOfShape},
      {"Range", LowerRange},
      {"CumSum", LowerCumSum},
      {"Trilu", LowerTrilu, 14},
      {"If", LowerIf},
      {"Loop", LowerLoop},
      {"SequenceEmpty", LowerSequence},
      {"SequenceConstruct", LowerSequence},
      {"SequenceInsert", LowerSequence},
      {"SequenceAt", LowerSequence},
      {"SequenceLength", LowerSequence},
      {"QuantizeLinear", LowerQuantize, 10},
      {"DequantizeLinear", LowerQuantize, 10},
  };
}

}  // namespace annealer::lowering
