// The repeated-block start: deep models are chains of identical layers, and a schedule's cost is
// a sum over subgraphs, so a layer can be solved once as a small problem and its schedule copied
// onto every layer.
//
// Detection (FindRepeatedBlocks), with no assumption on op or tensor ids:
// 1. A topological order that keeps layers contiguous: a post-order DFS from the graph's sinks,
//    visiting an op's producers deepest first (longest path from the sources), so that a layer's
//    weight-only ops are emitted just before the op that needs them, after the previous layer.
// 2. The width of every cut of that order (tensors produced before it and consumed after it);
//    the narrowest cuts (a few smallest widths are tried) cut the order into atomic segments.
// 3. Each segment becomes a standalone problem (eval/model/subproblem.h) with its ops in a canonical
//    order (a DFS from the segment's sinks, ordered by a hash of their input cones), hashed.
//    The run of a period P of equal hashes that covers the most ops gives R repeats of a block
//    of P consecutive segments (P > 1 when a layer itself has narrow cuts: cutting it finer
//    would lose fusion across the cut); the parts before and after are searched the same way,
//    what is left forms non-repeating blocks (head, tail, gaps). Largest runs first, each run
//    is moved to a phase at a narrowest cut and extended by whole blocks equal to its own (the
//    first layer reads a graph input, so it can be cut differently inside).
// 4. Blocks are grouped into classes by EXACT equality of their standalone problems (equal
//    problems under the canonical order are isomorphic: op kinds, base costs, shapes, edges,
//    which tensors come from outside and which leave); the hash only proposes.
// 5. A block some of whose exported tensors are also consumed inside it is merged with the next
//    block: its standalone problem could keep such a tensor ephemeral where the graph needs it
//    written (eval/model/subproblem.h, condition (a)).
// 6. Phase ties: where two phases of a run cover as many blocks (e.g. a residual layer cut before
//    or after the ReLU that closes the block before it), which one composes cheaper depends on
//    the chip and the layer, so with RepeatOptions::phase_alternatives > 0 the other phases are
//    kept: up to that many other partitions (every tied run moved to its next phase at once,
//    then each tied run alone), their blocks with the chosen partition's, classes shared by
//    exact equality. The start's first round solves the chosen partition's classes alone (so it
//    is the start without the ties, to the byte); later rounds solve every class and compose
//    both the chosen partition and the cheapest chain of blocks (CheapestChain); both are offered.
//
// Composition (ComposeBlockSchedules): every block gets its class's schedule through its own id
// maps, the blocks run in order, and nothing is retained across a block boundary. Then each
// block's subgraphs cost exactly what they cost in the standalone problem (its inputs are in
// slow memory: written by an earlier block, whose standalone problem has them as graph outputs),
// so the total is the sum of the class totals times their counts.
#pragma once

#include <cstdint>
#include <vector>

#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "eval/model/subproblem.h"

namespace annealer {

struct RepeatOptions {
  // Blocks of a repeated class have at most this many ops (a bigger block is not "small").
  int64_t max_block_ops = 400;
  // A repeated block smaller than this is made of several periods (consecutive repeats), so
  // that the standalone problem still sees fusion and retention across a few periods; a
  // repetition whose blocks stay smaller (too few repeats to merge) is ignored.
  int64_t min_block_ops = 16;
  // Phase ties (step 6 above): at most this many other partitions, whose blocks are kept beside
  // the chosen one's; 0 = the chosen phase alone.
  int64_t phase_alternatives = 0;
};

struct RepeatBlock {
  Subproblem sub;  // the block's ops in canonical order, as a standalone problem
  int class_id = 0;
  int begin = 0, end = 0;  // its positions in the layout the plan cut (repeats: [begin, end))
};

struct RepeatPlan {
  std::vector<RepeatBlock> blocks;         // in execution order; their ops partition the graph's
  // Per class: its first block (in `blocks`, or for a class of the alternatives only, in
  // `alternative_blocks`) and its blocks (in `blocks`; in `alternative_blocks` for those).
  std::vector<int> representative;
  std::vector<int> count;
  bool pieces = false;                     // cut by CutIntoPieces (search/repeats/pieces.h), not by repeats
  // The phase ties' other partitions (step 6): their blocks that are not in `blocks` (each range
  // once), by position. Classes [primary_classes, classes()) occur only here; any chain of
  // blocks of `blocks` and these from position 0 to the end partitions the graph as well.
  std::vector<RepeatBlock> alternative_blocks;
  int primary_classes = 0;                 // the classes of `blocks`, numbered first
  int alternatives = 0;                    // partitions other than `blocks`
  int classes() const { return static_cast<int>(count.size()); }
  const RepeatBlock& ClassBlock(int c) const {
    return c < primary_classes ? blocks[representative[c]] : alternative_blocks[representative[c]];
  }
  int repeated_blocks() const;             // blocks of classes with count >= 2 (of `blocks`)
  int repeated_ops() const;                // their ops
};

// Empty plan (no blocks) when nothing repeats: no class occurs twice, or the repeated blocks
// hold less than half of the ops (then solving them apart is not worth the time).
RepeatPlan FindRepeatedBlocks(const Problem& problem, const RepeatOptions& options = {});

// A copy of `schedule` whose last subgraph retains nothing (retention into no subgraph only
// occupies memory; in the graph it would reach the next block, which does not expect it).
Schedule WithoutFinalRetention(Schedule schedule);

// The whole graph's schedule: block after block, each the schedule of its class (in the ids of
// the class's standalone problem, e.g. of its representative's sub; final retention dropped).
Schedule ComposeBlockSchedules(const RepeatPlan& plan, const std::vector<Schedule>& class_schedules);
// The same for any chain of blocks (of `blocks` and `alternative_blocks`) that partitions the graph.
Schedule ComposeBlockSchedules(const std::vector<const RepeatBlock*>& chain,
                               const std::vector<Schedule>& class_schedules);

// The chain of blocks from the graph's start to its end whose classes' totals sum lowest, over
// the classes for which `solved` holds (`blocks` itself when none is lower by more than rounding
// noise). A block's cost in the graph is its class's total (above), so this is the cheapest
// partition that can be composed from the blocks searched.
std::vector<const RepeatBlock*> CheapestChain(const RepeatPlan& plan, const std::vector<Latency>& totals,
                                              const std::vector<char>& solved);

}  // namespace annealer
