// P16, activations that cross islands (eval/bound/bounds.h states the fact, docs/lower-bound.md,
// "Activations that cross islands (P16)", proves it).
#pragma once

#include <vector>

#include "eval/bound/traffic/alone.h"
#include "eval/bound/islands/internal_heads.h"
#include "eval/bound/analysis.h"
#include "eval/bound/traffic/perstep.h"
#include "eval/bound/islands/recompute.h"
#include "eval/bound/traffic/streaming.h"

namespace annealer::bound_internal {

// P16. A produced tensor t (producer p in island I, not a graph output) read by ops of other
// islands J: no subgraph holds p beside such a reader (P12), so a subgraph of J that runs a
// reader finds t neither ephemeral nor, unless the subgraph just before holds an instance of p
// and retains t (R1, V8), in fast memory: it loads |t| (P3), and t was written once, in I (V7,
// P8). One instance of p retains into one subgraph, so serving s islands takes s instances of
// p, each beyond the first computing c_p again (P7). With one weight a_I per island, every valid
// schedule costs at least
//     sum_I V_I(a_I) + sum_t min_s [sigma_t (s - 1) + (1 - a) loads of the unserved islands
//                                   + (1 - a_I) |t| / B when one is unserved],
// V_I(a) the larger of a C_I + (1 - a) T_I / B (P12's compute and traffic) and the island's P14
// lines at a; sigma_t = a_I c_p, or 0 when the P14 form is used and p may sit beside an
// activated op paying on memory (its compute there is not counted). Every amount is a load,
// write or compute of one island's subgraphs that neither P12's traffic nor P14's lines claim.
// `beside_memory`: per op, whether P14 lets it sit beside an activated op paying on memory.
// With a weight path (H6, `problem` is then WeightPathRelaxed's) a step costs max(c, w / Bw,
// o / B) >= a c + b w / Bw + (1 - a - b) o / B: each island also takes a weight b_I on the weight
// path, P12's form is a C_I + b W_I / Bw + (1 - a - b) O_I / B, and t, produced and so never a
// weight, is loaded and written on the activation path at (1 - a - b) / B; P14's form (b = 0)
// bounds M_S by (w + o) / (B + Bw), so there t counts (1 - a) / (B + Bw).
// P21: an island that is one MatMul with K > n may take, in P12's form, the least over its
// retentions of its step-by-step latency less what the crossing claims count apart (`alone`,
// per island; empty or invalid entries leave the island as it was).
// P24 (`per_step`, H6 only): P12's form adds the island's per-step claims at its point
// (PerStepIsland::Extra; they hold whatever the steps move on the activation path, so the
// crossing tensors' loads and writes still count at 1 - a - b).
// P35 (`cuts`, eval/bound/islands/recompute.h): where the home island takes P12's form, serving s
// islands costs at least s any / B less a C_U + (1 - a - b) T_U / B, plus the unserved loads and
// the write, when that is more than P16's price.
// P43 (`heads`, eval/bound/islands/internal_heads.h; used without `cuts`): in an island whose tensors it
// prices, at a point in P12's form, a tensor's readers are its heads there (each loads it in its
// first subgraph, |x| / B beyond what of N_h's compute, weight and P24 claim that subgraph may
// count, or is served) and its reading islands (P16's loads); each served reader has a chain, the
// earliest free, every other one costing at least max(a c_p + (1 - a - b) any / B, any / B less
// its share of the late ops' compute and traffic); and the write once some reader loads.
double CrossingBound(const Problem& problem, const Built& built, const std::vector<std::vector<Line>>& lines,
                     const std::vector<char>& beside_memory, const std::vector<AloneFloor>& alone = {},
                     const PerStepIsland* per_step = nullptr, const std::vector<RecomputeCut>* cuts = nullptr,
                     const InternalHeads* heads = nullptr);

}  // namespace annealer::bound_internal
