// Data movement: the ops that change the rows of an activation or split its columns: Concat,
// Gather, Slice, Split, Resize, Upsample, Pad (views with other rows, or column blocks).
#include <algorithm>
#include <array>
#include <cmath>

#include "src/import/lowering/registry.h"

namespace annealer::lowering {
namespace {

// ---- resampling: Resize, Upsample, Pad ----------------------------------------------------
// They change the rows of an NCHW activation: a view per channel block, priced by the
// interpolation's passes.
Act NeedSpatialAct(Context& cx, const OnnxNode& node) {
  Act x = cx.NeedAct(node, 0);
  if (x.dims.size() != 4 || x.col_axis != 1 || !x.part_axes.empty())
    cx.Fail(node, "only the spatial axes of an NCHW activation can be resized or padded");
  return x;
}

void SetResampled(Context& cx, const OnnxNode& node, const Act& x, const std::vector<int64_t>& out_dims, double passes) {
  Act out = x;
  out.dims = out_dims;
  out.parts.clear();
  const Elements rows = out_dims[0] * out_dims[2] * out_dims[3];
  for (TensorId part : x.parts)
    out.parts.push_back(out_dims == x.dims ? part : cx.problem().View(part, rows, passes, node, "strided-view", kViewWhat));
  cx.Set(node, 0, out);
}

// Pad: the pads attribute (before opset 11), else the pads input.
void LowerPad(Context& cx, const OnnxNode& node) {
  Act x = NeedSpatialAct(cx, node);
  std::vector<int64_t> out_dims = x.dims;
  std::vector<int64_t> pads = Attr{node}.Ints("pads");
  if (pads.empty() && cx.HasInput(node, 1)) pads = cx.NeedInts(node, 1, "the pads");
  if (pads.size() != 8) cx.Fail(node, "pads must have 8 entries for a 4-D input");
  for (int i = 0; i < 4; ++i) {
    if ((i < 2) && (pads[i] != 0 || pads[i + 4] != 0)) cx.Fail(node, "padding the batch or channel axis is not supported");
    if (pads[i] < 0 || pads[i + 4] < 0 || pads[i] > (1 << 20) || pads[i + 4] > (1 << 20)) cx.Fail(node, "pads must be in 0..2^20");
    out_dims[i] += pads[i] + pads[i + 4];
  }
  SetResampled(cx, node, x, out_dims, 1);
}

// Resize and Upsample: the scales (attribute of Upsample before opset 9, else input
// `scales_input`) or the sizes (input 3 of Resize from opset 11).
void LowerScaled(Context& cx, const OnnxNode& node, size_t scales_input, bool scales_attribute) {
  Attr a{node};
  Act x = NeedSpatialAct(cx, node);
  std::vector<int64_t> out_dims = x.dims;
  const std::string mode = a.Text("mode");
  const double passes = mode == "linear" || mode == "bilinear" ? 4 : mode == "cubic" ? 16 : 1;
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (scales_attribute && a.Has("scales")) scales = node.attributes.at("scales").floats;
  if (scales.empty() && cx.HasInput(node, scales_input)) {
    const Const& c = cx.NeedConst(node, scales_input, "the scales");
    if (c.values && !c.values->empty()) scales = *c.values;
  }
  if (scales.empty() && cx.HasInput(node, 3)) sizes = cx.NeedInts(node, 3, "the sizes");
  if (!sizes.empty()) {
    if (sizes.size() != 4) cx.Fail(node, "sizes must have 4 entries");
    out_dims = sizes;
  } else {
    if (scales.size() != 4) cx.Fail(node, "the scales (or sizes) must be known at import time, 4 entries");
    for (int i = 0; i < 4; ++i) {
      if (!(scales[i] > 0) || scales[i] > 1024) cx.Fail(node, "scales must be positive and at most 1024");
      out_dims[i] = static_cast<int64_t>(std::floor(double(x.dims[i]) * scales[i]));
    }
  }
  if (out_dims[0] != x.dims[0] || out_dims[1] != x.dims[1]) cx.Fail(node, "resizing the batch or channel axis is not supported");
  for (int64_t d : out_dims) if (d <= 0 || d > (1 << 20)) cx.Fail(node, "the output dims " + DimsText(out_dims) + " are out of range");
  SetResampled(cx, node, x, out_dims, passes);
}

// Resize opset 10: (X, scales). From 11: (X, roi, scales, sizes).
void LowerResize10(Context& cx, const OnnxNode& node) { LowerScaled(cx, node, 1, false); }
void LowerResize11(Context& cx, const OnnxNode& node) { LowerScaled(cx, node, 2, false); }
void LowerUpsample(Context& cx, const OnnxNode& node) { LowerScaled(cx, node, 1, true); }

// ---- concat, gather, slice, split ---------------------------------------------------------
// Along the channels: the blocks stay separate tensors (col_split); their consumers work
// blockwise (a MatMul or convolution multiplies each block by its rows of the weight).
void ConcatChannels(Context& cx, const OnnxNode& node, const std::vector<const Value*>& ins, const Act& act,
                    const std::vector<int64_t>& out_dims, int64_t axis) {
  const int r = int(out_dims.size());
  Act out = act;
  out.dims = out_dims;
  out.parts.clear();
  for (const Value* v : ins) {
    const Act* x = std::get_if<Act>(v);
    if (!x) cx.Fail(node, "a constant among the channels of a concatenation is not supported");
    Act block = *x;
    if (block.model_input) cx.Materialized(block);
    if (block.col_axis != axis || !block.part_axes.empty() || block.row_axes != act.row_axes)
      cx.Fail(node, "concatenated activations of different layouts are not supported");
    for (int i = 0; i < r; ++i)
      if (i != axis && block.dims[i] != out_dims[i])
        cx.Fail(node, "inputs " + DimsText(act.dims) + " and " + DimsText(block.dims) + " differ outside axis " + std::to_string(axis));
    for (TensorId t : block.parts) out.parts.push_back(t);
  }
  out.col_split = out.parts.size() > 1;
  cx.Set(node, 0, out);
}

// Along rows, one activation with constants (a class token): a view.
void ConcatRows(Context& cx, const OnnxNode& node, const std::vector<const Value*>& ins, const Act& act,
                const std::vector<int64_t>& out_dims) {
  Act x = act;
  cx.Materialized(x);
  if (!x.part_axes.empty() || x.col_split)
    cx.Fail(node, "concatenating rows of split heads or of channel blocks is not supported");
  Act out = x;
  out.dims = out_dims;
  const Elements rows = PartShape(out).first;
  ProblemBuilder& pb = cx.problem();
  for (const Value* v : ins)
    if (const Const* c = std::get_if<Const>(v)) pb.NoteBroadcast(*c);
  out.parts = {pb.View(x.parts[0], rows, 1, node, "row-concat-view",
                       "rows concatenated with constants (a class token) are a view written by two ones-MatMuls; elements = view size, extra MACs = source + view")};
  cx.Set(node, 0, out);
}

void LowerConcat(Context& cx, const OnnxNode& node) {
  Attr a{node};
  std::vector<const Value*> ins;
  for (size_t i = 0; i < node.inputs.size(); ++i) if (cx.HasInput(node, i)) ins.push_back(&cx.Get(node, i));
  if (ins.empty()) cx.Fail(node, "no inputs");
  const int r = int(DimsOf(*ins[0]).size());
  int64_t axis = a.Int("axis", 0);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) cx.Fail(node, "axis " + std::to_string(a.Int("axis", 0)) + " is out of range for rank " + std::to_string(r));
  std::vector<int64_t> out_dims = DimsOf(*ins[0]);
  out_dims[axis] = 0;
  const Act* act = nullptr;
  int acts = 0;
  bool all_const_values = true;
  for (const Value* v : ins) {
    std::vector<int64_t> d = DimsOf(*v);
    if (int(d.size()) != r) cx.Fail(node, "inputs of different ranks");
    for (int i = 0; i < r; ++i)
      if (i != axis && d[i] != out_dims[i]) cx.Fail(node, "inputs " + DimsText(out_dims) + " and " + DimsText(d) + " differ outside axis " + std::to_string(axis));
    out_dims[axis] += d[axis];
    if (const Act* x = std::get_if<Act>(v)) { act = x; ++acts; }
    if (std::holds_alternative<RowStat>(*v)) cx.Fail(node, "concatenating a row statistic is not supported");
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
    return cx.Set(node, 0, out);
  }
  if (axis == act->col_axis && act->part_axes.empty()) return ConcatChannels(cx, node, ins, *act, out_dims, axis);
  if (acts > 1) cx.Fail(node, "concatenating several computed activations along rows is not supported (one activation and constants only)");
  ConcatRows(cx, node, ins, *act, out_dims);
}

// Rows gathered or sliced from a single-tensor activation (the class token): a view with the
// output's rows.
void SetRowView(Context& cx, const OnnxNode& node, const Act& x, Act out) {
  if (x.parts.size() != 1) cx.Fail(node, "taking rows of split heads or of channel blocks is not supported");
  out.parts = {cx.problem().View(x.parts[0], PartShape(out).first, 0, node, "row-gather-view",
                                 "rows gathered from an activation (the class token) are read by a ones-MatMul; extra MACs = the source")};
  cx.Set(node, 0, out);
}

// An embedding lookup with the model's token ids: the rows are read from the table in slow
// memory, like a model input (the table's parameters count).
void LowerEmbedding(Context& cx, const OnnxNode& node, const Const& table, const Act& ids) {
  if (Attr{node}.Int("axis", 0) != 0) cx.Fail(node, "an embedding lookup along axis 1 is not supported");
  if (!ids.model_input) cx.Fail(node, "looking up rows with indices computed by the model is not supported");
  Act out;
  out.dims = ids.dims;
  out.dims.push_back(table.dims[1]);
  out.model_input = true;
  out.name = node.outputs.empty() ? node.name : node.outputs[0];
  SetChannelsLayout(out, int(out.dims.size()) - 1);
  cx.Set(node, 0, out);
}

void LowerGather(Context& cx, const OnnxNode& node) {
  Attr a{node};
  const Value& v = cx.Get(node, 0);
  if (const Const* table = std::get_if<Const>(&v); table && table->is_float && table->dims.size() == 2 &&
                                                   std::holds_alternative<Act>(cx.Get(node, 1)))
    return LowerEmbedding(cx, node, *table, std::get<Act>(cx.Get(node, 1)));
  const Const& idx = cx.NeedConst(node, 1, "the indices");
  std::vector<int64_t> in_dims = DimsOf(v);
  const int r = int(in_dims.size());
  int64_t axis = a.Int("axis", 0);
  if (axis < 0) axis += r;
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
        if (k < 0 || k >= in_dims[0]) cx.Fail(node, "index out of range");
        vals.push_back((*c->values)[k]);
      }
      out.values = vals;
    }
    return cx.Set(node, 0, out);
  }
  Act x = cx.NeedAct(node, 0);
  if (axis == x.col_axis || !x.part_axes.empty() || x.col_split)
    cx.Fail(node, "gathering along the column axis of an activation (an embedding lookup of a computed value) is not supported");
  Act out = x;
  out.dims = out_dims;
  // The gathered axis is replaced by the index dims (rows); recompute the layout positions.
  out.row_axes.clear();
  int col = x.col_axis > axis ? x.col_axis - 1 + int(idx.dims.size()) : x.col_axis;
  SetChannelsLayout(out, col);
  SetRowView(cx, node, x, std::move(out));
}

// Slice with its starts, ends, axes and steps known.
void SliceWith(Context& cx, const OnnxNode& node, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
               std::vector<int64_t> axes, std::vector<int64_t> steps) {
  const Value& v = cx.Get(node, 0);
  std::vector<int64_t> in_dims = DimsOf(v);
  const int r = int(in_dims.size());
  if (axes.empty()) for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  std::vector<int64_t> out_dims = in_dims;
  std::vector<std::array<int64_t, 3>> ranges(r);
  for (int i = 0; i < r; ++i) ranges[i] = {0, in_dims[i], 1};
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t ax = axes[i] < 0 ? axes[i] + r : axes[i];
    if (ax < 0 || ax >= r || steps[i] == 0) cx.Fail(node, "bad axes or steps");
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
    return cx.Set(node, 0, out);
  }
  Act x = cx.NeedAct(node, 0);
  if (out_dims == in_dims) return cx.Set(node, 0, x);
  for (int i = 0; i < r; ++i)
    if (out_dims[i] != in_dims[i] && i == x.col_axis)
      cx.Fail(node, "slicing the column axis of an activation is not supported unless it splits a projection into equal parts (use Split)");
  Act out = x;
  out.dims = out_dims;
  SetRowView(cx, node, x, std::move(out));
}

// Slice before opset 10: starts, ends, axes as attributes.
void LowerSlice1(Context& cx, const OnnxNode& node) {
  Attr a{node};
  SliceWith(cx, node, a.Ints("starts"), a.Ints("ends"), a.Ints("axes"), {});
}

// From opset 10: starts, ends, axes, steps as inputs.
void LowerSlice10(Context& cx, const OnnxNode& node) {
  cx.Get(node, 0);  // the data input first, as its errors come first
  std::vector<int64_t> starts = cx.NeedInts(node, 1, "starts"), ends = cx.NeedInts(node, 2, "ends"), axes, steps;
  if (cx.HasInput(node, 3)) axes = cx.NeedInts(node, 3, "axes");
  if (cx.HasInput(node, 4)) steps = cx.NeedInts(node, 4, "steps");
  SliceWith(cx, node, starts, ends, axes, steps);
}

// Channel blocks split at block boundaries: each output takes its blocks.
void SplitBlocks(Context& cx, const OnnxNode& node, const Act& x, int64_t axis, const std::vector<int64_t>& split) {
  size_t b = 0;
  for (size_t i = 0; i < split.size(); ++i) {
    Act out = x;
    out.dims[axis] = split[i];
    out.parts.clear();
    Elements width = 0;
    while (width < split[i] && b < x.parts.size()) width += cx.tensor(x.parts[b]).width, out.parts.push_back(x.parts[b++]);
    if (width != split[i]) cx.Fail(node, "a split of a concatenation must fall on the concatenated blocks");
    out.col_split = out.parts.size() > 1;
    cx.Set(node, i, out);
  }
}

// Split: the split attribute, else the split input (the spelling from opset 13).
void LowerSplit(Context& cx, const OnnxNode& node) {
  Attr a{node};
  Act x = cx.NeedAct(node, 0);
  const int r = int(x.dims.size());
  int64_t axis = a.Int("axis", 0);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) cx.Fail(node, "axis " + std::to_string(a.Int("axis", 0)) + " is out of range for rank " + std::to_string(r));
  std::vector<int64_t> split = a.Ints("split");
  if (split.empty() && cx.HasInput(node, 1)) split = cx.NeedInts(node, 1, "split");
  const int parts = int(node.outputs.size());
  if (split.empty()) split.assign(parts, x.dims[axis] / parts);
  if (int(split.size()) != parts) cx.Fail(node, "split has " + std::to_string(split.size()) + " sizes for " + std::to_string(parts) + " outputs");
  if (axis == x.col_axis && x.col_split) return SplitBlocks(cx, node, x, axis, split);
  for (int64_t s : split)
    if (s != split[0]) cx.Fail(node, "unequal splits are not supported");
  if (axis != x.col_axis || !x.part_axes.empty() || x.col_split)
    cx.Fail(node, "only a split of the column axis (a fused projection into Q, K, V) is supported");
  if (x.model_input) cx.Fail(node, "splitting a model input is not supported");
  std::vector<TensorId> pieces = cx.problem().SplitColumns(x.parts[0], parts, node, 0);
  for (int i = 0; i < parts; ++i) {
    Act out = x;
    out.dims[axis] = split[i];
    out.parts = {pieces[i]};
    cx.Set(node, size_t(i), out);
  }
}

}  // namespace

ConverterTable DataMovementConverters() {
  return {
      {"Pad", LowerPad},
      {"Resize", LowerResize10, 0, 11},
      {"Resize", LowerResize11, 11},
      {"Upsample", LowerUpsample},
      {"Concat", LowerConcat},
      {"Gather", LowerGather},
      {"Slice", LowerSlice1, 0, 10},
      {"Slice", LowerSlice10, 10},
      {"Split", LowerSplit},
  };
}

}  // namespace annealer::lowering
