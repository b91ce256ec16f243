#include "src/io/contest/problem_reader.h"
#include "src/io/message_text.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace annealer {

namespace {

std::string Shape(const Tensor& t) {
  return std::to_string(t.height) + "x" + std::to_string(t.width) + " (rows x cols)";
}

// Checks that a parallel list has as many entries as the one it must match.
void RequireLength(const JsonField& list, size_t actual, const std::string& other, size_t expected) {
  if (actual != expected) {
    list.Fail("has " + std::to_string(actual) + " entries but " + other + " has " +
              std::to_string(expected));
  }
}

TensorId ReadTensorId(const JsonField& field, size_t num_tensors) {
  const int64_t id = field.Integer();
  if (id < 0 || id >= static_cast<int64_t>(num_tensors)) {
    field.Fail("tensor id " + std::to_string(id) + " is out of range (" +
               std::to_string(num_tensors) + " tensors)");
  }
  return static_cast<TensorId>(id);
}

// The optional extension object of a chip's rules (eval/model/chip_rules.h): every key optional,
// an unknown key or a bad value one line naming it.
ChipRules ReadChipRules(const JsonField& object, Elements native, Elements capacity) {
  object.RequireObject();
  ChipRules rules;
  const simdjson::dom::object members = object.element().get_object().value_unsafe();
  for (const auto member : members) {
    const std::string_view key = member.key;
    static constexpr std::string_view kKnown[] = {"staging_capacity", "accumulator_capacity", "vector_capacity",
                                                  "double_buffer",    "tile_base",            "accumulator_factor",
                                                  "wide_writeback",   "prefetch",             "weight_bandwidth",
                                                  "weight_fifo_capacity"};
    if (std::find(std::begin(kKnown), std::end(kKnown), key) == std::end(kKnown)) {
      object.Fail("unknown key " + QuoteForMessage(key, 40) +
                  " (known: staging_capacity, accumulator_capacity, vector_capacity, double_buffer, "
                  "tile_base, accumulator_factor, wide_writeback, prefetch, weight_bandwidth, weight_fifo_capacity)");
    }
  }
  auto integer = [&](std::string_view key, int64_t& out) {
    if (const std::optional<JsonField> f = object.OptionalMember(key)) out = f->Integer();
  };
  auto boolean = [&](std::string_view key, bool& out) {
    if (const std::optional<JsonField> f = object.OptionalMember(key)) {
      if (!f->element().is_bool()) f->Fail("expected true or false, got " + f->Describe());
      out = bool(f->element());
    }
  };
  integer("staging_capacity", rules.staging_capacity);
  integer("accumulator_capacity", rules.accumulator_capacity);
  integer("vector_capacity", rules.vector_capacity);
  integer("accumulator_factor", rules.accumulator_factor);
  boolean("wide_writeback", rules.wide_writeback);
  boolean("prefetch", rules.prefetch);
  integer("weight_fifo_capacity", rules.weight_fifo_capacity);
  if (const std::optional<JsonField> f = object.OptionalMember("weight_bandwidth")) {
    rules.weight_bandwidth = f->FiniteNumber();
  }
  if (const std::optional<JsonField> f = object.OptionalMember("double_buffer")) {
    for (const JsonField& item : f->Items()) {
      const std::string_view role = item.String();
      if (role == "staging") {
        rules.double_staging = true;
      } else if (role == "accumulator") {
        rules.double_accumulator = true;
      } else if (role == "vector") {
        rules.double_vector = true;
      } else {
        item.Fail("unknown role " + item.Describe() + " (expected staging, accumulator or vector)");
      }
    }
  }
  if (const std::optional<JsonField> f = object.OptionalMember("tile_base")) {
    const std::vector<JsonField> sides = f->Items();
    if (sides.size() != 3) f->Fail("expected 3 entries [w, h, k], got " + std::to_string(sides.size()));
    rules.base_w = sides[0].Integer();
    rules.base_h = sides[1].Integer();
    rules.base_k = sides[2].Integer();
  }
  const std::string reason = CheckChipRules(rules, native, capacity);
  if (!reason.empty()) object.Fail(reason);
  return rules;
}

}  // namespace

Problem ParseProblem(std::string_view json, const std::string& origin) {
  simdjson::dom::parser parser;
  const JsonField root(ParseJsonDocument(parser, json, origin), origin, "");
  root.RequireObject();
  Problem problem;

  // Tensors.
  const JsonField widths_field = root.Member("widths");
  const JsonField heights_field = root.Member("heights");
  const std::vector<JsonField> widths = widths_field.Items();
  const std::vector<JsonField> heights = heights_field.Items();
  if (widths.empty()) widths_field.Fail("the problem has no tensors");
  RequireLength(heights_field, heights.size(), "widths", widths.size());
  problem.tensors.resize(widths.size());
  auto read_side = [](const JsonField& field, const char* what) {
    const int64_t side = field.Integer();
    if (side <= 0) field.Fail(std::string(what) + " must be a positive integer, got " + std::to_string(side));
    if (side > kMaxTensorSide) {
      field.Fail(std::string(what) + " " + std::to_string(side) + " is too large (at most " +
                 std::to_string(kMaxTensorSide) + ")");
    }
    return side;
  };
  for (size_t t = 0; t < widths.size(); ++t) {
    problem.tensors[t].width = read_side(widths[t], "a width");
    problem.tensors[t].height = read_side(heights[t], "a height");
  }
  const size_t num_tensors = problem.tensors.size();

  // Ops: four parallel lists.
  const JsonField inputs_field = root.Member("inputs");
  const JsonField outputs_field = root.Member("outputs");
  const JsonField costs_field = root.Member("base_costs");
  const JsonField types_field = root.Member("op_types");
  const std::vector<JsonField> inputs = inputs_field.Items();
  const std::vector<JsonField> outputs = outputs_field.Items();
  const std::vector<JsonField> costs = costs_field.Items();
  const std::vector<JsonField> types = types_field.Items();
  if (inputs.empty()) inputs_field.Fail("the problem has no ops");
  RequireLength(outputs_field, outputs.size(), "inputs", inputs.size());
  RequireLength(costs_field, costs.size(), "inputs", inputs.size());
  RequireLength(types_field, types.size(), "inputs", inputs.size());

  std::vector<OpId> producer(num_tensors, kNoOp);
  problem.ops.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    Op& op = problem.ops[i];
    const std::string_view type = types[i].String();
    if (type == "MatMul") {
      op.kind = OpKind::MatMul;
    } else if (type == "Pointwise") {
      op.kind = OpKind::Pointwise;
    } else if (type == "Layout") {
      op.kind = OpKind::Layout;
    } else {
      types[i].Fail("unknown op type " + types[i].Describe() +
                    " (expected \"MatMul\", \"Pointwise\" or \"Layout\")");
    }

    const std::vector<JsonField> op_inputs = inputs[i].Items();
    for (size_t j = 0; j < op_inputs.size(); ++j) {
      const TensorId t = ReadTensorId(op_inputs[j], num_tensors);
      for (size_t previous = 0; previous < j; ++previous) {
        if (op.inputs[previous] == t) {
          op_inputs[j].Fail("op " + std::to_string(i) + " uses tensor " + std::to_string(t) +
                            " twice (also at index " + std::to_string(previous) + ")");
        }
      }
      op.inputs.push_back(t);
    }

    const std::vector<JsonField> op_outputs = outputs[i].Items();
    if (op_outputs.size() != 1) {
      outputs[i].Fail("an op must have exactly one output, got " + std::to_string(op_outputs.size()));
    }
    op.output = ReadTensorId(op_outputs[0], num_tensors);
    for (TensorId in : op.inputs) {
      if (in == op.output) {
        op_outputs[0].Fail("op " + std::to_string(i) + " both reads and writes tensor " +
                           std::to_string(in));
      }
    }
    if (producer[op.output] != kNoOp) {
      op_outputs[0].Fail("tensor " + std::to_string(op.output) + " is already produced by op " +
                         std::to_string(producer[op.output]));
    }
    producer[op.output] = static_cast<OpId>(i);

    op.base_cost = costs[i].FiniteNumber();
    if (op.base_cost < 0) costs[i].Fail("a base cost must not be negative, got " + costs[i].Describe());
    if (op.kind == OpKind::Layout && op.base_cost != 0) {
      costs[i].Fail("a Layout op costs no compute; its base cost must be 0");  // spec L3
    }

    const Tensor& out = problem.tensors[op.output];
    if (op.kind == OpKind::MatMul) {
      if (op.inputs.size() != 2) {
        inputs[i].Fail("a MatMul takes exactly 2 inputs [LHS, RHS], got " +
                       std::to_string(op.inputs.size()));
      }
      const Tensor& lhs = problem.tensors[op.inputs[0]];
      const Tensor& rhs = problem.tensors[op.inputs[1]];
      if (lhs.width != rhs.height) {
        inputs[i].Fail("MatMul shapes do not chain: LHS tensor " + std::to_string(op.inputs[0]) +
                       " is " + Shape(lhs) + ", RHS tensor " + std::to_string(op.inputs[1]) +
                       " is " + Shape(rhs) + " (the LHS width must equal the RHS height)");
      }
      if (out.height != lhs.height || out.width != rhs.width) {
        op_outputs[0].Fail("MatMul output tensor " + std::to_string(op.output) + " is " +
                           Shape(out) + ", expected " + std::to_string(lhs.height) + "x" +
                           std::to_string(rhs.width) + " (LHS rows x RHS cols)");
      }
    } else if (op.kind == OpKind::Layout) {
      // Any shapes: how Y's elements map to its inputs' does not enter the cost model (spec L2);
      // several inputs are gathered into one output (a concatenation, blocks merged).
      if (op.inputs.empty()) inputs[i].Fail("a Layout op needs at least one input");
    } else {
      if (op.inputs.empty()) inputs[i].Fail("a Pointwise op needs at least one input");
      for (size_t j = 0; j < op.inputs.size(); ++j) {
        const Tensor& in = problem.tensors[op.inputs[j]];
        if (!(in == out)) {
          op_inputs[j].Fail("Pointwise input tensor " + std::to_string(op.inputs[j]) + " is " +
                            Shape(in) + " but its output tensor " + std::to_string(op.output) +
                            " is " + Shape(out) + " (all shapes must be identical)");
        }
      }
    }
  }

  // Hardware.
  const JsonField capacity = root.Member("fast_memory_capacity");
  problem.fast_memory_capacity = capacity.Integer();
  if (problem.fast_memory_capacity <= 0) {
    capacity.Fail("must be a positive integer, got " + capacity.Describe());
  }
  const JsonField bandwidth = root.Member("slow_memory_bandwidth");
  problem.slow_memory_bandwidth = bandwidth.FiniteNumber();
  if (!(problem.slow_memory_bandwidth > 0)) {
    bandwidth.Fail("must be a positive number, got " + bandwidth.Describe());
  }
  const JsonField native_field = root.Member("native_granularity");
  const std::vector<JsonField> native = native_field.Items();
  if (native.size() != 2) {
    native_field.Fail("expected 2 entries [w, h], got " + std::to_string(native.size()));
  }
  const int64_t native_w = native[0].Integer();
  const int64_t native_h = native[1].Integer();
  for (const JsonField& side : native) {
    const int64_t value = side.Integer();
    if (value <= 0) side.Fail("must be a positive integer, got " + std::to_string(value));
    if (value > kMaxTensorSide) side.Fail("native size " + std::to_string(value) + " is too large");
  }
  if (native_w != native_h) {
    native_field.Fail("[" + std::to_string(native_w) + ", " + std::to_string(native_h) +
                      "] is not square; the cost model uses one native size for w, h and k "
                      "(spec A.1.4)");
  }
  problem.native = native_w;
  if (const std::optional<JsonField> chip = root.OptionalMember("chip_rules")) {
    problem.chip = ReadChipRules(*chip, problem.native, problem.fast_memory_capacity);
  }

  const std::string reason = problem.Finalize();
  if (!reason.empty()) throw InputError(origin, "inputs/outputs", reason);
  return problem;
}

Problem ReadProblemFile(const std::string& path) { return ParseProblem(ReadTextFile(path), path); }

std::string ExtractJsonMember(std::string_view json, std::string_view key,
                              const std::string& origin) {
  simdjson::dom::parser parser;
  const JsonField root(ParseJsonDocument(parser, json, origin), origin, "");
  const JsonField member = root.Member(key);
  member.RequireObject();
  return simdjson::minify(member.element());
}

}  // namespace annealer
