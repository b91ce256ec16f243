// Layer chains: a start pass that rebuilds, one at a time, each convolution that reads a
// concatenation as a chain of two or three subgraphs tied by retention (docs/search.md, "Layer
// chains"). Issue 24: on DenseNet-121 `tpu-v1` the 10-s search wrote a 3136x128 partial product
// per block and layer and loaded it back, where a chain that retains it costs only compute.
//
// A *sum* is a Pointwise op with three or more inputs, each made by a MatMul (a convolution's
// taps, or its partial products over the blocks of a concatenation). Its *group* is its private
// ancestry: the sum, and every op all of whose output's consumers are already in the group
// (walked up from the sum; an op whose output other ops read, such as a concatenated block or
// the stem's pool, bounds it). The group's MatMuls are its *taps* (read by the sum) and the
// *others*. A k-loop holds MatMuls of one reduction length (G3), so the chain is:
//
//   - taps of one length K, others of one or two lengths: [a] -> [b] -> [c], where c is the taps
//     with the sum (the k-loop: one k-step when k = K), b the rest of the group (the others and
//     their Pointwise prologues, which make the taps' LHS: retained into c), and a, only when the
//     others have two lengths, the private ancestry of the others of the length with fewer
//     MatMuls (larger length on a tie), whose outputs a retains into b;
//   - taps of two lengths and no others: [a] -> [b], a the private ancestry of the taps of the
//     length with fewer MatMuls (retained into b), b the rest with the sum.
//
// When the group fits neither case, it is taken again bounded at the other sums whose MatMuls
// have one length (convolutions, not sums of partial products): DenseNet's last layer's output
// is read only by the next layer's (or the transition's) private prologue, so the unbounded group
// holds the layer before it too, with three lengths. Every other
// case is left alone. The pieces replace the group's ops wherever they run; what is
// left of those subgraphs is split into its connected components, and the span is ordered
// topologically, the chain at the place of the subgraph that ran the sum first. Finish (the
// moves' repair) fits every piece and restores availability; the whole schedule is priced, and
// the chain is kept only when the total falls.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "search/moves/moves.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"

namespace annealer {

// The sums the pass works on, in topological order: those with a chain (LayerChainPieces with
// `single`), and none unless some sum reads a concatenation (a chain without `single`): on
// ResNets, whose sums have no concatenation, the chains of the first case with one other length
// (a bottleneck's reduction before its 3x3 taps) gave the search better starts but 10-s results
// 0-1.5 % worse (wide ResNet-50 on tpu-v1, two runs each way). Empty on every contest problem (none
// sums three MatMuls), so the pass never runs there.
std::vector<OpId> LayerChainSums(const Problem& problem);

// The chain's pieces for `sum` (each an op list in topological order and its retain set), or
// nullopt when its group is none of the two cases above; without `single`, the first case needs
// others of two lengths (the sum reads a concatenation through them).
struct ChainPiece {
  std::vector<OpId> ops;
  std::vector<TensorId> retain;
};
std::optional<std::vector<ChainPiece>> LayerChainPieces(const Problem& problem, const std::vector<int>& rank,
                                                        OpId sum, bool single = true);

// The edit that puts `sum`'s chain into `schedule` (nullopt when it has none, or a piece does not
// fit, or the span has no topological order).
std::optional<ScheduleEdit> LayerChainAt(const MoveContext& context, const Schedule& schedule, OpId sum);

// The pass: every sum of LayerChainSums in order, each chain committed when the whole schedule's
// total falls. `stop` is polled between sums.
Schedule LayerChains(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                     const std::function<bool()>& stop);

}  // namespace annealer
