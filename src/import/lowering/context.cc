#include "src/import/lowering/context.h"

#include <algorithm>
#include <cmath>

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
  for (double v : *c.values) out.push_back(static_cast<int64_t>(std::llround(v)));
  return out;
}

Act& Context::Materialized(Act& a) {
  if (a.model_input) {
    const auto [rows, cols] = PartShape(a);
    const bool graph_input = std::any_of(g_.inputs.begin(), g_.inputs.end(), [&](const auto& in) { return in.first == a.name; });
    a.parts = {problem_.NewTensor(rows, cols, {a.name, graph_input ? "model-input" : "embedding-rows"})};
    a.model_input = false;
    values_[a.name] = a;
  }
  return a;
}

Act Context::NeedAct(const OnnxNode& node, size_t i) {
  const Value& v = Get(node, i);
  if (const Act* a = std::get_if<Act>(&v)) {
    Act copy = *a;
    if (copy.model_input) Materialized(copy);
    return copy;
  }
  Fail(node, "input '" + node.inputs[i] + "' must be an activation computed by the model here");
}

void Context::Set(const OnnxNode& node, size_t out, Value v) {
  if (out >= node.outputs.size() || node.outputs[out].empty()) return;
  CheckDims(node, DimsOf(v));
  if (auto* a = std::get_if<Act>(&v)) {
    a->name = node.outputs[out];
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
