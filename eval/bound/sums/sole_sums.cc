// P28 (eval/bound/sums/sole_sums.h).
#include "eval/bound/sums/sole_sums.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

namespace annealer::bound_internal {

bool g_sole_sums = true;
bool g_isolated_in_sole = true;
bool g_sole_sum_write = true;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

PricedShapes PricedSumsByShape(const Problem& p, const TapLines& taps, const std::vector<OpId>& ops,
                               const std::vector<char>& in) {
  PricedShapes by_shape;
  for (size_t g = 0; g < taps.priced.size(); ++g) {
    if (!in[taps.priced[g].sum]) continue;
    const Tensor& out = p.tensors[p.ops[taps.priced[g].sum].output];
    by_shape[{out.height, out.width}].first.push_back(static_cast<int>(g));
  }
  for (OpId o : ops) {
    if (!taps.lone[o]) continue;
    const Tensor& out = p.tensors[p.ops[o].output];
    by_shape[{out.height, out.width}].second = true;
  }
  return by_shape;
}

SoleSums SoleSumValue(const Problem& p, const TapLines& taps, const std::vector<OpId>& ops) {
  SoleSums r;
  r.value = taps.Value(p, ops);
  if (!g_sole_sums || p.chip.two_paths()) return r;
  std::vector<char> in(p.ops.size(), 0);
  for (OpId o : ops) in[o] = 1;
  const PricedShapes by_shape = PricedSumsByShape(p, taps, ops, in);
  for (const auto& [shape, what] : by_shape) {
    if (what.first.size() != 1 || what.second) continue;
    const SumLines::Priced& s = taps.priced[what.first[0]];
    bool all_in = true;
    for (OpId x : s.producers) all_in = all_in && in[x];
    if (!all_in) continue;
    const int m = static_cast<int>(s.producers.size());
    // P25's term of this shape: its Value over the group alone, less the group's compute.
    std::vector<OpId> group = s.producers;
    group.push_back(s.sum);
    double old_term = taps.Value(p, group);
    for (OpId o : group) old_term -= taps.compute[o];
    // S_1 with j1 producers fused slacks P*_{j1} = max(B_j1, A_j1); every other producer has a
    // sink instance (S_1 loads its output, which only such an instance writes), claiming e_x.
    std::vector<double> e;
    for (OpId x : s.producers) e.push_back(taps.sole[x] < kInf ? std::max({0.0, taps.sole[x], IsolatedFloor(taps, x)}) : kInf);
    std::sort(e.begin(), e.end());
    std::vector<double> prefix(m + 1, 0);
    for (int i = 0; i < m; ++i) prefix[i + 1] = prefix[i] + e[i];
    // P52: S_1's sink, of s's shape and too large to keep, writes all of it; P23's U_j holds that
    // write already when s's output is a graph output.
    const Tensor& out = p.tensors[p.ops[s.sum].output];
    const double write = g_sole_sum_write && !p.IsGraphOutput(p.ops[s.sum].output) && out.size() > p.fast_memory_capacity
                             ? static_cast<double>(out.size()) / p.slow_memory_bandwidth
                             : 0.0;
    // P54: S_1 with a producer fused obtains every row strip of its LHS, at the least of the
    // producers' row frontiers.
    double lhs_rows = kInf;
    for (OpId x : s.producers) lhs_rows = std::min(lhs_rows, taps.lhs_rows.empty() ? 0.0 : taps.lhs_rows[x]);
    double least = kInf;
    for (int j1 = 0; j1 <= m; ++j1) {
      if (!s.possible[j1]) continue;
      const double at1 = s.by_j[j1].at1 + (1 - 1 / s.tau[j1]) * (write + (j1 >= 1 ? lhs_rows : 0.0));
      least = std::min(least, std::max(s.by_j[j1].at0, at1) + prefix[m - j1]);
    }
    if (least < kInf && least > old_term) {
      r.value += least - old_term;
      ++r.shapes;
    }
  }
  return r;
}

}  // namespace annealer::bound_internal
