// The exact solver against a brute-force enumeration of every schedule of its family on small
// random DAGs, everything priced by the oracle; plus its contracts (incumbent, budgets, status).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <tuple>

#include "eval/bound/bounds.h"
#include "eval/oracle.h"
#include "eval/random_schedule.h"
#include "eval/model/subgraph_structure.h"
#include "eval/model/traversal.h"
#include "search/starts/baseline.h"
#include "search/driver.h"
#include "search/exact/exact.h"
#include "src/io/contest/problem_reader.h"

namespace annealer {
namespace {

constexpr Latency kNone = std::numeric_limits<Latency>::infinity();

std::vector<Elements> Divisors(Elements dim, Elements top) {
  std::vector<Elements> out;
  for (Elements v = 1; v <= std::min(dim, top); ++v) {
    if (dim % v == 0) out.push_back(v);
  }
  return out;
}

// Enumerates, without any cleverness, every schedule of the family (search/exact/exact.h): every
// sequence of disjoint op sets covering the ops, every retain set that V8 and O5 allow (also
// the useless ones the solver skips), and per subgraph every family configuration, priced by
// EvaluateSubgraphOracle. Configurations are independent across subgraphs, so each
// (ops, retained-in, retain) context keeps its cheapest; the data-availability rule (V7) prunes
// prefixes; every complete schedule is priced again by EvaluateOracle.
class BruteForce {
 public:
  explicit BruteForce(const Problem& problem) : p_(problem), n_(static_cast<int>(problem.ops.size())) {
    rank_.resize(n_);
    for (int i = 0; i < n_; ++i) rank_[problem.topological_order[i]] = i;
  }

  Latency Optimum() {
    std::vector<char> written(p_.tensors.size(), 0);
    for (TensorId t = 0; t < static_cast<TensorId>(p_.tensors.size()); ++t) written[t] = p_.producer[t] == kNoOp;
    Schedule schedule;
    Recurse(0, {}, written, schedule);
    return best_;
  }
  int64_t schedules() const { return schedules_; }

 private:
  struct Best {
    Latency latency = kNone;
    Granularity granularity;
    std::optional<std::vector<int64_t>> traversal;
  };

  const Best& Context(const std::vector<OpId>& ops, const std::vector<TensorId>& in, const std::vector<TensorId>& out) {
    auto key = std::make_tuple(ops, in, out);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    Best best;
    Subgraph sg;
    sg.ops = ops;
    sg.retain = out;
    SubgraphStructure structure;
    sg.granularity = {1, 1, 1};
    AnalyseSubgraph(p_, sg, structure);  // fills the output shape and K* before any granularity rule
    if (structure.output_width > 0) {
      const Elements n = p_.native;
      const std::vector<Elements> ks = structure.reduction == 0 ? std::vector<Elements>{1} : Divisors(structure.reduction, n);
      for (Elements w : Divisors(structure.output_width, n)) {
        for (Elements h : Divisors(structure.output_height, n)) {
          const int64_t rows = structure.output_height / h, cols = structure.output_width / w;
          for (TraversalPattern pattern : kAllTraversalPatterns) {
            for (Elements k : ks) {
              sg.granularity = {w, h, k};
              sg.traversal = MakeTraversal(pattern, rows, cols);
              const SubgraphResult r = EvaluateSubgraphOracle(p_, sg, in);
              if (r.ok() && r.report.latency < best.latency) {
                best.latency = r.report.latency;
                best.granularity = sg.granularity;
                best.traversal = sg.traversal;
              }
            }
          }
        }
      }
    }
    return memo_[key] = best;
  }

  void Recurse(uint32_t done, const std::vector<TensorId>& retained, const std::vector<char>& written, Schedule& schedule) {
    if (done == (1u << n_) - 1) {
      ++schedules_;
      const Evaluation e = EvaluateOracle(p_, schedule);
      if (e.ok()) best_ = std::min(best_, e.total);
      return;
    }
    for (uint32_t s = 1; s < (1u << n_); ++s) {
      if (s & done) continue;
      std::vector<OpId> ops;
      for (int i = 0; i < n_; ++i) {
        if (s >> i & 1) ops.push_back(i);
      }
      std::sort(ops.begin(), ops.end(), [&](OpId a, OpId b) { return rank_[a] < rank_[b]; });
      // V7: every input produced outside the set must be in slow memory or retained.
      bool available = true;
      for (OpId op : ops) {
        for (TensorId t : p_.ops[op].inputs) {
          const OpId producer = p_.producer[t];
          if (producer != kNoOp && (s >> producer & 1)) continue;
          if (!written[t] && std::find(retained.begin(), retained.end(), t) == retained.end()) available = false;
        }
      }
      if (!available) continue;
      std::vector<TensorId> retainable;  // V8 and O5
      for (OpId op : ops) {
        if (!p_.IsGraphOutput(p_.ops[op].output)) retainable.push_back(p_.ops[op].output);
      }
      std::sort(retainable.begin(), retainable.end());
      for (uint32_t mask = 0; mask < (1u << retainable.size()); ++mask) {
        std::vector<TensorId> keep;
        for (size_t b = 0; b < retainable.size(); ++b) {
          if (mask >> b & 1) keep.push_back(retainable[b]);
        }
        const Best& best = Context(ops, retained, keep);
        if (best.latency == kNone) continue;
        std::vector<char> now = written;
        for (OpId op : ops) {
          const TensorId out = p_.ops[op].output;
          bool read_inside = false;
          for (OpId c : p_.consumers[out]) read_inside = read_inside || (s >> c & 1);
          if (!read_inside && std::find(keep.begin(), keep.end(), out) == keep.end()) now[out] = 1;
        }
        schedule.subgraphs.push_back({ops, best.granularity, best.traversal, keep});
        Recurse(done | s, keep, now, schedule);
        schedule.subgraphs.pop_back();
      }
    }
  }

  const Problem& p_;
  int n_;
  std::vector<int> rank_;
  std::map<std::tuple<std::vector<OpId>, std::vector<TensorId>, std::vector<TensorId>>, Best> memo_;
  Latency best_ = kNone;
  int64_t schedules_ = 0;
};

bool Close(Latency a, Latency b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }

TEST_CASE("exact solver: equal to a brute-force enumeration of its family on random DAGs of up to 6 ops") {
  std::mt19937_64 rng(20261122);
  int compared = 0, feasible = 0, optimal_by_solver = 0, bound_met = 0;
  int64_t schedules = 0;
  for (int round = 0; round < 300; ++round) {
    RandomProblemOptions options;
    options.min_ops = 1;
    options.max_ops = round % 3 == 0 ? 6 : 5;
    options.native = round % 4 == 0 ? 4 : 2;
    options.odd_side_probability = 0.3;
    const DagShape shape = kAllDagShapes[round % std::size(kAllDagShapes)];
    const Problem problem = RandomProblem(rng, shape, options);
    BruteForce brute(problem);
    const Latency expected = brute.Optimum();
    schedules += brute.schedules();

    ExactOptions exact;
    exact.max_subgraph_ops = 6;
    const ExactResult result = SolveExact(problem, exact);
    CAPTURE(round);
    CAPTURE(expected);
    if (expected == kNone) {
      CHECK(result.status == ExactStatus::kNone);
      CHECK(!result.best);
      continue;
    }
    ++feasible;
    REQUIRE(result.status == ExactStatus::kOptimal);
    REQUIRE(result.best);
    CHECK(result.found_by_solver);
    const Evaluation check = EvaluateOracle(problem, *result.best);
    REQUIRE(check.ok());
    CHECK(Close(check.total, result.total));
    CHECK(Close(result.total, expected));
    // The problem's lower bound (eval/bound/bounds.h) holds for every schedule, so also for the
    // family's optimum (with the solver's heuristic built from it, this also checks that).
    const Latency bound = ComputeLowerBound(problem).total();
    CHECK(bound <= expected * (1 + 1e-9));
    if (Close(bound, expected)) ++bound_met;
    ++compared;
    if (result.found_by_solver) ++optimal_by_solver;
  }
  MESSAGE("compared " << compared << " DAGs with a schedule (" << feasible << "), " << schedules
                      << " complete schedules enumerated; the lower bound equals the optimum on "
                      << bound_met);
  CHECK(compared >= 200);
}

// Layout ops (spec L1-L6): a tensor a Layout op reads must be written, never ephemeral or only
// retained; the solver's retention choices and floors must keep its optimum that of the family.
TEST_CASE("exact solver: equal to the brute-force enumeration on random DAGs with Layout ops") {
  std::mt19937_64 rng(20261125);
  int compared = 0, with_layout = 0;
  for (int round = 0; round < 200; ++round) {
    RandomProblemOptions options;
    options.min_ops = 2;
    options.max_ops = round % 3 == 0 ? 6 : 5;
    options.native = round % 4 == 0 ? 4 : 2;
    options.odd_side_probability = 0.3;
    options.layout_probability = 0.4;
    const DagShape shape = kAllDagShapes[round % std::size(kAllDagShapes)];
    const Problem problem = RandomProblem(rng, shape, options);
    BruteForce brute(problem);
    const Latency expected = brute.Optimum();
    ExactOptions exact;
    exact.max_subgraph_ops = 6;
    const ExactResult result = SolveExact(problem, exact);
    CAPTURE(round);
    CAPTURE(expected);
    if (expected == kNone) {
      CHECK(result.status == ExactStatus::kNone);
      continue;
    }
    REQUIRE(result.status == ExactStatus::kOptimal);
    REQUIRE(result.best);
    const Evaluation check = EvaluateOracle(problem, *result.best);
    INFO(check.violation.Message());
    REQUIRE(check.ok());
    CHECK(Close(check.total, result.total));
    CHECK(Close(result.total, expected));
    CHECK(ComputeLowerBound(problem).total() <= expected * (1 + 1e-9));
    ++compared;
    for (OpId op = 0; op < static_cast<OpId>(problem.ops.size()); ++op) {
      if (problem.IsLayout(op)) {
        ++with_layout;
        break;
      }
    }
  }
  MESSAGE("with Layout ops: compared " << compared << " DAGs, " << with_layout << " of them with a Layout op");
  CHECK(with_layout >= 100);
}

TEST_CASE("exact solver: an incumbent prunes but never changes the optimum, the family is stated") {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 60; ++round) {
    RandomProblemOptions options;
    options.max_ops = 6;
    options.native = 4;
    options.odd_side_probability = 0;
    const Problem problem = RandomProblem(rng, kAllDagShapes[round % std::size(kAllDagShapes)], options);
    ExactOptions plain;
    const ExactResult reference = SolveExact(problem, plain);
    if (reference.status != ExactStatus::kOptimal) continue;
    Schedule baseline;
    try {
      baseline = BuildBaseline(problem);
    } catch (const std::exception&) {
      continue;
    }
    ExactOptions seeded;
    seeded.incumbent = baseline;
    const ExactResult result = SolveExact(problem, seeded);
    CAPTURE(round);
    REQUIRE(result.status == ExactStatus::kOptimal);
    REQUIRE(result.best);
    CHECK(EvaluateOracle(problem, *result.best).ok());
    // The written schedule is never worse than the family's optimum, nor than the incumbent.
    CHECK(result.total <= reference.total * (1 + 1e-9));
    CHECK(!result.family.empty());
  }
}

TEST_CASE("exact solver: budgets end the run with the incumbent and status feasible") {
  const Problem problem = ReadProblemFile(std::string(ANNEALER_SOURCE_DIR) + "/problems/mlsys-2026-5.json");
  ExactOptions options;
  options.incumbent = BuildBaseline(problem);
  options.max_states = 3;
  const ExactResult result = SolveExact(problem, options);
  CHECK(result.status == ExactStatus::kFeasible);
  CHECK(result.stop_reason == "state budget");
  REQUIRE(result.best);
  CHECK(EvaluateOracle(problem, *result.best).ok());
  CHECK(!result.found_by_solver);

  ExactOptions no_incumbent;
  std::atomic<bool> stop{true};
  no_incumbent.stop = &stop;
  const ExactResult stopped = SolveExact(problem, no_incumbent);
  CHECK(stopped.status == ExactStatus::kNone);
  CHECK(stopped.stop_reason == "stopped");
}

TEST_CASE("exact solver: proves mlsys-2026-1 optimal within its family") {
  const Problem problem = ReadProblemFile(std::string(ANNEALER_SOURCE_DIR) + "/problems/mlsys-2026-1.json");
  ExactOptions options;
  options.incumbent = BuildBaseline(problem);
  const ExactResult result = SolveExact(problem, options);
  REQUIRE(result.status == ExactStatus::kOptimal);
  REQUIRE(result.best);
  const Evaluation check = EvaluateOracle(problem, *result.best);
  REQUIRE(check.ok());
  CHECK(Close(check.total, result.total));
  // The search's best known schedule on this problem (docs/performance.md) is 367,001.6.
  CHECK(result.total <= 367001.6 * (1 + 1e-9));
  // The lower bound is 367,001.6 too (docs/lower-bound.md): the family's optimum is optimal
  // over every schedule, recomputation and partial edge tiles included.
  CHECK(Close(ComputeLowerBound(problem).total(), 367001.6));
  CHECK(Close(result.total, 367001.6));
  MESSAGE("mlsys-2026-1: " << result.total << " in " << result.seconds << " s, " << result.states << " states");
}

TEST_CASE("exact solver in the search: a completed run enters the pool (deterministic mode, state budget)") {
  const Problem problem = ReadProblemFile(std::string(ANNEALER_SOURCE_DIR) + "/problems/mlsys-2026-5.json");
  SearchParams params;
  params.deterministic = true;
  params.threads = 1;
  params.max_epochs = 1;
  params.epoch_moves = 50;
  params.exact.deterministic_states = 2000;  // -5 needs 740
  const std::atomic<bool> stop{false};
  const SearchSummary summary =
      RunSearch(problem, params, std::chrono::steady_clock::now() + std::chrono::hours(1), stop, {});
  REQUIRE(summary.exact);
  CHECK(summary.exact->status == ExactStatus::kOptimal);
  CHECK(summary.best_total <= summary.exact->total * (1 + 1e-12));
  CHECK(summary.best_total <= 777693.87);
  CHECK(EvaluateOracle(problem, summary.best).ok());

  params.exact.time_share = 0;  // off: no run, no report
  const SearchSummary without = RunSearch(problem, params, std::chrono::steady_clock::now() + std::chrono::hours(1), stop, {});
  CHECK(!without.exact);
}

// H6 (a weight path): the solver's floors and its working-set shortcut must not cut the optimum
// of a chip whose weights leave the fast memory and load beside it.
TEST_CASE("exact solver: equal to the brute-force enumeration with a weight path (H6)") {
  std::mt19937_64 rng(20261126);
  int compared = 0, with_weights = 0;
  for (int round = 0; round < 150; ++round) {
    RandomProblemOptions options;
    options.min_ops = 1;
    options.max_ops = round % 3 == 0 ? 5 : 4;
    options.native = round % 4 == 0 ? 4 : 2;
    options.odd_side_probability = 0.3;
    const DagShape shape = kAllDagShapes[round % std::size(kAllDagShapes)];
    Problem problem = RandomProblem(rng, shape, options);
    RandomWeightPath(problem, rng, problem.chip);
    if (round % 2 == 0) {  // traffic-bound, the weights' own path deciding
      for (Op& op : problem.ops) op.base_cost *= 0.05;
      problem.slow_memory_bandwidth = 1;
      problem.chip.weight_bandwidth = round % 4 == 0 ? 0.5 : 40;
    }
    if (round % 3 == 1) {  // a tight fast memory, which weights no longer fill
      problem.fast_memory_capacity = std::max<Elements>(1, problem.fast_memory_capacity / 3);
      problem.chip.weight_fifo_capacity = 0;
    }
    bool weights = false;
    for (TensorId t = 0; t < static_cast<TensorId>(problem.tensors.size()); ++t) weights = weights || problem.OnWeightPath(t);
    BruteForce brute(problem);
    const Latency expected = brute.Optimum();
    ExactOptions exact;
    exact.max_subgraph_ops = 5;
    const ExactResult result = SolveExact(problem, exact);
    CAPTURE(round);
    CAPTURE(expected);
    if (expected == kNone) {
      CHECK(result.status == ExactStatus::kNone);
      continue;
    }
    REQUIRE(result.status == ExactStatus::kOptimal);
    REQUIRE(result.best);
    const Evaluation check = EvaluateOracle(problem, *result.best);
    REQUIRE(check.ok());
    CHECK(Close(check.total, result.total));
    CHECK(Close(result.total, expected));
    CHECK(ComputeLowerBound(problem).total() <= expected * (1 + 1e-9));
    ++compared;
    with_weights += weights;
  }
  MESSAGE("H6: compared " << compared << " DAGs (" << with_weights << " with weights)");
  CHECK(compared >= 100);
  CHECK(with_weights >= 50);
}

}  // namespace
}  // namespace annealer
