#include "search/params.h"

#include <charconv>
#include <cmath>
#include <sstream>

namespace annealer {
namespace {

// Builds a spec whose accessors read and write one field through a member-pointer path.
template <typename Field>
ParamSpec Make(std::string key, ParamType type, double min, double max, std::string doc,
               std::function<Field&(SearchParams&)> field) {
  ParamSpec spec;
  spec.key = std::move(key);
  spec.type = type;
  spec.min = min;
  spec.max = max;
  spec.doc = std::move(doc);
  spec.get = [field](const SearchParams& p) {
    if constexpr (std::is_enum_v<Field>) {
      return static_cast<double>(static_cast<int>(field(const_cast<SearchParams&>(p))));
    } else {
      return static_cast<double>(field(const_cast<SearchParams&>(p)));
    }
  };
  spec.set = [field](SearchParams& p, double v) {
    if constexpr (std::is_same_v<Field, bool>) {
      field(p) = v != 0;
    } else if constexpr (std::is_same_v<Field, Switch>) {
      field(p) = v == 0 ? Switch::kOff : v == 1 ? Switch::kOn : Switch::kAuto;
    } else {
      field(p) = static_cast<Field>(v);
    }
  };
  return spec;
}

std::vector<ParamSpec> BuildTable() {
  using P = SearchParams;
  constexpr auto I = ParamType::kInt;
  constexpr auto R = ParamType::kReal;
  constexpr auto B = ParamType::kBool;
  std::vector<ParamSpec> t;
  t.push_back(Make<uint64_t>("seed", I, 0, 9007199254740991.0, "master seed; every worker seed is derived from it",
                             [](P& p) -> uint64_t& { return p.seed; }));
  t.push_back(Make<int>("threads", I, 0, 1024, "worker threads; 0 = all cores",
                        [](P& p) -> int& { return p.threads; }));
  t.push_back(Make<bool>("deterministic", B, 0, 1,
                         "fixed work per epoch and a barrier between epochs: identical results run to run",
                         [](P& p) -> bool& { return p.deterministic; }));
  t.push_back(Make<int64_t>("epoch_moves", I, 1, 1e9, "moves per worker per epoch",
                            [](P& p) -> int64_t& { return p.epoch_moves; }));
  t.push_back(Make<int64_t>("max_epochs", I, 0, 1e12, "work budget in epochs; 0 = until the deadline",
                            [](P& p) -> int64_t& { return p.max_epochs; }));
  t.push_back(Make<double>("progress_interval", R, 0.01, 3600, "seconds between progress reports",
                           [](P& p) -> double& { return p.progress_interval; }));
  t.push_back(Make<int64_t>("cache_entries", I, 0, 1e9, "bound of the shared subgraph cost cache; 0 = no cache",
                            [](P& p) -> int64_t& { return p.cache_entries; }));
  t.push_back(Make<double>("sa.initial_temperature", R, 1e-9, 1,
                           "start temperature as a fraction of the current total latency",
                           [](P& p) -> double& { return p.sa.initial_temperature; }));
  t.push_back(Make<double>("sa.final_temperature", R, 1e-12, 1,
                           "temperature (fraction of total) at which a worker reheats",
                           [](P& p) -> double& { return p.sa.final_temperature; }));
  t.push_back(Make<int64_t>("sa.moves_per_temperature", I, 1, 1e9, "moves between two cooling steps",
                            [](P& p) -> int64_t& { return p.sa.moves_per_temperature; }));
  t.push_back(Make<double>("sa.cooling", R, 0.5, 0.99999, "temperature multiplier per cooling step",
                           [](P& p) -> double& { return p.sa.cooling; }));
  t.push_back(Make<int64_t>("sa.reheat_after", I, 1, 1e9,
                            "cooling steps without improving the worker's best before a reheat",
                            [](P& p) -> int64_t& { return p.sa.reheat_after; }));
  t.push_back(Make<int64_t>("sa.restart_after_reheats", I, 0, 1e9,
                            "reheats before restarting from an elite-pool schedule",
                            [](P& p) -> int64_t& { return p.sa.restart_after_reheats; }));
  t.push_back(Make<int64_t>("sa.temperature_ops", I, 1, 1e9,
                            "on a graph of more ops, both temperatures are scaled by temperature_ops / ops "
                            "(a move's latency difference does not grow with the graph, its total does)",
                            [](P& p) -> int64_t& { return p.sa.temperature_ops; }));
  t.push_back(Make<int64_t>("ga.population", I, 2, 10000, "schedules per genetic worker",
                            [](P& p) -> int64_t& { return p.ga.population; }));
  t.push_back(Make<int64_t>("ga.tournament", I, 1, 100, "tournament size of parent selection",
                            [](P& p) -> int64_t& { return p.ga.tournament; }));
  t.push_back(Make<double>("ga.crossover_rate", R, 0, 1, "probability that a child comes from crossover",
                           [](P& p) -> double& { return p.ga.crossover_rate; }));
  t.push_back(Make<int64_t>("ga.mutation_moves", I, 0, 1000, "random valid moves applied to each child",
                            [](P& p) -> int64_t& { return p.ga.mutation_moves; }));
  t.push_back(Make<int64_t>("ga.local_moves", I, 0, 1e6, "improving-only moves applied to each child",
                            [](P& p) -> int64_t& { return p.ga.local_moves; }));
  t.push_back(Make<int64_t>("pool.size", I, 1, 10000, "schedules kept in the shared elite pool",
                            [](P& p) -> int64_t& { return p.pool.size; }));
  t.push_back(Make<double>("pool.diversity", R, 0, 1,
                           "relative total distance under which same-partition schedules count as duplicates",
                           [](P& p) -> double& { return p.pool.diversity; }));
  t.push_back(Make<double>("workers.sa_share", R, 0, 1,
                           "fraction of workers running SA (rest: GA); 1 = SA only, 0 = GA only",
                           [](P& p) -> double& { return p.workers.sa_share; }));
  t.push_back(Make<double>("workers.weight_partition", R, 0, 1000, "weight of partition moves",
                           [](P& p) -> double& { return p.workers.weight_partition; }));
  t.push_back(Make<double>("workers.weight_order", R, 0, 1000, "weight of order moves",
                           [](P& p) -> double& { return p.workers.weight_order; }));
  t.push_back(Make<double>("workers.weight_granularity", R, 0, 1000, "weight of granularity moves",
                           [](P& p) -> double& { return p.workers.weight_granularity; }));
  t.push_back(Make<double>("workers.weight_traversal", R, 0, 1000, "weight of traversal moves",
                           [](P& p) -> double& { return p.workers.weight_traversal; }));
  t.push_back(Make<double>("workers.weight_retention", R, 0, 1000, "weight of retention moves",
                           [](P& p) -> double& { return p.workers.weight_retention; }));
  t.push_back(Make<double>("workers.merge_readers_share", R, 0, 1000,
                           "weight of the merge-readers move as a share of weight_partition (drawn only where "
                           "a produced tensor has 3+ reading ops)",
                           [](P& p) -> double& { return p.workers.merge_readers_share; }));
  t.push_back(Make<double>("workers.gather_kloop_share", R, 0, 1000,
                           "weight of the gather-k-loop move as a share of weight_partition (drawn only where "
                           "a Pointwise op sums MatMuls of different reduction lengths, 3+ of one, or 3+ "
                           "MatMuls of one K and one LHS larger than fast memory: a convolution's taps)",
                           [](P& p) -> double& { return p.workers.gather_kloop_share; }));
  t.push_back(Make<double>("workers.split_recompute_share", R, 0, 1000,
                           "weight of the split-recompute move (a subgraph cut in two, both parts computing its "
                           "cheap first ops again) as a share of weight_partition (drawn only where the "
                           "merge-readers move is)",
                           [](P& p) -> double& { return p.workers.split_recompute_share; }));
  t.push_back(Make<bool>("workers.regroup_parts", B, 0, 1,
                         "regroup the parts of the readers of a tensor with 3+ reading ops into groups that "
                         "each recompute it (the starts and each new best; only where merge_readers_share > 0)",
                         [](P& p) -> bool& { return p.workers.regroup_parts; }));
  t.push_back(Make<bool>("workers.serve_retained", B, 0, 1,
                         "after each regrouping, move a loader of a tensor with 3+ reading ops right after a "
                         "subgraph that makes it again and retains it (only where regroup_parts applies)",
                         [](P& p) -> bool& { return p.workers.serve_retained; }));
  t.push_back(Make<bool>("workers.serve_every_loader", B, 0, 1,
                         "after each regrouping, drop a subgraph that runs one op alone to write its output for "
                         "its loaders, running the op again right before each loader and retaining the output "
                         "(only where regroup_parts applies)",
                         [](P& p) -> bool& { return p.workers.serve_every_loader; }));
  t.push_back(Make<bool>("workers.serve_recomputed", B, 0, 1,
                         "after each regrouping, serve a loader of a written tensor made by a Pointwise op from a "
                         "tensor only it reads by retaining that input and running the op again (only where "
                         "regroup_parts applies)",
                         [](P& p) -> bool& { return p.workers.serve_recomputed; }));
  t.push_back(Make<bool>("workers.merge_refit", B, 0, 1,
                         "after the serving passes, refit each subgraph at every tile side that divides its "
                         "dimension and try each pair of neighbours merged (only where regroup_parts applies)",
                         [](P& p) -> bool& { return p.workers.merge_refit; }));
  t.push_back(Make<bool>("workers.retain_recomputed", B, 0, 1,
                         "where a subgraph runs again ops the one before it holds, drop them and retain what "
                         "they made instead (the starts and each new best; only where regroup_parts applies)",
                         [](P& p) -> bool& { return p.workers.retain_recomputed; }));
  t.push_back(Make<bool>("workers.gather_strays", B, 0, 1,
                         "gather into a subgraph holding alike branches (attention heads) the ops of those "
                         "branches that sit elsewhere (the starts and each new best; only where regroup_parts applies)",
                         [](P& p) -> bool& { return p.workers.gather_strays; }));
  t.push_back(Make<bool>("workers.gather_partials", B, 0, 1,
                         "gather into the subgraph that runs a sum its partial products (MatMuls only the sum "
                         "reads) that sit elsewhere (the starts and each new best; only where regroup_parts applies)",
                         [](P& p) -> bool& { return p.workers.gather_partials; }));
  t.push_back(Make<bool>("workers.lone_taps", B, 0, 1,
                         "group a sum's taps that sit alone and read one written LHS into subgraphs that run "
                         "the LHS's producer again (the starts and each new best; only where regroup_parts applies)",
                         [](P& p) -> bool& { return p.workers.lone_taps; }));
  t.push_back(Make<bool>("workers.layer_chains", B, 0, 1,
                         "rebuild each sum of 3+ MatMuls whose private ancestry holds two reduction lengths "
                         "as a chain of subgraphs tied by retention (the greedy start; a concatenation's "
                         "convolution, as in DenseNet)",
                         [](P& p) -> bool& { return p.workers.layer_chains; }));
  t.push_back(Make<bool>("workers.polish", B, 0, 1,
                         "exact granularity/traversal/retention polish of every new worker best",
                         [](P& p) -> bool& { return p.workers.polish; }));
  t.push_back(Make<Switch>("workers.partial_edge_tiles", ParamType::kSwitch, 0, 2,
                           "let the polish pick sides that leave partial edge tiles (latency per spec O9); auto: "
                           "only where some tensor dimension is not a multiple of the native side",
                           [](P& p) -> Switch& { return p.workers.partial_edge_tiles; }));
  t.push_back(Make<bool>("constructive.greedy_fusion", B, 0, 1, "seed the pool with greedy fusion",
                         [](P& p) -> bool& { return p.constructive.greedy_fusion; }));
  t.push_back(Make<bool>("constructive.pattern_grouping", B, 0, 1, "seed the pool with pattern grouping",
                         [](P& p) -> bool& { return p.constructive.pattern_grouping; }));
  t.push_back(Make<double>("exact.time_share", R, 0, 1,
                           "share of the time budget for the exact solver before the workers; 0 = off "
                           "(deterministic mode: only exact.max_states bounds it)",
                           [](P& p) -> double& { return p.exact.time_share; }));
  t.push_back(Make<int64_t>("exact.max_states", I, 1, 1e9,
                            "exact solver: DP states over all components (about 100 bytes each)",
                            [](P& p) -> int64_t& { return p.exact.max_states; }));
  t.push_back(Make<int64_t>("exact.deterministic_states", I, 1, 1e9,
                            "exact solver in deterministic mode: its state budget instead of the clock",
                            [](P& p) -> int64_t& { return p.exact.deterministic_states; }));
  t.push_back(Make<int64_t>("exact.max_subgraph_ops", I, 1, 1000,
                            "exact solver: ops per subgraph (part of its family when below a component's size)",
                            [](P& p) -> int64_t& { return p.exact.max_subgraph_ops; }));
  t.push_back(Make<int64_t>("exact.max_contexts", I, 1, 1e9,
                            "exact solver: memo entries of best configurations (about 200 bytes each; emptied when full)",
                            [](P& p) -> int64_t& { return p.exact.max_contexts; }));
  t.push_back(Make<int64_t>("exact.max_ops", I, 1, 1e9,
                            "graphs of more ops skip the exact solver on the whole graph (the block proofs still run)",
                            [](P& p) -> int64_t& { return p.exact.max_ops; }));
  t.push_back(Make<double>("repeats.time_share", R, 0, 1,
                           "share of the time left after the constructive starts for solving repeated blocks (deep "
                           "models' layers) once each, before the workers or beside them (repeats.overlap); 0 = off",
                           [](P& p) -> double& { return p.repeats.time_share; }));
  t.push_back(Make<bool>("repeats.overlap", B, 0, 1,
                         "free mode, 2+ threads: run the start and the exact solver beside the workers' first "
                         "epochs (one worker meanwhile) instead of before them",
                         [](P& p) -> bool& { return p.repeats.overlap; }));
  t.push_back(Make<int64_t>("repeats.min_ops", I, 2, 1e9,
                            "repeated-block start: graphs with fewer ops are not searched for repeated blocks",
                            [](P& p) -> int64_t& { return p.repeats.min_ops; }));
  t.push_back(Make<int64_t>("repeats.deterministic_epochs", I, 1, 1e9,
                            "repeated-block start in deterministic mode: epochs per block class instead of the clock",
                            [](P& p) -> int64_t& { return p.repeats.deterministic_epochs; }));
  t.push_back(Make<int64_t>("repeats.max_block_ops", I, 1, 100000,
                            "repeated-block start: most ops of a repeated block",
                            [](P& p) -> int64_t& { return p.repeats.max_block_ops; }));
  t.push_back(Make<int64_t>("repeats.min_block_ops", I, 1, 100000,
                            "repeated-block start: shorter periods are merged with the next ones into one block",
                            [](P& p) -> int64_t& { return p.repeats.min_block_ops; }));
  t.push_back(Make<double>("repeats.proof_share", R, 0, 1,
                           "block proofs after the repeated-block start: the exact solver on each block class not yet "
                           "proven, within this share of the time budget (instead of the solver on the whole graph); "
                           "0 = off",
                           [](P& p) -> double& { return p.repeats.proof_share; }));
  t.push_back(Make<int64_t>("repeats.proof_states", I, 0, 1e9,
                            "block proofs in deterministic mode: exact-solver states per block class instead of the "
                            "clock; 0 = off",
                            [](P& p) -> int64_t& { return p.repeats.proof_states; }));
  t.push_back(Make<int64_t>("repeats.piece_ops", I, 0, 100000,
                            "piece start: where nothing repeats, cut a graph of at least repeats.min_ops ops into "
                            "pieces of at most this many ops, search each alone and compose them; 0 = off",
                            [](P& p) -> int64_t& { return p.repeats.piece_ops; }));
  t.push_back(Make<double>("repeats.piece_rebase_margin", R, 0, 1,
                           "piece start beside the workers: they move to the pieces' composition unless it is more "
                           "than this fraction above the best found meanwhile",
                           [](P& p) -> double& { return p.repeats.piece_rebase_margin; }));
  t.push_back(Make<double>("repeats.round_seconds", R, 0, 86400,
                           "rounds of the repeated-block and piece starts (free mode): the first round's nested "
                           "searches get repeats.time_share of at most this many seconds of the time left (pieces: "
                           "at most 0.15 s each), further rounds (repeats.round_growth) search again with other "
                           "seeds while the share lasts, the lowest composition after the passes is taken; 0 = one "
                           "round with the whole share",
                           [](P& p) -> double& { return p.repeats.round_seconds; }));
  t.push_back(Make<double>("repeats.round_growth", R, 1, 100,
                           "rounds of the repeated-block and piece starts (free mode): each further round's nested "
                           "searches get this factor more time than the round before, the last one what is left of "
                           "the share",
                           [](P& p) -> double& { return p.repeats.round_growth; }));
  t.push_back(Make<int64_t>("repeats.deterministic_rounds", I, 1, 1000,
                            "rounds of the repeated-block and piece starts in deterministic mode (each "
                            "repeats.deterministic_epochs epochs per class, other seeds), the lowest composition "
                            "after the passes taken",
                            [](P& p) -> int64_t& { return p.repeats.deterministic_rounds; }));
  t.push_back(Make<bool>("repeats.round_continue", B, 0, 1,
                         "rounds of the repeated-block start (not the pieces'): a further round continues each unproven "
                         "class's nested search from the elite schedules the round before left (no constructive "
                         "starts or exact solver again), with a new seed and the round's time; false: each round "
                         "searches anew",
                         [](P& p) -> bool& { return p.repeats.round_continue; }));
  t.push_back(Make<int64_t>("repeats.phase_alternatives", I, 0, 64,
                            "repeated-block start: where another phase of a repeated run covers as many blocks, keep "
                            "up to this many other partitions; the rounds after the first solve their classes too and "
                            "offer the cheapest chain of blocks beside the chosen partition's composition; 0 = the "
                            "chosen phase alone",
                            [](P& p) -> int64_t& { return p.repeats.phase_alternatives; }));
  return t;
}

// Shortest text that reads back as the same double ("0.99999", not "0.99999000000000005").
std::string Number(double v) {
  char buffer[32];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, v).ptr;
  return std::string(buffer, end);
}

}  // namespace

const std::vector<ParamSpec>& ParamTable() {
  static const std::vector<ParamSpec> table = BuildTable();
  return table;
}

std::string ValidateParams(const SearchParams& params) {
  for (const ParamSpec& spec : ParamTable()) {
    const double v = spec.get(params);
    if (!std::isfinite(v) || v < spec.min || v > spec.max) {
      return spec.key + " = " + Number(v) + " is out of range [" + Number(spec.min) + ", " +
             Number(spec.max) + "]";
    }
    if (spec.type == ParamType::kInt && v != std::floor(v)) {
      return spec.key + " = " + Number(v) + " is not an integer";
    }
  }
  if (params.sa.final_temperature > params.sa.initial_temperature) {
    return "sa.final_temperature = " + Number(params.sa.final_temperature) +
           " exceeds sa.initial_temperature = " + Number(params.sa.initial_temperature);
  }
  if (params.ga.tournament > params.ga.population) {
    std::ostringstream out;
    out << "ga.tournament = " << params.ga.tournament << " exceeds ga.population = "
        << params.ga.population;
    return out.str();
  }
  if (params.repeats.min_block_ops > params.repeats.max_block_ops) {
    std::ostringstream out;
    out << "repeats.min_block_ops = " << params.repeats.min_block_ops << " exceeds repeats.max_block_ops = "
        << params.repeats.max_block_ops;
    return out.str();
  }
  if (params.exact.time_share + params.repeats.time_share > 1) {
    return "exact.time_share + repeats.time_share = " + Number(params.exact.time_share + params.repeats.time_share) +
           " exceeds 1";
  }
  const auto& w = params.workers;
  if (w.weight_partition + w.weight_order + w.weight_granularity + w.weight_traversal +
          w.weight_retention <= 0) {
    return "workers.weight_* are all 0: at least one move family needs a positive weight";
  }
  return "";
}

SearchParams ResolveAuto(const SearchParams& params, const Problem& problem) {
  SearchParams resolved = params;
  if (resolved.workers.partial_edge_tiles == Switch::kAuto) {
    bool partial = false;
    for (const Tensor& t : problem.tensors) {
      partial = partial || t.width % problem.native != 0 || t.height % problem.native != 0;
    }
    resolved.workers.partial_edge_tiles = partial ? Switch::kOn : Switch::kOff;
  }
  return resolved;
}

}  // namespace annealer
