// H6, the weight path beside the slow memory (eval/model/chip_rules.h, docs/cost-model.md): which
// tensors travel it, hand-computed steps against the oracle; the fast path, EvaluateFast, the
// cache and the incremental evaluator against the oracle on random problems with a random weight
// path; the lower bound below the oracle on random valid schedules; the problem file and the
// profile keys, with their errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>

#include "eval/bound/bounds.h"
#include "eval/cost/cost_cache.h"
#include "eval/cost/incremental.h"
#include "eval/oracle.h"
#include "eval/random_schedule.h"
#include "eval/cost/evaluate_fast.h"
#include "eval/cost/subgraph_cost.h"
#include "eval/model/subproblem.h"
#include "search/starts/baseline.h"
#include "search/exact/exact.h"
#include "src/import/hardware_profile.h"
#include "src/io/json_fields.h"
#include "src/io/contest/problem_reader.h"
#include "src/io/contest/problem_writer.h"
#include "tests/eval/extension_properties.h"
#include "tests/support/problem_maker.h"
#include "tests/support/sample_schedules.h"
#include "tests/support/suffix_bounds.h"

namespace annealer {
namespace {

bool Close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }

// One MatMul T0 (128x128) @ T1 (128x128) -> T2, base 2000, B = 10, capacity 100,000; T1 is a
// graph input read only as an RHS: a weight once the chip has a weight path.
Problem OneMatMul(double weight_bandwidth) {
  Problem p;
  p.tensors = {{128, 128}, {128, 128}, {128, 128}};
  p.ops = {{OpKind::MatMul, {0, 1}, 2, 2000}};
  p.fast_memory_capacity = 100000;
  p.slow_memory_bandwidth = 10;
  p.native = 128;
  p.chip.weight_bandwidth = weight_bandwidth;
  REQUIRE(p.Finalize().empty());
  return p;
}

Subgraph One(std::vector<OpId> ops, Granularity g) {
  Subgraph s;
  s.ops = std::move(ops);
  s.granularity = g;
  return s;
}

TEST_CASE("H6: a weight is a graph input that every consumer reads as a MatMul's RHS only") {
  Problem p;
  // T0 @ T1 -> T3, T3 @ T1 -> T4 (T1 the RHS both times), (T4, T2) -> T5: T1 is a weight; T0
  // is an LHS, T2 a Pointwise operand, T3 produced.
  p.tensors = {{64, 64}, {64, 64}, {64, 64}, {64, 64}, {64, 64}, {64, 64}};
  p.ops = {{OpKind::MatMul, {0, 1}, 3, 100}, {OpKind::MatMul, {3, 1}, 4, 100}, {OpKind::Pointwise, {4, 2}, 5, 10}};
  p.fast_memory_capacity = 100000;
  p.slow_memory_bandwidth = 10;
  p.native = 64;
  REQUIRE(p.Finalize().empty());
  CHECK_FALSE(p.OnWeightPath(1));  // no weight path: nothing is a weight
  p.chip.weight_bandwidth = 5;
  CHECK_FALSE(p.OnWeightPath(0));
  CHECK(p.OnWeightPath(1));
  CHECK_FALSE(p.OnWeightPath(2));
  CHECK_FALSE(p.OnWeightPath(3));
  // A graph input that is both operands of one MatMul is an activation too.
  Problem square;
  square.tensors = {{64, 64}, {64, 64}};
  square.ops = {{OpKind::MatMul, {0, 0}, 1, 100}};
  square.fast_memory_capacity = 100000;
  square.slow_memory_bandwidth = 10;
  square.native = 64;
  square.chip.weight_bandwidth = 5;
  REQUIRE(square.Finalize().empty());
  CHECK_FALSE(square.OnWeightPath(0));
}

TEST_CASE("H6: weight slices leave the fast memory and load in parallel with the rest") {
  // [128, 128, 32]: four k-steps, each computing 500 and loading a 128x32 LHS strip (4096, slow
  // memory) and a 32x128 RHS strip (4096, weight path); the last also writes the 16384 tile.
  const Subgraph s = One({0}, {128, 128, 32});
  // One path: 3 x 819.2 + 2457.6 = 4915.2, working set 4096 + 4096 + 16384 = 24576.
  const Problem one = OneMatMul(0);
  CHECK(Close(EvaluateSubgraphOracle(one, s, {}).report.latency, 4915.2));
  CHECK(EvaluateSubgraphOracle(one, s, {}).report.peak_working_set == 24576);
  // Weight path at 20: steps max(500, max(4096/20, 4096/10)) = 500; the last max(204.8, 2048).
  Problem two = OneMatMul(20);
  SubgraphResult r = EvaluateSubgraphOracle(two, s, {});
  CHECK(Close(r.report.latency, 3 * 500 + 2048));
  CHECK(Close(r.report.memory_time, 3 * 409.6 + 2048));
  CHECK(r.report.peak_working_set == 20480);
  CHECK(Close(CostSubgraph(two, s, {}).report.latency, 3548));
  // A slow weight path makes the weights the bound: 4096 / 2 = 2048 a step, 8192.
  CHECK(Close(EvaluateSubgraphOracle(OneMatMul(2), s, {}).report.latency, 8192));
  // Capacity 20480 fits only with the weights out of the fast memory (rule W).
  Problem tight = OneMatMul(20);
  tight.fast_memory_capacity = 20480;
  CHECK(EvaluateSubgraphOracle(tight, s, {}).ok());
  tight.chip.weight_bandwidth = 0;
  CHECK(EvaluateSubgraphOracle(tight, s, {}).violation.Message() ==
        "W: step 0 (tile 0, k-step 0) needs a working set of 24576 > capacity 20480");
  // The FIFO holds a step's weight slices.
  Problem fifo = OneMatMul(20);
  fifo.chip.weight_fifo_capacity = 4096;
  CHECK(EvaluateSubgraphOracle(fifo, s, {}).ok());
  fifo.chip.weight_fifo_capacity = 4095;
  const std::string message =
      "H6: step 0 (tile 0, k-step 0) needs 4096 elements of weights in the weight FIFO > capacity 4095";
  CHECK(EvaluateSubgraphOracle(fifo, s, {}).violation.Message() == message);
  CHECK(CostSubgraph(fifo, s, {}).violation.Message() == message);
  CHECK(CostSubgraph(fifo, s, {}).verdict == Verdict::kOutOfMemory);
}

TEST_CASE("H6: a sub-problem keeps every tensor on its path, or says it does not") {
  // X0 @ W1 -> X1, then W2 @ X1 -> X2: X1 is the RHS of op 1 only, an activation produced by op 0.
  Problem p;
  p.tensors = {{64, 64}, {64, 64}, {64, 64}, {64, 64}, {64, 64}};
  p.ops = {{OpKind::MatMul, {0, 1}, 2, 100}, {OpKind::MatMul, {3, 2}, 4, 100}};
  p.fast_memory_capacity = 100000;
  p.slow_memory_bandwidth = 10;
  p.native = 64;
  REQUIRE(p.Finalize().empty());
  const std::vector<OpId> first = {0}, second = {1};
  CHECK(SameWeightPaths(p, ExtractSubproblem(p, second)));  // no weight path: nothing to keep
  p.chip.weight_bandwidth = 5;
  CHECK(SameWeightPaths(p, ExtractSubproblem(p, first)));
  // Alone, op 1 would read X1 as a graph input, only as its RHS: a weight there, not here.
  const Subproblem sub = ExtractSubproblem(p, second);
  CHECK(sub.problem.OnWeightPath(1));
  CHECK_FALSE(p.OnWeightPath(2));
  CHECK_FALSE(SameWeightPaths(p, sub));
}

// ---- Property tests.

// Draws the rules: half the problems with H1-H4 as well (prefetch off), half with H6 alone.
void DrawRules(Problem& problem, std::mt19937_64& rng, int trial) {
  problem.chip = trial % 2 == 0 ? RandomChipRules(problem, rng) : ChipRules{};
  RandomWeightPath(problem, rng, problem.chip);
  REQUIRE(CheckChipRules(problem.chip, problem.native, problem.fast_memory_capacity).empty());
}

bool HasWeights(const Problem& problem) {
  for (TensorId t = 0; t < static_cast<TensorId>(problem.tensors.size()); ++t) {
    if (problem.OnWeightPath(t)) return true;
  }
  return false;
}

TEST_CASE("H6: the fast path, EvaluateFast and the cache equal the oracle with a random weight path") {
  testing::SubgraphTally tally;
  int moved = 0, weighed = 0;
  const int whole_valid = testing::FastAgainstOracle(
      36000,
      [](Problem& problem, std::mt19937_64& rng, int trial) {
        DrawRules(problem, rng, trial);
        if (trial % 3 == 0) {  // traffic-dominated: where the two paths decide the latency
          for (Op& op : problem.ops) op.base_cost *= 0.05;
        }
      },
      tally,
      [&](const Problem& problem, const Subgraph& s, const std::vector<TensorId>& retained_in,
          const SubgraphResult& oracle) {
        Problem one_path = problem;
        one_path.chip.weight_bandwidth = 0;
        one_path.chip.weight_fifo_capacity = 0;
        const SubgraphResult plain = EvaluateSubgraphOracle(one_path, s, retained_in);
        if (plain.ok() && !Close(plain.report.latency, oracle.report.latency)) ++moved;
        if (plain.ok() && plain.report.peak_working_set != oracle.report.peak_working_set) ++weighed;
      });
  MESSAGE("H6: subgraphs valid " << tally.valid << " (latency moved by the weight path " << moved << ", working set "
                                 << weighed << "), invalid " << tally.invalid << " by rule" << testing::ByRule(tally)
                                 << "; whole schedules valid " << whole_valid);
  CHECK(tally.valid > 3000);
  CHECK(moved > 500);
  CHECK(weighed > 500);
  CHECK(tally.rules["H6"] > 50);
  CHECK(whole_valid > 100);
}

TEST_CASE("H6: incremental evaluation equals the oracle over random edits") {
  const testing::WalkTally walk = testing::IncrementalWalk(36500, [](Problem& problem, std::mt19937_64& rng, int trial) {
    DrawRules(problem, rng, trial);
  });
  const int proposals = walk.proposals, valid = walk.valid;
  std::map<std::string, int> rules = walk.rules;
  MESSAGE("H6, incremental: proposals " << proposals << ", valid " << valid << ", H6 " << rules["H6"]);
  CHECK(valid > 1000);
  CHECK(rules["H6"] > 20);
}

TEST_CASE("H6: the lower bound stays below the oracle on random valid schedules") {
  int with_weights = 0;
  const int valid = testing::BoundBelowOracle(
      37000, true,
      [](Problem& problem, std::mt19937_64& rng, int trial) {
        DrawRules(problem, rng, trial);
        if (trial % 3 == 0) {  // traffic-dominated: the paths' terms decide the bound
          for (Op& op : problem.ops) op.base_cost *= 0.05;
          problem.slow_memory_bandwidth = 1 + trial % 7;
          problem.chip.weight_bandwidth = trial % 2 == 0 ? 0.5 : 3;
        }
      },
      [&](const Problem& problem) { with_weights += HasWeights(problem); });
  MESSAGE("H6, bound: valid schedules " << valid << " (" << with_weights << " on problems with weights)");
  CHECK(valid > 500);
  CHECK(with_weights > 300);
}

TEST_CASE("H6: the baseline and the exact solver stay valid and above the bound") {
  std::mt19937_64 rng(37500);
  int checked = 0;
  for (int trial = 0; trial < 30; ++trial) {
    Problem problem = RandomProblem(rng, trial % 2 ? DagShape::kMatMulChain : DagShape::kSharedInput,
                                    {.min_ops = 2, .max_ops = 5});
    problem.chip = ChipRules{};
    RandomWeightPath(problem, rng, problem.chip);
    problem.chip.weight_fifo_capacity = 0;  // a FIFO can make every schedule invalid
    const Schedule baseline = BuildBaseline(problem);
    const Evaluation evaluation = EvaluateOracle(problem, baseline);
    INFO("trial " << trial << ": " << evaluation.violation.Message());
    REQUIRE(evaluation.ok());
    CHECK(ComputeLowerBound(problem).total() <= evaluation.total * (1 + 1e-9));
    ++checked;
  }
  CHECK(checked == 30);
}

// P16 under H6 by hand: a Pointwise op P (X -> A, 8x8, base 100 per native tile) feeds `heads`
// MatMuls A @ W_j (K = 8 > n = 4: P1 keeps P out of their subgraphs, so each head is an island),
// W_j a weight (Bw = 4), K_j a graph output, base 0; B = 1. The cheapest schedule runs P once and
// writes A (400: compute-bound), and each head loads A and writes K_j on the activation path while
// W_j streams beside them: per tile max(16 / B, 16 / Bw) + max((16 + 16) / B, 16 / Bw) = 48, two
// row tiles, 96. With one path the head would pay its weight loads at B too (160, the one-path
// test in tests/eval/bound/islands/crossing_test.cc). P16 under H6: P's island at a = 1 (400, serving a head costs 400), each
// head's island at (0, 0): its write 32 plus A's load 64, so 400 + 96 x heads, met. The islands
// part gives 400 + 32 x heads; with Bw = 1/2 the weights bind (128 a head) and the islands part
// (max(W / Bw, O / B) per island) is the bound, met too.
TEST_CASE("H6: P16's crossing activations by hand, on the activation path") {
  for (double bw : {4.0, 0.5}) {
    for (int heads : {2, 3, 5}) {
      Problem p = testing::SharedInputHeads(heads, bw);
      REQUIRE(p.Finalize() == "");
      REQUIRE(p.OnWeightPath(2));
      const LowerBound bound = ComputeLowerBound(p);
      CAPTURE(bw);
      CAPTURE(heads);
      CHECK(bound.island_count == 1 + heads);
      const double head = bw == 4.0 ? 96 : 128;
      const double expected = 400 + head * heads;
      // P21: each head is an island of one MatMul with K > n; at best it retains A and, per
      // row tile, streams W_j (two k-steps) and writes its tile at the second: 4 + 16 each (Bw =
      // 4), or 32 + 32 (Bw = 1/2).
      CHECK(bound.islands == doctest::Approx(400 + (bw == 4.0 ? 40 : 128) * heads));
      CHECK(bound.crossing == doctest::Approx(expected));
      CHECK(bound.total() == doctest::Approx(expected));
      Schedule schedule;  // P once, A written; every head loads it
      schedule.subgraphs.push_back({{0}, Granularity{4, 4, 1}, std::nullopt, {}});
      for (int j = 0; j < heads; ++j) {
        schedule.subgraphs.push_back({{static_cast<OpId>(1 + j)}, Granularity{4, 4, 4}, std::nullopt, {}});
      }
      const Evaluation e = EvaluateOracle(p, schedule);
      REQUIRE(e.ok());
      CHECK(e.subgraphs[1].latency == doctest::Approx(head));
      CHECK(e.total == doctest::Approx(expected));  // optimal: it meets the bound
    }
  }
}

// P16 under H6: a shared activation made in an island that loads a large weight (a trunk MatMul
// with its Pointwise epilogue p), read by MatMul heads with K > n that sit in islands of their own
// (P1), each with a weight: the readers' loads of p's output travel the activation path only.
// Schedules: random ones with recomputation and extra retention (the served case), both baselines
// and, every fourth problem, the exact solver's best.
Problem WeightedFanout(std::mt19937_64& rng) {
  testing::ProblemMaker make{rng};
  Problem& problem = make.problem;
  problem.native = 4;
  const Elements rows = make.Pick({4, 8, 12}), d = make.Pick({8, 12});
  TensorId shared = make.Tensor(rows, d);
  const int levels = make.Coin(3) ? 2 : 1;
  for (int level = 0; level < levels; ++level) {
    if (!make.Coin(4)) shared = make.Op(OpKind::MatMul, {shared, make.Tensor(d, d)}, rows, d, make.PickReal({0.5, 4, 40}));  // the trunk
    shared = make.Op(OpKind::Pointwise, {shared}, rows, d, make.PickReal({0, 1, 8, 50}));                           // p
    std::vector<TensorId> outs = make.Readers(shared, rows, d, 6);
    for (size_t i = 0; i + 1 < outs.size(); i += 2) {  // pairwise sums join some readers
      const Tensor& x = problem.tensors[outs[i]];
      const Tensor& y = problem.tensors[outs[i + 1]];
      if (x.width != y.width || x.height != y.height || make.Coin(2)) continue;
      make.Op(OpKind::Pointwise, {outs[i], outs[i + 1]}, x.height, x.width, make.PickReal({0, 1}));
    }
    if (level + 1 < levels) {
      const Tensor& first = problem.tensors[outs[0]];
      shared = first.height == rows && first.width == d ? outs[0] : make.Tensor(rows, d);
    }
  }
  make.AtRealRatios();
  problem.chip.weight_bandwidth = problem.slow_memory_bandwidth * make.PickReal({0.5, 2.3, 10});
  problem.chip.weight_fifo_capacity = make.Coin(2) ? 0 : problem.fast_memory_capacity / make.Pick({1, 4});
  REQUIRE(problem.Finalize() == "");
  REQUIRE(CheckChipRules(problem.chip, problem.native, problem.fast_memory_capacity).empty());
  return problem;
}

TEST_CASE("H6: crossing activations (P16) on the activation path never above the oracle") {
  std::mt19937_64 rng(37700);
  int valid = 0, decided = 0, gained = 0, problems_decided = 0;
  double tightest = 0;
  for (int trial = 0; trial < 700; ++trial) {
    Problem problem = WeightedFanout(rng);
    const double ratio[] = {0.1, 0.5, 2, 10};
    for (Op& op : problem.ops) op.base_cost *= ratio[trial % 4];
    const LowerBound bound = ComputeLowerBound(problem);
    const BoundModel model = BuildBoundModel(problem);
    const double others = std::max({bound.compute, bound.graph_io, bound.traffic, bound.combined, bound.islands,
                                    bound.streaming, bound.memory_floor});
    const bool decides = bound.crossing > others * (1 + 1e-9);
    gained += bound.crossing > bound.islands * (1 + 1e-9) ? 1 : 0;
    problems_decided += decides ? 1 : 0;
    const std::vector<Schedule> schedules = testing::SampleSchedules(problem, rng, trial % 4 == 0);
    for (const Schedule& schedule : schedules) {
      const Evaluation evaluation = EvaluateOracle(problem, schedule);
      if (!evaluation.ok()) continue;
      ++valid;
      decided += decides ? 1 : 0;
      INFO("trial " << trial << ": crossing " << bound.crossing << " islands " << bound.islands << " streaming "
                    << bound.streaming << ", oracle " << evaluation.total);
      CHECK(bound.crossing <= evaluation.total * (1 + 1e-9));
      CHECK(bound.total() <= evaluation.total * (1 + 1e-9));
      if (decides) tightest = std::max(tightest, bound.crossing / evaluation.total);
      testing::CheckSuffixBounds(model, problem, schedule, evaluation);
    }
  }
  MESSAGE("H6, P16: valid schedules " << valid << ", problems where crossing exceeds islands " << gained
                                      << ", where it is above every other part " << problems_decided
                                      << " (" << decided << " schedules), tightest crossing/latency " << tightest);
  CHECK(valid > 1500);
  CHECK(decided > 100);
}

// ---- Files.

TEST_CASE("H6: a problem file carries the weight path and reads it back, bad values are one line") {
  Problem p = OneMatMul(20);
  p.chip.weight_fifo_capacity = 4096;
  const std::string json = ProblemToJson(p);
  CHECK(json.find("\"weight_bandwidth\": 20, \"weight_fifo_capacity\": 4096") != std::string::npos);
  const Problem back = ParseProblem(json, "p.json");
  CHECK(back.chip == p.chip);
  // H1-H5 alone are written as before, without the H6 keys.
  Problem h1 = OneMatMul(0);
  h1.chip.staging_capacity = 50000;
  CHECK(ProblemToJson(h1).find("weight_") == std::string::npos);
  auto error = [&](const std::string& rules) {
    std::string text = json;
    const size_t at = text.find("\"chip_rules\"");
    REQUIRE(at != std::string::npos);
    text = text.substr(0, at) + "\"chip_rules\": " + rules + "\n}\n";
    try {
      ParseProblem(text, "p.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error("{\"weight_fifo_capacity\": 100}") ==
        "p.json: chip_rules: weight_fifo_capacity: needs a weight path (weight_bandwidth > 0) for the FIFO to sit on");
  CHECK(error("{\"weight_bandwidth\": -1}") ==
        "p.json: chip_rules: weight_bandwidth: must be a finite number >= 0 (0: no weight path), got -1");
  CHECK(error("{\"weight_bandwidth\": 5, \"double_buffer\": [\"staging\"], \"prefetch\": true}") ==
        "p.json: chip_rules: weight_bandwidth: the weight path (H6) is not combined with prefetch (H5)");
}

const char* kProfile = R"(name: chip
description: a chip with a weight path
dtype: int8
fast_memory: 24 MiB
bandwidth: 14 GiB/s
clock: 700 MHz
matrix_unit: 256
macs_per_cycle: 65536
vector_elements_per_cycle: 256
weight_bandwidth: 34 GB/s
weight_fifo: 256 KiB
)";

std::string ProfileError(const std::string& text) {
  try {
    ParseHardwareProfile(text, "hardware/x.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST_CASE("H6: a profile's weight path becomes the problem's, and bad values name file, line and key") {
  const DerivedHardware d = Derive(ParseHardwareProfile(kProfile, "hardware/x.yaml"));
  CHECK(Close(d.chip.weight_bandwidth, 34e9 / 700e6));
  CHECK(d.chip.weight_fifo_capacity == 262144);
  CHECK(Close(d.bandwidth, 14.0 * 1073741824.0 / 700e6));
  CHECK(DescribeChipRules(d.chip) ==
        "H6 weight path: 48.5714 elements per time unit, in parallel with the slow memory; weight FIFO 262144 elements");
  std::string text = kProfile;
  CHECK(ProfileError(text + "prefetch: true\ndouble_buffer: staging\n") ==
        "hardware/x.yaml:10: weight_bandwidth: the weight path (H6) is not combined with prefetch: true (H5)");
  std::string no_path = text;
  no_path.replace(no_path.find("weight_bandwidth: 34 GB/s\n"), 26, "");
  CHECK(ProfileError(no_path) == "hardware/x.yaml:10: weight_fifo: needs weight_bandwidth (the weight path the FIFO sits on)");
  std::string bad = text;
  bad.replace(bad.find("34 GB/s"), 7, "fast");
  CHECK(ProfileError(bad) ==
        "hardware/x.yaml:10: weight_bandwidth: expected a positive number and a unit, e.g. \"16 B/cycle\" or \"819 GB/s\", got \"fast\"");
  std::string zero = text;
  zero.replace(zero.find("256 KiB"), 7, "0 KiB");
  CHECK(ProfileError(zero) == "hardware/x.yaml:11: weight_fifo: must be positive, got 0 KiB");
  std::string no_clock = text;
  no_clock.replace(no_clock.find("clock: 700 MHz\n"), 15, "");
  no_clock.replace(no_clock.find("bandwidth: 14 GiB/s"), 19, "bandwidth: 21 B/cycle");
  CHECK(ProfileError(no_clock) ==
        "hardware/x.yaml:9: weight_bandwidth: 34 GB/s needs a clock to become bytes per cycle (add e.g. \"clock: 1.5 GHz\", or give B/cycle)");
}

}  // namespace
}  // namespace annealer
