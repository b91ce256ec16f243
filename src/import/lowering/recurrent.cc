// Recurrent layers, unrolled over the sequence: LSTM, GRU and the plain RNN (nn.RNN; forward,
// reverse, bidirectional).
// Each step multiplies the step's input and the previous hidden state by every gate's weight
// block (one MatMul per gate and operand: exact MACs, torch's count including the first step's
// product with the initial state), and combines the gates in Pointwise ops. The steps of the
// input are gathered by Layout ops (one per step), the outputs Y, Y_h (and Y_c) by Layout ops
// over the hidden states.
#include <algorithm>
#include <string>
#include <vector>

#include "src/import/lowering/registry.h"

namespace annealer::lowering {
namespace {

// Vector passes of the gate arithmetic: a sigmoid 4, a tanh 4, a product or a sum 1.
constexpr double kLstmCellPasses = 4 + 4 + 4 + 3;  // i, f, g activations; c = f*c + i*g
constexpr double kLstmHiddenPasses = 4 + 4 + 1;    // o activation, tanh(c), o * tanh(c)
constexpr double kGruGatePasses = 4 + 1;           // a sigmoid of a sum
constexpr double kGruNewPasses = 4 + 2;            // n = tanh(xW + r * hR)
constexpr double kGruHiddenPasses = 3;             // h = (1 - z) * n + z * h

// The plain RNN's h = f(x·W + h·R + b): the sum, then f (torch exports Tanh or Relu).
double RnnPasses(Context& cx, const OnnxNode& node) {
  const auto it = node.attributes.find("activations");
  const std::vector<std::string> acts = it == node.attributes.end() ? std::vector<std::string>{} : it->second.texts;
  double passes = 0;
  for (const std::string& f : acts.empty() ? std::vector<std::string>{"Tanh"} : acts) {
    double p = 0;
    if (f == "Tanh" || f == "Sigmoid") p = 4;
    else if (f == "Relu") p = 1;
    else cx.Fail(node, "activation '" + f + "' is not supported (Tanh, Relu, Sigmoid)");
    passes = std::max(passes, 1 + p);
  }
  return passes;
}

void LowerRecurrent(Context& cx, const OnnxNode& node) {
  const bool lstm = node.op_type == "LSTM";
  const bool rnn = node.op_type == "RNN";
  const int gates = lstm ? 4 : rnn ? 1 : 3;
  const double rnn_passes = rnn ? RnnPasses(cx, node) : 0;
  Attr a{node};
  const Value& xv = cx.Get(node, 0);
  if (!std::holds_alternative<Act>(xv)) cx.Fail(node, "the sequence input must be an activation");
  const Const& w = cx.NeedConst(node, 1, "the input weights W");
  const Const& r = cx.NeedConst(node, 2, "the recurrence weights R");
  if (a.Int("layout", 0) != 0) cx.Fail(node, "layout = 1 (batch first) is not supported; torch exports layout 0");
  if (cx.HasInput(node, 4)) cx.Fail(node, "sequence_lens (sequences of different lengths) is not supported");
  const std::vector<int64_t> xd = std::get<Act>(xv).dims;
  if (xd.size() != 3 || w.dims.size() != 3 || r.dims.size() != 3)
    cx.Fail(node, "X [T, B, I], W [D, G*H, I] and R [D, G*H, H] are expected, got " + DimsText(xd) + ", " + DimsText(w.dims) + ", " +
                      DimsText(r.dims));
  const int64_t steps = xd[0], batch = xd[1], in = xd[2], dirs = w.dims[0], hidden = r.dims[2];
  if (w.dims[1] != gates * hidden || w.dims[2] != in || r.dims[0] != dirs || r.dims[1] != gates * hidden)
    cx.Fail(node, "the weights do not match X " + DimsText(xd) + " and hidden_size " + std::to_string(hidden));
  const std::string direction = a.Text("direction").empty() ? "forward" : a.Text("direction");
  if (!(dirs == 2 && direction == "bidirectional") && !(dirs == 1 && (direction == "forward" || direction == "reverse")))
    cx.Fail(node, "direction '" + direction + "' does not match " + std::to_string(dirs) + " weight directions");
  if (steps * dirs * (lstm ? 10 : rnn ? 3 : 9) > 16384) cx.Fail(node, "a sequence of " + std::to_string(steps) + " steps unrolls into too many ops");
  if (cx.HasInput(node, 3)) cx.problem().NoteBroadcast(cx.NeedConst(node, 3, "the biases B"));

  ProblemBuilder& pb = cx.problem();
  // One part per step: rows = the batch, columns = the input features.
  const Act x = cx.Relayout(node, std::get<Act>(xv), 2, {0});
  auto step_input = [&](int64_t t) { return x.parts.size() == 1 ? x.parts[0] : x.parts[size_t(t)]; };
  const std::string prefix = node.outputs.empty() || node.outputs[0].empty() ? node.name : node.outputs[0];
  std::vector<std::vector<TensorId>> h_of(static_cast<size_t>(dirs), std::vector<TensorId>(static_cast<size_t>(steps)));
  std::vector<TensorId> h_last, c_last;
  for (int64_t d = 0; d < dirs; ++d) {
    const std::string dir = "[dir " + std::to_string(d) + "]";
    // The initial state: zeros unless given, read like an input of the model.
    TensorId h = pb.NewTensor(batch, hidden, {prefix + "~h0" + dir, "model-input"});
    TensorId c = lstm ? pb.NewTensor(batch, hidden, {prefix + "~c0" + dir, "model-input"}) : -1;
    const bool reverse = direction == "reverse" || d == 1;
    for (int64_t i = 0; i < steps; ++i) {
      const int64_t t = reverse ? steps - 1 - i : i;
      std::vector<TensorId> xw, hr;
      for (int g = 0; g < gates; ++g) {
        const std::string block = dir + "[gate " + std::to_string(g) + "]";
        xw.push_back(pb.MatMul(step_input(t), pb.Weight(w.name, in, hidden, block), node, "matmul"));
        hr.push_back(pb.MatMul(h, pb.Weight(r.name, hidden, hidden, block), node, "matmul"));
      }
      if (rnn) {
        h = pb.Pointwise({xw[0], hr[0]}, rnn_passes, node, "recurrent-hidden");
      } else if (lstm) {
        // Gates i, o, f, c (ONNX order); c = f*c + i*g, h = o*tanh(c).
        c = pb.Pointwise({xw[0], hr[0], xw[2], hr[2], xw[3], hr[3], c}, kLstmCellPasses, node, "recurrent-cell");
        h = pb.Pointwise({xw[1], hr[1], c}, kLstmHiddenPasses, node, "recurrent-hidden");
      } else {
        // Gates z, r, h; n = tanh(x·Wh + r * (h·Rh)), h = (1 - z) * n + z * h.
        const TensorId z = pb.Pointwise({xw[0], hr[0]}, kGruGatePasses, node, "recurrent-gate");
        const TensorId rg = pb.Pointwise({xw[1], hr[1]}, kGruGatePasses, node, "recurrent-gate");
        const TensorId n = pb.Pointwise({xw[2], hr[2], rg}, kGruNewPasses, node, "recurrent-cell");
        h = pb.Pointwise({z, n, h}, kGruHiddenPasses, node, "recurrent-hidden");
      }
      h_of[size_t(d)][size_t(t)] = h;
    }
    h_last.push_back(h);
    if (lstm) c_last.push_back(c);
  }
  // Y [T, D, B, H], Y_h and Y_c [D, B, H]: the hidden states gathered, hidden size as columns.
  auto gathered = [&](std::vector<int64_t> dims, const std::vector<TensorId>& from, const std::string& name) {
    Act out;
    out.dims = std::move(dims);
    SetChannelsLayout(out, int(out.dims.size()) - 1);
    const auto [rows, cols] = PartShape(out);
    out.parts = {from.size() == 1 ? from[0] : pb.Layout(from, rows, cols, node, name)};
    return out;
  };
  std::vector<TensorId> all;
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t d = 0; d < dirs; ++d) all.push_back(h_of[size_t(d)][size_t(t)]);
  auto output_name = [&](size_t i) { return i < node.outputs.size() ? node.outputs[i] : node.name; };
  cx.Set(node, 0, gathered({steps, dirs, batch, hidden}, all, output_name(0)));
  cx.Set(node, 1, gathered({dirs, batch, hidden}, h_last, output_name(1)));
  if (lstm) cx.Set(node, 2, gathered({dirs, batch, hidden}, c_last, output_name(2)));
}

// W, R and B are weights.
bool RecurrentWeight(const OnnxGraph&, const OnnxNode&, size_t input) { return input >= 1 && input <= 3; }

}  // namespace

ConverterTable RecurrentConverters() {
  return {
      {.op_type = "LSTM", .lower = LowerRecurrent, .weight_input = RecurrentWeight},
      {.op_type = "GRU", .lower = LowerRecurrent, .weight_input = RecurrentWeight},
      {.op_type = "RNN", .lower = LowerRecurrent, .weight_input = RecurrentWeight},
  };
}

}  // namespace annealer::lowering
