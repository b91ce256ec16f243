// What hand-written torch modules export beyond the zoo (bench/heldout/user_models.py has the
// modules): matmul's broadcasting and 1-D operands, a weight with batch axes, W @ x, expand of a
// computed value (grouped-query attention), reductions over the columns and over everything,
// arg-max, top-k, cumsum, a split that cuts a chunked projection, a computed Where condition,
// 1-D and 3-D resizes, split shape constants. Small models built in memory; every count is the
// obvious one (numpy's matmul: M·K·N per matrix of the broadcast batch).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "eval/oracle.h"
#include "search/starts/baseline.h"
#include "src/import/model_lowering.h"
#include "src/import/onnx_graph.h"
#include "src/io/json_fields.h"
#include "tests/import/import_counts.h"
#include "tests/import/onnx_model_builder.h"

namespace annealer {
namespace {

using testing::OnnxModelBuilder;
using testing::SetFloat;
using testing::SetInt;
using testing::SetInts;
using testing::SetBranch;
using testing::SetText;

LoweredModel Lower(const OnnxModelBuilder& m, const std::string& name) {
  return LowerOnnxGraph(ParseOnnx(m.Bytes(), name, {}), LoweringHardware{4 << 20, 64, 128, 32, 8});
}

std::string ImportError(const OnnxModelBuilder& m, const std::string& name) {
  try {
    Lower(m, name);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

int Role(const LoweredModel& m, const std::string& role) {
  auto it = m.summary.problem_ops.find(role);
  return it == m.summary.problem_ops.end() ? 0 : it->second;
}

const Approximation* Rule(const LoweredModel& m, const std::string& rule) {
  for (const Approximation& a : m.summary.approximations)
    if (a.rule == rule) return &a;
  return nullptr;
}

// The MatMuls of the compute role, as (rows, K, N).
std::vector<std::array<Elements, 3>> ComputeMatMuls(const LoweredModel& m) {
  std::vector<std::array<Elements, 3>> out;
  for (size_t o = 0; o < m.problem.ops.size(); ++o) {
    const Op& op = m.problem.ops[o];
    if (op.kind != OpKind::MatMul || m.op_origins[o].role != "matmul") continue;
    const Tensor& l = m.problem.tensors[op.inputs[0]];
    out.push_back({l.height, l.width, m.problem.tensors[op.inputs[1]].width});
  }
  return out;
}

void CheckValid(const LoweredModel& m) {
  const Evaluation e = EvaluateOracle(m.problem, BuildBaseline(m.problem));
  CHECK_MESSAGE(e.ok(), e.violation.Message());
}

TEST_CASE("import user ops: matmul broadcasts a computed operand over the heads") {
  // torch.matmul(a [2,4,8,32], b [2,1,32,16]): b is data (a graph input with batch axes, not a
  // weight); one MatMul per b matrix, the 4 heads of a stacked as its rows.
  OnnxModelBuilder m;
  m.Input("a", {2, 4, 8, 32}).Input("b", {2, 1, 32, 16}).Output("y");
  m.Node("mm", "MatMul", {"a", "b"}, {"y"});
  const LoweredModel l = Lower(m, "bcast.onnx");
  CHECK(l.summary.macs == 2 * 4 * 8 * 32 * 16);
  CHECK(testing::ComputeMatMulMacs(l) == l.summary.macs);
  CHECK(l.summary.weight_inputs == 0);
  const auto mms = ComputeMatMuls(l);
  REQUIRE(mms.size() == 2);
  for (const auto& mm : mms) CHECK(mm == std::array<Elements, 3>{32, 32, 16});
  CheckValid(l);
}

TEST_CASE("import user ops: a batched weight, a 1-D weight and W @ x") {
  // x [2,4,10,32] @ w [4,32,16] (a weight per head) @ v [16] -> [2,4,10]
  OnnxModelBuilder m;
  m.Input("x", {2, 4, 10, 32}).Output("z").Weight("w", {4, 32, 16}).Weight("v", {16});
  m.Node("mm1", "MatMul", {"x", "w"}, {"y"});
  m.Node("mm2", "MatMul", {"y", "v"}, {"z"});
  const LoweredModel l = Lower(m, "batched_weight.onnx");
  CHECK(l.summary.macs == 2 * 4 * 10 * 32 * 16 + 2 * 4 * 10 * 16);
  CHECK(testing::ComputeMatMulMacs(l) == l.summary.macs);
  CHECK(l.summary.params_in_tensors == 4 * 32 * 16 + 16);
  const auto mms = ComputeMatMuls(l);
  REQUIRE(mms.size() == 4 + 4);  // a weight slice per head; y per head times v
  CHECK(mms[0] == std::array<Elements, 3>{20, 32, 16});
  CHECK(mms[4] == std::array<Elements, 3>{20, 16, 1});
  CheckValid(l);

  // MLP-Mixer's token mixing as torch.matmul(W [16,16], x [2,16,32]): x is the data.
  OnnxModelBuilder t;
  t.Input("x", {2, 16, 32}).Output("y").Weight("w", {16, 16});
  t.Node("mix", "MatMul", {"w", "x"}, {"y"});
  const LoweredModel lt = Lower(t, "token_mix.onnx");
  CHECK(lt.summary.weight_inputs == 0);
  CHECK(lt.summary.macs == 2 * 16 * 16 * 32);
  CHECK(testing::ComputeMatMulMacs(lt) == lt.summary.macs);
  CHECK(ComputeMatMuls(lt).size() == 2);
  CheckValid(lt);
}

TEST_CASE("import user ops: einsum with a weight per head, an ellipsis and row dot products") {
  OnnxModelBuilder m(12);
  m.Input("x", {2, 10, 4, 32}).Output("y").Output("z").Output("d").Weight("w", {4, 32, 16}).Weight("p", {64, 48});
  m.Ints("flat", {3}, {2, 10, 64});
  SetText(m.Node("heads", "Einsum", {"x", "w"}, {"y"}), "equation", "bthd,hde->bthe");
  m.Node("merge", "Reshape", {"y", "flat"}, {"y3"});
  SetText(m.Node("proj", "Einsum", {"y3", "p"}, {"z"}), "equation", "...ij,jk->...ik");
  SetText(m.Node("dots", "Einsum", {"z", "z"}, {"d"}), "equation", "bti,bti->bt");
  const LoweredModel l = Lower(m, "einsum.onnx");
  CHECK(l.summary.macs == 2 * 10 * 4 * 32 * 16 + 2 * 10 * 64 * 48 + 2 * 10 * 48);
  CHECK(testing::ComputeMatMulMacs(l) == l.summary.macs);
  CHECK(l.summary.params_in_tensors == 4 * 32 * 16 + 64 * 48);
  CheckValid(l);
}

TEST_CASE("import user ops: grouped-query attention expands the key heads") {
  // k [1,2,8,16] (2 kv heads) -> Unsqueeze -> Expand [1,2,4,8,16] -> Reshape [1,8,8,16];
  // q [1,8,8,16] @ kᵀ: 8 heads of 8x16x8.
  OnnxModelBuilder m;
  m.Input("q", {1, 8, 8, 16}).Input("k", {1, 2, 8, 16}).Output("s");
  m.Ints("axes", {1}, {2}).Ints("shape", {5}, {1, 2, 4, 8, 16}).Ints("heads", {4}, {1, 8, 8, 16});
  m.Node("relu", "Relu", {"k"}, {"kr"});
  m.Node("unsq", "Unsqueeze", {"kr", "axes"}, {"k5"});
  m.Node("expand", "Expand", {"k5", "shape"}, {"ke"});
  m.Node("merge", "Reshape", {"ke", "heads"}, {"k8"});
  SetInts(m.Node("t", "Transpose", {"k8"}, {"kt"}), "perm", {0, 1, 3, 2});
  m.Node("mm", "MatMul", {"q", "kt"}, {"s"});
  const LoweredModel l = Lower(m, "gqa.onnx");
  CHECK(l.summary.macs == 8 * 8 * 16 * 8);
  CHECK(testing::ComputeMatMulMacs(l) == l.summary.macs);
  // The expanded keys are gathered (Layout ops of the expanded size), never left out.
  const Approximation* layout = Rule(l, "layout");
  REQUIRE(layout != nullptr);
  CHECK(layout->elements >= 1 * 8 * 8 * 16);
  CheckValid(l);
}

// What torch 1.13 writes for a decoder step with a cache of past keys and values (GPT-2 style,
// `torch.cat([past_k, k], dim=-2)` at opset 17): 4-D graph inputs [B, heads, past, head_dim]
// concatenated with the step's heads along the rows, the keys transposed for Q·Kᵀ, both
// concatenations graph outputs (present); and a 4-D graph input read per head as it is (an
// encoder's values in a cross-attention, `mem`).
TEST_CASE("import user ops: a cache of heads concatenated along the rows is gathered once per head") {
  OnnxModelBuilder m;
  m.Input("x", {1, 4, 64}).Input("past_k", {1, 4, 12, 16}).Input("past_v", {1, 4, 12, 16}).Input("mem", {1, 4, 16, 16});
  m.Output("o").Output("present_k").Output("present_v").Output("o2");
  m.Weight("wq", {64, 64}).Weight("wk", {64, 64}).Weight("wv", {64, 64});
  m.Ints("heads", {4}, {1, 4, 4, 16});
  for (const char* t : {"q", "k", "v"}) {
    const std::string n = t;
    m.Node(n + "p", "MatMul", {"x", "w" + n}, {n + "2"});
    m.Node(n + "r", "Reshape", {n + "2", "heads"}, {n + "3"});
    SetInts(m.Node(n + "t", "Transpose", {n + "3"}, {n + "4"}), "perm", {0, 2, 1, 3});
  }
  SetInt(m.Node("cat_k", "Concat", {"past_k", "k4"}, {"present_k"}), "axis", -2);
  SetInt(m.Node("cat_v", "Concat", {"past_v", "v4"}, {"present_v"}), "axis", 2);
  SetInts(m.Node("kt", "Transpose", {"present_k"}, {"kT"}), "perm", {0, 1, 3, 2});
  m.Node("qk", "MatMul", {"q4", "kT"}, {"s"});
  SetInt(m.Node("softmax", "Softmax", {"s"}, {"p"}), "axis", -1);
  m.Node("pv", "MatMul", {"p", "present_v"}, {"o"});
  m.Node("pm", "MatMul", {"p", "mem"}, {"o2"});
  const LoweredModel l = Lower(m, "cache.onnx");
  CHECK(l.summary.macs == 3 * 4 * 64 * 64 + 3 * 4 * 4 * 16 * 16);
  CHECK(testing::ComputeMatMulMacs(l) == l.summary.macs);
  // The caches are a tensor per head (12 rows of head_dim), not one tensor whose columns are the heads.
  std::vector<std::string> inputs;
  for (size_t t = 0; t < l.tensor_origins.size(); ++t)
    if (l.tensor_origins[t].role == "model-input" && l.tensor_origins[t].value != "x") {
      CHECK(l.problem.tensors[t].height == (l.tensor_origins[t].value[0] == 'm' ? 16 : 12));
      CHECK(l.problem.tensors[t].width == 16);
      inputs.push_back(l.tensor_origins[t].value);
    }
  CHECK(inputs == std::vector<std::string>{"past_k[0]", "past_k[1]", "past_k[2]", "past_k[3]", "past_v[0]", "past_v[1]",
                                           "past_v[2]", "past_v[3]", "mem[0]", "mem[1]", "mem[2]", "mem[3]"});
  // Gathered straight from the cache and the step's heads, per head: Kᵀ for Q·Kᵀ, V for P·V (its
  // gather is also present_v), K for present_k; no gather of a gathered concatenation (each
  // 4 x 16 x 16); `mem` is read as it is.
  std::map<std::string, int> gathers;
  for (size_t o = 0; o < l.problem.ops.size(); ++o) {
    if (l.problem.ops[o].kind != OpKind::Layout) continue;
    ++gathers[l.op_origins[o].nodes[0]];
    for (TensorId in : l.problem.ops[o].inputs) {
      const OpId from = l.problem.producer[in];
      CHECK((from == kNoOp || l.problem.ops[from].kind != OpKind::Layout));
    }
  }
  CHECK(gathers == std::map<std::string, int>{{"qk", 4}, {"pv", 4}, {"present_k", 4}});
  const Approximation* layout = Rule(l, "layout");
  REQUIRE(layout != nullptr);
  CHECK(layout->elements == 3 * (4 * 16 * 16));
  CheckValid(l);

  // The first step: a cache of no past steps ([1, 4, 0, 16]) adds nothing to the concatenation.
  OnnxModelBuilder first;
  first.Input("k", {1, 4, 4, 16}).Input("past_k", {1, 4, 0, 16}).Output("present_k").Output("kk");
  first.Node("relu", "Relu", {"k"}, {"kr"});
  SetInt(first.Node("cat", "Concat", {"past_k", "kr"}, {"present_k"}), "axis", 2);
  SetInts(first.Node("t", "Transpose", {"present_k"}, {"kt"}), "perm", {0, 1, 3, 2});
  first.Node("mm", "MatMul", {"present_k", "kt"}, {"kk"});
  const LoweredModel f = Lower(first, "first.onnx");
  CHECK(f.summary.macs == 4 * 4 * 16 * 4);
  CheckValid(f);
  // Read by anything else, an empty value is a one-line error naming it.
  OnnxModelBuilder empty;
  empty.Input("past_k", {1, 4, 0, 16}).Output("y");
  empty.Node("relu", "Relu", {"past_k"}, {"y"});
  CHECK(ImportError(empty, "empty.onnx") ==
        "empty.onnx: 'past_k' has no elements (a dim of 0): an empty value is read only by a Concat, which skips it, or "
        "as shape arithmetic");
}

// A graph input read through a view (a Transpose, a Slice) and as itself is one input: its first
// reader lays it out, and a reading in another layout gathers from those tensors (before, each
// reading made tensors of its own, the view's as "embedding-rows": the input counted twice).
TEST_CASE("import user ops: a graph input read through a view and as itself is made tensors once") {
  // An encoder memory read per head transposed (Kᵀ) and as itself (an elementwise op).
  OnnxModelBuilder m;
  m.Input("q", {1, 4, 8, 16}).Input("mk", {1, 4, 12, 16}).Output("s").Output("twice");
  SetInts(m.Node("t", "Transpose", {"mk"}, {"mkT"}), "perm", {0, 1, 3, 2});
  m.Node("qk", "MatMul", {"q", "mkT"}, {"s"});
  m.Node("add", "Add", {"mk", "mk"}, {"twice"});
  const LoweredModel l = Lower(m, "memory.onnx");
  Elements input_elements = 0;
  for (size_t t = 0; t < l.tensor_origins.size(); ++t) {
    if (l.problem.producer[t] != kNoOp || l.tensor_origins[t].role == "weight") continue;
    CHECK(l.tensor_origins[t].role == "model-input");
    input_elements += l.problem.tensors[t].size();
  }
  CHECK(input_elements == 4 * 8 * 16 + 4 * 12 * 16);
  const Approximation* layout = Rule(l, "layout");
  REQUIRE(layout != nullptr);
  CHECK(layout->elements == 4 * 12 * 16);  // mk gathered once for the Add, from the per-head Kᵀ tensors
  CheckValid(l);

  // A sequence-first input [S, 1, D] read through the batch-first transpose and by the residual
  // Add: the same data either way, one tensor and no gather.
  OnnxModelBuilder seq;
  seq.Input("x", {64, 1, 32}).Output("y").Weight("w", {32, 32});
  SetInts(seq.Node("t", "Transpose", {"x"}, {"xb"}), "perm", {1, 0, 2});
  seq.Node("proj", "MatMul", {"xb", "w"}, {"p"});
  SetInts(seq.Node("back", "Transpose", {"p"}, {"ps"}), "perm", {1, 0, 2});
  seq.Node("res", "Add", {"x", "ps"}, {"y"});
  const LoweredModel ls = Lower(seq, "seq_first.onnx");
  int inputs = 0;
  for (size_t t = 0; t < ls.tensor_origins.size(); ++t) inputs += ls.tensor_origins[t].role == "model-input";
  CHECK(inputs == 1);
  CHECK(Rule(ls, "layout") == nullptr);
  CheckValid(ls);
}

TEST_CASE("import user ops: reductions over the columns, over everything, and arg-max") {
  // y [2,16,32]: mean over (1, 2) keepdims (a column then a row reduction), sum over -1 without
  // keepdims, arg-max over -1, and a mean over -1 with keepdims kept as an output.
  OnnxModelBuilder m(13);
  m.Input("x", {2, 16, 32}).Output("m").Output("s").Output("a").Output("r");
  m.Node("relu", "Relu", {"x"}, {"y"});
  SetInts(m.Node("mean", "ReduceMean", {"y"}, {"m"}), "axes", {1, 2});
  m.Ints("last", {1}, {-1});
  SetInt(m.Node("sum", "ReduceSum", {"y", "last"}, {"s"}), "keepdims", 0);
  SetInt(SetInt(m.Node("argmax", "ArgMax", {"y"}, {"a"}), "axis", -1), "keepdims", 0);
  SetInts(m.Node("rowmean", "ReduceMean", {"y"}, {"r"}), "axes", {-1});
  const LoweredModel l = Lower(m, "reduce.onnx");
  CHECK(l.summary.macs == 0);
  const Approximation* cols = Rule(l, "column-reduction-matmul");
  REQUIRE(cols != nullptr);
  // every reduction reads all 2·16·32 elements over the columns once
  CHECK(cols->count == 4);
  CHECK(cols->extra_macs == 4 * 2 * 16 * 32);
  const Approximation* rows = Rule(l, "row-reduction-matmul");
  REQUIRE(rows != nullptr);
  CHECK(rows->extra_macs == 2 * 16);  // the mean's second step, over the 16 rows of each item
  CHECK(Role(l, "reduction") == 4 + 2);
  CheckValid(l);
}

TEST_CASE("import user ops: a split that cuts a chunked projection gathers its outputs") {
  // y = x @ w [64, 96]; chunk(3) splits the projection; torch.split(y, [40, 56]) then cuts a block.
  OnnxModelBuilder m;
  m.Input("x", {1, 10, 64}).Output("a").Output("d").Output("e").Weight("w", {64, 96});
  m.Node("proj", "MatMul", {"x", "w"}, {"y"});
  SetInt(m.Node("chunk", "Split", {"y"}, {"a", "b", "c"}), "axis", -1);
  m.Ints("sizes", {2}, {40, 56});
  SetInt(m.Node("split", "Split", {"y", "sizes"}, {"d", "e"}), "axis", -1);
  const LoweredModel l = Lower(m, "split.onnx");
  CHECK(l.summary.macs == 10 * 64 * 96);
  CHECK(testing::ComputeMatMulMacs(l) == l.summary.macs);
  const Approximation* layout = Rule(l, "layout");
  REQUIRE(layout != nullptr);
  CHECK(layout->elements == 10 * 40 + 10 * 56);
  CheckValid(l);
}

TEST_CASE("import user ops: top-k, cumsum and a computed Where condition") {
  OnnxModelBuilder m;
  m.Input("x", {1, 16, 32}).Output("v").Output("c").Output("w");
  m.Ints("k", {1}, {4}).Ints("axis", {}, {1}).Floats("half", {}, {0.5f});
  m.Node("relu", "Relu", {"x"}, {"y"});
  SetInt(m.Node("topk", "TopK", {"y", "k"}, {"v", "i"}), "axis", -1);
  m.Node("cumsum", "CumSum", {"y", "axis"}, {"c"});
  m.Node("neg", "Neg", {"x"}, {"n"});
  m.Node("gt", "Greater", {"y", "n"}, {"cond"});
  m.Node("where", "Where", {"cond", "y", "half"}, {"w"});
  const LoweredModel l = Lower(m, "select.onnx");
  const Approximation* topk = Rule(l, "top-k");
  REQUIRE(topk != nullptr);
  CHECK_FALSE(topk->traffic);
  CHECK(topk->elements == 16 * 32);
  REQUIRE(Rule(l, "scan") != nullptr);
  CHECK(Rule(l, "scan")->elements == 16 * 32);
  // The Where reads the comparison it selects by.
  int where_inputs = 0;
  for (size_t o = 0; o < l.problem.ops.size(); ++o)
    if (l.op_origins[o].nodes == std::vector<std::string>{"where"}) where_inputs = int(l.problem.ops[o].inputs.size());
  CHECK(where_inputs == 2);
  // The top-k selection (values and indices are one tensor): 16 rows of 4.
  bool found = false;
  for (size_t t = 0; t < l.problem.tensors.size(); ++t)
    if (l.tensor_origins[t].value == "v" || l.tensor_origins[t].value == "i")
      found = l.problem.tensors[t].height == 16 && l.problem.tensors[t].width == 4;
  CHECK(found);
  CheckValid(l);
}

TEST_CASE("import user ops: 1-D and 3-D resizes, and a split shape constant") {
  OnnxModelBuilder m;
  m.Input("a", {1, 8, 40}).Input("b", {1, 4, 4, 8, 8}).Output("ya").Output("yb").Output("z");
  m.Floats("s1", {3}, {1, 1, 2}).Floats("s3", {5}, {1, 1, 2, 2, 2});
  m.Node("ra", "Relu", {"a"}, {"a1"});
  m.Node("rb", "Relu", {"b"}, {"b1"});
  SetText(m.Node("up1", "Resize", {"a1", "", "s1"}, {"ya"}), "mode", "linear");
  SetText(m.Node("up3", "Resize", {"b1", "", "s3"}, {"yb"}), "mode", "linear");
  // repeat_interleave's shape arithmetic: a shape vector split and joined again.
  m.Ints("shape", {4}, {1, 8, 5, 8}).Ints("halves", {2}, {2, 2});
  SetInt(m.Node("cut", "Split", {"shape", "halves"}, {"s0", "s1b"}), "axis", 0);
  SetInt(m.Node("join", "Concat", {"s0", "s1b"}, {"target"}), "axis", 0);
  m.Node("view", "Reshape", {"a1", "target"}, {"z"});
  const LoweredModel l = Lower(m, "resize.onnx");
  bool a_ok = false, b_ok = false;
  for (size_t t = 0; t < l.problem.tensors.size(); ++t) {
    const Tensor& x = l.problem.tensors[t];
    if (l.tensor_origins[t].value == "ya") a_ok = x.height == 80 && x.width == 8;
    if (l.tensor_origins[t].value == "yb") b_ok = x.height == 8 * 16 * 16 && x.width == 4;
  }
  CHECK(a_ok);
  CHECK(b_ok);
  CheckValid(l);
}

TEST_CASE("import user ops: a layer norm over the last two axes runs in place") {
  OnnxModelBuilder m(17);
  m.Input("x", {2, 16, 32}).Output("y").Weight("g", {16, 32}).Weight("b", {16, 32});
  m.Node("relu", "Relu", {"x"}, {"r"});
  SetInt(m.Node("ln", "LayerNormalization", {"r", "g", "b"}, {"y"}), "axis", -2);
  const LoweredModel l = Lower(m, "ln2d.onnx");
  CHECK(l.summary.layout_ops == 0);
  const Approximation* rule = Rule(l, "layer-norm-axes");
  REQUIRE(rule != nullptr);
  CHECK_FALSE(rule->traffic);
  CHECK(rule->elements == 2 * 16 * 32);
  CHECK(l.summary.pointwise_ops == 2);
  CheckValid(l);
}

TEST_CASE("import user ops: opset 18's spellings (axes inputs, num_outputs)") {
  OnnxModelBuilder m(18);
  m.Input("x", {1, 4, 10, 6}).Output("m").Output("s0").Output("s1").Output("s2").Output("p").Output("u");
  m.Ints("hw", {2}, {2, 3}).Ints("pads", {2}, {1, 1}).Ints("w_axis", {1}, {3}).Floats("twice", {1}, {2.0f});
  m.Node("relu", "Relu", {"x"}, {"r"});
  m.Node("mean", "ReduceMean", {"r", "hw"}, {"m"});
  SetInt(SetInt(m.Node("split", "Split", {"r"}, {"s0", "s1", "s2"}), "axis", 2), "num_outputs", 3);
  m.Node("pad", "Pad", {"r", "pads", "", "w_axis"}, {"p"});
  SetInts(m.Node("up", "Resize", {"r", "", "twice"}, {"u"}), "axes", {2});
  const LoweredModel l = Lower(m, "opset18.onnx");
  std::map<std::string, std::pair<Elements, Elements>> shape;
  for (size_t t = 0; t < l.problem.tensors.size(); ++t)
    shape[l.tensor_origins[t].value] = {l.problem.tensors[t].height, l.problem.tensors[t].width};
  CHECK(shape["m"] == std::pair<Elements, Elements>{1, 4});      // global mean pooling
  CHECK(shape["s0"] == std::pair<Elements, Elements>{4 * 6, 4});  // 10 rows split 4, 4, 2
  CHECK(shape["s2"] == std::pair<Elements, Elements>{2 * 6, 4});
  CHECK(shape["p"] == std::pair<Elements, Elements>{10 * 8, 4});  // W padded by 1 on each side
  CHECK(shape["u"] == std::pair<Elements, Elements>{20 * 6, 4});  // H doubled
  CheckValid(l);
}

// GroupNormalization (opset 18: scale and bias per group; 21: per channel), as newer exporters
// write nn.GroupNorm: in place, as the InstanceNormalization of torch 1.13's reshape.
TEST_CASE("import user ops: GroupNormalization at opsets 18 and 21 runs in place") {
  for (const int64_t opset : {18, 21}) {
    CAPTURE(opset);
    OnnxModelBuilder m(opset);
    const int64_t affine = opset < 21 ? 4 : 8;
    m.Input("x", {1, 8, 4, 4}).Output("y").Weight("s", {affine}).Weight("b", {affine});
    m.Node("relu", "Relu", {"x"}, {"r"});
    SetInt(m.Node("gn", "GroupNormalization", {"r", "s", "b"}, {"y"}), "num_groups", 4);
    const LoweredModel l = Lower(m, "gn.onnx");
    CHECK(l.summary.layout_ops == 0);
    CHECK(l.summary.pointwise_ops == 2);
    const Approximation* rule = Rule(l, "group-norm");
    REQUIRE(rule != nullptr);
    CHECK_FALSE(rule->traffic);
    CHECK(rule->elements == 8 * 4 * 4);
    CheckValid(l);
  }
  OnnxModelBuilder m(18);
  m.Input("x", {1, 8, 4, 4}).Output("y").Weight("s", {3}).Weight("b", {3});
  SetInt(m.Node("gn", "GroupNormalization", {"x", "s", "b"}, {"y"}), "num_groups", 3);
  CHECK(ImportError(m, "gn3.onnx") == "gn3.onnx: node 'gn' (GroupNormalization): num_groups 3 does not divide the 8 channels");
}

// torch 1.13 writes squeeze(dim) of a dim it does not know as If(shape[dim] == 1, Squeeze,
// Identity) (F.local_response_norm): a condition known at import time lowers the taken branch in
// place; the branch reads the outer values by name.
TEST_CASE("import user ops: If on a condition known at import time, Trilu of an activation") {
  for (const int64_t channels : {4, 3}) {
    CAPTURE(channels);
    OnnxModelBuilder m;
    m.Input("x", {1, 4, 8, 8}).Weight("w", {4, 4, 1, 1}).Ints("one", {}, {1}).Ints("c", {}, {channels}).Output("y");
    m.Node("conv", "Conv", {"x", "w"}, {"v"});
    m.Node("shape", "Shape", {"v"}, {"s"});
    SetInt(m.Node("dim", "Gather", {"s", "one"}, {"d"}), "axis", 0);
    m.Node("eq", "Equal", {"d", "c"}, {"cond"});
    onnx::NodeProto& n = m.Node("if", "If", {"cond"}, {"y"});
    SetBranch(n, "then_branch", "Relu", {"v"}, "t");
    SetBranch(n, "else_branch", "Sigmoid", {"v"}, "e");
    const LoweredModel l = Lower(m, "if.onnx");
    CHECK(l.summary.onnx_ops.count("Relu") == (channels == 4 ? 1u : 0u));
    CHECK(l.summary.onnx_ops.count("Sigmoid") == (channels == 4 ? 0u : 1u));
    CHECK(Role(l, "conv") == 1);
    CHECK(Role(l, "elementwise") == 1);
    // x, w, the conv's output and y: the branch's output is the If's
    REQUIRE(l.problem.tensors.size() == 4);
    CHECK(l.tensor_origins.back().value == "y");
    CheckValid(l);
  }
  OnnxModelBuilder m;
  m.Input("x", {1, 16, 16}).Output("y");
  m.Node("relu", "Relu", {"x"}, {"r"});
  m.Node("triu", "Trilu", {"r"}, {"y"});
  m.model.mutable_opset_import(0)->set_version(17);
  const LoweredModel l = Lower(m, "trilu.onnx");
  CHECK(Role(l, "elementwise") == 2);
  CheckValid(l);
}

// A conditional generator's F.one_hot(labels) @ W: the labels (a graph input) broadcast along
// the 10 classes, one compare pass, then the MatMul (4 x 10 x 8 MACs).
TEST_CASE("import user ops: OneHot of a label input") {
  OnnxModelBuilder m;
  m.Input("labels", {4}, onnx::TensorProto::INT64).Ints("depth", {}, {10}).Floats("values", {2}, {0, 1}).Weight("w", {10, 8}).Output("y");
  m.Node("onehot", "OneHot", {"labels", "depth", "values"}, {"h"});
  m.Node("mm", "MatMul", {"h", "w"}, {"y"});
  const LoweredModel l = Lower(m, "onehot.onnx");
  CHECK(l.summary.macs == 4 * 10 * 8);
  CHECK(Role(l, "elementwise") == 1);
  CHECK(Role(l, "layout") == 1);
  CheckValid(l);
}

// A Loop of a known trip count is unrolled: the carried value goes through the body three times
// (three Relu ops, each reading the one before), the scan output stacks the three results.
TEST_CASE("import user ops: a Loop with a carried value and a scan output") {
  OnnxModelBuilder m;
  m.Input("x", {2, 8}).Ints("n", {}, {3}).Ints("c", {}, {1}).Output("final").Output("stacked");
  onnx::NodeProto& loop = m.Node("loop", "Loop", {"n", "c", "x"}, {"final", "stacked"});
  SetBranch(loop, "body", "Relu", {"carried"}, "next");
  onnx::GraphProto* g = loop.mutable_attribute(0)->mutable_g();
  for (const char* in : {"step", "cond_in", "carried"}) g->add_input()->set_name(in);
  g->clear_output();
  for (const char* out : {"cond_in", "next", "next"}) g->add_output()->set_name(out);
  const LoweredModel l = Lower(m, "loop.onnx");
  CHECK(l.summary.onnx_ops.at("Relu") == 3);
  CHECK(Role(l, "elementwise") == 3);
  std::map<std::string, std::pair<Elements, Elements>> shape;
  for (size_t t = 0; t < l.problem.tensors.size(); ++t)
    shape[l.tensor_origins[t].value] = {l.problem.tensors[t].height, l.problem.tensors[t].width};
  CHECK(shape["stacked"] == std::pair<Elements, Elements>{3 * 2, 8});
  CheckValid(l);
}

TEST_CASE("import user ops: errors stay one line naming the node") {
  {
    // An If on a value the model computes is control flow.
    OnnxModelBuilder m;
    m.Input("x", {2, 8}).Input("c", {1}, onnx::TensorProto::BOOL).Output("y");
    onnx::NodeProto& n = m.Node("if", "If", {"c"}, {"y"});
    SetBranch(n, "then_branch", "Relu", {"x"}, "t");
    SetBranch(n, "else_branch", "Identity", {"x"}, "e");
    CHECK(ImportError(m, "m.onnx") ==
          "m.onnx: node 'if' (If): data-dependent shapes (detection post-processing, control flow) cannot be scheduled ahead of "
          "time; export the network without them (the backbone and the heads' raw outputs; see docs/model-import.md)");
  }
  {
    // A branch reading a value nothing makes names the If.
    OnnxModelBuilder m;
    m.Input("x", {2, 8}).Ints("c", {}, {1}).Output("y");
    onnx::NodeProto& n = m.Node("if", "If", {"c"}, {"y"});
    SetBranch(n, "then_branch", "Relu", {"ghost"}, "t");
    SetBranch(n, "else_branch", "Identity", {"x"}, "e");
    CHECK(ImportError(m, "m.onnx") ==
          "m.onnx: node 'if' (If): input 'ghost' is not produced by any node, nor an initializer or a graph input");
  }
  {
    // A Loop's body reads its own inputs (iteration count, condition): they are not outer
    // values; a trip count the model computes is the data-dependent error.
    OnnxModelBuilder m;
    m.Input("x", {2, 8}).Input("n", {1}, onnx::TensorProto::INT64).Ints("c", {}, {1}).Output("y");
    onnx::NodeProto& loop = m.Node("loop", "Loop", {"n", "c", "x"}, {"y"});
    onnx::NodeProto& body = SetBranch(loop, "body", "Add", {"carried", "step"}, "next");
    onnx::GraphProto* g = loop.mutable_attribute(0)->mutable_g();
    for (const char* in : {"step", "cond_in", "carried"}) g->add_input()->set_name(in);
    g->clear_output();
    for (const char* out : {"cond_in", "next"}) g->add_output()->set_name(out);
    body.set_name("body_add");
    CHECK(ImportError(m, "m.onnx") ==
          "m.onnx: node 'loop' (Loop): data-dependent shapes (detection post-processing, control flow) cannot be scheduled ahead "
          "of time; export the network without them (the backbone and the heads' raw outputs; see docs/model-import.md)");
  }
  {
    // Unrolling has a budget: 4,096 iterations of a 17-node body pass 65,536 nodes.
    OnnxModelBuilder m;
    m.Input("x", {2, 8}).Ints("n", {}, {4096}).Ints("c", {}, {1}).Output("y");
    onnx::NodeProto& loop = m.Node("loop", "Loop", {"n", "c", "x"}, {"y"});
    SetBranch(loop, "body", "Identity", {"carried"}, "v0");
    onnx::GraphProto* g = loop.mutable_attribute(0)->mutable_g();
    for (int i = 1; i < 17; ++i) {
      // (built by appends: GCC 12 flags "v" + std::to_string(i) with a false -Wrestrict)
      std::string in = "v", out = "v";
      in += std::to_string(i - 1);
      out += std::to_string(i);
      onnx::NodeProto* n = g->add_node();
      n->set_op_type("Identity");
      n->add_input(in);
      n->add_output(out);
    }
    for (const char* in : {"step", "cond_in", "carried"}) g->add_input()->set_name(in);
    g->clear_output();
    for (const char* out : {"cond_in", "v16"}) g->add_output()->set_name(out);
    CHECK(ImportError(m, "m.onnx") == "m.onnx: node 'loop' (Loop): the loops unroll into more than 65536 nodes");
  }
  {
    // A branch's attributes are checked as the graph's are (shape inference walks into it).
    OnnxModelBuilder m;
    m.Input("x", {1, 4, 8, 8}).Weight("w", {4, 4, 3, 3}).Ints("c", {}, {1}).Output("y");
    onnx::NodeProto& n = m.Node("if", "If", {"c"}, {"y"});
    SetInts(SetBranch(n, "then_branch", "Conv", {"x", "w"}, "t"), "strides", {0, 1});
    SetBranch(n, "else_branch", "Identity", {"x"}, "e");
    CHECK(ImportError(m, "m.onnx") == "m.onnx: node 'then_branch_Conv' (Conv): attribute strides must be in 1..1048576");
  }
  {
    OnnxModelBuilder m;
    m.Input("x", {5, 1, 8}).Weight("w", {1, 16, 8}).Weight("r", {1, 16, 16}).Output("y");
    onnx::NodeProto& rnn = m.Node("rnn", "RNN", {"x", "w", "r"}, {"y"});
    SetInt(rnn, "hidden_size", 16);
    onnx::AttributeProto* a = rnn.add_attribute();
    a->set_name("activations");
    a->set_type(onnx::AttributeProto::STRINGS);
    a->add_strings("Affine");
    CHECK(ImportError(m, "m.onnx") == "m.onnx: node 'rnn' (RNN): activation 'Affine' is not supported (Tanh, Relu, Sigmoid)");
  }
  {
    OnnxModelBuilder m;
    m.Input("a", {2, 3, 4, 5}).Input("b", {4, 5, 6}).Output("y");
    m.Node("mm", "MatMul", {"a", "b"}, {"y"});
    CHECK(ImportError(m, "m.onnx") == "m.onnx: node 'mm' (MatMul): the batch axes of [2,3,4,5] and [4,5,6] do not broadcast");
  }
  {
    OnnxModelBuilder m;
    m.Input("x", {1, 4, 8}).Output("v").Ints("k", {1}, {9});
    m.Node("relu", "Relu", {"x"}, {"y"});
    m.Node("topk", "TopK", {"y", "k"}, {"v", "i"});
    CHECK(ImportError(m, "m.onnx") == "m.onnx: node 'topk' (TopK): k must be one value in 1..8, got [9]");
  }
}

// The transformer ops ONNX 23 defines as functions (torch's dynamo exporter writes SDPA as
// Attention and nn.RMSNorm as RMSNormalization at opset 23). Attention, grouped-query, causal,
// 3-D: the heads split from the projections, Q and K scaled (a Mul per head), Q·Kᵀ per query head
// reading its group's Kᵀ (one transposed copy per key head), the causal mask folded into a Sum,
// the softmax, P·V; the same problem as the 4-D form with the exporter's reshapes.
TEST_CASE("import user ops: Attention (opset 23) as its function body, grouped heads, causal") {
  auto model = [](bool three_d) {
    OnnxModelBuilder m(23);
    m.Input("x", {1, 16, 64}).Output("y").Weight("wq", {64, 64}).Weight("wk", {64, 32}).Weight("wv", {64, 32});
    m.Node("qp", "MatMul", {"x", "wq"}, {"q"});
    m.Node("kp", "MatMul", {"x", "wk"}, {"k"});
    m.Node("vp", "MatMul", {"x", "wv"}, {"v"});
    if (three_d) {
      onnx::NodeProto& n = m.Node("attn", "Attention", {"q", "k", "v"}, {"y"});
      SetInt(SetInt(SetInt(n, "q_num_heads", 4), "kv_num_heads", 2), "is_causal", 1);
      return m;
    }
    m.Ints("sq", {4}, {1, 16, 4, 16}).Ints("skv", {4}, {1, 16, 2, 16}).Ints("so", {3}, {1, 16, 64});
    m.Node("rq", "Reshape", {"q", "sq"}, {"q4"});
    m.Node("rk", "Reshape", {"k", "skv"}, {"k4"});
    m.Node("rv", "Reshape", {"v", "skv"}, {"v4"});
    SetInts(m.Node("tq", "Transpose", {"q4"}, {"q5"}), "perm", {0, 2, 1, 3});
    SetInts(m.Node("tk", "Transpose", {"k4"}, {"k5"}), "perm", {0, 2, 1, 3});
    SetInts(m.Node("tv", "Transpose", {"v4"}, {"v5"}), "perm", {0, 2, 1, 3});
    SetInt(m.Node("attn", "Attention", {"q5", "k5", "v5"}, {"a4"}), "is_causal", 1);
    SetInts(m.Node("ta", "Transpose", {"a4"}, {"a5"}), "perm", {0, 2, 1, 3});
    m.Node("ra", "Reshape", {"a5", "so"}, {"y"});
    return m;
  };
  const LoweredModel l = Lower(model(true), "attention.onnx");
  CHECK(l.summary.onnx_ops.at("Attention") == 1);
  CHECK(l.summary.macs == 16 * 64 * 64 + 2 * 16 * 64 * 32 + 2 * 4 * 16 * 16 * 16);
  CHECK(testing::ComputeMatMulMacs(l) == l.summary.macs);
  // Q·Kᵀ of query heads 0, 1 read key head 0's transposed copy, heads 2, 3 key head 1's.
  std::vector<TensorId> keys;
  for (size_t o = 0; o < l.problem.ops.size(); ++o)
    if (l.op_origins[o].nodes[0] == "attn" && l.problem.ops[o].kind == OpKind::MatMul && keys.size() < 4)
      keys.push_back(l.problem.ops[o].inputs[1]);
  REQUIRE(keys.size() == 4);
  CHECK(keys[0] == keys[1]);
  CHECK(keys[2] == keys[3]);
  CHECK(keys[1] != keys[2]);
  CHECK(l.tensor_origins[keys[0]].value == "attn~k_scaled[0]");
  CHECK(Role(l, "matmul") == 4 + 2 + 2 + 4 + 4);  // projections split by heads, then Q·Kᵀ and P·V per query head
  CHECK(Role(l, "elementwise") == 4 + 2 + 4);     // √scale on Q and K heads, the masked scores
  CHECK(Role(l, "normalisation") == 4);
  CHECK(Role(l, "layout") == 2);                  // Kᵀ per key head; y is the heads' column blocks
  CHECK(l.tensor_origins.back().value == "y[3]");
  const Approximation* mask = Rule(l, "broadcast-constant");
  REQUIRE(mask != nullptr);
  CHECK(mask->elements == -16 * 16);
  CheckValid(l);

  const LoweredModel l4 = Lower(model(false), "attention4.onnx");
  CHECK(l4.summary.macs == l.summary.macs);
  CHECK(l4.summary.problem_ops == l.summary.problem_ops);
  CHECK(l4.problem.tensors.size() == l.problem.tensors.size());
  CHECK(l4.summary.vector_element_passes == l.summary.vector_element_passes);

  OnnxModelBuilder old = model(true);
  old.model.mutable_opset_import(0)->set_version(22);
  CHECK(ImportError(old, "old.onnx") ==
        "old.onnx: node 'attn' (Attention): operator not supported at opset 22 (the importer lowers it at opsets 23 and "
        "later); convert the model to another opset");
}

// Attention with a key/value cache (past_key, past_value concatenated in front: present_key and
// present_value are outputs), a soft cap (Div, Tanh, Mul per head), a computed mask broadcast over
// the heads and the probabilities as qk_matmul_output (mode 3).
TEST_CASE("import user ops: Attention with a cache, a soft cap, a computed mask and its scores") {
  OnnxModelBuilder m(24);
  m.Input("q", {1, 2, 4, 16}).Input("k", {1, 2, 4, 16}).Input("v", {1, 2, 4, 8});
  m.Input("pk", {1, 2, 6, 16}).Input("pv", {1, 2, 6, 8}).Input("mask", {1, 1, 4, 10});
  m.Output("y").Output("present_k").Output("present_v").Output("probs");
  onnx::NodeProto& n = m.Node("attn", "Attention", {"q", "k", "v", "mask", "pk", "pv"}, {"y", "present_k", "present_v", "probs"});
  SetInt(SetFloat(n, "softcap", 30.0f), "qk_matmul_output_mode", 3);
  const LoweredModel l = Lower(m, "cache.onnx");
  CHECK(l.summary.macs == 2 * (4 * 16 * 10 + 4 * 10 * 8));
  const auto mms = ComputeMatMuls(l);
  REQUIRE(mms.size() == 4);
  CHECK(mms[0] == std::array<Elements, 3>{4, 16, 10});
  CHECK(mms[2] == std::array<Elements, 3>{4, 10, 8});
  CHECK(Role(l, "elementwise") == 2 * (2 + 3 + 1));  // √scale on Q and K; the soft cap; the mask's Sum
  CHECK(Role(l, "normalisation") == 2);
  std::map<std::string, std::pair<Elements, Elements>> shape;
  for (size_t t = 0; t < l.problem.tensors.size(); ++t)
    shape[l.tensor_origins[t].value] = {l.problem.tensors[t].height, l.problem.tensors[t].width};
  CHECK(shape["present_k[0]"] == std::pair<Elements, Elements>{10, 16});
  CHECK(shape["present_v[1]"] == std::pair<Elements, Elements>{10, 8});
  CHECK(shape["probs[1]"] == std::pair<Elements, Elements>{4, 10});
  CheckValid(l);
}

// Opset 24's key/value cache updated outside Attention: TensorScatter writes the new key and
// value rows into fixed-size caches (graph inputs, a tensor per head) at the batch's write
// index, one Layout op per head; Attention reads the caches with nonpad_kv_seqlen, a padding mask
// of positions (folded).
TEST_CASE("import user ops: TensorScatter's cache update feeds Attention (opset 24)") {
  OnnxModelBuilder m(24);
  m.Input("q", {1, 4, 1, 16}).Input("k", {1, 2, 1, 16}).Input("v", {1, 2, 1, 16});
  m.Input("kcache", {1, 2, 8, 16}).Input("vcache", {1, 2, 8, 16}).Input("lens", {1}, onnx::TensorProto::INT64);
  m.Output("y").Output("kpres").Output("vpres");
  m.Node("kup", "TensorScatter", {"kcache", "k", "lens"}, {"kpres"});
  m.Node("vup", "TensorScatter", {"vcache", "v", "lens"}, {"vpres"});
  m.Node("attn", "Attention", {"q", "kpres", "vpres", "", "", "", "lens"}, {"y"});
  const LoweredModel l = Lower(m, "decode.onnx");
  CHECK(l.summary.macs == 4 * (16 * 8 + 8 * 16));
  std::map<std::string, std::pair<Elements, Elements>> shape;
  for (size_t t = 0; t < l.problem.tensors.size(); ++t)
    shape[l.tensor_origins[t].value] = {l.problem.tensors[t].height, l.problem.tensors[t].width};
  CHECK(shape["kcache[1]"] == std::pair<Elements, Elements>{8, 16});
  CHECK(shape["kpres[1]"] == std::pair<Elements, Elements>{8, 16});
  CHECK(Role(l, "layout") == 2 + 2 + 2);  // the caches' heads updated; Kᵀ per key head
  const Approximation* mask = Rule(l, "broadcast-constant");
  REQUIRE(mask != nullptr);
  CHECK(mask->elements == -8);  // the padding mask of the 8 cache positions
  CheckValid(l);

  OnnxModelBuilder bad(24);
  bad.Input("c", {1, 2, 8, 16}).Input("u", {1, 2, 9, 16}).Output("y");
  bad.Node("up", "TensorScatter", {"c", "u"}, {"y"});
  CHECK(ImportError(bad, "bad.onnx") ==
        "bad.onnx: node 'up' (TensorScatter): the update [1,2,9,16] must be the cache [1,2,8,16] but for a sequence axis no longer");
}

TEST_CASE("import user ops: Attention's and RotaryEmbedding's errors name the node") {
  auto attention = [](std::initializer_list<std::string> inputs, std::vector<int64_t> kd, int64_t heads) {
    OnnxModelBuilder m(23);
    m.Input("q", {1, 8, 32}).Input("k", kd).Input("v", {1, 8, 32}).Input("pk", {1, 2, 3, 16}).Output("y");
    m.Floats("mask", {8, 9}, {});
    onnx::NodeProto& n = m.Node("attn", "Attention", inputs, {"y"});
    if (heads > 0) SetInt(SetInt(n, "q_num_heads", heads), "kv_num_heads", heads);
    return m;
  };
  CHECK(ImportError(attention({"q", "k", "v"}, {1, 8, 32}, 0), "a.onnx") ==
        "a.onnx: node 'attn' (Attention): 3-D Q, K and V need the q_num_heads and kv_num_heads attributes");
  CHECK(ImportError(attention({"q", "k", "v"}, {1, 8, 32}, 3), "a.onnx") ==
        "a.onnx: node 'attn' (Attention): the hidden sizes of Q, K and V (32, 32, 32) must divide by q_num_heads 3 and "
        "kv_num_heads 3");
  CHECK(ImportError(attention({"q", "k", "v"}, {1, 2, 8, 16}, 2), "a.onnx") ==
        "a.onnx: node 'attn' (Attention): Q, K and V must all be 3-D (batch, sequence, hidden) or all 4-D (batch, heads, "
        "sequence, head size), got [1,8,32], [1,2,8,16] and [1,8,32]");
  CHECK(ImportError(attention({"q", "k", "v"}, {1, 0, 32}, 2), "a.onnx") ==
        "a.onnx: node 'attn' (Attention): K [1,0,32] must not be empty");
  CHECK(ImportError(attention({"q", "k", "v", "", "pk"}, {1, 8, 32}, 2), "a.onnx") ==
        "a.onnx: node 'attn' (Attention): past_key and past_value go together: give both or neither");
  CHECK(ImportError(attention({"q", "k", "v", "mask"}, {1, 8, 32}, 2), "a.onnx") ==
        "a.onnx: node 'attn' (Attention): attn_mask [8,9] does not broadcast to (batch, q heads, q sequence, keys) [1,2,8,8]");

  auto rotary = [](std::vector<int64_t> cache, int64_t heads, int64_t dim) {
    OnnxModelBuilder m(23);
    m.Input("x", {1, 8, 32}).Output("y").Weight("cos", cache).Weight("sin", cache).Ints("pos", {1, 8}, {0, 1, 2, 3, 4, 5, 6, 7});
    onnx::NodeProto& n = m.Node("rope", "RotaryEmbedding", {"x", "cos", "sin", "pos"}, {"y"});
    if (heads > 0) SetInt(n, "num_heads", heads);
    if (dim > 0) SetInt(n, "rotary_embedding_dim", dim);
    return m;
  };
  CHECK(ImportError(rotary({16, 8}, 0, 0), "r.onnx") ==
        "r.onnx: node 'rope' (RotaryEmbedding): a 3-D input (batch, sequence, hidden) needs the num_heads attribute");
  CHECK(ImportError(rotary({16, 8}, 2, 7), "r.onnx") ==
        "r.onnx: node 'rope' (RotaryEmbedding): rotary_embedding_dim 7 must be even and at most the head size 16");
  CHECK(ImportError(rotary({16, 4}, 2, 0), "r.onnx") ==
        "r.onnx: node 'rope' (RotaryEmbedding): cos_cache [16,4] must be (positions, 8): rotary_embedding_dim / 2 values "
        "per position");
}

// RMSNormalization: the layer normalisation's passes without its mean, centring and shift (5);
// RotaryEmbedding: 3 passes over the rotated columns in place, a partial rotation's share of
// them; caches known at import folded, computed ones gathered at the input's size.
TEST_CASE("import user ops: RMSNormalization and RotaryEmbedding (opset 23) run in place") {
  OnnxModelBuilder m(23);
  m.Input("x", {1, 8, 32}).Output("y").Weight("g", {32}).Weight("cos", {16, 4}).Weight("sin", {16, 4});
  m.Ints("pos", {1, 8}, {0, 1, 2, 3, 4, 5, 6, 7});
  m.Node("norm", "RMSNormalization", {"x", "g"}, {"n"});
  SetInt(SetInt(m.Node("rope", "RotaryEmbedding", {"n", "cos", "sin", "pos"}, {"y"}), "num_heads", 2), "rotary_embedding_dim", 8);
  const LoweredModel l = Lower(m, "rope.onnx");
  CHECK(l.problem.ops.size() == 2);
  CHECK(l.summary.layout_ops == 0);
  CHECK(l.summary.vector_element_passes == 5 * 256 + 256 * 3 / 2);  // 3 passes over 8 of each head's 16 columns
  const Approximation* rotary = Rule(l, "rotary");
  REQUIRE(rotary != nullptr);
  CHECK_FALSE(rotary->traffic);
  CHECK(rotary->elements == 256);
  const Approximation* rows = Rule(l, "broadcast-constant");
  REQUIRE(rows != nullptr);
  CHECK(rows->elements == -2 * 8 * 4);  // the cos and sin rows of the 8 positions
  CheckValid(l);

  // Caches computed by the model (from its position input), 4-D heads: gathered at the input's size.
  OnnxModelBuilder c(23);
  c.Input("x", {1, 2, 8, 16}).Input("cos", {1, 8, 8}).Input("sin", {1, 8, 8}).Output("y");
  c.Node("rope", "RotaryEmbedding", {"x", "cos", "sin"}, {"y"});
  const LoweredModel lc = Lower(c, "rope_computed.onnx");
  CHECK(lc.summary.layout_ops == 2);
  CHECK(lc.summary.vector_element_passes == 3 * 256);
  CheckValid(lc);
}

// What torch writes for `>=`, `<=`, torch.isinf, torch.atan, torch.tan, F.softsign (opset 12+):
// one Pointwise op each at its passes; on values known at import, folded (here the condition of
// an If, whose branch tells the folded value).
TEST_CASE("import user ops: comparisons, IsInf, trigonometric functions and Softsign") {
  OnnxModelBuilder m(17);
  m.Input("x", {1, 8, 32}).Floats("c", {}, {0.1f}).Output("y");
  m.Node("ge", "GreaterOrEqual", {"x", "c"}, {"a"});
  m.Node("le", "LessOrEqual", {"x", "c"}, {"b"});
  m.Node("or", "Xor", {"a", "b"}, {"keep"});
  m.Node("inf", "IsInf", {"x"}, {"i"});
  m.Node("where", "Where", {"i", "c", "x"}, {"w"});
  m.Node("atan", "Atan", {"w"}, {"t"});
  m.Node("soft", "Softsign", {"t"}, {"u"});
  m.Node("mul", "Mul", {"u", "keep"}, {"y"});
  const LoweredModel l = Lower(m, "compare.onnx");
  CHECK(Role(l, "elementwise") == 8);
  CHECK(l.summary.vector_element_passes == 256 * (1 + 1 + 1 + 1 + 1 + 4 + 2 + 1));
  CheckValid(l);

  for (const int64_t channels : {4, 5}) {
    CAPTURE(channels);
    OnnxModelBuilder f(17);
    f.Input("x", {1, 4, 8, 8}).Weight("w", {4, 4, 1, 1}).Ints("one", {}, {1}).Ints("four", {}, {4}).Output("y");
    f.Node("conv", "Conv", {"x", "w"}, {"v"});
    f.Node("shape", "Shape", {"v"}, {"s"});
    SetInt(f.Node("dim", "Gather", {"s", "one"}, {"d"}), "axis", 0);
    f.Ints("c", {}, {channels});
    f.Node("ge", "GreaterOrEqual", {"d", "c"}, {"ge_c"});
    f.Node("le", "LessOrEqual", {"d", "four"}, {"le_4"});
    f.Node("both", "And", {"ge_c", "le_4"}, {"cond"});
    onnx::NodeProto& n = f.Node("if", "If", {"cond"}, {"y"});
    SetBranch(n, "then_branch", "Relu", {"v"}, "t");
    SetBranch(n, "else_branch", "Sigmoid", {"v"}, "e");
    const LoweredModel lf = Lower(f, "fold.onnx");
    CHECK(lf.summary.onnx_ops.count("Relu") == (channels == 4 ? 1u : 0u));  // 4 >= 4 and 4 <= 4; not 4 >= 5
    CheckValid(lf);
  }
}

// torch 1.13's slice assignment into a tensor (`c[:, 4:8] = h`, a static cache) is a ScatterND
// into an activation, Tensor.scatter_add a ScatterElements with reduction add: the data with
// the updates over it, one Layout op at the data's size reading both (and a pass for the add).
TEST_CASE("import user ops: ScatterND and ScatterElements into activations") {
  OnnxModelBuilder m(16);
  m.Input("x", {1, 4, 32}).Input("cache", {1, 16, 32}).Weight("w", {32, 32}).Output("c").Output("s");
  m.Ints("idx", {1, 4, 2}, {0, 4, 0, 5, 0, 6, 0, 7}).Ints("cols", {1, 4, 32}, std::vector<int64_t>(128, 3));
  m.Node("lin", "MatMul", {"x", "w"}, {"h"});
  m.Node("put", "ScatterND", {"cache", "idx", "h"}, {"c"});
  SetText(m.Node("add", "ScatterElements", {"x", "cols", "h"}, {"s"}), "reduction", "add");
  const LoweredModel l = Lower(m, "scatter.onnx");
  std::map<std::string, size_t> made;
  for (size_t o = 0; o < l.problem.ops.size(); ++o) made[l.tensor_origins[l.problem.ops[o].output].value] = o;
  REQUIRE(made.count("c") == 1);
  const Op& put = l.problem.ops[made["c"]];
  CHECK(put.kind == OpKind::Layout);
  REQUIRE(put.inputs.size() == 2);
  CHECK(l.tensor_origins[put.inputs[0]].value == "cache");
  CHECK(l.tensor_origins[put.inputs[1]].value == "h");
  CHECK(l.problem.tensors[put.output].height == 16);
  REQUIRE(made.count("s") == 1);
  const Op& add = l.problem.ops[made["s"]];
  CHECK(add.kind == OpKind::Pointwise);
  CHECK(l.problem.ops[l.problem.producer[add.inputs[1]]].kind == OpKind::Layout);  // h gathered at x's size
  CHECK(l.summary.layout_ops == 2);
  CheckValid(l);

  OnnxModelBuilder k(16);  // every operand known at import: a constant of the data's dims
  k.Input("x", {1, 4, 32}).Output("y").Floats("z", {1, 4}, {0, 0, 0, 0}).Ints("i", {1, 1}, {2}).Floats("u", {1, 1}, {1});
  SetInt(k.Node("onehot", "ScatterElements", {"z", "i", "u"}, {"m"}), "axis", 1);
  k.Ints("shape", {3}, {1, 4, 1});
  k.Node("r", "Reshape", {"m", "shape"}, {"m3"});
  k.Node("mul", "Mul", {"x", "m3"}, {"y"});
  const LoweredModel lk = Lower(k, "scatter_const.onnx");
  CHECK(lk.summary.layout_ops == 0);
  CHECK(lk.problem.ops.size() == 1);
}

TEST_CASE("import user ops: a graph output known at import is stated, not written") {
  // A training-mode BatchNormalization (opset 15) whose running mean is a graph output, and a
  // Dropout whose mask is one: both are constants of the problem (the statistics and the draw are
  // priced in their ops' passes), so neither is a problem output; their 8 + 128 elements are said.
  OnnxModelBuilder m(15);
  m.Input("x", {1, 8, 4, 4}).Output("y").Output("rm").Output("mask");
  m.Weight("s", {8}).Weight("b", {8}).Weight("mean", {8}).Weight("var", {8});
  m.Floats("ratio", {}, {0.1f});
  SetInt(m.Node("bn", "BatchNormalization", {"x", "s", "b", "mean", "var"}, {"t", "rm", "rv"}), "training_mode", 1);
  m.Node("drop", "Dropout", {"t", "ratio"}, {"y", "mask"});
  const LoweredModel lowered = Lower(m, "m.onnx");
  const Approximation* a = Rule(lowered, "constant-output");
  REQUIRE(a != nullptr);
  CHECK(a->count == 2);
  CHECK(a->elements == -(8 + 128));
  CHECK(a->traffic);
  CHECK(lowered.problem.ops.size() == 1);  // the BatchNormalization's 8 passes; Dropout without training_mode: free
  CheckValid(lowered);
}

}  // namespace
}  // namespace annealer
