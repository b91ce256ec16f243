// The values of the ONNX lowering: what each ONNX value name is bound to while the graph is
// walked (src/import/lowering/context.h keeps the bindings). No problem building here: these are
// plain data and the layout arithmetic on them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "eval/model/problem.h"
#include "src/import/onnx_graph.h"

namespace annealer::lowering {

int64_t Product(const std::vector<int64_t>& v, size_t from = 0, size_t to = SIZE_MAX);
inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
// The most separate matrices one value is gathered into (windows x heads of a batched MatMul).
inline constexpr int64_t kMaxLayoutParts = 4096;
std::string DimsText(const std::vector<int64_t>& d);  // "[1,3,224,224]"

// A runtime value lowered to problem tensors. Its N-D ONNX shape maps to 2-D parts: the
// columns are `col_axis`, the rows every axis in `row_axes` (in storage order); each index of
// the `part_axes` is a separate tensor (attention heads), or, when `col_split`, the parts are
// equal column blocks of `col_axis` (heads merged back, consumed blockwise).
//
// A pending value is a rearrangement of another activation that no relabelling of the 2-D
// layout expresses (a reshape across rows and columns, a transpose of a pending value, a pad of
// a channels-last value, a concatenation along rows): it has dims and the default layout but no
// parts until a consumer asks for a layout (Context::Relayout), when Layout ops gather it from
// `source`'s parts. A chain of such views costs one Layout op, in the layout its consumer wants.
struct Act {
  std::vector<int64_t> dims;
  std::vector<int> row_axes;
  int col_axis = -1;
  std::vector<int> part_axes;
  bool col_split = false;
  std::vector<TensorId> parts;
  bool model_input = false;  // a graph input not yet made a tensor (a Conv may read it as im2col)
  // Of a model input: the graph input (or embedding rows) it is, whatever name a view of it
  // (a Transpose, a Reshape, an Identity) binds it under: its data is made tensors once.
  std::string input;
  std::string name;
  // Set iff pending: the materialized value it rearranges (of a concatenation, a value whose
  // parts are every input's tensors; only its parts are read then).
  std::shared_ptr<const Act> source;
  bool reshape_only = false;  // pending through reshapes only: ONNX's flat order of `source` kept
  // A pending value bound to `name` by Context::Set carries that binding's serial (0 otherwise:
  // a view a converter derives is not the binding, even under the same name): resolving it
  // rebinds the name to the gathered value, so a value is gathered once whoever reads it.
  int64_t binding = 0;
  bool pending() const { return source != nullptr; }
};
// A value known at import time: an initializer or folded shape arithmetic.
struct Const {
  std::vector<int64_t> dims;
  std::optional<std::vector<double>> values;
  bool is_float = false;
  bool initializer = false;
  std::string name;
};
// A reduction over the columns with keepdims (layer-norm means and variances spelled out): not a
// tensor; its consumers read its sources and pay its passes.
struct RowStat {
  std::vector<int64_t> dims;  // the reduced shape (the column axis has size 1)
  Act like;  // the layout of the source (the consumers' shape)
  std::vector<TensorId> sources;  // of part 0 (single-part sources only)
  double passes = 0;
};
using Value = std::variant<Act, Const, RowStat>;

std::vector<int64_t> DimsOf(const Value& v);

// A node's attributes with ONNX's defaults.
struct Attr {
  const OnnxNode& node;
  int64_t Int(const std::string& k, int64_t def) const;
  std::vector<int64_t> Ints(const std::string& k) const;
  double Float(const std::string& k, double def) const;
  std::string Text(const std::string& k) const;
  bool Has(const std::string& k) const { return node.attributes.count(k) > 0; }
};

// Channels-last 2-D layout: NCHW-like values (rank 4 or 5, from images) keep axis 1 as columns;
// rank 2 and sequence values (B, S, D) use the last axis. `col` overrides the column axis.
void SetChannelsLayout(Act& a, std::optional<int> col = std::nullopt);
// `col_axis` as the columns, a part per index of each of `part_axes` of size > 1 (axes out of
// range or the column axis ignored), the other axes the rows in ONNX order.
void SetLayout(Act& a, int col_axis, const std::vector<int>& part_axes);
// Rows x columns of each part.
std::pair<Elements, Elements> PartShape(const Act& a);
inline int64_t Elems(const Act& a) { return Product(a.dims); }
// Storage order of the rows must be the ONNX order for a reshape to be a relabelling.
bool RowsInOnnxOrder(const Act& x);
// Whether x's parts are laid out with `col_axis` as the columns, the other axes but
// `part_axes` (one part per index) as rows in ONNX order; size-1 axes do not matter.
bool HasLayout(const Act& x, int col_axis, const std::vector<int>& part_axes);
// Whether a and b lay the same data out alike: equal dims, column axis and part axes once the
// size-1 axes are dropped, rows in ONNX order in both ([64, 1, 256] and [1, 64, 256] by their
// last axis: one tensor for both).
bool SameDataLayout(const Act& a, const Act& b);

}  // namespace annealer::lowering
