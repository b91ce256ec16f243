// P55 (eval/bound/sums/upstream/lone_producers.h).
#include "eval/bound/sums/upstream/lone_producers.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "eval/bound/traffic/lone_matmul_memo.h"

namespace annealer::bound_internal {

bool g_lone_producers = true;

void LoneProducerFloors(const Problem& p, const Analysis& modes, UpstreamSums& part) {
  if (!g_lone_producers || p.chip.two_paths() || (p.chip.prefetch && p.chip.double_staging)) return;
  const std::vector<char> no_weights(p.tensors.size(), 0);
  LoneMatMulMemo memo;  // a network repeats its producers' shapes
  for (UpstreamSums::Claimant& cl : part.claimants) {
    std::vector<double> floors, retained;
    std::map<TensorId, double> discount;  // per LHS tensor, the most one producer saves by finding it retained
    bool any = false;
    for (const OpId x : cl.producers) {
      const Op& op = p.ops[x];
      const TensorId lhs = op.inputs[0], rhs = op.inputs[1];
      const OpId maker = p.producer[lhs];
      double loaded = 0, kept = 0;
      if (p.ReductionLength(x) > p.native && lhs != rhs && p.producer[rhs] == kNoOp &&
          (maker == kNoOp || p.ops[maker].kind == OpKind::Pointwise)) {
        loaded = std::max(0.0, memo.Latency(p, x, no_weights, false, false, false) - part.compute[x]);
        kept = loaded;
        if (maker != kNoOp && !modes.TooLarge(lhs)) {
          // Retained only from the subgraph just before (R1, V8): the one that ran the maker when it
          // is priced, else a run of it again, which adds the maker's compute there.
          kept = std::min(loaded, std::max(0.0, memo.Latency(p, x, no_weights, true, false, false) - part.compute[x]));
          const double either = std::min(loaded, kept + part.compute[maker]);
          double& d = discount[lhs];
          d = std::max(d, either - kept);
          loaded = either;
        }
      }
      if (!std::isfinite(loaded) || !std::isfinite(kept)) loaded = kept = 0;  // no shape fits: claim nothing
      any = any || kept > 0 || loaded > 0;
      floors.push_back(loaded);
      retained.push_back(kept);
    }
    if (!any) continue;
    std::sort(floors.begin(), floors.end());
    std::sort(retained.begin(), retained.end());
    cl.lone_floors = std::move(floors);
    cl.lone_retained = std::move(retained);
    cl.lone_discount = 0;
    for (const auto& [lhs, d] : discount) cl.lone_discount += d;
  }
}

}  // namespace annealer::bound_internal
