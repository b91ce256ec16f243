// ONNX names in the report and the trace: labels from an imported model, the map file that
// carries them beside a problem JSON, and the report without labels left as it was.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <simdjson.h>

#include "search/starts/baseline.h"
#include "src/io/json_fields.h"
#include "src/import/lowering_map.h"
#include "src/import/model_source.h"
#include "src/io/contest/problem_reader.h"
#include "src/report/report_html.h"
#include "src/report/report_labels.h"
#include "src/report/schedule_summary.h"
#include "src/io/text_format.h"
#include "src/report/trace_json.h"

namespace annealer {
namespace {

LoadedProblem Mlp() {
  ProblemSource source;
  source.path = std::string(ANNEALER_SOURCE_DIR) + "/tests/models/mlp.onnx";
  source.hardware = "tpu-v5e";
  return LoadProblem(source);
}

std::string Html(const Problem& problem, const Schedule& schedule, const ScheduleSummary& summary,
                 const ReportLabels* labels) {
  ReportInput input{problem, schedule, summary, "p.json", "s.json", nullptr, ""};
  input.labels = labels;
  return ReportHtml(input);
}

// The message of the InputError that `parse` throws; empty if it throws none.
template <typename F>
std::string ErrorOf(F parse) {
  try {
    parse();
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST_CASE("labels: a report of an imported model names its ops and tensors") {
  const LoadedProblem loaded = Mlp();
  REQUIRE(loaded.model);
  const Problem& problem = loaded.problem;
  const Schedule schedule = BuildBaseline(problem);
  const ScheduleSummary summary = SummarizeSchedule(problem, schedule);
  REQUIRE(summary.valid());
  const ReportLabels labels =
      LabelsOfOrigins(loaded.model->op_origins, loaded.model->tensor_origins);
  REQUIRE(labels.ops.size() == problem.ops.size());
  REQUIRE(labels.tensors.size() == problem.tensors.size());

  const std::string html = Html(problem, schedule, summary, &labels);
  const std::string plain = Html(problem, schedule, summary, nullptr);
  CHECK(html != plain);
  for (OpId op = 0; op < static_cast<OpId>(problem.ops.size()); ++op) {
    CAPTURE(op);
    const OpOrigin& origin = loaded.model->op_origins[op];
    REQUIRE(!origin.nodes.empty());
    const std::string text = LabelText(labels.ops[op]);
    CHECK(text.rfind(origin.nodes.front(), 0) == 0);
    CHECK(text.find(origin.op_types.front()) != std::string::npos);
    CHECK(text.find(origin.role) != std::string::npos);
    // The DAG tooltip names the op; the table lists it.
    CHECK(html.find("<title>op " + std::to_string(op) + " (") != std::string::npos);
    CHECK(html.find(HtmlEscape(LabelText(labels.ops[op]))) != std::string::npos);
    CHECK(html.find(HtmlEscape(RunText({op, op, &labels.ops[op]}))) != std::string::npos);
  }
  const Op& first = problem.ops[0];
  CHECK(html.find("output tensor " + std::to_string(first.output) + " (") != std::string::npos);
  CHECK(html.find(HtmlEscape(LabelText(labels.tensors[first.output]))) != std::string::npos);
  // The same page otherwise: one node per op, one row per subgraph.
  auto count = [](const std::string& text, const std::string& needle) {
    size_t n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
  };
  CHECK(count(html, "<g class=\"op\"") == problem.ops.size());
  CHECK(count(html, "<tr class=\"sg") == summary.subgraphs.size());

  // The trace names subgraph events after their ops and lists the labels in args.
  TraceOptions options;
  options.labels = &labels;
  const std::string trace = TraceJson(problem, summary, "mlp", options);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  REQUIRE(!parser.parse(trace).get(root));
  int named = 0;
  for (simdjson::dom::element event : root["traceEvents"].get_array()) {
    std::string_view category;
    if (event["cat"].get(category) || category != "subgraph") continue;
    const std::string name(event["name"].get_string().value());
    const int64_t index = event["args"]["subgraph"].get_int64().value();
    const OpId op = summary.subgraphs[index].subgraph->ops.front();
    CHECK(name.find("subgraph " + std::to_string(index) + ": " + std::to_string(op) + " ") == 0);
    CHECK(name.find(LabelText(labels.ops[op], kLabelNameChars)) != std::string::npos);
    CHECK(event["args"]["op_labels"].get_array().size() == summary.subgraphs[index].subgraph->ops.size());
    ++named;
  }
  CHECK(named == static_cast<int>(summary.subgraphs.size()));
}

TEST_CASE("labels: without labels (or with labels of another problem) the report is unchanged") {
  const Problem problem =
      ReadProblemFile(std::string(ANNEALER_SOURCE_DIR) + "/problems/mlsys-2026-5.json");
  const Schedule schedule = BuildBaseline(problem);
  const ScheduleSummary summary = SummarizeSchedule(problem, schedule);
  const std::string plain = Html(problem, schedule, summary, nullptr);
  ReportLabels other;
  other.ops.resize(problem.ops.size() + 1, {"x", "Conv, conv-tap"});
  other.tensors.resize(problem.tensors.size() + 1, {"t", "activation"});
  CHECK(Html(problem, schedule, summary, &other) == plain);
  CHECK(plain.find("<span title=") == std::string::npos);
  CHECK(plain.find("<title>op 0 (") != std::string::npos);
  CHECK(plain.find(">MM 0<") != std::string::npos);
  TraceOptions options;
  options.labels = &other;
  CHECK(TraceJson(problem, summary, "t", options) == TraceJson(problem, summary, "t"));
}

TEST_CASE("labels: text, cuts and runs") {
  const ItemLabel conv{"conv2d_3", "Conv, conv-tap"};
  CHECK(LabelText(conv) == "conv2d_3 (Conv, conv-tap)");
  CHECK(LabelText({"", "Add, elementwise"}) == "(Add, elementwise)");
  CHECK(LabelText({"v", ""}) == "v");
  const ItemLabel long_name{"/model/layer4/layer4.2/conv3/Conv_output_0", "Conv, conv-tap"};
  CHECK(LabelCut(long_name, 20));
  CHECK(!LabelCut(conv, 20));
  CHECK(LabelText(long_name, 20) == "\u2026conv3/Conv_output_0 (Conv, conv-tap)");
  // A cut never splits a UTF-8 sequence: 30 two-byte letters keep 9 whole ones.
  std::string greek;
  for (int i = 0; i < 30; ++i) greek += "\u03b1";
  CHECK(LabelText({greek, ""}, 10) == "\u2026" + greek.substr(0, 18));

  const std::vector<ItemLabel> labels = {conv, conv, conv, {"relu", "Relu, elementwise"}, conv};
  const std::vector<LabelledRun> runs = LabelledRuns({0, 1, 2, 3, 4, 9}, labels);
  REQUIRE(runs.size() == 4);
  CHECK(RunText(runs[0]) == "0\u20132 conv2d_3 (Conv, conv-tap)");
  CHECK(RunText(runs[1]) == "3 relu (Relu, elementwise)");
  CHECK(RunText(runs[3]) == "9");  // no label for an id out of range
  CHECK(RunsText({0, 1, 2, 3, 4}, labels) ==
        "0\u20132 conv2d_3 (Conv, conv-tap), 3 relu (Relu, elementwise), 4 conv2d_3 (Conv, conv-tap)");
  CHECK(RunsText({0, 1, 2, 3, 4}, labels, 2) ==
        "0\u20132 conv2d_3 (Conv, conv-tap), 3 relu (Relu, elementwise), \u2026 (+1 more)");

  OpOrigin fused{{"a", "b", "c"}, {"MatMul", "Add", "MatMul"}, "matmul"};
  const ReportLabels from = LabelsOfOrigins({fused}, {{"x", "activation"}});
  CHECK(LabelText(from.ops[0]) == "a +2 (MatMul/Add, matmul)");
  CHECK(LabelText(from.tensors[0]) == "x (activation)");
}

TEST_CASE("labels: the map file round-trips and a bad one is a one-line error") {
  const LoadedProblem loaded = Mlp();
  REQUIRE(loaded.model);
  const Problem& problem = loaded.problem;
  const std::string json = LoweringMapJson(*loaded.model);
  const LoweringMap map = ParseLoweringMap(json, "m.map.json", problem);
  REQUIRE(map.op_origins.size() == problem.ops.size());
  REQUIRE(map.tensor_origins.size() == problem.tensors.size());
  for (size_t o = 0; o < map.op_origins.size(); ++o) {
    CHECK(map.op_origins[o].nodes == loaded.model->op_origins[o].nodes);
    CHECK(map.op_origins[o].op_types == loaded.model->op_origins[o].op_types);
    CHECK(map.op_origins[o].role == loaded.model->op_origins[o].role);
  }
  for (size_t t = 0; t < map.tensor_origins.size(); ++t) {
    CHECK(map.tensor_origins[t].value == loaded.model->tensor_origins[t].value);
    CHECK(map.tensor_origins[t].role == loaded.model->tensor_origins[t].role);
  }

  // A two-op, three-tensor problem: op 0 MatMul, op 1 Pointwise.
  Problem small;
  small.tensors = {{64, 64}, {64, 64}, {64, 64}};
  small.ops = {{OpKind::MatMul, {0, 0}, 1, 10}, {OpKind::Pointwise, {1}, 2, 5}};
  const std::string ops =
      R"({"op": 0, "kind": "MatMul", "role": "matmul", "nodes": ["mm"], "op_types": ["MatMul"]},
         {"op": 1, "kind": "Pointwise", "role": "elementwise", "nodes": ["relu"], "op_types": ["Relu"]})";
  const std::string tensors =
      R"({"tensor": 0, "value": "x", "role": "model-input"}, {"tensor": 1, "value": "h", "role": "activation"},
         {"tensor": 2, "value": "y", "role": "activation"})";
  auto parse = [&](const std::string& text) {
    return ErrorOf([&] { ParseLoweringMap(text, "m.map.json", small); });
  };
  CHECK(parse("{\"ops\": [" + ops + "], \"tensors\": [" + tensors + "]}").empty());
  CHECK(parse("{\"ops\": [" + ops + "], \"tensors\": [" + tensors + "]") .rfind("m.map.json: malformed JSON", 0) == 0);
  CHECK(parse("[]") == "m.map.json: top level: expected an object, got an array");
  CHECK(parse("{\"tensors\": []}") == "m.map.json: ops: required field is missing");
  CHECK(parse("{\"ops\": [" + ops + ", " + ops + "], \"tensors\": [" + tensors + "]}") ==
        "m.map.json: ops: has 4 entries but the problem has 2 ops (the map of another problem?)");
  CHECK(parse("{\"ops\": [" + ops + "], \"tensors\": []}") ==
        "m.map.json: tensors: has 0 entries but the problem has 3 tensors (the map of another problem?)");
  std::string bad = ops;
  bad.replace(bad.find("\"op\": 1"), 7, "\"op\": 7");
  CHECK(parse("{\"ops\": [" + bad + "], \"tensors\": [" + tensors + "]}") ==
        "m.map.json: ops[1].op: expected 1 (entries are in op order), got 7");
  bad = ops;
  bad.replace(bad.find("[\"relu\"]"), 8, "[\"relu\", 3]");
  CHECK(parse("{\"ops\": [" + bad + "], \"tensors\": [" + tensors + "]}") ==
        "m.map.json: ops[1].nodes[1]: expected a string, got 3");
  bad = ops;
  bad.replace(bad.find("\"Pointwise\""), 11, "\"MatMul\"");
  CHECK(parse("{\"ops\": [" + bad + "], \"tensors\": [" + tensors + "]}").rfind(
            "m.map.json: ops[1].kind: expected \"Pointwise\" (the problem's op 1), got", 0) == 0);
  bad = tensors;
  bad.replace(bad.find("\"value\": \"h\", "), 13, "");
  CHECK(parse("{\"ops\": [" + ops + "], \"tensors\": [" + bad + "]}") ==
        "m.map.json: tensors[1].value: required field is missing");
  CHECK(ErrorOf([&] { ReadLoweringMapFile("/nonexistent/m.map.json", small); })
            .rfind("/nonexistent/m.map.json", 0) == 0);

  CHECK(DefaultMapPath("dir/p.json") == "dir/p.map.json");
  CHECK(DefaultMapPath("dir/p") == "dir/p.map.json");
}

}  // namespace
}  // namespace annealer
