// The converters of the ONNX lowering: op type (and opset range) -> the function that lowers a
// node of that type. One file per op family defines its converters and lists them in its table;
// registry.cc joins the tables once. docs/architecture.md ("The import front end") says how to
// add one.
//
// Opset ranges: where an op's signature changed between opsets in a way the lowering reads
// differently (Slice's attributes before 10 and inputs from 10; Softmax's 2-D coercion before 13
// and single axis from 13; Resize's scales at input 1 in opset 10 and input 2 from 11), the op
// has one converter per range. Ops whose attribute became an input (Squeeze, Unsqueeze, Split,
// Reduce*, Pad) keep one converter that reads the attribute, else the input, at any opset:
// converted models often carry the old spelling under a newer opset.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "src/import/lowering/context.h"
#include "src/import/onnx_graph.h"

namespace annealer::lowering {

using Converter = void (*)(Context& cx, const OnnxNode& node);
// Whether input `input` of the node is a weight slot (Conv's weight and bias, MatMul's right
// operand): a graph input read only in weight slots is a parameter without data, not an
// activation (weight-stripped models, exports that pass weights as inputs). The graph gives the
// operands' shapes and which are initializers.
using WeightInput = bool (*)(const OnnxGraph& g, const OnnxNode& node, size_t input);

inline constexpr int64_t kAnyOpset = std::numeric_limits<int64_t>::max();

// Lowers `op_type` for the default-domain opsets since <= opset < until.
struct ConverterEntry {
  std::string op_type;
  Converter lower = nullptr;
  int64_t since = 0;
  int64_t until = kAnyOpset;
  WeightInput weight_input = nullptr;  // none: no input is a weight slot
};
using ConverterTable = std::vector<ConverterEntry>;

// The family tables, one per file of src/import/lowering/.
ConverterTable ConstantConverters();      // constants.cc
ConverterTable ConvConverters();          // conv.cc
ConverterTable MatMulConverters();        // matmul.cc
ConverterTable NormalizationConverters(); // normalization.cc
ConverterTable ReshapeConverters();       // reshape.cc
ConverterTable DataMovementConverters();  // data_movement.cc
ConverterTable ElementwiseConverters();   // elementwise.cc
ConverterTable RecurrentConverters();     // recurrent.cc
ConverterTable AttentionConverters();     // attention.cc

// All converters, built from the family tables on first use. Building checks that no two
// entries of one op type overlap in opsets (a std::logic_error: a programming error).
const ConverterTable& Converters();
// The entry for an op type at `opset`, or nullptr.
const ConverterEntry* FindConverter(const std::string& op_type, int64_t opset);
// Whether input `input` of the node is a weight slot of its converter at the graph's opset.
bool IsWeightInput(const OnnxGraph& g, const OnnxNode& node, size_t input);
// The registered op types, sorted, each once.
std::vector<std::string> RegisteredOpTypes();
// The opsets an op type has converters for: "opsets 1 to 9, 10 and later"; "" if none.
std::string ConverterOpsets(const std::string& op_type);

// The error of an op whose shapes depend on the data (NMS, Loop, an If on a computed condition).
inline constexpr const char* kDataDependentShapes =
    "data-dependent shapes (detection post-processing, control flow) cannot be scheduled ahead of time; "
    "export the network without them (the backbone and the heads' raw outputs; see docs/model-import.md)";

// Lowers one node with its converter; fails (one line naming the node) on another domain or an
// op type without a converter at the model's opset (the message lists the op types there are).
void LowerNode(Context& cx, const OnnxNode& node);

}  // namespace annealer::lowering
