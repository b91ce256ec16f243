// Every knob of the search, as nested structs with in-class defaults, plus one table that
// describes each key (name, type, range, doc, accessors). The table drives YAML loading,
// `--set key=value`, `--print-config` and the docs, so a key exists in exactly one place.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "eval/model/problem.h"

namespace annealer {

// A setting a problem may decide: off, on, or auto (the key documents its rule; ResolveAuto
// turns auto into off or on before the search reads it).
enum class Switch : uint8_t { kOff = 0, kOn = 1, kAuto = 2 };


// Simulated annealing workers: Metropolis acceptance on the latency difference, geometric
// cooling per epoch, reheats when stuck and restarts from the elite pool.
struct SaParams {
  // Temperature as a fraction of the current total latency (scale-free across problems).
  double initial_temperature = 0.005;
  double final_temperature = 0.00001;
  // Moves between two cooling steps.
  int64_t moves_per_temperature = 200;
  // Multiplier applied at every cooling step (0 < cooling < 1).
  double cooling = 0.95;
  // Cooling steps without an improvement of the worker's best before a reheat.
  int64_t reheat_after = 40;
  // Reheats before the worker restarts from an elite-pool schedule.
  int64_t restart_after_reheats = 3;
  // On a graph of more ops than this, both temperatures are scaled by temperature_ops / ops: a
  // move changes a few subgraphs, so its latency difference shrinks with the graph while the
  // total grows with it, and a fraction of the total that suits a contest problem accepts
  // nearly every worsening move on a network of thousands of ops (a random walk away from the
  // start; the SA worker of a 10-s search on ResNeXt-50 never beat its start). Every contest
  // problem is below it, so its walk is unchanged.
  int64_t temperature_ops = 200;
};

// Genetic workers: a small population, tournament selection, partition crossover with repair,
// mutation by the SA moves, then a short local improvement of each child.
struct GaParams {
  int64_t population = 16;
  int64_t tournament = 3;
  double crossover_rate = 0.8;
  // Moves applied to a child (each accepted only if it keeps the schedule valid).
  int64_t mutation_moves = 4;
  // Greedy (improving-only) moves applied to each child after mutation.
  int64_t local_moves = 60;
};

// The shared elite pool (OR-Tools' SharedSolutionRepository): buffered offers merged in a
// stable order at Synchronize, duplicates merged, at most `size` schedules kept.
struct PoolParams {
  int64_t size = 12;
  // Schedules whose total is within this relative distance of a kept one and have the same
  // partition are treated as near-duplicates and only the better one is kept.
  double diversity = 0.0005;
};

struct WorkerParams {
  // Fraction of the workers that run simulated annealing; the rest run the genetic algorithm.
  // 1 = SA only, 0 = GA only. With one thread a fraction > 0 and < 1 alternates the kinds
  // per epoch.
  double sa_share = 0.5;
  // Relative weights of the move families.
  double weight_partition = 4.0;
  double weight_order = 2.0;
  double weight_granularity = 2.0;
  double weight_traversal = 1.0;
  double weight_retention = 1.0;
  // Weight of the merge-readers move (search/moves/moves.h) as a share of weight_partition; the move
  // is drawn only on problems where some produced tensor has three or more reading ops.
  double merge_readers_share = 0.1;
  // Weight of the gather-k-loop move (search/moves/moves.h) as a share of weight_partition; drawn only
  // where a Pointwise op reads MatMuls of different reduction lengths.
  double gather_kloop_share = 0.1;
  // Weight of the split-recompute move (search/moves/moves.h) as a share of weight_partition;
  // drawn only where the merge-readers move is (some produced tensor has three or more readers).
  double split_recompute_share = 0.1;
  // Regroup the readers' parts of a tensor read three or more times (RegroupReaderParts,
  // search/starts/constructive.h) on the starts and the run's new bests; only where the
  // merge-readers move is drawn (merge_readers_share > 0 and such a tensor exists).
  bool regroup_parts = true;
  // After each regrouping, move a loader of such a tensor right after a subgraph that makes it
  // again, which retains it (ServeLoadsByRetention, search/passes/serve_retained.h).
  bool serve_retained = true;
  // After it, drop a writer that runs one op alone for its output's loaders, serving each of them
  // with that op run again just before it, retaining the output (ServeEveryLoader,
  // search/passes/serve_every_loader.h); only where regroup_parts applies.
  bool serve_every_loader = true;
  // After it, serve a loader of a written tensor t = p(s) by keeping s instead and running the
  // Pointwise p again (ServeLoadsByRecompute, search/passes/serve_retained.h); only where
  // regroup_parts applies.
  bool serve_recomputed = true;
  // Then each subgraph refitted at every tile side and each pair of neighbours tried merged
  // (MergeAndRefit, search/passes/merge_refit.h); only where regroup_parts applies.
  bool merge_refit = true;
  // Where the subgraph after another runs again ops that one holds, drop them and retain what
  // they made instead (RetainRecomputed, search/passes/retain_recomputed.h): the starts, the
  // compositions and each new best, before the regrouping; only where regroup_parts applies.
  bool retain_recomputed = true;
  // Gather into a subgraph holding alike branches (attention heads) the ops of those branches
  // that sit elsewhere (GatherStrays, search/passes/gather_strays.h): the starts, the
  // compositions and each new best, before RetainRecomputed; only where regroup_parts applies.
  bool gather_strays = true;
  // Gather into the subgraph that runs a sum the partial products (MatMuls read by the sum alone)
  // that sit elsewhere (GatherPartials, search/passes/gather_partials.h): the starts, the
  // compositions and each new best, after GatherStrays; only where regroup_parts applies.
  bool gather_partials = true;
  // Group a sum's taps that sit alone, each loading the same written LHS, into subgraphs with the
  // LHS's producer run again in each (GroupLoneTaps, search/passes/lone_taps.h): the starts, the
  // compositions and each new best, after GatherPartials; only where regroup_parts applies.
  bool lone_taps = true;
  // Rebuild each sum of MatMuls over a concatenation as a chain of subgraphs tied by retention
  // (LayerChains, search/starts/layer_chains.h) on the greedy start; only where such a sum has
  // MatMuls of two reduction lengths in its private ancestry (never on a contest problem).
  bool layer_chains = true;
  // Run the exact polish (granularity per subgraph, traversal, retention by DP) on every new
  // best schedule of a worker.
  bool polish = true;
  // Let the polish pick tile sides and k that do not divide their dimension (partial edge
  // tiles). Their latency rests on spec O9 (clipped transfers at the edges), which the
  // official evaluator may read differently; off, every schedule stays where all readings
  // agree. Auto (ResolveAuto) turns it on only where some tensor dimension is not a multiple
  // of the native side: there the native and power-of-two tiles leave partial edge tiles
  // already, so every schedule rests on O9 and keeping to dividing sides protects nothing.
  Switch partial_edge_tiles = Switch::kAuto;
};

struct ConstructiveParams {
  bool greedy_fusion = true;
  bool pattern_grouping = true;
};

// The exact solver (search/exact/exact.h) in the search: it runs after the constructive starts, before
// the workers, within a share of the time budget; a completed run (status optimal) puts its
// schedule into the elite pool. In deterministic mode it ignores the clock and only its state
// budget ends it, so the result does not depend on timing.
struct ExactParams {
  // Share of the search's time budget the exact solver may use; 0 = do not run it.
  double time_share = 0.1;
  // States of the dynamic program, over all components (about 100 bytes each).
  int64_t max_states = 1'000'000;
  // In deterministic mode the clock does not bound the solver (its result would depend on
  // timing); this state budget does instead.
  int64_t deterministic_states = 1'000;
  // Ops per subgraph the solver considers; below a component's size it becomes part of the
  // family it proves optimality in.
  int64_t max_subgraph_ops = 64;
  // Memo entries (ops, retained-in, retain) -> best configuration (about 200 bytes each);
  // emptied when full.
  int64_t max_contexts = 200'000;
  // Graphs of more ops skip the solver on the whole graph (the block proofs of repeated blocks
  // still run): it proves nothing there, and its share of the budget is time the workers lose
  // before they start (ResNeXt-50, 7,843 ops: one state in 0.9 s of a 10-s search).
  int64_t max_ops = 1000;
};

// The repeated-block start (search/repeats/repeats.h): after the constructive starts, a graph made of
// repeated blocks (a deep model's layers) has one block per class solved as a standalone problem
// by a nested search, and the blocks' schedules composed into a start for the pool.
struct RepeatParams {
  // Share of the time the constructive starts left for the nested searches; 0 = never run the
  // start. On a deep graph the workers move slowly per copy (every move prices one place among
  // N copies), so time on one block is worth more than time on the whole graph.
  double time_share = 0.5;
  // Free mode with 2+ threads: the start (and then the exact solver) runs on a thread of its own
  // alongside the workers' first epochs, which begin at once with one worker, instead of before
  // them; its schedule joins the pool when ready. Deterministic mode never overlaps.
  bool overlap = true;
  // Graphs with fewer ops are searched whole (detection is skipped): the contest's own
  // problems (103 ops at most) stay as they were. 120 rather than 200: the two-layer
  // Transformer encoder of the zoo (129 ops, gemmini-default) ended in one of two basins
  // (about 668k or 709k) in half of its 10-s runs without the start, in none of five with it.
  int64_t min_ops = 120;
  // In deterministic mode the clock does not bound a nested search; this many epochs (of
  // epoch_moves moves per worker) per block class do instead.
  int64_t deterministic_epochs = 10;
  // Ops of a repeated block: at most max_block_ops; a smaller period than min_block_ops is
  // merged with its successors into one block.
  int64_t max_block_ops = 400;
  int64_t min_block_ops = 16;
  // The block proofs: once the blocks are composed, the exact solver runs on every class whose
  // schedule is not yet proven (smallest blocks first), within proof_share of the time budget
  // (from when the proofs begin; beside the workers when the start overlaps them), or
  // proof_states states per class in deterministic mode. On such a graph they replace the
  // exact solver's run on the whole graph (with the same share of the time), which cannot finish there (ResNet-50: 59k states in
  // 30 s, no proof; its bottleneck blocks are proven in 0.4-7.4 s each).
  double proof_share = 0.1;
  int64_t proof_states = 20'000;
  // The piece start (search/repeats/pieces.h): where nothing repeats enough for the
  // repeated-block start, a graph of at least min_ops ops is cut into pieces of at most
  // piece_ops ops (and at least a quarter of that), searched alone and composed in the same
  // way and the same share of the time; 0 = off. Never on a contest problem (under min_ops).
  int64_t piece_ops = 32;
  // Free mode, the start beside the workers: the workers move to the pieces' composition unless
  // it is more than this fraction above the lone worker's best. On GoogLeNet (tpu-v1, 10 s) the
  // composition came 0-2.1 % behind that best in most runs, and moving to it anyway ended at
  // 684-692k where staying ended at 695-708k; Inception-v3's compositions came 3-20 % behind.
  double piece_rebase_margin = 0.03;
  // Rounds (search/repeats/rounds.h). Free mode: the first round's nested searches get
  // time_share of at most round_seconds of the time left (what a run of that length gives them),
  // and while the share lasts further rounds of as long search the classes not proven again with
  // other seeds; every round's composition gets the passes a new best gets, and the lowest is
  // the one the workers walk from. 0 = one round with the whole share. ResNet-50 (tpu-v5e) ended
  // 217-220k from a 5-s share's composition and 219.5k from a 60-s one's (docs/search.md).
  double round_seconds = 10;
  // Each further round's nested searches get this factor more time than the round before (the
  // last one what is left of the share): breadth (other seeds) at 1, depth beyond it.
  double round_growth = 1;
  // Deterministic mode: this many rounds of repeats.deterministic_epochs epochs per class each.
  int64_t deterministic_rounds = 1;
  // Further rounds continue each unproven class's nested search from where the round before left
  // it (its elite schedules as the starts, no constructive starts or exact solver again), with a
  // new seed and the round's time; off: each round searches the class anew from its own starts.
  // The repeated-block start only (a piece start's rounds always search anew). On: ViT-B/16
  // (tpu-v5e) ended 0.1-0.2 % lower at 60 and 120 s, ResNet-50 and the GPT decoder where the
  // restarted rounds ended (docs/search.md, "Continued rounds").
  bool round_continue = true;
  // Phase ties of the repeated-block start (search/repeats/repeats.h, step 6): where another
  // phase of a run covers as many blocks, up to this many other partitions are kept; their
  // classes are solved from the second round on, and each later round offers the cheapest chain
  // of blocks beside the chosen partition's composition. Round 1 (a run of 10 s, the
  // deterministic preset) is the chosen partition's alone, to the byte. Solved in round 1 too,
  // the classes of both phases shared its time and 10-s runs lost; from round 2, 60-s runs of
  // Wide-ResNet-50 (ascend910-core) end 0.8-1.2 % lower and ResNet-50's within their spread
  // (docs/search.md, "Phase ties of the repeated-block start"). 0 = the chosen phase alone.
  int64_t phase_alternatives = 8;
};

struct SearchParams {
  uint64_t seed = 1;
  int threads = 0;  // 0 = all cores
  // Deterministic mode: every worker does exactly `epoch_moves` moves per epoch, then all meet
  // at a barrier and the pool merges in a stable order. Same seed, params and budget =>
  // identical result for a fixed thread count.
  bool deterministic = false;
  int64_t epoch_moves = 4000;
  int64_t max_epochs = 0;  // work budget (deterministic or not); 0 = unlimited (until deadline)
  double progress_interval = 1.0;  // seconds between on_progress calls
  int64_t cache_entries = 1 << 20;  // bound of the shared cost cache
  SaParams sa;
  GaParams ga;
  PoolParams pool;
  WorkerParams workers;
  ConstructiveParams constructive;
  ExactParams exact;
  RepeatParams repeats;
};

enum class ParamType { kInt, kReal, kBool, kSwitch };  // kSwitch: false, true or auto (0, 1, 2)

struct ParamSpec {
  std::string key;  // "sa.initial_temperature"
  ParamType type;
  double min, max;  // inclusive range
  std::string doc;
  std::function<double(const SearchParams&)> get;
  std::function<void(SearchParams&, double)> set;
};

// Every key of SearchParams, in a fixed order (the order of --print-config).
const std::vector<ParamSpec>& ParamTable();

// "" when every value is in range and consistent, else a one-line message quoting the bad
// value, e.g. "sa.cooling = 1.5 is out of range [0.5, 0.99999]".
std::string ValidateParams(const SearchParams& params);

// `params` with every auto switch decided for `problem`; RunSearch reads only these, so a
// nested search (a repeated block) inherits the whole problem's decision.
SearchParams ResolveAuto(const SearchParams& params, const Problem& problem);

}  // namespace annealer
