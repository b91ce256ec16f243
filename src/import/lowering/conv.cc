// Convolutions: Conv (dense as tap MatMuls, depthwise as vector work, the model's input as an
// im2col matrix) and ConvTranspose (tap MatMuls at the input's rows, then a view).
#include <string>
#include <utility>
#include <vector>

#include "src/import/lowering/registry.h"

namespace annealer::lowering {
namespace {

// The most taps (kh·kw) of a convolution kernel: each is a MatMul of the problem.
constexpr int64_t kMaxTaps = 4096;

constexpr const char* kHaloWhat =
    "k x k taps read the tile's own rows: the halo (the padded border a window reaches beyond "
    "the tensor) is not loaded; traffic = that border once per convolution";

void CheckKernel(Context& cx, const OnnxNode& node, int64_t kh, int64_t kw) {
  if (cx.Mul(node, kh, kw) > kMaxTaps)
    cx.Fail(node, "a " + std::to_string(kh) + "x" + std::to_string(kw) + " kernel has more than " + std::to_string(kMaxTaps) + " taps");
}

// Output height and width of a 2-D convolution (auto_pad, pads, strides, dilations).
std::pair<int64_t, int64_t> ConvOutputSize(Context& cx, const OnnxNode& node, int64_t h, int64_t wd, int64_t kh, int64_t kw) {
  Attr a{node};
  std::vector<int64_t> strides = a.Ints("strides"), dil = a.Ints("dilations"), pads = a.Ints("pads");
  if (strides.empty()) strides = {1, 1};
  if (dil.empty()) dil = {1, 1};
  if (pads.empty()) pads = {0, 0, 0, 0};
  if (strides.size() != 2 || dil.size() != 2 || pads.size() != 4) cx.Fail(node, "strides/dilations/pads do not match a 2-D convolution");
  const std::string auto_pad = a.Text("auto_pad");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") return {CeilDiv(h, strides[0]), CeilDiv(wd, strides[1])};
  if (auto_pad == "VALID") pads = {0, 0, 0, 0};
  return {(h + pads[0] + pads[2] - dil[0] * (kh - 1) - 1) / strides[0] + 1,
          (wd + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) / strides[1] + 1};
}

// Depthwise: vector work, kh·kw multiply-adds per output element; channel blocks (a
// concatenation) stay blocks.
void LowerDepthwise(Context& cx, const OnnxNode& node, Act& x, Act& out, int64_t kh, int64_t kw) {
  ProblemBuilder& pb = cx.problem();
  const int64_t n = x.dims[0], cin = x.dims[1], h = x.dims[2], wd = x.dims[3];
  const int64_t ho = out.dims[2], wo = out.dims[3];
  const Elements rows_out = n * ho * wo;
  const bool bias = cx.HasInput(node, 2);
  cx.Materialized(x);
  if (ho == h && wo == wd && kh * kw > 1)
    pb.Note("conv-halo", kHaloWhat, -(n * cin * ((h + kh - 1) * (wd + kw - 1) - h * wd)));
  if (bias) pb.NoteBroadcast(cx.NeedConst(node, 2, "the bias"));
  const double passes = double(kh * kw) + (bias ? 1 : 0);
  out.parts.clear();
  for (TensorId src : x.parts) {
    if (ho != h || wo != wd) src = pb.View(src, rows_out, 0, node, "strided-view", kViewWhat);
    out.parts.push_back(pb.Pointwise({src}, passes, node, "depthwise"));
  }
  out.col_split = x.col_split;
  pb.summary().depthwise_macs += rows_out * out.dims[1] * kh * kw;
  cx.Set(node, 0, out);
}

// Dense (group 1): the model's input as an im2col matrix, else one MatMul per tap and channel
// block, summed in the accumulator.
void LowerDense(Context& cx, const OnnxNode& node, Act& x, const Const& w, Act& out) {
  ProblemBuilder& pb = cx.problem();
  const int64_t n = x.dims[0], cin = x.dims[1], h = x.dims[2], wd = x.dims[3];
  const int64_t cout = w.dims[0], kh = w.dims[2], kw = w.dims[3];
  const int64_t ho = out.dims[2], wo = out.dims[3];
  const Elements rows_out = n * ho * wo;
  const bool bias = cx.HasInput(node, 2);
  const Elements k_all = cin * kh * kw;
  TensorId y;
  if (x.model_input) {
    // The model's input can be laid out as the im2col matrix at no cost but its size.
    const TensorId col = pb.NewTensor(rows_out, k_all, {x.name + "~im2col", "im2col-input"});
    const int64_t extra = rows_out * k_all - Elems(x);
    if (extra != 0)
      pb.Note("im2col-input", "a convolution reading the model's input reads it as the im2col matrix (one row per output pixel); traffic = the im2col matrix less the input",
              extra);
    y = pb.MatMul(col, pb.Weight(w.name, k_all, cout), node, "conv");
  } else {
    // Taps (k×k) and channel blocks (a concatenation) each multiply their own rows of the
    // weight; the partial products sum in the accumulator.
    const bool resized = ho != h || wo != wd;
    if (kh * kw > 1) pb.Note("conv-halo", kHaloWhat, -(n * cin * ((h + kh - 1) * (wd + kw - 1) - h * wd)));
    std::vector<TensorId> partial;
    Elements offset = 0;
    for (TensorId src : x.parts) {
      const Elements cb = cx.tensor(src).width;
      if (resized) src = pb.View(src, rows_out, 0, node, "strided-view", kViewWhat);
      const std::string block =
          x.parts.size() > 1 ? "[in " + std::to_string(offset) + ":" + std::to_string(offset + cb) + "]" : "";
      for (int64_t t = 0; t < kh * kw; ++t)
        partial.push_back(pb.MatMul(src, pb.Weight(w.name, cb, cout, (kh * kw > 1 ? "[tap " + std::to_string(t) + "]" : "") + block),
                                    node, kh * kw > 1 ? "conv-tap" : "conv"));
      offset += cb;
    }
    if (partial.size() == 1) {
      y = partial[0];
    } else {
      // No vector pass: the accumulator adds, unless a bias.
      if (bias) pb.NoteBroadcast(cx.NeedConst(node, 2, "the bias"));
      out.parts = {pb.Pointwise(partial, bias ? 1 : 0, node, "tap-sum")};
      return cx.Set(node, 0, out);
    }
  }
  if (bias) {
    pb.NoteBroadcast(cx.NeedConst(node, 2, "the bias"));
    y = pb.Pointwise({y}, 1, node, "bias");
  }
  out.parts = {y};
  cx.Set(node, 0, out);
}

void LowerConv(Context& cx, const OnnxNode& node) {
  Attr a{node};
  const Value& xv = cx.Get(node, 0);
  const Act* xp = std::get_if<Act>(&xv);
  if (!xp) cx.Fail(node, "the convolution input must be an activation");
  Act x = *xp;
  const Const& w = cx.NeedConst(node, 1, "the weight");
  if (x.dims.size() != 4 || w.dims.size() != 4)
    cx.Fail(node, "only 2-D convolutions (NCHW input, 4-D weight) are supported; input " + DimsText(x.dims) +
                      ", weight " + DimsText(w.dims));
  // The channels as columns: a model input stays lazy (it may be read as im2col), channel
  // blocks stay blocks, any other layout is gathered (a Layout op).
  if (!x.model_input && !(x.col_axis == 1 && x.part_axes.empty() && !x.pending() && RowsInOnnxOrder(x)))
    x = cx.Relayout(node, x, 1);
  const int64_t n = x.dims[0], cin = x.dims[1], h = x.dims[2], wd = x.dims[3];
  const int64_t cout = w.dims[0], kh = w.dims[2], kw = w.dims[3];
  if (cout <= 0 || w.dims[1] <= 0 || kh <= 0 || kw <= 0) cx.Fail(node, "the weight " + DimsText(w.dims) + " has an empty dim");
  CheckKernel(cx, node, kh, kw);
  const int64_t group = a.Int("group", 1);
  const auto [ho, wo] = ConvOutputSize(cx, node, h, wd, kh, kw);
  if (ho <= 0 || wo <= 0) cx.Fail(node, "the output would be empty");
  if (w.dims[1] * group != cin) cx.Fail(node, "weight " + DimsText(w.dims) + " does not match " + std::to_string(cin) + " input channels and group " + std::to_string(group));
  Act out;
  out.dims = {n, cout, ho, wo};
  SetChannelsLayout(out);
  if (group <= 1) return LowerDense(cx, node, x, w, out);
  if (group != cin || cout != cin)
    cx.Fail(node, "grouped convolution (group " + std::to_string(group) + " of " + std::to_string(cin) +
                      " channels) is not supported; only depthwise (group = channels = output channels) and group 1");
  LowerDepthwise(cx, node, x, out, kh, kw);
}

// Output height and width of a 2-D transposed convolution (output_shape, else strides,
// output_padding, dilations, pads).
std::pair<int64_t, int64_t> ConvTransposeOutputSize(Context& cx, const OnnxNode& node, int64_t h, int64_t wd, int64_t kh,
                                                    int64_t kw) {
  Attr a{node};
  std::vector<int64_t> strides = a.Ints("strides"), dil = a.Ints("dilations"), pads = a.Ints("pads"),
                       out_pad = a.Ints("output_padding"), out_shape = a.Ints("output_shape");
  if (strides.empty()) strides = {1, 1};
  if (dil.empty()) dil = {1, 1};
  if (pads.empty()) pads = {0, 0, 0, 0};
  if (out_pad.empty()) out_pad = {0, 0};
  if (strides.size() != 2 || dil.size() != 2 || pads.size() != 4 || out_pad.size() != 2)
    cx.Fail(node, "strides/dilations/pads/output_padding do not match a 2-D transposed convolution");
  int64_t ho = strides[0] * (h - 1) + out_pad[0] + dil[0] * (kh - 1) + 1 - pads[0] - pads[2];
  int64_t wo = strides[1] * (wd - 1) + out_pad[1] + dil[1] * (kw - 1) + 1 - pads[1] - pads[3];
  if (out_shape.size() == 2) { ho = out_shape[0]; wo = out_shape[1]; }
  if (ho <= 0 || wo <= 0 || ho > (1 << 20) || wo > (1 << 20)) cx.Fail(node, "the output size is out of range");
  return {ho, wo};
}

// A transposed convolution scatters every input pixel through the k×k kernel: k² tap
// MatMuls at the input's rows (exact MACs), summed into one input-sized tensor and written to
// the output's rows by a view. The taps' separate outputs (k² - 1 more input-sized tensors)
// are not materialized: their traffic is stated as not charged.
void LowerConvTranspose(Context& cx, const OnnxNode& node) {
  ProblemBuilder& pb = cx.problem();
  Attr a{node};
  const Value& xv = cx.Get(node, 0);
  if (!std::holds_alternative<Act>(xv)) cx.Fail(node, "the input must be an activation");
  Act x = cx.NeedAct(node, 0);
  const Const& w = cx.NeedConst(node, 1, "the weight");
  if (x.dims.size() != 4 || w.dims.size() != 4 || x.col_axis != 1 || !x.part_axes.empty())
    cx.Fail(node, "only 2-D transposed convolutions on NCHW are supported");
  const int64_t group = a.Int("group", 1);
  const int64_t n = x.dims[0], cin = x.dims[1], h = x.dims[2], wd = x.dims[3];
  if (group != 1) cx.Fail(node, "grouped transposed convolution is not supported");
  if (w.dims[0] != cin) cx.Fail(node, "weight " + DimsText(w.dims) + " does not match " + std::to_string(cin) + " input channels");
  const int64_t cout = w.dims[1], kh = w.dims[2], kw = w.dims[3];
  if (cout <= 0 || kh <= 0 || kw <= 0) cx.Fail(node, "the weight " + DimsText(w.dims) + " has an empty dim");
  CheckKernel(cx, node, kh, kw);
  const auto [ho, wo] = ConvTransposeOutputSize(cx, node, h, wd, kh, kw);
  std::vector<TensorId> partial;
  Elements offset = 0;
  for (TensorId src : x.parts) {
    const Elements cb = cx.tensor(src).width;
    const std::string block = x.parts.size() > 1 ? "[in " + std::to_string(offset) + ":" + std::to_string(offset + cb) + "]" : "";
    for (int64_t t = 0; t < kh * kw; ++t)
      partial.push_back(pb.MatMul(src, pb.Weight(w.name, cb, cout, "[tap " + std::to_string(t) + "]" + block), node, "conv-tap"));
    offset += cb;
  }
  const bool bias = cx.HasInput(node, 2);
  if (bias) pb.NoteBroadcast(cx.NeedConst(node, 2, "the bias"));
  TensorId y = partial.size() == 1 ? partial[0] : pb.Pointwise(partial, bias ? 1 : 0, node, "tap-sum");
  if (partial.size() == 1 && bias) y = pb.Pointwise({y}, 1, node, "bias");
  if (kh * kw > 1)
    pb.Note("transposed-conv-taps", "a transposed convolution's k x k taps are summed at the input's rows before the view to the output's rows: their separate outputs are not materialized; traffic = those outputs",
            -(kh * kw - 1) * n * h * wd * cout);
  Act out;
  out.dims = {n, cout, ho, wo};
  SetChannelsLayout(out);
  const Elements rows_out = n * ho * wo;
  out.parts = {rows_out == cx.tensor(y).height ? y : pb.View(y, rows_out, 1, node, "strided-view", kViewWhat)};
  cx.Set(node, 0, out);
}

// Inputs 1 and 2: the weight and the bias.
bool WeightOrBias(const OnnxNode&, size_t input) { return input >= 1; }

}  // namespace

ConverterTable ConvConverters() {
  return {
      {.op_type = "Conv", .lower = LowerConv, .weight_input = WeightOrBias},
      {.op_type = "ConvTranspose", .lower = LowerConvTranspose, .weight_input = WeightOrBias},
  };
}

}  // namespace annealer::lowering
