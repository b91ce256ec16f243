// Normalisation, softmax, pooling and reductions: vector work along rows or columns of an
// activation (Pointwise ops), windows that change the rows (views), reductions over rows (a
// ones-row MatMul) and over columns (row statistics, RowStat).
#include <algorithm>
#include <memory>
#include <set>

#include "src/import/lowering/registry.h"

namespace annealer::lowering {
namespace {

constexpr const char* kRowReductionWhat =
    "softmax and normalisation reduce along each row; as Pointwise ops a tile does not wait for its whole row (no traffic change); elements = those ops' sizes";

// `passes` vector passes over every part of the activation, in place of the node.
void LowerPerElement(Context& cx, const OnnxNode& node, Act x, double passes) {
  if (x.col_split && node.op_type != "BatchNormalization" && node.op_type != "InstanceNormalization")
    cx.Fail(node, "normalising along the channels of a concatenation (or of merged heads) is not supported");
  Act out = x;
  for (TensorId& t : out.parts) t = cx.problem().Pointwise({t}, passes, node, "normalisation");
  cx.Set(node, 0, out);
}

// A normalisation along one axis (Softmax, LogSoftmax, LayerNormalization): the axis must be
// the columns. `last_axis_is_rows_2d`: the axis may also be the last one, as opset < 13's
// Softmax coerces the input to 2-D at `axis`.
void LowerAlongAxis(Context& cx, const OnnxNode& node, double passes, int64_t default_axis, bool last_axis_is_rows_2d) {
  Act x = cx.NeedAct(node, 0);
  const int r = int(x.dims.size());
  int64_t axis = Attr{node}.Int("axis", default_axis);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) cx.Fail(node, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  const bool over_cols = axis == x.col_axis || (node.op_type != "Softmax" && axis == r - 1 && x.col_axis == r - 1);
  // Along another axis: gathered with that axis as the columns (a Layout op), heads kept.
  if (!over_cols && !(last_axis_is_rows_2d && axis == r - 1)) x = cx.Relayout(node, x, int(axis), x.part_axes);
  if (x.col_split) x = cx.Relayout(node, x, x.col_axis);
  cx.problem().Note("row-reduction", kRowReductionWhat, Elems(x));
  LowerPerElement(cx, node, x, passes);
}

// Softmax and LogSoftmax before opset 13: axis 1 by default, the input coerced to 2-D there.
void LowerSoftmax1(Context& cx, const OnnxNode& node) { LowerAlongAxis(cx, node, 5, 1, true); }
// From opset 13: one axis, -1 by default.
void LowerSoftmax13(Context& cx, const OnnxNode& node) { LowerAlongAxis(cx, node, 5, -1, false); }
void LowerLayerNorm(Context& cx, const OnnxNode& node) { LowerAlongAxis(cx, node, 8, -1, false); }
void LowerBatchNorm(Context& cx, const OnnxNode& node) { LowerPerElement(cx, node, cx.NeedAct(node, 0), 2); }
// InstanceNormalization; on a value reshaped from an activation without moving data (GroupNorm
// as exported: Reshape [N,C,H,W] -> [N,G,C/G·H·W], InstanceNormalization, Reshape back), the
// normalisation runs on the source's tensors in place and the value stays a reshape of them, so
// the reshape back is the activation itself: no Layout op.
void LowerInstanceNorm(Context& cx, const OnnxNode& node) {
  const Value& v = cx.Get(node, 0);
  const Act* a = std::get_if<Act>(&v);
  if (!a || !a->pending() || !a->reshape_only) return LowerPerElement(cx, node, cx.NeedAct(node, 0), 8);
  Act source = *a->source;
  for (TensorId& t : source.parts) t = cx.problem().Pointwise({t}, 8, node, "normalisation");
  cx.problem().Note("group-norm",
                    "a group normalisation runs on the activation in place (Pointwise): its statistics span the rows and a group "
                    "of columns, which a tile does not wait for (no traffic change); elements = those ops' sizes",
                    Elems(source));
  Act out = *a;
  out.source = std::make_shared<const Act>(std::move(source));
  cx.Set(node, 0, out);
}

void LowerPool(Context& cx, const OnnxNode& node) {
  Attr a{node};
  Act x = cx.NeedAct(node, 0);
  if (x.dims.size() != 4 || x.col_axis != 1) cx.Fail(node, "only 2-D pooling on NCHW is supported");
  std::vector<int64_t> k = a.Ints("kernel_shape"), s = a.Ints("strides"), p = a.Ints("pads"), d = a.Ints("dilations");
  if (k.size() != 2) cx.Fail(node, "kernel_shape must have 2 entries");
  if (s.empty()) s = {1, 1};
  if (p.empty()) p = {0, 0, 0, 0};
  if (d.empty()) d = {1, 1};
  if (s.size() != 2 || d.size() != 2 || p.size() != 4) cx.Fail(node, "strides/dilations/pads do not match a 2-D pooling");
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
  ProblemBuilder& pb = cx.problem();
  for (TensorId part : x.parts)
    out.parts.push_back(ho == h && wo == w ? pb.Pointwise({part}, passes, node, "pooling")
                                           : pb.View(part, x.dims[0] * ho * wo, passes, node, "strided-view", kViewWhat));
  out.col_split = x.col_split;
  cx.Set(node, 0, out);
}

// A reduction over the rows (global pooling): a MatMul with a ones row per image; its M·K·N is
// the reduction's adds, priced at the vector rate and reported apart from the model's MACs.
void LowerGlobalPool(Context& cx, const OnnxNode& node, const std::set<int>& axes, bool keepdims) {
  ProblemBuilder& pb = cx.problem();
  Act x = cx.NeedAct(node, 0);
  if (x.dims.size() != 4 || x.col_axis != 1 || axes != std::set<int>{2, 3})
    cx.Fail(node, "global pooling is supported over the spatial axes of NCHW only");
  const int64_t n = x.dims[0];
  const TensorId u = pb.NewTensor(n, cx.tensor(x.parts[0]).height, {node.name + "~ones", "view-selector"});
  const Elements spatial = x.dims[2] * x.dims[3];
  Act out;
  out.dims = keepdims ? std::vector<int64_t>{n, x.dims[1], 1, 1} : std::vector<int64_t>{n, x.dims[1]};
  SetChannelsLayout(out, 1);
  for (TensorId part : x.parts) {
    out.parts.push_back(pb.MatMul(u, part, node, "reduction", pb.hw().pointwise_base * double(CeilDiv(spatial, pb.hw().native))));
    pb.Note("row-reduction-matmul", "a reduction over rows (global pooling) is a MatMul with a ones row; extra MACs = the adds (reported apart from the model's MACs)",
            0, n * cx.tensor(part).size());
  }
  out.col_split = x.col_split;
  pb.summary().vector_element_passes += Elems(x);
  cx.Set(node, 0, out);
}

void LowerGlobalPoolNode(Context& cx, const OnnxNode& node) { LowerGlobalPool(cx, node, {2, 3}, true); }

// A reduction over axes that are rows (mean pooling over a sequence, over windows): the kept
// axes become parts (Layout ops gather them when the layout differs), and each part is reduced
// by a MatMul with a ones row, priced at the vector rate like global pooling.
void LowerRowReduce(Context& cx, const OnnxNode& node, const Act& x_in, const std::set<int>& axes, bool keep) {
  ProblemBuilder& pb = cx.problem();
  const int r = int(x_in.dims.size());
  std::vector<int> kept;
  for (int i = 0; i < r; ++i)
    if (!axes.count(i) && i != x_in.col_axis && x_in.dims[i] > 1) kept.push_back(i);
  const Act x = cx.Relayout(node, x_in, x_in.col_axis, kept);
  const Elements rows = cx.tensor(x.parts[0]).height;
  const TensorId u = pb.NewTensor(1, rows, {node.name + "~ones", "view-selector"});
  Act out;
  std::vector<int> new_index(r, -1);
  for (int i = 0; i < r; ++i) {
    if (axes.count(i) && !keep) continue;
    new_index[i] = int(out.dims.size());
    out.dims.push_back(axes.count(i) ? 1 : x.dims[i]);
  }
  SetChannelsLayout(out, new_index[x.col_axis]);
  for (int k : kept) {
    out.row_axes.erase(std::remove(out.row_axes.begin(), out.row_axes.end(), new_index[k]), out.row_axes.end());
    out.part_axes.push_back(new_index[k]);
  }
  for (TensorId part : x.parts) {
    out.parts.push_back(pb.MatMul(u, part, node, "reduction", pb.hw().pointwise_base * double(CeilDiv(rows, pb.hw().native))));
    pb.Note("row-reduction-matmul", "a reduction over rows (global pooling) is a MatMul with a ones row; extra MACs = the adds (reported apart from the model's MACs)",
            0, cx.tensor(part).size());
  }
  pb.summary().vector_element_passes += Elems(x);
  cx.Set(node, 0, out);
}

// ReduceX over the spatial axes of NCHW is global pooling; over the columns with keepdims, a
// row statistic its consumers read (layer-norm spelled out).
void LowerReduce(Context& cx, const OnnxNode& node) {
  Attr a{node};
  const Value& v = cx.Get(node, 0);
  std::vector<int64_t> axes = a.Ints("axes");
  if (axes.empty() && cx.HasInput(node, 1)) axes = cx.NeedInts(node, 1, "the axes");
  const bool keep = a.Int("keepdims", 1) != 0;
  if (const Const* c = std::get_if<Const>(&v)) {
    Const out = *c;
    out.values.reset();
    return cx.Set(node, 0, out);
  }
  if (std::holds_alternative<RowStat>(v)) cx.Fail(node, "a reduction of a row statistic is not supported");
  Act x = cx.NeedAct(node, 0);
  const int r = int(x.dims.size());
  std::set<int> ax;
  for (int64_t i : axes) ax.insert(int(i < 0 ? i + r : i));
  if (axes.empty()) for (int i = 0; i < r; ++i) ax.insert(i);
  if (ax == std::set<int>{2, 3} && r == 4 && x.col_axis == 1 && x.part_axes.empty())
    return LowerGlobalPool(cx, node, ax, keep);
  if (ax == std::set<int>{x.col_axis} && keep && x.parts.size() == 1) {
    cx.Materialized(x);
    RowStat s;
    s.like = x;
    s.dims = x.dims;
    s.dims[x.col_axis] = 1;
    s.sources = {x.parts[0]};
    s.passes = 1;
    cx.problem().Note("row-reduction", kRowReductionWhat, Elems(x));
    return cx.Set(node, 0, s);
  }
  if (!ax.count(x.col_axis)) return LowerRowReduce(cx, node, x, ax, keep);
  cx.Fail(node, "reduction over axes " + DimsText(axes) + " of " + DimsText(x.dims) +
                    " is not supported (supported: the column axis with keepdims, or axes other than the columns)");
}

}  // namespace

ConverterTable NormalizationConverters() {
  return {
      {"Softmax", LowerSoftmax1, 0, 13},
      {"Softmax", LowerSoftmax13, 13},
      {"LogSoftmax", LowerSoftmax1, 0, 13},
      {"LogSoftmax", LowerSoftmax13, 13},
      {"LayerNormalization", LowerLayerNorm},
      {"BatchNormalization", LowerBatchNorm},
      {"InstanceNormalization", LowerInstanceNorm},
      {"MaxPool", LowerPool},
      {"AveragePool", LowerPool},
      {"GlobalAveragePool", LowerGlobalPoolNode},
      {"GlobalMaxPool", LowerGlobalPoolNode},
      {"ReduceMean", LowerReduce},
      {"ReduceSum", LowerReduce},
      {"ReduceMax", LowerReduce},
      {"ReduceMin", LowerReduce},
      {"ReduceL2", LowerReduce},
      {"ReduceSumSquare", LowerReduce},
  };
}

}  // namespace annealer::lowering
