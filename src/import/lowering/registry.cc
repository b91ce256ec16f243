#include "src/import/lowering/registry.h"

#include <algorithm>
#include <stdexcept>

namespace annealer::lowering {
namespace {

ConverterTable BuildTable() {
  ConverterTable all;
  for (ConverterTable (*family)() : {ConstantConverters, ConvConverters, MatMulConverters, NormalizationConverters,
                                     DataMovementConverters, ElementwiseConverters})
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

Converter FindConverter(const std::string& op_type, int64_t opset) {
  for (const ConverterEntry& e : Converters())
    if (e.op_type == op_type && e.since <= opset && opset < e.until) return e.lower;
  return nullptr;
}

std::vector<std::string> RegisteredOpTypes() {
  std::vector<std::string> ops;
  for (const ConverterEntry& e : Converters()) ops.push_back(e.op_type);
  std::sort(ops.begin(), ops.end());
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  return ops;
}

void LowerNode(Context& cx, const OnnxNode& node) {
  if (!node.domain.empty() && node.domain != "ai.onnx")
    cx.Fail(node, "operator of domain '" + node.domain + "' is not supported (only the default ONNX domain)");
  if (Converter lower = FindConverter(node.op_type, cx.opset())) return lower(cx, node);
  cx.Fail(node, "operator not supported by the importer; supported: Conv, Gemm, MatMul, elementwise and "
                "activation ops, BatchNormalization, LayerNormalization, Softmax, pooling, Reduce*, "
                "Reshape/Flatten/Squeeze/Unsqueeze/Transpose, Concat/Gather/Slice/Split, shape arithmetic "
                "(see docs/model-import.md); replace the op or export the model without it");
}

}  // namespace annealer::lowering
