#include "search/baseline.h"

#include <stdexcept>
#include <string>

#include "eval/cost_cache.h"
#include "eval/subgraph_cost.h"
#include "eval/traversal.h"

namespace annealer {

namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Tile sides worth trying: the native size and its halvings down to a sixteenth. Smaller
// tiles only add steps (compute is charged per tile, spec C1/C2) and are never needed to fit a
// single op of the bundled problems; they stay reachable by the search.
std::vector<Elements> Sides(Elements native, Elements limit) {
  std::vector<Elements> sides;
  for (Elements s = native; s >= 1 && sides.size() < 5; s /= 2) {
    if (s <= limit) sides.push_back(s);
  }
  if (sides.empty()) sides.push_back(std::min(native, limit));
  return sides;
}

}  // namespace

Schedule BuildBaseline(const Problem& problem, CostCache* cache) {
  Schedule schedule;
  const Elements n = problem.native;
  for (OpId op : problem.topological_order) {
    const Op& spec = problem.ops[op];
    const Tensor& out = problem.tensors[spec.output];
    const bool matmul = spec.kind == OpKind::MatMul;
    const std::vector<Elements> ks = matmul ? Sides(n, problem.ReductionLength(op))
                                            : std::vector<Elements>{1};
    Subgraph best;
    double best_latency = -1;
    for (Elements h : Sides(n, n)) {
      for (Elements w : Sides(n, n)) {
        // With the tile fixed, a smaller k splits the same loads and compute into more steps
        // and hides less of the first load and the last write, so the largest k that fits wins.
        bool fitted = false;
        for (Elements k : ks) {
          if (fitted) break;
          // Every tile charges at least base_cost (spec C1, C2): prune what cannot win.
          const int64_t tiles = CeilDiv(out.height, h) * CeilDiv(out.width, w);
          if (best_latency >= 0 && static_cast<double>(tiles) * spec.base_cost >= best_latency) {
            continue;
          }
          for (TraversalPattern pattern : kAllTraversalPatterns) {
            Subgraph candidate;
            candidate.ops = {op};
            candidate.granularity = {w, h, k};
            candidate.traversal =
                MakeTraversal(pattern, CeilDiv(out.height, h), CeilDiv(out.width, w));
            static const std::vector<TensorId> kNothing;
            SubgraphReport report;
            bool ok = false;
            if (cache != nullptr) {
              ok = cache->LookupValid(problem, candidate, kNothing, report);
            } else {
              const SubgraphResult result = CostSubgraph(problem, candidate, kNothing);
              ok = result.ok();
              report = result.report;
            }
            fitted = fitted || ok;
            if (ok && (best_latency < 0 || report.latency < best_latency)) {
              best_latency = report.latency;
              best = std::move(candidate);
            }
          }
        }
      }
    }
    if (best_latency < 0) {
      throw std::runtime_error("op " + std::to_string(op) +
                               " fits in fast memory at no granularity on its own");
    }
    schedule.subgraphs.push_back(std::move(best));
  }
  return schedule;
}

}  // namespace annealer
