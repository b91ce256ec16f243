// P38 (eval/bound/sums/written_sums.h).
#include "eval/bound/sums/written_sums.h"

#include <algorithm>
#include <limits>

#include "eval/bound/traffic/streaming.h"
#include "eval/model/chip_rules.h"

namespace annealer::bound_internal {

bool g_written_sums = true;

namespace {

// One written sum's lines, one per (j, rho) that some subgraph can hold: at a = 0 W_{j,rho}, at
// a = 1 (tau_{j,rho} - 1) X0_j. Empty when no subgraph can hold s (then any claim holds).
std::vector<Line> SumLines38(const Problem& p, const Analysis& analysis, OpId s,
                             const std::vector<std::pair<TensorId, OpId>>& in) {
  const auto compute = [&](OpId o) {
    return p.IsLayout(o) ? 0.0 : p.ops[o].base_cost * static_cast<double>(p.NativeTiles(o));
  };
  const Elements n = p.native;
  const Elements cap = p.fast_memory_capacity;
  const double bandwidth = p.slow_memory_bandwidth;
  const auto m = static_cast<int>(in.size());
  std::vector<double> moved, computes;
  std::vector<Elements> sizes, q(m);
  for (int i = 0; i < m; ++i) {
    const auto [t, x] = in[i];
    const double size = static_cast<double>(p.tensors[t].size());
    moved.push_back(2 * size / bandwidth);  // o_i has a reader, s: no graph output, so written too
    computes.push_back(compute(x));
    sizes.push_back(p.tensors[t].size());
    const TensorId rhs = p.ops[x].inputs[1];
    bool rhs_own = p.producer[rhs] == kNoOp && p.ops[x].inputs[0] != rhs;
    for (OpId c : p.consumers[rhs]) rhs_own = rhs_own && c == x;
    q[i] = rhs_own ? p.ReductionLength(x) : 0;
  }
  std::sort(moved.begin(), moved.end());
  std::sort(computes.begin(), computes.end());
  std::sort(sizes.begin(), sizes.end());
  // retained[rho]: the rho least |o_i| (a lower bound on what rho retained inputs hold in W).
  std::vector<Elements> retained(1, 0);
  for (Elements size : sizes) {
    if (retained.back() + size > cap) break;
    retained.push_back(retained.back() + size);
  }
  const int most_retained = static_cast<int>(retained.size()) - 1;
  const Elements height = p.tensors[p.ops[s].output].height, width = p.tensors[p.ops[s].output].width;
  const double native_tiles = static_cast<double>(CeilDiv(height, n) * CeilDiv(width, n));
  const ChipRules& rules = p.chip;
  const Elements acc_cap = rules.accumulator_capacity;
  const Elements acc_unit = rules.accumulator_factor * (rules.double_accumulator ? 2 : 1);
  const Elements vec_cap = rules.vector_capacity;
  const Elements vec_unit = rules.double_vector ? 2 : 1;
  const double none = std::numeric_limits<double>::infinity();
  // least[j][rho]: the fewest tiles of s's grid with j fused, rho retained.
  std::vector<std::vector<double>> least(m + 1, std::vector<double>(most_retained + 1, none));
  std::vector<Elements> strip(m);
  for (Elements r = 1; r <= std::min(n, height); ++r) {
    if (!SideAllowed(rules, SideAxis::kH, r, height)) continue;
    for (int i = 0; i < m; ++i) strip[i] = std::min(r, q[i]);
    std::sort(strip.begin(), strip.end());
    Elements held = 0;  // the j least strips
    for (int j = 0; j <= m; ++j) {
      if (j > 0) held += strip[j - 1];
      for (int rho = 0; rho <= std::min(most_retained, m - j); ++rho) {
        const Elements slices = m - j - rho + 1;
        if (retained[rho] >= cap) continue;
        Elements c = std::min(std::min(n, width), (cap - retained[rho]) / (slices * r + held));
        if (acc_cap > 0 && j > 0) c = std::min(c, acc_cap / (static_cast<Elements>(j) * r * acc_unit));
        if (vec_cap > 0) c = std::min(c, vec_cap / (slices * r * vec_unit));
        // H3: the largest allowed side up to c (fewer tiles with a wider one).
        if (c >= 1 && !SideAllowed(rules, SideAxis::kW, c, width)) c = c / rules.base_w * rules.base_w;
        if (c < 1) continue;
        least[j][rho] = std::min(least[j][rho], static_cast<double>(CeilDiv(height, r) * CeilDiv(width, c)));
      }
    }
  }
  std::vector<Line> lines;
  double fused = compute(s);
  for (int j = 0; j <= m; ++j) {
    if (j > 0) fused += computes[j - 1];
    for (int rho = 0; rho <= std::min(most_retained, m - j); ++rho) {
      if (!(least[j][rho] < none)) continue;
      const double tau = std::max(1.0, least[j][rho] / native_tiles);
      double written = 0;
      for (int i = 0; i < m - j - rho; ++i) written += moved[i];
      lines.push_back({written, (tau - 1) * fused});
    }
  }
  // Mode SL: s and its fused producers make the strips R x [0, K*) of a k-loop LHS once per
  // column tile of that MatMul's grid, at least Factor(s, SL) times their native compute (C3,
  // P22); the working set is not read there, so every (j, rho) with rho fitting is possible.
  if (analysis.HasMode(s, kSL)) {
    const double factor = static_cast<double>(analysis.Factor(s, kSL));
    fused = compute(s);
    for (int j = 0; j <= m; ++j) {
      if (j > 0) fused += computes[j - 1];
      for (int rho = 0; rho <= std::min(most_retained, m - j); ++rho) {
        double written = 0;
        for (int i = 0; i < m - j - rho; ++i) written += moved[i];
        lines.push_back({written, (factor - 1) * fused});
      }
    }
  }
  return lines;
}

}  // namespace

WrittenSums WrittenSumIslands(const Problem& p, const Analysis& analysis, const Built& built) {
  WrittenSums result;
  result.island_value.assign(built.islands, 0);
  if (!g_written_sums || p.chip.two_paths()) return result;
  // Per island, each written sum's lines and, last, {T_I / B at a = 0, C_I at a = 1}.
  std::vector<std::vector<std::vector<Line>>> lines(built.islands);
  for (OpId s = 0; s < static_cast<OpId>(p.ops.size()); ++s) {
    // Modes T and SL only: a full mode (P13) or an RHS strip is not priced here.
    if (p.ops[s].kind != OpKind::Pointwise || analysis.HasMode(s, kSR) || analysis.HasMode(s, kFL) ||
        analysis.HasMode(s, kFR)) {
      continue;
    }
    const auto in = MatMulInputsReadOnlyBy(p, s);
    if (in.empty()) continue;
    const int island = built.island_of[s];
    bool same_island = true;  // always (x_i -> s is an epilogue edge), and W's writes need it
    for (const auto& input : in) same_island = same_island && built.island_of[input.second] == island;
    if (!same_island) continue;
    std::vector<Line> own = SumLines38(p, analysis, s, in);
    if (!own.empty()) lines[island].push_back(std::move(own));
  }
  for (int i = 0; i < built.islands; ++i) {
    if (lines[i].empty()) continue;
    const int count = static_cast<int>(lines[i].size());
    const double compute = built.island_compute[i];
    const double traffic = static_cast<double>(built.island_traffic[i]) / p.slow_memory_bandwidth;
    lines[i].push_back({{traffic, compute}});
    result.island_value[i] = BestOverWeight(lines[i], [](OpId) { return true; });
    if (result.island_value[i] > std::max(compute, traffic) * (1 + 1e-12)) result.sums += count;
  }
  return result;
}

}  // namespace annealer::bound_internal
