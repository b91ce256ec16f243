#include "src/import/lowering/values.h"

#include <algorithm>
#include <tuple>

#include "src/io/contest/problem_reader.h"

namespace annealer::lowering {

int64_t Product(const std::vector<int64_t>& v, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < std::min(to, v.size()); ++i) p *= v[i];
  return p;
}

std::string DimsText(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(d[i]);
  }
  return s + "]";
}

std::vector<int64_t> DimsOf(const Value& v) {
  return std::visit([](const auto& x) { return x.dims; }, v);
}

int64_t Attr::Int(const std::string& k, int64_t def) const {
  auto it = node.attributes.find(k);
  return it == node.attributes.end() || it->second.ints.empty() ? def : it->second.ints[0];
}
std::vector<int64_t> Attr::Ints(const std::string& k) const {
  auto it = node.attributes.find(k);
  return it == node.attributes.end() ? std::vector<int64_t>{} : it->second.ints;
}
double Attr::Float(const std::string& k, double def) const {
  auto it = node.attributes.find(k);
  return it == node.attributes.end() || it->second.floats.empty() ? def : it->second.floats[0];
}
std::string Attr::Text(const std::string& k) const {
  auto it = node.attributes.find(k);
  return it == node.attributes.end() ? "" : it->second.text;
}

void SetChannelsLayout(Act& a, std::optional<int> col) {
  const int r = static_cast<int>(a.dims.size());
  a.col_axis = col ? *col : (r == 4 || r == 5 ? 1 : (r == 0 ? -1 : r - 1));
  // A rank-4/5 value that is not an image (mvit's [B, heads = 1, 3, tokens, head_dim] qkv): its
  // size-1 axis 1 as the columns would leave more rows than a tensor side allows; its last
  // axis is the columns instead. (Only where the channels layout could not be written at all.)
  if (!col && (r == 4 || r == 5) && a.dims[1] == 1 && a.dims[r - 1] > 1 && Product(a.dims) > kMaxTensorSide) a.col_axis = r - 1;
  a.row_axes.clear();
  for (int i = 0; i < r; ++i) if (i != a.col_axis) a.row_axes.push_back(i);
  a.part_axes.clear();
  a.col_split = false;
}

void SetLayout(Act& a, int col_axis, const std::vector<int>& part_axes) {
  SetChannelsLayout(a, col_axis);
  for (int ax : part_axes) {
    if (ax < 0 || ax >= int(a.dims.size()) || ax == col_axis) continue;
    a.row_axes.erase(std::remove(a.row_axes.begin(), a.row_axes.end(), ax), a.row_axes.end());
    if (a.dims[ax] > 1) a.part_axes.push_back(ax);
  }
  std::sort(a.part_axes.begin(), a.part_axes.end());
}

std::pair<Elements, Elements> PartShape(const Act& a) {
  Elements rows = 1;
  for (int ax : a.row_axes) rows *= a.dims[ax];
  Elements cols = a.col_axis < 0 ? 1 : a.dims[a.col_axis];
  if (a.col_split) cols /= static_cast<Elements>(a.parts.size());
  return {rows, cols};
}

bool RowsInOnnxOrder(const Act& x) {
  std::vector<int> sized;
  for (int ax : x.row_axes) if (x.dims[ax] > 1) sized.push_back(ax);
  return std::is_sorted(sized.begin(), sized.end());
}

bool HasLayout(const Act& x, int col_axis, const std::vector<int>& part_axes) {
  if (x.pending() || x.model_input || x.col_split || x.col_axis != col_axis) return false;
  auto sized = [&](const std::vector<int>& axes) {
    std::vector<int> out;
    for (int ax : axes) if (x.dims[ax] > 1) out.push_back(ax);
    std::sort(out.begin(), out.end());
    return out;
  };
  return sized(x.part_axes) == sized(part_axes) && RowsInOnnxOrder(x);
}

bool SameDataLayout(const Act& a, const Act& b) {
  auto squeezed = [](const Act& x) {
    std::vector<int> index(x.dims.size(), -1);
    std::vector<int64_t> dims;
    for (size_t i = 0; i < x.dims.size(); ++i)
      if (x.dims[i] > 1) index[i] = int(dims.size()), dims.push_back(x.dims[i]);
    auto at = [&](int ax) { return ax < 0 || ax >= int(index.size()) ? -1 : index[size_t(ax)]; };
    std::vector<int> parts;
    for (int ax : x.part_axes) if (at(ax) >= 0) parts.push_back(at(ax));
    std::sort(parts.begin(), parts.end());
    return std::make_tuple(dims, at(x.col_axis), parts);
  };
  return !a.col_split && !b.col_split && RowsInOnnxOrder(a) && RowsInOnnxOrder(b) && squeezed(a) == squeezed(b);
}

}  // namespace annealer::lowering
