// P39 (eval/bound/sums/taps/retained_lhs.h).
#include "eval/bound/sums/taps/retained_lhs.h"

#include <algorithm>
#include <limits>

namespace annealer::bound_internal {

double RetainedLhsAlone(const Problem& p, OpId x) {
  const Op& op = p.ops[x];
  const Elements n = p.native;
  const Tensor& lhs = p.tensors[op.inputs[0]];
  const Tensor& rhs = p.tensors[op.inputs[1]];
  const Tensor& out = p.tensors[op.output];
  const Elements room = p.fast_memory_capacity - lhs.size();
  const double bandwidth = p.slow_memory_bandwidth;
  double best = std::numeric_limits<double>::infinity();
  for (Elements r = 1; r <= std::min(n, out.height); ++r) {
    // The widest tile of r rows: fewer tiles compute and load no more.
    const Elements c = std::min(std::min(n, out.width), room / (r + 1));
    if (c < 1) break;  // room / (r + 1) only falls with r
    const double tiles = static_cast<double>(CeilDiv(out.height, r) * CeilDiv(out.width, c));
    const double compute = op.base_cost * tiles;
    const double memory =
        (static_cast<double>(CeilDiv(out.height, r)) * static_cast<double>(rhs.size()) + static_cast<double>(out.size())) /
        bandwidth;
    best = std::min(best, std::max(compute, memory));
  }
  return best;
}

double UpstreamTapCompute(const Problem& p, OpId x, Elements columns) {
  const Op& op = p.ops[x];
  const Elements n = p.native;
  const Tensor& out = p.tensors[op.output];
  const Elements c = std::min(n, columns);
  if (c < 1) return std::numeric_limits<double>::infinity();
  const double strips = op.base_cost * static_cast<double>(CeilDiv(out.height, n) * CeilDiv(out.width, c));
  const double regions = op.base_cost * static_cast<double>(out.height) * static_cast<double>(out.width) /
                         (static_cast<double>(std::min(out.height, n)) * static_cast<double>(std::min(out.width, c)));
  return std::min(strips, regions);
}

}  // namespace annealer::bound_internal
