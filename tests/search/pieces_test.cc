// The piece start (search/repeats/pieces.h): where it cuts, that the pieces compose into a valid
// schedule costing their sum, and that the search runs it deterministically.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "eval/model/subproblem.h"
#include "eval/oracle.h"
#include "eval/random_schedule.h"
#include "search/driver.h"
#include "search/repeats/pieces.h"
#include "search/repeats/repeats.h"
#include "search/starts/baseline.h"
#include "src/io/contest/problem_stack.h"
#include "tests/support/test_files.h"

namespace annealer {
namespace {

std::string Sizes(const RepeatPlan& plan) {
  std::string s;
  for (const RepeatBlock& b : plan.blocks) {
    if (!s.empty()) s += ' ';
    s += std::to_string(b.sub.op_ids.size());
  }
  return s;
}

// Every op in one piece, each piece's exports read only outside it, and the baseline of each
// class composed is valid and costs the pieces' sum.
void CheckComposes(const Problem& problem, const RepeatPlan& plan) {
  std::vector<int> seen(problem.ops.size(), 0);
  for (const RepeatBlock& b : plan.blocks) {
    for (const OpId op : b.sub.op_ids) ++seen[op];
    CHECK(ExportsAreSinks(problem, b.sub));
  }
  for (size_t op = 0; op < seen.size(); ++op) CHECK(seen[op] == 1);
  std::vector<Schedule> schedules;
  Latency sum = 0;
  for (size_t c = 0; c < plan.count.size(); ++c) {
    const Problem& sub = plan.blocks[plan.representative[c]].sub.problem;
    schedules.push_back(BuildBaseline(sub));
    const Evaluation e = EvaluateOracle(sub, schedules.back());
    REQUIRE(e.ok());
    sum += e.total * plan.count[c];
  }
  const Evaluation whole = EvaluateOracle(problem, ComposeBlockSchedules(plan, schedules));
  REQUIRE(whole.ok());
  CHECK(whole.total == doctest::Approx(sum).epsilon(1e-12));
}

TEST_CASE("pieces: a chain is cut at the latest narrowest cut, and no piece is a crumb") {
  Problem chain;
  chain.tensors.assign(41, Tensor{256, 128});
  for (int i = 0; i < 40; ++i) chain.ops.push_back(Op{OpKind::Pointwise, {i}, i + 1, 100.0 + i});
  chain.fast_memory_capacity = 100000;
  chain.slow_memory_bandwidth = 10;
  REQUIRE(chain.Finalize().empty());
  CHECK(Sizes(CutIntoPieces(chain, {.max_piece_ops = 16, .min_piece_ops = 4})) == "16 16 8");
  // 40 - 32 = 8 < min 10: the second cut stops at 30 so that the last piece keeps 10.
  CHECK(Sizes(CutIntoPieces(chain, {.max_piece_ops = 16, .min_piece_ops = 10})) == "16 14 10");
  // A graph of at most one piece is not cut.
  CHECK(CutIntoPieces(chain, {.max_piece_ops = 40, .min_piece_ops = 10}).blocks.empty());
  CheckComposes(chain, CutIntoPieces(chain, {.max_piece_ops = 16, .min_piece_ops = 4}));
}

TEST_CASE("pieces: random graphs compose from their pieces' schedules at their sum") {
  std::mt19937_64 rng(23);
  int cut = 0;
  for (int trial = 0; trial < 300; ++trial) {
    CAPTURE(trial);
    const Problem problem =
        RandomProblem(rng, kAllDagShapes[trial % std::size(kAllDagShapes)], {.min_ops = 8, .max_ops = 40});
    const int64_t max_ops = 4 + trial % 9;
    const RepeatPlan plan = CutIntoPieces(problem, {.max_piece_ops = max_ops, .min_piece_ops = max_ops / 4});
    if (plan.blocks.empty()) continue;
    ++cut;
    CHECK(plan.blocks.size() >= 2);
    CheckComposes(problem, plan);
  }
  CHECK(cut >= 100);
}

TEST_CASE("pieces: the search's piece start where nothing repeats: valid, no worse than its composition, deterministic") {
  // Eleven copies of -5, each with other base costs: nothing repeats, 209 ops.
  Problem stack = StackProblem(testing::ReadBundledProblem("mlsys-2026-5.json"),
                               PlanStack(testing::ReadBundledProblem("mlsys-2026-5.json"), std::nullopt), 11);
  for (size_t op = 0; op < stack.ops.size(); ++op) stack.ops[op].base_cost += static_cast<double>(op % 19 + op / 19);
  REQUIRE(stack.Finalize().empty());
  REQUIRE(FindRepeatedBlocks(stack).blocks.empty());
  auto search = [&](int64_t piece_ops) {
    SearchParams params;
    params.seed = 5;
    params.threads = 2;
    params.deterministic = true;
    params.epoch_moves = 200;
    params.max_epochs = 2;
    params.repeats.deterministic_epochs = 2;
    params.repeats.piece_ops = piece_ops;
    // The exact solver and the block proofs are not what this checks, and take most of the time.
    params.exact.time_share = 0;
    params.repeats.proof_states = 0;
    std::atomic<bool> stop{false};
    return RunSearch(stack, params, std::chrono::steady_clock::now() + std::chrono::hours(1), stop, {});
  };
  CHECK_FALSE(search(0).repeats.has_value());
  const SearchSummary first = search(64);
  REQUIRE(first.repeats.has_value());
  CHECK(first.repeats->pieces);
  CHECK(first.repeats->note == "");
  CHECK(first.repeats->blocks >= 3);
  CHECK(first.repeats->total > 0);
  CHECK(first.best_total <= first.repeats->total * (1 + 1e-12));
  const Evaluation check = EvaluateOracle(stack, first.best);
  REQUIRE(check.ok());
  CHECK(check.total == doctest::Approx(first.best_total).epsilon(1e-12));
  const SearchSummary second = search(64);
  CHECK(second.best == first.best);
  CHECK(second.best_total == first.best_total);
}

}  // namespace
}  // namespace annealer
