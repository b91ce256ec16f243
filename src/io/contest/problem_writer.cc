#include "src/io/contest/problem_writer.h"

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
  // The chip's rules only when some rule is on: a contest problem is written as the contest's.
  const ChipRules& chip = problem.chip;
  if (chip.any()) {
    out += ",\n  \"chip_rules\": {\"staging_capacity\": " + std::to_string(chip.staging_capacity) +
           ", \"accumulator_capacity\": " + std::to_string(chip.accumulator_capacity) +
           ", \"vector_capacity\": " + std::to_string(chip.vector_capacity) + ", \"double_buffer\": [";
    std::string roles;
    if (chip.double_staging) roles += "\"staging\"";
    if (chip.double_accumulator) roles += std::string(roles.empty() ? "" : ", ") + "\"accumulator\"";
    if (chip.double_vector) roles += std::string(roles.empty() ? "" : ", ") + "\"vector\"";
    out += roles + "], \"tile_base\": ";
    AppendIntegers(out, {chip.base_w, chip.base_h, chip.base_k});
    out += ", \"accumulator_factor\": " + std::to_string(chip.accumulator_factor) +
           ", \"wide_writeback\": " + (chip.wide_writeback ? "true" : "false") +
           ", \"prefetch\": " + (chip.prefetch ? "true" : "false");
    if (chip.two_paths()) {  // H6, only when on: files with H1-H5 alone are written as before
      out += ", \"weight_bandwidth\": " + FormatNumber(chip.weight_bandwidth) +
             ", \"weight_fifo_capacity\": " + std::to_string(chip.weight_fifo_capacity);
    }
    out += "}";
  }
  out += "\n}\n";
  return out;
}

}  // namespace annealer
