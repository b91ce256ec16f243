// The transformer ops ONNX defines from opset 23, as newer exporters write them (torch's
// dynamo exporter: F.scaled_dot_product_attention as Attention): Attention lowers as its
// function body, RotaryEmbedding as one Pointwise op in place, TensorScatter (a key/value cache
// updated outside Attention) as a Layout op per head. (RMSNormalization, a normalisation, is in
// normalization.cc.)
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/import/lowering/data_movement.h"
#include "src/import/lowering/elementwise.h"
#include "src/import/lowering/registry.h"
#include "src/import/lowering/reshape.h"

namespace annealer::lowering {
namespace {

// The ops of a function body, each lowered by the converter of its op type. The body's values
// are bound under names of their own, "<node>~<what>" (the names its tensors carry in the map);
// its ops carry the node's name, so an error names the node of the file.
class FunctionBody {
 public:
  FunctionBody(Context& cx, const OnnxNode& node) : cx_(cx), node_(node) {}

  // A new value: its tensors take the name.
  std::string Set(const std::string& what, Value v) {
    OnnxNode n = Part("Identity", {}, what);
    cx_.Set(n, 0, std::move(v));
    return n.outputs[0];
  }
  // A relabelling of a value (heads of a projection) or a constant: its tensors keep their names.
  std::string Bind(const std::string& what, Value v) {
    const std::string name = node_.name + "~" + what;
    if (Const* c = std::get_if<Const>(&v)) c->name = name;
    cx_.Bind(name, std::move(v));
    return name;
  }
  std::string Op(const std::string& op_type, std::vector<std::string> inputs, const std::string& what,
                 const std::map<std::string, OnnxAttribute>& attributes = {}) {
    OnnxNode n = Part(op_type, std::move(inputs), what);
    n.attributes = attributes;
    LowerNode(cx_, n);
    return n.outputs[0];
  }
  const Value& Get(const std::string& name) const { return cx_.Get(Part("Identity", {name}, ""), 0); }
  Act GetAct(const std::string& name) const { return std::get<Act>(Get(name)); }

 private:
  OnnxNode Part(const std::string& op_type, std::vector<std::string> inputs, const std::string& what) const {
    OnnxNode n;
    n.name = node_.name;
    n.op_type = op_type;
    n.inputs = std::move(inputs);
    n.outputs = {node_.name + "~" + what};
    return n;
  }

  Context& cx_;
  const OnnxNode& node_;
};

OnnxAttribute IntAttribute(int64_t v) {
  OnnxAttribute a;
  a.ints = {v};
  return a;
}

// The axes of a [B, H, S, d] value that are separate matrices: the batch and the heads, where
// they are more than one.
std::vector<int> HeadAxes(const Act& x) {
  std::vector<int> axes;
  for (int ax : {0, 1})
    if (x.dims[size_t(ax)] > 1) axes.push_back(ax);
  return axes;
}

// A 4-D graph input of the node, as (batch, heads, sequence, head size): made a tensor per
// batch index and head, as the products read it (a graph input's default layout takes axis 1,
// an image's channels, as its columns).
void MaterializeHeads(Context& cx, const OnnxNode& node, size_t i) {
  const Act* a = std::get_if<Act>(&cx.Get(node, i));
  if (!a || !a->model_input || a->dims.size() != 4) return;
  Act x = *a;
  SetChannelsLayout(x, 3);
  x.part_axes = HeadAxes(x);
  for (int ax : x.part_axes) x.row_axes.erase(std::find(x.row_axes.begin(), x.row_axes.end(), ax));
  cx.Materialized(x);
}

// An operand of the node as an activation: a graph input made its tensors, a parameter read as
// data (learned queries or keys) a tensor of its own; a pending value stays pending (the
// reshapes and the products below gather it once, in the layout they need).
Act OperandAct(Context& cx, const OnnxNode& node, size_t i, const char* what) {
  const std::vector<int64_t> dims = DimsOf(cx.Get(node, i));
  if (std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d <= 0; }))
    cx.Fail(node, std::string(what) + " " + DimsText(dims) + " must not be empty");
  MaterializeHeads(cx, node, i);
  const Value& v = cx.Get(node, i);
  if (const Const* c = std::get_if<Const>(&v); c && Context::IsConstantData(*c)) return cx.ConstantData(*c);
  const Act* a = std::get_if<Act>(&v);
  if (!a) cx.Fail(node, std::string(what) + " (input " + std::to_string(i) + ") must be a tensor: the model computes it, or a parameter");
  Act x = *a;
  if (x.model_input) cx.Materialized(x);
  return x;
}

// [B, S, H·d] -> [B, H, S, d]: the heads of a projection (split by heads when its producer
// allows, as an exported Reshape and Transpose are).
Act ToHeads(Context& cx, const OnnxNode& node, const Act& x, int64_t heads) {
  return TransposeAct(cx, node, ReshapeAct(cx, node, x, {x.dims[0], x.dims[1], heads, x.dims[2] / heads}), {0, 2, 1, 3});
}

// x [B, Hx, M, K] times y [B, Hy, K, N], Hx a multiple of Hy: one MatMul per batch index and
// head of x, head h reading head h / (Hx / Hy) of y (grouped-query attention: a key or value
// head serves its group of query heads without a repeated copy). MACs: M·K·N per head of x.
Act HeadsMatMul(Context& cx, const OnnxNode& node, const Act& x_in, const Act& y_in) {
  const int64_t batch = x_in.dims[0], hx = x_in.dims[1], hy = y_in.dims[1], group = hx / hy;
  const Act x = cx.Relayout(node, x_in, 3, HeadAxes(x_in));
  const Act y = cx.Relayout(node, y_in, 3, HeadAxes(y_in));
  Act out = x;
  out.dims[3] = y.dims[3];
  out.parts.clear();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < hx; ++h)
      out.parts.push_back(cx.problem().MatMul(x.parts[size_t(b * hx + h)], y.parts[size_t(b * hy + h / group)], node, "matmul"));
  return out;
}

// The cache in front of the new keys or values: past [B, H, P, w] and now [B, H, S, w] make
// [B, H, P + S, w], one Layout op per batch index and head gathering its past and new rows.
Act AppendRows(Context& cx, const OnnxNode& node, const Act& past_in, const Act& now_in, const std::string& name) {
  const Act past = cx.Relayout(node, past_in, 3, HeadAxes(past_in));
  const Act now = cx.Relayout(node, now_in, 3, HeadAxes(now_in));
  Act out = now;
  out.dims[2] += past.dims[2];
  out.parts.clear();
  const auto [rows, cols] = PartShape(out);
  for (size_t i = 0; i < now.parts.size(); ++i)
    out.parts.push_back(cx.problem().Layout({past.parts[i], now.parts[i]}, rows, cols, node, name + PartSuffix(int64_t(i), int64_t(now.parts.size()))));
  return out;
}

// TensorScatter (opset 24: a key/value cache updated outside Attention): the cache with the
// update written along `axis` from each batch index's write position: ScatterInto, each head of
// the cache reading the update's head and computed write indices. A 4-D graph-input cache with the sequence at axis 2, (batch, heads,
// sequence, head size), is made a tensor per batch index and head, as Attention reads it.
void LowerTensorScatter(Context& cx, const OnnxNode& node) {
  const std::vector<int64_t> dims = DimsOf(cx.Get(node, 0)), update_dims = DimsOf(cx.Get(node, 1));
  const int rank = int(dims.size());
  int64_t axis = Attr{node}.Int("axis", -2);
  if (axis < 0) axis += rank;
  if (axis <= 0 || axis >= rank) cx.Fail(node, "axis " + std::to_string(Attr{node}.Int("axis", -2)) + " is not a sequence axis of rank " + std::to_string(rank));
  bool fits = update_dims.size() == dims.size() && update_dims[size_t(axis)] <= dims[size_t(axis)];
  for (int i = 0; fits && i < rank; ++i) fits = i == axis || update_dims[size_t(i)] == dims[size_t(i)];
  if (!fits) cx.Fail(node, "the update " + DimsText(update_dims) + " must be the cache " + DimsText(dims) + " but for a sequence axis no longer");
  if (std::holds_alternative<Const>(cx.Get(node, 0)) && std::holds_alternative<Const>(cx.Get(node, 1)))
    return cx.Set(node, 0, Const{dims, std::nullopt, true, false, ""});
  if (rank == 4 && axis == 2) {
    MaterializeHeads(cx, node, 0);
    MaterializeHeads(cx, node, 1);
  }
  ScatterInto(cx, node, 1, 2, true, false);
}

// Attention (opsets 23 to 25): Q, K, V as [B, heads, S, head size] (3-D inputs split by
// q_num_heads / kv_num_heads), the past keys and values concatenated in front of K and V
// (present_key, present_value), then the function body: Q and K each scaled by √scale, Q·Kᵀ per
// head, the soft cap (Div, Tanh, Mul), the mask (attn_mask, the causal and window masks and the
// padding of nonpad_kv_seqlen: one Sum with the scores; masks known at import are folded), the
// softmax, and the product with V; a 3-D output merges the heads back.
void LowerAttention(Context& cx, const OnnxNode& node) {
  const Attr a{node};
  FunctionBody body(cx, node);
  Act q = OperandAct(cx, node, 0, "Q"), k = OperandAct(cx, node, 1, "K"), v = OperandAct(cx, node, 2, "V");
  const size_t rank = q.dims.size();
  if (k.dims.size() != rank || v.dims.size() != rank || (rank != 3 && rank != 4))
    cx.Fail(node, "Q, K and V must all be 3-D (batch, sequence, hidden) or all 4-D (batch, heads, sequence, head size), got " +
                      DimsText(q.dims) + ", " + DimsText(k.dims) + " and " + DimsText(v.dims));
  if (rank == 3) {
    const int64_t hq = a.Int("q_num_heads", 0), hkv = a.Int("kv_num_heads", 0);
    if (hq <= 0 || hkv <= 0) cx.Fail(node, "3-D Q, K and V need the q_num_heads and kv_num_heads attributes");
    if (q.dims[2] % hq != 0 || k.dims[2] % hkv != 0 || v.dims[2] % hkv != 0)
      cx.Fail(node, "the hidden sizes of Q, K and V (" + std::to_string(q.dims[2]) + ", " + std::to_string(k.dims[2]) + ", " +
                        std::to_string(v.dims[2]) + ") must divide by q_num_heads " + std::to_string(hq) + " and kv_num_heads " +
                        std::to_string(hkv));
    q = ToHeads(cx, node, q, hq);
    k = ToHeads(cx, node, k, hkv);
    v = ToHeads(cx, node, v, hkv);
  }
  const int64_t batch = q.dims[0], hq = q.dims[1], sq = q.dims[2], d = q.dims[3], hkv = k.dims[1];
  if (k.dims[0] != batch || v.dims[0] != batch || v.dims[1] != hkv || hq % hkv != 0 || k.dims[3] != d || v.dims[2] != k.dims[2])
    cx.Fail(node, "Q " + DimsText(q.dims) + ", K " + DimsText(k.dims) + " and V " + DimsText(v.dims) +
                      " (as batch, heads, sequence, head size) do not fit: one batch, K and V one sequence and their heads "
                      "dividing Q's, Q and K one head size");
  if (cx.Mul(node, batch, hq) > kMaxLayoutParts)
    cx.Fail(node, "attention over " + std::to_string(batch) + " x " + std::to_string(hq) + " query heads (more than " +
                      std::to_string(kMaxLayoutParts) + " matrices) is not supported");
  if (cx.HasInput(node, 4) != cx.HasInput(node, 5)) cx.Fail(node, "past_key and past_value go together: give both or neither");
  const bool padded = cx.HasInput(node, 6);
  std::string keys = body.Bind("k_heads", k), values = body.Bind("v_heads", v);
  if (cx.HasInput(node, 4)) {
    if (padded) cx.Fail(node, "nonpad_kv_seqlen (an external cache) and past_key / past_value (an internal one) exclude each other");
    for (size_t i : {4, 5}) {
      MaterializeHeads(cx, node, i);
      const std::vector<int64_t> pd = DimsOf(cx.Get(node, i));
      const int64_t width = i == 4 ? d : v.dims[3];
      if (pd.size() != 4 || pd[0] != batch || pd[1] != hkv || pd[3] != width)
        cx.Fail(node, std::string(i == 4 ? "past_key " : "past_value ") + DimsText(pd) + " must be (batch " + std::to_string(batch) +
                          ", kv heads " + std::to_string(hkv) + ", past sequence, " + std::to_string(width) + ")");
    }
    keys = body.Set("present_key", AppendRows(cx, node, OperandAct(cx, node, 4, "past_key"), k, node.name + "~present_key"));
    values = body.Set("present_value", AppendRows(cx, node, OperandAct(cx, node, 5, "past_value"), v, node.name + "~present_value"));
  }
  cx.Set(node, 1, body.Get(keys));
  cx.Set(node, 2, body.Get(values));
  const int64_t total = DimsOf(body.Get(keys))[2];

  const std::string root = body.Bind("sqrt_scale", Const{{}, std::nullopt, true, false, ""});
  const std::string q_scaled = body.Op("Mul", {body.Bind("q_heads", q), root}, "q_scaled");
  const std::string k_scaled = body.Op("Mul", {keys, root}, "k_scaled");
  const std::string scores =
      body.Set("qk", HeadsMatMul(cx, node, body.GetAct(q_scaled), TransposeAct(cx, node, body.GetAct(k_scaled), {0, 1, 3, 2})));
  std::string capped = scores;
  if (a.Float("softcap", 0) != 0) {
    const std::string cap = body.Bind("softcap", Const{{}, std::nullopt, true, false, ""});
    capped = body.Op("Mul", {body.Op("Tanh", {body.Op("Div", {scores, cap}, "qk_over_cap")}, "qk_tanh"), cap}, "qk_capped");
  }
  std::vector<std::string> bias;
  if (cx.HasInput(node, 3)) {
    // Broadcast to (B, Hq, Sq, total); a shorter last axis is padded with -inf (masked keys).
    MaterializeHeads(cx, node, 3);
    const Value& m = cx.Get(node, 3);
    std::vector<int64_t> md = DimsOf(m);
    const std::vector<int64_t> full = {batch, hq, sq, total};
    bool fits = !md.empty() && md.size() <= 4 && md.back() <= total;
    for (size_t i = 0; fits && i + 1 < md.size(); ++i) {
      const int64_t want = full[4 - md.size() + i];
      fits = md[i] == 1 || md[i] == want;
    }
    if (!fits) cx.Fail(node, "attn_mask " + DimsText(md) + " does not broadcast to (batch, q heads, q sequence, keys) " + DimsText(full));
    if (md.back() == total) {
      bias.push_back(node.inputs[3]);
    } else if (const Const* c = std::get_if<Const>(&m)) {
      Const padded_mask = *c;
      padded_mask.dims.back() = total;
      padded_mask.values.reset();
      bias.push_back(body.Bind("attn_mask_padded", padded_mask));
    } else {
      cx.Fail(node, "an attn_mask shorter than the keys (" + std::to_string(md.back()) + " of " + std::to_string(total) +
                        ") is supported when it is known at import time, not when the model computes it");
    }
  }
  const bool windowed = a.Int("left_window_size", -1) >= 0 || a.Int("right_window_size", -1) >= 0;
  if (a.Int("is_causal", 0) != 0 || windowed || padded) {
    // Masks of positions alone (and of nonpad_kv_seqlen's B lengths): constants of the
    // scores' last two axes, folded into the Sum.
    const Const positions{padded ? std::vector<int64_t>{batch, 1, sq, total} : std::vector<int64_t>{sq, total}, std::nullopt, true,
                          false, ""};
    bias.push_back(body.Bind("position_mask", positions));
  }
  std::string masked = capped;
  if (!bias.empty()) {
    std::vector<std::string> terms = {capped};
    terms.insert(terms.end(), bias.begin(), bias.end());
    masked = body.Op("Sum", terms, "qk_masked");
  }
  const std::string probs = body.Op("Softmax", {masked}, "probs", {{"axis", IntAttribute(-1)}});
  const int64_t mode = a.Int("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) cx.Fail(node, "qk_matmul_output_mode " + std::to_string(mode) + " is not one of 0 to 3");
  cx.Set(node, 3, body.Get(std::vector<std::string>{scores, capped, masked, probs}[size_t(mode)]));

  Act y = HeadsMatMul(cx, node, body.GetAct(probs), body.GetAct(values));
  if (rank == 3) y = ReshapeAct(cx, node, TransposeAct(cx, node, y, {0, 2, 1, 3}), {batch, sq, hq * y.dims[3]});
  cx.Set(node, 0, y);
}

// RotaryEmbedding (opset 23): each head's first rotary_embedding_dim columns rotated in pairs by
// the cos/sin rows of its position (real = cos·x1 − sin·x2, imaginary = sin·x1 + cos·x2: 3
// passes over the rotated columns), the rest passed through: one Pointwise op in place. Caches
// known at import are folded (the rows read: broadcast-constant); computed ones are gathered at
// the input's size.
void LowerRotaryEmbedding(Context& cx, const OnnxNode& node) {
  const Attr a{node};
  const Value& x = cx.Get(node, 0);
  if (!std::holds_alternative<Act>(x)) cx.Fail(node, "the input must be a tensor the model computes");
  const std::vector<int64_t> dims = DimsOf(x);
  int64_t batch = 0, seq = 0, head = 0;
  if (dims.size() == 4) {
    batch = dims[0], seq = dims[2], head = dims[3];
  } else if (dims.size() == 3) {
    const int64_t heads = a.Int("num_heads", 0);
    if (heads <= 0) cx.Fail(node, "a 3-D input (batch, sequence, hidden) needs the num_heads attribute");
    if (dims[2] % heads != 0)
      cx.Fail(node, "the hidden size " + std::to_string(dims[2]) + " does not divide by num_heads " + std::to_string(heads));
    batch = dims[0], seq = dims[1], head = dims[2] / heads;
  } else {
    cx.Fail(node, "the input must be 3-D (batch, sequence, hidden) or 4-D (batch, heads, sequence, head size), got " + DimsText(dims));
  }
  if (head <= 0 || seq <= 0 || batch <= 0) cx.Fail(node, "the input " + DimsText(dims) + " must not be empty");
  const int64_t rotated = a.Int("rotary_embedding_dim", 0) == 0 ? head : a.Int("rotary_embedding_dim", 0);
  if (rotated < 0 || rotated > head || rotated % 2 != 0)
    cx.Fail(node, "rotary_embedding_dim " + std::to_string(rotated) + " must be even and at most the head size " + std::to_string(head));
  const bool positions = cx.HasInput(node, 3);
  std::vector<const Value*> data = {&x};
  std::vector<Value> gathered;
  gathered.reserve(2);
  for (size_t i : {1, 2}) {
    const char* name = i == 1 ? "cos_cache " : "sin_cache ";
    const Value& c = cx.Get(node, i);
    const std::vector<int64_t> cd = DimsOf(c);
    if (cd.size() != (positions ? 2u : 3u) || cd.back() != rotated / 2)
      cx.Fail(node, name + DimsText(cd) + " must be " + (positions ? "(positions, " : "(batch, sequence, ") + std::to_string(rotated / 2) +
                        "): rotary_embedding_dim / 2 values per " + (positions ? "position" : "token"));
    if (const Const* k = std::get_if<Const>(&c)) {
      cx.problem().NoteBroadcast(Const{{batch, seq, rotated / 2}, std::nullopt, true, false, k->name});
    } else if (const Act* k = std::get_if<Act>(&c)) {
      gathered.push_back(cx.Pending(node, *k, dims, false));
      data.push_back(&gathered.back());
    } else {
      cx.Fail(node, std::string(name) + "as a row statistic is not supported");
    }
  }
  cx.problem().Note("rotary",
                    "a rotary embedding rotates pairs of columns within each head (Pointwise, in place): a tile does not wait "
                    "for the partner columns outside it (no traffic change); elements = those ops' sizes",
                    Product(dims));
  LowerOnActivations(cx, node, data, 3.0 * double(rotated) / double(head));
}

}  // namespace

ConverterTable AttentionConverters() {
  return {
      {"Attention", LowerAttention, 23},
      {"RotaryEmbedding", LowerRotaryEmbedding, 23},
      {"TensorScatter", LowerTensorScatter, 24},
  };
}

}  // namespace annealer::lowering
