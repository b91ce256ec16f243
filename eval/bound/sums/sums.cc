// P23 (eval/bound/sums/sums.h).
#include "eval/bound/sums/sums.h"

#include "eval/model/chip_rules.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

namespace annealer::bound_internal {

bool g_sum_excess = true;

SumLines SumFloor(const Problem& p, const Analysis& analysis) {
  SumLines result;
  const auto num_ops = static_cast<OpId>(p.ops.size());
  result.lines.assign(num_ops, {});
  // A Layout op computes nothing (L3), whatever its base.
  const auto compute = [&](OpId o) {
    return p.IsLayout(o) ? 0.0 : p.ops[o].base_cost * static_cast<double>(p.NativeTiles(o));
  };
  for (OpId o = 0; o < num_ops; ++o) result.compute.push_back(compute(o));
  std::vector<OpId> all(num_ops);
  for (OpId o = 0; o < num_ops; ++o) all[o] = o;
  const Elements n = p.native;
  const Elements cap = p.fast_memory_capacity;
  const double bandwidth = p.slow_memory_bandwidth;
  if (!g_sum_excess || p.chip.two_paths()) {
    result.value = result.Value(p, all);
    return result;
  }
  struct Input {
    double load = 0;     // |o_i| / B
    double compute = 0;  // c of its producer
    Elements q = 0;      // K of its producer when its RHS is a graph input only it reads, else 0
    OpId producer = kNoOp;
  };
  for (OpId s = 0; s < num_ops; ++s) {
    const Op& op = p.ops[s];
    if (op.kind != OpKind::Pointwise) continue;
    if (!analysis.OnlyTileMode(s)) continue;
    std::vector<Input> in;
    for (const auto& input : MatMulInputsReadOnlyBy(p, s)) {
      const TensorId t = input.first;  // named apart, not bound: lambdas below may capture them
      const OpId x = input.second;
      if (p.tensors[t].size() + 1 <= cap) continue;
      Input d;
      d.producer = x;
      d.load = static_cast<double>(p.tensors[t].size()) / bandwidth;
      d.compute = compute(x);
      const TensorId rhs = p.ops[x].inputs[1];
      bool rhs_own = p.producer[rhs] == kNoOp && p.ops[x].inputs[0] != rhs;
      for (OpId c : p.consumers[rhs]) rhs_own = rhs_own && c == x;
      d.q = rhs_own ? p.ReductionLength(x) : 0;
      in.push_back(d);
    }
    if (in.empty()) continue;
    const auto m = static_cast<int>(in.size());
    const Elements height = p.tensors[op.output].height, width = p.tensors[op.output].width;
    const double native_tiles = static_cast<double>(CeilDiv(height, n) * CeilDiv(width, n));
    // The least over the fused sets of size j, each quantity on its own (a lower bound of each):
    // U_j the m - j smallest loads, X0_j c_s and the j smallest producers' compute.
    std::vector<double> loads, computes;
    for (const Input& d : in) {
      loads.push_back(d.load);
      computes.push_back(d.compute);
    }
    std::sort(loads.begin(), loads.end());
    std::sort(computes.begin(), computes.end());
    // A graph output: the instance that writes it (V9) is the one priced, so its write counts too.
    const double written = p.IsGraphOutput(op.output) ? static_cast<double>(p.tensors[op.output].size()) / bandwidth : 0.0;
    std::vector<double> unfused(m + 1, written), fused(m + 1, compute(s));
    for (int j = 0; j <= m; ++j) {
      for (int i = 0; i < m - j; ++i) unfused[j] += loads[i];
      for (int i = 0; i < j; ++i) fused[j] += computes[i];
    }
    // T_min(j): the fewest tiles of s's grid whose top-left tile (r x c) fits u + 1 tiles and the
    // j smallest min(r, q_i) c (W), r <= min(n, H), c <= min(n, W) (V2, D4); with a chip's rules
    // also the j fused MatMuls' r x c in the accumulator (H1, with H4's factor and H2's doubling),
    // the u loaded slices and a Pointwise sink's tile in the vector buffer (H1, H2), and r, c
    // sides that H3 allows on s's shape (the grid's, V12).
    const ChipRules& rules = p.chip;
    const Elements acc_cap = rules.accumulator_capacity;
    const Elements acc_unit = rules.accumulator_factor * (rules.double_accumulator ? 2 : 1);
    const Elements vec_cap = rules.vector_capacity;
    const Elements vec_unit = rules.double_vector ? 2 : 1;
    std::vector<double> least_tiles(m + 1, std::numeric_limits<double>::infinity());
    std::vector<double> least_tiles_beside(m + 1, std::numeric_limits<double>::infinity());
    std::vector<Elements> strip(m);
    for (Elements r = 1; r <= std::min(n, height); ++r) {
      if (!SideAllowed(rules, SideAxis::kH, r, height)) continue;
      for (int i = 0; i < m; ++i) strip[i] = std::min(r, in[i].q);
      std::sort(strip.begin(), strip.end());
      Elements held = 0;  // the j smallest strips
      for (int j = 0; j <= m; ++j) {
        if (j > 0) held += strip[j - 1];
        const Elements per_column = (m - j + 1) * r + held;
        Elements c = std::min(std::min(n, width), cap / per_column);
        if (acc_cap > 0 && j > 0) c = std::min(c, acc_cap / (static_cast<Elements>(j) * r * acc_unit));
        if (vec_cap > 0) c = std::min(c, vec_cap / ((m - j + 1) * r * vec_unit));
        // H3: the largest allowed side up to c (fewer tiles with a wider one).
        if (c >= 1 && !SideAllowed(rules, SideAxis::kW, c, width)) c = c / rules.base_w * rules.base_w;
        if (c < 1) continue;
        const double tiles = static_cast<double>(CeilDiv(height, r) * CeilDiv(width, c));
        least_tiles[j] = std::min(least_tiles[j], tiles);
        // P29: one more r x c tile in W (a sink MatMul beside s), the chip's caps unchanged.
        Elements c2 = std::min(c, cap / (per_column + r));
        if (c2 >= 1 && !SideAllowed(rules, SideAxis::kW, c2, width)) c2 = c2 / rules.base_w * rules.base_w;
        if (c2 >= 1) {
          least_tiles_beside[j] = std::min(least_tiles_beside[j], static_cast<double>(CeilDiv(height, r) * CeilDiv(width, c2)));
        }
      }
    }
    std::vector<Line> lines;
    SumLines::Priced priced;
    priced.sum = s;
    for (const Input& d : in) priced.producers.push_back(d.producer);
    priced.by_j.assign(m + 1, {});
    priced.possible.assign(m + 1, 0);
    priced.least_tau = std::numeric_limits<double>::infinity();
    priced.tau.assign(m + 1, 0);
    priced.tau_beside.assign(m + 1, 0);
    priced.fused = fused;
    priced.unfused = unfused;
    for (int j = 0; j <= m; ++j) {
      if (!(least_tiles[j] < std::numeric_limits<double>::infinity())) continue;  // no S holds s so
      const double tau = std::max(1.0, least_tiles[j] / native_tiles);
      const double a = (1 - 1 / tau) * unfused[j];
      const double b = (tau - 1) * fused[j];
      lines.push_back({b, a});
      priced.by_j[j] = {b, a};
      priced.possible[j] = 1;
      priced.tau[j] = tau;
      if (least_tiles_beside[j] < std::numeric_limits<double>::infinity()) {
        priced.tau_beside[j] = std::max(1.0, least_tiles_beside[j] / native_tiles);
      }
      priced.least_tau = std::min(priced.least_tau, tau);
    }
    if (lines.empty()) continue;  // s fits in no subgraph: any claim holds, no excess
    result.lines[s] = std::move(lines);
    result.priced.push_back(std::move(priced));
    ++result.sums;
  }
  result.value = result.Value(p, all);
  return result;
}

double SumLines::Value(const Problem& p, const std::vector<OpId>& ops) const {
  double total = 0;
  std::map<std::pair<Elements, Elements>, std::vector<std::vector<Line>>> by_shape;
  for (OpId o : ops) {
    total += compute[o];
    const Tensor& out = p.tensors[p.ops[o].output];
    if (!lines[o].empty()) by_shape[{out.height, out.width}].push_back(lines[o]);
  }
  for (const auto& [shape, excess] : by_shape) total += BestOverWeight(excess, [](OpId) { return true; });
  return total;
}

}  // namespace annealer::bound_internal
