// What the repeated-block start (search/repeats/repeats.h) reports to the driver's caller: shared by the
// driver, which fills it, and the search command, which prints it.
#pragma once

#include <cstdint>
#include <string>

#include "eval/model/problem.h"

namespace annealer {

struct RepeatResult {
  bool pieces = false;      // the piece start (search/repeats/pieces.h): the blocks are pieces
  int blocks = 0;           // blocks the graph was cut into (repeated ones and the rest)
  int classes = 0;          // distinct blocks up to isomorphism (each solved once)
  int repeated_blocks = 0;  // blocks whose class occurs at least twice
  int largest_class = 0;    // occurrences of the most frequent class
  int block_ops = 0;        // ops of one block of the most frequent class
  double seconds = 0;       // detection, the sub-searches and the composition
  // What is proven of the classes' schedules, each as a standalone block (its inputs in slow
  // memory, its outputs written, nothing retained across its boundary): `bound_met` meet the
  // block's own lower bound (optimal outright), `exact_optimal` more were proven optimal within
  // the exact solver's family (docs/exact-solver.md). When every class is one or the other, the
  // composed schedule is optimal among the schedules that keep block boundaries, within that
  // family; nothing is claimed about schedules that fuse or retain across them.
  int bound_met = 0;
  int exact_optimal = 0;
  // The block proofs after the composition (the exact solver on each class still unproven, in
  // place of the solver on the whole graph): runs, their states, their time.
  int proof_runs = 0;
  int proof_too_large = 0;  // unproven classes of more ops than exact.max_subgraph_ops: not tried
  int64_t proof_states = 0;
  double proof_seconds = 0;
  int64_t moves = 0;        // moves of the sub-searches
  // It ran alongside the workers' first epochs (SearchSummary::setup_seconds), not before them.
  bool overlapped = false;
  // The rounds (search/repeats/rounds.h): compositions made (1 without further rounds), the
  // round the workers walk from, and the first round's and that round's totals after the
  // passes a new best gets (0 when nothing was composed).
  int rounds = 0;
  int chosen_round = 0;
  Latency polished_first = 0;
  Latency polished = 0;
  // The composed schedule's total (the evaluator's, = the sum of the blocks' totals), before the
  // passes: of the round taken (`chosen_round`'s, the one the workers walk from), and of round 1.
  // 0 when no schedule was composed (`note` then says why). `bound_met` and `exact_optimal` count
  // the proofs of the round taken (a later round keeps round 1's proven classes and may prove
  // more).
  Latency total = 0;
  Latency total_first = 0;
  // Phase ties (search/repeats/repeats.h, step 6): the other partitions kept, the classes only
  // they have (counted in `classes`), and the cheapest chain of blocks as composed in the round
  // taken, when it is not the chosen partition (else 0).
  int alternatives = 0;
  int alternative_classes = 0;
  // The classes that have a schedule in the round taken: the chosen partition's, and the
  // alternatives' once a later round has searched them (round 1 leaves them to later rounds).
  // The proof counts above are out of these.
  int searched_classes = 0;
  Latency chain_total = 0;
  std::string note;
};

}  // namespace annealer
