// P29 (eval/bound/sums/shared_sums.h).
#include "eval/bound/sums/shared_sums.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

namespace annealer::bound_internal {

bool g_shared_sums = true;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kMaxSums = 4;            // partitions of up to 4 sums: 15
constexpr double kMaxCases = 200000;   // j-tuples of one group

// The least over the possible j-tuples of the sums in `group` (indices into `sums`) of the
// group's claim max((tau* - 1) sum X0, (1 - 1/tau*) sum U) plus each sum's m - j least f_x.
double GroupLeast(const std::vector<const SumLines::Priced*>& sums, const std::vector<std::vector<double>>& prefix,
                  const std::vector<int>& group) {
  const size_t g = group.size();
  std::vector<int> j(g, 0);
  double least = kInf;
  while (true) {
    bool possible = true;
    double tau = 1, fused = 0, unfused = 0, rest = 0;
    for (size_t i = 0; i < g && possible; ++i) {
      const SumLines::Priced& s = *sums[group[i]];
      if (!s.possible[j[i]]) {
        possible = false;
        break;
      }
      tau = std::max(tau, s.tau[j[i]]);
      fused += s.fused[j[i]];
      unfused += s.unfused[j[i]];
      const int m = static_cast<int>(s.producers.size());
      rest += prefix[group[i]][m - j[i]];
    }
    if (possible) least = std::min(least, std::max((tau - 1) * fused, (1 - 1 / tau) * unfused) + rest);
    size_t i = 0;
    for (; i < g; ++i) {
      if (++j[i] <= static_cast<int>(sums[group[i]]->producers.size())) break;
      j[i] = 0;
    }
    if (i == g) break;
  }
  return least;
}
}  // namespace

SharedSums SharedSumValue(const Problem& p, const TapLines& taps, const std::vector<OpId>& ops) {
  SharedSums r;
  r.value = SoleSumValue(p, taps, ops).value;
  if (!g_shared_sums || p.chip.two_paths()) return r;
  std::vector<char> in(p.ops.size(), 0);
  for (OpId o : ops) in[o] = 1;
  const PricedShapes by_shape = PricedSumsByShape(p, taps, ops, in);
  const double bandwidth = p.slow_memory_bandwidth;
  for (const auto& [shape, what] : by_shape) {
    const int k = static_cast<int>(what.first.size());
    if (k < 2 || k > kMaxSums || what.second) continue;
    std::vector<const SumLines::Priced*> sums;
    bool all_in = true;
    std::vector<OpId> members;
    for (int g : what.first) {
      const SumLines::Priced& s = taps.priced[g];
      sums.push_back(&s);
      for (OpId x : s.producers) all_in = all_in && in[x];
      members.push_back(s.sum);
      members.insert(members.end(), s.producers.begin(), s.producers.end());
    }
    if (!all_in) continue;
    // P25's term of this shape: its Value over the groups alone, less their compute.
    double old_term = taps.Value(p, members);
    for (OpId o : members) old_term -= taps.compute[o];
    // f_x per producer: its sole constant in a sink instance with no priced sum of the shape, or
    // what it adds beside another sum s' there (tau >= tau_least(s')).
    std::vector<std::vector<double>> prefix(k);
    double cases = 0;
    for (int a = 0; a < k; ++a) {
      std::vector<double> f;
      for (OpId x : sums[a]->producers) {
        double v = taps.sole[x] < kInf ? std::max({0.0, taps.sole[x], IsolatedFloor(taps, x)}) : kInf;
        // What S_x surely moves for x: o_x written (M2, never retained: R5) and, for a tap (its
        // RHS a graph input only x reads, V8), that weight loaded, again for every row tile when
        // K > n (n_k >= 2: every step loads its slice, M1).
        const Tensor& out = p.tensors[p.ops[x].output];
        double written = static_cast<double>(out.size());
        const TensorId rhs = p.ops[x].inputs[1];
        bool rhs_own = p.ops[x].kind == OpKind::MatMul && p.producer[rhs] == kNoOp && p.ops[x].inputs[0] != rhs;
        for (OpId c : p.consumers[rhs]) rhs_own = rhs_own && c == x;
        if (rhs_own) {
          const Elements kx = p.ReductionLength(x);
          const double rows = kx > p.native ? static_cast<double>(CeilDiv(out.height, std::min(p.native, out.height))) : 1.0;
          written += rows * static_cast<double>(p.tensors[p.ops[x].inputs[1]].size());
        }
        written /= bandwidth;
        // Beside s' = sums[b], x is a sink MatMul in the k-loop (G3) with the j' producers of s'
        // fused there, so they share x's K; its own tile is one more r x c in W (tau_beside).
        const Elements kx = p.ReductionLength(x);
        for (int b = 0; b < k; ++b) {
          if (b == a) continue;
          int same_k = 0;
          for (OpId y : sums[b]->producers) same_k += p.ReductionLength(y) == kx ? 1 : 0;
          double tau = kInf;
          for (int j = 0; j <= same_k; ++j) {
            if (sums[b]->possible[j] && sums[b]->tau_beside[j] > 0) tau = std::min(tau, sums[b]->tau_beside[j]);
          }
          if (tau == kInf) continue;  // x never runs beside s'
          v = std::min(v, std::min((tau - 1) * taps.compute[x], (1 - 1 / tau) * written));
        }
        f.push_back(v);
      }
      std::sort(f.begin(), f.end());
      prefix[a].assign(f.size() + 1, 0);
      for (size_t i = 0; i < f.size(); ++i) prefix[a][i + 1] = prefix[a][i] + f[i];
      cases = std::max(cases, 1.0) * static_cast<double>(f.size() + 1);
    }
    if (cases > kMaxCases) continue;
    // The least over the partitions of the sums into groups (one subgraph each): per subset its
    // group's least, then the partitions of each subset by the group holding its lowest sum.
    const int full = (1 << k) - 1;
    std::vector<double> group_least(full + 1, kInf), best(full + 1, kInf);
    for (int mask = 1; mask <= full; ++mask) {
      std::vector<int> group;
      for (int a = 0; a < k; ++a)
        if (mask >> a & 1) group.push_back(a);
      group_least[mask] = GroupLeast(sums, prefix, group);
    }
    best[0] = 0;
    for (int mask = 1; mask <= full; ++mask) {
      const int low = mask & -mask;
      for (int sub = mask; sub > 0; sub = (sub - 1) & mask) {
        if (!(sub & low)) continue;
        best[mask] = std::min(best[mask], group_least[sub] + best[mask ^ sub]);
      }
    }
    const double least = best[full];
    if (least < kInf && least > old_term) {
      r.value += least - old_term;
      ++r.shapes;
    }
  }
  return r;
}

}  // namespace annealer::bound_internal
