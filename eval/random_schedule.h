// Random problems and schedules for property tests and benchmarks. Deterministic given the
// generator state: the same seed gives the same problems, schedules and edits.
#pragma once

#include <cstdint>
#include <random>

#include "eval/cost/incremental.h"
#include "eval/model/problem.h"
#include "eval/model/schedule.h"

namespace annealer {

enum class DagShape {
  kChain,        // each op consumes the previous op's output
  kDiamond,      // two branches from one tensor joined by a Pointwise op (or x @ W + x)
  kFanOut,       // ops consume earlier tensors at random: fan-out, long edges
  kMatMulChain,  // MatMuls only, each on the previous output
  kSharedInput,  // MatMuls sharing graph inputs (the same weight or the same activation)
  kMultiSink,    // several Pointwise ops of one shape on the same tensor
  kMixed,        // any of the above in one graph
};

inline constexpr DagShape kAllDagShapes[] = {DagShape::kChain,       DagShape::kDiamond,
                                             DagShape::kFanOut,      DagShape::kMatMulChain,
                                             DagShape::kSharedInput, DagShape::kMultiSink,
                                             DagShape::kMixed};

struct RandomProblemOptions {
  int min_ops = 2;
  int max_ops = 8;
  Elements native = 32;  // small native keeps the oracle fast; dims are small multiples of it
  // Probability that a tensor side is not a multiple of native/2 (partial edge tiles).
  double odd_side_probability = 0.15;
  // Probability that an op of a chain, fan-out or MatMul chain is a Layout op (a transpose, a
  // row or column slice, or any other shape). 0 draws nothing more from the generator: the
  // problems of a seed stay those they were before Layout ops existed.
  double layout_probability = 0;
};

// A finalized problem of the given shape.
Problem RandomProblem(std::mt19937_64& rng, DagShape shape, const RandomProblemOptions& options = {});

// Random chip rules (H1-H5, eval/model/chip_rules.h) for `problem`, valid under CheckChipRules: role
// capacities between an eighth of the fast memory and all of it (or unchecked), double buffering,
// tile bases that are powers of two up to 8, an accumulator factor of 1, 2 or 4, wide write-back
// and prefetch, each on or off at random. Opt-in: RandomProblem never calls it, so the problems
// of a seed stay what they were.
ChipRules RandomChipRules(const Problem& problem, std::mt19937_64& rng);
// H6 on `rules`: a random weight path (bandwidth 1-100, a FIFO of 0 (unchecked) or between a
// sixteenth of the fast memory and all of it), prefetch (H5) off. A separate draw so that
// RandomChipRules's sequence, which other tests count on, is unchanged.
void RandomWeightPath(const Problem& problem, std::mt19937_64& rng, ChipRules& rules);

struct RandomScheduleOptions {
  double fuse_probability = 0.5;         // an op joins the open subgraph it is connected to
  double recompute_probability = 0.1;    // per subgraph: also recompute a producer
  double extra_retain_probability = 0.1; // per subgraph: retain one more produced tensor
  double invalid_probability = 0.1;      // per subgraph: break one rule on purpose
  int64_t max_steps = 2048;              // per subgraph; granularities are coarsened to fit
};

// A random schedule: a random partition into connected subgraphs in topological order,
// repaired for data availability (retention of ephemerals, recomputation), with random
// granularities (powers of two), traversals and retention; a share of them invalid on purpose.
// A tensor a Layout op reads is kept out of fusions that would make it ephemeral (spec L1), so
// that most schedules with Layout ops stay valid.
Schedule RandomSchedule(const Problem& problem, std::mt19937_64& rng,
                        const RandomScheduleOptions& options = {});

// New random granularity, traversal and (sometimes) retention for one subgraph.
void RandomizeSettings(const Problem& problem, Subgraph& subgraph, std::mt19937_64& rng,
                       const RandomScheduleOptions& options = {});

// A random edit of `schedule`: re-set one subgraph, merge two neighbours, split one, erase,
// insert a copy (recomputation) or move one. The schedule must have at least one subgraph.
ScheduleEdit RandomEdit(const Problem& problem, const Schedule& schedule, std::mt19937_64& rng,
                        const RandomScheduleOptions& options = {});

}  // namespace annealer
