#include "src/report/report_labels.h"

#include <algorithm>

namespace annealer {

ReportLabels LabelsOfOrigins(const std::vector<OpOrigin>& ops,
                             const std::vector<TensorOrigin>& tensors) {
  ReportLabels labels;
  labels.ops.reserve(ops.size());
  for (const OpOrigin& origin : ops) {
    ItemLabel label;
    if (!origin.nodes.empty()) {
      label.name = origin.nodes.front();
      if (origin.nodes.size() > 1) label.name += " +" + std::to_string(origin.nodes.size() - 1);
    }
    std::vector<std::string> types;
    for (const std::string& type : origin.op_types) {
      if (std::find(types.begin(), types.end(), type) == types.end()) types.push_back(type);
    }
    for (const std::string& type : types) label.detail += (label.detail.empty() ? "" : "/") + type;
    if (!origin.role.empty()) label.detail += (label.detail.empty() ? "" : ", ") + origin.role;
    labels.ops.push_back(std::move(label));
  }
  labels.tensors.reserve(tensors.size());
  for (const TensorOrigin& origin : tensors) labels.tensors.push_back({origin.value, origin.role});
  return labels;
}

bool LabelCut(const ItemLabel& label, size_t max_name) {
  if (max_name == 0) return false;
  size_t chars = 0;  // UTF-8 code points
  for (const char c : label.name) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return chars > max_name;
}

std::string LabelText(const ItemLabel& label, size_t max_name) {
  std::string name = label.name;
  if (LabelCut(label, max_name)) {
    // Keep the last max_name - 1 code points: the tail of an exported name says the most.
    size_t keep = max_name - 1, at = name.size();
    while (at > 0 && keep > 0) {
      --at;
      if ((static_cast<unsigned char>(name[at]) & 0xC0) != 0x80) --keep;
    }
    name = "\u2026" + name.substr(at);
  }
  if (label.detail.empty()) return name;
  return name.empty() ? "(" + label.detail + ")" : name + " (" + label.detail + ")";
}

std::vector<LabelledRun> LabelledRuns(const std::vector<int32_t>& ids,
                                      const std::vector<ItemLabel>& labels) {
  std::vector<LabelledRun> runs;
  for (const int32_t id : ids) {
    const ItemLabel* label =
        id >= 0 && id < static_cast<int32_t>(labels.size()) ? &labels[id] : nullptr;
    if (!runs.empty() && label != nullptr && runs.back().label != nullptr &&
        runs.back().last + 1 == id && runs.back().label->name == label->name &&
        runs.back().label->detail == label->detail) {
      runs.back().last = id;
    } else {
      runs.push_back({id, id, label});
    }
  }
  return runs;
}

std::string RunText(const LabelledRun& run, size_t max_name) {
  std::string text = std::to_string(run.first);
  if (run.last != run.first) text += "\u2013" + std::to_string(run.last);
  if (run.label != nullptr) {
    const std::string label = LabelText(*run.label, max_name);
    if (!label.empty()) text += " " + label;
  }
  return text;
}

std::string RunsText(const std::vector<int32_t>& ids, const std::vector<ItemLabel>& labels,
                     size_t max_runs, size_t max_name) {
  const std::vector<LabelledRun> runs = LabelledRuns(ids, labels);
  std::string text;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (max_runs > 0 && i == max_runs) {
      return text + ", \u2026 (+" + std::to_string(runs.size() - i) + " more)";
    }
    text += (i ? ", " : "") + RunText(runs[i], max_name);
  }
  return text;
}

}  // namespace annealer
