// Convolutions of 1, 2 or 3 spatial axes: Conv (dense and grouped as tap MatMuls, depthwise as
// vector work, also with a depth multiplier, the model's input as an im2col matrix) and ConvTranspose (tap MatMuls at the
// input's rows, then a view).
//
// Layout: the channels are the columns, the batch and spatial axes the rows (in ONNX order);
// any other layout of the input (a Conv1d after a transpose from (N, T, C)) is gathered first.
// A grouped convolution (1 < group < input channels) is one set of tap MatMuls per group, each
// group's channel block times its block of the weight (exact MACs and parameters); its output
// is one column block per group (col_split) when every reader works blockwise, else one Layout
// op gathers the blocks.
#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "src/import/lowering/registry.h"

namespace annealer::lowering {
namespace {

// The most taps (the product of the kernel dims) of a convolution kernel: each is a MatMul.
constexpr int64_t kMaxTaps = 4096;
// The most MatMuls one grouped convolution becomes (groups x taps x input blocks).
constexpr int64_t kMaxGroupedMatMuls = 4096;

constexpr const char* kHaloWhat =
    "k x k taps read the tile's own rows: the halo (the padded border a window reaches beyond "
    "the tensor) is not loaded; traffic = that border once per convolution";

std::string KernelText(const std::vector<int64_t>& k) {
  std::string s;
  for (size_t i = 0; i < k.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(k[i]);
  }
  return s;
}

// The taps of a kernel (the product of its spatial dims), at most kMaxTaps.
int64_t CheckKernel(Context& cx, const OnnxNode& node, const std::vector<int64_t>& k) {
  int64_t taps = 1;
  for (int64_t d : k) {
    taps = cx.Mul(node, taps, d);
    if (taps > kMaxTaps) cx.Fail(node, "a " + KernelText(k) + " kernel has more than " + std::to_string(kMaxTaps) + " taps");
  }
  return taps;
}

// strides, dilations and pads (all begins, then all ends) of `rank` spatial axes, with ONNX's
// defaults.
struct Window {
  std::vector<int64_t> strides, dilations, pads;
};
Window ReadWindow(Context& cx, const OnnxNode& node, size_t rank, const std::string& what) {
  Attr a{node};
  Window w{a.Ints("strides"), a.Ints("dilations"), a.Ints("pads")};
  if (w.strides.empty()) w.strides.assign(rank, 1);
  if (w.dilations.empty()) w.dilations.assign(rank, 1);
  if (w.pads.empty()) w.pads.assign(2 * rank, 0);
  if (w.strides.size() != rank || w.dilations.size() != rank || w.pads.size() != 2 * rank)
    cx.Fail(node, "strides/dilations/pads do not match a " + std::to_string(rank) + "-D " + what);
  return w;
}

// Spatial output sizes of a convolution (auto_pad, pads, strides, dilations).
std::vector<int64_t> ConvOutputSize(Context& cx, const OnnxNode& node, const std::vector<int64_t>& in,
                                    const std::vector<int64_t>& k) {
  const size_t r = in.size();
  Window w = ReadWindow(cx, node, r, "convolution");
  const std::string auto_pad = Attr{node}.Text("auto_pad");
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out[i] = CeilDiv(in[i], w.strides[i]);
      continue;
    }
    const int64_t pads = auto_pad == "VALID" ? 0 : w.pads[i] + w.pads[r + i];
    const int64_t span = in[i] + pads - w.dilations[i] * (k[i] - 1) - 1;
    if (span < 0) cx.Fail(node, "the output would be empty");
    out[i] = span / w.strides[i] + 1;
  }
  return out;
}

// Spatial output sizes of a transposed convolution (output_shape, else strides, output_padding,
// dilations, pads).
std::vector<int64_t> ConvTransposeOutputSize(Context& cx, const OnnxNode& node, const std::vector<int64_t>& in,
                                             const std::vector<int64_t>& k) {
  const size_t r = in.size();
  Attr a{node};
  Window w = ReadWindow(cx, node, r, "transposed convolution");
  std::vector<int64_t> out_pad = a.Ints("output_padding"), out_shape = a.Ints("output_shape");
  if (out_pad.empty()) out_pad.assign(r, 0);
  if (out_pad.size() != r) cx.Fail(node, "output_padding does not match a " + std::to_string(r) + "-D transposed convolution");
  for (int64_t p : out_pad)
    if (p < 0 || p > (1 << 20)) cx.Fail(node, "attribute output_padding must be in 0..1048576");
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    out[i] = out_shape.size() == r ? out_shape[i]
                                   : w.strides[i] * (in[i] - 1) + out_pad[i] + w.dilations[i] * (k[i] - 1) + 1 - w.pads[i] - w.pads[r + i];
    if (out[i] <= 0 || out[i] > (1 << 20)) cx.Fail(node, "the output size is out of range");
  }
  return out;
}

// Whether x is laid out with the channels as the columns, one tensor per column block.
bool ChannelsAsColumns(const Act& x) {
  return !x.model_input && !x.pending() && x.col_axis == 1 && x.part_axes.empty() && RowsInOnnxOrder(x);
}

// The nodes that read `value`, and whether it is a graph output.
int Readers(const OnnxGraph& g, const std::string& value) {
  int n = int(std::count(g.outputs.begin(), g.outputs.end(), value));
  for (const OnnxNode& node : g.nodes)
    n += int(std::count(node.inputs.begin(), node.inputs.end(), value) +
             std::count(node.branch_reads.begin(), node.branch_reads.end(), value));
  return n;
}

// Whether every reader of `value` takes it as column blocks: convolutions do (a dense one
// multiplies each block by its rows of the weight, a grouped one takes its groups' blocks, a
// depthwise one keeps them), and so do elementwise ops (and batch norms) whose other operands
// are constants or values computed elementwise from `value` (a ReLU, a SiLU), whose readers are
// asked in turn, and 2-D pooling, whose output is asked the same as `value` (it has other rows:
// it does not mix with `value`). Anything else (a broadcast of a computed scale, a residual Add
// of a plain value, a reshape) is given one tensor.
bool BlocksAccepted(const OnnxGraph& g, const std::string& value) {
  static const std::set<std::string> kElementwise = {
      "Relu", "LeakyRelu", "PRelu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Elu", "Selu", "Celu",
      "Gelu", "Softplus", "Mish", "Neg", "Abs", "Exp", "Sqrt", "Add", "Sub", "Mul", "Div", "Max", "Min",
      "BatchNormalization"};
  static const std::set<std::string> kPooling = {"MaxPool", "AveragePool", "GlobalAveragePool"};
  std::set<std::string> blocks = {value}, constants;
  for (const auto& [name, init] : g.initializers) constants.insert(name);
  for (const OnnxNode& node : g.nodes) {
    if (node.op_type == "Constant")
      for (const std::string& out : node.outputs) constants.insert(out);
    auto read = [&](const std::string& in) { return blocks.count(in) > 0; };
    if (std::any_of(node.branch_reads.begin(), node.branch_reads.end(), read)) return false;  // an If's branch
    if (!std::any_of(node.inputs.begin(), node.inputs.end(), read)) continue;
    if (node.op_type == "Conv" || node.op_type == "ConvTranspose") {
      if (blocks.count(node.inputs[0]) == 0) return false;  // a computed weight
      continue;
    }
    if (kPooling.count(node.op_type)) {
      if (node.outputs.empty() || !BlocksAccepted(g, node.outputs[0])) return false;
      continue;
    }
    if (!kElementwise.count(node.op_type)) return false;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const std::string& in = node.inputs[i];
      if (in.empty() || blocks.count(in)) continue;
      if (!constants.count(in)) return false;
      // A constant of the activation's size (not broadcast) is a full-size parameter.
      if (auto it = g.initializers.find(in); it != g.initializers.end() && it->second.dims.size() > 1 &&
                                             std::count_if(it->second.dims.begin(), it->second.dims.end(), [](int64_t d) { return d > 1; }) > 1)
        return false;
    }
    for (const std::string& out : node.outputs)
      if (!out.empty()) blocks.insert(out);
  }
  return true;
}

// Whether `value` is computed by a one-tap convolution (or a Gemm or MatMul) through
// elementwise ops: split by columns into G blocks, its MatMuls become G narrower ones. A
// producer of k taps would become G·k MatMuls, each reading the whole input: its groups are
// gathered instead.
bool SplitsCheaply(const OnnxGraph& g, std::string value) {
  static const std::set<std::string> kPassThrough = {"Relu", "LeakyRelu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish",
                                                     "Tanh", "Elu", "Selu", "Gelu", "Mul", "Add", "BatchNormalization"};
  for (auto node = g.nodes.rbegin(); node != g.nodes.rend(); ++node) {
    if (std::find(node->outputs.begin(), node->outputs.end(), value) == node->outputs.end()) continue;
    if (node->op_type == "Gemm" || node->op_type == "MatMul") return true;
    if (node->op_type == "Conv") {
      auto w = node->inputs.size() > 1 ? g.initializers.find(node->inputs[1]) : g.initializers.end();
      return w != g.initializers.end() && w->second.dims.size() >= 3 && Product(w->second.dims, 2) == 1;
    }
    if (!kPassThrough.count(node->op_type) || node->inputs.empty()) return false;
    value = node->inputs[0];
  }
  return false;
}

// A grouped convolution is one MatMul per group, tap and input block (x's column blocks or one
// per group): at most kMaxGroupedMatMuls, checked before any is built.
void CheckGroupedSize(Context& cx, const OnnxNode& node, const Act& x, int64_t groups, int64_t taps) {
  if (groups <= 1) return;
  const int64_t matmuls = cx.Mul(node, std::max(groups, int64_t(x.parts.size())), taps);
  if (matmuls > kMaxGroupedMatMuls)
    cx.Fail(node, "grouped convolution of " + std::to_string(groups) + " groups and " + std::to_string(taps) + " taps is " +
                      std::to_string(matmuls) + " MatMuls (more than " + std::to_string(kMaxGroupedMatMuls) + ")");
}

// The input tensors of each of `groups` channel groups of x (channels as columns), each group's
// widths adding up to cin / groups: x's column blocks when they align with the groups; else
// x's producer split by columns into the groups (exact: a 1x1 convolution, its bias and ReLU
// split by their weight's columns) when nothing else reads x and the split is cheap
// (SplitsCheaply); else each group's channels gathered by a Layout op.
std::vector<std::vector<TensorId>> GroupInputs(Context& cx, const OnnxNode& node, const Act& x, int64_t groups) {
  ProblemBuilder& pb = cx.problem();
  const int64_t cin = x.dims[1], width = cin / groups;
  std::vector<std::vector<TensorId>> in(groups);
  if (groups == 1) {
    in[0] = x.parts;
    return in;
  }
  // Column blocks that do not cross a group boundary.
  bool aligned = true;
  int64_t offset = 0;
  for (TensorId t : x.parts) {
    const int64_t w = cx.tensor(t).width;
    if (offset / width != (offset + w - 1) / width) aligned = false;
    else in[offset / width].push_back(t);
    offset += w;
  }
  if (aligned) return in;
  if (x.parts.size() == 1 && !x.name.empty() && Readers(cx.graph(), x.name) <= 1 && SplitsCheaply(cx.graph(), x.name) &&
      pb.CanSplitColumns(x.parts[0], int(groups), 0)) {
    const std::vector<TensorId> split = pb.SplitColumns(x.parts[0], int(groups), node, 0);
    for (int64_t g = 0; g < groups; ++g) in[g] = {split[g]};
    return in;
  }
  const Elements rows = cx.tensor(x.parts[0]).height;
  const std::string value = x.name.empty() ? node.name : x.name;
  for (int64_t g = 0; g < groups; ++g) {
    std::vector<TensorId> sources;
    offset = 0;
    for (TensorId t : x.parts) {
      const int64_t w = cx.tensor(t).width;
      if (offset < (g + 1) * width && offset + w > g * width) sources.push_back(t);
      offset += w;
    }
    in[g] = {pb.Layout(sources, rows, width, node, value + "[group " + std::to_string(g) + "]")};
  }
  return in;
}

// The output of a grouped convolution: its groups' tensors as column blocks when every reader
// takes blocks, else one Layout op gathers them into one tensor.
void SetGroupedOutput(Context& cx, const OnnxNode& node, Act out, const std::vector<TensorId>& groups) {
  out.parts = groups;
  if (groups.size() > 1 && !BlocksAccepted(cx.graph(), node.outputs.empty() ? "" : node.outputs[0])) {
    const Elements rows = cx.tensor(groups[0]).height;
    out.parts = {cx.problem().Layout(groups, rows, out.dims[1], node, node.outputs[0])};
  }
  out.col_split = out.parts.size() > 1;
  cx.Set(node, 0, out);
}

// A convolution's tap MatMuls: for each group, each tap and each input block of the group, the
// block times its rows of the tap's weight (block width x cout / groups); a group's partial
// products sum in the accumulator (a Pointwise op of no pass, one with a bias). `view_rows` > 0:
// each input block is first viewed with that many rows (stride, padding). Returns one tensor
// per group.
std::vector<TensorId> TapMatMuls(Context& cx, const OnnxNode& node, const std::vector<std::vector<TensorId>>& in,
                                 const std::string& weight, int64_t taps, int64_t cout_group, Elements view_rows, bool bias) {
  ProblemBuilder& pb = cx.problem();
  const int64_t groups = int64_t(in.size());
  if (bias) pb.NoteBroadcast(cx.NeedConst(node, 2, "the bias"));
  std::vector<TensorId> out;
  Elements offset = 0;
  for (int64_t g = 0; g < groups; ++g) {
    std::vector<TensorId> partial;
    const bool several_blocks = in[g].size() > 1 || groups > 1;
    for (TensorId src : in[g]) {
      const Elements cb = cx.tensor(src).width;
      if (view_rows > 0) src = pb.View(src, view_rows, 0, node, "strided-view", kViewWhat);
      const std::string block = several_blocks ? "[in " + std::to_string(offset) + ":" + std::to_string(offset + cb) + "]" : "";
      for (int64_t t = 0; t < taps; ++t)
        partial.push_back(pb.MatMul(src, pb.Weight(weight, cb, cout_group, (taps > 1 ? "[tap " + std::to_string(t) + "]" : "") + block),
                                    node, taps > 1 ? "conv-tap" : "conv"));
      offset += cb;
    }
    if (partial.size() == 1) out.push_back(bias ? pb.Pointwise(partial, 1, node, "bias") : partial[0]);
    else out.push_back(pb.Pointwise(partial, bias ? 1 : 0, node, "tap-sum"));  // the accumulator adds
  }
  return out;
}

// Depthwise: vector work, one multiply-add per tap and output element; channel blocks (a
// concatenation) stay blocks.
void LowerDepthwise(Context& cx, const OnnxNode& node, Act& x, Act& out, const std::vector<int64_t>& in_size,
                    const std::vector<int64_t>& kernel, int64_t taps) {
  ProblemBuilder& pb = cx.problem();
  const int64_t n = x.dims[0], cin = x.dims[1];
  const std::vector<int64_t> out_size(out.dims.begin() + 2, out.dims.end());
  const Elements rows_out = n * Product(out_size);
  const bool bias = cx.HasInput(node, 2);
  cx.Materialized(x);
  if (x.pending()) x = cx.Relayout(node, x, 1);  // the input laid out otherwise by an earlier reader
  if (out_size == in_size && taps > 1) {
    Elements padded = 1;
    for (size_t i = 0; i < in_size.size(); ++i) padded *= in_size[i] + kernel[i] - 1;
    pb.Note("conv-halo", kHaloWhat, -(n * cin * (padded - Product(in_size))));
  }
  if (bias) pb.NoteBroadcast(cx.NeedConst(node, 2, "the bias"));
  const double passes = double(taps) + (bias ? 1 : 0);
  out.parts.clear();
  for (TensorId src : x.parts) {
    if (out_size != in_size) src = pb.View(src, rows_out, 0, node, "strided-view", kViewWhat);
    out.parts.push_back(pb.Pointwise({src}, passes, node, "depthwise"));
  }
  out.col_split = x.col_split;
  pb.summary().depthwise_macs += rows_out * out.dims[1] * taps;
  cx.Set(node, 0, out);
}

void LowerConv(Context& cx, const OnnxNode& node) {
  ProblemBuilder& pb = cx.problem();
  Attr a{node};
  const Value& xv = cx.Get(node, 0);
  if (!std::holds_alternative<Act>(xv) && !std::holds_alternative<Const>(xv)) cx.Fail(node, "the convolution input must be an activation");
  Act x = std::holds_alternative<Act>(xv) ? std::get<Act>(xv) : cx.NeedAct(node, 0);  // a constant: a tensor of its own
  const Const& w = cx.NeedConst(node, 1, "the weight");
  if (x.dims.size() < 3 || x.dims.size() > 5 || w.dims.size() != x.dims.size())
    cx.Fail(node, "only 1-D, 2-D and 3-D convolutions ((N, C, spatial...) input, weight of the same rank) are supported; input " +
                      DimsText(x.dims) + ", weight " + DimsText(w.dims));
  const int64_t group = a.Int("group", 1);
  // The channels as columns: a model input read by a dense convolution stays lazy (it may be
  // read as im2col), channel blocks stay blocks, any other layout is gathered (a Layout op).
  const bool im2col = x.model_input && group == 1;
  if (!im2col && !ChannelsAsColumns(x)) x = cx.Relayout(node, x, 1);
  const int64_t n = x.dims[0], cin = x.dims[1], cout = w.dims[0];
  const std::vector<int64_t> in_size(x.dims.begin() + 2, x.dims.end()), kernel(w.dims.begin() + 2, w.dims.end());
  if (std::any_of(w.dims.begin(), w.dims.end(), [](int64_t d) { return d <= 0; }))
    cx.Fail(node, "the weight " + DimsText(w.dims) + " has an empty dim");
  const int64_t taps = CheckKernel(cx, node, kernel);
  const std::vector<int64_t> out_size = ConvOutputSize(cx, node, in_size, kernel);
  if (group < 1 || cx.Mul(node, w.dims[1], group) != cin)
    cx.Fail(node, "weight " + DimsText(w.dims) + " does not match " + std::to_string(cin) + " input channels and group " + std::to_string(group));
  if (cout % group != 0)
    cx.Fail(node, "the " + std::to_string(cout) + " output channels are not a multiple of group " + std::to_string(group));
  Act out;
  out.dims = {n, cout};
  out.dims.insert(out.dims.end(), out_size.begin(), out_size.end());
  SetChannelsLayout(out, 1);
  if (group > 1 && group == cin && cout == cin) return LowerDepthwise(cx, node, x, out, in_size, kernel, taps);
  if (group > 1 && group == cin && cout > cin) {
    // A depth multiplier m = cout / cin (EEGNet's spatial filter, TF's DepthwiseConv2D): output
    // channel c·m + j reads input channel c alone. The input gathered with every channel
    // repeated m times (one Layout op of the output's channels at the input's rows), then the
    // depthwise passes: vector work, as m·cin single-channel MatMuls per tap would be.
    cx.Materialized(x);
    if (x.pending()) x = cx.Relayout(node, x, 1);
    Act repeated = x;
    repeated.dims[1] = cout;
    repeated.col_split = false;
    repeated.parts = {pb.Layout(x.parts, n * Product(in_size), cout, node, (node.outputs.empty() ? node.name : node.outputs[0]) + "~repeated")};
    return LowerDepthwise(cx, node, repeated, out, in_size, kernel, taps);
  }
  const Elements rows_out = n * Product(out_size);
  const bool bias = cx.HasInput(node, 2);
  if (im2col) {
    // The model's input can be laid out as the im2col matrix at no cost but its size.
    const Elements k_all = cin * taps;
    const TensorId col = pb.NewTensor(rows_out, k_all, {x.name + "~im2col", "im2col-input"});
    const int64_t extra = rows_out * k_all - Elems(x);
    if (extra != 0)
      pb.Note("im2col-input", "a convolution reading the model's input reads it as the im2col matrix (one row per output pixel); traffic = the im2col matrix less the input",
              extra);
    TensorId y = pb.MatMul(col, pb.Weight(w.name, k_all, cout), node, "conv");
    if (bias) {
      pb.NoteBroadcast(cx.NeedConst(node, 2, "the bias"));
      y = pb.Pointwise({y}, 1, node, "bias");
    }
    out.parts = {y};
    return cx.Set(node, 0, out);
  }
  // Taps and channel blocks (groups, a concatenation) each multiply their own rows of the
  // weight; the partial products sum in the accumulator.
  if (taps > 1) {
    Elements padded = 1;
    for (size_t i = 0; i < in_size.size(); ++i) padded *= in_size[i] + kernel[i] - 1;
    pb.Note("conv-halo", kHaloWhat, -(n * cin * (padded - Product(in_size))));
  }
  CheckGroupedSize(cx, node, x, group, taps);
  const auto in = GroupInputs(cx, node, x, group);
  SetGroupedOutput(cx, node, out, TapMatMuls(cx, node, in, w.name, taps, cout / group, out_size != in_size ? rows_out : 0, bias));
}

// A transposed convolution scatters every input pixel through the kernel: one tap MatMul per
// kernel position (and group, and input block) at the input's rows (exact MACs), summed into
// one input-sized tensor per group and written to the output's rows by a view. The taps'
// separate outputs (taps - 1 more input-sized tensors) are not materialized: their traffic is
// stated as not charged.
void LowerConvTranspose(Context& cx, const OnnxNode& node) {
  ProblemBuilder& pb = cx.problem();
  Attr a{node};
  const Value& xv = cx.Get(node, 0);
  if (!std::holds_alternative<Act>(xv)) cx.Fail(node, "the input must be an activation");
  Act x = std::get<Act>(xv);
  const Const& w = cx.NeedConst(node, 1, "the weight");
  if (x.dims.size() < 3 || x.dims.size() > 5 || w.dims.size() != x.dims.size())
    cx.Fail(node, "only 1-D, 2-D and 3-D transposed convolutions ((N, C, spatial...) input, weight of the same rank) are supported; input " +
                      DimsText(x.dims) + ", weight " + DimsText(w.dims));
  if (!ChannelsAsColumns(x)) x = cx.Relayout(node, x, 1);
  const int64_t group = a.Int("group", 1);
  const int64_t n = x.dims[0], cin = x.dims[1];
  if (group < 1 || w.dims[0] != cin || cin % group != 0)
    cx.Fail(node, "weight " + DimsText(w.dims) + " does not match " + std::to_string(cin) + " input channels and group " + std::to_string(group));
  if (std::any_of(w.dims.begin(), w.dims.end(), [](int64_t d) { return d <= 0; }))
    cx.Fail(node, "the weight " + DimsText(w.dims) + " has an empty dim");
  const int64_t cout_group = w.dims[1], cout = cx.Mul(node, cout_group, group);
  const std::vector<int64_t> in_size(x.dims.begin() + 2, x.dims.end()), kernel(w.dims.begin() + 2, w.dims.end());
  const int64_t taps = CheckKernel(cx, node, kernel);
  const std::vector<int64_t> out_size = ConvTransposeOutputSize(cx, node, in_size, kernel);
  CheckGroupedSize(cx, node, x, group, taps);
  const auto in = GroupInputs(cx, node, x, group);
  std::vector<TensorId> y = TapMatMuls(cx, node, in, w.name, taps, cout_group, 0, cx.HasInput(node, 2));
  const Elements rows_in = n * Product(in_size), rows_out = n * Product(out_size);
  if (taps > 1)
    pb.Note("transposed-conv-taps", "a transposed convolution's k x k taps are summed at the input's rows before the view to the output's rows: their separate outputs are not materialized; traffic = those outputs",
            -(taps - 1) * rows_in * cout);
  for (TensorId& t : y)
    if (rows_out != rows_in) t = pb.View(t, rows_out, 1, node, "strided-view", kViewWhat);
  Act out;
  out.dims = {n, cout};
  out.dims.insert(out.dims.end(), out_size.begin(), out_size.end());
  SetChannelsLayout(out, 1);
  SetGroupedOutput(cx, node, out, y);
}

// Inputs 1 and 2: the weight and the bias.
bool WeightOrBias(const OnnxGraph&, const OnnxNode&, size_t input) { return input >= 1; }

}  // namespace

ConverterTable ConvConverters() {
  return {
      {.op_type = "Conv", .lower = LowerConv, .weight_input = WeightOrBias},
      {.op_type = "ConvTranspose", .lower = LowerConvTranspose, .weight_input = WeightOrBias},
  };
}

}  // namespace annealer::lowering
