// Real exports: torchvision's models and hand-written architectures exported by torch.onnx
// itself (tests/models/export_torch.py writes tests/models/torch/, weights stripped, with
// torch's own counts in expected.json). Every file must import with the problem's compute
// (Σ M·K·N of its compute MatMuls, plus the depthwise MACs it prices as vector work) equal to
// torch's dispatch-level count, the file's parameters, a problem the reader takes back, and a
// layer-by-layer schedule the oracle accepts.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>
#include <simdjson.h>

#include "eval/oracle.h"
#include "search/starts/baseline.h"
#include "src/import/model_lowering.h"
#include "src/import/onnx_graph.h"
#include "src/io/contest/problem_reader.h"
#include "src/io/contest/problem_writer.h"
#include "tests/support/test_files.h"
#include "tests/import/import_counts.h"

namespace annealer {
namespace {

const std::string kZoo = std::string(ANNEALER_SOURCE_DIR) + "/tests/models/torch/";

// A TPU-v5e-like core scaled down (fast memory 4 Mi elements), as in model_import_test.cc.
LoweringHardware ZooHardware() { return LoweringHardware{4 << 20, 64, 128, 32, 8}; }

struct ZooModel {
  std::string file;
  int64_t macs = 0, params = 0, opset = 0;
};

std::vector<ZooModel> ZooModels(int64_t opset) {
  simdjson::dom::parser parser;
  const std::string text = testing::ReadFile(kZoo + "expected.json");
  std::vector<ZooModel> out;
  for (auto [key, value] : parser.parse(text).get_object()) {
    ZooModel m{std::string(key), int64_t(value["macs"]), int64_t(value["params"]), int64_t(value["opset"])};
    if (m.opset == opset) out.push_back(m);
  }
  return out;
}

using testing::ComputeMatMulMacs;

void CheckZoo(int64_t opset) {
  const std::vector<ZooModel> models = ZooModels(opset);
  REQUIRE(models.size() >= 30);
  for (const ZooModel& z : models) {
    CAPTURE(z.file);
    const LoweredModel m = LowerOnnxGraph(ReadOnnxFile(kZoo + z.file, {}), ZooHardware());
    CHECK(ComputeMatMulMacs(m) + m.summary.depthwise_macs == z.macs);
    CHECK(m.summary.macs == ComputeMatMulMacs(m));
    CHECK(m.summary.params == z.params);
    const Problem back = ParseProblem(ProblemToJson(m.problem), z.file);
    CHECK(back.tensors == m.problem.tensors);
    CHECK(back.ops.size() == m.problem.ops.size());
    const Evaluation e = EvaluateOracle(m.problem, BuildBaseline(m.problem));
    CHECK(e.ok());
    CHECK(e.total > 0);
  }
}

TEST_CASE("zoo: torch's own exports at opset 13 import with torch's MACs and a valid schedule") { CheckZoo(13); }
TEST_CASE("zoo: torch's own exports at opset 17 import with torch's MACs and a valid schedule") { CheckZoo(17); }

// What three exports hold beyond the MACs (counts from the graphs and the modules' shapes).
TEST_CASE("zoo: nn.RNN, LocalResponseNorm's If and nn.Transformer's Trilu mask") {
  for (const char* file : {"rnn_tagger_op13.onnx", "rnn_tagger_op17.onnx"}) {
    CAPTURE(file);
    const LoweredModel m = LowerOnnxGraph(ReadOnnxFile(kZoo + file, {}), ZooHardware());
    CHECK(m.summary.onnx_ops.at("RNN") == 3);
    // 50 steps x (x·W, h·R): the tanh layer, then 2 layers x 2 directions; and the head
    CHECK(m.summary.problem_ops.at("matmul") == 50 * 2 + 2 * 2 * 50 * 2 + 1);
    CHECK(m.summary.problem_ops.at("recurrent-hidden") == 50 + 2 * 2 * 50);
  }
  for (const char* file : {"lrn_net_op13.onnx", "lrn_net_op17.onnx"}) {
    CAPTURE(file);
    const LoweredModel m = LowerOnnxGraph(ReadOnnxFile(kZoo + file, {}), ZooHardware());
    // squeeze(1) of a dim that is 1: the then-branches' Squeeze ran, the else-branches' Identity not
    CHECK(m.summary.onnx_ops.at("If") == 2);
    CHECK(m.summary.onnx_ops.at("Squeeze") == 2);
    CHECK(m.summary.onnx_ops.count("Identity") == 0);
    CHECK(m.summary.problem_ops.at("conv") + m.summary.problem_ops.at("conv-tap") == 1 + 9);
  }
  const LoweredModel m = LowerOnnxGraph(ReadOnnxFile(kZoo + "seq2seq_transformer_op17.onnx", {}), ZooHardware());
  CHECK(m.summary.onnx_ops.at("Trilu") == 1);
  // per head (4): Q, K, V, Q·Kᵀ, P·V and the output projection's rows; the FFN; the head
  CHECK(m.summary.problem_ops.at("matmul") == 2 * (6 * 4 + 2) + 2 * (2 * 6 * 4 + 2) + 1);
}

// Three more: a loop of cells from zero states, a batch doubled by concatenation, a statistic of
// four channels broadcast over eighty.
TEST_CASE("zoo: nn.GRUCell/LSTMCell loops, torch.cat([h] * 2), a mean over other channels") {
  for (const char* opset : {"13", "17"}) {
    CAPTURE(opset);
    const std::string suffix = std::string("_op") + opset + ".onnx";
    {
      const LoweredModel m = LowerOnnxGraph(ReadOnnxFile(kZoo + "cell_decoder" + suffix, {}), ZooHardware());
      // 8 steps x (prenet, GRU 3 + 3 gate blocks, LSTM 4 + 4, projection)
      CHECK(m.summary.problem_ops.at("matmul") == 8 * (1 + 6 + 8 + 1));
      // the zero initial hidden states of both cells, multiplied by their recurrence weights
      int data = 0;
      for (const TensorOrigin& t : m.tensor_origins) data += t.value.size() > 5 && t.value.substr(t.value.size() - 5) == "~data";
      CHECK(data == 2);
    }
    {
      // the doubled latent is one Layout op reading the encoder's output once (ParseProblem in
      // CheckZoo rejects an op naming a tensor twice)
      const LoweredModel m = LowerOnnxGraph(ReadOnnxFile(kZoo + "guided_denoiser" + suffix, {}), ZooHardware());
      CHECK(m.summary.onnx_ops.at("Concat") == 1);
      CHECK(m.summary.problem_ops.at("conv-tap") == 2 * 9);
    }
    {
      // the mean quality: one ones-column MatMul (priced at the vector rate), then gathered at
      // the class scores' size
      const LoweredModel m = LowerOnnxGraph(ReadOnnxFile(kZoo + "tta_head" + suffix, {}), ZooHardware());
      CHECK(m.summary.problem_ops.at("reduction") == 1);
      bool noted = false;
      for (const Approximation& a : m.summary.approximations) noted |= a.rule == "column-reduction-matmul";
      CHECK(noted);
    }
  }
}

// EEGNet's spatial filter: a depthwise convolution with depth multiplier 2 (8 groups of one input
// channel, 16 outputs, a 64 x 1 kernel) is vector work like a plain depthwise one: the input
// gathered with each channel repeated (one Layout op), then 64 passes; not 8 x 64 MatMuls of K = 1.
TEST_CASE("zoo: EEGNet's depthwise convolution with a depth multiplier") {
  for (const char* file : {"eegnet_op13.onnx", "eegnet_op17.onnx"}) {
    CAPTURE(file);
    const LoweredModel m = LowerOnnxGraph(ReadOnnxFile(kZoo + file, {}), ZooHardware());
    CHECK(m.summary.problem_ops.at("depthwise") == 2);
    CHECK(m.summary.problem_ops.count("conv-tap") == 0);
    // 16 channels x 129 samples x 64 taps, and the separable 1 x 16 one on 33 samples
    CHECK(m.summary.depthwise_macs == 16 * 129 * 64 + 16 * 33 * 16);
  }
}

// Gathers at addresses the model computes: CLIP's end-of-text pooling (a Gather at the arg-max
// of the ids), a scorer's lookup of ids it slices and its torch.gather of the next tokens'
// log-probabilities: one Layout op each, reading the data and the indices.
TEST_CASE("zoo: gathers at computed indices (CLIP's end-of-text pooling, torch.gather)") {
  auto gathered = [](const LoweredModel& m) {
    int n = 0;
    for (size_t o = 0; o < m.problem.ops.size(); ++o) {
      const OpOrigin& origin = m.op_origins[o];
      // the gather reads the data and the indices (the slices of the ids are Layout ops too)
      n += m.problem.ops[o].kind == OpKind::Layout && m.problem.ops[o].inputs.size() == 2 && origin.op_types.size() == 1 &&
           (origin.op_types[0] == "Gather" || origin.op_types[0] == "GatherElements");
    }
    return n;
  };
  for (const char* opset : {"13", "17"}) {
    CAPTURE(opset);
    const std::string suffix = std::string("_op") + opset + ".onnx";
    const LoweredModel clip = LowerOnnxGraph(ReadOnnxFile(kZoo + "clip_text" + suffix, {}), ZooHardware());
    CHECK(clip.summary.onnx_ops.at("ArgMax") == 1);
    CHECK(gathered(clip) == 1);
    const LoweredModel scorer = LowerOnnxGraph(ReadOnnxFile(kZoo + "lm_scorer" + suffix, {}), ZooHardware());
    CHECK(scorer.summary.onnx_ops.at("GatherElements") == 1);
    CHECK(gathered(scorer) == 2);
  }
}

// A Switch MoE's F.one_hot of the router's arg-max: the index broadcast along the 4 experts (a
// Layout op), one compare pass; the 9 MatMuls are the router and the 4 two-layer experts.
TEST_CASE("zoo: OneHot of an arg-max (a top-1 mixture of experts)") {
  for (const char* file : {"switch_moe_op13.onnx", "switch_moe_op17.onnx"}) {
    CAPTURE(file);
    const LoweredModel m = LowerOnnxGraph(ReadOnnxFile(kZoo + file, {}), ZooHardware());
    CHECK(m.summary.onnx_ops.at("OneHot") == 1);
    CHECK(m.summary.problem_ops.at("matmul") == 1 + 4 * 2);
    int one_hot = 0;
    for (size_t o = 0; o < m.problem.ops.size(); ++o)
      if (m.op_origins[o].op_types == std::vector<std::string>{"OneHot"}) {
        ++one_hot;
        if (m.problem.ops[o].kind == OpKind::Pointwise) CHECK(m.problem.tensors[m.problem.ops[o].output].size() == 32 * 4);
      }
    CHECK(one_hot == 2);  // the gather at the output's size and the compare
  }
}

// Loops with a trip count known at import, unrolled: torch.tensor_split as a Loop inserting the
// pieces into a sequence (MViT's pooling attention: the class token split off K and V), and
// nn.EmbeddingBag as a Loop over the bags with a scan output (one mean per bag, stacked).
TEST_CASE("zoo: Loops of a known trip count (torch.tensor_split, nn.EmbeddingBag)") {
  for (const char* opset : {"13", "17"}) {
    CAPTURE(opset);
    const std::string suffix = std::string("_op") + opset + ".onnx";
    const LoweredModel pooled = LowerOnnxGraph(ReadOnnxFile(kZoo + "pooled_attention" + suffix, {}), ZooHardware());
    CHECK(pooled.summary.onnx_ops.at("Loop") == 2);
    CHECK(pooled.summary.onnx_ops.at("SequenceAt") == 4);
    CHECK(pooled.summary.problem_ops.at("matmul") == 4);      // qkv, Q·Kᵀ, P·V, proj (one head)
    CHECK(pooled.summary.problem_ops.at("depthwise") == 2);   // the K and V pooling
    const LoweredModel bag = LowerOnnxGraph(ReadOnnxFile(kZoo + "bag_classifier" + suffix, {}), ZooHardware());
    CHECK(bag.summary.onnx_ops.at("Loop") == 1);
    CHECK(bag.summary.onnx_ops.at("ReduceMean") == 4);       // the body, once per bag
    CHECK(bag.summary.problem_ops.at("reduction") == 4);
  }
}

// A file whose nodes are out of order imports as the sorted one does: ONNX shape inference runs
// on the sorted graph (libonnx 1.12's data propagation crashed with SIGSEGV on these files with
// their nodes reversed, before the importer's own sort).
TEST_CASE("zoo: exports with their nodes in reverse order import with the same counts") {
  for (const char* file : {"lrn_net_op17.onnx", "vit_b_16_op17.onnx", "seq2seq_transformer_op17.onnx"}) {
    CAPTURE(file);
    onnx::ModelProto model;
    REQUIRE(model.ParseFromString(testing::ReadFile(kZoo + file)));
    auto* nodes = model.mutable_graph()->mutable_node();
    std::reverse(nodes->begin(), nodes->end());
    std::string reversed;
    REQUIRE(model.SerializeToString(&reversed));
    const LoweredModel r = LowerOnnxGraph(ParseOnnx(reversed, file, {}), ZooHardware());
    const LoweredModel f = LowerOnnxGraph(ReadOnnxFile(kZoo + file, {}), ZooHardware());
    CHECK(r.summary.macs == f.summary.macs);
    CHECK(r.summary.params == f.summary.params);
    CHECK(r.summary.onnx_ops == f.summary.onnx_ops);
    CHECK(r.summary.problem_ops == f.summary.problem_ops);
    CHECK(r.problem.tensors.size() == f.problem.tensors.size());
  }
}

// Other settings of torch.onnx.export (tests/models/export_torch.py, SETTINGS).
// export_modules_as_functions=True: the graph calls local functions (one per module class,
// nested, with attribute references); expanded in place, the problem is the plain export's, byte
// for byte.
TEST_CASE("zoo: exports with local functions import as the plain exports") {
  for (const char* model : {"resnet18", "transformer_encoder"}) {
    CAPTURE(model);
    const OnnxGraph functions = ReadOnnxFile(kZoo + model + "_functions_op17.onnx", {});
    CHECK(functions.nodes.size() > 40);  // the file's graph itself is one call
    const LoweredModel f = LowerOnnxGraph(functions, ZooHardware());
    const LoweredModel plain = LowerOnnxGraph(ReadOnnxFile(kZoo + model + "_op17.onnx", {}), ZooHardware());
    CHECK(ProblemToJson(f.problem) == ProblemToJson(plain.problem));
    CHECK(f.summary.onnx_ops == plain.summary.onnx_ops);
    CHECK(f.summary.params == plain.summary.params);
  }
}

// training=TrainingMode.TRAINING with the model in train(): a BatchNormalization computes its batch
// statistics (opset 13: five outputs; 17: training_mode = 1) and a Dropout drops (opset 13, 17:
// training_mode = True; 11: the mask output). Each is priced and stated as an approximation with
// its size; the MACs are the eval export's.
TEST_CASE("zoo: training-mode exports: batch statistics and dropout are priced and stated") {
  auto rule = [](const LoweredModel& m, const std::string& name) {
    for (const Approximation& a : m.summary.approximations)
      if (a.rule == name) return a;
    return Approximation{};
  };
  for (const char* opset : {"13", "17"}) {
    CAPTURE(opset);
    const LoweredModel m = LowerOnnxGraph(ReadOnnxFile(kZoo + "resnet18_training_op" + opset + ".onnx", {}), ZooHardware());
    const LoweredModel eval = LowerOnnxGraph(ReadOnnxFile(kZoo + "resnet18_op" + opset + ".onnx", {}), ZooHardware());
    CHECK(m.summary.macs == eval.summary.macs);
    CHECK(m.summary.onnx_ops.at("BatchNormalization") == 20);
    const Approximation a = rule(m, "batch-statistics");
    CHECK(a.count == 20);
    // the outputs of the 20 convolutions: 64·112² + 4·64·56² + 4·128·28² + 128·28² + 4·256·14²
    // + 256·14² + 4·512·7² + 512·7²
    CHECK(a.elements == 802816 + 802816 + 501760 + 250880 + 125440);
    CHECK(!a.traffic);
    CHECK(m.summary.problem_ops.at("normalisation") == 20);
  }
  for (const char* opset : {"11", "13", "17"}) {
    CAPTURE(opset);
    const LoweredModel m =
        LowerOnnxGraph(ReadOnnxFile(kZoo + "transformer_encoder_training_op" + opset + ".onnx", {}), ZooHardware());
    CHECK(m.summary.macs == 104860160);  // torch's count (expected.json)
    CHECK(m.summary.onnx_ops.at("Dropout") == 8);
    const Approximation a = rule(m, "training-dropout");
    CHECK(a.count == 8);
    // per layer: the attention probabilities (4 heads x 64 x 64), after attention (64 x 256), in
    // the feed-forward (64 x 1024) and after it (64 x 256)
    CHECK(a.elements == 2 * (4 * 64 * 64 + 64 * 256 + 64 * 1024 + 64 * 256));
    const Evaluation e = EvaluateOracle(m.problem, BuildBaseline(m.problem));
    CHECK(e.ok());
  }
}

}  // namespace
}  // namespace annealer
