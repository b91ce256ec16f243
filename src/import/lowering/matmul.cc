// Gemm and MatMul: an activation times a weight (column blocks multiply their rows of the
// weight), a weight times an activation, and two activations (attention: Q·Kᵀ with a transposed
// copy, P·V), per head.
#include "src/import/lowering/registry.h"

namespace annealer::lowering {
namespace {

Act ActTimesWeight(Context& cx, const Act& x, const Const& w, bool w_transposed, const OnnxNode& node) {
  ProblemBuilder& pb = cx.problem();
  if (w.dims.size() != 2) cx.Fail(node, "the weight must be 2-D, got " + DimsText(w.dims));
  const int64_t k = w_transposed ? w.dims[1] : w.dims[0], nn = w_transposed ? w.dims[0] : w.dims[1];
  const int last = int(x.dims.size()) - 1;
  if (x.col_axis != last || x.dims[last] != k)
    cx.Fail(node, "the activation " + DimsText(x.dims) + " does not have its reduction axis (" + std::to_string(k) +
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
      const Elements kp = cx.tensor(part).width;
      partial.push_back(pb.MatMul(part, pb.Weight(w.name, kp, nn, "[rows " + std::to_string(offset) + ":" + std::to_string(offset + kp) + "]"), node, "matmul"));
      offset += kp;
    }
    out.parts = {pb.Pointwise(partial, 0, node, "block-sum")};
    out.part_axes.clear();
    return out;
  }
  const TensorId wt = pb.Weight(w.name, k, nn);
  out.parts.clear();
  for (TensorId part : x.parts) out.parts.push_back(pb.MatMul(part, wt, node, "matmul"));
  return out;
}

void AddBias(Context& cx, Act& y, const OnnxNode& node, size_t input) {
  if (!cx.HasInput(node, input)) return;
  const Value& b = cx.Get(node, input);
  if (std::holds_alternative<Act>(b)) cx.Fail(node, "a bias computed by the model is not supported");
  cx.problem().NoteBroadcast(std::get<Const>(b));
  for (TensorId& t : y.parts) t = cx.problem().Pointwise({t}, 1, node, "bias");
}

void LowerGemm(Context& cx, const OnnxNode& node) {
  Attr a{node};
  if (a.Int("transA", 0)) cx.Fail(node, "transA = 1 on an activation is not supported");
  const Value& av = cx.Get(node, 0);
  if (!std::holds_alternative<Act>(av)) cx.Fail(node, "the first Gemm operand must be an activation");
  Act x = cx.NeedAct(node, 0);
  if (x.dims.size() != 2) cx.Fail(node, "Gemm input must be 2-D, got " + DimsText(x.dims));
  x.col_axis = 1;
  x.row_axes = {0};
  const Const* w = cx.GetConst(node, 1);
  if (!w) cx.Fail(node, "a Gemm whose second operand is computed by the model is not supported");
  Act y = ActTimesWeight(cx, x, *w, a.Int("transB", 0) != 0, node);
  AddBias(cx, y, node, 2);
  cx.Set(node, 0, y);
}

// weight @ activation (2-D only).
void LowerWeightTimesAct(Context& cx, const OnnxNode& node, const Const& w) {
  Act x = cx.NeedAct(node, 1);
  if (w.dims.size() != 2 || !x.part_axes.empty() || x.dims.size() != 2 || x.col_axis != 1)
    cx.Fail(node, "weight @ activation is supported for 2-D operands only");
  Act out = x;
  out.dims = {w.dims[0], x.dims[1]};
  ProblemBuilder& pb = cx.problem();
  out.parts = {pb.MatMul(pb.Weight(w.name, w.dims[0], w.dims[1]), x.parts[0], node, "matmul")};
  cx.Set(node, 0, out);
}

// A transposed operand (attention's K^T): the format cannot transpose, so the kernel reads a
// transposed copy from slow memory; the order is kept by a free join of the operands, which
// have the same shape in self-attention.
TensorId TransposedOperandMatMul(Context& cx, const OnnxNode& node, TensorId l, TensorId r) {
  ProblemBuilder& pb = cx.problem();
  const Tensor lt = cx.tensor(l), rt = cx.tensor(r);
  if (lt.width != rt.width || lt.height != rt.height)
    cx.Fail(node, "a transposed right operand is supported when both operands have the same shape (self-attention); got " +
                      std::to_string(lt.height) + "x" + std::to_string(lt.width) + " and " + std::to_string(rt.height) + "x" +
                      std::to_string(rt.width));
  const TensorId join = pb.Pointwise({l, r}, 0, node, "order-join");
  const TensorId copy = pb.NewTensor(rt.width, rt.height, {node.inputs[1] + "^T", "transposed-copy"});
  pb.Note("transposed-operand",
          "a transposed activation operand (K^T) is read as a copy from slow memory, joined to its source by a free Pointwise op; elements = the copy's writes not charged",
          -rt.size());
  return pb.MatMul(join, copy, node, "matmul");
}

// activation @ activation, part by part (attention heads).
void LowerActTimesAct(Context& cx, const OnnxNode& node) {
  Act x = cx.NeedAct(node, 0), y = cx.NeedAct(node, 1);
  const int rx = int(x.dims.size()), ry = int(y.dims.size());
  if (rx < 2 || ry < 2) cx.Fail(node, "MatMul operands of rank < 2 are not supported");
  if (x.col_axis != rx - 1) cx.Fail(node, "the left operand " + DimsText(x.dims) + " is not laid out with its reduction axis as columns");
  if (x.parts.size() != y.parts.size() || x.col_split || y.col_split)
    cx.Fail(node, "batched MatMul operands must split into the same parts (heads): " + std::to_string(x.parts.size()) +
                      " and " + std::to_string(y.parts.size()));
  // Each part must be one matrix: rows other than M (a batch > 1 folded into the rows) would
  // multiply across batch items.
  for (const Act* v : {&x, &y})
    for (int ax : v->row_axes)
      if (ax < int(v->dims.size()) - 2 && v->dims[ax] > 1)
        cx.Fail(node, "a MatMul of two activations with a batch of " + std::to_string(v->dims[ax]) +
                          " is not supported; import with batch 1 (--input NAME=1x...)");
  const int64_t k = x.dims[rx - 1];
  const bool plain = y.col_axis == ry - 1;
  const bool transposed = y.col_axis == ry - 2;
  if (!plain && !transposed) cx.Fail(node, "the right operand's layout is not supported");
  Act out = x;
  out.dims[rx - 1] = y.dims[ry - 1];
  out.parts.clear();
  for (size_t i = 0; i < x.parts.size(); ++i) {
    const TensorId l = x.parts[i], r = y.parts[i];
    if (!plain) {
      out.parts.push_back(TransposedOperandMatMul(cx, node, l, r));
      continue;
    }
    if (cx.tensor(r).height != k) cx.Fail(node, "operand shapes do not chain");
    out.parts.push_back(cx.problem().MatMul(l, r, node, "matmul"));
  }
  cx.Set(node, 0, out);
}

void LowerMatMul(Context& cx, const OnnxNode& node) {
  const Value& av = cx.Get(node, 0);
  const Value& bv = cx.Get(node, 1);
  if (std::holds_alternative<Act>(av) && std::holds_alternative<Const>(bv)) {
    Act x = cx.NeedAct(node, 0);
    return cx.Set(node, 0, ActTimesWeight(cx, x, std::get<Const>(bv), false, node));
  }
  if (std::holds_alternative<Const>(av) && std::holds_alternative<Act>(bv))
    return LowerWeightTimesAct(cx, node, std::get<Const>(av));
  if (!std::holds_alternative<Act>(av) || !std::holds_alternative<Act>(bv))
    cx.Fail(node, "a MatMul of two constants is not supported");
  LowerActTimesAct(cx, node);
}

// Gemm: B and C (the weight and the bias).
bool GemmWeight(const OnnxNode&, size_t input) { return input >= 1; }
// MatMul: the right operand, unless it is also the left one (x @ x is two activations).
bool MatMulWeight(const OnnxNode& node, size_t input) { return input == 1 && node.inputs[0] != node.inputs[1]; }

}  // namespace

ConverterTable MatMulConverters() {
  return {
      {.op_type = "Gemm", .lower = LowerGemm, .weight_input = GemmWeight},
      {.op_type = "MatMul", .lower = LowerMatMul, .weight_input = MatMulWeight},
  };
}

}  // namespace annealer::lowering
