// P24, the per-step excess of weight-streaming MatMuls on a chip with a weight path
// (eval/bound/bounds.h lists the parts; docs/lower-bound.md, "The per-step excess of streamed
// weights (P24)", proves it).
#pragma once

#include <array>
#include <vector>

#include "eval/bound/analysis.h"

namespace annealer::bound_internal {

// P24. On a chip with a weight path (H6; no prefetch, H5, which the reader refuses beside it) a
// step costs max(compute, w / Bw, o / B) >= max(compute, w / Bw), so for a + b = 1 a subgraph S
// costs a N_S + b W_S + X_S, with N_S the native compute of its ops (P7; C_S >= N_S), W_S its
// weight-path time and X_S = sum over steps of max(c_j, w_j / Bw) - a N_S - b W_S >= 0.
// Summing over an island's subgraphs (P12): a C_I + b W_I / Bw + sum of X_S.
//
// A *twin class* is a set of MatMuls that share reduction K > n, output shape M x N, base beta,
// each with a weight RHS that it alone reads and each demanded in mode T only (Analysis), whose
// world class (P14's edges for the world (K, M x N)) holds no op that may be upstream of a k-loop
// (U) and no other MatMul, and no twin of which feeds a twin. A subgraph holding a twin then holds
// only twins (its k-loop F), Pointwise epilogues (V11 keeps Pointwise ops out of F's operands;
// L1 keeps them out of Layout ops' inputs) and Layout ops (no compute): step j of a tile computes
// |F| beta k_j / K, plus the epilogues' bases Gamma at the last step (C2, C4), and loads exactly
// |F| k_j wc weight elements (D2; consecutive steps differ in k-range, M1; only the twin reads its
// weight). Its X_S is |F| times that of one twin with Gamma / |F| of epilogue (both terms are
// homogeneous), so at least |F| delta(a), delta the least over every w, k and epilogue split of
//     sum over the tiles of [ sum_{j<last} max(beta k_j / K, k_j wc / Bw)
//                             + max(beta k_last / K + gamma, k_last wc / Bw) ]
//     - a (beta + gamma) T_native - b K N ceil(M/h) / Bw,
// which is least at h = min(n, M) (its row sum is at least K N / Bw). Every twin runs in some
// subgraph of its island (V1), so the island costs at least a C_I + b W_I / Bw + (its twins) x
// delta(a).
struct PerStepIsland {
  static constexpr int kGrid = 20;  // alpha = g / kGrid
  // Per island: the best over (a, b) on a grid of step 1 / kGrid of
  // a C_I + b W_I / Bw + (1 - a - b) O_I / B + Extra(i, a, b); 0 where no twin lies (or without
  // a weight path).
  std::vector<double> value;
  // Per island and g: the sum of its MatMuls' claims at alpha = g / kGrid (each claim is the least
  // of affine functions of alpha, so the sum is concave and above its chords).
  std::vector<std::array<double, kGrid + 1>> claims;
  int twins = 0;  // MatMuls that count
  // What the island's subgraphs cost beyond a N + b W / Bw + (1 - a - b) O / B at the point
  // (a, b): a step's activation-path term o_j, whatever it is, leaves at least (a + b) times its
  // excess at alpha = a / (a + b) (the least over o_j of max(c, w, o_j) - (1 - a - b) o_j is
  // (a + b) max(c, w)). The chord between grid points.
  double Extra(int island, double a, double b) const;
};
PerStepIsland PerStepIslands(const Problem& problem, const Analysis& a, const Built& built,
                             const std::vector<char>& weights);

// delta(a) of one twin (exposed for tests): base beta, output M x N, reduction K > n.
double PerStepExcess(double beta, Elements rows, Elements cols, Elements reduction, Elements native,
                     double weight_bandwidth, double a);

// Ablation switch for tests only (measures what P24 adds): false makes PerStepIslands claim
// nothing. Not thread-safe; never set elsewhere.
extern bool g_per_step_excess;

}  // namespace annealer::bound_internal
