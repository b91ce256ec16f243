// P46 (eval/bound/sums/upstream/target_instances.h).
#include "eval/bound/sums/upstream/target_instances.h"

#include <algorithm>
#include <limits>

#include "eval/bound/sums/upstream/lhs_strip_sums.h"

namespace annealer::bound_internal {

bool g_target_instances = true;
bool g_upstream_target_instances = true;

namespace {

constexpr int kLambdaSteps = 100;  // lambda on the simplex in steps of 1/100, as P34's

// k0 of a claimant in P46's scope, or a negative value when out of it: s's output and every
// Pointwise op on a path from it to a target's LHS too large to retain (R5), of s's shape; every
// target in mode T only; no other reader of those tensors (FannedStripScope's walk). The shared
// chain: the Pointwise ops every target's LHS depends on.
// With `upstream` (P47) the claimant may also run FL and its targets in any mode: an instance
// where some target runs upstream asks s's full-width rows (FL) and claims an FL configuration,
// holding any number of targets (TaggedConfigurations tags those 0: all t).
double InstanceAgain(const Problem& p, const Analysis& analysis, const UpstreamSums& base, const UpstreamSums::Claimant& cl,
                     bool upstream) {
  if (!cl.upstream || cl.fs.size() < 2) return -1;
  if (cl.full_left && !upstream) return -1;
  const Elements cap = p.fast_memory_capacity;
  const Tensor& out = p.tensors[p.ops[cl.sum].output];
  for (OpId f : cl.fs) {
    for (int m = 0; m < kModes; ++m) {
      if (m != kT && analysis.HasMode(f, m) && !upstream) return -1;
    }
  }
  // The Pointwise closure from s (FannedStripScope admits only Pointwise ops and targets' LHS reads).
  std::vector<char> in_closure(p.ops.size(), 0);
  std::vector<OpId> closure = {cl.sum};
  in_closure[cl.sum] = 1;
  for (size_t at = 0; at < closure.size(); ++at) {
    const Tensor& t = p.tensors[p.ops[closure[at]].output];
    if (t.size() + 1 <= cap || t.height != out.height || t.width != out.width) return -1;
    if (p.IsGraphOutput(p.ops[closure[at]].output)) return -1;  // written: s runs T somewhere
    for (OpId z : p.consumers[p.ops[closure[at]].output]) {
      if (p.ops[z].kind == OpKind::Pointwise && !in_closure[z]) {
        in_closure[z] = 1;
        closure.push_back(z);
      }
    }
  }
  // Per target, the closure ops its LHS depends on; their intersection.
  std::vector<int> needed_by(p.ops.size(), 0);
  for (OpId f : cl.fs) {
    std::vector<char> seen(p.ops.size(), 0);
    std::vector<OpId> stack;
    const OpId d = p.producer[p.ops[f].inputs[0]];
    if (d != kNoOp && in_closure[d]) stack.push_back(d);
    while (!stack.empty()) {
      const OpId o = stack.back();
      stack.pop_back();
      if (seen[o]) continue;
      seen[o] = 1;
      ++needed_by[o];
      for (TensorId in : p.ops[o].inputs) {
        const OpId u = p.producer[in];
        if (u != kNoOp && in_closure[u] && !seen[u]) stack.push_back(u);
      }
    }
  }
  double again = 0;
  for (OpId o : closure) {
    if (needed_by[o] == static_cast<int>(cl.fs.size())) again += base.compute[o];
  }
  return again;
}

}  // namespace

TargetInstances TargetInstanceFloor(const Problem& p, const Analysis& analysis) {
  return TargetInstanceFloor(p, analysis, LhsStripSumFloor(p, analysis));
}

TargetInstances TargetInstanceFloor(const Problem& p, const Analysis& analysis, const UpstreamSums& lhs_strip) {
  TargetInstances result;
  result.base = lhs_strip;
  for (const UpstreamSums::Claimant& cl : result.base.claimants) {
    double again = g_target_instances ? InstanceAgain(p, analysis, result.base, cl, false) : -1;
    if (again < 0 && g_target_instances && g_upstream_target_instances) {
      again = InstanceAgain(p, analysis, result.base, cl, true);
      result.upstream_claimants += again >= 0 ? 1 : 0;
    }
    result.counted.push_back(again >= 0 ? 1 : 0);
    result.again.push_back(std::max(0.0, again));
    result.claimants += again >= 0 ? 1 : 0;
  }
  std::vector<OpId> all(p.ops.size());
  for (OpId o = 0; o < static_cast<OpId>(p.ops.size()); ++o) all[o] = o;
  result.value = std::max(result.base.value, result.claimants > 0 ? result.Value(p, all) : 0.0);
  return result;
}

double TargetInstances::Value(const Problem& p, const std::vector<OpId>& ops) const {
  if (claimants == 0) return 0;
  double total = 0;
  for (OpId o : ops) total += base.compute[o];
  std::vector<char> in(p.ops.size(), 0);
  for (OpId o : ops) in[o] = 1;
  // Per claimant, its configurations: for one priced by instances, the least of mode T and, per
  // q, of the SL configurations holding q targets (Pareto-least within each: the least at any
  // lambda is the same); for the others all at once, as P40's.
  struct Priced {
    std::vector<std::array<double, 3>> tile;
    std::vector<std::vector<std::array<double, 3>>> per_targets;  // index q
    bool counted = false;
    double again = 0;
    int targets = 0;
  };
  std::vector<Priced> priced;
  bool any_upstream = false;
  auto& slots = base.memo->Of(ops, base.claimants.size());
  for (size_t i = 0; i < base.claimants.size(); ++i) {
    const UpstreamSums::Claimant& cl = base.claimants[i];
    if (!in[cl.sum]) continue;
    any_upstream = any_upstream || cl.upstream;
    Priced pr;
    pr.counted = counted[i] != 0;
    pr.again = again[i];
    pr.targets = static_cast<int>(cl.fs.size());
    const ConfigurationMemo::Entry& configured = base.Memoized(p, i, ops, slots);
    if (!pr.counted) {
      pr.tile = configured.least;
    } else {
      pr.per_targets.resize(pr.targets + 1);
      for (const UpstreamSums::Tagged& c : configured.tagged) {
        if (c.tile) {
          pr.tile.push_back(c.v);
        } else {
          pr.per_targets[c.targets <= 0 ? pr.targets : std::min(c.targets, pr.targets)].push_back(c.v);
        }
      }
      pr.tile = ParetoLeast(std::move(pr.tile));
      for (auto& set : pr.per_targets) set = ParetoLeast(std::move(set));
    }
    priced.push_back(std::move(pr));
  }
  // Without a claimant priced by instances the part is P40's there (its own island value).
  if (!any_upstream || std::none_of(priced.begin(), priced.end(), [](const Priced& pr) { return pr.counted; })) return 0;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double best = 0;
  std::vector<double> per_q, cover;
  for (int a = 0; a <= kLambdaSteps; ++a) {
    for (int b = 0; a + b <= kLambdaSteps; ++b) {
      const double l1 = static_cast<double>(a) / kLambdaSteps, la = static_cast<double>(b) / kLambdaSteps;
      const double lc = std::max(0.0, 1 - l1 - la);
      double sum = 0;
      for (const Priced& pr : priced) {
        const auto mix = [&](const std::array<double, 3>& v) { return l1 * v[0] + la * v[1] + lc * v[2]; };
        double least = kInf;
        for (const auto& v : pr.tile) least = std::min(least, mix(v));
        if (pr.counted) {
          // Mode T in one instance (above), or instances whose targets add up to t: per q the
          // least configuration, then the cheapest cover, each instance its value plus k0, less one k0.
          const int t = pr.targets;
          per_q.assign(t + 1, kInf);
          for (int q = 1; q <= t; ++q) {
            for (const auto& v : pr.per_targets[q]) per_q[q] = std::min(per_q[q], mix(v));
          }
          cover.assign(t + 1, kInf);
          cover[0] = 0;
          for (int r = 1; r <= t; ++r) {
            for (int q = 1; q <= t; ++q) {
              if (per_q[q] < kInf) cover[r] = std::min(cover[r], std::max(0.0, per_q[q]) + pr.again + cover[std::max(0, r - q)]);
            }
          }
          if (cover[t] < kInf) least = std::min(least, cover[t] - pr.again);
        }
        if (least < kInf) sum += std::max(0.0, least);
      }
      best = std::max(best, sum);
    }
  }
  return total + best;
}

}  // namespace annealer::bound_internal
