// An ONNX model as plain data: the nodes in a topological order, the initializers' shapes (and
// the values of the small constant ones that shape arithmetic needs), the graph inputs with their
// possibly dynamic dims. This is the only file that
// sees protobuf: the lowering (src/import/model_lowering.h) works on these structs, so it can be tested
// and fuzzed without writing protobuf.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace annealer {

// A dimension is a size (>= 0) or dynamic (kDynamicDim, with the symbol in dim_params).
inline constexpr int64_t kDynamicDim = -1;

struct OnnxSubgraph;

struct OnnxAttribute {
  std::vector<int64_t> ints;         // INT or INTS
  std::vector<double> floats;        // FLOAT or FLOATS
  std::string text;                  // STRING
  std::vector<std::string> texts;    // STRINGS (an RNN's activations)
  bool has_tensor = false;           // TENSOR (Constant's value): in tensor_*
  std::vector<int64_t> tensor_dims;
  std::optional<std::vector<double>> tensor_values;  // when the data is inline and small
  bool tensor_is_float = false;
  std::shared_ptr<const OnnxSubgraph> graph;  // GRAPH (If's branches); null past kMaxSubgraphDepth
};

struct OnnxNode {
  std::string name;       // as in the file; "<op_type>#<index>" when the file has none
  std::string op_type;
  std::string domain;
  std::vector<std::string> inputs;   // "" = an omitted optional input
  std::vector<std::string> outputs;
  std::map<std::string, OnnxAttribute> attributes;
  // The outer values its subgraphs (an If's branches) read by name: readers of a value count them.
  std::vector<std::string> branch_reads;
};

// A subgraph attribute (an If's branch): its nodes in file order (they read the outer graph's
// values by name) and its outputs.
struct OnnxSubgraph {
  std::vector<OnnxNode> nodes;
  std::vector<std::string> inputs;   // its own (a Loop body's iteration count and state), initializers too
  std::vector<std::string> outputs;
  bool has_initializers = false;
};
inline constexpr int kMaxSubgraphDepth = 4;

// The outer values a subgraph's nodes read (every name it neither makes nor takes as its own
// input or initializer), nested ones included.
std::vector<std::string> SubgraphOuterReads(const OnnxSubgraph& g);

struct OnnxInitializer {
  std::vector<int64_t> dims;
  bool is_float = false;   // a floating-point element type (weights); else integer/bool
  // The values, when stored inline and at most kMaxConstantElements (shape constants, scalars).
  std::optional<std::vector<double>> values;
};

struct OnnxValueInfo {
  std::vector<int64_t> dims;               // kDynamicDim where dynamic
  std::vector<std::string> dim_params;     // the symbol of each dynamic dim ("" otherwise)
  bool known_rank = false;
};

struct OnnxGraph {
  std::string origin;  // the file, for messages
  int64_t opset = 0;   // of the default domain
  std::string producer;
  std::vector<OnnxNode> nodes;  // topologically sorted
  std::map<std::string, OnnxInitializer> initializers;
  std::vector<std::pair<std::string, OnnxValueInfo>> inputs;  // graph inputs, initializers excluded
  std::vector<std::string> outputs;
};

inline constexpr int64_t kMaxConstantElements = 4096;

// The most elements of one value: a problem tensor has at most 2^20 x 2^20 (kMaxTensorSide).
// Larger dims are rejected, so that products of some of a value's dims never overflow.
inline constexpr int64_t kMaxValueElements = int64_t{1} << 40;
// All dims >= 0 and their product, zeros left out, at most kMaxValueElements.
bool DimsWithinLimit(const std::vector<int64_t>& dims);

// Reads and checks an ONNX file: not ONNX, truncated, no graph, a node using a value nothing
// defines, a cycle. `input_dims` fixes graph input shapes (required for dynamic dims; the error
// names the input and its dynamic dims). Runs no ONNX shape inference: the lowering derives every
// shape it uses. Throws InputError "<file>: ..." (one line).
OnnxGraph ReadOnnxFile(const std::string& path,
                       const std::map<std::string, std::vector<int64_t>>& input_dims);
// The same from bytes in memory (the fuzz target and tests); `origin` names them in messages.
OnnxGraph ParseOnnx(const std::string& bytes, const std::string& origin,
                    const std::map<std::string, std::vector<int64_t>>& input_dims);

// "input=1x3x224x224" -> {"input", {1,3,224,224}}; throws InputError naming the option.
std::pair<std::string, std::vector<int64_t>> ParseInputDims(const std::string& text);

}  // namespace annealer
