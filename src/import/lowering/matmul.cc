// Gemm and MatMul: an activation times a weight (column blocks multiply their rows of the
// weight), a weight times an activation, and two activations (attention: Q·Kᵀ with a transposed
// copy, P·V), per head.
#include <algorithm>
#include <cctype>
#include <string>

#include "src/import/lowering/registry.h"
#include "src/import/lowering/reshape.h"

namespace annealer::lowering {
namespace {

Act ActTimesWeight(Context& cx, const Act& x_in, const Const& w, bool w_transposed, const OnnxNode& node) {
  ProblemBuilder& pb = cx.problem();
  if (w.dims.size() != 2) cx.Fail(node, "the weight must be 2-D, got " + DimsText(w.dims));
  const int64_t k = w_transposed ? w.dims[1] : w.dims[0], nn = w_transposed ? w.dims[0] : w.dims[1];
  const int last = int(x_in.dims.size()) - 1;
  if (last < 0 || x_in.dims[last] != k)
    cx.Fail(node, "the activation " + DimsText(x_in.dims) + " does not end in the weight's reduction axis (" + std::to_string(k) + ")");
  // The reduction axis as the columns: column blocks multiply their rows of the weight; any
  // other layout (a token-mixing transpose, a flatten of C·H·W) is gathered first.
  const Act x = x_in.col_axis == last && !x_in.pending() && (x_in.col_split || RowsInOnnxOrder(x_in)) ? x_in : cx.Relayout(node, x_in, last, x_in.part_axes);
  Act out = x;
  out.dims[last] = nn;
  out.col_split = false;
  if (x.col_split) {
    // Column blocks (heads merged back, a concatenation): Σ_b x_b · W[rows of b], summed in
    // the accumulator.
    std::vector<TensorId> partial;
    Elements offset = 0;
    for (TensorId part : x.parts) {
      const Elements kp = cx.tensor(part).width;
      partial.push_back(pb.MatMul(part, pb.Weight(w.name, kp, nn, "[rows " + std::to_string(offset) + ":" + std::to_string(offset + kp) + "]"), node, "matmul"));
      offset += kp;
    }
    out.parts = {pb.Pointwise(partial, 0, node, "block-sum")};
    out.part_axes.clear();
    return out;
  }
  const TensorId wt = pb.Weight(w.name, k, nn);
  out.parts.clear();
  for (TensorId part : x.parts) out.parts.push_back(pb.MatMul(part, wt, node, "matmul"));
  return out;
}

void AddBias(Context& cx, Act& y, const OnnxNode& node, size_t input) {
  if (!cx.HasInput(node, input)) return;
  const Value& b = cx.Get(node, input);
  if (std::holds_alternative<Act>(b)) cx.Fail(node, "a bias computed by the model is not supported");
  cx.problem().NoteBroadcast(std::get<Const>(b));
  for (TensorId& t : y.parts) t = cx.problem().Pointwise({t}, 1, node, "bias");
}

void LowerGemm(Context& cx, const OnnxNode& node) {
  Attr a{node};
  if (a.Int("transA", 0)) cx.Fail(node, "transA = 1 on an activation is not supported");
  const Value& av = cx.Get(node, 0);
  // A constant first operand is data of its own (an nn.LSTMCell/GRUCell loop's zero initial
  // state times the recurrence weight: torch runs, and counts, that product).
  const Const* ac = std::get_if<Const>(&av);
  if (!std::holds_alternative<Act>(av) && !(ac && Context::IsConstantData(*ac)))
    cx.Fail(node, "the first Gemm operand must be an activation");
  Act x = ac ? cx.ConstantData(*ac) : std::get<Act>(av);
  if (x.dims.size() != 2) cx.Fail(node, "Gemm input must be 2-D, got " + DimsText(x.dims));
  x = cx.Resolved(node, x);
  const Const* w = cx.GetConst(node, 1);
  if (!w) cx.Fail(node, "a Gemm whose second operand is computed by the model is not supported");
  Act y = ActTimesWeight(cx, x, *w, a.Int("transB", 0) != 0, node);
  AddBias(cx, y, node, 2);
  cx.Set(node, 0, y);
}

// weight @ activation (2-D only).
void LowerWeightTimesAct(Context& cx, const OnnxNode& node, const Const& w) {
  if (w.dims.size() != 2 || DimsOf(cx.Get(node, 1)).size() != 2) cx.Fail(node, "weight @ activation is supported for 2-D operands only");
  Act x = cx.Relayout(node, std::get<Act>(cx.Get(node, 1)), 1);
  Act out = x;
  out.dims = {w.dims[0], x.dims[1]};
  ProblemBuilder& pb = cx.problem();
  out.parts = {pb.MatMul(pb.Weight(w.name, w.dims[0], w.dims[1]), x.parts[0], node, "matmul")};
  cx.Set(node, 0, out);
}

// activation @ activation (attention's Q·Kᵀ and P·V, windows, a batch): one MatMul per matrix
// of the batch axes (heads, windows, batch items). Each operand is laid out with its own last
// axis as the columns and a part per batch index; an operand laid out otherwise (Kᵀ from a
// transpose, heads from a reshape that could not split the projection) is gathered into that
// layout by Layout ops. Batch dims must be equal (no broadcasting of a computed operand).
Act BatchedMatMul(Context& cx, const OnnxNode& node, const Act& x_in, const Act& y_in) {
  const int rx = int(x_in.dims.size()), ry = int(y_in.dims.size());
  if (rx < 2 || ry < 2) cx.Fail(node, "MatMul operands of rank < 2 are not supported");
  if (rx != ry || !std::equal(x_in.dims.begin(), x_in.dims.end() - 2, y_in.dims.begin()))
    cx.Fail(node, "batched MatMul operands " + DimsText(x_in.dims) + " and " + DimsText(y_in.dims) +
                      " must have the same batch dims (broadcasting a computed operand is not supported)");
  if (x_in.dims[rx - 1] != y_in.dims[ry - 2])
    cx.Fail(node, "operand shapes " + DimsText(x_in.dims) + " and " + DimsText(y_in.dims) + " do not chain");
  std::vector<int> batch;
  for (int i = 0; i < rx - 2; ++i)
    if (x_in.dims[i] > 1) batch.push_back(i);
  const Act x = cx.Relayout(node, x_in, rx - 1, batch);
  const Act y = cx.Relayout(node, y_in, ry - 1, batch);
  Act out = x;
  out.dims[rx - 1] = y.dims[ry - 1];
  out.parts.clear();
  for (size_t i = 0; i < x.parts.size(); ++i) out.parts.push_back(cx.problem().MatMul(x.parts[i], y.parts[i], node, "matmul"));
  return out;
}

// numpy's matmul in general (what the paths above do not cover): operands of any rank, a 1-D
// one (x @ v, v @ x: a unit axis added, then dropped), batch axes broadcast (a key shared by
// the heads, a [B, 1, K, N] operand), weights with batch axes (one matrix per head) and a
// weight on the left of a batched activation (token mixing). One MatMul per index of the batch
// axes the right operand varies along (and the left one's, when it is a weight); the left
// activation's other batch axes are its rows, so each MatMul is as tall as it can be. MACs are
// torch's: M·K·N per matrix of the broadcast batch.
Act GeneralMatMul(Context& cx, const OnnxNode& node, const Value& av, const Value& bv) {
  ProblemBuilder& pb = cx.problem();
  std::vector<int64_t> ad = DimsOf(av), bd = DimsOf(bv);
  if (ad.empty() || bd.empty()) cx.Fail(node, "MatMul of a scalar is not supported");
  const bool a_vec = ad.size() == 1, b_vec = bd.size() == 1;
  if (a_vec) ad.insert(ad.begin(), 1);
  if (b_vec) bd.push_back(1);
  const size_t r = std::max(ad.size(), bd.size());
  ad.insert(ad.begin(), r - ad.size(), 1);
  bd.insert(bd.begin(), r - bd.size(), 1);
  if (ad[r - 1] != bd[r - 2])
    cx.Fail(node, "operand shapes " + DimsText(DimsOf(av)) + " and " + DimsText(DimsOf(bv)) + " do not chain");
  std::vector<int64_t> od(r);
  for (size_t i = 0; i + 2 < r; ++i) {
    if (ad[i] != bd[i] && ad[i] != 1 && bd[i] != 1)
      cx.Fail(node, "the batch axes of " + DimsText(DimsOf(av)) + " and " + DimsText(DimsOf(bv)) + " do not broadcast");
    od[i] = std::max(ad[i], bd[i]);
  }
  od[r - 2] = ad[r - 2];
  od[r - 1] = bd[r - 1];
  const bool a_weight = std::holds_alternative<Const>(av);
  // The batch axes with a matrix each.
  std::vector<int> sep;
  for (int i = 0; i + 2 < int(r); ++i)
    if (bd[i] > 1 || (a_weight && ad[i] > 1)) sep.push_back(i);
  int64_t count = 1;
  for (int i : sep) count = cx.Mul(node, count, od[i]);
  if (count > kMaxLayoutParts)
    cx.Fail(node, "a batched MatMul of " + std::to_string(count) + " matrices (more than " + std::to_string(kMaxLayoutParts) + ") is not supported");
  // An operand's matrices, one per index of its own sized separate axes (row-major).
  struct Side {
    std::vector<TensorId> parts;
    std::vector<int> axes;  // its sized axes among `sep`
  };
  auto side = [&](const Value& v, const std::vector<int64_t>& d) {
    Side s;
    for (int i : sep) if (d[i] > 1) s.axes.push_back(i);
    const int64_t rows = d[r - 2], cols = d[r - 1];
    if (const Const* c = std::get_if<Const>(&v)) {
      int64_t n = 1;
      for (int i : s.axes) n *= d[i];
      const std::string name = c->name.empty() ? node.name + "~constant" : c->name;
      for (int64_t i = 0; i < n; ++i)
        s.parts.push_back(pb.Weight(name, rows, cols, PartSuffix(i, n)));
      return s;
    }
    Act x = cx.Resolved(node, std::get<Act>(v));
    if (x.dims != d) x = cx.Resolved(node, ReshapeAct(cx, node, x, d));
    s.parts = cx.Relayout(node, x, int(r) - 1, s.axes).parts;
    return s;
  };
  // One right matrix (a weight, a key shared by every head): the left activation keeps the
  // parts it has (heads), each times that matrix.
  if (sep.empty() && std::holds_alternative<Act>(av)) {
    Act x = cx.Resolved(node, std::get<Act>(av));
    if (x.dims != ad) x = cx.Resolved(node, ReshapeAct(cx, node, x, ad));
    const bool batch_parts = std::all_of(x.part_axes.begin(), x.part_axes.end(), [&](int p) { return p < int(r) - 2; });
    if (x.col_axis == int(r) - 1 && !x.col_split && !x.pending() && RowsInOnnxOrder(x) && batch_parts) {
      const TensorId right = side(bv, bd).parts[0];
      Act out = x;
      out.dims = od;
      for (TensorId& t : out.parts) t = pb.MatMul(t, right, node, "matmul");
      std::vector<int64_t> final_dims;
      for (size_t i = 0; i < r; ++i)
        if (!((a_vec && i == r - 2) || (b_vec && i == r - 1))) final_dims.push_back(od[i]);
      return final_dims == od ? out : ReshapeAct(cx, node, out, final_dims);
    }
  }
  const Side a = side(av, ad), b = side(bv, bd);
  Act out;
  out.dims = od;
  SetChannelsLayout(out, int(r) - 1);
  for (int i : sep) {
    out.row_axes.erase(std::remove(out.row_axes.begin(), out.row_axes.end(), i), out.row_axes.end());
    if (od[i] > 1) out.part_axes.push_back(i);
  }
  // The part of operand `s` at the output's batch index (row-major over `sep`).
  auto part_of = [&](const Side& s, const std::vector<int64_t>& index) {
    int64_t k = 0;
    for (int ax : s.axes) k = k * od[ax] + index[ax];
    return s.parts[size_t(k)];
  };
  std::vector<int64_t> index(r, 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i;
    for (auto it = sep.rbegin(); it != sep.rend(); ++it) index[*it] = rest % od[*it], rest /= od[*it];
    out.parts.push_back(pb.MatMul(part_of(a, index), part_of(b, index), node, "matmul"));
  }
  std::vector<int64_t> final_dims;
  for (size_t i = 0; i < r; ++i)
    if (!((a_vec && i == r - 2) || (b_vec && i == r - 1))) final_dims.push_back(od[i]);
  return final_dims == od ? out : ReshapeAct(cx, node, out, final_dims);
}

void LowerMatMul(Context& cx, const OnnxNode& node) {
  const Value& av = cx.Get(node, 0);
  const Value& bv = cx.Get(node, 1);
  if (std::holds_alternative<Act>(av) && std::holds_alternative<Const>(bv)) {
    if (DimsOf(bv).size() != 2 || DimsOf(av).size() < 2) return cx.Set(node, 0, GeneralMatMul(cx, node, av, bv));
    Act x = cx.NeedAct(node, 0);
    return cx.Set(node, 0, ActTimesWeight(cx, x, std::get<Const>(bv), false, node));
  }
  if (std::holds_alternative<Const>(av) && std::holds_alternative<Act>(bv)) {
    if (DimsOf(av).size() != 2 || DimsOf(bv).size() != 2) return cx.Set(node, 0, GeneralMatMul(cx, node, av, bv));
    return LowerWeightTimesAct(cx, node, std::get<Const>(av));
  }
  if (std::holds_alternative<Const>(av) && std::holds_alternative<Const>(bv)) {
    // Both known at export time (DETR's decoder queries, a parameter, times a projection): the
    // model still multiplies them at run time. The left one is read as a tensor of its own.
    const Const& c = std::get<Const>(av);
    if (!c.is_float || c.dims.size() < 2) cx.Fail(node, "a MatMul of two integer or 1-D constants is not supported");
    Act x;
    x.dims = c.dims;
    x.name = c.name;
    SetChannelsLayout(x, int(c.dims.size()) - 1);
    const auto [rows, cols] = PartShape(x);
    x.parts = {cx.problem().Weight(c.name.empty() ? node.name + "~constant" : c.name, rows, cols, "~data")};
    return cx.Set(node, 0, ActTimesWeight(cx, x, std::get<Const>(bv), false, node));
  }
  if (!std::holds_alternative<Act>(av) || !std::holds_alternative<Act>(bv))
    cx.Fail(node, "a MatMul of a row statistic is not supported");
  const std::vector<int64_t> ad = DimsOf(av), bd = DimsOf(bv);
  if (ad.size() != bd.size() || ad.size() < 2 || !std::equal(ad.begin(), ad.end() - 2, bd.begin()))
    return cx.Set(node, 0, GeneralMatMul(cx, node, av, bv));
  cx.Set(node, 0, BatchedMatMul(cx, node, std::get<Act>(av), std::get<Act>(bv)));
}

// Einsum of two operands that is a (batched) matrix product: every letter is a batch axis (in
// both operands and the output), contracted (in both, not in the output) or free (in one operand
// and the output). Each operand is transposed to [batch, free, contracted] order and reshaped to
// 3-D, multiplied per batch matrix (BatchedMatMul: exact MACs), and the product reshaped and
// transposed to the output's order; the data a real kernel moves for it, Layout ops gather.
// Traces, diagonals, ellipses and reductions of one operand's own axes are errors.
void LowerEinsum(Context& cx, const OnnxNode& node) {
  std::string eq;
  for (char c : Attr{node}.Text("equation")) if (c != ' ') eq += c;
  const size_t comma = eq.find(','), arrow = eq.find("->");
  if (node.inputs.size() != 2 || comma == std::string::npos || arrow == std::string::npos || arrow < comma ||
      eq.find(',', comma + 1) != std::string::npos)
    cx.Fail(node, "only Einsum of two operands with an explicit output ('ab,bc->ac') is supported, got '" + eq + "'");
  std::string lx = eq.substr(0, comma), ly = eq.substr(comma + 1, arrow - comma - 1), lo = eq.substr(arrow + 2);
  if (eq.find("...") != std::string::npos) {
    // An ellipsis stands for the leading axes an operand has beyond its letters: letters of
    // their own, right-aligned across the operands as numpy broadcasts them.
    std::string fresh;
    for (char c = 'A'; c <= 'Z'; ++c) if (eq.find(c) == std::string::npos) fresh += c;
    const size_t rank_x = DimsOf(cx.Get(node, 0)).size(), rank_y = DimsOf(cx.Get(node, 1)).size();
    auto span = [&](const std::string& term, size_t rank) -> size_t {
      const size_t at = term.find("...");
      if (at == std::string::npos) return 0;
      const size_t named = term.size() - 3;
      if (rank < named) cx.Fail(node, "Einsum '" + eq + "': an operand has fewer axes than its letters");
      return rank - named;
    };
    const size_t ex = span(lx, rank_x), ey = span(ly, rank_y), most = std::max(ex, ey);
    if (most > fresh.size()) cx.Fail(node, "Einsum '" + eq + "': too many axes under the ellipsis");
    auto expand = [&](std::string& term, size_t n) {
      const size_t at = term.find("...");
      if (at != std::string::npos) term.replace(at, 3, fresh.substr(most - n, n));
    };
    expand(lx, ex);
    expand(ly, ey);
    expand(lo, most);
  }
  auto letters_ok = [](const std::string& l) {
    for (size_t i = 0; i < l.size(); ++i)
      if (!std::isalpha(static_cast<unsigned char>(l[i])) || l.find(l[i], i + 1) != std::string::npos) return false;
    return true;
  };
  if (!letters_ok(lx) || !letters_ok(ly) || !letters_ok(lo))
    cx.Fail(node, "Einsum '" + eq + "': ellipses, repeated letters in one operand (traces, diagonals) are not supported");
  const Value& xv = cx.Get(node, 0);
  const Value& yv = cx.Get(node, 1);
  if (!std::holds_alternative<Act>(xv) || DimsOf(xv).size() != lx.size() || DimsOf(yv).size() != ly.size())
    cx.Fail(node, "Einsum '" + eq + "': the first operand must be an activation and the ranks must match the equation");
  const std::vector<int64_t> xd = DimsOf(xv), yd = DimsOf(yv);
  std::string batch, contracted, free_x, free_y;
  for (char c : lx) {
    const bool in_y = ly.find(c) != std::string::npos, in_o = lo.find(c) != std::string::npos;
    if (in_y && in_o) batch += c;
    else if (in_y) contracted += c;
    else if (in_o) free_x += c;
    else cx.Fail(node, "Einsum '" + eq + "': letter '" + std::string(1, c) + "' is summed within one operand, which is not supported");
  }
  for (char c : ly)
    if (lx.find(c) == std::string::npos) {
      if (lo.find(c) == std::string::npos)
        cx.Fail(node, "Einsum '" + eq + "': letter '" + std::string(1, c) + "' is summed within one operand, which is not supported");
      free_y += c;
    }
  for (char c : lo)
    if (lx.find(c) == std::string::npos && ly.find(c) == std::string::npos)
      cx.Fail(node, "Einsum '" + eq + "': output letter '" + std::string(1, c) + "' is in no operand");
  auto dim = [&](char c) { return lx.find(c) != std::string::npos ? xd[lx.find(c)] : yd[ly.find(c)]; };
  for (char c : batch + contracted)
    if (xd[lx.find(c)] != yd[ly.find(c)]) cx.Fail(node, "Einsum '" + eq + "': axis '" + std::string(1, c) + "' differs between the operands");
  auto perm_of = [](const std::string& from, const std::string& to) {
    std::vector<int64_t> p;
    for (char c : to) p.push_back(int64_t(from.find(c)));
    return p;
  };
  auto product = [&](const std::string& l) {
    int64_t p = 1;
    for (char c : l) p *= dim(c);
    return p;
  };
  std::vector<int64_t> head;
  for (char c : batch) head.push_back(dim(c));
  const int64_t m = product(free_x), k = product(contracted), n = product(free_y);
  auto with = [&](std::vector<int64_t> a, std::initializer_list<int64_t> b) { a.insert(a.end(), b); return a; };
  Act x = ReshapeAct(cx, node, TransposeAct(cx, node, cx.Resolved(node, std::get<Act>(xv)), perm_of(lx, batch + free_x + contracted)),
                     with(head, {m, k}));
  Act z;
  if (const Const* w = std::get_if<Const>(&yv)) {
    // The weight in [batch, contracted, free] order: a relabelling of its parameters; with
    // batch axes (a weight per head), one matrix per batch index.
    Const w2 = *w;
    w2.dims = with(head, {k, n});
    z = batch.empty() ? ActTimesWeight(cx, x, w2, false, node) : GeneralMatMul(cx, node, Value(x), Value(w2));
  } else {
    const Act y = ReshapeAct(cx, node, TransposeAct(cx, node, cx.Resolved(node, std::get<Act>(yv)), perm_of(ly, batch + contracted + free_y)),
                             with(head, {k, n}));
    z = BatchedMatMul(cx, node, x, y);
  }
  std::vector<int64_t> full = head;
  for (char c : free_x + free_y) full.push_back(dim(c));
  const Act r = ReshapeAct(cx, node, z, full);
  cx.Set(node, 0, TransposeAct(cx, node, r, perm_of(batch + free_x + free_y, lo)));
}

// Gemm: B and C (the weight and the bias).
bool GemmWeight(const OnnxGraph&, const OnnxNode&, size_t input) { return input >= 1; }
// MatMul: the right operand, unless it is also the left one (x @ x is two activations), the left
// one is an initializer (W @ x, token mixing: x is the data), or it has batch axes (a layer's
// weight is 2-D: a graph input [B, H, K, N] is data multiplied per batch index).
bool MatMulWeight(const OnnxGraph& g, const OnnxNode& node, size_t input) {
  if (input != 1 || node.inputs.size() < 2 || node.inputs[0] == node.inputs[1] || g.initializers.count(node.inputs[0])) return false;
  for (const auto& [name, info] : g.inputs)
    if (name == node.inputs[1] && info.dims.size() > 2) return false;
  return true;
}

}  // namespace

ConverterTable MatMulConverters() {
  return {
      {.op_type = "Gemm", .lower = LowerGemm, .weight_input = GemmWeight},
      {.op_type = "MatMul", .lower = LowerMatMul, .weight_input = MatMulWeight},
      {.op_type = "Einsum", .lower = LowerEinsum, .since = 12, .weight_input = MatMulWeight},
  };
}

}  // namespace annealer::lowering
