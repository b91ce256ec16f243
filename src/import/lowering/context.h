// What every converter (src/import/lowering/registry.h) works with: the graph, the value bound
// to each ONNX name so far (values.h), and the problem being built (problem_builder.h).
//
// Protocol: a converter reads its inputs with Get/NeedConst/NeedInts/NeedAct, adds tensors and
// ops through problem(), and binds each output with Set. Nodes are lowered in graph order, so an
// input is bound before it is read; an unbound input is an error naming the node.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "src/import/lowering/problem_builder.h"
#include "src/import/lowering/values.h"
#include "src/import/onnx_graph.h"

namespace annealer::lowering {

// The name suffix of part i of a value split into `count` parts: "" for one part, else "[i]".
// (Built by appends: GCC 12 flags `"[" + std::to_string(i)` with a false -Wrestrict.)
inline std::string PartSuffix(int64_t i, int64_t count) {
  if (count <= 1) return {};
  std::string s = "[";
  s += std::to_string(i);
  s += ']';
  return s;
}

class Context {
 public:
  Context(const OnnxGraph& g, const LoweringHardware& hw) : g_(g), problem_(g.origin, hw) {}

  const OnnxGraph& graph() const { return g_; }
  int64_t opset() const { return g_.opset; }
  ProblemBuilder& problem() { return problem_; }
  const Tensor& tensor(TensorId t) const { return problem_.tensor(t); }

  // Throws InputError "<file>: node '<name>' (<op>): <what>" (one line).
  [[noreturn]] void Fail(const OnnxNode& node, const std::string& what) const { FailAt(g_.origin, node, what); }
  // a * b of dims or attributes, failing (not overflowing) on absurd ones.
  int64_t Mul(const OnnxNode& node, int64_t a, int64_t b) const;
  // Every value a node makes is within kMaxValueElements (src/import/onnx_graph.h).
  void CheckDims(const OnnxNode& node, const std::vector<int64_t>& dims) const;

  // ---- reading inputs
  const Value& Get(const OnnxNode& node, size_t i) const;
  bool HasInput(const OnnxNode& node, size_t i) const { return i < node.inputs.size() && !node.inputs[i].empty(); }
  const Const* GetConst(const OnnxNode& node, size_t i) const { return std::get_if<Const>(&Get(node, i)); }
  const Const& NeedConst(const OnnxNode& node, size_t i, const std::string& what) const;
  // The values of a constant input with inline data, rounded to integers.
  std::vector<int64_t> NeedInts(const OnnxNode& node, size_t i, const std::string& what) const;
  // A copy of an activation input, materialized (a graph input becomes its tensor on first use;
  // a pending value is gathered in its default layout, once: see Resolved).
  Act NeedAct(const OnnxNode& node, size_t i);
  // A constant used as data (a parameter read as an activation: learned queries or latents; a
  // value the exporter folded: RAFT's initial flow) is a tensor of its own, read from slow
  // memory like a model input. Constants of shape arithmetic (rank 1, scalars) are not data.
  static bool IsConstantData(const Const& c);
  // A statistic of the columns as a value of its own (kept as an output, or read beside an
  // operand of another shape than its source): each source times a ones column, priced at the
  // vector rate (rule column-reduction-matmul), summed when there are several. Dims: the
  // source's with the column axis 1.
  Act StatValue(const OnnxNode& node, const RowStat& s);
  Act ConstantData(const Const& c);
  // x with parts: a graph input made its tensor, a pending value gathered in its default layout
  // (when x is a name's binding, the name is rebound to the gathered value: gathered once).
  Act Resolved(const OnnxNode& node, const Act& x);

  // ---- rearranging (Layout ops, docs/cost-model.md L1-L6)
  // x laid out with `col_axis` as the columns and one part per index of `part_axes` (the other
  // axes are the rows, in ONNX order): x itself when it already is (HasLayout), else one Layout
  // op per part gathering it from x's tensors (or a pending value's source).
  Act Relayout(const OnnxNode& node, const Act& x, int col_axis, const std::vector<int>& part_axes = {});
  // The value `dims` rearranged from x (pending, see Act). `reshape_only`: ONNX's flat order is
  // kept (a Reshape, Flatten, Squeeze, Unsqueeze); a chain of reshapes back to the source's dims
  // is the source itself.
  // Its layout when gathered without a consumer's wish: `col_axis` and `part_axes` when given
  // (a slice or pad keeps its source's axes), else the default channels-last layout.
  Act Pending(const OnnxNode& node, const Act& x, std::vector<int64_t> dims, bool reshape_only, int col_axis = -1,
              std::vector<int> part_axes = {});
  // Pending with x's own layout: for a value of x's rank whose axes mean what x's do.
  Act PendingLike(const OnnxNode& node, const Act& x, std::vector<int64_t> dims) {
    return Pending(node, x, std::move(dims), false, x.col_axis, x.part_axes);
  }
  // Makes a graph input (or embedding rows) its tensor, once: the binding is updated too. A
  // layout with parts (an attention input's heads) makes a tensor per part. The first reader of
  // a graph input, through whichever view of it, lays it out: a view read later in another shape
  // or layout, and the graph input itself, become rearrangements of those tensors (pending,
  // gathered when read), never a second copy of the input.
  Act& Materialized(Act& a);

  // ---- binding outputs
  // Binds output `out` of the node (no-op for an absent output), naming its tensors.
  void Set(const OnnxNode& node, size_t out, Value v);
  // A graph output that is still a pending rearrangement is gathered (its Layout op is the
  // last word of the model: the output must exist in slow memory).
  void ResolveOutput(const std::string& name);
  // Binds a name as is (initializers, graph inputs, outputs no one reads).
  void Bind(const std::string& name, Value v) { values_[name] = std::move(v); }

  // Loops unrolled (constants.cc): the body nodes lowered so far, nested loops included; a file
  // whose loops would unroll past `limit` nodes fails naming the node (no runaway unrolling).
  void CountUnrolled(const OnnxNode& node, int64_t nodes, int64_t limit) {
    unrolled_ += nodes;
    if (unrolled_ > limit) Fail(node, "the loops unroll into more than " + std::to_string(limit) + " nodes");
  }

  // ONNX sequences (SequenceEmpty/Insert/At, a Loop's carried list): their elements' values.
  void BindSequence(const std::string& name, std::vector<Value> items) { sequences_[name] = std::move(items); }
  const std::vector<Value>* Sequence(const std::string& name) const {
    auto it = sequences_.find(name);
    return it == sequences_.end() ? nullptr : &it->second;
  }

  // Parts of the same count and 2-D shapes (or widths).
  bool SameShapes(const Act& a, const Act& b) const;
  bool SameWidths(const Act& a, const Act& b) const;

 private:
  const OnnxGraph& g_;
  ProblemBuilder problem_;
  std::map<std::string, Value> values_;
  std::map<std::string, std::vector<Value>> sequences_;
  std::map<std::string, Act> inputs_;  // graph inputs (and embedding rows) made tensors, by Act::input
  int64_t unrolled_ = 0;
  int64_t bindings_ = 0;  // serials of the pending values Set binds (Act::binding)
};

}  // namespace annealer::lowering
