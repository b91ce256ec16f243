// P40 (eval/bound/sums/upstream/lhs_strip_sums.h).
#include "eval/bound/sums/upstream/lhs_strip_sums.h"

#include <algorithm>

#include "eval/bound/sums/upstream/lone_producers.h"
#include "eval/bound/sums/upstream/strip_sink_writes.h"

namespace annealer::bound_internal {

bool g_lhs_strip_sums = true;

namespace {
constexpr size_t kMaxStripWalk = 4096;  // past it, out of scope (P23's T claim stays with P34)
}  // namespace

StripScope FannedStripScope(const Problem& p, const Analysis& analysis, OpId s) {
  constexpr int kAllowed = (1 << kT) | (1 << kSL) | (1 << kFL);
  for (int m = 0; m < kModes; ++m) {
    if (analysis.HasMode(s, m) && !((kAllowed >> m) & 1)) return {};
  }
  if (!analysis.HasMode(s, kSL) && !analysis.HasMode(s, kFL)) return {};
  StripScope scope;
  scope.full_left = analysis.HasMode(s, kFL);
  // SL targets: MatMuls reading s's output or a Pointwise descendant's as their LHS. Tile rows:
  // no MatMul reads as its RHS a tensor that s's rows reach through Pointwise ops and LHS reads
  // (through which a region keeps its rows, D1-D3).
  const Tensor& out = p.tensors[p.ops[s].output];
  std::vector<char> pointwise_seen(p.ops.size(), 0), rows_seen(p.ops.size(), 0);
  std::vector<OpId> queue = {s};
  pointwise_seen[s] = 1;
  for (size_t at = 0; at < queue.size(); ++at) {
    if (queue.size() > kMaxStripWalk) return {};
    const TensorId t = p.ops[queue[at]].output;
    for (OpId z : p.consumers[t]) {
      const Op& zop = p.ops[z];
      if (zop.kind == OpKind::Pointwise) {
        if (!pointwise_seen[z]) {
          pointwise_seen[z] = 1;
          queue.push_back(z);
        }
        continue;
      }
      if (zop.kind != OpKind::MatMul || zop.inputs[0] != t || zop.inputs[1] == t) return {};
      if (std::find(scope.fs.begin(), scope.fs.end(), z) == scope.fs.end()) scope.fs.push_back(z);
    }
  }
  std::sort(scope.fs.begin(), scope.fs.end());
  if (analysis.HasMode(s, kSL)) {
    if (out.width > p.native || scope.fs.empty()) return {};
  } else {
    scope.fs.clear();  // no SL: the SL configurations do not apply
  }
  if (scope.full_left) {
    // The rows walk continues through the MatMuls read as LHS (their output keeps the rows).
    scope.tile_rows = true;
    std::vector<OpId> rows = queue;
    for (OpId o : rows) rows_seen[o] = 1;
    for (size_t at = 0; at < rows.size() && scope.tile_rows; ++at) {
      if (rows.size() > kMaxStripWalk) {
        scope.tile_rows = false;
        break;
      }
      const TensorId t = p.ops[rows[at]].output;
      for (OpId z : p.consumers[t]) {
        const Op& zop = p.ops[z];
        if (zop.kind == OpKind::MatMul && zop.inputs[1] == t) {
          scope.tile_rows = false;
          break;
        }
        if (zop.kind == OpKind::Layout) {
          scope.tile_rows = false;
          break;
        }
        if (!rows_seen[z]) {
          rows_seen[z] = 1;
          rows.push_back(z);
        }
      }
    }
  }
  scope.in_scope = true;
  return scope;
}

namespace {
// P55: the claimants' lone producers and sink writes, before any value is worked out.
void FinishStripClaimants(const Problem& problem, const Analysis& modes, UpstreamSums& part) {
  LoneProducerFloors(problem, modes, part);
  StripSinkWrites(problem, part);
}
}  // namespace

UpstreamSums LhsStripSumFloor(const Problem& problem, const Analysis& modes) {
  return UpstreamSumFloor(problem, modes, g_lhs_strip_sums, &FannedStripScope, &FinishStripClaimants);
}

}  // namespace annealer::bound_internal
