#include "eval/bound/traffic/upstream_weight.h"

#include "eval/bound/analysis.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace annealer::bound_internal {

bool g_upstream_weight = true;

namespace {

// The least over X >= 0 (the native compute of the ops that run at least phi times it) of
// max(a0 + (phi - 1) X, b0 - X): the two terms of max(C_S, W_S) - N_S.
double LeastOfMax(double a0, double b0, double phi) {
  if (b0 <= a0 || phi <= 1) return a0;
  return (a0 + (phi - 1) * b0) / phi;
}

}  // namespace

double UpstreamWeightSurplus(const Problem& problem, const std::vector<char>& weights, OpId x, double f, double p24,
                             double weight_bandwidth, double others) {
  const Op& xop = problem.ops[x];
  const double c_x = xop.base_cost * static_cast<double>(problem.NativeTiles(x));
  const Elements fifo = problem.chip.weight_fifo_capacity, n = problem.native;
  if (!g_upstream_weight || !std::isfinite(f) || fifo <= 0 || weight_bandwidth <= 0) return p24;
  const Elements k = problem.ReductionLength(x), cols = problem.tensors[xop.output].width;
  // A step requests [0, K) x C of x's weight, |C| <= c (H6's FIFO); with c < N every op of the
  // subgraph runs at least phi times its native compute where x reaches a sink by aligned edges.
  const Elements c = std::min(n, fifo / k);
  if (c < 1 || c >= cols || f < 1) return p24;
  const double phi = static_cast<double>(CeilDiv(cols, c)) / static_cast<double>(CeilDiv(cols, n));
  const double whole = static_cast<double>(k) * static_cast<double>(cols) / weight_bandwidth;
  const int num_ops = static_cast<int>(problem.ops.size());
  // A: x and what its output reaches through Pointwise ops and RHS-only MatMul reads (the columns
  // of each are x's). Exits: MatMuls that read an A op's output as their LHS.
  std::vector<char> in_a(num_ops, 0);
  std::vector<OpId> stack = {x}, exits;
  in_a[x] = 1;
  while (!stack.empty()) {
    const OpId a = stack.back();
    stack.pop_back();
    const TensorId t = problem.ops[a].output;
    for (OpId y : problem.consumers[t]) {
      const Op& op = problem.ops[y];
      bool aligned = op.kind == OpKind::Pointwise;
      if (op.kind == OpKind::MatMul) {
        if (op.inputs[0] == t) {
          if (std::find(exits.begin(), exits.end(), y) == exits.end()) exits.push_back(y);
        } else {
          aligned = true;
        }
      }
      if (aligned && !in_a[y]) {
        in_a[y] = 1;
        stack.push_back(y);
      }
    }
  }
  const double case_aligned = LeastOfMax(p24, whole - c_x - others, phi);
  if (exits.empty()) return case_aligned;
  // One exit m with a graph input for its RHS; its descendants D hold no other MatMul, no Layout op
  // and no A op, read only graph inputs and each other (m also its LHS), and no op outside D has
  // the shape of one of D's.
  if (exits.size() != 1) return p24;
  const OpId m = exits[0];
  const Op& mop = problem.ops[m];
  if (mop.inputs[1] == mop.inputs[0] || problem.producer[mop.inputs[1]] != kNoOp) return p24;
  std::vector<char> in_d(num_ops, 0);
  std::vector<OpId> d_ops = {m};
  in_d[m] = 1;
  for (size_t i = 0; i < d_ops.size(); ++i) {
    for (OpId y : problem.consumers[problem.ops[d_ops[i]].output]) {
      if (!in_d[y]) {
        in_d[y] = 1;
        d_ops.push_back(y);
      }
    }
  }
  double q = 0;
  for (OpId y : d_ops) {
    const Op& op = problem.ops[y];
    if (in_a[y] || (y != m && op.kind != OpKind::Pointwise)) return p24;
    for (TensorId t : op.inputs) {
      const OpId p = problem.producer[t];
      if (p != kNoOp && !in_d[p] && !(y == m && t == mop.inputs[0])) return p24;
    }
    q += op.base_cost * static_cast<double>(problem.NativeTiles(y));
  }
  for (OpId y = 0; y < num_ops; ++y) {
    if (in_d[y]) continue;
    const Tensor& out = problem.tensors[problem.ops[y].output];
    for (OpId z : d_ops) {
      const Tensor& shape = problem.tensors[problem.ops[z].output];
      if (shape.width == out.width && shape.height == out.height) return p24;
    }
  }
  // m's LHS producer (an A op) may be its strip producer, at its native compute.
  const OpId p = problem.producer[mop.inputs[0]];
  if (p != x) q += problem.ops[p].base_cost * static_cast<double>(problem.NativeTiles(p));
  const TensorId rhs = mop.inputs[1];
  const double extra = weights[rhs] ? static_cast<double>(problem.tensors[rhs].size()) / weight_bandwidth : 0.0;
  return std::min(case_aligned, LeastOfMax(p24, whole + extra - c_x - q - others, phi));
}

}  // namespace annealer::bound_internal
