// The valid-schedule samples a bound's property test checks against the oracle: SampleSchedules
// (alone_test, weight_path_test: six random schedules from light to heavy fusion, recomputation
// and retention, the two layer-by-layer baselines where they exist, and, when asked, the exact
// solver's best within a small budget, the schedules that come closest to a tight bound), and
// RealRatioSchedules (the same kinds in the numbers and at the draws a driver gives, with a short
// search every so many problems).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <functional>
#include <random>
#include <stdexcept>
#include <vector>

#include "eval/model/problem.h"
#include "eval/random_schedule.h"
#include "eval/model/schedule.h"
#include "eval/oracle.h"
#include "search/driver.h"
#include "search/exact/exact.h"
#include "search/starts/baseline.h"

namespace annealer::testing {

// `base` with `group` run as one subgraph where the last of its ops (in topological order) ran,
// its ops taken out of the subgraphs they were in.
inline Schedule WithGroup(const Schedule& base, const Subgraph& group) {
  const OpId last = *std::max_element(group.ops.begin(), group.ops.end());
  Schedule schedule;
  for (const Subgraph& sg : base.subgraphs) {
    Subgraph rest = sg;
    std::erase_if(rest.ops, [&](OpId o) { return std::find(group.ops.begin(), group.ops.end(), o) != group.ops.end(); });
    const bool has_last = std::find(sg.ops.begin(), sg.ops.end(), last) != sg.ops.end();
    if (!rest.ops.empty()) schedule.subgraphs.push_back(rest);
    if (has_last) schedule.subgraphs.push_back(group);
  }
  return schedule;
}

// The layer-by-layer schedule, or nothing where an op fits no tile (the property drivers skip such
// draws).
inline std::optional<Schedule> BaselineIfAny(const Problem& problem) {
  try {
    return BuildBaseline(problem);
  } catch (const std::runtime_error&) {
    return std::nullopt;
  }
}

// Both layer-by-layer baselines, where they exist (an op alone may not fit).
inline void AppendBaselines(const Problem& problem, std::vector<Schedule>& schedules) {
  try {
    schedules.push_back(BuildBaseline(problem));
    schedules.push_back(BuildResidentBaseline(problem));
  } catch (const std::runtime_error&) {
    // No baseline for this problem: the other schedules stand.
  }
}

// The exact solver's best within 3,000 states and subgraphs of at most 8 ops, when it has one.
inline void AppendExactBest(const Problem& problem, std::vector<Schedule>& schedules) {
  ExactOptions exact;
  exact.max_states = 3000;
  exact.max_subgraph_ops = 8;
  const ExactResult result = SolveExact(problem, exact);
  if (result.best) schedules.push_back(*result.best);
}

inline std::vector<Schedule> SampleSchedules(const Problem& problem, std::mt19937_64& rng, bool with_exact) {
  std::vector<Schedule> schedules;
  for (int s = 0; s < 6; ++s) {
    RandomScheduleOptions options;
    options.fuse_probability = 0.2 + 0.15 * s;
    options.recompute_probability = s % 2 == 0 ? 0.2 : 0.5;
    options.extra_retain_probability = 0.3 + 0.2 * (s % 2);
    options.invalid_probability = 0;
    options.max_steps = 400;
    schedules.push_back(RandomSchedule(problem, rng, options));
  }
  AppendBaselines(problem, schedules);
  if (with_exact) AppendExactBest(problem, schedules);
  return schedules;
}

// A short deterministic search (2 threads, 300 moves an epoch): schedules a random sample does not
// reach, for the property tests that want them every so many problems.
inline SearchSummary ShortSearch(const Problem& problem, uint64_t seed, int epochs = 2) {
  SearchParams params;
  params.seed = seed;
  params.threads = 2;
  params.deterministic = true;
  params.epoch_moves = 300;
  params.max_epochs = epochs;
  std::atomic<bool> stop{false};
  return RunSearch(problem, params, std::chrono::steady_clock::now() + std::chrono::hours(1), stop, {});
}

// Random valid schedules of at most 400 steps with these probabilities.
inline RandomScheduleOptions ValidRandomOptions(double fuse, double recompute, double extra_retain) {
  RandomScheduleOptions options;
  options.fuse_probability = fuse;
  options.recompute_probability = recompute;
  options.extra_retain_probability = extra_retain;
  options.invalid_probability = 0;
  options.max_steps = 400;
  return options;
}

// The schedules a real-ratio property test checks a part against: `randoms` random valid
// schedules (the s-th drawn with `options(s)`), both baselines where they exist, a short search
// every `search_every` trials and the exact solver's best (no recomputation) every
// `exact_every` (0: never, for either). Only the random schedules draw from `rng`.
inline std::vector<Schedule> RealRatioSchedules(const Problem& problem, std::mt19937_64& rng, int trial, int randoms,
                                                const std::function<RandomScheduleOptions(int)>& options,
                                                int search_every, int exact_every) {
  std::vector<Schedule> schedules;
  for (int s = 0; s < randoms; ++s) schedules.push_back(RandomSchedule(problem, rng, options(s)));
  AppendBaselines(problem, schedules);
  if (search_every > 0 && trial % search_every == 0) schedules.push_back(ShortSearch(problem, 1 + trial, 2).best);
  if (exact_every > 0 && trial % exact_every == 0) AppendExactBest(problem, schedules);
  return schedules;
}

// The exact solver's best with its default budget (which finishes on the bound parts' hand
// cases), checked by the oracle: what a hand case's bound is set against.
inline Latency ExactOptimum(const Problem& problem) {
  const ExactResult best = SolveExact(problem, ExactOptions{});
  REQUIRE(best.best);
  const Evaluation e = EvaluateOracle(problem, *best.best);
  REQUIRE(e.ok());
  return e.total;
}

}  // namespace annealer::testing
