// A real chip's rules (H1-H5, eval/model/chip_rules.h, docs/cost-model.md): hand-computed examples
// against the oracle; the fast path, the cache and the incremental evaluator against the oracle
// on random problems with random rules; the lower bound below the oracle with rules on; the
// problem file's extension object read back and its errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
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
#include "search/starts/baseline.h"
#include "search/driver.h"
#include "search/exact/exact.h"
#include "search/params.h"
#include "src/import/hardware_profile.h"
#include "tests/support/suffix_bounds.h"
#include "tests/support/test_files.h"
#include "src/io/json_fields.h"
#include "src/io/contest/problem_reader.h"
#include "src/io/contest/problem_writer.h"
#include "tests/eval/extension_properties.h"

namespace annealer {
namespace {

bool Close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }

// One MatMul T0 (128x128) @ T1 (128x128) -> T2, base 2000, bandwidth 10, capacity 100,000.
Problem OneMatMul() {
  Problem p;
  p.tensors = {{128, 128}, {128, 128}, {128, 128}};
  p.ops = {{OpKind::MatMul, {0, 1}, 2, 2000}};
  p.fast_memory_capacity = 100000;
  p.slow_memory_bandwidth = 10;
  p.native = 128;
  REQUIRE(p.Finalize().empty());
  return p;
}

// T0 @ T1 -> T3, then the epilogue (T3, T2) -> T4 (base 500).
Problem MatMulWithEpilogue() {
  Problem p;
  p.tensors = {{128, 128}, {128, 128}, {128, 128}, {128, 128}, {128, 128}};
  p.ops = {{OpKind::MatMul, {0, 1}, 3, 2000}, {OpKind::Pointwise, {3, 2}, 4, 500}};
  p.fast_memory_capacity = 100000;
  p.slow_memory_bandwidth = 10;
  p.native = 128;
  REQUIRE(p.Finalize().empty());
  return p;
}

Subgraph One(std::vector<OpId> ops, Granularity g) {
  Subgraph s;
  s.ops = std::move(ops);
  s.granularity = g;
  return s;
}

std::vector<StepRecord> Steps(const Problem& problem, const Subgraph& subgraph) {
  std::vector<StepRecord> steps;
  EvaluateSubgraphOracleSteps(problem, subgraph, {}, [&](const StepRecord& r) { steps.push_back(r); });
  return steps;
}

TEST_CASE("H1: roles count a step's staged slices, accumulator regions and vector slices") {
  Problem p = MatMulWithEpilogue();
  p.chip.staging_capacity = 100000;  // on, not binding
  // [128, 128, 32]: every step stages a 128x32 LHS strip and a 32x128 RHS strip (8192); the
  // MatMul's tile is in the accumulator (16384); the last step adds T2 whole (16384, vector) and
  // the sink tile of the epilogue (16384, vector).
  const std::vector<StepRecord> steps = Steps(p, One({0, 1}, {128, 128, 32}));
  REQUIRE(steps.size() == 4);
  CHECK(steps[0].roles.staging == 8192);
  CHECK(steps[0].roles.accumulator == 16384);
  CHECK(steps[0].roles.vector == 16384);  // the sink tile, every step (W1)
  CHECK(steps[3].roles.vector == 32768);
  // H1 fails at the first step whose staging exceeds the capacity, after W passes.
  p.chip.staging_capacity = 8191;
  const SubgraphResult r = EvaluateSubgraphOracle(p, One({0, 1}, {128, 128, 32}), {});
  CHECK(r.verdict == Verdict::kOutOfMemory);
  CHECK(r.violation.rule == "H1");
  CHECK(r.violation.detail == "step 0 (tile 0, k-step 0) needs 8192 elements of matrix staging > capacity 8191");
}

TEST_CASE("H2, H4: double buffering and accumulator precision scale the footprints") {
  Problem p = OneMatMul();
  p.chip.double_staging = true;
  p.chip.double_accumulator = true;
  p.chip.accumulator_factor = 2;
  p.chip.accumulator_capacity = 65535;
  const SubgraphResult r = EvaluateSubgraphOracle(p, One({0}, {128, 128, 64}), {});
  // The accumulator tile: 16384 elements x2 precision x2 double-buffered = 65536 > 65535.
  CHECK(r.violation.rule == "H1");
  CHECK(r.violation.detail ==
        "step 0 (tile 0, k-step 0) needs 65536 elements of accumulator (16384 x2 accumulator precision x2 "
        "double-buffered) > capacity 65535");
  p.chip.accumulator_capacity = 65536;
  const std::vector<StepRecord> steps = Steps(p, One({0}, {128, 128, 64}));
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].roles.staging == 2 * (8192 + 8192));
  CHECK(steps[0].roles.accumulator == 65536);
  // Without wide write-back the latency is the contest's: two strips of 8192 (1638.4) per step,
  // the tile written at the last: 1638.4 + (1638.4 + 1638.4) = 4915.2.
  CHECK(Close(EvaluateSubgraphOracle(p, One({0}, {128, 128, 64}), {}).report.latency, 4915.2));
  // H4 wide write-back: the fp32 tile is written at twice the bytes: 1638.4 more.
  p.chip.wide_writeback = true;
  CHECK(Close(EvaluateSubgraphOracle(p, One({0}, {128, 128, 64}), {}).report.latency, 6553.6));
}

TEST_CASE("H3: tile sides are multiples of the base or cover the dimension") {
  Problem p = OneMatMul();
  p.chip.base_w = p.chip.base_h = p.chip.base_k = 16;
  CHECK(EvaluateSubgraphOracle(p, One({0}, {64, 32, 16}), {}).ok());
  const SubgraphResult r = EvaluateSubgraphOracle(p, One({0}, {64, 24, 16}), {});
  CHECK(r.violation.rule == "H3");
  CHECK(r.violation.detail == "h = 24 is not a multiple of the chip's base 16 and does not cover the output height 128");
  const SubgraphResult k = EvaluateSubgraphOracle(p, One({0}, {64, 32, 8}), {});
  CHECK(k.violation.rule == "H3");
  // A side covering a small dimension is allowed: a 100-wide output at w = 100 is one tile.
  Problem narrow;
  narrow.tensors = {{100, 128}, {100, 128}};
  narrow.ops = {{OpKind::Pointwise, {0}, 1, 100}};
  narrow.fast_memory_capacity = 100000;
  narrow.slow_memory_bandwidth = 10;
  narrow.native = 128;
  narrow.chip.base_w = 16;
  REQUIRE(narrow.Finalize().empty());
  CHECK(EvaluateSubgraphOracle(narrow, One({0}, {100, 128, 1}), {}).ok());
  CHECK(EvaluateSubgraphOracle(narrow, One({0}, {50, 128, 1}), {}).violation.rule == "H3");
}

TEST_CASE("H5: prefetch hides the next step's double-buffered loads in the current step's slack") {
  // One MatMul at [128, 128, 32] with base 2000: each k-step computes 500 against two strips of
  // 4096 (819.2); the last step also writes the tile (1638.4). No step has slack: prefetch
  // changes nothing.
  Problem p = OneMatMul();
  const Subgraph s = One({0}, {128, 128, 32});
  const double plain = EvaluateSubgraphOracle(p, s, {}).report.latency;
  CHECK(Close(plain, 3 * 819.2 + 2457.6));
  p.chip.double_staging = true;
  p.chip.prefetch = true;
  CHECK(Close(EvaluateSubgraphOracle(p, s, {}).report.latency, plain));
  // Base 4000 at [64, 128, 32]: two tiles of four k-steps. Every step computes 1000 and loads a
  // 128x32 and a 32x64 strip (6144 elements, 614.4); a tile's last step also writes 128x64
  // (819.2). Without prefetch: 2 x (3 x 1000 + 1433.6) = 8867.2. With it, step 0 leaves a slack
  // of 385.6, step 1 exposes 228.8 and leaves 771.2, step 2 exposes nothing, step 3 exposes only
  // its write (819.2 < 1000), and so on: every step costs its compute, 8000.
  p.ops[0].base_cost = 4000;
  const Subgraph two = One({0}, {64, 128, 32});
  p.chip.prefetch = false;
  CHECK(Close(EvaluateSubgraphOracle(p, two, {}).report.latency, 8867.2));
  p.chip.prefetch = true;
  const std::vector<StepRecord> steps = Steps(p, two);
  REQUIRE(steps.size() == 8);
  CHECK(Close(steps[0].memory, 614.4));
  CHECK(Close(steps[1].memory, 228.8));
  CHECK(Close(steps[2].memory, 0));
  CHECK(Close(steps[3].memory, 819.2));
  CHECK(Close(steps[4].memory, 614.4 - 180.8));
  CHECK(Close(EvaluateSubgraphOracle(p, two, {}).report.latency, 8000));
  CHECK(Close(CostSubgraph(p, two, {}).report.latency, 8000));
  // Loads of a role that is not double-buffered are not prefetched: a Pointwise chain's vector
  // slices with only staging doubled.
  Problem chain = MatMulWithEpilogue();
  chain.chip.double_staging = true;
  chain.chip.prefetch = true;
  Problem off = chain;
  off.chip.prefetch = false;
  const Subgraph epilogue = One({0, 1}, {128, 128, 32});
  CHECK(EvaluateSubgraphOracle(chain, epilogue, {}).report.latency <= EvaluateSubgraphOracle(off, epilogue, {}).report.latency);
}

// ---- Property tests: every evaluator against the oracle, random rules.

TEST_CASE("chip rules: the fast path, EvaluateFast and the cache equal the oracle with random rules") {
  testing::SubgraphTally tally;
  int prefetched = 0;
  const int whole_valid = testing::FastAgainstOracle(
      26000,
      [](Problem& problem, std::mt19937_64& rng, int) {
        problem.chip = RandomChipRules(problem, rng);
        REQUIRE(CheckChipRules(problem.chip, problem.native, problem.fast_memory_capacity).empty());
      },
      tally,
      [&](const Problem& problem, const Subgraph& s, const std::vector<TensorId>& retained_in,
          const SubgraphResult& oracle) {
        // Prefetch only ever lowers the sum of the steps' rooflines.
        if (!problem.chip.prefetch || oracle.report.latency >= oracle.report.compute_time + oracle.report.memory_time) return;
        Problem plain = problem;
        plain.chip.prefetch = false;
        const double without = EvaluateSubgraphOracle(plain, s, retained_in).report.latency;
        CHECK(oracle.report.latency <= without * (1 + 1e-12));
        if (oracle.report.latency < without * (1 - 1e-12)) ++prefetched;
      });
  MESSAGE("chip rules: subgraphs valid " << tally.valid << " (prefetch lowered " << prefetched << "), invalid "
                                         << tally.invalid << " by rule" << testing::ByRule(tally)
                                         << "; whole schedules valid " << whole_valid);
  CHECK(tally.valid > 3000);
  CHECK(tally.rules["H1"] > 200);
  CHECK(tally.rules["H3"] > 200);
  CHECK(prefetched > 30);
  CHECK(whole_valid > 100);
}

// Under H5 the step classes price each step and the slack is replayed step by step
// (PriceByClasses): the same doubles as the plain walk, in the same order of additions, so the
// two agree to the bit, not to rounding. Traffic-dominated problems make the slack matter.
TEST_CASE("chip rules: with prefetch the class prices replayed step by step equal the walk to the bit") {
  int compared = 0, hidden = 0, invalid = 0;
  for (DagShape shape : kAllDagShapes) {
    std::mt19937_64 rng(28000 + static_cast<int>(shape));
    for (int trial = 0; trial < 120; ++trial) {
      RandomProblemOptions problem_options;
      problem_options.max_ops = 3 + trial % 8;
      problem_options.native = trial % 2 == 0 ? 8 : 32;
      Problem problem = RandomProblem(rng, shape, problem_options);
      problem.chip = RandomChipRules(problem, rng);
      if (!problem.chip.prefetch) continue;
      if (trial % 2 == 0) {
        for (Op& op : problem.ops) op.base_cost *= 0.05;
        problem.slow_memory_bandwidth = 1;
      }
      for (int s = 0; s < 3; ++s) {
        RandomScheduleOptions options;
        options.fuse_probability = 0.3 + 0.3 * s;
        options.invalid_probability = 0.1;
        options.max_steps = 500;
        const Schedule schedule = RandomSchedule(problem, rng, options);
        std::vector<TensorId> retained_in;
        for (size_t i = 0; i < schedule.subgraphs.size(); ++i) {
          const Subgraph& sg = schedule.subgraphs[i];
          if (CostSubgraphUsesStepClasses(problem, sg, retained_in)) {
            const SubgraphResult classes = CostSubgraph(problem, sg, retained_in);
            const SubgraphResult walk = CostSubgraphStepByStep(problem, sg, retained_in);
            INFO("shape " << static_cast<int>(shape) << " trial " << trial << " schedule " << s << " subgraph " << i);
            REQUIRE(classes.verdict == walk.verdict);
            CHECK(classes.violation.Message() == walk.violation.Message());
            CHECK(classes.report.latency == walk.report.latency);
            CHECK(classes.report.compute_time == walk.report.compute_time);
            CHECK(classes.report.memory_time == walk.report.memory_time);
            CHECK(classes.report.peak_working_set == walk.report.peak_working_set);
            CHECK(classes.report.tiles == walk.report.tiles);
            CHECK(classes.report.k_steps == walk.report.k_steps);
            ++compared;
            invalid += !walk.ok();
            if (walk.ok()) {
              Problem plain = problem;
              plain.chip.prefetch = false;
              hidden += walk.report.latency < CostSubgraphStepByStep(plain, sg, retained_in).report.latency;
            }
          }
          retained_in = sg.retain;
        }
      }
    }
  }
  MESSAGE("chip rules, prefetch by classes: " << compared << " subgraphs compared, " << hidden
                                              << " where prefetch lowers the latency, " << invalid << " invalid");
  CHECK(compared > 1000);
  CHECK(hidden > 50);
}

TEST_CASE("chip rules: incremental evaluation equals the oracle over random edits") {
  const testing::WalkTally walk = testing::IncrementalWalk(26500, [](Problem& problem, std::mt19937_64& rng, int trial) {
    (void)trial;
    problem.chip = RandomChipRules(problem, rng);
  });
  const int proposals = walk.proposals, valid = walk.valid;
  std::map<std::string, int> rules = walk.rules;
  MESSAGE("chip rules, incremental: proposals " << proposals << ", valid " << valid << ", H1 " << rules["H1"]
                                                << ", H3 " << rules["H3"]);
  CHECK(valid > 1000);
  CHECK(rules["H1"] + rules["H3"] > 100);
}

TEST_CASE("chip rules: the lower bound stays below the oracle with rules on (prefetch included)") {
  int prefetch = 0;
  const int valid = testing::BoundBelowOracle(
      27000, false,
      [](Problem& problem, std::mt19937_64& rng, int trial) {
        problem.chip = RandomChipRules(problem, rng);
        if (trial % 3 == 0) {  // traffic-dominated, where prefetch and the traffic terms meet
          for (Op& op : problem.ops) op.base_cost *= 0.05;
          problem.slow_memory_bandwidth = 1;
        }
      },
      [&](const Problem& problem) { prefetch += problem.chip.prefetch; });
  MESSAGE("chip rules, bound: valid schedules " << valid << " (" << prefetch << " with prefetch)");
  CHECK(valid > 500);
  CHECK(prefetch > 150);
}

// ---- The problem file's extension object.

TEST_CASE("chip rules: a problem file carries them only when one is on, and reads them back") {
  Problem p = OneMatMul();
  const std::string contest = ProblemToJson(p);
  CHECK(contest.find("chip_rules") == std::string::npos);
  p.chip.staging_capacity = 50000;
  p.chip.accumulator_capacity = 40000;
  p.chip.double_staging = true;
  p.chip.double_vector = true;
  p.chip.base_w = 16;
  p.chip.base_h = 16;
  p.chip.base_k = 32;
  p.chip.accumulator_factor = 2;
  p.chip.prefetch = true;
  const std::string json = ProblemToJson(p);
  CHECK(json.find("\"chip_rules\": {\"staging_capacity\": 50000, \"accumulator_capacity\": 40000, "
                  "\"vector_capacity\": 0, \"double_buffer\": [\"staging\", \"vector\"], \"tile_base\": [16, 16, 32], "
                  "\"accumulator_factor\": 2, \"wide_writeback\": false, \"prefetch\": true}") != std::string::npos);
  const Problem back = ParseProblem(json, "p.json");
  CHECK(back.chip == p.chip);
  CHECK(back == p);
}

std::string Message(const std::string& rules) {
  const std::string json =
      "{\"widths\": [128, 128, 128], \"heights\": [128, 128, 128], \"inputs\": [[0, 1]], \"outputs\": [[2]], "
      "\"base_costs\": [2000], \"op_types\": [\"MatMul\"], \"fast_memory_capacity\": 100000, "
      "\"slow_memory_bandwidth\": 10, \"native_granularity\": [128, 128], \"chip_rules\": " + rules + "}";
  try {
    ParseProblem(json, "p.json");
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST_CASE("chip rules: bad or contradictory rules in a problem file are one line naming the key") {
  CHECK(Message("{\"staging_capacity\": 200000}") ==
        "p.json: chip_rules: staging_capacity: 200000 elements is larger than the fast memory (100000 elements), "
        "which every step's working set also fits");
  CHECK(Message("{\"tile_base\": [16, 0, 16]}") == "p.json: chip_rules: base_h: must be a positive integer, got 0");
  CHECK(Message("{\"tile_base\": [16, 16]}") == "p.json: chip_rules.tile_base: expected 3 entries [w, h, k], got 2");
  CHECK(Message("{\"prefetch\": true}") ==
        "p.json: chip_rules: prefetch: needs a double-buffered staging or vector role to hold the next step's loads");
  CHECK(Message("{\"double_buffer\": [\"operands\"]}") ==
        "p.json: chip_rules.double_buffer[0]: unknown role the string \"operands\" (expected staging, accumulator or vector)");
  CHECK(Message("{\"prefetch\": 1}") == "p.json: chip_rules.prefetch: expected true or false, got 1");
  CHECK(Message("{\"stagin_capacity\": 5}").find("p.json: chip_rules: unknown key \"stagin_capacity\"") == 0);
  CHECK(Message("{}").empty());
}

// ---- The search with rules: valid starts, valid results, aligned sides.

TEST_CASE("chip rules: the baseline and a short search give valid, aligned schedules under a chip's rules") {
  const DerivedHardware ascend = Derive(LoadHardwareProfile("ascend910-core"));
  const DerivedHardware gemmini = Derive(LoadHardwareProfile("gemmini-default"));
  int searched = 0;
  for (const char* name : {"example_problem.json", "mlsys-2026-1.json", "mlsys-2026-5.json", "mlsys-2026-17.json"}) {
    for (const DerivedHardware* hw : {&ascend, &gemmini}) {
      Problem problem = testing::ReadBundledProblem(name);
      ApplyHardware(*hw, problem);
      INFO(name << " on native " << hw->native);
      const Schedule baseline = BuildBaseline(problem);
      REQUIRE(EvaluateOracle(problem, baseline).ok());
      REQUIRE(EvaluateOracle(problem, BuildResidentBaseline(problem)).ok());
      SearchParams params;
      params.seed = 3;
      params.threads = 2;
      params.deterministic = true;
      params.epoch_moves = 300;
      params.max_epochs = 2;
      std::atomic<bool> stop{false};
      const SearchSummary summary =
          RunSearch(problem, params, std::chrono::steady_clock::now() + std::chrono::hours(1), stop, {});
      const Evaluation evaluation = EvaluateOracle(problem, summary.best);
      REQUIRE(evaluation.ok());
      CHECK(evaluation.total <= EvaluateOracle(problem, baseline).total * (1 + 1e-9));
      CHECK(ComputeLowerBound(problem).total() <= evaluation.total * (1 + 1e-9));
      for (const Subgraph& sg : summary.best.subgraphs) {
        CHECK((sg.granularity.w % 16 == 0 || sg.granularity.w >= problem.tensors[problem.ops[sg.ops.back()].output].width));
        CHECK((sg.granularity.h % 16 == 0 || sg.granularity.h >= problem.tensors[problem.ops[sg.ops.back()].output].height));
      }
      ++searched;
    }
  }
  CHECK(searched == 8);
}

TEST_CASE("chip rules: random problems with random rules search to valid schedules above the bound") {
  int searched = 0, no_start = 0;
  std::mt19937_64 rng(2626);
  for (int trial = 0; trial < 24; ++trial) {
    Problem problem = RandomProblem(rng, kAllDagShapes[trial % std::size(kAllDagShapes)],
                                    {.min_ops = 3, .max_ops = 9, .native = trial % 2 ? 8 : 32});
    problem.chip = RandomChipRules(problem, rng);
    SearchParams params;
    params.seed = 40 + trial;
    params.threads = 2;
    params.deterministic = true;
    params.epoch_moves = 200;
    params.max_epochs = 2;
    std::atomic<bool> stop{false};
    SearchSummary summary;
    try {
      summary = RunSearch(problem, params, std::chrono::steady_clock::now() + std::chrono::hours(1), stop, {});
    } catch (const std::runtime_error&) {
      ++no_start;  // the rules leave this random problem no schedule the starts find
      continue;
    }
    INFO("trial " << trial << ": " << DescribeChipRules(problem.chip));
    const Evaluation evaluation = EvaluateOracle(problem, summary.best);
    REQUIRE(evaluation.ok());
    CHECK(ComputeLowerBound(problem).total() <= evaluation.total * (1 + 1e-9));
    ++searched;
  }
  MESSAGE("random rules: searched " << searched << ", no start " << no_start);
  CHECK(searched >= 16);
}

// ---- Hardware profiles with rules.

const char* const kChip = R"(name: test-chip
description: a test chip
dtype: bf16
fast_memory: 128 MiB
bandwidth: 819 GB/s
clock: 1.5 GHz
matrix_unit: 128
macs_per_cycle: 65536
vector_elements_per_cycle: 2048
sources: ["a paper"]
notes: nothing
)";

std::string ProfileError(const std::string& rules) {
  try {
    ParseHardwareProfile(std::string(kChip) + rules, "hw/x.yaml");
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST_CASE("chip rules: a hardware profile's keys become the problem's rules") {
  const HardwareProfile profile = ParseHardwareProfile(std::string(kChip) +
                                                           "staging_buffer: 1 MiB\n"
                                                           "accumulator_buffer: 256 KiB\n"
                                                           "vector_buffer: 192 KiB\n"
                                                           "double_buffer: [staging, vector]\n"
                                                           "tile_base: [16, 8, 16]\n"
                                                           "row_alignment: 64 B\n"
                                                           "accumulator_dtype: fp32\n"
                                                           "wide_writeback: true\n"
                                                           "prefetch: true\n",
                                                       "hw/x.yaml");
  const ChipRules chip = Derive(profile).chip;
  CHECK(chip.staging_capacity == 524288);
  CHECK(chip.accumulator_capacity == 131072);
  CHECK(chip.vector_capacity == 98304);
  CHECK(chip.double_staging);
  CHECK(!chip.double_accumulator);
  CHECK(chip.double_vector);
  CHECK(chip.base_w == 32);  // lcm(16, 64 B / 2 B)
  CHECK(chip.base_h == 8);
  CHECK(chip.base_k == 16);
  CHECK(chip.accumulator_factor == 2);
  CHECK(chip.wide_writeback);
  CHECK(chip.prefetch);
  // One number is every side; a profile without rules has none.
  CHECK(Derive(ParseHardwareProfile(std::string(kChip) + "tile_base: 16\n", "x")).chip.base_k == 16);
  CHECK(!Derive(ParseHardwareProfile(kChip, "x")).chip.any());
  // The built-in profiles with rules, and the problem they give.
  const DerivedHardware ascend = Derive(LoadHardwareProfile("ascend910-core"));
  CHECK(ascend.chip.staging_capacity == 524288);
  CHECK(ascend.chip.accumulator_capacity == 131072);
  CHECK(ascend.chip.vector_capacity == 131072);
  CHECK(ascend.chip.double_staging);
  CHECK(ascend.chip.base_w == 16);
  CHECK(ascend.chip.accumulator_factor == 2);
  CHECK(ascend.chip.prefetch);
  const DerivedHardware gemmini = Derive(LoadHardwareProfile("gemmini-default"));
  CHECK(gemmini.chip.accumulator_capacity == 65536);
  CHECK(gemmini.chip.accumulator_factor == 4);
  CHECK(gemmini.chip.double_accumulator);
  CHECK(!Derive(LoadHardwareProfile("tpu-v5e")).chip.any());
  Problem p = OneMatMul();
  ApplyHardware(ascend, p);
  CHECK(p.chip == ascend.chip);
  CHECK(ParseProblem(ProblemToJson(p), "p.json") == p);
}

TEST_CASE("chip rules: bad or contradictory rules in a profile are one line naming file, line and key") {
  CHECK(ProfileError("staging_buffer: 256 MiB\n") ==
        "hw/x.yaml:12: staging_buffer: 256 MiB is larger than fast_memory (128 MiB), which every step's whole "
        "working set must also fit (a buffer is a part of it)");
  CHECK(ProfileError("tile_base: [16, 0, 16]\n") == "hw/x.yaml:12: tile_base: expected a positive integer side, got \"0\"");
  CHECK(ProfileError("tile_base: 0\n") == "hw/x.yaml:12: tile_base: expected a positive integer side, got \"0\"");
  CHECK(ProfileError("tile_base: [16, 16]\n") == "hw/x.yaml:12: tile_base: expected one side or three [w, h, k], got 2");
  CHECK(ProfileError("tile_base: 256\n") ==
        "hw/x.yaml:12: tile_base: 256 is larger than matrix_unit 128 (no tile side could be a multiple of it)");
  CHECK(ProfileError("double_buffer: [staging, operands]\n") ==
        "hw/x.yaml:12: double_buffer: unknown role \"operands\" (expected staging, accumulator, vector)");
  CHECK(ProfileError("double_buffer: [staging, staging]\n") == "hw/x.yaml:12: double_buffer: role \"staging\" listed twice");
  CHECK(ProfileError("prefetch: true\n") ==
        "hw/x.yaml:12: prefetch: true needs double_buffer to name staging or vector (the next step's loads need a "
        "second buffer)");
  CHECK(ProfileError("prefetch: yes\n") == "hw/x.yaml:12: prefetch: expected true or false, got \"yes\"");
  CHECK(ProfileError("accumulator_dtype: int8\n") ==
        "hw/x.yaml:12: accumulator_dtype: int8 (1 bytes) is not a whole multiple of the 2-byte element");
  CHECK(ProfileError("row_alignment: 3 B\n") == "hw/x.yaml:12: row_alignment: 3 B is not a whole number of 2-byte elements");
  CHECK(ProfileError("stagin_buffer: 1 MiB\n").rfind("hw/x.yaml:12: unknown key \"stagin_buffer\" (known keys:", 0) == 0);
  CHECK(ProfileError("vector_buffer: 1 B\n") == "hw/x.yaml:12: vector_buffer: holds no element of 2 bytes");
  // A sweep's smaller fast_memory shrinks the buffers the file sized larger (gemmini-default at
  // 16 KiB: its 256 KiB staging and 64 KiB accumulator become 16 KiB); an overridden buffer
  // larger than the memory is still an error.
  const DerivedHardware small = Derive(LoadHardwareProfile("gemmini-default", {{"fast_memory", "16 KiB"}}));
  CHECK(small.capacity == 16384);
  CHECK(small.chip.staging_capacity == 16384);
  CHECK(small.chip.accumulator_capacity == 16384);
  CHECK(Derive(LoadHardwareProfile("gemmini-default", {{"fast_memory", "1 B"}})).chip.accumulator_capacity == 1);
  try {
    LoadHardwareProfile("gemmini-default", {{"fast_memory", "16 KiB"}, {"accumulator_buffer", "32 KiB"}});
    FAIL("no error");
  } catch (const InputError& error) {
    CHECK(std::string(error.what()) ==
          "hardware/gemmini-default.yaml with accumulator_buffer=32 KiB: accumulator_buffer: 32 KiB is larger than "
          "fast_memory (16 KiB), which every step's whole working set must also fit (a buffer is a part of it)");
  }
  // An override is named in place of the line.
  try {
    ParseHardwareProfile(std::string(kChip) + "vector_buffer: 1 MiB\n", "hw/x.yaml", {{"vector_buffer", "1 GiB"}});
    FAIL("no error");
  } catch (const InputError& error) {
    CHECK(std::string(error.what()).rfind("hw/x.yaml with vector_buffer=1 GiB: vector_buffer: 1 GiB is larger", 0) == 0);
  }
}

}  // namespace
}  // namespace annealer
