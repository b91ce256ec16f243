// P24, the per-step excess of weight-streaming MatMuls on a chip with a weight path
// (eval/bound/bounds.h lists the parts; docs/lower-bound.md, "The per-step excess of streamed
// weights (P24)", proves it).
#pragma once

#include <array>
#include <limits>
#include <span>
#include <vector>

#include "eval/bound/analysis.h"

namespace annealer::bound_internal {

// P24. On a chip with a weight path (H6; no prefetch, H5, which the reader refuses beside it) a
// step costs max(c, w / Bw, o / B); one path is at the end. For a, b >= 0, a + b <= 1 and alpha = a / (a + b), the least
// over o of max(c, w, o) - (1 - a - b) o is (a + b) max(c, w), so a subgraph S costs at least
// a N_S + b W_S + (1 - a - b) O_S + (a + b) [sum_j max(c_j, w_j) - alpha c_j - (1 - alpha) w_j
// + alpha (C_S - N_S)], N_S the native compute of its ops (P7), W_S and O_S its time on each path;
// summed over an island's subgraphs (P12) the first three give a C_I + b W_I / Bw + (1 - a - b)
// O_I / B, and the brackets are at least 0.
//
// A candidate is a MatMul x with K > n whose RHS is a weight that x alone reads. Its world class
// (P14's edges for the world (K, M x N)) qualifies when it holds no U op and its MatMuls are
// candidates with x's K, shape and base (twins), none with an LHS made in the class but by a Layout
// op. A subgraph holding twins in F then holds only them, Pointwise epilogues (V11 keeps Pointwise
// ops out of F's operands; L1 out of Layout ops' inputs) and Layout ops (no compute): step j of a
// tile computes |F| beta k_j / K, plus the epilogues' bases Gamma at the last step (C2, C4), and
// loads exactly |F| k_j wc weight elements (D2; consecutive k-ranges differ, M1; only the twin reads
// its weight). Its bracket is |F| times one twin's with Gamma / |F| of epilogue (homogeneous), so at
// least |F| delta(alpha), delta the least over every w, k and epilogue split of
//     sum over the tiles of [ sum_{j<last} max(beta k_j / K, k_j wc / Bw)
//                             + max(beta k_last / K + gamma, k_last wc / Bw) ]
//     - alpha (beta + gamma) T_native - (1 - alpha) K N ceil(M/h) / Bw,
// least at h = min(n, M) (a row of tiles moves at least K N / Bw). An instance of x upstream of a
// k-loop computes at least f c_x (its least non-T factor, P7, P13; the FIFO rules out FL when the
// whole weight exceeds it and caps SR's and FR's columns), so its subgraph's bracket is at least
// alpha (f - 1) c_x. Every candidate runs somewhere (V1): it claims the least of the two (0 for the
// first when its class does not qualify), and the island costs at least the first three terms plus
// (a + b) times its candidates' claims at alpha. P16 adds the same to its P12 form.
// With one path (no prefetch) a step costs max(c, m), m >= w / B for a candidate whose RHS is a
// graph input it alone reads: the least over m >= w of max(c, m) - (1 - a) m is a max(c, w), the
// same claim at b = 0 (alpha = 1) with Bw = B and no FIFO.
// P56 (the islands' own values only; P16, P43 and P50 keep the claims above): when every twin's LHS
// is a tensor no step finds in fast memory (a graph input, or an op's output larger than the fast
// memory, made by no Layout op) that the class reads only as twins' LHS, at most q twins to one LHS,
// each step also loads M_r k_j / q of strips per twin: with two paths P48's term at that strip, on
// one path max(R0 c_j, R0 w_j + M k_j / (q B)) per column and step, the strip beside the weight.
// P57: on one path the fast memory caps an upstream instance's weight slices as the FIFO does with
// a weight path (a step's slices sit in it, W): SR and FR pass over x's columns min(n, capacity /
// K) at a time (FL, the whole weight at once, P2 rules out already when it does not fit).
struct PerStepIsland {
  static constexpr int kGrid = 20;  // alpha = g / kGrid
  // Per island: the best over (a, b) on a grid of step 1 / kGrid of
  // a C_I + b W_I / Bw + (1 - a - b) O_I / B + Extra(i, a, b); 0 where no twin lies (or without
  // a weight path).
  std::vector<double> value;
  // P49 (weight path only): the twins whose class caps gamma below what would fill their last
  // steps at some grid point (their islands' values use the capped claims; `claims`, which P16
  // and P43 add beside the compute of instances run again, stay P24's).
  int capped = 0;
  // P56: the twins whose island value counts LHS strips that no step finds in fast memory (an
  // LHS larger than the fast memory, or on one path a graph input) beyond P24's and P48's claims.
  int unheld_strips = 0;
  // Per island and g: the sum of its MatMuls' claims at alpha = g / kGrid (each claim is the least
  // of affine functions of alpha, so the sum is concave and above its chords).
  std::vector<std::array<double, kGrid + 1>> claims;
  int twins = 0;  // MatMuls that count
  int first_in_loop = 0;  // of them, those P26 keeps from claiming an upstream instance's surplus
  // What the island's subgraphs cost beyond a N + b W / Bw + (1 - a - b) O / B at the point
  // (a, b): a step's activation-path term o_j, whatever it is, leaves at least (a + b) times its
  // excess at alpha = a / (a + b) (the least over o_j of max(c, w, o_j) - (1 - a - b) o_j is
  // (a + b) max(c, w)). The chord between grid points.
  double Extra(int island, double a, double b) const;
  // Per op, its own share of `claims` (empty array of zeros for an op that claims nothing), and
  // its chord at (a, b) as Extra takes it: P43 gives a head's claim to its first subgraph's budget.
  std::vector<std::array<double, kGrid + 1>> op_claims;
  double OpExtra(OpId op, double a, double b) const;
};
// P26 (`first_in_loop`, per op, FirstInstanceInLoop's answer on the problem before Decouple; may be
// empty): a candidate whose first instance is in F has an instance in F, so it claims delta alone.
PerStepIsland PerStepIslands(const Problem& problem, const Analysis& a, const Built& built,
                             const std::vector<char>& weights, const std::vector<char>& first_in_loop = {});

// delta(a) of one twin (exposed for tests): base beta, output M x N, reduction K > n. With
// lhs_time > 0 (P48: the twin's LHS is a graph input it alone reads, on the activation path, M / B
// per reduction column), every step also loads its LHS strip, which bounds its activation term.
// P49: the epilogue compute gamma of a last step at most fill_cap (FreshFillCap).
double PerStepExcess(double beta, Elements rows, Elements cols, Elements reduction, Elements native,
                     double weight_bandwidth, double a, double lhs_time = 0,
                     double fill_cap = std::numeric_limits<double>::infinity());
// P56 on one path (a = 1; the points there are (a, 0)): delta(1) when every step of a twin also
// loads its LHS strip on the one path, lhs_time = M / (B q) per reduction column (the LHS never in
// fast memory, at most q twins of a subgraph sharing one LHS).
double OnePathStripExcess(double beta, Elements rows, Elements cols, Elements reduction, Elements native,
                          double bandwidth, double lhs_time);
// The same at every a of `alphas` (out[i] for alphas[i]), in one walk of the (k, w) grid: each
// value is the one PerStepExcess gives for that a, bit for bit.
void PerStepExcessAt(double beta, Elements rows, Elements cols, Elements reduction, Elements native,
                     double weight_bandwidth, std::span<const double> alphas, double lhs_time, double fill_cap,
                     std::span<double> out);

// Ablation switch for tests only (measures what P24 adds): false makes PerStepIslands claim
// nothing. Not thread-safe; never set elsewhere.
extern bool g_per_step_excess;
// The same for P48 alone: false prices every twin as P24 did before it.
extern bool g_lhs_strips;
// The same for P56 alone: false leaves the islands' own values at P24's, P48's and P49's claims.
extern bool g_unheld_strips;
// The same for P57 alone: false leaves a one-path upstream instance's factor uncapped.
extern bool g_upstream_capacity;

}  // namespace annealer::bound_internal
