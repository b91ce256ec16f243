// Names for the ops and tensors of a problem in the report and the trace, when the problem came
// from a model: an op reads "12 conv2d_3 (Conv, conv-tap)" (id, ONNX node, op type, role in the
// lowering), a tensor "5 conv2d_3_out (activation)". Long names are cut to their tail in the
// drawing ("…layer4.2/conv3/Conv") with the whole label in the tooltip.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "src/import/lowered_model.h"

namespace annealer {

struct ItemLabel {
  std::string name;    // ONNX node or value name; may be empty
  std::string detail;  // "Conv, conv-tap", "activation"; may be empty
};

struct ReportLabels {
  std::vector<ItemLabel> ops;      // per problem op
  std::vector<ItemLabel> tensors;  // per problem tensor
};

// From the origins of an imported model or a map file. An op of several nodes is named after
// its first ("conv2d_3 +2"); its op types are listed once each.
ReportLabels LabelsOfOrigins(const std::vector<OpOrigin>& ops,
                             const std::vector<TensorOrigin>& tensors);

// Names longer than this are cut in what is drawn (the tooltip keeps them whole).
constexpr size_t kLabelNameChars = 28;

// "conv2d_3 (Conv, conv-tap)"; with max_name > 0 a longer name keeps its last max_name - 1
// characters after "…" (never splitting a UTF-8 sequence).
std::string LabelText(const ItemLabel& label, size_t max_name = 0);
// True when LabelText(label, max_name) cuts the name.
bool LabelCut(const ItemLabel& label, size_t max_name);

// Consecutive ops (ids +1 apart) with the same label, e.g. the nine tap MatMuls of one 3×3 Conv.
struct LabelledRun {
  int32_t first = 0, last = 0;
  const ItemLabel* label = nullptr;  // null: the ops have no label
};
std::vector<LabelledRun> LabelledRuns(const std::vector<int32_t>& ids,
                                      const std::vector<ItemLabel>& labels);
// "12–20 conv2d_3 (Conv, conv-tap)", or "7" without a label.
std::string RunText(const LabelledRun& run, size_t max_name = kLabelNameChars);
// The runs as plain text joined by ", "; past max_runs (> 0) ends with "… (+N more)".
std::string RunsText(const std::vector<int32_t>& ids, const std::vector<ItemLabel>& labels,
                     size_t max_runs = 0, size_t max_name = kLabelNameChars);

}  // namespace annealer
