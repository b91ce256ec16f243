// Normalisation, softmax, pooling and reductions: vector work along rows or columns of an
// activation (Pointwise ops), windows that change the rows (views), reductions over rows (a
// ones-row MatMul) and over columns (row statistics, RowStat).
#include <algorithm>
#include <memory>
#include <set>

#include "src/import/lowering/registry.h"
#include "src/import/lowering/reshape.h"

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
// LayerNormalization and RMSNormalization normalise over every axis from `axis` on: over the
// last one, along the columns; over several (nn.LayerNorm((S, D))) in place, when the columns
// are among them and no part is: the statistics then span rows and columns, as a group norm's do.
void LowerTrailingNorm(Context& cx, const OnnxNode& node, double passes) {
  const Value& v = cx.Get(node, 0);
  const int r = int(DimsOf(v).size());
  int64_t axis = Attr{node}.Int("axis", -1);
  if (axis < 0) axis += r;
  if (const Act* a = std::get_if<Act>(&v); a && axis >= 0 && axis < r - 1) {
    Act x = cx.NeedAct(node, 0);
    const bool parts_outside = std::all_of(x.part_axes.begin(), x.part_axes.end(), [&](int p) { return p < axis; });
    if (x.col_axis >= axis && !x.col_split && parts_outside) {
      cx.problem().Note("layer-norm-axes",
                        "a layer (or RMS) normalisation over several trailing axes runs on the activation in place (Pointwise): its "
                        "statistics span rows and columns, which a tile does not wait for (no traffic change); elements = "
                        "those ops' sizes",
                        Elems(x));
      return LowerPerElement(cx, node, x, passes);
    }
  }
  LowerAlongAxis(cx, node, passes, -1, false);
}
// LayerNormalization: mean, centre, square, sum, root, normalise, scale, shift: 8 passes.
void LowerLayerNorm(Context& cx, const OnnxNode& node) { LowerTrailingNorm(cx, node, 8); }
// RMSNormalization (opset 23; nn.RMSNorm as newer exporters write it): the layer
// normalisation without its mean, centring and shift: square, sum, root, normalise, scale.
void LowerRmsNorm(Context& cx, const OnnxNode& node) { LowerTrailingNorm(cx, node, 5); }
// BatchNormalization with the running statistics: 2 passes (scale, shift). In training mode
// (`training_mode` = 1 from opset 14; before, the mean and variance among the outputs: torch's
// TrainingMode.TRAINING export) it first computes each channel's statistics over the batch and
// spatial axes: priced as InstanceNormalization (8 passes), in place, a tile not waiting for the
// statistics of the whole batch. The statistics outputs (running or saved mean and variance, per channel)
// are constants of the problem: nothing of the forward pass reads them.
void LowerBatchNorm(Context& cx, const OnnxNode& node) {
  const bool training = Attr{node}.Has("training_mode")
                            ? Attr{node}.Int("training_mode", 0) != 0
                            : std::any_of(node.outputs.begin() + (node.outputs.empty() ? 0 : 1), node.outputs.end(),
                                          [](const std::string& o) { return !o.empty(); });
  if (!training) return LowerPerElement(cx, node, cx.NeedAct(node, 0), 2);
  // In the value's layout (a BatchNorm1d's (N, C, L) keeps L as its columns): the passes are
  // the same, and the statistics span rows either way.
  Act x = cx.NeedAct(node, 0);
  if (x.dims.size() < 2) cx.Fail(node, "batch statistics need an (N, C, ...) input, got " + DimsText(x.dims));
  cx.problem().Note("batch-statistics",
                    "a training-mode batch normalisation computes each channel's mean and variance over the batch and "
                    "spatial axes and normalises with them: 8 passes in place (Pointwise), a tile not waiting for the "
                    "statistics of the whole batch (no traffic change); elements = those ops' sizes",
                    Elems(x));
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (!node.outputs[i].empty()) cx.Bind(node.outputs[i], Const{{x.dims[1]}, std::nullopt, true, false, node.outputs[i]});
  LowerPerElement(cx, node, x, 8);
}

// What a group normalisation states, as torch 1.13's reshaped InstanceNormalization or as the op.
constexpr const char* kGroupNormWhat =
    "a group normalisation runs on the activation in place (Pointwise): its statistics span the rows and a group "
    "of columns, which a tile does not wait for (no traffic change); elements = those ops' sizes";

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
  cx.problem().Note("group-norm", kGroupNormWhat, Elems(source));
  Act out = *a;
  out.source = std::make_shared<const Act>(std::move(source));
  cx.Set(node, 0, out);
}

// GroupNormalization (opset 18; from 21 its scale and bias are per channel, not per group): the
// statistics of each group of channels over the spatial axes, then the affine: in place, as the
// InstanceNormalization of the reshape that torch writes for nn.GroupNorm (8 passes).
void LowerGroupNorm(Context& cx, const OnnxNode& node) {
  Act x = cx.NeedAct(node, 0);
  if (x.dims.size() < 2) cx.Fail(node, "group normalisation needs an (N, C, ...) input, got " + DimsText(x.dims));
  const int64_t groups = Attr{node}.Int("num_groups", 0);
  if (groups <= 0 || x.dims[1] % groups != 0)
    cx.Fail(node, "num_groups " + std::to_string(groups) + " does not divide the " + std::to_string(x.dims[1]) +
                      " channels");
  if (x.col_split) x = cx.Relayout(node, x, x.col_axis);
  cx.problem().Note("group-norm", kGroupNormWhat, Elems(x));
  LowerPerElement(cx, node, x, 8);
}

// MaxPool and AveragePool over the spatial axes of (N, C, spatial...) of any rank (1-D audio,
// 2-D images, 3-D video): Π k passes per output element; when the window or stride changes the
// spatial size, a Layout op gathers the view first.
void LowerPool(Context& cx, const OnnxNode& node) {
  Attr a{node};
  Act x = cx.NeedAct(node, 0);
  const size_t r = x.dims.size();
  if (r < 3) cx.Fail(node, "pooling needs an (N, C, spatial...) input, got " + DimsText(x.dims));
  if (x.col_axis != 1 || !x.part_axes.empty()) x = cx.Relayout(node, x, 1);
  const size_t sp = r - 2;
  std::vector<int64_t> k = a.Ints("kernel_shape"), s = a.Ints("strides"), p = a.Ints("pads"), d = a.Ints("dilations");
  if (k.size() != sp) cx.Fail(node, "kernel_shape must have " + std::to_string(sp) + " entries for a " + std::to_string(r) + "-D input");
  if (s.empty()) s.assign(sp, 1);
  if (p.empty()) p.assign(2 * sp, 0);
  if (d.empty()) d.assign(sp, 1);
  if (s.size() != sp || d.size() != sp || p.size() != 2 * sp) cx.Fail(node, "strides/dilations/pads do not match the kernel's rank");
  const std::string auto_pad = a.Text("auto_pad");
  if (auto_pad == "VALID") p.assign(2 * sp, 0);
  std::vector<int64_t> out_dims = x.dims;
  double passes = 1;
  for (size_t i = 0; i < sp; ++i) {
    const int64_t in = x.dims[2 + i];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out_dims[2 + i] = CeilDiv(in, s[i]);
    } else {
      const int64_t span = in + p[i] + p[i + sp] - d[i] * (k[i] - 1) - 1;
      out_dims[2 + i] = (a.Int("ceil_mode", 0) ? CeilDiv(span, s[i]) : span / s[i]) + 1;
    }
    if (out_dims[2 + i] <= 0) cx.Fail(node, "the output would be empty");
    passes *= double(k[i]);
  }
  Act out = x;
  out.dims = out_dims;
  SetChannelsLayout(out, 1);
  out.parts.clear();
  ProblemBuilder& pb = cx.problem();
  const Elements rows = Product(out_dims) / out_dims[1];
  for (TensorId part : x.parts)
    out.parts.push_back(out_dims == x.dims ? pb.Pointwise({part}, passes, node, "pooling")
                                           : pb.View(part, rows, passes, node, "strided-view", kViewWhat));
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

Act RowReduced(Context& cx, const OnnxNode& node, const Act& x_in, const std::set<int>& axes, bool keep);

// Global pooling: over H, W of NCHW as always; over the spatial axes of any other rank (1-D
// audio, 3-D video) as a reduction over rows.
void LowerGlobalPoolNode(Context& cx, const OnnxNode& node) {
  const std::vector<int64_t> dims = DimsOf(cx.Get(node, 0));
  if (dims.size() == 4) return LowerGlobalPool(cx, node, {2, 3}, true);
  if (dims.size() < 3) cx.Fail(node, "global pooling needs an (N, C, spatial...) input, got " + DimsText(dims));
  std::set<int> axes;
  for (int i = 2; i < int(dims.size()); ++i) axes.insert(i);
  Act x = cx.NeedAct(node, 0);
  if (x.col_axis != 1) x = cx.Relayout(node, x, 1);
  cx.Set(node, 0, RowReduced(cx, node, x, axes, true));
}

// A reduction over axes that are rows (mean pooling over a sequence, over windows): the kept
// axes become parts (Layout ops gather them when the layout differs), and each part is reduced
// by a MatMul with a ones row, priced at the vector rate like global pooling.
Act RowReduced(Context& cx, const OnnxNode& node, const Act& x_in, const std::set<int>& axes, bool keep) {
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
  return out;
}

// A reduction over the columns that is a value of its own (a sum over the features kept as an
// output, an arg-max, the column part of a full reduction): each part times a ones column, priced
// at the vector rate like the row reductions; column blocks add up in the accumulator. The
// result keeps the column axis with size 1.
Act ColumnReduced(Context& cx, const OnnxNode& node, const Act& x_in) {
  ProblemBuilder& pb = cx.problem();
  const Act x = cx.Resolved(node, x_in);
  Act out = x;
  out.dims[x.col_axis] = 1;
  out.col_split = false;
  out.parts.clear();
  std::vector<TensorId> blocks;
  for (TensorId part : x.parts) blocks.push_back(pb.ColumnSum(part, node, node.name + "~ones"));
  if (x.col_split) out.parts = {pb.Pointwise(blocks, 0, node, "block-sum")};
  else out.parts = blocks;
  pb.summary().vector_element_passes += Elems(x);
  return out;
}

// A reduction over `axes` of x: over rows (RowReduced), over the columns (ColumnReduced), or
// both (a full reduction, a mean over a sequence and its features): the columns first, then the
// rows. A pending value (heads reshaped across rows and columns, then summed over the heads) is
// gathered with a kept axis as its columns instead, when it has one. Without keepdims the
// reduced axes are dropped (a relabelling, or one Layout op of the small result when read).
Act Reduced(Context& cx, const OnnxNode& node, Act x, const std::set<int>& axes, bool keep) {
  const int r = int(x.dims.size());
  if (axes.count(x.col_axis) && x.pending())
    for (int i = r - 1; i >= 0; --i)
      if (!axes.count(i) && x.dims[i] > 1) {
        x = cx.Relayout(node, x, i, {});
        break;
      }
  if (!axes.count(x.col_axis)) return RowReduced(cx, node, x, axes, keep);
  Act y = ColumnReduced(cx, node, x);
  std::set<int> rows;
  for (int i : axes) if (i != y.col_axis && y.dims[i] > 1) rows.insert(i);
  if (!rows.empty()) y = RowReduced(cx, node, y, rows, true);
  if (keep) return y;
  std::vector<int64_t> dims;
  for (int i = 0; i < r; ++i) if (!axes.count(i)) dims.push_back(y.dims[i]);
  return ReshapeAct(cx, node, y, dims);
}

// ReduceX over the spatial axes of NCHW is global pooling; over the columns with keepdims, a
// row statistic its consumers read (layer-norm spelled out).
void LowerReduce(Context& cx, const OnnxNode& node) {
  Attr a{node};
  const Value& v = cx.Get(node, 0);
  std::vector<int64_t> axes = a.Ints("axes");
  if (axes.empty() && cx.HasInput(node, 1)) axes = cx.NeedInts(node, 1, "the axes");
  const int64_t rank = int64_t(DimsOf(v).size());
  for (int64_t i : axes)
    if (i < -rank || i >= rank) cx.Fail(node, "axis " + std::to_string(i) + " is out of range for rank " + std::to_string(rank));
  const bool keep = a.Int("keepdims", 1) != 0;
  if (const Const* c = std::get_if<Const>(&v)) {
    // Shape arithmetic (a detector's preprocessing reduces the image size): the reduced dims,
    // and the values when every element is known.
    const int r = int(c->dims.size());
    std::set<int> ax;
    for (int64_t i : axes) ax.insert(int(i < 0 ? i + r : i));
    if (axes.empty() && !a.Int("noop_with_empty_axes", 0)) for (int i = 0; i < r; ++i) ax.insert(i);
    Const out = *c;
    out.dims.clear();
    for (int i = 0; i < r; ++i) {
      if (!ax.count(i)) out.dims.push_back(c->dims[i]);
      else if (keep) out.dims.push_back(1);
    }
    out.values.reset();
    out.initializer = false;
    if (c->values && int64_t(c->values->size()) == Product(c->dims) && ax.size() == size_t(r) && !c->values->empty()) {
      const std::vector<double>& vals = *c->values;
      double y = node.op_type == "ReduceProd" ? 1 : 0;
      if (node.op_type == "ReduceMax") y = *std::max_element(vals.begin(), vals.end());
      else if (node.op_type == "ReduceMin") y = *std::min_element(vals.begin(), vals.end());
      else for (double e : vals) y = node.op_type == "ReduceProd" ? y * e : y + (node.op_type == "ReduceSumSquare" ? e * e : e);
      if (node.op_type == "ReduceMean") y /= double(vals.size());
      if (node.op_type != "ReduceL2" && node.op_type != "ReduceL1" && node.op_type != "ReduceLogSumExp") out.values = std::vector<double>{y};
    }
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
  cx.Set(node, 0, Reduced(cx, node, x, ax, keep));
}

// TopK: the k largest (or smallest) along one axis, as values and indices. The axis gathered
// as the columns (heads kept), ceil(log2 n) compare passes over each row, then a Layout op
// gathers the k selected columns; both outputs are that selection.
void LowerTopK(Context& cx, const OnnxNode& node) {
  const Value& v = cx.Get(node, 0);
  const int r = int(DimsOf(v).size());
  int64_t axis = Attr{node}.Int("axis", -1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) cx.Fail(node, "axis " + std::to_string(Attr{node}.Int("axis", -1)) + " is out of range for rank " + std::to_string(r));
  const std::vector<int64_t> k = cx.HasInput(node, 1) ? cx.NeedInts(node, 1, "k") : std::vector<int64_t>{Attr{node}.Int("k", 0)};
  std::vector<int64_t> out_dims = DimsOf(v);
  if (k.size() != 1 || k[0] < 1 || k[0] > out_dims[axis])
    cx.Fail(node, "k must be one value in 1.." + std::to_string(out_dims[axis]) + ", got " + DimsText(k));
  out_dims[axis] = k[0];
  if (const Const* c = std::get_if<Const>(&v)) {
    Const out;
    out.dims = out_dims;
    out.is_float = c->is_float;
    cx.Set(node, 0, out);
    out.is_float = false;
    return cx.Set(node, 1, out);
  }
  if (std::holds_alternative<RowStat>(v)) cx.Fail(node, "a top-k of a row statistic is not supported");
  Act x = cx.NeedAct(node, 0);
  if (x.col_axis != axis || x.col_split || x.pending()) x = cx.Relayout(node, x, int(axis), x.part_axes);
  ProblemBuilder& pb = cx.problem();
  const int64_t n = x.dims[axis];
  double passes = 1;
  while ((int64_t{1} << int(passes)) < n) ++passes;
  pb.Note("top-k",
          "a top-k selection is compare passes (ceil log2 of the axis) over its input (Pointwise), then a Layout op gathers "
          "the k selected columns; elements = the inputs' sizes",
          Elems(x));
  Act out = x;
  out.dims = out_dims;
  out.parts.clear();
  const std::string value = node.outputs.empty() ? node.name : node.outputs[0];
  for (size_t i = 0; i < x.parts.size(); ++i) {
    const TensorId ranked = pb.Pointwise({x.parts[i]}, passes, node, "top-k");
    out.parts.push_back(pb.Layout({ranked}, cx.tensor(x.parts[i]).height, k[0], node,
                                  value + PartSuffix(int64_t(i), int64_t(x.parts.size()))));
  }
  cx.Set(node, 0, out);
  cx.Set(node, 1, out);
}

// ArgMax, ArgMin: a reduction over one axis whose result is an index; as the reduction (a ones
// MatMul over the rows or the columns), never a row statistic: its readers gather by it.
void LowerArgReduce(Context& cx, const OnnxNode& node) {
  Attr a{node};
  const Value& v = cx.Get(node, 0);
  const int r = int(DimsOf(v).size());
  int64_t axis = a.Int("axis", 0);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) cx.Fail(node, "axis " + std::to_string(a.Int("axis", 0)) + " is out of range for rank " + std::to_string(r));
  const bool keep = a.Int("keepdims", 1) != 0;
  if (const Const* c = std::get_if<Const>(&v)) {
    Const out;
    for (int i = 0; i < r; ++i)
      if (i != axis) out.dims.push_back(c->dims[i]);
      else if (keep) out.dims.push_back(1);
    return cx.Set(node, 0, out);
  }
  if (std::holds_alternative<RowStat>(v)) cx.Fail(node, "an arg-max of a row statistic is not supported");
  cx.Set(node, 0, Reduced(cx, node, cx.NeedAct(node, 0), {int(axis)}, keep));
}

}  // namespace

ConverterTable NormalizationConverters() {
  return {
      {"Softmax", LowerSoftmax1, 0, 13},
      {"Softmax", LowerSoftmax13, 13},
      {"LogSoftmax", LowerSoftmax1, 0, 13},
      {"LogSoftmax", LowerSoftmax13, 13},
      {"LayerNormalization", LowerLayerNorm},
      {"RMSNormalization", LowerRmsNorm, 23},
      {"BatchNormalization", LowerBatchNorm},
      {"InstanceNormalization", LowerInstanceNorm},
      {"GroupNormalization", LowerGroupNorm, 18},
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
      {"ReduceProd", LowerReduce},
      {"ReduceLogSumExp", LowerReduce},
      {"ReduceL1", LowerReduce},
      {"ArgMax", LowerArgReduce},
      {"ArgMin", LowerArgReduce},
      {"TopK", LowerTopK, 10},
  };
}

}  // namespace annealer::lowering
