#include "src/import/lowering/problem_builder.h"

#include <algorithm>
#include <cmath>

#include "src/io/json_fields.h"
#include "src/io/contest/problem_reader.h"
#include "src/io/message_text.h"

namespace annealer::lowering {

std::string NodeField(const OnnxNode& node) {
  return OneLineForMessage("node '" + node.name + "' (" + node.op_type + ")");
}

void FailAt(const std::string& origin, const OnnxNode& node, const std::string& what) {
  throw InputError(origin, NodeField(node), OneLineForMessage(what));
}

TensorId ProblemBuilder::NewTensor(Elements rows, Elements cols, TensorOrigin origin) {
  if (rows <= 0 || cols <= 0)
    throw InputError(origin_, "", OneLineForMessage("'" + origin.value + "' has no elements (a dim of 0): an empty value is read only by a "
                                                    "Concat, which skips it, or as shape arithmetic"));
  if (rows > kMaxTensorSide || cols > kMaxTensorSide)
    throw InputError(origin_, "", OneLineForMessage("'" + origin.value + "' would be a tensor of " + std::to_string(rows) + " x " +
                                                    std::to_string(cols) + " (rows x columns): the problem format allows at most " +
                                                    std::to_string(kMaxTensorSide) + " per side; import with a smaller input"));
  p_.tensors.push_back(Tensor{cols, rows});
  tensor_origins_.push_back(std::move(origin));
  producer_.push_back(kNoOp);
  return static_cast<TensorId>(p_.tensors.size() - 1);
}

OpId ProblemBuilder::AddOp(Op op, OpOrigin origin) {
  producer_[op.output] = static_cast<OpId>(p_.ops.size());
  p_.ops.push_back(std::move(op));
  alive_.push_back(true);
  op_origins_.push_back(std::move(origin));
  return static_cast<OpId>(p_.ops.size() - 1);
}

OpId ProblemBuilder::AddOp(OpKind kind, std::vector<TensorId> inputs, TensorId out, double base, const OnnxNode& node,
                           const std::string& role) {
  return AddOp(Op{kind, std::move(inputs), out, base}, OpOrigin{{node.name}, {node.op_type}, role});
}

namespace {
bool IsComputeRole(const std::string& role) { return role == "matmul" || role == "conv" || role == "conv-tap"; }
}  // namespace

TensorId ProblemBuilder::ColumnSum(TensorId t, const OnnxNode& node, const std::string& ones_name) {
  const Elements cols = tensor(t).width;
  const TensorId ones = NewTensor(cols, 1, {ones_name, "view-selector"});
  const TensorId sum = MatMul(t, ones, node, "reduction", hw().pointwise_base * double(CeilDiv(cols, hw().native)));
  Note("column-reduction-matmul",
       "a reduction over the columns kept as a value (a feature sum, an arg-max) is a MatMul with a ones column; "
       "extra MACs = the adds (reported apart from the model's MACs)",
       0, tensor(t).size());
  return sum;
}

TensorId ProblemBuilder::MatMul(TensorId l, TensorId r, const OnnxNode& node, const std::string& role,
                                std::optional<double> base) {
  const Elements m = p_.tensors[l].height, k = p_.tensors[l].width, n = p_.tensors[r].width;
  if (p_.tensors[r].height != k)
    throw InputError(origin_, NodeField(node), "internal shape mismatch " +
                     std::to_string(m) + "x" + std::to_string(k) + " @ " + std::to_string(p_.tensors[r].height) + "x" +
                     std::to_string(n));
  const TensorId out = NewTensor(m, n, {node.outputs.empty() ? node.name : node.outputs[0], "activation"});
  AddOp(OpKind::MatMul, {l, r}, out, base ? *base : hw_.matmul_base * double(CeilDiv(k, hw_.native)), node, role);
  return out;
}

TensorId ProblemBuilder::Pointwise(std::vector<TensorId> inputs, double passes, const OnnxNode& node,
                                   const std::string& role) {
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

TensorId ProblemBuilder::Weight(const std::string& name, Elements rows, Elements cols, const std::string& suffix) {
  const std::string key = name + suffix + "#" + std::to_string(rows) + "x" + std::to_string(cols);
  auto it = weights_.find(key);
  if (it != weights_.end()) return it->second;
  const TensorId t = NewTensor(rows, cols, {name + suffix, "weight"});
  weights_[key] = t;
  return t;
}

void ProblemBuilder::Note(const std::string& rule, const std::string& what, int64_t elements, int64_t extra_macs) {
  // Rules whose elements are the ops they concern, not traffic.
  const bool traffic = rule != "row-reduction" && rule != "group-norm" && rule != "scan" && rule != "top-k" && rule != "layer-norm-axes" &&
                       rule != "batch-statistics" && rule != "training-dropout" && rule != "rotary";
  for (auto& a : approximations_)
    if (a.rule == rule) {
      ++a.count;
      a.elements += elements;
      a.extra_macs += extra_macs;
      return;
    }
  approximations_.push_back(Approximation{rule, what, 1, elements, traffic, extra_macs});
}

void ProblemBuilder::NoteBroadcast(const Const& c) {
  if (Product(c.dims) > 1)
    Note("broadcast-constant",
         "a constant operand smaller than the activation (bias, scale vector, class token) is folded into its op: its loads are not charged",
         -Product(c.dims));
}

int ProblemBuilder::AliveConsumers(TensorId t) const {
  int n = 0;
  for (size_t o = 0; o < p_.ops.size(); ++o)
    if (alive_[o]) for (TensorId in : p_.ops[o].inputs) n += in == t;
  return n;
}

TensorId ProblemBuilder::Layout(const std::vector<TensorId>& inputs, Elements rows, Elements cols, const OnnxNode& node,
                                const std::string& value, bool note) {
  if (inputs.empty()) Fail(node, "internal: a Layout op without inputs");
  // A gather may read one tensor at several places (a concatenation of a value and its flip
  // along the blocks); an op names each input once (the problem reader's rule).
  std::vector<TensorId> unique;
  for (TensorId t : inputs)
    if (std::find(unique.begin(), unique.end(), t) == unique.end()) unique.push_back(t);
  const TensorId out = NewTensor(rows, cols, {value, "activation"});
  AddOp(Op{OpKind::Layout, unique, out, 0.0}, OpOrigin{{node.name}, {node.op_type}, "layout"});
  if (note)
    Note("layout",
       "a rearrangement of an activation (a transpose or reshape across rows and columns, a slice, a pad, a broadcast) is a "
       "Layout op: its input goes to slow memory and the DMA gathers it; elements = the gathered tensors",
       rows * cols);
  return out;
}

bool ProblemBuilder::CanSplitColumns(TensorId t, int parts, int allowed_consumers) const {
  if (splits_.count({t, parts})) return true;
  const Tensor shape = p_.tensors[t];
  if (parts <= 0 || shape.width % parts != 0 || AliveConsumers(t) > allowed_consumers) return false;
  const OpId op = producer_[t];
  if (op == kNoOp) return tensor_origins_[t].role == "weight";
  const Op& o = p_.ops[op];
  if (o.kind == OpKind::Layout) return true;
  // The operands' consumers include this op, which the split replaces.
  for (size_t j = 0; j < o.inputs.size(); ++j)
    if (!(o.kind == OpKind::MatMul && j == 0) && !CanSplitColumns(o.inputs[j], parts, 1)) return false;
  return true;
}

std::vector<TensorId> ProblemBuilder::SplitColumns(TensorId t, int parts, const OnnxNode& node, int allowed_consumers) {
  if (auto it = splits_.find({t, parts}); it != splits_.end()) return it->second;
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
    splits_[{t, parts}] = out;
    return out;
  }
  const Op o = p_.ops[op];
  const OpOrigin origin = op_origins_[op];
  alive_[op] = false;
  // A MatMul splits its right operand (the weight) by columns; a Pointwise op splits every
  // operand; a Layout op gathers each block from the same inputs. Each part keeps the op's base
  // cost: MatMul and Pointwise are priced per output tile.
  std::vector<std::vector<TensorId>> split_inputs;
  for (size_t j = 0; j < o.inputs.size(); ++j)
    split_inputs.push_back((o.kind == OpKind::MatMul && j == 0) || o.kind == OpKind::Layout
                               ? std::vector<TensorId>(parts, o.inputs[j])
                               : SplitColumns(o.inputs[j], parts, node, 1));
  for (int i = 0; i < parts; ++i) {
    std::vector<TensorId> inputs;
    for (const auto& v : split_inputs) inputs.push_back(v[i]);
    const TensorId r = NewTensor(shape.height, w, {tensor_origins_[t].value + "[" + std::to_string(i) + "]", "activation"});
    AddOp(Op{o.kind, std::move(inputs), r, o.base_cost}, origin);
    out.push_back(r);
  }
  splits_[{t, parts}] = out;
  return out;
}

TensorId ProblemBuilder::View(TensorId src, Elements rows2, double passes, const OnnxNode& node, const std::string& rule,
                              const std::string& what) {
  const Tensor s = p_.tensors[src];
  TensorId v = Layout({src}, rows2, s.width, node, node.name + "~view", false);
  if (passes > 0) v = Pointwise({v}, passes, node, "view-compute");
  Note(rule, what, rows2 * s.width);
  return v;
}

LoweredModel ProblemBuilder::Finish() {
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
  if (q.ops.empty()) throw InputError(origin_, "", "the model has no compute to schedule (no op lowers to a MatMul or Pointwise op)");
  const std::string err = q.Finalize();
  if (!err.empty()) throw InputError(origin_, "", "internal lowering error: " + err);
  for (size_t t = 0; t < q.tensors.size(); ++t) {
    summary_.problem_tensor_elements += q.tensors[t].size();
    if (m.tensor_origins[t].role == "weight") summary_.params_in_tensors += q.tensors[t].size();
  }
  // The model's MACs are the problem's: Σ M·K·N of the live compute MatMuls (an op a rewrite
  // replaced counts through its parts).
  summary_.macs = 0;
  for (size_t o = 0; o < q.ops.size(); ++o) {
    const Op& op = q.ops[o];
    ++summary_.problem_ops[m.op_origins[o].role];
    switch (op.kind) {
      case OpKind::MatMul: ++summary_.matmul_ops; break;
      case OpKind::Pointwise: ++summary_.pointwise_ops; break;
      case OpKind::Layout: ++summary_.layout_ops; break;
    }
    if (op.kind == OpKind::MatMul && IsComputeRole(m.op_origins[o].role))
      summary_.macs += q.tensors[op.inputs[0]].size() * q.tensors[op.inputs[1]].width;
  }
  summary_.approximations = approximations_;
  summary_.hardware = hw_;
  m.summary = summary_;
  return m;
}

}  // namespace annealer::lowering
