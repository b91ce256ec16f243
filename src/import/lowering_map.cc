#include "src/import/lowering_map.h"

#include <limits>
#include <sstream>

#include "src/io/json_fields.h"
#include "src/io/text_format.h"

namespace annealer {

namespace {

const char* KindName(OpKind kind) {
  return kind == OpKind::MatMul ? "MatMul" : kind == OpKind::Layout ? "Layout" : "Pointwise";
}

void AppendStrings(std::ostringstream& out, const std::vector<std::string>& items) {
  out << "[";
  for (size_t i = 0; i < items.size(); ++i) out << (i ? ", " : "") << JsonString(items[i]);
  out << "]";
}

std::vector<std::string> ReadStrings(const JsonField& list) {
  std::vector<std::string> out;
  for (const JsonField& item : list.Items()) out.emplace_back(item.String());
  return out;
}

// The entry's own index field ("op": 3 in ops[3]) must be its position.
void RequireIndex(const JsonField& entry, const char* key, size_t index) {
  const JsonField field = entry.Member(key);
  const int64_t value = field.Integer(0, std::numeric_limits<int32_t>::max());
  if (value != static_cast<int64_t>(index)) {
    field.Fail("expected " + std::to_string(index) + " (entries are in " + key + " order), got " +
               std::to_string(value));
  }
}

void RequireCount(const JsonField& list, size_t actual, size_t expected, const char* what) {
  if (actual != expected) {
    list.Fail("has " + std::to_string(actual) + " entries but the problem has " +
              std::to_string(expected) + " " + what + " (the map of another problem?)");
  }
}

}  // namespace

std::string LoweringMapJson(const LoweredModel& model) {
  std::ostringstream out;
  out << "{\n  \"ops\": [\n";
  for (size_t o = 0; o < model.op_origins.size(); ++o) {
    const OpOrigin& origin = model.op_origins[o];
    out << "    {\"op\": " << o << ", \"kind\": \"" << KindName(model.problem.ops[o].kind)
        << "\", \"role\": " << JsonString(origin.role) << ", \"nodes\": ";
    AppendStrings(out, origin.nodes);
    out << ", \"op_types\": ";
    AppendStrings(out, origin.op_types);
    out << "}" << (o + 1 < model.op_origins.size() ? "," : "") << "\n";
  }
  out << "  ],\n  \"tensors\": [\n";
  for (size_t t = 0; t < model.tensor_origins.size(); ++t) {
    out << "    {\"tensor\": " << t << ", \"value\": " << JsonString(model.tensor_origins[t].value)
        << ", \"role\": " << JsonString(model.tensor_origins[t].role) << "}"
        << (t + 1 < model.tensor_origins.size() ? "," : "") << "\n";
  }
  out << "  ]\n}\n";
  return out.str();
}

LoweringMap ParseLoweringMap(std::string_view json, const std::string& origin,
                             const Problem& problem) {
  simdjson::dom::parser parser;
  const JsonField root(ParseJsonDocument(parser, json, origin), origin, "");
  root.RequireObject();
  LoweringMap map;

  const JsonField ops_field = root.Member("ops");
  const std::vector<JsonField> ops = ops_field.Items();
  RequireCount(ops_field, ops.size(), problem.ops.size(), "ops");
  for (size_t o = 0; o < ops.size(); ++o) {
    const JsonField& entry = ops[o];
    entry.RequireObject();
    RequireIndex(entry, "op", o);
    if (const std::optional<JsonField> kind = entry.OptionalMember("kind")) {
      const char* expected = KindName(problem.ops[o].kind);
      if (kind->String() != expected) {
        kind->Fail(std::string("expected \"") + expected + "\" (the problem's op " +
                   std::to_string(o) + "), got " + kind->Describe() + " (the map of another problem?)");
      }
    }
    OpOrigin op;
    op.role = std::string(entry.Member("role").String());
    op.nodes = ReadStrings(entry.Member("nodes"));
    op.op_types = ReadStrings(entry.Member("op_types"));
    map.op_origins.push_back(std::move(op));
  }

  const JsonField tensors_field = root.Member("tensors");
  const std::vector<JsonField> tensors = tensors_field.Items();
  RequireCount(tensors_field, tensors.size(), problem.tensors.size(), "tensors");
  for (size_t t = 0; t < tensors.size(); ++t) {
    const JsonField& entry = tensors[t];
    entry.RequireObject();
    RequireIndex(entry, "tensor", t);
    TensorOrigin tensor;
    tensor.value = std::string(entry.Member("value").String());
    tensor.role = std::string(entry.Member("role").String());
    map.tensor_origins.push_back(std::move(tensor));
  }
  return map;
}

LoweringMap ReadLoweringMapFile(const std::string& path, const Problem& problem) {
  return ParseLoweringMap(ReadTextFile(path), path, problem);
}

std::string DefaultMapPath(const std::string& problem_path) {
  const size_t dot = problem_path.rfind(".json");
  const bool json = dot != std::string::npos && dot + 5 == problem_path.size();
  return (json ? problem_path.substr(0, dot) : problem_path) + ".map.json";
}

}  // namespace annealer
