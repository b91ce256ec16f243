#include "src/io/problem_writer.h"

#include <cstdint>
#include <vector>

#include "src/io/json_fields.h"

namespace annealer {

std::string ProblemToJson(const Problem& problem) {
  std::vector<int64_t> widths, heights;
  for (const Tensor& t : problem.tensors) {
    widths.push_back(t.width);
    heights.push_back(t.height);
  }
  std::string out = "{\n  \"widths\": ";
  AppendIntegers(out, widths);
  out += ",\n  \"heights\": ";
  AppendIntegers(out, heights);
  out += ",\n  \"inputs\": [";
  for (size_t i = 0; i < problem.ops.size(); ++i) {
    if (i > 0) out += ", ";
    AppendIntegers(out, std::vector<int64_t>(problem.ops[i].inputs.begin(), problem.ops[i].inputs.end()));
  }
  out += "],\n  \"outputs\": [";
  for (size_t i = 0; i < problem.ops.size(); ++i) {
    if (i > 0) out += ", ";
    AppendIntegers(out, {problem.ops[i].output});
  }
  out += "],\n  \"base_costs\": [";
  for (size_t i = 0; i < problem.ops.size(); ++i) {
    if (i > 0) out += ", ";
    out += FormatNumber(problem.ops[i].base_cost);
  }
  out += "],\n  \"op_types\": [";
  for (size_t i = 0; i < problem.ops.size(); ++i) {
    if (i > 0) out += ", ";
    const OpKind kind = problem.ops[i].kind;
    out += kind == OpKind::MatMul ? "\"MatMul\"" : kind == OpKind::Layout ? "\"Layout\"" : "\"Pointwise\"";
  }
  out += "],\n  \"fast_memory_capacity\": " + std::to_string(problem.fast_memory_capacity);
  out += ",\n  \"slow_memory_bandwidth\": " + FormatNumber(problem.slow_memory_bandwidth);
  out += ",\n  \"native_granularity\": ";
  AppendIntegers(out, {problem.native, problem.native});
  out += "\n}\n";
  return out;
}

}  // namespace annealer
