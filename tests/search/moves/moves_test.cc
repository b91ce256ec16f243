// The moves (search/moves/): every proposal is rejected or valid under the oracle, and the
// switches that make the repairs fast (kept runs, the committed subgraphs' facts, the repair from
// the first subgraph it can change) make the edits of the slow ways.
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "eval/cost/cost_cache.h"
#include "eval/cost/incremental.h"
#include "eval/oracle.h"
#include "eval/random_schedule.h"
#include "search/moves/moves.h"
#include "search/starts/baseline.h"
#include "search/subgraph_tools.h"
#include "tests/support/test_files.h"

namespace annealer {
namespace {

using testing::ReadBundledProblem;

TEST_CASE("moves: every proposal on problem 5 is either rejected or valid under the oracle") {
  const Problem problem = ReadBundledProblem("mlsys-2026-5.json");
  CostCache cache(1 << 16);
  SubgraphPricer pricer(problem, &cache);
  const std::vector<int> rank = TopologicalRanks(problem);
  MoveContext context{problem, rank, pricer, [] { return false; }};
  IncrementalEvaluator evaluator(problem, &cache);
  REQUIRE(evaluator.Reset(BuildBaseline(problem)).valid);
  std::mt19937_64 rng(7);
  int applied = 0;
  for (int i = 0; i < 400; ++i) {
    const MoveKind kind = static_cast<MoveKind>(i % kNumMoveKinds);
    auto edit = MakeMove(context, kind, evaluator.schedule(), rng);
    if (!edit) continue;
    const Candidate candidate = evaluator.Propose(*edit);
    const Schedule next = ApplyEdit(evaluator.schedule(), *edit);
    const Evaluation truth = EvaluateOracle(problem, next);
    CHECK(candidate.valid == truth.ok());
    if (candidate.valid && candidate.total <= evaluator.committed().total * 1.02) {
      CHECK(candidate.total == doctest::Approx(truth.total).epsilon(1e-9));
      evaluator.Commit();
      ++applied;
    } else {
      evaluator.Revert();
    }
  }
  CHECK(applied > 10);
  CHECK(EvaluateOracle(problem, evaluator.schedule()).ok());
}

// A random schedule of `problem` that retains often (its retains may be ones a repair filters,
// and the walk's retention moves add more), or null when it is invalid: the walks then start
// from the baseline.
std::unique_ptr<Schedule> RetainingStart(const Problem& problem, std::mt19937_64& rng) {
  RandomScheduleOptions options;
  options.max_steps = 300;
  options.invalid_probability = 0;
  options.extra_retain_probability = 0.5;
  auto start = std::make_unique<Schedule>(RandomSchedule(problem, rng, options));
  if (!EvaluateOracle(problem, *start).ok()) return nullptr;
  return start;
}

// A walk of random moves from the baseline, committing valid ones that are no more than 2 %
// worse; every move is made twice from the same generator state, by `fast` and by `slow` (the
// same context but for one switch), and the two edits must be equal. Returns the moves made.
int kept_runs_made = 0;  // edits of SameEditsBothWays with a kept run on either side

int SameEditsBothWays(const Problem& problem, CostCache& cache, uint64_t seed, int moves,
                      void (*set_slow)(MoveContext&), void (*set_both)(MoveContext&) = nullptr,
                      const Schedule* start = nullptr) {
  SubgraphPricer pricer(problem, &cache);
  const std::vector<int> rank = TopologicalRanks(problem);
  IncrementalEvaluator evaluator(problem, &cache);
  REQUIRE(evaluator.Reset(start != nullptr ? *start : BuildBaseline(problem)).valid);
  MoveContext fast{problem, rank, pricer, [] { return false; }, &evaluator,
                   MergeReadersApplies(problem), GatherKLoopApplies(problem)};
  if (set_both != nullptr) set_both(fast);
  MoveContext slow = fast;
  set_slow(slow);
  std::mt19937_64 rng(seed);
  int made = 0;
  for (int i = 0; i < moves; ++i) {
    const MoveKind kind = static_cast<MoveKind>(std::uniform_int_distribution<int>(0, kNumMoveKinds - 1)(rng));
    std::mt19937_64 twin = rng;
    auto edit = MakeMove(fast, kind, evaluator.schedule(), rng);
    auto reference = MakeMove(slow, kind, evaluator.schedule(), twin);
    INFO("seed " << seed << " move " << i << " kind " << MoveName(kind));
    REQUIRE(edit.has_value() == reference.has_value());
    CHECK(rng == twin);
    if (!edit) continue;
    ++made;
    // Compared with their kept runs copied in (a switch may keep another run in place).
    ScheduleEdit copied = *edit, reference_copied = *reference;
    MaterializeKept(evaluator.schedule(), copied);
    MaterializeKept(evaluator.schedule(), reference_copied);
    CHECK(ApplyEdit(evaluator.schedule(), *edit) == ApplyEdit(evaluator.schedule(), copied));
    CHECK(copied.begin == reference_copied.begin);
    CHECK(copied.end == reference_copied.end);
    CHECK(copied.replacement == reference_copied.replacement);
    kept_runs_made += edit->kept() > 0 || reference->kept() > 0;
    const Candidate candidate = evaluator.Propose(*edit);
    if (candidate.valid && candidate.total <= evaluator.committed().total * 1.02) {
      evaluator.Commit();
    } else {
      evaluator.Revert();
    }
  }
  return made;
}

TEST_CASE("moves: an edit that keeps a stretch in place is the edit that copies it") {
  // The slow side copies every kept subgraph into its replacement (min_kept_run 0); the fast
  // one keeps runs of one or more in place (the search's bound is 4), so that the short
  // stretches of small graphs exercise it too. The walk proposes the fast side's edits.
  auto copy = [](MoveContext& c) { c.min_kept_run = 0; };
  auto any = [](MoveContext& c) { c.min_kept_run = 1; };
  CostCache cache(1 << 16);
  int made = 0;
  kept_runs_made = 0;
  for (const char* name : {"mlsys-2026-5.json", "mlsys-2026-9.json", "mlsys-2026-13.json"}) {
    const Problem problem = ReadBundledProblem(name);
    cache.Clear();
    made += SameEditsBothWays(problem, cache, 31, 8000, copy, any);
  }
  for (DagShape shape : kAllDagShapes) {
    std::mt19937_64 rng(300 + static_cast<int>(shape));
    for (int trial = 0; trial < 40; ++trial) {
      const Problem problem = RandomProblem(rng, shape, {.min_ops = 12, .max_ops = 64});
      const std::unique_ptr<Schedule> start = RetainingStart(problem, rng);
      cache.Clear();
      made += SameEditsBothWays(problem, cache, 500 + trial, 600, copy, any, start.get());
    }
  }
  MESSAGE("moves made both ways: " << made << ", with a kept run " << kept_runs_made);
  CHECK(made > 5000);
  CHECK(kept_runs_made > 500);
}

TEST_CASE("moves: repairs that read the committed subgraphs' facts from the evaluator make the edits that deriving them makes") {
  auto derive = [](MoveContext& c) { c.committed_facts = false; };
  CostCache cache(1 << 16);
  int made = 0;
  for (const char* name : {"mlsys-2026-5.json", "mlsys-2026-9.json", "mlsys-2026-13.json"}) {
    const Problem problem = ReadBundledProblem(name);
    cache.Clear();
    made += SameEditsBothWays(problem, cache, 11, 600, derive);
  }
  // Random graphs of every shape: recomputation, retains and repairs that reach far.
  for (DagShape shape : kAllDagShapes) {
    std::mt19937_64 rng(900 + static_cast<int>(shape));
    for (int trial = 0; trial < 12; ++trial) {
      const Problem problem = RandomProblem(rng, shape, {.min_ops = 6, .max_ops = 24});
      cache.Clear();
      made += SameEditsBothWays(problem, cache, 100 + trial, 150, derive);
    }
  }
  MESSAGE("moves made both ways: " << made);
  CHECK(made > 5000);
}

TEST_CASE("moves: the whole-schedule repair from the first subgraph it can change makes the edits of the repair of the whole schedule") {
  // Every edit goes to the whole-schedule repair; the slow side scans from the start.
  auto whole = [](MoveContext& c) { c.local_repair = false; };
  auto derive = [](MoveContext& c) { c.committed_facts = false; };
  CostCache cache(1 << 16);
  int made = 0, starts = 0;
  for (const char* name : {"mlsys-2026-5.json", "mlsys-2026-13.json"}) {
    const Problem problem = ReadBundledProblem(name);
    cache.Clear();
    made += SameEditsBothWays(problem, cache, 21, 500, derive, whole);
  }
  // Random graphs, whose committed subgraphs retain tensors that edits may load again.
  for (DagShape shape : kAllDagShapes) {
    std::mt19937_64 rng(700 + static_cast<int>(shape));
    for (int trial = 0; trial < 20; ++trial) {
      const Problem problem = RandomProblem(rng, shape, {.min_ops = 6, .max_ops = 24});
      const std::unique_ptr<Schedule> start = RetainingStart(problem, rng);
      starts += start != nullptr;
      cache.Clear();
      made += SameEditsBothWays(problem, cache, 300 + trial, 250, derive, whole, start.get());
    }
  }
  MESSAGE("moves made both ways: " << made << " (" << starts << " random starts)");
  CHECK(made > 5000);
}

}  // namespace
}  // namespace annealer
