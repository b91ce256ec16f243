#include "src/import/model_lowering.h"

#include <cstdlib>
#include <map>
#include <sstream>

#include "src/import/lowering/context.h"
#include "src/import/lowering/registry.h"
#include "src/io/json_fields.h"
#include "src/io/message_text.h"
#include "src/io/text_format.h"

namespace annealer {
namespace {

using lowering::Act;
using lowering::Const;
using lowering::Context;
using lowering::Product;

// Initializers are constants; floating-point ones of rank >= 1 are parameters (scalars are
// constants).
void BindInitializers(Context& cx) {
  for (const auto& [name, init] : cx.graph().initializers) {
    Const c;
    c.dims = init.dims;
    c.values = init.values;
    c.is_float = init.is_float;
    c.initializer = true;
    c.name = name;
    cx.Bind(name, c);
    if (init.is_float && !init.dims.empty()) cx.problem().summary().params += Product(init.dims);
  }
}

// A graph input read only as a weight (a weight slot of its converters: a Conv's or Gemm's
// weight or bias, a MatMul's right operand) is a parameter whose data the file leaves out: tools that strip weights, and
// exports that pass weights as inputs, write models that way. Other graph inputs are
// activations, made tensors on first use.
void BindGraphInputs(Context& cx) {
  const OnnxGraph& g = cx.graph();
  std::map<std::string, bool> weight_only;
  for (const auto& node : g.nodes)
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const bool weight_slot = lowering::IsWeightInput(g, node, i);
      auto [it, fresh] = weight_only.emplace(node.inputs[i], weight_slot);
      if (!fresh) it->second = it->second && weight_slot;
    }
  for (const auto& o : g.outputs) weight_only[o] = false;
  ImportSummary& summary = cx.problem().summary();
  for (const auto& [name, info] : g.inputs) {
    if (weight_only[name]) {
      cx.Bind(name, Const{info.dims, std::nullopt, true, true, name});
      summary.params += Product(info.dims);
      ++summary.weight_inputs;
      continue;
    }
    Act a;
    a.dims = info.dims;
    a.name = name;
    a.input = name;
    a.model_input = true;
    lowering::SetChannelsLayout(a);
    cx.Bind(name, a);
  }
}

}  // namespace

LoweredModel LowerOnnxGraph(const OnnxGraph& graph, const LoweringHardware& hardware) {
  if (hardware.native <= 0 || hardware.capacity <= 0 || !(hardware.bandwidth > 0))
    throw InputError("hardware", "", "capacity, bandwidth and native size must be positive");
  // Post-processing with data-dependent shapes (a detector's NMS, RoIAlign over proposals): no
  // fixed problem can hold it. Said first, naming the op, rather than at whatever shape
  // arithmetic around it fails. An If or a Loop is said when it is reached: its condition or trip
  // count may be known at import time (constants.cc).
  for (const auto& node : graph.nodes)
    if (node.op_type == "NonMaxSuppression" || node.op_type == "RoiAlign" || node.op_type == "NonZero")
      lowering::FailAt(graph.origin, node, lowering::kDataDependentShapes);
  Context cx(graph, hardware);
  BindInitializers(cx);
  BindGraphInputs(cx);
  for (const auto& node : graph.nodes) {
    ++cx.problem().summary().onnx_ops[node.op_type];
    lowering::LowerNode(cx, node);
  }
  for (const std::string& output : graph.outputs) cx.ResolveOutput(output);
  return cx.problem().Finish();
}

std::string ImportSummaryText(const ImportSummary& s) {
  std::ostringstream out;
  auto num = [](double v) { return Grouped(v); };
  out << "ONNX ops:";
  for (const auto& [k, v] : s.onnx_ops) out << " " << k << " " << v << ",";
  out.seekp(-1, std::ios_base::end);
  out << "\nproblem ops: " << s.matmul_ops << " MatMul, " << s.pointwise_ops << " Pointwise, " << s.layout_ops << " Layout (";
  bool first = true;
  for (const auto& [k, v] : s.problem_ops) { out << (first ? "" : ", ") << k << " " << v; first = false; }
  out << ")\n";
  out << "MACs (Conv/Gemm/MatMul): " << num(double(s.macs)) << "\n";
  if (s.depthwise_macs) out << "depthwise MACs (vector work): " << num(double(s.depthwise_macs)) << "\n";
  out << "vector work: " << num(double(s.vector_element_passes)) << " element-passes\n";
  out << "parameters: " << num(double(s.params)) << " (" << num(double(s.params_in_tensors)) << " in weight tensors of the problem";
  if (s.weight_inputs) out << "; " << s.weight_inputs << " graph inputs read only as weights count as parameters";
  out << ")\n";
  out << "largest activation: " << num(double(s.largest_activation)) << " elements (" << s.largest_activation_name << ")\n";
  const LoweringHardware& h = s.hardware;
  out << "hardware: capacity " << num(double(h.capacity)) << " elements, bandwidth " << Readable(h.bandwidth)
      << " elements/cycle, native " << h.native << ", MatMul base " << Readable(h.matmul_base)
      << " per native tile and " << h.native << " of K, Pointwise base " << Readable(h.pointwise_base) << " per pass\n";
  if (s.approximations.empty()) {
    out << "approximations: none\n";
  } else {
    out << "approximations:\n";
    for (const Approximation& a : s.approximations) {
      out << "  " << a.rule << " x" << a.count << ": ";
      if (!a.traffic) out << "elements affected " << num(double(a.elements));
      else if (a.elements != 0) out << (a.elements > 0 ? "traffic added " : "traffic not charged ") << num(double(std::llabs(a.elements))) << " elements";
      else out << "no traffic change";
      if (a.extra_macs) out << ", data-movement MACs " << num(double(a.extra_macs));
      out << "\n    " << a.what << "\n";
    }
  }
  return out.str();
}

std::string ImportSummaryJson(const ImportSummary& s) {
  std::ostringstream out;
  out << "{\"onnx_ops\": {";
  bool first = true;
  for (const auto& [k, v] : s.onnx_ops) { out << (first ? "" : ", ") << JsonString(k) << ": " << v; first = false; }
  out << "}, \"problem_ops\": {";
  first = true;
  for (const auto& [k, v] : s.problem_ops) { out << (first ? "" : ", ") << JsonString(k) << ": " << v; first = false; }
  out << "}, \"matmul_ops\": " << s.matmul_ops << ", \"pointwise_ops\": " << s.pointwise_ops << ", \"layout_ops\": " << s.layout_ops << ", \"macs\": " << s.macs
      << ", \"depthwise_macs\": " << s.depthwise_macs << ", \"vector_element_passes\": " << s.vector_element_passes
      << ", \"params\": " << s.params << ", \"params_in_tensors\": " << s.params_in_tensors
      << ", \"weight_inputs\": " << s.weight_inputs
      << ", \"largest_activation\": " << s.largest_activation << ", \"largest_activation_name\": " << JsonString(s.largest_activation_name)
      << ", \"hardware\": {\"capacity\": " << s.hardware.capacity << ", \"bandwidth\": " << Readable(s.hardware.bandwidth)
      << ", \"native\": " << s.hardware.native << ", \"matmul_base\": " << Readable(s.hardware.matmul_base)
      << ", \"pointwise_base\": " << Readable(s.hardware.pointwise_base) << "}, \"approximations\": [";
  for (size_t i = 0; i < s.approximations.size(); ++i) {
    const Approximation& a = s.approximations[i];
    out << (i ? ", " : "") << "{\"rule\": " << JsonString(a.rule) << ", \"count\": " << a.count << ", \"elements\": " << a.elements
        << ", \"elements_are_traffic\": " << (a.traffic ? "true" : "false") << ", \"extra_macs\": " << a.extra_macs << ", \"what\": " << JsonString(a.what) << "}";
  }
  out << "]}\n";
  return out.str();
}

}  // namespace annealer
