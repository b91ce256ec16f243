// The fast subgraph cost (eval/subgraph_cost) and the cost cache against the oracle: same
// verdict, same rule, same report, on random problems and schedules of every DAG shape, on the
// spec cases' problems and on the bundled problems.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <thread>

#include "eval/cost/context_reuse.h"
#include "eval/cost/cost_cache.h"
#include "eval/oracle.h"
#include "eval/random_schedule.h"
#include "eval/cost/evaluate_fast.h"
#include "eval/cost/subgraph_cost.h"
#include "eval/model/subgraph_structure.h"
#include "search/starts/baseline.h"
#include "src/io/contest/problem_reader.h"
#include "tests/eval/cost/subgraph_oracle_check.h"

namespace annealer {
namespace {

using testing::Close;
using testing::ExpectSameAsOracle;

struct Tally {
  int valid = 0, invalid = 0, classes = 0, stepwise = 0;
};

void CheckSchedule(const Problem& problem, const Schedule& schedule, const std::string& what,
                   Tally& tally) {
  std::vector<TensorId> retained_in;
  for (size_t i = 0; i < schedule.subgraphs.size(); ++i) {
    const Subgraph& s = schedule.subgraphs[i];
    const std::string where = what + ", subgraph " + std::to_string(i);
    const bool ok = ExpectSameAsOracle(problem, s, retained_in, CostSubgraph(problem, s, retained_in), where);
    ExpectSameAsOracle(problem, s, retained_in, CostSubgraphStepByStep(problem, s, retained_in),
                       where + " (step by step)");
    (ok ? tally.valid : tally.invalid) += 1;
    if (ok) (CostSubgraphUsesStepClasses(problem, s, retained_in) ? tally.classes : tally.stepwise) += 1;
    retained_in = s.retain;
  }
}

TEST_CASE("fast subgraph cost equals the oracle on random DAGs and schedules") {
  Tally tally;
  for (DagShape shape : kAllDagShapes) {
    std::mt19937_64 rng(1000 + static_cast<int>(shape));
    for (int trial = 0; trial < 200; ++trial) {
      RandomProblemOptions problem_options;
      problem_options.max_ops = 3 + trial % 8;
      const Problem problem = RandomProblem(rng, shape, problem_options);
      for (int s = 0; s < 3; ++s) {
        RandomScheduleOptions options;
        options.fuse_probability = 0.3 + 0.3 * s;
        options.invalid_probability = 0.15;
        options.max_steps = 600;
        const Schedule schedule = RandomSchedule(problem, rng, options);
        CheckSchedule(problem, schedule,
                      "shape " + std::to_string(static_cast<int>(shape)) + " trial " +
                          std::to_string(trial) + " schedule " + std::to_string(s),
                      tally);
      }
    }
  }
  MESSAGE("valid " << tally.valid << " (step classes " << tally.classes << ", step by step "
                   << tally.stepwise << "), invalid " << tally.invalid);
  // The mix must exercise both verdicts and both pricing paths.
  CHECK(tally.valid > 5000);
  CHECK(tally.invalid > 1000);
  CHECK(tally.classes > 3000);
  CHECK(tally.stepwise > 50);
}

TEST_CASE("pricing's shortcuts give the general loops' results to the bit") {
  // PricingShortcutsOff (eval/cost/subgraph_cost.h) prices by the general loops: every report,
  // verdict and rule must be the same to the bit with the shortcuts (the search's walk depends
  // on them), at each subgraph's granularity and at three others of the same context priced
  // in one ContextReuse scope (the templates are kept, the granularity's tables are not).
  int compared = 0, classes = 0, stepwise = 0;
  for (DagShape shape : kAllDagShapes) {
    std::mt19937_64 rng(5000 + static_cast<int>(shape));
    for (int trial = 0; trial < 120; ++trial) {
      RandomProblemOptions problem_options;
      problem_options.max_ops = 3 + trial % 8;
      const Problem problem = RandomProblem(rng, shape, problem_options);
      RandomScheduleOptions options;
      options.fuse_probability = 0.3 + 0.2 * (trial % 3);
      options.invalid_probability = 0.1;
      options.max_steps = 600;
      const Schedule schedule = RandomSchedule(problem, rng, options);
      std::vector<TensorId> retained_in;
      for (const Subgraph& s : schedule.subgraphs) {
        std::vector<Subgraph> variants(4, s);
        variants[1].granularity.w = std::max<Elements>(1, s.granularity.w / 2);
        variants[2].granularity.h = std::max<Elements>(1, s.granularity.h / 2);
        variants[3].granularity.k = std::max<Elements>(1, s.granularity.k / 2);
        for (Subgraph& v : variants) {
          // A traversal is of the original grid; the halved sides are priced in raster.
          if (v.granularity != s.granularity) v.traversal.reset();
        }
        std::vector<SubgraphResult> fast, general;
        {
          const ContextReuse reuse;
          for (const Subgraph& v : variants) fast.push_back(CostSubgraph(problem, v, retained_in));
        }
        {
          const ContextReuse reuse;
          const PricingShortcutsOff off;
          CHECK_FALSE(PricingShortcutsOff::Allowed());
          for (const Subgraph& v : variants) general.push_back(CostSubgraph(problem, v, retained_in));
        }
        CHECK(PricingShortcutsOff::Allowed());
        for (size_t x = 0; x < variants.size(); ++x) {
          CHECK(fast[x].verdict == general[x].verdict);
          CHECK(fast[x].violation.rule == general[x].violation.rule);
          CHECK(fast[x].report == general[x].report);
          ++compared;
          if (fast[x].ok()) {
            (CostSubgraphUsesStepClasses(problem, variants[x], retained_in) ? classes : stepwise) += 1;
          }
        }
        retained_in = s.retain;
      }
    }
  }
  MESSAGE("compared " << compared << " (valid by step classes " << classes << ", step by step " << stepwise << ")");
  CHECK(classes > 3000);
  CHECK(stepwise > 30);
}

TEST_CASE("without a violation's words, pricing and the structural checks give the same verdict, rule and report") {
  // ViolationWordsOff (eval/model/subgraph_structure.h) only leaves the words out: CostSubgraph and
  // StructuralFailure inside a scope against outside one, on random contexts with invalid
  // granularities and traversals among them; after the scope the words are back.
  int compared = 0, without_words = 0, invalid = 0;
  for (DagShape shape : kAllDagShapes) {
    std::mt19937_64 rng(3000 + static_cast<int>(shape));
    for (int trial = 0; trial < 60; ++trial) {
      RandomProblemOptions problem_options;
      problem_options.max_ops = 3 + trial % 8;
      const Problem problem = RandomProblem(rng, shape, problem_options);
      RandomScheduleOptions options;
      options.fuse_probability = 0.5;
      options.invalid_probability = 0.4;
      options.max_steps = 600;
      const Schedule schedule = RandomSchedule(problem, rng, options);
      std::vector<TensorId> retained_in;
      for (const Subgraph& s : schedule.subgraphs) {
        const SubgraphResult with = CostSubgraph(problem, s, retained_in);
        const std::optional<SubgraphResult> structural = StructuralFailure(problem, s, retained_in);
        SubgraphResult without;
        std::optional<SubgraphResult> structural_without;
        {
          const ViolationWordsOff off;
          CHECK_FALSE(ViolationWordsOff::Wanted());
          without = CostSubgraph(problem, s, retained_in);
          structural_without = StructuralFailure(problem, s, retained_in);
        }
        CHECK(ViolationWordsOff::Wanted());
        CHECK(without.verdict == with.verdict);
        CHECK(without.report == with.report);
        CHECK(without.violation.rule == with.violation.rule);
        CHECK((without.violation.detail.empty() || without.violation.detail == with.violation.detail));
        REQUIRE(structural_without.has_value() == structural.has_value());
        if (structural) {
          CHECK(structural_without->violation.rule == structural->violation.rule);
          CHECK((structural_without->violation.detail.empty() ||
                 structural_without->violation.detail == structural->violation.detail));
        }
        const SubgraphResult again = CostSubgraph(problem, s, retained_in);
        CHECK(again.violation.detail == with.violation.detail);
        ++compared;
        invalid += !with.ok();
        without_words += !with.ok() && without.violation.detail.empty();
        retained_in = s.retain;
      }
    }
  }
  MESSAGE(compared << " contexts, " << invalid << " invalid, " << without_words << " of them without words");
  CHECK(compared > 1000);
  CHECK(without_words > 200);
}

TEST_CASE("EvaluateFast equals EvaluateOracle on whole random schedules, with and without cache") {
  int valid = 0, invalid = 0;
  for (DagShape shape : kAllDagShapes) {
    std::mt19937_64 rng(300 + static_cast<int>(shape));
    for (int trial = 0; trial < 60; ++trial) {
      const Problem problem = RandomProblem(rng, shape, {.min_ops = 3, .max_ops = 10});
      CostCache cache(1 << 10);
      RandomScheduleOptions options;
      options.max_steps = 400;
      options.invalid_probability = trial % 3 == 0 ? 0.0 : 0.05;
      Schedule schedule = RandomSchedule(problem, rng, options);
      if (trial % 4 == 0) {  // V13 warnings are compared too
        schedule.reported_latencies = std::vector<double>(schedule.subgraphs.size(), 100.0);
      }
      const Evaluation oracle = EvaluateOracle(problem, schedule);
      for (CostCache* c : {static_cast<CostCache*>(nullptr), &cache, &cache}) {
        const Evaluation fast = EvaluateFast(problem, schedule, c);
        INFO("shape " << static_cast<int>(shape) << " trial " << trial << ": oracle "
                      << oracle.violation.Message() << ", fast " << fast.violation.Message());
        REQUIRE(fast.verdict == oracle.verdict);
        CHECK(fast.violation.rule == oracle.violation.rule);
        CHECK(fast.violation.subgraph == oracle.violation.subgraph);
        CHECK(fast.violation.detail == oracle.violation.detail);
        CHECK(Close(fast.total, oracle.total));
        REQUIRE(fast.subgraphs.size() == oracle.subgraphs.size());
        for (size_t i = 0; i < fast.subgraphs.size(); ++i) {
          CHECK(Close(fast.subgraphs[i].latency, oracle.subgraphs[i].latency));
          CHECK(fast.subgraphs[i].peak_working_set == oracle.subgraphs[i].peak_working_set);
        }
        CHECK(fast.warnings.size() == oracle.warnings.size());
      }
      (oracle.ok() ? valid : invalid) += 1;
    }
  }
  MESSAGE("whole schedules: valid " << valid << ", invalid " << invalid);
  CHECK(valid > 60);
  CHECK(invalid > 60);
}

// One cache across many schedules of one problem: the front table's entries (with their
// sequence facts) come from other schedules, where other tensors were in slow memory or
// retained, so the facts' V7 shortcut meets both passing and failing inputs.
TEST_CASE("EvaluateFast with a cache warmed by other schedules equals EvaluateOracle") {
  int valid = 0, v7 = 0;
  for (DagShape shape : kAllDagShapes) {
    std::mt19937_64 rng(900 + static_cast<int>(shape));
    const Problem problem = RandomProblem(rng, shape, {.min_ops = 3, .max_ops = 9});
    CostCache cache(1 << 12);
    RandomScheduleOptions options;
    options.max_steps = 300;
    for (int trial = 0; trial < 150; ++trial) {
      options.invalid_probability = trial % 2 == 0 ? 0.0 : 0.1;
      Schedule schedule = RandomSchedule(problem, rng, options);
      if (trial % 3 == 1 && schedule.subgraphs.size() > 1) {
        // Moving a subgraph earlier or dropping a retention breaks V7 in places.
        const size_t i = rng() % schedule.subgraphs.size();
        if (rng() % 2 == 0 && i > 0) {
          std::swap(schedule.subgraphs[i], schedule.subgraphs[i - 1]);
        } else {
          schedule.subgraphs[i].retain.clear();
        }
      }
      const Evaluation oracle = EvaluateOracle(problem, schedule);
      for (int pass = 0; pass < 2; ++pass) {
        const Evaluation fast = EvaluateFast(problem, schedule, &cache);
        INFO("shape " << static_cast<int>(shape) << " trial " << trial << " pass " << pass
                      << ": oracle " << oracle.violation.Message() << ", fast "
                      << fast.violation.Message());
        REQUIRE(fast.verdict == oracle.verdict);
        CHECK(fast.violation.rule == oracle.violation.rule);
        CHECK(fast.violation.subgraph == oracle.violation.subgraph);
        CHECK(fast.violation.detail == oracle.violation.detail);
        CHECK(Close(fast.total, oracle.total));
      }
      valid += oracle.ok();
      v7 += oracle.violation.rule == "V7";
    }
  }
  MESSAGE("schedules over one cache: valid " << valid << ", V7 " << v7);
  CHECK(valid > 200);
  CHECK(v7 > 50);
}

bool HasLayoutOp(const Problem& problem, const Subgraph& subgraph) {
  for (OpId op : subgraph.ops) {
    if (op >= 0 && op < static_cast<OpId>(problem.ops.size()) && problem.IsLayout(op)) return true;
  }
  return false;
}

// Layout ops (spec L1-L6): random problems where about a third of the chain ops are Layout ops
// (transposes, slices, any shape), subgraph by subgraph and whole schedules with and without
// a cache.
TEST_CASE("fast subgraph cost, EvaluateFast and the cache equal the oracle with Layout ops") {
  Tally tally;
  int layout_valid = 0, layout_invalid = 0, whole_valid = 0, whole_invalid = 0;
  std::map<std::string, int> rules;
  for (DagShape shape : kAllDagShapes) {
    std::mt19937_64 rng(5000 + static_cast<int>(shape));
    for (int trial = 0; trial < 150; ++trial) {
      RandomProblemOptions problem_options;
      problem_options.max_ops = 3 + trial % 8;
      problem_options.layout_probability = 0.35;
      const Problem problem = RandomProblem(rng, shape, problem_options);
      CostCache cache(1 << 10);
      for (int s = 0; s < 3; ++s) {
        RandomScheduleOptions options;
        options.fuse_probability = 0.3 + 0.3 * s;
        options.invalid_probability = 0.1;
        options.max_steps = 600;
        const Schedule schedule = RandomSchedule(problem, rng, options);
        const std::string what = "shape " + std::to_string(static_cast<int>(shape)) + " trial " +
                                 std::to_string(trial) + " schedule " + std::to_string(s);
        CheckSchedule(problem, schedule, what, tally);
        std::vector<TensorId> retained_in;
        for (const Subgraph& sg : schedule.subgraphs) {
          if (HasLayoutOp(problem, sg)) {
            (EvaluateSubgraphOracle(problem, sg, retained_in).ok() ? layout_valid : layout_invalid) += 1;
          }
          retained_in = sg.retain;
        }
        const Evaluation oracle = EvaluateOracle(problem, schedule);
        for (CostCache* c : {static_cast<CostCache*>(nullptr), &cache, &cache}) {
          const Evaluation fast = EvaluateFast(problem, schedule, c);
          INFO(what << ": oracle " << oracle.violation.Message() << ", fast " << fast.violation.Message());
          REQUIRE(fast.verdict == oracle.verdict);
          CHECK(fast.violation.Message() == oracle.violation.Message());
          CHECK(Close(fast.total, oracle.total));
          REQUIRE(fast.subgraphs.size() == oracle.subgraphs.size());
          for (size_t i = 0; i < fast.subgraphs.size(); ++i) {
            CHECK(Close(fast.subgraphs[i].latency, oracle.subgraphs[i].latency));
            CHECK(fast.subgraphs[i].peak_working_set == oracle.subgraphs[i].peak_working_set);
          }
        }
        (oracle.ok() ? whole_valid : whole_invalid) += 1;
        if (!oracle.ok()) ++rules[oracle.violation.rule];
      }
    }
  }
  std::string by_rule;
  for (const auto& [rule, count] : rules) by_rule += " " + rule + ":" + std::to_string(count);
  MESSAGE("with Layout ops: subgraphs valid " << tally.valid << " (step classes " << tally.classes
          << ", step by step " << tally.stepwise << "), invalid " << tally.invalid
          << "; holding a Layout op: valid " << layout_valid << ", invalid " << layout_invalid
          << "; whole schedules valid " << whole_valid << ", invalid " << whole_invalid << " by rule" << by_rule);
  CHECK(tally.valid > 3000);
  CHECK(layout_valid > 1000);
  CHECK(layout_invalid > 50);
  CHECK(whole_valid > 500);
  CHECK(rules["L1"] > 20);
}

TEST_CASE("fast subgraph cost equals the oracle on the bundled problems") {
  // The baseline (one op per subgraph) and random fused schedules at native granularities.
  Tally tally;
  std::mt19937_64 rng(77);
  for (const char* name : {"example_problem", "mlsys-2026-1", "mlsys-2026-5", "mlsys-2026-9",
                           "mlsys-2026-13", "mlsys-2026-17"}) {
    const Problem problem =
        ReadProblemFile(std::string(ANNEALER_SOURCE_DIR) + "/problems/" + name + ".json");
    if (std::string(name) == "mlsys-2026-1" || std::string(name) == "mlsys-2026-5" ||
        std::string(name) == "example_problem") {
      CheckSchedule(problem, BuildBaseline(problem), std::string(name) + " baseline", tally);
    }
    for (int s = 0; s < 2; ++s) {
      RandomScheduleOptions options;
      options.fuse_probability = 0.7;
      options.invalid_probability = 0.05;
      options.max_steps = 300;
      CheckSchedule(problem, RandomSchedule(problem, rng, options),
                    std::string(name) + " random " + std::to_string(s), tally);
    }
  }
  CHECK(tally.valid > 20);
}

TEST_CASE("cost cache returns the oracle's results, counts hits and stays bounded") {
  std::mt19937_64 rng(5);
  const Problem problem = RandomProblem(rng, DagShape::kMixed, {.min_ops = 6, .max_ops = 10});
  RandomScheduleOptions options;
  options.max_steps = 400;
  const Schedule schedule = RandomSchedule(problem, rng, options);
  CostCache cache(1 << 12);
  for (int round = 0; round < 3; ++round) {
    std::vector<TensorId> retained_in;
    for (const Subgraph& s : schedule.subgraphs) {
      ExpectSameAsOracle(problem, s, retained_in, cache.LookupOrCompute(problem, s, retained_in), "cache");
      retained_in = s.retain;
    }
  }
  const CacheStats stats = cache.stats();
  const uint64_t n = schedule.subgraphs.size();
  CHECK(stats.hits + stats.misses == 3 * n);
  CHECK(stats.hits >= 2 * n);  // identical contexts may repeat within the first round too
  // A valid context is kept under its shape only; the exact table keeps the failing ones, whose
  // words name ids. Each shape priced is stored once.
  uint64_t failing = 0;
  {
    std::vector<TensorId> in;
    for (const Subgraph& s : schedule.subgraphs) {
      failing += !CostSubgraph(problem, s, in).ok();
      in = s.retain;
    }
  }
  CHECK(stats.entries <= failing);
  CHECK(stats.shape_entries >= 1);
  CHECK(stats.shape_entries <= stats.misses);
  CHECK(stats.hit_rate() >= 2.0 / 3.0);

  // The retained sets are sets: listing order does not make a new entry.
  Subgraph s = schedule.subgraphs[0];
  s.retain = {problem.ops[s.ops[0]].output, problem.ops[s.ops.back()].output};
  Subgraph reversed = s;
  std::reverse(reversed.retain.begin(), reversed.retain.end());
  const SubgraphResult a = cache.LookupOrCompute(problem, s, {});
  const uint64_t hits_before = cache.stats().hits;
  const SubgraphResult b = cache.LookupOrCompute(problem, reversed, {});
  CHECK(cache.stats().hits == hits_before + 1);
  CHECK(a.report == b.report);

  // A tiny budget flushes instead of growing.
  CostCache small(16);
  for (int i = 0; i < 200; ++i) {
    Subgraph t = schedule.subgraphs[i % schedule.subgraphs.size()];
    RandomizeSettings(problem, t, rng, options);
    small.LookupOrCompute(problem, t, {});
  }
  CHECK(small.stats().entries + small.stats().shape_entries <= 16);
}

TEST_CASE("cost cache is consistent under concurrent use") {
  std::mt19937_64 rng(9);
  const Problem problem = RandomProblem(rng, DagShape::kChain, {.min_ops = 5, .max_ops = 8});
  RandomScheduleOptions options;
  options.max_steps = 300;
  std::vector<Schedule> schedules;
  for (int i = 0; i < 8; ++i) schedules.push_back(RandomSchedule(problem, rng, options));
  CostCache cache(64);  // small: flushes happen while other threads read
  std::vector<std::thread> threads;
  std::vector<int> mismatches(2, 0);
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      for (int round = 0; round < 40; ++round) {
        for (const Schedule& schedule : schedules) {
          std::vector<TensorId> retained_in;
          for (const Subgraph& s : schedule.subgraphs) {
            const SubgraphResult cached = cache.LookupOrCompute(problem, s, retained_in);
            const SubgraphResult direct = CostSubgraph(problem, s, retained_in);
            if (cached.verdict != direct.verdict || !(cached.report == direct.report)) ++mismatches[w];
            retained_in = s.retain;
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(mismatches[0] == 0);
  CHECK(mismatches[1] == 0);
  CHECK(cache.stats().hits > 0);
}

}  // namespace
}  // namespace annealer
