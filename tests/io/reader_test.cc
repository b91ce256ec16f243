// The problem reader: every field error is one line naming the file, the field and the index.
#include <doctest/doctest.h>

#include "tests/support/test_files.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "src/io/contest/problem_reader.h"
#include "src/io/contest/problem_writer.h"

namespace annealer {
namespace {

// A small valid problem, field by field, so that each test breaks exactly one field.
// Tensors 0..4 are 128x128: MatMul t0 @ t1 -> t2, Pointwise (t2, t3) -> t4.
struct ProblemText {
  std::optional<std::string> widths = "[128, 128, 128, 128, 128]";
  std::optional<std::string> heights = "[128, 128, 128, 128, 128]";
  std::optional<std::string> inputs = "[[0, 1], [2, 3]]";
  std::optional<std::string> outputs = "[[2], [4]]";
  std::optional<std::string> base_costs = "[2000, 100]";
  std::optional<std::string> op_types = R"(["MatMul", "Pointwise"])";
  std::optional<std::string> fast_memory_capacity = "60000";
  std::optional<std::string> slow_memory_bandwidth = "10";
  std::optional<std::string> native_granularity = "[128, 128]";

  std::string Json() const {
    std::string out = "{";
    auto add = [&](const char* key, const std::optional<std::string>& value) {
      if (!value) return;
      if (out.size() > 1) out += ", ";
      out += std::string("\"") + key + "\": " + *value;
    };
    add("widths", widths);
    add("heights", heights);
    add("inputs", inputs);
    add("outputs", outputs);
    add("base_costs", base_costs);
    add("op_types", op_types);
    add("fast_memory_capacity", fast_memory_capacity);
    add("slow_memory_bandwidth", slow_memory_bandwidth);
    add("native_granularity", native_granularity);
    return out + "}";
  }
};

std::string ErrorOf(std::string_view json) {
  try {
    ParseProblem(json, "p.json");
  } catch (const InputError& error) {
    return error.what();
  }
  return "(no error)";
}
std::string ErrorOf(const ProblemText& text) { return ErrorOf(text.Json()); }

std::string ErrorOfFile(const std::string& path) {
  try {
    ReadProblemFile(path);
  } catch (const InputError& error) {
    return error.what();
  }
  return "(no error)";
}

TEST_CASE("problem reader: a valid problem is read field by field") {
  const Problem problem = ParseProblem(ProblemText{}.Json(), "p.json");
  REQUIRE(problem.tensors.size() == 5);
  REQUIRE(problem.ops.size() == 2);
  CHECK(problem.tensors[3] == Tensor{128, 128});
  CHECK(problem.ops[0] == Op{OpKind::MatMul, {0, 1}, 2, 2000});
  CHECK(problem.ops[1] == Op{OpKind::Pointwise, {2, 3}, 4, 100});
  CHECK(problem.fast_memory_capacity == 60000);
  CHECK(problem.slow_memory_bandwidth == 10);
  CHECK(problem.native == 128);
  CHECK(problem.producer == std::vector<OpId>{kNoOp, kNoOp, 0, kNoOp, 1});
  CHECK(problem.topological_order == std::vector<OpId>{0, 1});
}

TEST_CASE("problem reader: integral floats and fractional bandwidth are accepted") {
  ProblemText text;
  text.widths = "[128.0, 128, 128, 128, 128]";
  text.slow_memory_bandwidth = "12.5";
  const Problem problem = ParseProblem(text.Json(), "p.json");
  CHECK(problem.tensors[0].width == 128);
  CHECK(problem.slow_memory_bandwidth == 12.5);
}

TEST_CASE("problem reader: each missing field is named") {
  for (const char* key : {"widths", "heights", "inputs", "outputs", "base_costs", "op_types",
                          "fast_memory_capacity", "slow_memory_bandwidth", "native_granularity"}) {
    CAPTURE(key);
    std::string json = ProblemText{}.Json();
    const std::string quoted = std::string("\"") + key + "\"";
    json.replace(json.find(quoted), quoted.size(), "\"renamed\"");
    CHECK(ErrorOf(json) == std::string("p.json: ") + key + ": required field is missing");
  }
}

TEST_CASE("problem reader: a null field counts as missing with its own message") {
  ProblemText text;
  text.op_types = "null";
  CHECK(ErrorOf(text) == "p.json: op_types: expected a value, got null");
}

TEST_CASE("problem reader: wrong types name the field and the index") {
  ProblemText text;
  text.widths = "\"wide\"";
  CHECK(ErrorOf(text) == "p.json: widths: expected an array, got the string \"wide\"");
  text = {};
  text.widths = "[128, 128, 1.5, 128, 128]";
  CHECK(ErrorOf(text) == "p.json: widths[2]: expected an integer, got 1.5");
  text = {};
  text.heights = "[128, true, 128, 128, 128]";
  CHECK(ErrorOf(text) == "p.json: heights[1]: expected an integer, got true");
  text = {};
  text.inputs = "[[0, 1], 3]";
  CHECK(ErrorOf(text) == "p.json: inputs[1]: expected an array, got 3");
  text = {};
  text.inputs = R"([[0, "1"], [2, 3]])";
  CHECK(ErrorOf(text) == "p.json: inputs[0][1]: expected an integer, got the string \"1\"");
  text = {};
  text.op_types = R"(["MatMul", 5])";
  CHECK(ErrorOf(text) == "p.json: op_types[1]: expected a string, got 5");
  text = {};
  text.base_costs = R"([2000, "cheap"])";
  CHECK(ErrorOf(text) == "p.json: base_costs[1]: expected a number, got the string \"cheap\"");
  text = {};
  text.native_granularity = "128";
  CHECK(ErrorOf(text) == "p.json: native_granularity: expected an array, got 128");
}

TEST_CASE("problem reader: tensor sizes must be positive integers of sane size") {
  ProblemText text;
  text.heights = "[128, 0, 128, 128, 128]";
  CHECK(ErrorOf(text) == "p.json: heights[1]: a height must be a positive integer, got 0");
  text = {};
  text.widths = "[128, 128, 128, -128, 128]";
  CHECK(ErrorOf(text) == "p.json: widths[3]: a width must be a positive integer, got -128");
  text = {};
  text.widths = "[128, 128, 128, 128, 4294967296]";
  CHECK(ErrorOf(text) == "p.json: widths[4]: a width 4294967296 is too large (at most 1048576)");
  text = {};
  text.widths = "[128, 128, 128, 128, 18446744073709551615]";
  CHECK(ErrorOf(text) == "p.json: widths[4]: integer 18446744073709551615 is too large");
}

TEST_CASE("problem reader: parallel lists must agree in length") {
  ProblemText text;
  text.heights = "[128, 128, 128, 128]";
  CHECK(ErrorOf(text) == "p.json: heights: has 4 entries but widths has 5");
  text = {};
  text.outputs = "[[2]]";
  CHECK(ErrorOf(text) == "p.json: outputs: has 1 entries but inputs has 2");
  text = {};
  text.base_costs = "[1, 2, 3]";
  CHECK(ErrorOf(text) == "p.json: base_costs: has 3 entries but inputs has 2");
  text = {};
  text.op_types = R"(["MatMul"])";
  CHECK(ErrorOf(text) == "p.json: op_types: has 1 entries but inputs has 2");
}

TEST_CASE("problem reader: empty tensor and op lists are rejected") {
  ProblemText text;
  text.widths = "[]";
  text.heights = "[]";
  CHECK(ErrorOf(text) == "p.json: widths: the problem has no tensors");
  text = {};
  text.inputs = text.outputs = text.base_costs = text.op_types = "[]";
  CHECK(ErrorOf(text) == "p.json: inputs: the problem has no ops");
}

TEST_CASE("problem reader: tensor ids must be in range") {
  ProblemText text;
  text.inputs = "[[0, 1], [2, 57]]";
  CHECK(ErrorOf(text) == "p.json: inputs[1][1]: tensor id 57 is out of range (5 tensors)");
  text = {};
  text.inputs = "[[-1, 1], [2, 3]]";
  CHECK(ErrorOf(text) == "p.json: inputs[0][0]: tensor id -1 is out of range (5 tensors)");
  text = {};
  text.outputs = "[[2], [5]]";
  CHECK(ErrorOf(text) == "p.json: outputs[1][0]: tensor id 5 is out of range (5 tensors)");
}

TEST_CASE("problem reader: exactly one output per op, one producer per tensor") {
  ProblemText text;
  text.outputs = "[[2, 3], [4]]";
  CHECK(ErrorOf(text) == "p.json: outputs[0]: an op must have exactly one output, got 2");
  text = {};
  text.outputs = "[[2], []]";
  CHECK(ErrorOf(text) == "p.json: outputs[1]: an op must have exactly one output, got 0");
  text = {};
  text.inputs = "[[0, 1], [3]]";
  text.outputs = "[[2], [2]]";
  CHECK(ErrorOf(text) == "p.json: outputs[1][0]: tensor 2 is already produced by op 0");
}

TEST_CASE("problem reader: an op may not use a tensor twice or read its own output") {
  ProblemText text;
  text.inputs = "[[0, 1], [2, 2]]";
  CHECK(ErrorOf(text) == "p.json: inputs[1][1]: op 1 uses tensor 2 twice (also at index 0)");
  text = {};
  text.inputs = "[[0, 1], [4, 3]]";
  CHECK(ErrorOf(text) == "p.json: outputs[1][0]: op 1 both reads and writes tensor 4");
}

TEST_CASE("problem reader: op types are MatMul, Pointwise or Layout") {
  ProblemText text;
  text.op_types = R"(["MatMul", "Conv2D"])";
  CHECK(ErrorOf(text) ==
        "p.json: op_types[1]: unknown op type the string \"Conv2D\" (expected \"MatMul\", "
        "\"Pointwise\" or \"Layout\")");
}

TEST_CASE("problem reader: a Layout op has inputs of any shape and costs nothing (spec L3)") {
  // op 1 transposes-and-slices t2 (128x128) into t4 (64x256): any shapes are accepted.
  ProblemText text;
  text.widths = "[128, 128, 128, 128, 256]";
  text.heights = "[128, 128, 128, 128, 64]";
  text.inputs = "[[0, 1], [2]]";
  text.base_costs = "[2000, 0]";
  text.op_types = R"(["MatMul", "Layout"])";
  const Problem problem = ParseProblem(text.Json(), "p.json");
  CHECK(problem.ops[1] == Op{OpKind::Layout, {2}, 4, 0});
  CHECK(problem.IsLayout(1));
  CHECK_FALSE(problem.IsLayout(0));
  // Written back as "Layout", read again to the same problem.
  CHECK(ProblemToJson(problem).find(R"("op_types": ["MatMul", "Layout"])") != std::string::npos);
  CHECK(ParseProblem(ProblemToJson(problem), "q.json") == problem);

  ProblemText bad = text;
  bad.base_costs = "[2000, 7]";
  CHECK(ErrorOf(bad) == "p.json: base_costs[1]: a Layout op costs no compute; its base cost must be 0");
  bad = text;
  bad.inputs = "[[0, 1], []]";
  CHECK(ErrorOf(bad) == "p.json: inputs[1]: a Layout op needs at least one input");
  // Several inputs gathered into one output (a concatenation of rows, blocks merged).
  ProblemText two = text;
  two.inputs = "[[0, 1], [2, 3]]";
  CHECK(ParseProblem(two.Json(), "p.json").ops[1] == Op{OpKind::Layout, {2, 3}, 4, 0});
}

TEST_CASE("problem reader: a string with line breaks or control bytes is quoted on one line") {
  // The message must stay one line: the string is echoed with escapes, cut at 40 bytes.
  ProblemText text;
  text.op_types = R"(["MatMul", "Mat\nMul\t\"x\"\u0001\\"])";
  CHECK(ErrorOf(text) ==
        "p.json: op_types[1]: unknown op type the string \"Mat\\nMul\\t\\\"x\\\"\\x01\\\\\" (expected "
        "\"MatMul\", \"Pointwise\" or \"Layout\")");
  text = {};
  text.widths = R"("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\nb")";
  CHECK(ErrorOf(text) ==
        "p.json: widths: expected an array, got the string \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\\n...\"");
}

TEST_CASE("problem reader: MatMul shape rules") {
  ProblemText text;
  text.inputs = "[[0, 1, 3], [2, 3]]";
  CHECK(ErrorOf(text) == "p.json: inputs[0]: a MatMul takes exactly 2 inputs [LHS, RHS], got 3");
  text = {};
  text.widths = "[256, 128, 128, 128, 128]";  // LHS 128x256 against RHS 128x128
  CHECK(ErrorOf(text) ==
        "p.json: inputs[0]: MatMul shapes do not chain: LHS tensor 0 is 128x256 (rows x cols), "
        "RHS tensor 1 is 128x128 (rows x cols) (the LHS width must equal the RHS height)");
  text = {};
  text.heights = "[256, 128, 128, 128, 128]";  // LHS 256x128, so the output must be 256x128
  CHECK(ErrorOf(text) ==
        "p.json: outputs[0][0]: MatMul output tensor 2 is 128x128 (rows x cols), expected "
        "256x128 (LHS rows x RHS cols)");
}

TEST_CASE("problem reader: Pointwise shape rules") {
  ProblemText text;
  text.inputs = "[[0, 1], []]";
  CHECK(ErrorOf(text) == "p.json: inputs[1]: a Pointwise op needs at least one input");
  text = {};
  text.widths = "[128, 128, 128, 256, 128]";
  CHECK(ErrorOf(text) ==
        "p.json: inputs[1][1]: Pointwise input tensor 3 is 128x256 (rows x cols) but its output "
        "tensor 4 is 128x128 (rows x cols) (all shapes must be identical)");
}

TEST_CASE("problem reader: base costs are finite and not negative") {
  ProblemText text;
  text.base_costs = "[2000, -1]";
  CHECK(ErrorOf(text) == "p.json: base_costs[1]: a base cost must not be negative, got -1");
}

TEST_CASE("problem reader: the graph must be acyclic") {
  ProblemText text;  // op 0: t0 -> t1, op 1: t1 -> t0
  text.widths = text.heights = "[128, 128]";
  text.inputs = "[[0], [1]]";
  text.outputs = "[[1], [0]]";
  text.op_types = R"(["Pointwise", "Pointwise"])";
  CHECK(ErrorOf(text) == "p.json: inputs/outputs: the graph has a cycle through op 0");
}

TEST_CASE("Problem::Finalize: shapes are checked for problems built in code too") {
  // The reader names the file's fields first; Finalize guards sub-problems, imports and tests'
  // generators, and still fills the derived fields.
  Problem p;
  p.tensors = {Tensor{128, 64}, Tensor{32, 128}, Tensor{32, 64}, Tensor{32, 64}};
  p.ops = {Op{OpKind::MatMul, {0, 1}, 2, 100}, Op{OpKind::Pointwise, {2}, 3, 10}};
  p.fast_memory_capacity = 100000;
  p.slow_memory_bandwidth = 10;
  CHECK(p.Finalize() == "");
  p.tensors[1].width = 33;  // RHS 128x33: the output is no longer 64x32
  CHECK(p.Finalize() == "MatMul op 0: 64x128 @ 128x33 does not make its output 64x32");
  CHECK(p.topological_order == std::vector<OpId>{0, 1});
  p.tensors[1].width = 32;
  p.tensors[3].height = 65;
  CHECK(p.Finalize() == "Pointwise op 1: input 64x32 differs from its output 65x32");
}

TEST_CASE("problem reader: hardware numbers") {
  ProblemText text;
  text.fast_memory_capacity = "0";
  CHECK(ErrorOf(text) == "p.json: fast_memory_capacity: must be a positive integer, got 0");
  text.fast_memory_capacity = "5000.5";
  CHECK(ErrorOf(text) == "p.json: fast_memory_capacity: expected an integer, got 5000.5");
  text = {};
  text.slow_memory_bandwidth = "0";
  CHECK(ErrorOf(text) == "p.json: slow_memory_bandwidth: must be a positive number, got 0");
  text.slow_memory_bandwidth = "-2.5";
  CHECK(ErrorOf(text) == "p.json: slow_memory_bandwidth: must be a positive number, got -2.5");
  text.slow_memory_bandwidth = "\"fast\"";
  CHECK(ErrorOf(text) ==
        "p.json: slow_memory_bandwidth: expected a number, got the string \"fast\"");
}

TEST_CASE("problem reader: native granularity is two equal positive integers") {
  ProblemText text;
  text.native_granularity = "[128, 64]";
  CHECK(ErrorOf(text) ==
        "p.json: native_granularity: [128, 64] is not square; the cost model uses one native "
        "size for w, h and k (spec A.1.4)");
  text.native_granularity = "[128, 128, 128]";
  CHECK(ErrorOf(text) == "p.json: native_granularity: expected 2 entries [w, h], got 3");
  text.native_granularity = "[0, 0]";
  CHECK(ErrorOf(text) == "p.json: native_granularity[0]: must be a positive integer, got 0");
  text.native_granularity = "[64, 64]";
  CHECK(ParseProblem(text.Json(), "p.json").native == 64);
}

TEST_CASE("problem reader: malformed and empty JSON, wrong top level") {
  CHECK(ErrorOf(R"({"widths": [128,)").rfind("p.json: malformed JSON: ", 0) == 0);
  CHECK(ErrorOf("{\"widths\": [1] \"heights\": [1]}").rfind("p.json: malformed JSON: ", 0) == 0);
  CHECK(ErrorOf("") == "p.json: the input is empty");
  CHECK(ErrorOf(" \n\t ") == "p.json: the input is empty");
  CHECK(ErrorOf("[1, 2]") == "p.json: top level: expected an object, got an array");
}

TEST_CASE("problem reader: missing, empty and unreadable files") {
  const std::filesystem::path dir = testing::ScratchDir("reader-test", "files");
  const std::string missing = (dir / "missing.json").string();
  CHECK(ErrorOfFile(missing) == missing + ": cannot open file: No such file or directory");
  const std::string empty = (dir / "empty.json").string();
  std::ofstream(empty).close();
  CHECK(ErrorOfFile(empty) == empty + ": the file is empty");
  CHECK(ErrorOfFile(dir.string()) == dir.string() + ": cannot read file: Is a directory");
  const std::string bad = (dir / "bad.json").string();
  std::ofstream(bad) << R"({"widths": [128], "heights": [128], "inputs": [[7]]})";
  CHECK(ErrorOfFile(bad) == bad + ": outputs: required field is missing");
  std::filesystem::remove_all(dir);
}

TEST_CASE("problem reader: embedded problems are extracted by key") {
  const std::string text = R"({"name": "x", "problem": )" + ProblemText{}.Json() + R"(, "n": 1})";
  const Problem problem = ParseProblem(ExtractJsonMember(text, "problem", "case.json"), "case.json");
  CHECK(problem.ops.size() == 2);
  try {
    ExtractJsonMember(text, "solution", "case.json");
    FAIL("no error");
  } catch (const InputError& error) {
    CHECK(std::string(error.what()) == "case.json: solution: required field is missing");
  }
  try {
    ExtractJsonMember(text, "n", "case.json");
    FAIL("no error");
  } catch (const InputError& error) {
    CHECK(std::string(error.what()) == "case.json: n: expected an object, got 1");
  }
}

struct BundledProblem {
  const char* file;
  size_t ops;
  size_t tensors;
  Elements capacity;
  double bandwidth;
};

TEST_CASE("problem reader: the bundled problems load (counts from problems/README.md)") {
  const BundledProblem bundled[] = {
      {"mlsys-2026-1.json", 5, 9, 60000, 20},      {"mlsys-2026-5.json", 19, 29, 30000, 15},
      {"mlsys-2026-9.json", 32, 49, 250000, 25},   {"mlsys-2026-13.json", 63, 100, 600000, 50},
      {"mlsys-2026-17.json", 103, 160, 500000, 100}, {"example_problem.json", 2, 3, 20000, 10},
  };
  for (const BundledProblem& expected : bundled) {
    CAPTURE(expected.file);
    const Problem problem =
        ReadProblemFile(std::string(ANNEALER_SOURCE_DIR) + "/problems/" + expected.file);
    CHECK(problem.ops.size() == expected.ops);
    CHECK(problem.tensors.size() == expected.tensors);
    CHECK(problem.fast_memory_capacity == expected.capacity);
    CHECK(problem.slow_memory_bandwidth == expected.bandwidth);
    CHECK(problem.native == 128);
    CHECK(problem.topological_order.size() == expected.ops);
  }
}

}  // namespace
}  // namespace annealer
