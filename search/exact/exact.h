// The exact solver: the optimal schedule within a stated family, proven by exhausting it.
//
// THE FAMILY (ExactFamilyText states it; the brute-force test enumerates it):
// - no recomputation: every op in exactly one subgraph; the ops of a subgraph in topological
//   order (the problem's);
// - granularity: w divides the subgraph's output width, h its output height, k its reduction
//   length K* (spec G3; k = 1 when it has no MatMul), all at most the native size n (V2);
// - traversal: every named pattern of kAllTraversalPatterns (eval/model/traversal.h); on a grid of one
//   row or one column they are all raster, so only raster is priced there;
// - retention: every retain set with which the schedule can be valid. Why that is every legal
//   retain set that can matter: without recomputation a tensor t that subgraph S retains
//   (V8: produced by S; O5: never a graph output) is (a) read by a later op, which then must be
//   in the very next subgraph (t is not written, R3, and lives one subgraph, R1) or the
//   schedule is invalid (V7); or (b) read by no later op: then t is an ephemeral of S (a sink
//   read by nobody is a graph output), it suppresses no write and nobody reads it for free, so
//   it only adds |t| to the working set of S and of the next subgraph (R5): the same schedule
//   without it has the same latency and is valid whenever the first is. So the solver retains
//   exactly: every ephemeral of S read later (forced), and any subset of the sinks of S read
//   later, all of whose later readers go into the next subgraph (UsefulRetain, search/
//   subgraph_tools.h, keeps the same sets);
// - at most `max_subgraph_ops` ops per subgraph (stated only when it is smaller than a
//   component).
//
// THE METHOD. Subgraphs are connected (V5) through produced tensors, so each weakly connected
// component of the op graph (graph inputs do not connect) is solved on its own; schedules of
// different components never share a retained tensor, so the optimum is the sum of the
// components' optima. Within a component, A* over states (D = set of executed ops, downward
// closed; R = tensors the last subgraph retained). Every tensor produced in D and read outside
// D is in slow memory unless it is in R, whose remaining readers must all be in the next
// subgraph. A transition appends a subgraph S: connected, all predecessors in D or S (hence
// convex and its inputs available, V6/V7), containing every remaining reader of R; a retain
// set Q as above; and the configuration (w, h, k, traversal) of least cost for (S, R, Q), priced
// by CostSubgraph (eval/cost/subgraph_cost.h, equal to the oracle) and memoized. Configurations are
// tried in increasing tile count: each tile charges every op at least its base cost (spec
// C1-C4), so tiles x sum(base) is a lower bound that ends the scan once it passes the best;
// and every boundary input not retained in is loaded whole at least once and every sink not
// retained written whole, a floor that skips a context at once when it exceeds what is left.
// The heuristic of A* is a lower bound of the remaining ops (RemainingBound); an incumbent
// prunes states whose g + bound reaches it. When the incumbent survives the whole search it is
// proven optimal within the family.
//
// Memory and time are bounded: `max_states` states in all, `max_contexts` memo entries (the
// memo is emptied when full), the deadline and the stop flag; on any of them the solver returns
// kFeasible with the incumbent (if any). It never throws for a problem that has any schedule.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "eval/bound/bounds.h"
#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "search/exact/exact_result.h"

namespace annealer {

// A lower bound on the latency of executing exactly the ops marked in `ops` (indexed by op id),
// whatever the context. Plugged in as the A* heuristic and the per-component bound; it MUST
// never exceed the true cost (admissible), or optimality claims break. The default is the larger
// of ComputeOpsBound and RemainingLowerBound (eval/bound/bounds.h).
using RemainingBound = std::function<Latency(const Problem&, const std::vector<char>& ops)>;

// The default RemainingBound on a bound model of the problem (BuildBoundModel, or the one
// ComputeLowerBound fills): the larger of ComputeOpsBound and RemainingLowerBound.
RemainingBound DefaultRemainingBound(std::shared_ptr<const BoundModel> model);

// The larger of (a) the sum over the marked ops of base_cost x native tiles of the output (spec
// C3: no schedule computes an op for less) and (b) the transfer time of the graph inputs they
// read and the graph outputs they produce (each loaded / written at least once; graph inputs
// cannot be retained, V8; outputs must be written, V9). Each step costs max(compute, memory).
Latency ComputeOpsBound(const Problem& problem, const std::vector<char>& ops);

struct ExactProgress {
  double elapsed_seconds = 0;
  int64_t states = 0;
  int64_t expansions = 0;
  int component = 0;     // index of the component being solved
  int components = 0;
  Latency frontier = 0;  // least g + bound in the open list of that component
  Latency incumbent = 0; // the best total known (0: none)
};

struct ExactOptions {
  int64_t max_states = 2'000'000;   // states over all components
  int max_subgraph_ops = 16;        // ops per subgraph (part of the family when binding)
  int64_t max_contexts = 1'000'000; // memo entries (S, R, Q) -> best configuration
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  const std::atomic<bool>* stop = nullptr;
  // A valid schedule to beat (any family); checked by the oracle, ignored when invalid.
  std::optional<Schedule> incumbent;
  RemainingBound remaining_bound;  // empty: max(ComputeOpsBound, RemainingLowerBound)
  std::function<void(const ExactProgress&)> on_progress;
  double progress_interval = 1.0;  // seconds
};

// The family as one line of text, for the output and docs/exact-solver.md.
std::string ExactFamilyText(int max_subgraph_ops_bound);

// The best valid one of the baseline and the constructive starts (greedy fusion and pattern
// grouping, each polished without partial edge tiles), the incumbent of a standalone run;
// nullopt when none is valid. `stop` is polled.
std::optional<Schedule> ConstructiveIncumbent(const Problem& problem, const std::function<bool()>& stop);

// Solves `problem` (finalized) as described above. The returned schedule, when present, has
// passed EvaluateOracle and carries its latencies.
ExactResult SolveExact(const Problem& problem, const ExactOptions& options);

}  // namespace annealer
