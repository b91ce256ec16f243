// Relabelling: Reshape, Flatten, Squeeze, Unsqueeze, Expand and Transpose. An activation keeps its tensors under new dims when its channels-last 2-D layout
// allows it (ReshapeAct); a reshape that splits the columns into heads splits their producer
// (SplitColumns). No data moves, except for that split.
#include <algorithm>
#include <set>

#include "src/import/lowering/folding.h"
#include "src/import/lowering/registry.h"
#include "src/import/lowering/reshape.h"

namespace annealer::lowering {
namespace {

std::vector<int64_t> ReshapeDims(Context& cx, const OnnxNode& node, const std::vector<int64_t>& in_dims) {
  std::vector<int64_t> shape = cx.NeedInts(node, 1, "the target shape");
  std::vector<int64_t> out_dims;
  const int64_t total = Product(in_dims);
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape[i];
    if (d == 0 && !Attr{node}.Int("allowzero", 0)) d = i < in_dims.size() ? in_dims[i] : 0;
    if (d == -1) {
      if (infer >= 0) cx.Fail(node, "two -1 dims in the target shape");
      infer = int64_t(i);
      out_dims.push_back(1);
      continue;
    }
    if (d < 0) cx.Fail(node, "negative dim in the target shape");
    out_dims.push_back(d);
    known = cx.Mul(node, known, d);
  }
  if (infer >= 0) {
    if (known == 0 || total % known) cx.Fail(node, "cannot infer -1 in " + DimsText(shape) + " for " + DimsText(in_dims));
    out_dims[infer] = total / known;
  }
  if (Product(out_dims) != total) cx.Fail(node, "target shape " + DimsText(out_dims) + " does not hold " + DimsText(in_dims));
  return out_dims;
}

std::vector<int64_t> FlattenDims(Context& cx, const OnnxNode& node, const std::vector<int64_t>& in_dims) {
  int64_t axis = Attr{node}.Int("axis", 1);
  const int64_t rank = int64_t(in_dims.size());
  if (axis < -rank || axis > rank)
    cx.Fail(node, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  return {Product(in_dims, 0, axis), Product(in_dims, axis)};
}

// Squeeze and Unsqueeze: the axes attribute, else the axes input (the spelling from opset 13).
std::vector<int64_t> SqueezeAxes(Context& cx, const OnnxNode& node) {
  std::vector<int64_t> axes = Attr{node}.Ints("axes");
  if (axes.empty() && cx.HasInput(node, 1)) axes = cx.NeedInts(node, 1, "the axes");
  return axes;
}

std::vector<int64_t> SqueezeDims(Context& cx, const OnnxNode& node, const std::vector<int64_t>& in_dims) {
  const std::vector<int64_t> axes = SqueezeAxes(cx, node);
  std::vector<int64_t> out_dims;
  const int r = int(in_dims.size());
  std::set<int64_t> drop;
  for (int64_t ax : axes) drop.insert(ax < 0 ? ax + r : ax);
  for (int i = 0; i < r; ++i)
    if (!(axes.empty() ? in_dims[i] == 1 : drop.count(i) > 0)) out_dims.push_back(in_dims[i]);
  return out_dims;
}

std::vector<int64_t> UnsqueezeDims(Context& cx, const OnnxNode& node, const std::vector<int64_t>& in_dims) {
  const std::vector<int64_t> axes = SqueezeAxes(cx, node);
  std::vector<int64_t> out_dims;
  const int r = int(in_dims.size() + axes.size());
  std::set<int64_t> add;
  for (int64_t ax : axes) {
    if (ax < -r || ax >= r) cx.Fail(node, "axis " + std::to_string(ax) + " is out of range for rank " + std::to_string(r));
    add.insert(ax < 0 ? ax + r : ax);
  }
  if (add.size() != axes.size()) cx.Fail(node, "an axis is given twice");
  size_t j = 0;
  for (int i = 0; i < r; ++i) out_dims.push_back(add.count(i) ? 1 : in_dims[j++]);
  return out_dims;
}


// The layout of a reshape of an activation that keeps its column axis, splits it into heads or
// merges heads back; false if none applies.
bool ReshapeColumns(Context& cx, Act& x, Act& out, const std::vector<int64_t>& out_dims, const OnnxNode& node) {
  if (x.part_axes.empty() && x.col_split) {
    // Channel blocks: only reshapes that keep the column axis (flatten after pooling).
    const int64_t c = x.dims[x.col_axis];
    const int64_t before = Product(x.dims, 0, x.col_axis), after = Product(x.dims, x.col_axis + 1);
    for (int j = 0; j < int(out_dims.size()); ++j)
      if (out_dims[j] == c && Product(out_dims, 0, j) == before && Product(out_dims, j + 1) == after) {
        SetChannelsLayout(out, j);
        out.col_split = true;
        return true;
      }
    return false;
  }
  if (x.part_axes.empty() && !x.col_split) {
    const int64_t c = x.col_axis < 0 ? 1 : x.dims[x.col_axis];
    const int64_t before = x.col_axis < 0 ? Product(x.dims) : Product(x.dims, 0, x.col_axis);
    const int64_t after = x.col_axis < 0 ? 1 : Product(x.dims, x.col_axis + 1);
    // The same column axis (same size, same rows before and after it).
    for (int j = 0; j < int(out_dims.size()); ++j)
      if (out_dims[j] == c && Product(out_dims, 0, j) == before && Product(out_dims, j + 1) == after) {
        SetChannelsLayout(out, j);
        return true;
      }
    // Head split: the column axis becomes (heads, head_dim).
    for (int j = 0; j + 1 < int(out_dims.size()); ++j)
      if (out_dims[j] * out_dims[j + 1] == c && out_dims[j] > 1 && Product(out_dims, 0, j) == before &&
          Product(out_dims, j + 2) == after) {
        cx.Materialized(x);
        const int heads = int(out_dims[j]);
        // A producer that cannot be split (a model input, another consumer) is gathered by
        // heads when a consumer needs them (Relayout).
        if (!cx.problem().CanSplitColumns(x.parts[0], heads, 0)) return false;
        out.parts = cx.problem().SplitColumns(x.parts[0], heads, node, 0);
        SetChannelsLayout(out, j + 1);
        out.row_axes.erase(std::find(out.row_axes.begin(), out.row_axes.end(), j));
        out.part_axes = {j};
        out.col_split = false;
        return true;
      }
    return false;
  }
  // Heads merged back: a part axis directly before the column axis joins it.
  if (x.part_axes.size() == 1 && x.part_axes[0] + 1 == x.col_axis && !x.col_split) {
    const int p = x.part_axes[0];
    const int64_t merged = x.dims[p] * x.dims[x.col_axis];
    const int64_t before = Product(x.dims, 0, p), after = Product(x.dims, x.col_axis + 1);
    for (int j = 0; j < int(out_dims.size()); ++j)
      if (out_dims[j] == merged && Product(out_dims, 0, j) == before && Product(out_dims, j + 1) == after) {
        SetChannelsLayout(out, j);
        out.col_split = true;
        return true;
      }
  }
  return false;
}

// A reshape that only adds or removes size-1 axes keeps parts and layout; false otherwise.
bool ReshapeUnitAxes(const Act& x, Act& out, const std::vector<int64_t>& out_dims) {
  const int r = int(x.dims.size());
  // A column axis of size 1 (a reduction's result) cannot be relabelled onto another axis.
  if (x.col_axis >= 0 && x.dims[x.col_axis] == 1) return false;
  std::vector<int64_t> a, b;
  for (int64_t d : x.dims) if (d != 1) a.push_back(d);
  for (int64_t d : out_dims) if (d != 1) b.push_back(d);
  if (a != b) return false;
  std::vector<int> map(r, -1);  // old axis -> new axis (sized axes only)
  int j = 0;
  for (int i = 0; i < r; ++i) {
    if (x.dims[i] == 1) continue;
    while (out_dims[j] == 1) ++j;
    map[i] = j++;
  }
  out.row_axes.clear();
  out.part_axes.clear();
  std::set<int> used;
  if (x.col_axis >= 0 && x.dims[x.col_axis] != 1) out.col_axis = map[x.col_axis];
  else out.col_axis = int(out_dims.size()) - 1;
  used.insert(out.col_axis);
  for (int ax : x.part_axes) if (map[ax] >= 0) { out.part_axes.push_back(map[ax]); used.insert(map[ax]); }
  for (int ax : x.row_axes) if (map[ax] >= 0) { out.row_axes.push_back(map[ax]); used.insert(map[ax]); }
  for (int i = 0; i < int(out_dims.size()); ++i) if (!used.count(i)) out.row_axes.push_back(i);
  return true;
}

// An activation with the same channels-last tensors seen under other dims, or a head split
// (SplitColumns); a reshape that mixes rows and columns is a pending rearrangement (one Layout
// op when a consumer reads it).
Act ReshapeActImpl(Context& cx, Act x, const std::vector<int64_t>& out_dims, const OnnxNode& node) {
  if (x.pending() || !RowsInOnnxOrder(x)) return cx.Pending(node, x, out_dims, true);
  Act out = x;
  out.dims = out_dims;
  if (ReshapeColumns(cx, x, out, out_dims, node)) return out;
  if (!x.part_axes.empty() && ReshapeUnitAxes(x, out, out_dims)) return out;
  return cx.Pending(node, x, out_dims, true);
}

// Reshape, Flatten, Squeeze, Unsqueeze: new dims for the same elements; constants and row
// statistics keep their values, activations are relabelled (ReshapeAct).
void SetReshaped(Context& cx, const OnnxNode& node, const Value& v, const std::vector<int64_t>& out_dims) {
  if (const Const* c = std::get_if<Const>(&v)) {
    Const out = *c;
    out.dims = out_dims;
    out.initializer = c->initializer;
    return cx.Set(node, 0, out);
  }
  if (const RowStat* s = std::get_if<RowStat>(&v)) {
    RowStat out = *s;
    out.dims = out_dims;
    return cx.Set(node, 0, out);
  }
  Act x = std::get<Act>(v);
  cx.Set(node, 0, ReshapeActImpl(cx, x, out_dims, node));
}

void LowerReshape(Context& cx, const OnnxNode& node) {
  const Value& v = cx.Get(node, 0);
  SetReshaped(cx, node, v, ReshapeDims(cx, node, DimsOf(v)));
}
void LowerFlatten(Context& cx, const OnnxNode& node) {
  const Value& v = cx.Get(node, 0);
  SetReshaped(cx, node, v, FlattenDims(cx, node, DimsOf(v)));
}
void LowerSqueeze(Context& cx, const OnnxNode& node) {
  const Value& v = cx.Get(node, 0);
  SetReshaped(cx, node, v, SqueezeDims(cx, node, DimsOf(v)));
}
void LowerUnsqueeze(Context& cx, const OnnxNode& node) {
  const Value& v = cx.Get(node, 0);
  SetReshaped(cx, node, v, UnsqueezeDims(cx, node, DimsOf(v)));
}

void LowerExpand(Context& cx, const OnnxNode& node) {
  const Value& v = cx.Get(node, 0);
  std::vector<int64_t> shape = cx.NeedInts(node, 1, "the shape");
  bool ok = true;
  std::vector<int64_t> out_dims = Broadcast(DimsOf(v), shape, ok);
  if (!ok) cx.Fail(node, "shapes do not broadcast");
  cx.CheckDims(node, out_dims);  // before any product of them
  if (const Const* c = std::get_if<Const>(&v)) {
    Const out = *c;
    out.dims = out_dims;
    const Const ones{{}, std::vector<double>{1}, false, false, ""};
    out.values = FoldBinary("Mul", *c, ones, out_dims);
    return cx.Set(node, 0, out);
  }
  if (const RowStat* s = std::get_if<RowStat>(&v)) {
    // F.normalize's norm expanded to its source's shape: its consumers broadcast it anyway.
    RowStat out = *s;
    out.dims = out_dims;
    return cx.Set(node, 0, out);
  }
  Act x = cx.NeedAct(node, 0);
  if (Product(out_dims) == Elems(x)) return cx.Set(node, 0, ReshapeActImpl(cx, x, out_dims, node));
  // A broadcast of a computed value (grouped-query attention's repeated key/value heads, a
  // padding mask over the heads): copies of its elements, gathered by one Layout op at the
  // expanded size when a consumer reads it.
  cx.Set(node, 0, cx.Pending(node, x, out_dims, false));
}

void LowerTranspose(Context& cx, const OnnxNode& node) {
  const Value& v = cx.Get(node, 0);
  std::vector<int64_t> in_dims = DimsOf(v);
  std::vector<int64_t> perm = Attr{node}.Ints("perm");
  const int r = int(in_dims.size());
  if (perm.empty()) for (int i = r - 1; i >= 0; --i) perm.push_back(i);
  if (int(perm.size()) != r) cx.Fail(node, "perm does not match the rank");
  std::vector<int64_t> out_dims;
  std::vector<char> seen(r, 0);
  for (int i = 0; i < r; ++i) {
    if (perm[i] < 0 || perm[i] >= r || seen[perm[i]]) cx.Fail(node, "perm " + DimsText(perm) + " is not a permutation of the axes");
    seen[perm[i]] = 1;
    out_dims.push_back(in_dims[perm[i]]);
  }
  if (const Const* c = std::get_if<Const>(&v)) {
    Const out = *c;
    out.dims = out_dims;
    if (out.values && int64_t(out.values->size()) == Product(in_dims) && Product(in_dims) <= kMaxConstantElements)
      out.values = TransposeValues(in_dims, *out.values, perm);  // shape arithmetic (F.pad's reversed pads)
    else
      out.values.reset();
    return cx.Set(node, 0, out);
  }
  if (std::holds_alternative<RowStat>(v)) cx.Fail(node, "transposing a row statistic is not supported");
  cx.Set(node, 0, TransposeAct(cx, node, std::get<Act>(v), perm));
}

}  // namespace

Act ReshapeAct(Context& cx, const OnnxNode& node, const Act& x, const std::vector<int64_t>& dims) {
  return ReshapeActImpl(cx, x, dims, node);
}

Act TransposeAct(Context& cx, const OnnxNode& node, const Act& x, const std::vector<int64_t>& perm) {
  const int r = int(x.dims.size());
  std::vector<int64_t> out_dims;
  std::vector<int> inv(r);
  for (int i = 0; i < r; ++i) {
    out_dims.push_back(x.dims[perm[i]]);
    inv[perm[i]] = i;
  }
  if (x.pending()) {
    std::vector<int> parts;
    for (int ax : x.part_axes) parts.push_back(inv[ax]);
    return cx.Pending(node, x, out_dims, false, x.col_axis >= 0 ? inv[x.col_axis] : -1, parts);
  }
  Act out = x;
  out.dims = out_dims;
  if (x.col_axis >= 0) out.col_axis = inv[x.col_axis];
  for (int& ax : out.row_axes) ax = inv[ax];
  for (int& ax : out.part_axes) ax = inv[ax];
  // Rows keep their storage order: a later reshape checks that it is still the ONNX order
  // (RowsInOnnxOrder), since a transpose that reorders sized row axes moves data.
  return out;
}

ConverterTable ReshapeConverters() {
  return {
      {"Reshape", LowerReshape},
      {"Flatten", LowerFlatten},
      {"Squeeze", LowerSqueeze},
      {"Unsqueeze", LowerUnsqueeze},
      {"Expand", LowerExpand},
      {"Transpose", LowerTranspose},
  };
}

}  // namespace annealer::lowering
