// gemmini-default against Gemmini measured in RTL simulation (FireSim), layer by layer: every
// unique convolution and the fully-connected layer of ResNet-50, from the repository of DOSA
// (MICRO 2023, ucb-bar/dosa, data/firesim_test_data/dataset.csv, column
// target.gemmini_auto_cycle: Gemmini's own tiler; the configuration with a 257,024-byte
// scratchpad and a 200,704-byte accumulator; layer counts from
// dataset/workloads/resnet50/layer_count.yaml). Each layer is built in memory as an ONNX Conv
// (or Gemm) with stripped weights, lowered for gemmini-default with those two memory sizes and
// its chip rules, and priced by the layer-by-layer baseline (deterministic). The bands asserted
// are the ones docs/hardware.md states ("Calibration"); bench/calibration/gemmini_calibration.py prints the
// whole table, searches included.
#include <doctest/doctest.h>

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

#include "eval/oracle.h"
#include "search/starts/baseline.h"
#include "src/import/hardware_profile.h"
#include "src/import/model_lowering.h"
#include "src/import/model_source.h"
#include "src/import/onnx_graph.h"

namespace annealer {
namespace {

struct Layer {
  int r;  // kernel side; 0 for the fully-connected layer
  int64_t c, k, p;
  int stride;
  int count;
  double measured;  // FireSim cycles
};

constexpr Layer kResNet50[] = {
    {7, 3, 64, 112, 2, 1, 2577699},    {1, 64, 64, 56, 1, 1, 212475},     {3, 64, 64, 56, 1, 3, 538484},
    {1, 64, 256, 56, 1, 4, 557954},    {1, 256, 64, 56, 1, 2, 859685},    {1, 256, 128, 56, 1, 1, 1273454},
    {3, 128, 128, 28, 2, 1, 649677},   {1, 128, 512, 28, 1, 4, 506921},   {1, 256, 512, 28, 2, 1, 2831689},
    {1, 512, 128, 28, 1, 3, 632840},   {3, 128, 128, 28, 1, 3, 630513},   {1, 512, 256, 28, 1, 1, 1013370},
    {3, 256, 256, 14, 2, 1, 657000},   {1, 256, 1024, 14, 1, 6, 386739},  {1, 512, 1024, 14, 2, 1, 1710236},
    {1, 1024, 256, 14, 1, 5, 543853},  {3, 256, 256, 14, 1, 5, 746664},   {1, 1024, 512, 14, 1, 1, 824885},
    {3, 512, 512, 7, 2, 1, 1102638},   {1, 512, 2048, 7, 1, 3, 580950},   {1, 1024, 2048, 7, 2, 1, 1010835},
    {1, 2048, 512, 7, 1, 2, 649782},   {3, 512, 512, 7, 1, 2, 777089},    {0, 2048, 1000, 1, 1, 1, 511246},
};

void Shape(onnx::ValueInfoProto& v, const std::vector<int64_t>& dims) {
  v.set_name("x");
  auto* type = v.mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) type->mutable_shape()->add_dim()->set_dim_value(d);
}

void Ints(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

// One Conv ('same' padding) or Gemm, batch 1, its weight stripped (dims, no data).
std::string LayerBytes(const Layer& l) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  onnx::GraphProto& g = *model.mutable_graph();
  g.set_name("layer");
  onnx::TensorProto* w = g.add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  onnx::NodeProto* node = g.add_node();
  node->set_name("layer");
  // By std::string: GCC 12 flags protobuf's inline add_input(const char*) with a false -Wrestrict.
  const std::string x = "x", weight = "w", y = "y";
  node->add_input(x);
  node->add_input(weight);
  node->add_output(y);
  if (l.r == 0) {
    Shape(*g.add_input(), {1, l.c});
    for (int64_t d : {l.k, l.c}) w->add_dims(d);
    node->set_op_type("Gemm");
    onnx::AttributeProto* t = node->add_attribute();
    t->set_name("transB");
    t->set_type(onnx::AttributeProto::INT);
    t->set_i(1);
  } else {
    const int64_t pad = (l.r - 1) / 2;
    Shape(*g.add_input(), {1, l.c, l.p * l.stride, l.p * l.stride});
    for (int64_t d : {l.k, l.c, static_cast<int64_t>(l.r), static_cast<int64_t>(l.r)}) w->add_dims(d);
    node->set_op_type("Conv");
    Ints(*node, "kernel_shape", {l.r, l.r});
    Ints(*node, "strides", {l.stride, l.stride});
    Ints(*node, "pads", {pad, pad, pad, pad});
  }
  g.add_output()->set_name("y");
  std::string bytes;
  REQUIRE(model.SerializeToString(&bytes));
  return bytes;
}

TEST_CASE("calibration: gemmini-default against FireSim cycles of ResNet-50's layers (DOSA)") {
  const DerivedHardware hw = Derive(LoadHardwareProfile(
      "gemmini-default",
      {{"fast_memory", "257024 B"}, {"staging_buffer", "257024 B"}, {"accumulator_buffer", "200704 B"}}));
  double measured = 0, predicted = 0, worst_low = 1, worst_high = 1;
  for (const Layer& l : kResNet50) {
    CAPTURE(l.r);
    CAPTURE(l.c);
    CAPTURE(l.k);
    CAPTURE(l.p);
    CAPTURE(l.stride);
    LoweredModel lowered = LowerOnnxGraph(ParseOnnx(LayerBytes(l), "layer.onnx", {}), LoweringHardwareOf(hw));
    Problem& problem = lowered.problem;
    problem.chip = hw.chip;
    const Evaluation evaluation = EvaluateOracle(problem, BuildBaseline(problem));
    REQUIRE(evaluation.ok());
    const double ratio = evaluation.total / l.measured;
    CAPTURE(evaluation.total);
    CAPTURE(l.measured);
    // docs/hardware.md: every layer within 0.25x to 1.75x of the measured cycles.
    CHECK(ratio >= 0.25);
    CHECK(ratio <= 1.75);
    worst_low = std::min(worst_low, ratio);
    worst_high = std::max(worst_high, ratio);
    measured += l.count * l.measured;
    predicted += l.count * evaluation.total;
  }
  MESSAGE("ResNet-50: measured " << measured << " cycles, predicted " << predicted << " (ratio "
                                 << predicted / measured << "; layers " << worst_low << " to " << worst_high << ")");
  CHECK(measured == doctest::Approx(39129196));
  // docs/hardware.md: the whole network within 20 %.
  CHECK(predicted / measured >= 0.80);
  CHECK(predicted / measured <= 1.20);
}

}  // namespace
}  // namespace annealer
