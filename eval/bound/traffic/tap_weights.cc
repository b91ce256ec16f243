#include "eval/bound/traffic/tap_weights.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <vector>

namespace annealer::bound_internal {

bool g_tap_weights = true;

namespace {

using ClassKey = std::tuple<Elements, Elements, Elements>;  // K, H, W

ClassKey KeyOf(const Problem& p, OpId m) {
  const Tensor& out = p.tensors[p.ops[m].output];
  return {p.ReductionLength(m), out.height, out.width};
}

double Native(const Problem& p, OpId op) { return p.ops[op].base_cost * static_cast<double>(p.NativeTiles(op)); }

// The ops reached from `from`'s output through op edges, stopping at Layout ops (their inputs come
// from slow memory, L1: nothing fuses across them); `from` excluded.
std::vector<OpId> Downstream(const Problem& p, OpId from) {
  std::vector<char> seen(p.ops.size(), 0);
  std::vector<OpId> out, todo{from};
  while (!todo.empty()) {
    const OpId op = todo.back();
    todo.pop_back();
    for (OpId c : p.consumers[p.ops[op].output]) {
      if (seen[c] || p.IsLayout(c)) continue;
      seen[c] = 1;
      out.push_back(c);
      todo.push_back(c);
    }
  }
  return out;
}

// The first MatMuls reached from x's output through Pointwise ops only, with whether each is reached
// on its LHS alone (false: on its RHS too, which no claim here covers).
std::vector<std::pair<OpId, bool>> FirstMatMuls(const Problem& p, OpId x) {
  std::vector<std::pair<OpId, bool>> out;
  std::vector<char> seen(p.tensors.size(), 0);
  std::vector<TensorId> todo{p.ops[x].output};
  while (!todo.empty()) {
    const TensorId t = todo.back();
    todo.pop_back();
    if (seen[t]) continue;
    seen[t] = 1;
    for (OpId c : p.consumers[t]) {
      const Op& op = p.ops[c];
      if (op.kind == OpKind::Pointwise) todo.push_back(op.output);
      if (op.kind == OpKind::MatMul) out.push_back({c, op.inputs[1] != t});
    }
  }
  return out;
}

}  // namespace

TapWeights TapWeightFloor(const Problem& p) {
  TapWeights result;
  for (OpId op = 0; op < static_cast<OpId>(p.ops.size()); ++op) result.value += Native(p, op);
  const double base = result.value;
  const Elements fifo = p.chip.weight_fifo_capacity;
  if (!g_tap_weights || !p.chip.two_paths() || fifo <= 0) return result;
  const Elements n = p.native;

  std::map<ClassKey, std::vector<OpId>> classes;
  for (OpId op = 0; op < static_cast<OpId>(p.ops.size()); ++op) {
    if (p.ops[op].kind == OpKind::MatMul) classes[KeyOf(p, op)].push_back(op);
  }
  // Pointwise ops by output shape (H, W).
  std::map<std::pair<Elements, Elements>, std::vector<OpId>> pointwise;
  for (OpId op = 0; op < static_cast<OpId>(p.ops.size()); ++op) {
    if (p.ops[op].kind != OpKind::Pointwise) continue;
    const Tensor& out = p.tensors[p.ops[op].output];
    pointwise[{out.height, out.width}].push_back(op);
  }

  for (const auto& [key, matmuls] : classes) {
    const auto [k, h, w] = key;
    if (k <= n) continue;
    // T: no input of the class is a MatMul's (P14's U is empty when K* > n).
    bool ok = true;
    std::vector<OpId> members;
    for (OpId m : matmuls) {
      for (TensorId t : p.ops[m].inputs) {
        const OpId q = p.producer[t];
        if (q != kNoOp && p.ops[q].kind == OpKind::MatMul) ok = false;
      }
      if (p.OnWeightPath(p.ops[m].inputs[1])) members.push_back(m);
    }
    if (!ok || members.empty()) continue;

    std::set<OpId> counted(matmuls.begin(), matmuls.end());  // T u F1
    auto add_shape = [&](Elements height, Elements width) {
      const auto it = pointwise.find({height, width});
      if (it != pointwise.end()) counted.insert(it->second.begin(), it->second.end());
    };
    add_shape(h, w);
    std::set<TensorId> weights;
    std::set<ClassKey> reached;
    for (OpId x : members) {
      weights.insert(p.ops[x].inputs[1]);
      const Elements wx = p.tensors[p.ops[x].inputs[1]].size();
      // One step holding x upstream and the first MatMul q on its way: both whole weights (n_k = 1
      // and one column tile, so every MatMul of the subgraph makes all its columns in each step).
      for (const auto& [q, lhs_only] : FirstMatMuls(p, x)) {
        const TensorId rhs = p.ops[q].inputs[1];
        if (!lhs_only || !p.OnWeightPath(rhs) || wx + p.tensors[rhs].size() <= fifo) ok = false;
      }
      for (OpId d : Downstream(p, x)) {
        if (p.ops[d].kind == OpKind::MatMul) reached.insert(KeyOf(p, d));
      }
    }
    if (!ok) continue;
    // F1 over every class a member may run upstream of: its MatMuls (each reading a weight, so no
    // op makes an F input on the RHS side), Pointwise ops of its shape, the producers of its LHS.
    for (const ClassKey& c : reached) {
      if (c == key) continue;
      // K_c > n: a MatMul making a k-loop input there may take its RHS in strips that no step
      // repeats, so ops above it need not compute twice; not priced.
      if (std::get<0>(c) > n) ok = false;
      for (OpId m : classes[c]) {
        if (!p.OnWeightPath(p.ops[m].inputs[1])) ok = false;
        counted.insert(m);
        const OpId lhs = p.producer[p.ops[m].inputs[0]];
        if (lhs != kNoOp) counted.insert(lhs);
      }
      add_shape(std::get<1>(c), std::get<2>(c));
    }
    if (!ok) continue;
    double weight_time = 0;
    for (TensorId t : weights) weight_time += static_cast<double>(p.tensors[t].size()) / p.chip.weight_bandwidth;
    double hiding = 0;
    for (OpId op : counted) hiding += Native(p, op);
    const double claim = (weight_time - hiding) / 2;
    if (claim > result.claim) {
      result.claim = claim;
      result.members = static_cast<int>(members.size());
      result.k = k;
      result.height = h;
      result.width = w;
    }
  }
  result.value = base + result.claim;
  return result;
}

}  // namespace annealer::bound_internal
