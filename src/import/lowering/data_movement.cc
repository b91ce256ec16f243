// Data movement: the ops that change the rows of an activation or split its columns: Concat,
// Gather, Slice, Split, Resize, Upsample, Pad (views with other rows, or column blocks), and the
// scatters that write into one.
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "src/import/lowering/data_movement.h"
#include "src/import/lowering/folding.h"
#include "src/import/lowering/registry.h"

namespace annealer::lowering {
namespace {

// ---- resampling: Resize, Upsample, Pad ----------------------------------------------------
// They change the rows of an NCHW activation: a view per channel block, priced by the
// interpolation's passes.
Act NeedSpatialAct(Context& cx, const OnnxNode& node) {
  Act x = cx.NeedAct(node, 0);
  if (x.dims.size() < 3 || x.dims.size() > 5)
    cx.Fail(node, "only the spatial axes of an (N, C, spatial...) activation of rank 3 to 5 can be resized, got " + DimsText(x.dims));
  // The channels as the columns (a 3-D image unsqueezed to NCHW is laid out otherwise).
  if (x.col_axis != 1 || !x.part_axes.empty()) x = cx.Relayout(node, x, 1);
  return x;
}

void SetResampled(Context& cx, const OnnxNode& node, const Act& x, const std::vector<int64_t>& out_dims, double passes) {
  Act out = x;
  out.dims = out_dims;
  out.parts.clear();
  const Elements rows = Product(out_dims) / out_dims[1];
  for (TensorId part : x.parts)
    out.parts.push_back(out_dims == x.dims ? part : cx.problem().View(part, rows, passes, node, "strided-view", kViewWhat));
  cx.Set(node, 0, out);
}

// Pad: the pads attribute (before opset 11), else the pads input. Pure data movement: the
// spatial axes of NCHW are a view per channel block; any other pad (channels-last, a sequence,
// the channels) a pending rearrangement. Negative pads crop.
void LowerPad(Context& cx, const OnnxNode& node) {
  const Value& v = cx.Get(node, 0);
  if (!std::holds_alternative<Act>(v)) cx.Fail(node, "padding a constant or a row statistic is not supported");
  Act x = std::get<Act>(v);
  std::vector<int64_t> out_dims = x.dims;
  const size_t r = out_dims.size();
  std::vector<int64_t> pads = Attr{node}.Ints("pads");
  if (pads.empty() && cx.HasInput(node, 1)) pads = cx.NeedInts(node, 1, "the pads");
  if (cx.HasInput(node, 3)) {
    // Opset 18's axes input: the pads are for those axes only.
    const std::vector<int64_t> axes = cx.NeedInts(node, 3, "the axes");
    if (pads.size() != 2 * axes.size()) cx.Fail(node, "pads must have " + std::to_string(2 * axes.size()) + " entries for " + std::to_string(axes.size()) + " axes");
    std::vector<int64_t> full(2 * r, 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t ax = axes[i] < 0 ? axes[i] + int64_t(r) : axes[i];
      if (ax < 0 || ax >= int64_t(r)) cx.Fail(node, "axis " + std::to_string(axes[i]) + " is out of range for rank " + std::to_string(r));
      full[ax] = pads[i];
      full[ax + r] = pads[i + axes.size()];
    }
    pads = full;
  }
  if (pads.size() != 2 * r) cx.Fail(node, "pads must have " + std::to_string(2 * r) + " entries for a " + std::to_string(r) + "-D input");
  bool channels = false;
  for (size_t i = 0; i < r; ++i) {
    if (std::abs(pads[i]) > (1 << 20) || std::abs(pads[i + r]) > (1 << 20)) cx.Fail(node, "pads must be in -2^20..2^20");
    out_dims[i] += pads[i] + pads[i + r];
    if (out_dims[i] <= 0) cx.Fail(node, "the pads leave axis " + std::to_string(i) + " empty");
    channels |= (int(i) == x.col_axis || i < 1) && (pads[i] != 0 || pads[i + r] != 0);
  }
  if (r == 4 && x.col_axis == 1 && x.part_axes.empty() && !x.pending() && !channels)
    return SetResampled(cx, node, cx.NeedAct(node, 0), out_dims, 0);
  cx.Set(node, 0, cx.PendingLike(node, x, out_dims));
}

// Resize and Upsample: the scales (attribute of Upsample before opset 9, else input
// `scales_input`) or the sizes (input 3 of Resize from opset 11).
void LowerScaled(Context& cx, const OnnxNode& node, size_t scales_input, bool scales_attribute) {
  Attr a{node};
  Act x = NeedSpatialAct(cx, node);
  std::vector<int64_t> out_dims = x.dims;
  const std::string mode = a.Text("mode");
  // Per output element: 2 neighbours per spatial axis for linear, 4 for cubic.
  const double spatial = double(x.dims.size() - 2);
  const double passes = mode == "linear" || mode == "bilinear" || mode == "trilinear" ? std::pow(2.0, spatial)
                        : mode == "cubic"                                            ? std::pow(4.0, spatial)
                                                                                     : 1;
  const size_t r = x.dims.size();
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (scales_attribute && a.Has("scales")) scales = node.attributes.at("scales").floats;
  if (scales.empty() && cx.HasInput(node, scales_input)) {
    const Const& c = cx.NeedConst(node, scales_input, "the scales");
    if (c.values && !c.values->empty()) scales = *c.values;
  }
  if (scales.empty() && cx.HasInput(node, 3)) sizes = cx.NeedInts(node, 3, "the sizes");
  if (a.Has("axes")) {
    // Opset 18: scales or sizes for these axes only; the others keep their size.
    const std::vector<int64_t> axes = a.Ints("axes");
    std::vector<double> full_scales(r, 1.0);
    std::vector<int64_t> full_sizes = x.dims;
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t ax = axes[i] < 0 ? axes[i] + int64_t(r) : axes[i];
      if (ax < 0 || ax >= int64_t(r)) cx.Fail(node, "axis " + std::to_string(axes[i]) + " is out of range for rank " + std::to_string(r));
      if (i < scales.size()) full_scales[ax] = scales[i];
      if (i < sizes.size()) full_sizes[ax] = sizes[i];
    }
    if (!scales.empty()) scales = full_scales;
    if (!sizes.empty()) sizes = full_sizes;
  }
  if (!sizes.empty()) {
    if (sizes.size() != r) cx.Fail(node, "sizes must have " + std::to_string(r) + " entries");
    out_dims = sizes;
  } else {
    if (scales.size() != r) cx.Fail(node, "the scales (or sizes) must be known at import time, " + std::to_string(r) + " entries");
    for (size_t i = 0; i < r; ++i) {
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
// blockwise (a MatMul or convolution multiplies each block by its rows of the weight). A block
// laid out otherwise is gathered into the layout of the others first.
void ConcatChannels(Context& cx, const OnnxNode& node, const std::vector<const Value*>& ins, const Act& act,
                    const std::vector<int64_t>& out_dims, int64_t axis) {
  Act out = cx.Relayout(node, act, int(axis));
  out.dims = out_dims;
  out.parts.clear();
  for (const Value* v : ins) {
    const Act* x = std::get_if<Act>(v);
    const Const* c = std::get_if<Const>(v);
    if (!x && !(c && Context::IsConstantData(*c))) cx.Fail(node, "a constant among the channels of a concatenation is not supported");
    Act block = x ? cx.Resolved(node, *x) : cx.ConstantData(*c);
    if (block.col_axis != axis || !block.part_axes.empty() || block.row_axes != out.row_axes) block = cx.Relayout(node, block, int(axis));
    for (TensorId t : block.parts) out.parts.push_back(t);
  }
  out.col_split = out.parts.size() > 1;
  cx.Set(node, 0, out);
}

// Along rows (a class token and the patches, windows, a KV cache and the step's new keys): a
// pending rearrangement of the inputs' tensors (a pending input's source tensors), gathered where
// a consumer asks for a layout, so a concatenation and the transpose or split into heads after it
// cost one Layout op, not two (constants are folded, as a bias is). Gathered without a consumer's
// wish, it has the layout of the last input laid out already (a tensor per head for a cache's
// heads or RoPE's rotated halves), or one tensor with the last input's columns when all are
// rearrangements themselves. A graph input among the inputs takes that layout: a cache of heads
// becomes a tensor per head, not a tensor whose columns are the heads.
void ConcatRows(Context& cx, const OnnxNode& node, const std::vector<const Value*>& ins, const Act& act,
                const std::vector<int64_t>& out_dims) {
  const Act* like = &act;  // the last activation, or the last one laid out already
  for (const Value* v : ins)
    if (const Act* x = std::get_if<Act>(v); x && !x->model_input && !x->pending()) like = x;
  Act source;  // every tensor an element of the output is copied from
  source.dims = out_dims;
  SetLayout(source, like->col_axis, like->part_axes);
  for (const Value* v : ins) {
    if (const Const* c = std::get_if<Const>(v)) cx.problem().NoteBroadcast(*c);
    const Act* x = std::get_if<Act>(v);
    if (!x) continue;
    Act y = *x;
    if (y.model_input && x != like) {
      SetLayout(y, like->col_axis, like->part_axes);
      cx.Materialized(y);
    }
    const std::vector<TensorId> parts = y.pending() ? y.source->parts : cx.Resolved(node, y).parts;
    source.parts.insert(source.parts.end(), parts.begin(), parts.end());
  }
  Act out;
  out.dims = out_dims;
  if (like->pending() || like->model_input)
    SetChannelsLayout(out, like->col_axis);
  else
    SetLayout(out, like->col_axis, like->part_axes);
  out.source = std::make_shared<const Act>(std::move(source));
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
  // An empty input (a cache of no past steps yet, [batch, heads, 0, head size]) adds nothing.
  if (acts > 0 && std::any_of(ins.begin(), ins.end(), [](const Value* v) { return Product(DimsOf(*v)) == 0; })) {
    std::erase_if(ins, [](const Value* v) { return Product(DimsOf(*v)) == 0; });
    act = nullptr;
    acts = 0;
    for (const Value* v : ins)
      if (const Act* x = std::get_if<Act>(v)) act = x, ++acts;
    if (acts == 1 && ins.size() == 1) return cx.Set(node, 0, *ins[0]);
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
  if (axis == act->col_axis && !act->pending()) return ConcatChannels(cx, node, ins, *act, out_dims, axis);
  ConcatRows(cx, node, ins, *act, out_dims);
}

// An embedding lookup with the model's token ids: the rows are read from the table in slow
// memory, like a model input (the table's parameters count).
void LowerComputedGather(Context& cx, const OnnxNode& node, std::vector<int64_t> out_dims);

void LowerEmbedding(Context& cx, const OnnxNode& node, const Const& table, const Act& ids) {
  if (Attr{node}.Int("axis", 0) != 0) cx.Fail(node, "an embedding lookup along axis 1 is not supported");
  if (!ids.model_input) {
    // Ids the model computes or rearranges (ids[:, :-1] of a scorer, a greedy decoder's arg-max):
    // a gather from the table at computed addresses.
    std::vector<int64_t> dims = ids.dims;
    dims.push_back(table.dims[1]);
    return LowerComputedGather(cx, node, dims);
  }
  Act out;
  out.dims = ids.dims;
  out.dims.push_back(table.dims[1]);
  out.model_input = true;
  out.name = node.outputs.empty() ? node.name : node.outputs[0];
  out.input = out.name;
  SetChannelsLayout(out, int(out.dims.size()) - 1);
  cx.Set(node, 0, out);
}

// A gather at addresses the model computes (Gather or GatherElements with computed indices:
// CLIP's end-of-text pooling x[arange(b), ids.argmax(-1)], torch.gather by an arg-max): a
// Layout op over the data and the indices, at the output's size (as GridSample's gather).
void LowerComputedGather(Context& cx, const OnnxNode& node, std::vector<int64_t> out_dims) {
  const Value& v = cx.Get(node, 0);
  if (std::holds_alternative<RowStat>(v)) cx.Fail(node, "gathering from a row statistic is not supported");
  const Const* c = std::get_if<Const>(&v);
  if (c && !Context::IsConstantData(*c))
    cx.Fail(node, "the indices (input 1) must be known at import time, but it is computed by the model");
  std::vector<TensorId> sources = c ? cx.ConstantData(*c).parts : cx.Resolved(node, std::get<Act>(v)).parts;
  for (TensorId t : cx.NeedAct(node, 1).parts) sources.push_back(t);
  Act out;
  out.dims = std::move(out_dims);
  cx.CheckDims(node, out.dims);
  SetChannelsLayout(out);
  const auto [rows, cols] = PartShape(out);
  out.parts = {cx.problem().Layout(sources, rows, cols, node, (node.outputs.empty() ? node.name : node.outputs[0]) + "~gathered")};
  cx.Set(node, 0, out);
}

void LowerGather(Context& cx, const OnnxNode& node) {
  Attr a{node};
  const Value& v = cx.Get(node, 0);
  if (const Const* table = std::get_if<Const>(&v); table && table->is_float && table->dims.size() == 2 &&
                                                   std::holds_alternative<Act>(cx.Get(node, 1)))
    return LowerEmbedding(cx, node, *table, std::get<Act>(cx.Get(node, 1)));
  std::vector<int64_t> in_dims = DimsOf(v);
  const int r = int(in_dims.size());
  int64_t axis = a.Int("axis", 0);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) cx.Fail(node, "axis " + std::to_string(a.Int("axis", 0)) + " is out of range for rank " + std::to_string(r));
  if (std::holds_alternative<Act>(cx.Get(node, 1))) {
    std::vector<int64_t> out_dims(in_dims.begin(), in_dims.begin() + axis);
    for (int64_t d : DimsOf(cx.Get(node, 1))) out_dims.push_back(d);
    out_dims.insert(out_dims.end(), in_dims.begin() + axis + 1, in_dims.end());
    return LowerComputedGather(cx, node, out_dims);
  }
  const Const& idx = cx.NeedConst(node, 1, "the indices");
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
  // Rows or columns picked from an activation (the class token, a head): a rearrangement.
  const Act* x = std::get_if<Act>(&v);
  if (!x) cx.Fail(node, "gathering from a row statistic is not supported");
  cx.Set(node, 0, cx.Pending(node, *x, out_dims, false));
}

// Columns [s, e) of x without moving data, when they are whole blocks of it: x's column
// blocks (a concatenation, a split done before), or equal blocks its producer can be split into
// (chunk(k) of a fused projection written as k Slices: the first splits the producer and
// rebinds x as its blocks, the others take theirs). nullopt when neither applies.
std::optional<Act> ColumnBlock(Context& cx, const OnnxNode& node, const Act& x_in, int64_t s, int64_t e) {
  Act x = cx.Resolved(node, x_in);
  const int64_t width = e - s, c = x.dims[x.col_axis];
  if (!x.part_axes.empty() || width <= 0) return std::nullopt;
  if (!x.col_split && x.parts.size() == 1 && c % width == 0 && s % width == 0 && c / width > 1) {
    const int k = int(c / width);
    if (!cx.problem().CanSplitColumns(x.parts[0], k, 0)) return std::nullopt;
    x.parts = cx.problem().SplitColumns(x.parts[0], k, node, 0);
    x.col_split = true;
    cx.Bind(node.inputs[0], x);
  }
  if (!x.col_split) return std::nullopt;
  Act out = x;
  out.dims[x.col_axis] = width;
  out.parts.clear();
  int64_t offset = 0;
  for (TensorId t : x.parts) {
    const int64_t w = cx.tensor(t).width;
    if (offset >= s && offset + w <= e) out.parts.push_back(t);
    else if (offset < e && offset + w > s) return std::nullopt;  // a block cut by the range
    offset += w;
  }
  out.col_split = out.parts.size() > 1;
  return out;
}

// Slice with its starts, ends, axes and steps known.
void SliceWith(Context& cx, const OnnxNode& node, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
               std::vector<int64_t> axes, std::vector<int64_t> steps) {
  const Value& v = cx.Get(node, 0);
  std::vector<int64_t> in_dims = DimsOf(v);
  const int r = int(in_dims.size());
  if (axes.empty()) for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    cx.Fail(node, "starts, ends, axes and steps have " + std::to_string(starts.size()) + ", " + std::to_string(ends.size()) +
                      ", " + std::to_string(axes.size()) + " and " + std::to_string(steps.size()) + " entries: they must match");
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
    if (c->values && int64_t(c->values->size()) == Product(in_dims) && Product(out_dims) <= kMaxConstantElements)
      out.values = SliceValues(in_dims, *c->values, ranges, out_dims);
    return cx.Set(node, 0, out);
  }
  const Act* xp = std::get_if<Act>(&v);
  if (!xp) cx.Fail(node, "slicing a row statistic is not supported");
  if (out_dims == in_dims) return cx.Set(node, 0, *xp);
  int sliced = -1;
  for (int i = 0; i < r; ++i)
    if (out_dims[i] != in_dims[i]) sliced = sliced == -1 ? i : -2;
  if (sliced >= 0 && sliced == xp->col_axis && !xp->pending() && ranges[sliced][2] == 1)
    if (std::optional<Act> block = ColumnBlock(cx, node, *xp, ranges[sliced][0], ranges[sliced][1])) return cx.Set(node, 0, *block);
  cx.Set(node, 0, cx.PendingLike(node, *xp, out_dims));
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
// A split that cuts a block (torch.split(y, [40, 56]) of a value chunked before) gathers each
// output (a Layout op when read).
void SplitBlocks(Context& cx, const OnnxNode& node, const Act& x, int64_t axis, const std::vector<int64_t>& split) {
  std::vector<int64_t> bounds;
  Elements edge = 0;
  for (TensorId t : x.parts) bounds.push_back(edge += cx.tensor(t).width);
  int64_t cut = 0;
  for (int64_t s : split)
    if (!std::binary_search(bounds.begin(), bounds.end(), cut += s)) {
      for (size_t i = 0; i < split.size(); ++i) {
        std::vector<int64_t> dims = x.dims;
        dims[axis] = split[i];
        cx.Set(node, i, cx.PendingLike(node, x, dims));
      }
      return;
    }
  size_t b = 0;
  for (size_t i = 0; i < split.size(); ++i) {
    Act out = x;
    out.dims[axis] = split[i];
    out.parts.clear();
    Elements width = 0;
    while (width < split[i] && b < x.parts.size()) width += cx.tensor(x.parts[b]).width, out.parts.push_back(x.parts[b++]);
    if (width != split[i]) cx.Fail(node, "internal: a split off the concatenated blocks");
    out.col_split = out.parts.size() > 1;
    cx.Set(node, i, out);
  }
}

// Split: the split attribute, else the split input (the spelling from opset 13).
void LowerSplit(Context& cx, const OnnxNode& node) {
  Attr a{node};
  if (const Const* c = cx.GetConst(node, 0)) {
    // A constant split (shape arithmetic, a parameter cut in parts): constants of the parts' dims.
    const int r = int(c->dims.size());
    int64_t axis = a.Int("axis", 0);
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) cx.Fail(node, "axis " + std::to_string(a.Int("axis", 0)) + " is out of range for rank " + std::to_string(r));
    std::vector<int64_t> split = a.Ints("split");
    if (split.empty() && cx.HasInput(node, 1)) split = cx.NeedInts(node, 1, "split");
    const size_t parts = node.outputs.size();
    if (split.empty() && parts > 0) {
      const int64_t each = CeilDiv(c->dims[axis], int64_t(parts));
      split.assign(parts, each);
      split.back() = c->dims[axis] - each * int64_t(parts - 1);
    }
    if (split.size() != parts) cx.Fail(node, "split has " + std::to_string(split.size()) + " sizes for " + std::to_string(parts) + " outputs");
    int64_t total = 0;
    for (int64_t s : split) {
      if (s < 0) cx.Fail(node, "split sizes must not be negative, got " + DimsText(split));
      // Each size within the axis keeps the sum from overflowing (a fuzzed size near 2^63).
      if (s > c->dims[axis]) cx.Fail(node, "split sizes " + DimsText(split) + " do not add up to " + std::to_string(c->dims[axis]));
      total += s;
    }
    if (total != c->dims[axis]) cx.Fail(node, "split sizes " + DimsText(split) + " do not add up to " + std::to_string(c->dims[axis]));
    // Each part's values when the whole is known (repeat_interleave's shape arithmetic splits
    // a computed shape vector).
    const bool known = c->values && int64_t(c->values->size()) == Product(c->dims);
    int64_t offset = 0;
    for (size_t i = 0; i < parts; ++i) {
      Const out = *c;
      out.dims[axis] = split[i];
      out.values.reset();
      out.initializer = false;
      if (known) {
        std::vector<std::array<int64_t, 3>> ranges;
        for (int k = 0; k < r; ++k) ranges.push_back(k == axis ? std::array<int64_t, 3>{offset, offset + split[i], 1} : std::array<int64_t, 3>{0, c->dims[k], 1});
        out.values = SliceValues(c->dims, *c->values, ranges, out.dims);
      }
      offset += split[i];
      cx.Set(node, i, out);
    }
    return;
  }
  Act x = cx.NeedAct(node, 0);
  const int r = int(x.dims.size());
  int64_t axis = a.Int("axis", 0);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) cx.Fail(node, "axis " + std::to_string(a.Int("axis", 0)) + " is out of range for rank " + std::to_string(r));
  std::vector<int64_t> split = a.Ints("split");
  if (split.empty() && cx.HasInput(node, 1)) split = cx.NeedInts(node, 1, "split");
  const int parts = int(node.outputs.size());
  if (split.empty()) {
    // Equal parts; opset 18's num_outputs leaves the last one smaller when they do not divide.
    const int64_t each = CeilDiv(x.dims[axis], parts);
    split.assign(parts, each);
    split.back() = x.dims[axis] - each * (parts - 1);
  }
  if (int(split.size()) != parts) cx.Fail(node, "split has " + std::to_string(split.size()) + " sizes for " + std::to_string(parts) + " outputs");
  int64_t total = 0;
  for (int64_t s : split) {
    if (s <= 0) cx.Fail(node, "split sizes must be positive, got " + DimsText(split));
    if (s > x.dims[axis]) cx.Fail(node, "split sizes " + DimsText(split) + " do not add up to " + std::to_string(x.dims[axis]));
    total += s;
  }
  if (total != x.dims[axis]) cx.Fail(node, "split sizes " + DimsText(split) + " do not add up to " + std::to_string(x.dims[axis]));
  if (axis == x.col_axis && x.col_split) return SplitBlocks(cx, node, x, axis, split);
  const bool equal = std::all_of(split.begin(), split.end(), [&](int64_t s) { return s == split[0]; });
  // A fused projection split into Q, K, V (or a conv's output into halves): its producer split
  // by columns, exact and free. Anything else: each output a rearrangement.
  if (equal && axis == x.col_axis && x.part_axes.empty() && !x.model_input && x.parts.size() == 1 &&
      cx.problem().CanSplitColumns(x.parts[0], parts, 0)) {
    std::vector<TensorId> pieces = cx.problem().SplitColumns(x.parts[0], parts, node, 0);
    for (int i = 0; i < parts; ++i) {
      Act out = x;
      out.dims[axis] = split[i];
      out.parts = {pieces[i]};
      cx.Set(node, size_t(i), out);
    }
    return;
  }
  for (int i = 0; i < parts; ++i) {
    std::vector<int64_t> dims = x.dims;
    dims[axis] = split[i];
    cx.Set(node, size_t(i), cx.PendingLike(node, x, dims));
  }
}

// DepthToSpace (PixelShuffle) and SpaceToDepth: blocks of channels moved to or from the spatial
// axes of NCHW, pure data movement (a Layout op when read).
void LowerDepthSpace(Context& cx, const OnnxNode& node) {
  const Value& v = cx.Get(node, 0);
  const Act* x = std::get_if<Act>(&v);
  if (!x) cx.Fail(node, "the input must be an activation computed by the model");
  const int64_t b = Attr{node}.Int("blocksize", 0);
  if (x->dims.size() != 4 || b <= 0 || b > 1024) cx.Fail(node, "a 4-D input and a blocksize in 1..1024 are needed");
  std::vector<int64_t> d = x->dims;
  if (node.op_type == "DepthToSpace") {
    if (d[1] % (b * b) != 0) cx.Fail(node, std::to_string(d[1]) + " channels do not split into blocks of " + std::to_string(b * b));
    d = {d[0], d[1] / (b * b), d[2] * b, d[3] * b};
  } else {
    if (d[2] % b != 0 || d[3] % b != 0) cx.Fail(node, "the spatial dims " + DimsText(d) + " are not multiples of the blocksize");
    d = {d[0], d[1] * b * b, d[2] / b, d[3] / b};
  }
  cx.Set(node, 0, cx.Pending(node, *x, d, false, 1));
}

// Tile: copies of an activation along its axes (a Layout op when read); of a constant, its dims.
void LowerTile(Context& cx, const OnnxNode& node) {
  const Value& v = cx.Get(node, 0);
  const std::vector<int64_t> reps = cx.NeedInts(node, 1, "the repeats");
  std::vector<int64_t> d = DimsOf(v);
  if (reps.size() != d.size()) cx.Fail(node, "repeats " + DimsText(reps) + " do not match the rank of " + DimsText(d));
  for (size_t i = 0; i < d.size(); ++i) {
    if (reps[i] < 0) cx.Fail(node, "a negative repeat");
    d[i] = cx.Mul(node, d[i], reps[i]);
  }
  if (const Const* c = std::get_if<Const>(&v)) {
    Const out = *c;
    out.dims = d;
    out.values.reset();
    return cx.Set(node, 0, out);
  }
  const Act* x = std::get_if<Act>(&v);
  if (!x) cx.Fail(node, "tiling a row statistic is not supported");
  cx.Set(node, 0, cx.PendingLike(node, *x, d));
}

// GatherElements (torch.gather): the output has the indices' dims; constant indices on a
// constant are a constant, anything else the gather at computed addresses above.
void LowerGatherElements(Context& cx, const OnnxNode& node) {
  const std::vector<int64_t> in_dims = DimsOf(cx.Get(node, 0)), idx_dims = DimsOf(cx.Get(node, 1));
  if (idx_dims.size() != in_dims.size())
    cx.Fail(node, "the indices " + DimsText(idx_dims) + " and the data " + DimsText(in_dims) + " differ in rank");
  if (const Const* c = cx.GetConst(node, 0); c && cx.GetConst(node, 1)) {
    Const out;
    out.dims = idx_dims;
    out.is_float = c->is_float;
    return cx.Set(node, 0, out);
  }
  LowerComputedGather(cx, node, idx_dims);
}

// OneHot (F.one_hot of an arg-max, a label input): every position of a new axis of `depth`
// compared with the index. The indices broadcast along that axis (a Layout op at the output's
// size), then one compare pass.
void LowerOneHot(Context& cx, const OnnxNode& node) {
  const Value& v = cx.Get(node, 0);
  const std::vector<int64_t> depth = cx.NeedInts(node, 1, "the depth");
  if (depth.size() != 1 || depth[0] < 1) cx.Fail(node, "the depth must be one positive value, got " + DimsText(depth));
  const std::vector<int64_t> in = DimsOf(v);
  const int r = int(in.size()) + 1;
  int64_t axis = Attr{node}.Int("axis", -1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) cx.Fail(node, "axis " + std::to_string(Attr{node}.Int("axis", -1)) + " is out of range for rank " + std::to_string(r));
  std::vector<int64_t> unsqueezed = in, out_dims = in;
  unsqueezed.insert(unsqueezed.begin() + axis, 1);
  out_dims.insert(out_dims.begin() + axis, depth[0]);
  cx.CheckDims(node, out_dims);
  if (std::holds_alternative<Const>(v)) return cx.Set(node, 0, Const{out_dims, std::nullopt, true, false, ""});
  if (std::holds_alternative<RowStat>(v)) cx.Fail(node, "a one-hot of a row statistic is not supported");
  // Views of views are one gather (an arg-max without keepdims is a pending reshape itself).
  const Act& x = std::get<Act>(v);
  Act out = cx.Resolved(node, cx.Pending(node, cx.Pending(node, x, unsqueezed, true), out_dims, false));
  for (TensorId& t : out.parts) t = cx.problem().Pointwise({t}, 1, node, "elementwise");
  cx.Set(node, 0, out);
}

// GridSample (optical flow's warping, spatial transformers): each output pixel interpolates the
// input at a computed position. A gather whose addresses are data: a Layout op over the input and
// the grid (the DMA moves the output's size), then the interpolation's passes (4: bilinear, 1:
// nearest, 16: bicubic).
void LowerGridSample(Context& cx, const OnnxNode& node) {
  const Value& xv = cx.Get(node, 0);
  const Value& gv = cx.Get(node, 1);
  const Act* x = std::get_if<Act>(&xv);
  if (!x) cx.Fail(node, "the sampled input must be an activation");
  const std::vector<int64_t> gd = DimsOf(gv);
  if (x->dims.size() != 4 || gd.size() != 4 || gd[3] != 2 || gd[0] != x->dims[0])
    cx.Fail(node, "a 4-D input and an [N, H, W, 2] grid are needed, got " + DimsText(x->dims) + " and " + DimsText(gd));
  std::vector<TensorId> sources = cx.Relayout(node, *x, 1).parts;
  if (const Act* g = std::get_if<Act>(&gv))
    for (TensorId t : cx.Resolved(node, *g).parts) sources.push_back(t);
  Act out;
  out.dims = {x->dims[0], x->dims[1], gd[1], gd[2]};
  SetChannelsLayout(out, 1);
  const auto [rows, cols] = PartShape(out);
  ProblemBuilder& pb = cx.problem();
  const std::string mode = Attr{node}.Text("mode");
  const double passes = mode == "nearest" ? 1 : mode == "bicubic" || mode == "cubic" ? 16 : 4;
  const TensorId gathered = pb.Layout(sources, rows, cols, node, (node.outputs.empty() ? node.name : node.outputs[0]) + "~gathered");
  out.parts = {pb.Pointwise({gathered}, passes, node, "interpolation")};
  cx.Set(node, 0, out);
}

// ---- scatter -------------------------------------------------------------------------------
bool ScatterReadsActivation(Context& cx, const OnnxNode& node) {
  for (size_t i = 0; i < 3; ++i)
    if (cx.HasInput(node, i) && !std::holds_alternative<Const>(cx.Get(node, i))) return true;
  return false;
}

}  // namespace

void ScatterInto(Context& cx, const OnnxNode& node, size_t updates, std::optional<size_t> indices, bool match_parts,
                 bool reduces) {
  ProblemBuilder& pb = cx.problem();
  const Value& data = cx.Get(node, 0);
  if (std::holds_alternative<RowStat>(data)) cx.Fail(node, "scattering into a row statistic is not supported");
  Act out;
  std::vector<TensorId> data_parts;
  if (const Act* a = std::get_if<Act>(&data)) {
    out = cx.Resolved(node, *a);
    data_parts = out.parts;
  } else {
    pb.NoteBroadcast(std::get<Const>(data));
    out.dims = DimsOf(data);
    cx.CheckDims(node, out.dims);
    SetChannelsLayout(out);
    out.parts = {TensorId{}};
    out.col_split = false;
  }
  std::vector<TensorId> update_parts, index_parts;
  const Value& u = cx.Get(node, updates);
  if (std::holds_alternative<RowStat>(u)) cx.Fail(node, "scattering a row statistic is not supported");
  if (const Act* a = std::get_if<Act>(&u))
    update_parts = match_parts ? cx.Relayout(node, *a, out.col_axis, out.part_axes).parts : cx.Resolved(node, *a).parts;
  else
    pb.NoteBroadcast(std::get<Const>(u));
  if (indices && cx.HasInput(node, *indices)) {
    const Value& w = cx.Get(node, *indices);
    if (std::holds_alternative<RowStat>(w)) cx.Fail(node, "scattering by a row statistic is not supported");
    if (const Act* a = std::get_if<Act>(&w)) index_parts = cx.Resolved(node, *a).parts;
  }
  const bool matched = match_parts && update_parts.size() == out.parts.size();
  const std::string value = node.outputs.empty() ? node.name : node.outputs[0];
  const auto [rows, cols] = PartShape(out);
  for (size_t p = 0; p < out.parts.size(); ++p) {
    const std::string name = value + PartSuffix(int64_t(p), int64_t(out.parts.size())) + "~scattered";
    std::vector<TensorId> sources;
    if (!reduces && !data_parts.empty()) sources.push_back(data_parts[p]);
    if (matched) sources.push_back(update_parts[p]);
    else
      for (TensorId t : update_parts) sources.push_back(t);
    for (TensorId t : index_parts) sources.push_back(t);
    if (sources.empty()) cx.Fail(node, "internal: a scatter that reads no tensor");
    out.parts[p] = pb.Layout(sources, rows, cols, node, name);
    if (reduces && !data_parts.empty()) out.parts[p] = pb.Pointwise({data_parts[p], out.parts[p]}, 1, node, "elementwise");
  }
  cx.Set(node, 0, out);
}

namespace {

// ScatterND and ScatterElements into or from an activation (torch's slice assignment
// `c[:, 4:8] = h` and `index_put_`, `Tensor.scatter`): ScatterInto, the updates at input 2, the
// indices at 1.
void LowerScatterAct(Context& cx, const OnnxNode& node) {
  const std::string reduction = Attr{node}.Text("reduction");
  ScatterInto(cx, node, 2, 1, false, !reduction.empty() && reduction != "none");
}

// ScatterND of constants (a mask built at export time: swin's shifted-window attention mask
// written into zeros): a constant, its values folded when every operand has them. Into or from
// an activation: LowerScatterAct.
void LowerScatterND(Context& cx, const OnnxNode& node) {
  if (ScatterReadsActivation(cx, node)) return LowerScatterAct(cx, node);
  const Const* data = cx.GetConst(node, 0);
  const Const& idx = cx.NeedConst(node, 1, "the indices");
  const Const& upd = cx.NeedConst(node, 2, "the updates");
  Const out = *data;
  if (Attr{node}.Text("reduction") != "" && Attr{node}.Text("reduction") != "none") out.values.reset();
  if (out.values && idx.values && upd.values && !idx.dims.empty()) {
    const size_t k = size_t(idx.dims.back());
    if (k == 0 || k > data->dims.size()) cx.Fail(node, "the indices' last dim " + std::to_string(k) + " does not fit the data's rank");
    int64_t slice = 1;  // elements each index writes
    for (size_t a = k; a < data->dims.size(); ++a) slice *= data->dims[a];
    const size_t n = idx.values->size() / k;
    if (int64_t(upd.values->size()) != int64_t(n) * slice) cx.Fail(node, "the updates do not match the indices");
    for (size_t i = 0; i < n; ++i) {
      int64_t pos = 0;
      for (size_t a = 0; a < k; ++a) {
        int64_t j = int64_t((*idx.values)[i * k + a]);
        if (j < 0) j += data->dims[a];
        if (j < 0 || j >= data->dims[a]) cx.Fail(node, "an index is out of range");
        pos = pos * data->dims[a] + j;
      }
      for (int64_t e = 0; e < slice; ++e) (*out.values)[size_t(pos * slice + e)] = (*upd.values)[size_t(int64_t(i) * slice + e)];
    }
  } else {
    out.values.reset();
  }
  out.initializer = false;
  cx.Set(node, 0, out);
}

// ScatterElements (torch's Tensor.scatter; Scatter before opset 11): of constants, a constant
// of the data's dims; into or from an activation, LowerScatterAct.
void LowerScatterElements(Context& cx, const OnnxNode& node) {
  if (ScatterReadsActivation(cx, node)) return LowerScatterAct(cx, node);
  Const out = cx.NeedConst(node, 0, "the data");
  out.values.reset();
  out.initializer = false;
  cx.Set(node, 0, out);
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
      {"GatherElements", LowerGatherElements, 11},
      {"OneHot", LowerOneHot, 9},
      {"Slice", LowerSlice1, 0, 10},
      {"Slice", LowerSlice10, 10},
      {"Split", LowerSplit},
      {"DepthToSpace", LowerDepthSpace},
      {"SpaceToDepth", LowerDepthSpace},
      {"Tile", LowerTile},
      {"GridSample", LowerGridSample, 16},
      {"ScatterND", LowerScatterND},
      {"ScatterElements", LowerScatterElements},
      {"Scatter", LowerScatterElements, 0, 11},  // ScatterElements' name before opset 11
  };
}

}  // namespace annealer::lowering
