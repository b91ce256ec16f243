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

ConverterTable ConstantConverters() {
  return {
      {"Constant", LowerConstant},
      {"Identity", LowerPass},
      {"Dropout", LowerPass},
      {"Cast", LowerPass},
      {"CastLike", LowerPass},
      {"Shape", LowerShape},
      {"Size", LowerSize},
      {"ConstantOfShape", LowerConstantOfShape},
      {"Range", LowerRange},
  };
}

}  // namespace annealer::lowering
