#include "src/import/lowering/context.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace annealer::lowering {

int64_t Context::Mul(const OnnxNode& node, int64_t a, int64_t b) const {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) Fail(node, "the sizes are too large (" + std::to_string(a) + " x " + std::to_string(b) + " overflows)");
  return product;
}

void Context::CheckDims(const OnnxNode& node, const std::vector<int64_t>& dims) const {
  if (!DimsWithinLimit(dims))
    Fail(node, "the output shape " + DimsText(dims) + " has a negative dim or more than " + std::to_string(kMaxValueElements) + " elements");
}

const Value& Context::Get(const OnnxNode& node, size_t i) const {
  if (i >= node.inputs.size() || node.inputs[i].empty()) Fail(node, "input " + std::to_string(i) + " is missing");
  auto it = values_.find(node.inputs[i]);
  if (it == values_.end()) Fail(node, "input '" + node.inputs[i] + "' has no value (an unsupported producer?)");
  return it->second;
}

const Const& Context::NeedConst(const OnnxNode& node, size_t i, const std::string& what) const {
  const Const* c = GetConst(node, i);
  if (!c) Fail(node, what + " (input " + std::to_string(i) + ") must be known at import time, but it is computed by the model");
  return *c;
}

std::vector<int64_t> Context::NeedInts(const OnnxNode& node, size_t i, const std::string& what) const {
  const Const& c = NeedConst(node, i, what);
  if (!c.values) Fail(node, what + " '" + c.name + "' has no inline data (stripped or external); it is needed to know shapes");
  std::vector<int64_t> out;
  // Exporters write "to the end" as INT64_MAX (and INT64_MIN for reversed slices), which a
  // double rounds past int64's range: saturate rather than overflow.
  for (double v : *c.values)
    out.push_back(v >= 9.2e18 ? std::numeric_limits<int64_t>::max()
                              : v <= -9.2e18 ? std::numeric_limits<int64_t>::min() : static_cast<int64_t>(std::llround(v)));
  return out;
}

Act& Context::Materialized(Act& a) {
  if (!a.model_input) return a;
  const std::string origin = a.input.empty() ? a.name : a.input;
  // v as the input laid out as `made`: its tensors when the shape and layout agree, else a
  // rearrangement of them.
  auto view_of = [&](Act& v, const Act& made) {
    if (SameDataLayout(made, v)) {
      v.parts = made.parts;
      v.model_input = false;
      return;
    }
    Act p;
    p.dims = v.dims;
    p.name = v.name;
    SetLayout(p, v.col_axis, v.part_axes);
    p.source = std::make_shared<const Act>(made);
    p.binding = ++bindings_;
    v = std::move(p);
  };
  if (auto it = inputs_.find(origin); it != inputs_.end()) {
    view_of(a, it->second);
    values_[a.name] = a;
    return a;
  }
  const auto [rows, cols] = PartShape(a);
  const bool graph_input = std::any_of(g_.inputs.begin(), g_.inputs.end(), [&](const auto& in) { return in.first == origin; });
  int64_t count = 1;
  for (int ax : a.part_axes) count *= a.dims[ax];
  a.parts.clear();
  for (int64_t i = 0; i < count; ++i)
    a.parts.push_back(problem_.NewTensor(rows, cols, {origin + PartSuffix(i, count), graph_input ? "model-input" : "embedding-rows"}));
  a.model_input = false;
  inputs_[origin] = a;
  values_[a.name] = a;
  // The input's own binding, when a view of it was read first.
  if (a.name != origin)
    if (auto own = values_.find(origin); own != values_.end())
      if (Act* x = std::get_if<Act>(&own->second); x && x->model_input) view_of(*x, a);
  return a;
}

Act Context::NeedAct(const OnnxNode& node, size_t i) {
  const Value& v = Get(node, i);
  if (const Act* a = std::get_if<Act>(&v)) return Resolved(node, *a);
  if (const Const* c = std::get_if<Const>(&v); c && IsConstantData(*c)) return ConstantData(*c);
  Fail(node, "input '" + node.inputs[i] + "' must be an activation computed by the model here");
}

void Context::ResolveOutput(const std::string& name) {
  auto it = values_.find(name);
  if (it == values_.end()) return;
  OnnxNode node;
  node.name = name;
  node.op_type = "graph output";
  node.outputs = {name};
  if (const Const* c = std::get_if<Const>(&it->second)) {
    // Known at import: no op of the problem makes it, so nothing writes it. Said, since some of
    // these stand for data (a training-mode BatchNormalization's statistics, a Dropout's mask).
    problem_.Note("constant-output",
                  "a graph output known at import (a constant, or the statistics or mask the lowering keeps as "
                  "one) is no output of the problem: its write is not charged",
                  -Product(c->dims));
    return;
  }
  if (const RowStat* s = std::get_if<RowStat>(&it->second)) {
    Act out = StatValue(node, *s);
    // Expanded back to its source's shape (F.normalize's norm): the copies gathered.
    it->second = out.dims == s->dims ? out : Resolved(node, Pending(node, out, s->dims, false));
    return;
  }
  const Act* a = std::get_if<Act>(&it->second);
  if (!a || !a->pending()) return;
  it->second = Resolved(node, *a);
}

Act Context::StatValue(const OnnxNode& node, const RowStat& s) {
  // Each source times a ones column (priced at the vector rate), summed when there are several.
  Act out = s.like;
  out.dims = s.like.dims;
  out.dims[out.col_axis] = 1;
  out.col_split = false;
  out.parts.clear();
  std::vector<TensorId> sums;
  for (TensorId t : s.sources) {
    sums.push_back(problem_.ColumnSum(t, node, (node.outputs.empty() ? node.name : node.outputs[0]) + "~ones"));
  }
  out.parts = {sums.size() == 1 ? sums[0] : problem_.Pointwise(sums, s.passes, node, "block-sum")};
  return out;
}

bool Context::IsConstantData(const Const& c) {
  return (c.is_float || c.dims.size() >= 2) && !c.dims.empty() && Product(c.dims) > 1;
}

Act Context::ConstantData(const Const& c) {
  Act a;
  a.dims = c.dims;
  a.name = c.name;
  SetChannelsLayout(a);
  const auto [rows, cols] = PartShape(a);
  a.parts = {problem_.Weight(c.name, rows, cols, "~data")};
  return a;
}

Act Context::Resolved(const OnnxNode& node, const Act& x) {
  Act copy = x;
  if (copy.model_input) Materialized(copy);
  if (!copy.pending()) return copy;
  return Relayout(node, copy, copy.col_axis, copy.part_axes);
}

Act Context::Relayout(const OnnxNode& node, const Act& x_in, int col_axis, const std::vector<int>& part_axes) {
  Act x = x_in;
  if (x.model_input) {
    // A graph input read first in this layout is given it (a cache [batch, heads, rows, head
    // size] read per head is a tensor per head): nothing to gather. One that another reading laid
    // out already is gathered from those tensors (Materialized makes it a rearrangement).
    SetLayout(x, col_axis, part_axes);
    int64_t count = 1;
    for (int ax : x.part_axes) count = Mul(node, count, x.dims[ax]);
    if (col_axis < 0 || col_axis >= int(x.dims.size()) || count > kMaxLayoutParts) SetChannelsLayout(x);
    Materialized(x);
  }
  if (HasLayout(x, col_axis, part_axes)) return x;
  if (x.pending() && x.reshape_only && x.dims == x.source->dims && HasLayout(*x.source, col_axis, part_axes)) return *x.source;
  const std::vector<TensorId>& inputs = x.pending() ? x.source->parts : x.parts;
  Act out;
  out.dims = x.dims;
  out.name = x.name;
  SetChannelsLayout(out, col_axis);
  int64_t count = 1;
  for (int ax : part_axes) {
    out.row_axes.erase(std::remove(out.row_axes.begin(), out.row_axes.end(), ax), out.row_axes.end());
    if (x.dims[ax] > 1) out.part_axes.push_back(ax);
    count = Mul(node, count, x.dims[ax]);
  }
  std::sort(out.part_axes.begin(), out.part_axes.end());
  if (count > kMaxLayoutParts)
    Fail(node, "rearranging " + DimsText(x.dims) + " into " + std::to_string(count) + " separate matrices (more than " +
                   std::to_string(kMaxLayoutParts) + ") is not supported");
  const auto [rows, cols] = PartShape(out);
  const std::string value = x.name.empty() ? node.name : x.name;
  // Parts of the same batch axes map one to one (a head gathers from its own head).
  std::vector<int> x_sized;
  for (int ax : x.part_axes) if (x.dims[ax] > 1) x_sized.push_back(ax);
  const bool one_to_one = !x.pending() && !x.col_split && x_sized == out.part_axes && int64_t(x.parts.size()) == count;
  for (int64_t i = 0; i < count; ++i)
    out.parts.push_back(problem_.Layout(one_to_one ? std::vector<TensorId>{inputs[i]} : inputs, rows, cols, node,
                                        value + PartSuffix(i, count)));
  // A name's pending binding gathered in its own layout: the name is rebound to the gathered
  // value, so that later readers do not gather it again. (Only the binding itself, not a view a
  // converter derived from a copy of it.)
  auto same_view = [&](const Act& b) {
    return b.binding == x.binding && b.source == x.source && b.dims == x.dims && b.col_axis == x.col_axis &&
           b.row_axes == x.row_axes && b.part_axes == x.part_axes && b.reshape_only == x.reshape_only;
  };
  if (x.binding != 0 && out.col_axis == x.col_axis && out.part_axes == x.part_axes && out.row_axes == x.row_axes)
    if (auto it = values_.find(x.name); it != values_.end())
      if (const Act* bound = std::get_if<Act>(&it->second); bound && same_view(*bound)) it->second = out;
  return out;
}

Act Context::Pending(const OnnxNode& node, const Act& x_in, std::vector<int64_t> dims, bool reshape_only, int col_axis,
                     std::vector<int> part_axes) {
  Act x = x_in;
  if (x.model_input) Materialized(x);
  Act p;
  p.dims = std::move(dims);
  p.name = x.name;
  if (col_axis >= 0 && col_axis < int(p.dims.size()))
    SetLayout(p, col_axis, part_axes);
  else
    SetChannelsLayout(p);
  if (x.pending()) {
    p.source = x.source;
    p.reshape_only = x.reshape_only && reshape_only;
  } else {
    if (x.parts.empty()) Fail(node, "internal: rearranging a value without tensors");
    p.source = std::make_shared<const Act>(x);
    p.reshape_only = reshape_only;
  }
  if (p.reshape_only && p.dims == p.source->dims) return *p.source;
  return p;
}

void Context::Set(const OnnxNode& node, size_t out, Value v) {
  if (out >= node.outputs.size() || node.outputs[out].empty()) return;
  CheckDims(node, DimsOf(v));
  if (auto* a = std::get_if<Act>(&v)) {
    a->name = node.outputs[out];
    a->binding = a->pending() ? ++bindings_ : 0;
    Elements e = 0;
    for (size_t i = 0; i < a->parts.size(); ++i) {
      const TensorId t = a->parts[i];
      std::string& value = problem_.tensor_origin(t).value;
      value = node.outputs[out];
      if (a->parts.size() > 1) value += '[' + std::to_string(i) + ']';
      e += problem_.tensor(t).size();
    }
    ImportSummary& summary = problem_.summary();
    if (e > summary.largest_activation) {
      summary.largest_activation = e;
      summary.largest_activation_name = node.outputs[out];
    }
  }
  if (auto* c = std::get_if<Const>(&v)) c->name = node.outputs[out];
  values_[node.outputs[out]] = std::move(v);
}

bool Context::SameShapes(const Act& a, const Act& b) const {
  if (a.parts.size() != b.parts.size()) return false;
  for (size_t i = 0; i < a.parts.size(); ++i)
    if (!(tensor(a.parts[i]) == tensor(b.parts[i]))) return false;
  return true;
}

bool Context::SameWidths(const Act& a, const Act& b) const {
  if (a.parts.size() != b.parts.size()) return false;
  for (size_t i = 0; i < a.parts.size(); ++i)
    if (tensor(a.parts[i]).width != tensor(b.parts[i]).width) return false;
  return true;
}

}  // namespace annealer::lowering
