#include "src/import/onnx_graph.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <queue>
#include <set>
#include <sstream>
#include <tuple>

#include <google/protobuf/unknown_field_set.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include "src/io/json_fields.h"
#include "src/io/message_text.h"

namespace annealer {
namespace {

// Names from the file (nodes, values, inputs) may hold line breaks: the message stays one line.
[[noreturn]] void Fail(const std::string& origin, const std::string& what) {
  throw InputError(origin, "", OneLineForMessage(what));
}

// As in the file; "<op_type>#<index>" when the file has none.
std::string NodeName(const onnx::NodeProto& node, int index) {
  return node.name().empty() ? node.op_type() + "#" + std::to_string(index) : node.name();
}

bool IsFloatType(int32_t t) {
  using T = onnx::TensorProto;
  return t == T::FLOAT || t == T::DOUBLE || t == T::FLOAT16 || t == T::BFLOAT16;
}

// Inline values of a small tensor, or nullopt (external, large, or an encoding we do not need).
std::optional<std::vector<double>> TensorValues(const onnx::TensorProto& t) {
  using T = onnx::TensorProto;
  int64_t count = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || d > kMaxConstantElements) return std::nullopt;
    count *= d;
    if (count > kMaxConstantElements) return std::nullopt;
  }
  if (t.data_location() == T::EXTERNAL) return std::nullopt;
  std::vector<double> out;
  const std::string& raw = t.raw_data();
  auto from_raw = [&](size_t width, auto decode) -> std::optional<std::vector<double>> {
    if (raw.size() != static_cast<size_t>(count) * width) return std::nullopt;
    for (int64_t i = 0; i < count; ++i) out.push_back(decode(raw.data() + i * width));
    return out;
  };
  switch (t.data_type()) {
    case T::FLOAT:
      if (!raw.empty()) return from_raw(4, [](const char* p) { float v; std::memcpy(&v, p, 4); return double(v); });
      if (t.float_data_size() != count) return std::nullopt;
      for (float v : t.float_data()) out.push_back(v);
      return out;
    case T::DOUBLE:
      if (!raw.empty()) return from_raw(8, [](const char* p) { double v; std::memcpy(&v, p, 8); return v; });
      if (t.double_data_size() != count) return std::nullopt;
      for (double v : t.double_data()) out.push_back(v);
      return out;
    case T::INT64:
      if (!raw.empty()) return from_raw(8, [](const char* p) { int64_t v; std::memcpy(&v, p, 8); return double(v); });
      if (t.int64_data_size() != count) return std::nullopt;
      for (int64_t v : t.int64_data()) out.push_back(double(v));
      return out;
    case T::INT32: case T::INT16: case T::INT8: case T::UINT8: case T::UINT16: case T::BOOL:
      if (!raw.empty()) {
        size_t w = t.data_type() == T::INT32 ? 4 : (t.data_type() == T::INT16 || t.data_type() == T::UINT16) ? 2 : 1;
        int32_t type = t.data_type();
        return from_raw(w, [w, type](const char* p) {
          if (w == 4) { int32_t v; std::memcpy(&v, p, 4); return double(v); }
          if (w == 2) {
            if (type == T::INT16) { int16_t v; std::memcpy(&v, p, 2); return double(v); }
            uint16_t v; std::memcpy(&v, p, 2); return double(v);
          }
          if (type == T::INT8) return double(static_cast<int8_t>(*p));
          return double(static_cast<uint8_t>(*p));
        });
      }
      if (t.int32_data_size() != count) return std::nullopt;
      for (int32_t v : t.int32_data()) out.push_back(v);
      return out;
    default:
      return std::nullopt;
  }
}


// An example for dynamic dims, marked as one: a batch (leading dim) of 1, a spatial dim of an
// image (rank 4-5, axes 2+) of 224, any other (sequence, features) of 128; "[name]" says which
// dims are the user's to choose.
std::string ExampleDims(const OnnxValueInfo& info) {
  std::string e, named;
  const size_t r = info.dims.size();
  for (size_t i = 0; i < r; ++i) {
    int64_t d = info.dims[i];
    if (d < 0) {
      d = i == 0 ? 1 : ((r == 4 || r == 5) && i >= 2 ? 224 : 128);
      const std::string param = i < info.dim_params.size() ? info.dim_params[i] : "";
      named += (named.empty() ? "" : ", ") + (param.empty() ? "dim " + std::to_string(i) : param) + " = " + std::to_string(d);
    }
    // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) on
    // `const char* + std::string&&`, which inserts at the front.
    if (i) e += 'x';
    e += std::to_string(d);
  }
  return e + " with " + named + " as examples";
}
OnnxValueInfo ReadValueInfo(const onnx::ValueInfoProto& v) {
  OnnxValueInfo info;
  if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return info;
  info.known_rank = true;
  for (const auto& d : v.type().tensor_type().shape().dim()) {
    if (d.has_dim_value() && d.dim_value() >= 0) {
      info.dims.push_back(d.dim_value());
      info.dim_params.emplace_back();
    } else {
      info.dims.push_back(kDynamicDim);
      info.dim_params.push_back(d.has_dim_param() ? d.dim_param() : "?");
    }
  }
  return info;
}

std::string DimsText(const std::vector<int64_t>& dims, const std::vector<std::string>& params) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += "x";
    s += dims[i] >= 0 ? std::to_string(dims[i]) : (params[i].empty() ? "?" : params[i]);
  }
  return s;
}

OnnxAttribute ReadAttribute(const onnx::AttributeProto& a, int depth = 0);

OnnxNode ReadNode(const onnx::NodeProto& node, int index, int depth) {
  OnnxNode out;
  out.op_type = node.op_type();
  out.domain = node.domain();
  out.name = NodeName(node, index);
  out.inputs.assign(node.input().begin(), node.input().end());
  out.outputs.assign(node.output().begin(), node.output().end());
  for (const auto& a : node.attribute()) out.attributes[a.name()] = ReadAttribute(a, depth);
  for (const auto& [key, a] : out.attributes)
    if (a.graph)
      for (const std::string& in : SubgraphOuterReads(*a.graph))
        if (std::find(out.branch_reads.begin(), out.branch_reads.end(), in) == out.branch_reads.end()) out.branch_reads.push_back(in);
  return out;
}

OnnxAttribute ReadAttribute(const onnx::AttributeProto& a, int depth) {
  OnnxAttribute out;
  using A = onnx::AttributeProto;
  switch (a.type()) {
    case A::INT: out.ints.push_back(a.i()); break;
    case A::INTS: out.ints.assign(a.ints().begin(), a.ints().end()); break;
    case A::FLOAT: out.floats.push_back(a.f()); break;
    case A::FLOATS: out.floats.assign(a.floats().begin(), a.floats().end()); break;
    case A::STRING: out.text = a.s(); break;
    case A::STRINGS: out.texts.assign(a.strings().begin(), a.strings().end()); break;
    case A::TENSOR:
      out.has_tensor = true;
      out.tensor_dims.assign(a.t().dims().begin(), a.t().dims().end());
      out.tensor_values = TensorValues(a.t());
      out.tensor_is_float = IsFloatType(a.t().data_type());
      break;
    case A::GRAPH:
      if (depth < kMaxSubgraphDepth) {
        auto g = std::make_shared<OnnxSubgraph>();
        for (int i = 0; i < a.g().node_size(); ++i) g->nodes.push_back(ReadNode(a.g().node(i), i, depth + 1));
        for (const auto& in : a.g().input()) g->inputs.push_back(in.name());
        for (const auto& t : a.g().initializer()) g->inputs.push_back(t.name());
        for (const auto& o : a.g().output()) g->outputs.push_back(o.name());
        g->has_initializers = a.g().initializer_size() > 0 || a.g().sparse_initializer_size() > 0;
        out.graph = std::move(g);
      }
      break;
    default: break;
  }
  return out;
}

// The lowering's window arithmetic divides by these and must not overflow: sizes in 1..2^20,
// pads in 0..2^20. The nodes of subgraphs (If's branches) too: the lowering walks into them.
void CheckNodeAttributes(const std::string& origin, const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes,
                         int depth = 0) {
  for (int i = 0; i < nodes.size(); ++i) {
    const auto& node = nodes[i];
    const std::string field = "node '" + NodeName(node, i) + "' (" + node.op_type() + "): ";
    if (node.output_size() == 0) Fail(origin, field + "the node has no outputs");
    for (const auto& a : node.attribute()) {
      const bool sizes = a.name() == "strides" || a.name() == "dilations" || a.name() == "kernel_shape";
      const int64_t low = a.name() == "pads" ? 0 : 1;
      auto bad = [&](int64_t v) { return v < low || v > (int64_t{1} << 20); };
      const bool pads = a.name() == "pads" && node.op_type() != "Pad";  // Pad-2's may crop
      if ((sizes || pads) && std::any_of(a.ints().begin(), a.ints().end(), bad))
        Fail(origin, field + "attribute " + a.name() + (low ? " must be in 1..1048576" : " must be in 0..1048576"));
      if (a.name() == "group" && a.i() <= 0) Fail(origin, field + "attribute group must be positive");
      if (a.has_g() && depth < kMaxSubgraphDepth) CheckNodeAttributes(origin, a.g().node(), depth + 1);
    }
  }
}

// Fields of newer ONNX (up to IR 10) that libonnx 1.12's protobuf predates, which its parser keeps as
// unknown fields: a local function's attribute defaults (FunctionProto.attribute_proto, field 11)
// and the overload that a function and a call name (FunctionProto.overload, 13;
// NodeProto.overload, 8): from IR 10 a function is known by domain, name and overload.
constexpr int kFunctionAttributeDefaults = 11;
constexpr int kFunctionOverload = 13;
constexpr int kNodeOverload = 8;

std::vector<std::string> UnknownBytes(const google::protobuf::Message& m, int number) {
  std::vector<std::string> out;
  const google::protobuf::UnknownFieldSet& fields = m.GetReflection()->GetUnknownFields(m);
  for (int i = 0; i < fields.field_count(); ++i) {
    const google::protobuf::UnknownField& f = fields.field(i);
    if (f.number() == number && f.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      out.push_back(f.length_delimited());
  }
  return out;
}

// A string field: the last occurrence counts (protobuf's rule), "" when absent.
std::string UnknownString(const google::protobuf::Message& m, int number) {
  std::vector<std::string> all = UnknownBytes(m, number);
  return all.empty() ? std::string() : std::move(all.back());
}

// ONNX local functions (FunctionProto: torch's `export_modules_as_functions=True` writes one per
// module class, and the graph calls them as ops of a custom domain) are expanded in place before
// anything else reads the graph: every call becomes the function's nodes, its formal inputs and
// outputs renamed to the call's values (an omitted input to ""), its other values to
// "<function>#<call number>/<name>", each attribute reference bound to the call's attribute of
// that name, else to the function's default for it, else left out (ONNX's rule); nodes
// named "<call>/<node>". A call names its function by domain, op type and overload (IR 10; ""
// before). Calls inside a function expand in turn, with the attributes bound at the level above.
class FunctionInliner {
 public:
  FunctionInliner(const std::string& origin, const onnx::ModelProto& model, int64_t opset)
      : origin_(origin), opset_(opset) {
    for (const auto& f : model.functions()) {
      functions_[{f.domain(), f.name(), UnknownString(f, kFunctionOverload)}] = &f;
      std::vector<onnx::AttributeProto>& defaults = defaults_[&f];
      for (const std::string& bytes : UnknownBytes(f, kFunctionAttributeDefaults)) {
        if (!defaults.emplace_back().ParseFromString(bytes) || defaults.back().name().empty())
          Fail(origin_, "local function '" + f.domain() + "." + f.name() + "': attribute default " +
                            std::to_string(defaults.size() - 1) + " does not parse");
      }
    }
  }

  void Expand(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& in,
              google::protobuf::RepeatedPtrField<onnx::NodeProto>* out, int depth) {
    for (int i = 0; i < in.size(); ++i) {
      const onnx::NodeProto& node = in[i];
      const auto f = functions_.find({node.domain(), node.op_type(), UnknownString(node, kNodeOverload)});
      if (f == functions_.end()) {
        FailOnMissingOverload(node, i);
        onnx::NodeProto* copy = out->Add();
        *copy = node;
        for (auto& a : *copy->mutable_attribute())
          if (a.has_g()) ExpandGraph(a.mutable_g(), depth);
        for (auto& a : *copy->mutable_attribute())
          for (auto& g : *a.mutable_graphs()) ExpandGraph(&g, depth);
        Count(node, i);
        continue;
      }
      Count(node, i);  // calls too: functions of empty bodies calling each other twice would not end
      // Its nodes are lowered by the model's opset (the converters read one per graph): a body
      // written against another would be read by the wrong rules.
      for (const auto& imp : f->second->opset_import())
        if ((imp.domain().empty() || imp.domain() == "ai.onnx") && imp.version() != opset_)
          Fail(origin_, "node '" + NodeName(node, i) + "' (" + node.op_type() + "): its local function imports opset " +
                            std::to_string(imp.version()) + " of the default domain, the model " +
                            std::to_string(opset_) + "; export the model with one opset");
      if (depth >= kMaxDepth)
        Fail(origin_, "node '" + NodeName(node, i) + "' (" + node.op_type() + "): local functions nest deeper than " +
                          std::to_string(kMaxDepth) + " calls (a function calling itself?)");
      google::protobuf::RepeatedPtrField<onnx::NodeProto> body;
      Instantiate(*f->second, node, NodeName(node, i), &body);
      Expand(body, out, depth + 1);
    }
  }

 private:
  static constexpr int kMaxDepth = 64;
  static constexpr int64_t kMaxNodes = int64_t{1} << 21;

  // A call naming an overload the model does not define, of a function it defines under other
  // overloads: say so, rather than let the lowering report an operator of an unknown domain.
  void FailOnMissingOverload(const onnx::NodeProto& node, int index) const {
    std::string defined;
    for (auto it = functions_.lower_bound({node.domain(), node.op_type(), ""});
         it != functions_.end() && std::get<0>(it->first) == node.domain() && std::get<1>(it->first) == node.op_type();
         ++it)
      defined += std::string(defined.empty() ? "" : ", ") + "'" + std::get<2>(it->first) + "'";
    if (defined.empty()) return;
    Fail(origin_, "node '" + NodeName(node, index) + "' (" + node.op_type() + "): calls overload '" +
                      UnknownString(node, kNodeOverload) + "' of local function '" + node.domain() + "." +
                      node.op_type() + "', which the model defines only as overload " + defined);
  }

  void Count(const onnx::NodeProto& node, int index) {
    if (++nodes_ > kMaxNodes)
      Fail(origin_, "node '" + NodeName(node, index) + "' (" + node.op_type() + "): the local functions expand into more than " +
                        std::to_string(kMaxNodes) + " nodes and calls");
  }

  void ExpandGraph(onnx::GraphProto* g, int depth) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    Expand(g->node(), &nodes, depth);
    g->mutable_node()->Swap(&nodes);
  }

  void Instantiate(const onnx::FunctionProto& f, const onnx::NodeProto& call, const std::string& call_name,
                   google::protobuf::RepeatedPtrField<onnx::NodeProto>* body) {
    std::map<std::string, std::string> rename;
    for (int i = 0; i < f.input_size(); ++i) rename[f.input(i)] = i < call.input_size() ? call.input(i) : "";
    for (int i = 0; i < f.output_size() && i < call.output_size(); ++i) rename[f.output(i)] = call.output(i);
    // Numbered: a nested call's first output may be its caller's output, whose own values would
    // then share a prefix with it.
    const std::string prefix = call.op_type() + "#" + std::to_string(++calls_) + "/";
    std::map<std::string, const onnx::AttributeProto*> bound;
    for (const auto& a : call.attribute()) bound[a.name()] = &a;
    for (const auto& a : defaults_.at(&f)) bound.emplace(a.name(), &a);  // the call's come first
    auto name_of = [&](const std::string& v) {
      if (v.empty()) return v;
      const auto it = rename.find(v);
      return it != rename.end() ? it->second : prefix + v;
    };
    for (int i = 0; i < f.node_size(); ++i) {
      onnx::NodeProto* n = body->Add();
      *n = f.node(i);
      n->set_name(call_name + "/" + NodeName(f.node(i), i));
      Bind(n, name_of, bound);
    }
  }

  // Renames a node's values (and those of its subgraphs, which read the function's values by
  // name) and binds its attribute references.
  template <typename NameOf>
  static void Bind(onnx::NodeProto* n, const NameOf& name_of, const std::map<std::string, const onnx::AttributeProto*>& bound) {
    for (auto& v : *n->mutable_input()) v = name_of(v);
    for (auto& v : *n->mutable_output()) v = name_of(v);
    google::protobuf::RepeatedPtrField<onnx::AttributeProto> attributes;
    for (const auto& a : n->attribute()) {
      if (a.ref_attr_name().empty()) {
        *attributes.Add() = a;
        continue;
      }
      const auto it = bound.find(a.ref_attr_name());
      if (it == bound.end()) continue;
      onnx::AttributeProto* b = attributes.Add();
      *b = *it->second;
      b->set_name(a.name());
    }
    n->mutable_attribute()->Swap(&attributes);
    for (auto& a : *n->mutable_attribute()) {
      std::vector<onnx::GraphProto*> graphs;
      if (a.has_g()) graphs.push_back(a.mutable_g());
      for (auto& g : *a.mutable_graphs()) graphs.push_back(&g);
      for (onnx::GraphProto* g : graphs) {
        for (auto& v : *g->mutable_input()) v.set_name(name_of(v.name()));
        for (auto& v : *g->mutable_output()) v.set_name(name_of(v.name()));
        for (auto& t : *g->mutable_initializer()) t.set_name(name_of(t.name()));
        for (auto& v : *g->mutable_value_info()) v.set_name(name_of(v.name()));
        for (auto& sub : *g->mutable_node()) Bind(&sub, name_of, bound);
      }
    }
  }

  const std::string& origin_;
  const int64_t opset_;  // the model's, of the default domain
  // By domain, name and overload.
  std::map<std::tuple<std::string, std::string, std::string>, const onnx::FunctionProto*> functions_;
  std::map<const onnx::FunctionProto*, std::vector<onnx::AttributeProto>> defaults_;
  int64_t nodes_ = 0;
  int64_t calls_ = 0;
};

}  // namespace

std::vector<std::string> SubgraphOuterReads(const OnnxSubgraph& g) {
  std::set<std::string> made(g.inputs.begin(), g.inputs.end());
  std::vector<std::string> reads;
  auto read = [&](const std::string& name) {
    if (!name.empty() && !made.count(name) && std::find(reads.begin(), reads.end(), name) == reads.end()) reads.push_back(name);
  };
  for (const OnnxNode& n : g.nodes) {
    for (const std::string& in : n.inputs) read(in);
    for (const std::string& in : n.branch_reads) read(in);
    for (const std::string& o : n.outputs) made.insert(o);
  }
  for (const std::string& o : g.outputs) read(o);
  return reads;
}

bool DimsWithinLimit(const std::vector<int64_t>& dims) {
  int64_t product = 1;
  for (int64_t d : dims) {
    if (d < 0) return false;
    if (d > 0 && (__builtin_mul_overflow(product, d, &product) || product > kMaxValueElements)) return false;
  }
  return true;
}

std::pair<std::string, std::vector<int64_t>> ParseInputDims(const std::string& text) {
  const size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw InputError("--input " + text, "", "expected NAME=DIMS, e.g. input=1x3x224x224");
  std::vector<int64_t> dims;
  std::stringstream ss(text.substr(eq + 1));
  std::string part;
  while (std::getline(ss, part, 'x')) {
    size_t used = 0;
    long long v = -1;
    try { v = std::stoll(part, &used); } catch (...) { used = 0; }
    if (used != part.size() || part.empty() || v <= 0 || v > (1LL << 31))
      throw InputError("--input " + text, "", "dimension \"" + part + "\" is not a positive integer");
    dims.push_back(v);
  }
  return {text.substr(0, eq), dims};
}

OnnxGraph ParseOnnx(const std::string& bytes, const std::string& origin,
                    const std::map<std::string, std::vector<int64_t>>& input_dims) {
  onnx::ModelProto model;
  if (bytes.empty()) Fail(origin, "the file is empty");
  if (!model.ParseFromString(bytes))
    Fail(origin, "not an ONNX model (the protobuf does not parse: truncated or another format)");
  if (!model.has_graph() || model.graph().node_size() == 0)
    Fail(origin, "not an ONNX model (no graph, or a graph without nodes)");
  OnnxGraph g;
  g.origin = origin;
  g.producer = model.producer_name();
  for (const auto& imp : model.opset_import())
    if (imp.domain().empty() || imp.domain() == "ai.onnx") g.opset = imp.version();
  if (g.opset == 0) Fail(origin, "the model imports no opset of the default ONNX domain");

  onnx::GraphProto* graph = model.mutable_graph();
  if (model.functions_size() > 0) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> expanded;
    FunctionInliner(origin, model, g.opset).Expand(graph->node(), &expanded, 0);
    graph->mutable_node()->Swap(&expanded);
    model.clear_functions();
  }
  std::set<std::string> initializer_names;
  for (const auto& t : graph->initializer()) initializer_names.insert(t.name());

  // Fix the input dims first.
  std::set<std::string> used_inputs;
  for (auto& in : *graph->mutable_input()) {
    if (initializer_names.count(in.name())) continue;
    auto it = input_dims.find(in.name());
    if (it == input_dims.end()) continue;
    used_inputs.insert(in.name());
    auto* shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
    const OnnxValueInfo before = ReadValueInfo(in);
    if (before.known_rank && before.dims.size() != it->second.size())
      Fail(origin, "--input " + in.name() + ": the model's input has rank " +
                       std::to_string(before.dims.size()) + " (" + DimsText(before.dims, before.dim_params) +
                       "), the option gives " + std::to_string(it->second.size()) + " dims");
    for (size_t i = 0; i < it->second.size() && before.known_rank; ++i)
      if (before.dims[i] >= 0 && before.dims[i] != it->second[i])
        Fail(origin, "--input " + in.name() + ": dim " + std::to_string(i) + " is fixed at " +
                         std::to_string(before.dims[i]) + " in the model, the option gives " +
                         std::to_string(it->second[i]));
    shape->clear_dim();
    for (int64_t d : it->second) shape->add_dim()->set_dim_value(d);
  }
  for (const auto& [name, dims] : input_dims)
    if (!used_inputs.count(name)) {
      std::string names;
      for (const auto& in : graph->input())
        if (!initializer_names.count(in.name())) names += (names.empty() ? "" : ", ") + in.name();
      Fail(origin, "--input " + name + ": the model has no such input (its inputs: " + names + ")");
    }
  for (const auto& in : graph->input()) {
    if (initializer_names.count(in.name())) continue;
    OnnxValueInfo info = ReadValueInfo(in);
    if (!info.known_rank) Fail(origin, "graph input '" + in.name() + "' has no shape; give it with --input " + in.name() + "=DIMS");
    bool dynamic = false;
    for (int64_t d : info.dims) dynamic |= d < 0;
    if (dynamic)
      Fail(origin, "graph input '" + in.name() + "' has dynamic dims " + DimsText(info.dims, info.dim_params) +
                       "; give them with --input " + in.name() + "=DIMS (e.g. " + in.name() + "=" + ExampleDims(info) + ")");
    if (!DimsWithinLimit(info.dims))
      Fail(origin, "graph input '" + in.name() + "' of dims " + DimsText(info.dims, info.dim_params) + " is too large (more than " +
                       std::to_string(kMaxValueElements) + " elements)");
    g.inputs.emplace_back(in.name(), info);
  }

  CheckNodeAttributes(origin, graph->node());
  // An initializer without an element type, and a convolution's weight without dims, are malformed
  // (the fuzzer found them as a SEGV in libonnx 1.12's shape inference, which the import no longer runs).
  std::map<std::string, const onnx::TensorProto*> initializer_of;
  for (const auto& t : graph->initializer()) {
    if (t.data_type() == onnx::TensorProto::UNDEFINED)
      Fail(origin, "initializer '" + t.name() + "' has no element type (data_type 0)");
    initializer_of[t.name()] = &t;
  }
  for (int i = 0; i < graph->node_size(); ++i) {
    const auto& node = graph->node(i);
    if ((node.op_type() != "Conv" && node.op_type() != "ConvTranspose") || node.input_size() < 2) continue;
    const auto w = initializer_of.find(node.input(1));
    if (w != initializer_of.end() && w->second->dims_size() < 3)
      Fail(origin, "node '" + NodeName(node, i) + "' (" + node.op_type() + "): weight '" + node.input(1) + "' has rank " +
                       std::to_string(w->second->dims_size()) + "; a convolution's weight has rank 3 or more");
  }

  for (const auto& t : graph->initializer()) {
    OnnxInitializer init;
    for (int64_t d : t.dims()) {
      if (d < 0) Fail(origin, "initializer '" + t.name() + "' has a negative dim");
      init.dims.push_back(d);
    }
    if (!DimsWithinLimit(init.dims))
      Fail(origin, "initializer '" + t.name() + "' is too large (more than " + std::to_string(kMaxValueElements) + " elements)");
    init.is_float = IsFloatType(t.data_type());
    init.values = TensorValues(t);
    g.initializers[t.name()] = std::move(init);
  }

  // Nodes in a topological order (files should be sorted; we sort rather than trust it).
  const int n = graph->node_size();
  std::map<std::string, int> producer;
  std::vector<OnnxNode> nodes(n);
  for (int i = 0; i < n; ++i) {
    nodes[i] = ReadNode(graph->node(i), i, 0);
    const OnnxNode& out = nodes[i];
    for (const auto& o : out.outputs) {
      if (o.empty()) continue;
      if (producer.count(o) || initializer_names.count(o))
        Fail(origin, "node '" + out.name + "' (" + out.op_type + "): value '" + o + "' is defined twice");
      producer[o] = i;
    }
  }
  std::set<std::string> defined(initializer_names);
  for (const auto& [name, info] : g.inputs) defined.insert(name);
  std::vector<int> missing(n, 0);
  std::vector<std::vector<int>> users(n);
  for (int i = 0; i < n; ++i) {
    // A branch reads outer values by name: they are its node's inputs for the order.
    std::vector<std::string> reads = nodes[i].inputs;
    reads.insert(reads.end(), nodes[i].branch_reads.begin(), nodes[i].branch_reads.end());
    for (const auto& in : reads) {
      if (in.empty() || defined.count(in)) continue;
      auto it = producer.find(in);
      if (it == producer.end())
        Fail(origin, "node '" + nodes[i].name + "' (" + nodes[i].op_type + "): input '" + in +
                         "' is not produced by any node, nor an initializer or a graph input");
      ++missing[i];
      users[it->second].push_back(i);
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i) if (missing[i] == 0) ready.push(i);
  std::vector<int> order;
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int u : users[i]) if (--missing[u] == 0) ready.push(u);
  }
  if (static_cast<int>(order.size()) != n) {
    for (int i = 0; i < n; ++i)
      if (missing[i] > 0)
        Fail(origin, "the graph has a cycle through node '" + nodes[i].name + "' (" + nodes[i].op_type + ")");
  }
  for (int i : order) g.nodes.push_back(std::move(nodes[i]));

  // No ONNX shape inference: the lowering derives every shape it uses, and libonnx 1.12's
  // inference (with data propagation) crashes on malformed files that its own checks let through
  // (a SEGV on a Slice whose axes are out of range, read by a Shape: found by the fuzzer).
  for (const auto& v : graph->output()) g.outputs.push_back(v.name());
  for (const auto& o : g.outputs)
    if (!producer.count(o) && !defined.count(o))
      Fail(origin, "graph output '" + o + "' is produced by no node");
  return g;
}

OnnxGraph ReadOnnxFile(const std::string& path,
                       const std::map<std::string, std::vector<int64_t>>& input_dims) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open the file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw InputError(path, "", "cannot read the file");
  return ParseOnnx(buffer.str(), path, input_dims);
}

}  // namespace annealer
