// The convolutions of real exports, on small models built in memory with the ONNX protobuf API:
// grouped convolutions (exact MACs and parameters; the input's column blocks, its producer split
// by columns, or a Layout op per group; the output as blocks or gathered), grouped
// ConvTranspose, Conv1d (a Conformer's pointwise and depthwise convolutions between transposes)
// and Conv3d. Random grouped convolutions of rank 1 to 3 answer to the obvious count:
// out_elements · (Cin / group) · taps.
#include <doctest/doctest.h>

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "eval/oracle.h"
#include "search/starts/baseline.h"
#include "src/import/model_lowering.h"
#include "src/import/onnx_graph.h"
#include "src/io/json_fields.h"
#include "src/io/contest/problem_reader.h"
#include "src/io/contest/problem_writer.h"
#include "tests/import/import_counts.h"
#include "tests/import/onnx_model_builder.h"

namespace annealer {
namespace {

// Models of opset 13 with a graph named "g" (tests/import/onnx_model_builder.h).
using ModelBuilder = testing::OnnxModelBuilder;
using testing::SetInt;
using testing::SetInts;

// The product of v's entries from index `from` on.
int64_t Product(const std::vector<int64_t>& v, size_t from = 0) {
  return std::accumulate(v.begin() + std::ptrdiff_t(from), v.end(), int64_t{1}, std::multiplies<>());
}

LoweredModel Lower(const ModelBuilder& m, const std::string& name) {
  return LowerOnnxGraph(ParseOnnx(m.Bytes(), name, {}), LoweringHardware{4 << 20, 64, 128, 32, 8});
}

int64_t ComputeMacs(const LoweredModel& m) { return testing::ComputeMatMulMacs(m); }

int Role(const LoweredModel& m, const std::string& role) {
  auto it = m.summary.problem_ops.find(role);
  return it == m.summary.problem_ops.end() ? 0 : it->second;
}

// The problem round-trips through the contest reader and the baseline is a valid schedule.
void CheckValid(const LoweredModel& m, const std::string& name) {
  const Problem back = ParseProblem(ProblemToJson(m.problem), name);
  CHECK(back.ops.size() == m.problem.ops.size());
  const Evaluation e = EvaluateOracle(m.problem, BuildBaseline(m.problem));
  CHECK_MESSAGE(e.ok(), e.violation.Message());
}

std::string ImportError(const ModelBuilder& m, const std::string& name) {
  try {
    Lower(m, name);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// x [1,8,6,6] -> conv1 1x1 (+bias) -> relu -> grouped 3x3 (group 4, pads 1) -> relu -> conv3 1x1
// (reading `conv3_input`, "r2" by default; added last by the caller when it is another value).
ModelBuilder Bottleneck(const std::string& conv3_input = "r2") {
  ModelBuilder m;
  m.Input("x", {1, 8, 6, 6}).Output("y");
  m.Weight("w1", {8, 8, 1, 1}).Weight("b1", {8}).Weight("w2", {8, 2, 3, 3}).Weight("w3", {8, 8, 1, 1});
  m.Node("conv1", "Conv", {"x", "w1", "b1"}, {"c1"});
  m.Node("relu1", "Relu", {"c1"}, {"r1"});
  SetInt(SetInts(m.Node("conv2", "Conv", {"r1", "w2"}, {"c2"}), "pads", {1, 1, 1, 1}), "group", 4);
  m.Node("relu2", "Relu", {"c2"}, {"r2"});
  if (conv3_input == "r2") m.Node("conv3", "Conv", {"r2", "w3"}, {"y"});
  return m;
}

TEST_CASE("import conv: a grouped 3x3 after a 1x1 conv and ReLU splits them by columns, exactly") {
  const LoweredModel m = Lower(Bottleneck(), "bottleneck.onnx");
  // 36 pixels: conv1 36·8·8, conv2 36·8·(8/4)·9, conv3 36·8·8.
  CHECK(m.summary.macs == 2304 + 5184 + 2304);
  CHECK(ComputeMacs(m) == m.summary.macs);
  CHECK(m.summary.params_in_tensors == 64 + 8 * 2 * 9 + 64);
  // conv1 (im2col of the model's input) split into 4 column blocks, its bias and ReLU too; 4
  // groups x 9 taps; conv3 multiplies each block by its rows of w3; nothing is gathered.
  CHECK(Role(m, "conv") == 4 + 4);
  CHECK(Role(m, "conv-tap") == 36);
  CHECK(Role(m, "tap-sum") == 4 + 1);  // conv2 per group, conv3 over the blocks
  CHECK(m.summary.layout_ops == 0);
  for (size_t o = 0; o < m.problem.ops.size(); ++o)
    if (m.op_origins[o].role == "conv-tap") {
      const Op& op = m.problem.ops[o];
      CHECK(m.problem.tensors[op.inputs[0]].width == 2);   // Cin / group
      CHECK(m.problem.tensors[op.inputs[1]].width == 2);   // Cout / group
      CHECK(m.problem.tensors[op.inputs[0]].height == 36);
    }
  CheckValid(m, "bottleneck.onnx");
}

TEST_CASE("import conv: a grouped conv reading the model's input gathers each group's channels") {
  ModelBuilder m;
  m.Input("x", {1, 8, 6, 6}).Output("y").Weight("w", {4, 4, 3, 3});
  SetInt(SetInts(m.Node("conv", "Conv", {"x", "w"}, {"y"}), "pads", {1, 1, 1, 1}), "group", 2);
  const LoweredModel l = Lower(m, "grouped_input.onnx");
  CHECK(l.summary.macs == 36 * 4 * 4 * 9);
  CHECK(ComputeMacs(l) == l.summary.macs);
  CHECK(l.summary.params_in_tensors == 4 * 4 * 9);
  CHECK(Role(l, "conv-tap") == 2 * 9);
  CHECK(l.summary.layout_ops == 2);  // the input cannot be split: a Layout op per group
  CheckValid(l, "grouped_input.onnx");
}

TEST_CASE("import conv: column blocks that align with the groups are used as they are") {
  // Two ReLUs of 4 channels concatenated: 2 blocks. Group 2 takes one block each; group 4 cuts
  // the blocks and gathers each group (4 Layout ops); group 1 multiplies each block.
  for (const auto& [group, layouts, taps] : {std::tuple{2, 0, 18}, std::tuple{4, 4, 36}, std::tuple{1, 0, 18}}) {
    CAPTURE(group);
    ModelBuilder m;
    m.Input("a", {1, 4, 5, 5}).Input("b", {1, 4, 5, 5}).Output("y").Weight("w", {8, 8 / group, 3, 3});
    m.Node("relu_a", "Relu", {"a"}, {"ra"});
    m.Node("relu_b", "Relu", {"b"}, {"rb"});
    SetInt(m.Node("concat", "Concat", {"ra", "rb"}, {"c"}), "axis", 1);
    SetInt(SetInts(m.Node("conv", "Conv", {"c", "w"}, {"y"}), "pads", {1, 1, 1, 1}), "group", group);
    const LoweredModel l = Lower(m, "blocks.onnx");
    CHECK(l.summary.macs == 25 * 8 * (8 / group) * 9);
    CHECK(ComputeMacs(l) == l.summary.macs);
    CHECK(l.summary.params_in_tensors == 8 * (8 / group) * 9);
    CHECK(l.summary.layout_ops == layouts);
    CHECK(Role(l, "conv-tap") == taps);
    CheckValid(l, "blocks.onnx");
  }
}

TEST_CASE("import conv: a grouped conv's output stays blocks for convs and SiLUs, is gathered for a residual Add") {
  // relu -> grouped conv (stride 1) -> SiLU -> 1x1 conv: blocks all the way.
  {
    ModelBuilder m;
    m.Input("x", {1, 8, 4, 4}).Output("y").Weight("w", {8, 2, 3, 3}).Weight("w2", {8, 8, 1, 1});
    m.Node("relu", "Relu", {"x"}, {"r"});
    SetInt(SetInts(m.Node("conv", "Conv", {"r", "w"}, {"c"}), "pads", {1, 1, 1, 1}), "group", 4);
    m.Node("sigmoid", "Sigmoid", {"c"}, {"s"});
    m.Node("silu", "Mul", {"c", "s"}, {"t"});
    m.Node("conv2", "Conv", {"t", "w2"}, {"y"});
    const LoweredModel l = Lower(m, "silu.onnx");
    CHECK(l.summary.macs == 16 * 8 * 2 * 9 + 16 * 8 * 8);
    CHECK(Role(l, "elementwise") == 1 + 4 + 4);  // the relu, then the sigmoid and the product per block
    CHECK(l.summary.layout_ops == 4);  // the relu of the model's input cannot be split
    CheckValid(l, "silu.onnx");
  }
  // relu -> grouped conv -> Add(relu, conv): the Add takes one tensor: one Layout op gathers.
  {
    ModelBuilder m;
    m.Input("x", {1, 8, 4, 4}).Output("y").Weight("w", {8, 2, 3, 3}).Weight("w1", {8, 8, 1, 1});
    m.Node("conv1", "Conv", {"x", "w1"}, {"c1"});
    m.Node("relu", "Relu", {"c1"}, {"r"});
    SetInt(SetInts(m.Node("conv", "Conv", {"r", "w"}, {"c"}), "pads", {1, 1, 1, 1}), "group", 4);
    m.Node("add", "Add", {"r", "c"}, {"y"});
    const LoweredModel l = Lower(m, "residual.onnx");
    CHECK(l.summary.macs == 16 * 8 * 8 + 16 * 8 * 2 * 9);
    CHECK(ComputeMacs(l) == l.summary.macs);
    // relu has two readers: not split; 4 gathers of its groups and 1 of the output.
    CHECK(l.summary.layout_ops == 4 + 1);
    CheckValid(l, "residual.onnx");
  }
}

TEST_CASE("import conv: a grouped conv before pooling stays blocks, before a squeeze-excitation scale it is gathered") {
  // RegNetY's block: 1x1 conv -> ReLU -> grouped 3x3 -> ReLU -> SE (global pool, 1x1 convs,
  // sigmoid) -> the scale times the ReLU -> 1x1 conv. The product takes one tensor.
  {
    ModelBuilder m = Bottleneck("s");  // conv3 reads the scaled value
    m.Weight("wse1", {2, 8, 1, 1}).Weight("wse2", {8, 2, 1, 1});
    m.Node("gap", "GlobalAveragePool", {"r2"}, {"p"});
    m.Node("se1", "Conv", {"p", "wse1"}, {"q"});
    m.Node("se_relu", "Relu", {"q"}, {"q2"});
    m.Node("se2", "Conv", {"q2", "wse2"}, {"e"});
    m.Node("se_sigmoid", "Sigmoid", {"e"}, {"g"});
    m.Node("scale", "Mul", {"g", "r2"}, {"s"});
    m.Node("conv3", "Conv", {"s", "w3"}, {"y"});
    const LoweredModel l = Lower(m, "se.onnx");
    CHECK(l.summary.macs == 2304 + 5184 + 8 * 2 + 2 * 8 + 2304);
    CHECK(ComputeMacs(l) == l.summary.macs);
    // The grouped conv's 4 blocks gathered, and the computed scale broadcast over its rows.
    CHECK(l.summary.layout_ops == 2);
    CheckValid(l, "se.onnx");
  }
  // ... -> grouped 3x3 -> ReLU -> its global mean times itself: the pooled value and the value
  // do not mix as blocks (other rows): gathered.
  {
    ModelBuilder m = Bottleneck("s");
    m.Node("gap", "GlobalAveragePool", {"r2"}, {"p"});
    m.Node("scale", "Mul", {"p", "r2"}, {"s"});
    m.Node("conv3", "Conv", {"s", "w3"}, {"y"});
    const LoweredModel l = Lower(m, "mean_scale.onnx");
    CHECK(l.summary.macs == 2304 + 5184 + 2304);
    CHECK(l.summary.layout_ops == 2);  // the blocks gathered, the mean broadcast
    CheckValid(l, "mean_scale.onnx");
  }
  // ... -> grouped 3x3 -> ReLU -> MaxPool 2x2 stride 2 -> 1x1 conv: blocks throughout.
  {
    ModelBuilder m = Bottleneck("mp");
    SetInts(SetInts(m.Node("pool", "MaxPool", {"r2"}, {"mp"}), "kernel_shape", {2, 2}), "strides", {2, 2});
    m.Node("conv3", "Conv", {"mp", "w3"}, {"y"});
    const LoweredModel l = Lower(m, "pool.onnx");
    CHECK(l.summary.macs == 2304 + 5184 + 9 * 8 * 8);
    CHECK(ComputeMacs(l) == l.summary.macs);
    CHECK(l.summary.layout_ops == 4);  // the pooling window's view of each block
    CheckValid(l, "pool.onnx");
  }
}

TEST_CASE("import conv: a strided grouped conv views each group's block") {
  ModelBuilder m = Bottleneck();
  onnx::NodeProto& conv2 = *m.graph().mutable_node(2);
  SetInts(conv2, "strides", {2, 2});
  const LoweredModel l = Lower(m, "strided.onnx");
  // conv2 and conv3 at 3x3 = 9 pixels.
  CHECK(l.summary.macs == 2304 + 9 * 8 * 2 * 9 + 9 * 8 * 8);
  CHECK(ComputeMacs(l) == l.summary.macs);
  CHECK(l.summary.layout_ops == 4);
  CheckValid(l, "strided.onnx");
}

TEST_CASE("import conv: Conv1d between transposes (a Conformer's convolution module)") {
  // (N, T, d) -> Transpose -> pointwise Conv1d (d -> 2d) -> GLU halves -> depthwise Conv1d k=5
  // -> pointwise Conv1d -> Transpose back -> Add to the input.
  ModelBuilder m;
  m.Input("x", {1, 10, 6}).Output("y");
  m.Weight("w1", {12, 6, 1}).Weight("b1", {12}).Weight("wd", {6, 1, 5}).Weight("bd", {6}).Weight("w2", {6, 6, 1});
  m.Node("ln", "Relu", {"x"}, {"h"});
  SetInts(m.Node("t1", "Transpose", {"h"}, {"ht"}), "perm", {0, 2, 1});
  m.Node("pw1", "Conv", {"ht", "w1", "b1"}, {"p1"});
  SetInt(m.Node("split", "Split", {"p1"}, {"ga", "gb"}), "axis", 1);
  m.Node("sig", "Sigmoid", {"gb"}, {"gs"});
  m.Node("glu", "Mul", {"ga", "gs"}, {"g"});
  SetInt(SetInts(m.Node("dw", "Conv", {"g", "wd", "bd"}, {"d"}), "pads", {2, 2}), "group", 6);
  m.Node("pw2", "Conv", {"d", "w2"}, {"p2"});
  SetInts(m.Node("t2", "Transpose", {"p2"}, {"pt"}), "perm", {0, 2, 1});
  m.Node("res", "Add", {"h", "pt"}, {"y"});
  const LoweredModel l = Lower(m, "conv1d.onnx");
  CHECK(l.summary.macs == 10 * 6 * 12 + 10 * 6 * 6);
  CHECK(ComputeMacs(l) == l.summary.macs);
  CHECK(l.summary.depthwise_macs == 10 * 6 * 5);
  CHECK(l.summary.params_in_tensors == 72 + 36);
  CHECK(l.summary.layout_ops == 0);  // the transposes relabel the 2-D layout
  CheckValid(l, "conv1d.onnx");
}

TEST_CASE("import conv: Conv1d on the model's input (im2col) and with stride and dilation") {
  ModelBuilder m;
  m.Input("x", {2, 3, 20}).Output("y").Weight("w", {4, 3, 3}).Weight("w2", {5, 4, 2});
  m.Node("conv", "Conv", {"x", "w"}, {"c"});  // T 20 -> 18
  m.Node("relu", "Relu", {"c"}, {"r"});
  SetInts(SetInts(m.Node("conv2", "Conv", {"r", "w2"}, {"y"}), "strides", {2}), "dilations", {3});  // (18 - 3 - 1) / 2 + 1 = 8
  const LoweredModel l = Lower(m, "conv1d_input.onnx");
  CHECK(l.summary.macs == 2 * 18 * 4 * 3 * 3 + 2 * 8 * 5 * 4 * 2);
  CHECK(ComputeMacs(l) == l.summary.macs);
  CheckValid(l, "conv1d_input.onnx");
}

TEST_CASE("import conv: Conv3d, dense and grouped, and a grouped ConvTranspose") {
  ModelBuilder m;
  m.Input("x", {1, 4, 4, 6, 6}).Output("y").Weight("w", {8, 4, 3, 3, 3}).Weight("wg", {8, 4, 1, 3, 3});
  m.Node("relu", "Relu", {"x"}, {"r"});
  SetInts(m.Node("conv", "Conv", {"r", "w"}, {"c"}), "pads", {1, 1, 1, 1, 1, 1});  // 4x6x6, 27 taps
  SetInt(SetInts(SetInts(m.Node("convg", "Conv", {"c", "wg"}, {"y"}), "pads", {0, 1, 1, 0, 1, 1}), "strides", {1, 2, 2}),
         "group", 2);  // 4x3x3, 9 taps
  const LoweredModel l = Lower(m, "conv3d.onnx");
  CHECK(l.summary.macs == 144 * 8 * 4 * 27 + 36 * 8 * 4 * 9);
  CHECK(ComputeMacs(l) == l.summary.macs);
  CHECK(Role(l, "conv-tap") == 27 + 2 * 9);
  CHECK(l.summary.params_in_tensors == 8 * 4 * 27 + 8 * 4 * 9);
  CheckValid(l, "conv3d.onnx");

  ModelBuilder t;
  t.Input("x", {1, 8, 6, 6}).Output("y").Weight("w", {8, 3, 2, 2});
  t.Node("relu", "Relu", {"x"}, {"r"});
  SetInt(SetInts(t.Node("up", "ConvTranspose", {"r", "w"}, {"y"}), "strides", {2, 2}), "group", 2);  // [1,6,12,12]
  const LoweredModel lt = Lower(t, "deconv.onnx");
  CHECK(lt.summary.macs == 36 * 8 * 3 * 4);  // in_elements · (Cout / group) · taps
  CHECK(ComputeMacs(lt) == lt.summary.macs);
  CHECK(lt.summary.params_in_tensors == 8 * 3 * 4);
  CheckValid(lt, "deconv.onnx");
}

TEST_CASE("import conv: errors of grouped and N-D convolutions are one line naming the node") {
  {
    ModelBuilder m;
    m.Input("x", {1, 4, 8, 8}).Output("y").Weight("w", {6, 1, 3, 3});
    SetInt(m.Node("conv", "Conv", {"x", "w"}, {"y"}), "group", 4);
    CHECK(ImportError(m, "m.onnx") == "m.onnx: node 'conv' (Conv): the 6 output channels are not a multiple of group 4");
  }
  {
    ModelBuilder m;  // 2 groups x 47·47 taps
    m.Input("x", {1, 4, 8, 8}).Output("y").Weight("w", {4, 2, 47, 47});
    SetInt(SetInts(m.Node("conv", "Conv", {"x", "w"}, {"y"}), "pads", {23, 23, 23, 23}), "group", 2);
    CHECK(ImportError(m, "m.onnx") ==
          "m.onnx: node 'conv' (Conv): grouped convolution of 2 groups and 2209 taps is 4418 MatMuls (more than 4096)");
  }
  {
    ModelBuilder m;  // found by thinking like the fuzzer: weight channels x group overflowed
    m.Input("x", {1, 4, 8, 8}).Output("y").Weight("w", {4, 4, 3, 3});
    SetInt(m.Node("conv", "Conv", {"x", "w"}, {"y"}), "group", int64_t{1} << 62);
    CHECK(ImportError(m, "m.onnx") == "m.onnx: node 'conv' (Conv): the sizes are too large (4 x 4611686018427387904 overflows)");
  }
  {
    ModelBuilder m;
    m.Input("x", {1, 4, 8, 8}).Output("y").Weight("w", {4, 2, 3, 3});
    m.Node("relu", "Relu", {"x"}, {"r"});
    SetInts(SetInt(m.Node("up", "ConvTranspose", {"r", "w"}, {"y"}), "group", 2), "output_padding", {int64_t{1} << 62, 0});
    CHECK(ImportError(m, "m.onnx") == "m.onnx: node 'up' (ConvTranspose): attribute output_padding must be in 0..1048576");
  }
  {
    ModelBuilder m;
    m.Input("x", {1, 2, 3, 3, 3, 3}).Output("y").Weight("w", {2, 2, 1, 1, 1, 1});
    m.Node("conv", "Conv", {"x", "w"}, {"y"});
    CHECK(ImportError(m, "m.onnx") ==
          "m.onnx: node 'conv' (Conv): only 1-D, 2-D and 3-D convolutions ((N, C, spatial...) input, weight of the same rank) "
          "are supported; input [1,2,3,3,3,3], weight [2,2,1,1,1,1]");
  }
  {
    ModelBuilder m;
    m.Input("x", {1, 2, 8}).Output("y").Weight("w", {2, 2, 3});
    SetInts(m.Node("conv", "Conv", {"x", "w"}, {"y"}), "pads", {1, 1, 1, 1});
    CHECK(ImportError(m, "m.onnx") == "m.onnx: node 'conv' (Conv): strides/dilations/pads do not match a 1-D convolution");
  }
}

// The obvious count: every output element of every output channel sums Cin / group inputs over
// every tap (torch's count for aten.convolution), with the output size from the ONNX formula.
TEST_CASE("import conv: random grouped convolutions of rank 1 to 3 have exact MACs and parameters") {
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return int64_t(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  for (int c = 0; c < 300; ++c) {
    const int rank = int(pick(1, 3));
    const int64_t group = pick(1, 4), cin_g = pick(1, 3), cout_g = pick(1, 3), n = pick(1, 2);
    std::vector<int64_t> in{n, group * cin_g}, w{group * cout_g, cin_g}, strides, dil, pads_begin, pads_end, out_size;
    int64_t taps = 1;
    for (int i = 0; i < rank; ++i) {
      const int64_t k = pick(1, 3), s = pick(1, 2), d = pick(1, 2), pb = pick(0, 1), pe = pick(0, 1);
      const int64_t size = d * (k - 1) + 1 + pick(0, 5);
      in.push_back(size);
      w.push_back(k);
      strides.push_back(s);
      dil.push_back(d);
      pads_begin.push_back(pb);
      pads_end.push_back(pe);
      out_size.push_back((size + pb + pe - d * (k - 1) - 1) / s + 1);
      taps *= k;
    }
    std::vector<int64_t> pads = pads_begin;
    pads.insert(pads.end(), pads_end.begin(), pads_end.end());
    const bool split_input = pick(0, 1) == 1;  // after a 1x1 conv and ReLU, else after a ReLU
    ModelBuilder m;
    m.Input("x", in).Output("y").Weight("w", w);
    std::vector<int64_t> w1{in[1], in[1]};
    w1.resize(2 + rank, 1);
    m.Weight("w1", w1);
    if (split_input) m.Node("conv1", "Conv", {"x", "w1"}, {"c1"});
    m.Node("relu", "Relu", {split_input ? "c1" : "x"}, {"r"});
    onnx::NodeProto& conv = m.Node("conv", "Conv", {"r", "w"}, {"y"});
    SetInts(SetInts(SetInts(SetInt(conv, "group", group), "strides", strides), "dilations", dil), "pads", pads);
    CAPTURE(c);
    CAPTURE(m.model.graph().DebugString());
    const LoweredModel l = Lower(m, "random.onnx");
    int64_t out_elements = n * group * cout_g;
    for (int64_t s : out_size) out_elements *= s;
    const int64_t pixels = in[0] * Product(in, 2);
    const int64_t conv1_macs = split_input ? pixels * in[1] * in[1] : 0;
    // one input channel a group: depthwise, with a depth multiplier when cout_g > 1 (vector work)
    const bool depthwise = group > 1 && cin_g == 1;
    CHECK(l.summary.macs == conv1_macs + (depthwise ? 0 : out_elements * cin_g * taps));
    CHECK(l.summary.depthwise_macs == (depthwise ? out_elements * taps : 0));
    CHECK(ComputeMacs(l) == l.summary.macs);
    CHECK(l.summary.params_in_tensors == (split_input ? in[1] * in[1] : 0) + (depthwise ? 0 : Product(w)));
    const Problem back = ParseProblem(ProblemToJson(l.problem), "random.onnx");
    CHECK(back.ops.size() == l.problem.ops.size());
  }
}

// A transposed convolution: every input element of every input channel is scattered to
// Cout / group outputs over every tap.
TEST_CASE("import conv: random grouped transposed convolutions of rank 1 to 3 have exact MACs and parameters") {
  std::mt19937 rng(11);
  auto pick = [&](int lo, int hi) { return int64_t(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  for (int c = 0; c < 200; ++c) {
    const int rank = int(pick(1, 3));
    const int64_t group = pick(1, 4), cin_g = pick(1, 3), cout_g = pick(1, 3);
    std::vector<int64_t> in{1, group * cin_g}, w{group * cin_g, cout_g}, strides;
    int64_t taps = 1;
    for (int i = 0; i < rank; ++i) {
      in.push_back(pick(1, 5));
      w.push_back(pick(1, 3));
      strides.push_back(pick(1, 2));
      taps *= w.back();
    }
    ModelBuilder m;
    m.Input("x", in).Output("y").Weight("w", w);
    m.Node("relu", "Relu", {"x"}, {"r"});
    SetInts(SetInt(m.Node("up", "ConvTranspose", {"r", "w"}, {"y"}), "group", group), "strides", strides);
    CAPTURE(c);
    CAPTURE(m.model.graph().DebugString());
    const LoweredModel l = Lower(m, "random_transposed.onnx");
    CHECK(l.summary.macs == Product(in) * cout_g * taps);
    CHECK(ComputeMacs(l) == l.summary.macs);
    CHECK(l.summary.params_in_tensors == Product(w));
  }
}

// Not a convolution, but the same builder: a model that ends in a rearrangement (a transpose
// of its output, as a channels-first head writes it) still writes that output: the pending
// value is gathered by one Layout op at the end, and the problem stays schedulable.
TEST_CASE("import: a model whose output is a pending rearrangement gathers it") {
  ModelBuilder m;
  m.Input("x", {1, 4, 8, 8}).Weight("w", {16, 4, 1, 1}).Output("y");
  m.Node("conv", "Conv", {"x", "w"}, {"c"});
  SetInts(m.Node("t", "Transpose", {"c"}, {"y"}), "perm", {0, 2, 3, 1});  // NCHW -> NHWC: relabelled
  const LoweredModel relabelled = Lower(m, "nhwc.onnx");
  CHECK(relabelled.summary.layout_ops == 0);
  ModelBuilder f;
  f.Input("x", {1, 4, 8, 8}).Weight("w", {16, 4, 1, 1}).Output("y");
  f.Node("conv", "Conv", {"x", "w"}, {"c"});
  SetInt(f.Node("flat", "Flatten", {"c"}, {"y"}), "axis", 1);  // [1, 16·8·8]: rows and columns mixed
  const LoweredModel flat = Lower(f, "flat.onnx");
  CHECK(flat.summary.layout_ops == 1);
  CHECK(flat.problem.tensors[flat.problem.ops.back().output] == Tensor{1024, 1});  // width 16·64, one row
  CheckValid(flat, "flat.onnx");
}

}  // namespace
}  // namespace annealer
