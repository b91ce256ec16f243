// Building the Problem of an ONNX lowering: tensors and ops with their origins, the pricing of
// MatMul and Pointwise ops, weights shared by name and shape, the stated approximations, and the
// counts of the import summary. It knows ONNX nodes only as the origin of what it adds.
//
// Invariants: every tensor has one origin and at most one producing op; an op that a rewrite
// replaces (SplitColumns) is marked dead, not erased, so ids stay stable until Finish, which
// keeps the live ops in order and the tensors they use, renumbered.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "eval/model/problem.h"
#include "src/import/lowering/values.h"
#include "src/import/lowered_model.h"
#include "src/import/onnx_graph.h"

namespace annealer::lowering {

// "node '<name>' (<op>)"; names from the file may hold line breaks: messages stay one line.
std::string NodeField(const OnnxNode& node);
// Throws InputError "<origin>: node '<name>' (<op>): <what>" (one line).
[[noreturn]] void FailAt(const std::string& origin, const OnnxNode& node, const std::string& what);

// The sentence of every "strided-view" note (View below).
inline constexpr const char* kViewWhat =
    "a view with other rows (stride, pooling window, padding, resize) is a Layout op: the DMA gathers "
    "it from the source in slow memory; elements = the views' sizes";

class ProblemBuilder {
 public:
  ProblemBuilder(std::string origin, const LoweringHardware& hw) : origin_(std::move(origin)), hw_(hw) {}

  const LoweringHardware& hw() const { return hw_; }
  const Tensor& tensor(TensorId t) const { return p_.tensors[t]; }
  TensorOrigin& tensor_origin(TensorId t) { return tensor_origins_[t]; }
  ImportSummary& summary() { return summary_; }

  TensorId NewTensor(Elements rows, Elements cols, TensorOrigin origin);
  OpId AddOp(Op op, OpOrigin origin);
  OpId AddOp(OpKind kind, std::vector<TensorId> inputs, TensorId out, double base, const OnnxNode& node,
             const std::string& role);
  // l @ r. Base cost: `base`, else the profile's MatMul base per native block of K. A compute
  // role ("matmul", "conv", "conv-tap") adds M·K·N to the model's MACs.
  TensorId MatMul(TensorId l, TensorId r, const OnnxNode& node, const std::string& role, std::optional<double> base = {});
  // The sum over the columns of `t` (rows x 1): `t` times a ones column named `ones_name`,
  // priced at the vector rate per native block of columns, noted as rule column-reduction-matmul.
  TensorId ColumnSum(TensorId t, const OnnxNode& node, const std::string& ones_name);
  // One elementwise op over same-shaped operands (duplicates read once), `passes` vector passes.
  TensorId Pointwise(std::vector<TensorId> inputs, double passes, const OnnxNode& node, const std::string& role);
  // The weight tensor `name`+`suffix` of rows x cols, one per name, suffix and shape.
  TensorId Weight(const std::string& name, Elements rows, Elements cols, const std::string& suffix = "");

  // One more occurrence of approximation `rule` (`what` is kept from the first).
  void Note(const std::string& rule, const std::string& what, int64_t elements, int64_t extra_macs = 0);
  // A constant operand smaller than the activation (bias, scale, a class token) is folded into
  // its op: its parameters count, its loads do not.
  void NoteBroadcast(const Const& c);

  // A rows x cols tensor rearranged from `inputs` (a transpose, a reshape across rows and
  // columns, a slice, a pad, a broadcast, a gather of rows): one Layout op (docs/cost-model.md
  // L1-L6: its inputs go to slow memory, the DMA gathers its tiles), no compute. `value` names
  // the tensor. Counted in the summary's "layout" line with the elements it gathers.
  // `note`: false when the caller states the op under a rule of its own (View).
  TensorId Layout(const std::vector<TensorId>& inputs, Elements rows, Elements cols, const OnnxNode& node,
                  const std::string& value, bool note = true);
  // Splits tensor t into `parts` equal column blocks by splitting the ops that make it (a
  // projection MatMul splits its weight by columns: exact MACs and parameters; a Pointwise op
  // splits every operand; a Layout op gathers each block). Fails if t has more than
  // `allowed_consumers` live consumers. A tensor split once into `parts` gives the same blocks
  // again: an operand shared by two split ops (x and sigmoid(x) of a SiLU) is split once.
  std::vector<TensorId> SplitColumns(TensorId t, int parts, const OnnxNode& node, int allowed_consumers);
  // Whether SplitColumns(t, parts, ..., allowed_consumers) would succeed, without changing anything.
  bool CanSplitColumns(TensorId t, int parts, int allowed_consumers) const;
  // A view that changes the row count (stride, pooling windows, padding, resize, row concat or
  // gather): a Layout op gathers the rows2 x width view of `src`; with `passes` > 0 (pooling,
  // interpolation) a Pointwise op of that many passes follows. `rule` and `what` go to the
  // summary with the view's size.
  TensorId View(TensorId src, Elements rows2, double passes, const OnnxNode& node, const std::string& rule,
                const std::string& what);

  // The finalized problem with origins and summary; call once, at the end.
  LoweredModel Finish();

 private:
  [[noreturn]] void Fail(const OnnxNode& node, const std::string& what) const { FailAt(origin_, node, what); }
  int AliveConsumers(TensorId t) const;

  std::string origin_;
  LoweringHardware hw_;
  Problem p_;
  std::vector<bool> alive_;
  std::vector<OpId> producer_;
  std::vector<OpOrigin> op_origins_;
  std::vector<TensorOrigin> tensor_origins_;
  std::map<std::string, TensorId> weights_;
  std::map<std::pair<TensorId, int>, std::vector<TensorId>> splits_;  // SplitColumns' results
  std::vector<Approximation> approximations_;
  ImportSummary summary_;
};

}  // namespace annealer::lowering
