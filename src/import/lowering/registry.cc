#include "src/import/lowering/registry.h"

#include <algorithm>
#include <stdexcept>

namespace annealer::lowering {
namespace {

ConverterTable BuildTable() {
  ConverterTable all;
  for (ConverterTable (*family)() : {ConstantConverters, ConvConverters, MatMulConverters, NormalizationConverters,
                                     ReshapeConverters, DataMovementConverters, ElementwiseConverters,
                                     RecurrentConverters, AttentionConverters})
    for (ConverterEntry& e : family()) all.push_back(std::move(e));
  for (size_t i = 0; i < all.size(); ++i) {
    if (!all[i].lower || all[i].since >= all[i].until)
      throw std::logic_error("converter of " + all[i].op_type + ": no function or an empty opset range");
    for (size_t j = 0; j < i; ++j)
      if (all[j].op_type == all[i].op_type && all[j].since < all[i].until && all[i].since < all[j].until)
        throw std::logic_error("two converters of " + all[i].op_type + " for the same opsets");
  }
  return all;
}

}  // namespace

const ConverterTable& Converters() {
  static const ConverterTable table = BuildTable();
  return table;
}

const ConverterEntry* FindConverter(const std::string& op_type, int64_t opset) {
  for (const ConverterEntry& e : Converters())
    if (e.op_type == op_type && e.since <= opset && opset < e.until) return &e;
  return nullptr;
}

bool IsWeightInput(const OnnxGraph& g, const OnnxNode& node, size_t input) {
  const ConverterEntry* e = FindConverter(node.op_type, g.opset);
  return e && e->weight_input && e->weight_input(g, node, input);
}

std::vector<std::string> RegisteredOpTypes() {
  std::vector<std::string> ops;
  for (const ConverterEntry& e : Converters()) ops.push_back(e.op_type);
  std::sort(ops.begin(), ops.end());
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  return ops;
}

std::string ConverterOpsets(const std::string& op_type) {
  std::string text;
  for (const ConverterEntry& e : Converters()) {
    if (e.op_type != op_type) continue;
    text += text.empty() ? "opsets " : ", ";
    text += std::to_string(std::max<int64_t>(e.since, 1));
    text += e.until == kAnyOpset ? " and later" : " to " + std::to_string(e.until - 1);
  }
  return text;
}

void LowerNode(Context& cx, const OnnxNode& node) {
  if (!node.domain.empty() && node.domain != "ai.onnx")
    cx.Fail(node, "operator of domain '" + node.domain + "' is not supported (only the default ONNX domain)");
  if (const ConverterEntry* e = FindConverter(node.op_type, cx.opset())) return e->lower(cx, node);
  const std::string ranges = ConverterOpsets(node.op_type);
  if (!ranges.empty())
    cx.Fail(node, "operator not supported at opset " + std::to_string(cx.opset()) + " (the importer lowers it at " + ranges +
                      "); convert the model to another opset");
  std::string ops;
  for (const std::string& op : RegisteredOpTypes()) ops += (ops.empty() ? "" : ", ") + op;
  cx.Fail(node, "operator not supported by the importer, which lowers " + ops +
                    " (see docs/model-import.md); replace the op or export the model without it");
}

}  // namespace annealer::lowering
