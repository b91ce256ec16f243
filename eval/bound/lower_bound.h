// The lower bound's result types: what ComputeLowerBound (eval/bound/bounds.h, which states the
// facts P1-P57 each part rests on) reports part by part, and the per-op model RemainingLowerBound
// reads. Their own header so that the parts (eval/bound/analysis.h) build into them without
// depending on the entry points that call the parts.
#pragma once

#include <string>
#include <vector>

#include "eval/model/problem.h"

namespace annealer {

// One line of the explanation: a tensor moved at least `elements` elements in every schedule
// (or, for mode terms, in the cheapest mode of the op that carries it, at the bound's weight).
struct BoundTerm {
  TensorId tensor = -1;
  OpId op = kNoOp;       // the consumer that loads it, or the producer that writes it
  std::string why;       // one line, citing the fact (P1..P15) and spec ids
  Elements elements = 0;
};

struct LowerBound {
  // Sum over ops of base_cost x native tiles of its output: no schedule computes less (C3, P7).
  Latency compute = 0;
  // Every graph input must be loaded and every graph output written at least once.
  Latency graph_io = 0;
  // Forced traffic (P3-P11) / bandwidth: every op in the mode that moves the least.
  Latency traffic = 0;
  // max over a of a * compute + (1 - a) * traffic, with each op's mode chosen per a.
  Latency combined = 0;
  double weight = 1;  // the a that gives `combined`
  // P12: the sum over islands (ops that may share a subgraph, transitively) of
  // max(island compute, island forced traffic / bandwidth, its P14 sum, its P18 sum, and for
  // an island of one MatMul with K > n its least step-by-step latency, P21, and its P23 and P25
  // sums).
  Latency islands = 0;
  int island_count = 0;
  // Per island (P12): its value inside `islands` (their sum is `islands`), and per op its island,
  // so that a schedule's subgraphs can be set against the value of the island they lie in.
  std::vector<Latency> island_values;
  std::vector<int> island_of;
  // P24: MatMuls whose per-step excess (weights streamed over k-steps that compute less) the
  // islands part counts, on a chip with a weight path (H6).
  int per_step_twins = 0;
  // P26: of them, the MatMuls that have a mode upstream of a k-loop but run in their own k-loop in
  // every schedule (their output written for a Layout op, or a Layout op between them and every
  // MatMul below), so they claim their excess in full.
  int first_in_loop_twins = 0;
  // P50: windows (a Layout op gathered for a reader of another island than its input's maker)
  // whose PCIe transfers the islands part counts beyond the compute that may first run there.
  int gather_windows = 0;
  // P49: of them, the MatMuls whose claim in their island's own value rises because the fresh
  // compute that may fill their last k-steps is capped (weight path only; 0 elsewhere).
  int fill_capped_twins = 0;
  // P56: of them, the MatMuls whose claim in their island's own value rises because every step
  // loads their LHS strip, an LHS no step finds in fast memory (larger than it, or a graph input).
  int unheld_strip_twins = 0;
  // P14, P15, P19: per op, compute (or, at the weight a, its own loads) plus the weight (and,
  // P19, streamed activation) time of heavy MatMuls that no other op's compute can hide, plus
  // the reloads of ops that sit alone;
  // `streaming_ops` heavy ops count.
  Latency streaming = 0;
  int streaming_ops = 0;
  // P16: per island the larger of P12's a x compute + (1 - a) x traffic and its P14 lines at a,
  // plus the activations that cross islands: loaded in each reading island that the subgraph
  // before does not serve by retaining them, written once, or their producer recomputed to serve.
  Latency crossing = 0;
  // P17: the time of the transfers every schedule makes, counted on the problem itself: graph
  // inputs loaded and Layout outputs gathered once, graph outputs and Layout inputs written once,
  // and the reloads of sinks that sit alone beside a Pointwise producer. Memory only.
  Latency memory_floor = 0;
  // P18: per op, a x compute + (1 - a) x its own loads at the tiles the fast memory allows a
  // k-loop MatMul (each tile pays the base, C2; k < K reloads operands per tile, M1), or a
  // Pointwise op on the tile side (P27: base per tile, C1, C4), best a.
  Latency tiles = 0;
  // P23: per op its compute, plus for each sum of MatMul outputs too large to retain that can
  // only run at the grid's tiles the slack its subgraph must have: the tiles its working set
  // allows inflate every op's compute, or the outputs it does not make beside it are loaded.
  Latency sums = 0;
  int sum_count = 0;  // the sums priced so
  // P25: P23's prices plus, for each MatMul whose output is too large to retain and leaves its
  // subgraph (read by nothing or by a priced sum), the write and weight loads its own subgraph
  // must pay beyond its compute. Never below `sums`.
  Latency taps = 0;
  int tap_count = 0;  // the taps priced so
  // P28: P25 with each output shape that holds one priced sum and no tap read by nothing priced at
  // its subgraphs' maxima (each subgraph's larger weight, not a mix at one lambda). Never below
  // `taps`.
  Latency sole_sums = 0;
  int sole_sum_count = 0;  // the shapes priced so
  // P29: P28 with each output shape that holds two to four priced sums (and no tap read by
  // nothing) priced case by case: which sums share a subgraph, each group at its subgraph's
  // larger weight, the other producers in their sink instances. Never below `sole_sums`.
  Latency shared_sums = 0;
  int shared_sum_count = 0;  // the shapes priced so
  // P35: P16 with the loads that an island served by its producer run again costs the chain of
  // subgraphs that make the crossing tensor before it (eval/bound/islands/recompute.h); never below
  // `crossing`.
  Latency recompute = 0;
  int recompute_count = 0;  // the crossing tensors priced so
  // P43: P16 with, in islands where every tensor it prices qualifies, the heads there that load
  // their operand in their first subgraph (MatMuls P26 keeps in their k-loop, V11 keeping the
  // operand's Pointwise producer out) counted beside the reading islands, and every serving chain
  // but the earliest priced at its loads (eval/bound/islands/internal_heads.h); never below `crossing`.
  Latency internal_heads = 0;
  int internal_head_count = 0;  // the heads in islands priced so
  // P33: per op a x compute + (1 - a) x its own loads, plus for each sum of taps that sit alone
  // when it leaves them out (K > n, LHS a graph input or Pointwise-made) what its first subgraph's
  // tiles and the lone taps' own subgraphs must pay; best a.
  Latency lone_taps = 0;
  int lone_tap_sums = 0;  // the sums priced so
  // P34: per op its compute, plus P23's sums and the sums that may run upstream of a k-loop (their
  // outputs reach one MatMul's LHS with K <= n through Pointwise ops), each priced over the ways
  // its subgraph can hold it (mode T at the tiles its working set allows, or making the MatMul's
  // LHS strips in one k-step or in several, loading its unfused inputs once per column tile), at
  // three weights per subgraph mixed by one lambda.
  Latency upstream_sums = 0;
  int upstream_sum_count = 0;  // the upstream sums among its claimants
  // P40: P34 with the upstream sums' outputs allowed to fan out to several MatMuls' LHS (through
  // Pointwise ops of any number of consumers) and with sums that may run FL; never below
  // `upstream_sums`.
  Latency lhs_strip_sums = 0;
  int lhs_strip_sum_count = 0;  // the upstream sums among its claimants
  // P46: P40 with the sums that feed several taps in mode T only, whose outputs are never
  // retained, priced as once in mode T or once per group of targets an instance's tiles can hold
  // (P47: also the sums that may run FL, with targets in any mode); never below `lhs_strip_sums`.
  Latency target_sums = 0;
  int target_sum_count = 0;  // the sums priced by their instances
  // P36: per op its compute, plus, for each Pointwise op that waits for a tensor gathered (Layout)
  // from its other input's descendants and whose output no reader can share its subgraph, what its
  // first subgraph's loads and write cost beyond that subgraph's first runs' compute.
  Latency squeeze = 0;
  int squeeze_count = 0;  // the multiplies priced so
  // P42 (weight path and FIFO only): per op its compute, plus half of what the weights of one class
  // of k-split MatMuls (one K > n, one output shape) exceed the compute that may hide them.
  Latency tap_weights = 0;
  int tap_weight_members = 0;  // the members of the class priced (0: none)
  // P38: priced sums (P23) whose unfused inputs, written and loaded inside their island, raise the
  // island's value (inside `islands`, no part of its own; eval/bound/sums/written_sums.h).
  int written_sum_count = 0;
  // P32: tensors too large to retain whose write (and loads, unless P19 streams them) one
  // island's P14 lines claim beside their own (inside `islands`, no part of its own).
  int island_activations = 0;
  // Terms of the traffic at `weight` (largest first), then the fixed terms.
  std::vector<BoundTerm> explanation;
  // The largest of the parts (kBoundParts).
  Latency total() const;
};

// The parts of the bound, each a lower bound of its own (total() is their maximum), with the
// count that qualifies a part where it has one, in the order every listing gives them: `annealer
// bound` (text and --json), `annealer evaluate --json` and Python's lower_bound(parts=True). One
// table, so that a new part is named once. `what` is the text listing's gloss, a count in it
// written where it says {n}; the gloss of `combined` and `islands`, which cite several figures,
// is the listing's own.
struct BoundPart {
  const char* name;   // the key in JSON and Python
  const char* label;  // the text listing's
  Latency LowerBound::*value;
  const char* count_name = nullptr;  // the key of its count, when it has one
  int LowerBound::*count = nullptr;
  const char* what = nullptr;
};
inline constexpr BoundPart kBoundParts[] = {
    {"compute", "compute", &LowerBound::compute, nullptr, nullptr, "base cost x native tiles, every op once"},
    {"graph_io", "graph I/O", &LowerBound::graph_io, nullptr, nullptr, "graph inputs loaded, outputs written once"},
    {"traffic", "traffic", &LowerBound::traffic, nullptr, nullptr, "forced loads and writes / bandwidth"},
    {"combined", "combined", &LowerBound::combined},
    {"islands", "islands", &LowerBound::islands, "island_count", &LowerBound::island_count},
    {"streaming", "streaming", &LowerBound::streaming, "streaming_ops", &LowerBound::streaming_ops,
     "compute + weight loads of {n} MatMuls that no other op's compute can hide, streamed activations + reloads of "
     "ops that sit alone, P14-P15, P19"},
    {"crossing", "crossing", &LowerBound::crossing, nullptr, nullptr,
     "islands at a weight each, + activations read in other islands: loaded unless retained, P16; with P21, P24"},
    {"recompute", "recompute", &LowerBound::recompute, "recompute_count", &LowerBound::recompute_count,
     "P16 with {n} crossing tensors whose producer, run again to serve an island, reloads what it is made from "
     "first, P35"},
    {"internal_heads", "heads", &LowerBound::internal_heads, "internal_head_count", &LowerBound::internal_head_count,
     "P16 with {n} heads that load their operand first or are served, and every serving chain but the earliest at "
     "its loads, P43"},
    {"memory_floor", "memory", &LowerBound::memory_floor, nullptr, nullptr,
     "graph I/O + Layout inputs written + reloads of sinks that sit alone, P17"},
    {"tiles", "tiles", &LowerBound::tiles, nullptr, nullptr,
     "per op at the tiles the fast memory allows: MatMul base per tile, operands reloaded, upstream weights "
     "streamed per tile, P18, P22"},
    {"sums", "sums", &LowerBound::sums, "sum_count", &LowerBound::sum_count,
     "compute + what {n} sums of outputs too large to retain cost their subgraphs: tiles that shrink or outputs "
     "loaded, P23"},
    {"taps", "taps", &LowerBound::taps, "tap_count", &LowerBound::tap_count,
     "P23 + what {n} MatMuls whose outputs leave their subgraphs pay there: the write and weight loads beyond "
     "their compute, P25"},
    {"sole_sums", "sole sums", &LowerBound::sole_sums, "sole_sum_count", &LowerBound::sole_sum_count,
     "P25 with {n} output shapes of one priced sum each at their subgraphs' larger weight, not a mix, P28"},
    {"shared_sums", "shared sums", &LowerBound::shared_sums, "shared_sum_count", &LowerBound::shared_sum_count,
     "P28 with {n} output shapes of 2-4 priced sums priced by which sums share a subgraph, P29"},
    {"lone_taps", "lone taps", &LowerBound::lone_taps, "lone_tap_sums", &LowerBound::lone_tap_sums,
     "a x compute + (1-a) x own loads, + what {n} sums of K > n taps cost their first subgraph's tiles and the "
     "taps that then sit alone, P33"},
    {"upstream_sums", "upstream sums", &LowerBound::upstream_sums, "upstream_sum_count",
     &LowerBound::upstream_sum_count,
     "compute + P23's sums and {n} sums that may make a k-loop MatMul's LHS strips, each at the least of its ways, "
     "three weights mixed, P34"},
    {"lhs_strip_sums", "LHS-strip sums", &LowerBound::lhs_strip_sums, "lhs_strip_sum_count",
     &LowerBound::lhs_strip_sum_count,
     "P34 with {n} sums whose outputs may make the LHS strips of one or more MatMuls, through Pointwise ops that "
     "fan out, P40"},
    {"target_sums", "target sums", &LowerBound::target_sums, "target_sum_count", &LowerBound::target_sum_count,
     "P40 with {n} sums that feed several taps, never written: once in mode T or once per group of taps an "
     "instance holds, P46"},
    {"squeeze", "squeeze", &LowerBound::squeeze, "squeeze_count", &LowerBound::squeeze_count,
     "compute + what the first subgraphs of {n} multiplies waiting for a tensor gathered from their own input "
     "pay beyond it: loads and write, P36"},
    {"tap_weights", "tap weights", &LowerBound::tap_weights, "tap_weight_members", &LowerBound::tap_weight_members,
     "compute + half of what the weights of {n} k-split MatMuls of one class exceed the compute that may hide "
     "them, P42"},
};

inline Latency LowerBound::total() const {
  Latency best = this->*kBoundParts[0].value;
  for (const BoundPart& part : kBoundParts) {
    if (this->*part.value > best) best = this->*part.value;
  }
  return best;
}

// Precomputed per-op terms for RemainingLowerBound (cheap to evaluate many times).
struct BoundModel {
  struct Write {
    OpId producer = kNoOp;
    Elements elements = 0;
  };
  struct Option {  // one mode of one op
    int mode = 0;
    Latency compute = 0;
    Elements loads = 0;
    std::vector<Write> writes;  // writes this mode forces (P8), owned by their producer
  };
  struct Fixed {  // traffic that does not depend on modes
    std::vector<OpId> owners;  // counts while any owner has not run yet
    Elements elements = 0;
  };
  std::vector<std::vector<Option>> options;  // per op, never empty
  std::vector<Fixed> fixed;
  double bandwidth = 1;
  double weight = 1;  // the maximising a of the whole problem
};

}  // namespace annealer
