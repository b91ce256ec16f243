// Elementwise ops and activations: folded when every data operand is known at import time,
// combined into a row statistic when they are statistics and constants, else one Pointwise op
// per part of the activation (with broadcast constants, full-size parameters, row vectors).
#include <algorithm>
#include <cmath>
#include <map>

#include "src/import/lowering/elementwise.h"
#include "src/import/lowering/folding.h"
#include "src/import/lowering/registry.h"

namespace annealer::lowering {
namespace {

// Vector passes per element of the elementwise ops (one pass = one ALU op over an n×n tile).
// Every op here has a converter (LowerElementwise).
const std::map<std::string, double>& ElementwisePasses() {
  static const std::map<std::string, double> kPasses = {
      {"Relu", 1}, {"LeakyRelu", 1}, {"PRelu", 1}, {"Clip", 1}, {"Neg", 1}, {"Abs", 1},
      {"Add", 1}, {"Sub", 1}, {"Mul", 1}, {"Div", 1}, {"Max", 1}, {"Min", 1}, {"Sum", 1},
      {"Pow", 2}, {"Sqrt", 2}, {"Reciprocal", 2}, {"Exp", 2}, {"Log", 2}, {"Elu", 2},
      {"Selu", 2}, {"HardSigmoid", 2}, {"HardSwish", 3}, {"Sigmoid", 4}, {"Tanh", 4},
      {"Erf", 4}, {"Softplus", 4}, {"Mish", 6}, {"Swish", 6}, {"Gelu", 8}, {"Floor", 1}, {"Ceil", 1},
      {"Round", 1}, {"Sign", 1}, {"Where", 1}, {"Mean", 1}, {"Celu", 2}, {"ThresholdedRelu", 1},
      {"Sin", 4}, {"Cos", 4}, {"Tan", 4}, {"Asin", 4}, {"Acos", 4}, {"Atan", 4}, {"Sinh", 4}, {"Cosh", 4},
      {"Asinh", 4}, {"Acosh", 4}, {"Atanh", 4}, {"Softsign", 2}, {"Shrink", 1}, {"BitShift", 1}, {"Mod", 2},
      // Comparisons, logic and bit operations: one pass.
      {"Equal", 1}, {"Less", 1}, {"Greater", 1}, {"LessOrEqual", 1}, {"GreaterOrEqual", 1}, {"Not", 1}, {"And", 1},
      {"Or", 1}, {"Xor", 1}, {"IsNaN", 1}, {"IsInf", 1}, {"BitwiseAnd", 1}, {"BitwiseOr", 1}, {"BitwiseXor", 1},
      {"BitwiseNot", 1}};
  return kPasses;
}

// Where(c, x, y) on known values: c·x + (1 − c)·y.
std::optional<std::vector<double>> FoldWhere(const Const& c, const Const& x, const Const& y, const std::vector<int64_t>& out) {
  if (!c.values || !x.values || !y.values || Product(out) > kMaxConstantElements) return std::nullopt;
  auto cx = FoldBinary("Mul", c, x, out);
  Const nc = c;
  for (double& d : *nc.values) d = d != 0 ? 0 : 1;
  auto cy = FoldBinary("Mul", nc, y, out);
  if (!cx || !cy) return std::nullopt;
  std::vector<double> v(cx->size());
  for (size_t i = 0; i < cx->size(); ++i) v[i] = (*cx)[i] + (*cy)[i];
  return v;
}

std::optional<std::vector<double>> FoldUnary(const std::string& op, std::vector<double> v) {
  for (double& d : v) {
    if (op == "Neg") d = -d;
    else if (op == "Abs") d = std::fabs(d);
    else if (op == "Sqrt") d = std::sqrt(d);
    else if (op == "Floor") d = std::floor(d);
    else if (op == "Ceil") d = std::ceil(d);
    else if (op == "Not") d = d == 0;
    else if (op == "Reciprocal") d = 1 / d;
    else if (op == "Relu") d = std::max(d, 0.0);
    else return std::nullopt;
  }
  return v;
}

// Constant folding (shape arithmetic and scalars): the result's dims always, its values when
// the op and the operands' data allow.
void FoldConstants(Context& cx, const OnnxNode& node, const std::vector<const Value*>& ins,
                   const std::vector<const Value*>& data) {
  const std::string& op = node.op_type;
  Const out;
  bool ok = true;
  out.dims = std::get<Const>(*data[0]).dims;
  for (size_t i = 1; i < data.size(); ++i) out.dims = Broadcast(out.dims, std::get<Const>(*data[i]).dims, ok);
  if (!ok) cx.Fail(node, "operand shapes do not broadcast");
  out.is_float = std::any_of(data.begin(), data.end(), [](const Value* v) { return std::get<Const>(*v).is_float; });
  if (op == "Where" && ins.size() == 3) {
    out.values = FoldWhere(std::get<Const>(*ins[0]), std::get<Const>(*ins[1]), std::get<Const>(*ins[2]), out.dims);
  } else if (data.size() == 2) {
    out.values = FoldBinary(op, std::get<Const>(*data[0]), std::get<Const>(*data[1]), out.dims);
  } else if (data.size() == 1 && std::get<Const>(*data[0]).values) {
    out.values = FoldUnary(op, *std::get<Const>(*data[0]).values);
  }
  cx.Set(node, 0, out);
}

// Row statistics combined with constants (eps, sqrt): still a statistic, more passes.
void CombineRowStats(Context& cx, const OnnxNode& node, const std::vector<const Value*>& data, double passes) {
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
  cx.Set(node, 0, s);
}

// Whether x's parts are the same 2-D tensors, laid out the same way, as the result's.
bool SameLayout(Context& cx, const Act& x, const Act& out) {
  return x.dims == out.dims && x.col_axis == out.col_axis && x.col_split == out.col_split &&
         x.part_axes == out.part_axes && x.row_axes == out.row_axes && cx.SameWidths(x, out);
}

// An activation operand's tensors, one per part of `out` (appended to part_inputs). An operand
// laid out otherwise (a residual around a transpose) is gathered into out's layout; a smaller
// operand broadcast over out (a squeeze-excitation scale, an attention mask, a row vector) is
// gathered at out's size: one Layout op either way, no compute.
void AddActOperand(Context& cx, const OnnxNode& node, const Act& act_in, const Act& out,
                   std::vector<std::vector<TensorId>>& part_inputs) {
  Act act = cx.Resolved(node, act_in);
  if (act.dims != out.dims && Elems(act) == Elems(out) && act.parts.size() == out.parts.size() && cx.SameShapes(act, out)) {
    // The same 2-D tensors; the N-D shapes differ only by size-1 axes.
  } else if (!SameLayout(cx, act, out)) {
    bool ok = true;
    const std::vector<int64_t> dims = Broadcast(act.dims, out.dims, ok);
    if (!ok || dims != out.dims)
      cx.Fail(node, "operands of shapes " + DimsText(act.dims) + " and " + DimsText(out.dims) + " do not broadcast to the result");
    if (act.dims != out.dims) act = cx.Pending(node, act, out.dims, false);  // gathered at the result's size
    act = cx.Relayout(node, act, out.col_axis, out.part_axes);
    if (act.parts.size() != out.parts.size() || !cx.SameShapes(act, out))
      cx.Fail(node, "internal: operands of " + DimsText(out.dims) + " in different layouts");
  }
  for (size_t p = 0; p < out.parts.size(); ++p) part_inputs[p].push_back(act.parts[p]);
}

}  // namespace

// An activation result: all activation operands share one shape and layout, the largest's
// (column blocks merged when another operand is not in the same blocks).
void LowerOnActivations(Context& cx, const OnnxNode& node, const std::vector<const Value*>& data, double passes) {
  const Act* lead = nullptr;
  for (const Value* v : data)
    if (const Act* a = std::get_if<Act>(v)) {
      if (!lead || Elems(*a) > Elems(*lead)) lead = a;
    }
  Act out = cx.Resolved(node, *lead);
  // The result has the broadcast of every operand's dims: a constant larger than the
  // activations (a timestep times a frequency table) widens it, gathered at the result's size.
  std::vector<int64_t> full = out.dims;
  for (const Value* v : data) {
    bool ok = true;
    const std::vector<int64_t> next = Broadcast(full, DimsOf(*v), ok);
    if (!ok)
      cx.Fail(node, "operands of shapes " + DimsText(DimsOf(*v)) + " and " + DimsText(full) + " do not broadcast to the result");
    full = next;
  }
  if (full != out.dims) out = cx.Resolved(node, cx.Pending(node, out, full, false));
  for (const Value* v : data)
    if (const Act* a = std::get_if<Act>(v); a && a != lead && out.col_split) {
      const Act other = cx.Resolved(node, *a);
      if (!SameLayout(cx, other, out)) {
        out = cx.Relayout(node, out, out.col_axis, out.part_axes);
        break;
      }
    }
  double total_passes = passes;
  std::vector<std::vector<TensorId>> part_inputs(out.parts.size());
  for (const Value* v : data) {
    if (const Act* a = std::get_if<Act>(v)) {
      AddActOperand(cx, node, *a, out, part_inputs);
    } else if (const RowStat* s = std::get_if<RowStat>(v)) {
      bool same = out.parts.size() == 1;
      for (TensorId t : s->sources) same = same && cx.tensor(t) == cx.tensor(out.parts[0]);
      if (same) {
        // Layer norm spelled out: the consumer reads the statistic's source and pays its pass.
        for (TensorId t : s->sources) part_inputs[0].push_back(t);
        total_passes += s->passes;
      } else {
        // A statistic of another value (a product over a slice of the features added to the
        // whole): computed, then gathered at the result's size.
        AddActOperand(cx, node, cx.StatValue(node, *s), out, part_inputs);
      }
    } else {
      const Const& c = std::get<Const>(*v);
      if (c.initializer && c.is_float && Product(c.dims) == Elems(out) && out.parts.size() == 1 && Product(c.dims) > 1) {
        // A full-size parameter (position embedding): a weight tensor of the activation's shape.
        const auto [rows, cols] = PartShape(out);
        part_inputs[0].push_back(cx.problem().Weight(c.name, rows, cols));
      } else {
        cx.problem().NoteBroadcast(c);
      }
    }
  }
  for (size_t p = 0; p < out.parts.size(); ++p) {
    if (part_inputs[p].empty()) cx.Fail(node, "internal: no tensor operand");
    out.parts[p] = cx.problem().Pointwise(part_inputs[p], total_passes, node, "elementwise");
  }
  cx.Set(node, 0, out);
}

namespace {

void LowerElementwise(Context& cx, const OnnxNode& node) {
  const std::string& op = node.op_type;
  const double passes = std::max(ElementwisePasses().at(op), 1.0);
  std::vector<const Value*> ins;
  for (size_t i = 0; i < node.inputs.size(); ++i)
    if (cx.HasInput(node, i)) ins.push_back(&cx.Get(node, i));
  if (ins.empty()) cx.Fail(node, "no inputs");
  // Where(cond, x, y): the data operands decide; a computed condition (a padding mask from the
  // model's input, a comparison of activations) is read as well.
  std::vector<const Value*> data = ins;
  if (op == "Where" && ins.size() == 3 && !std::holds_alternative<Act>(*ins[0])) data = {ins[1], ins[2]};
  if (op == "Clip" && ins.size() > 1) data = {ins[0]};  // min/max operands are constants
  bool any_act = false, any_stat = false;
  for (const Value* v : data) {
    any_act |= std::holds_alternative<Act>(*v);
    any_stat |= std::holds_alternative<RowStat>(*v);
  }
  if (!any_act && !any_stat) return FoldConstants(cx, node, ins, data);
  if (!any_act) return CombineRowStats(cx, node, data, passes);
  LowerOnActivations(cx, node, data, passes);
}

}  // namespace

ConverterTable ElementwiseConverters() {
  ConverterTable table;
  for (const auto& [op, passes] : ElementwisePasses()) table.push_back({op, LowerElementwise});
  return table;
}

}  // namespace annealer::lowering
