// IncrementalEvaluator against EvaluateOracle over long random runs of edits, commits and
// reverts, with and without a shared cache: same verdict, same first failing rule and
// subgraph, same total (1e-9 relative), after every proposal and every commit.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>

#include "eval/cost/cost_cache.h"
#include "eval/cost/incremental.h"
#include "eval/oracle.h"
#include "eval/random_schedule.h"

namespace annealer {
namespace {

bool Close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }


void ExpectSame(const Candidate& candidate, const Evaluation& oracle, const std::string& what) {
  INFO(what);
  INFO("oracle: " << (oracle.ok() ? "valid " + std::to_string(oracle.total) : oracle.violation.Message()));
  INFO("incremental: " << (candidate.valid ? "valid " + std::to_string(candidate.total)
                                           : candidate.violation.Message()));
  REQUIRE(candidate.valid == oracle.ok());
  if (oracle.ok()) {
    CHECK(Close(candidate.total, oracle.total));
  } else {
    CHECK(candidate.violation.rule == oracle.violation.rule);
    CHECK(candidate.violation.subgraph == oracle.violation.subgraph);
    CHECK(candidate.violation.detail == oracle.violation.detail);
  }
}

// The committed-schedule queries of IncrementalEvaluator (WrittenBefore, ReadAfter,
// RetainedBefore, the committed subgraphs' facts) against a plain reading of the schedule, at every position and tensor.
void ExpectSameQueries(const Problem& problem, const Schedule& schedule, const IncrementalEvaluator& evaluator,
                       const std::string& what) {
  const int n = static_cast<int>(schedule.subgraphs.size());
  const int num_ops = static_cast<int>(problem.ops.size());
  auto in_range = [&](OpId op) { return op >= 0 && op < num_ops; };
  auto contains = [](const auto& list, auto x) { return std::find(list.begin(), list.end(), x) != list.end(); };
  auto writes = [&](const Subgraph& sg, TensorId t) {
    for (OpId op : sg.ops) {
      if (!in_range(op) || problem.ops[op].output != t) continue;
      bool consumed_inside = false;
      for (OpId c : sg.ops) consumed_inside |= in_range(c) && contains(problem.ops[c].inputs, t);
      if (!consumed_inside && !contains(sg.retain, t)) return true;
    }
    return false;
  };
  auto reads = [&](const Subgraph& sg, TensorId t) {
    for (OpId op : sg.ops) {
      if (!in_range(op) || !contains(problem.ops[op].inputs, t)) continue;
      const OpId p = problem.producer[t];
      if (p == kNoOp || !contains(sg.ops, p)) return true;
    }
    return false;
  };
  for (TensorId t = 0; t < static_cast<TensorId>(problem.tensors.size()); ++t) {
    for (int p = 0; p <= n; ++p) {
      bool written = false, retained = false, read = false;
      for (int i = 0; i < n; ++i) {
        if (i < p) written |= writes(schedule.subgraphs[i], t);
        if (i < p) retained |= contains(schedule.subgraphs[i].retain, t);
        if (i > p) read |= reads(schedule.subgraphs[i], t);
      }
      INFO(what << ": tensor " << t << " position " << p);
      CHECK(evaluator.WrittenBefore(t, p) == written);
      CHECK(evaluator.RetainedBefore(t, p) == retained);
      CHECK(evaluator.ReadAfter(t, p) == read);
      for (int q = p; q <= n; ++q) {
        bool between = false, written_between = false;
        for (int i = p; i < q; ++i) between |= reads(schedule.subgraphs[i], t);
        for (int i = p; i < q; ++i) written_between |= writes(schedule.subgraphs[i], t);
        CHECK(evaluator.ReadBetween(t, p, q) == between);
        CHECK(evaluator.WrittenBetween(t, p, q) == written_between);
      }
    }
  }
  for (int p = 0; p <= n; ++p) {
    int next = p;
    while (next < n && schedule.subgraphs[next].retain.empty()) ++next;
    INFO(what << ": next retaining from " << p);
    CHECK(evaluator.NextRetaining(p) == next);
  }
  // Per subgraph, its ops' facts (ids in range): the tensors read and produced by none of its
  // ops (sorted, distinct), its sinks in op order, and the sinks it does not retain.
  for (int i = 0; i < n; ++i) {
    const Subgraph& sg = schedule.subgraphs[i];
    std::vector<TensorId> inputs, sinks, written;
    for (OpId op : sg.ops) {
      if (!in_range(op)) continue;
      for (TensorId t : problem.ops[op].inputs) {
        if (reads(sg, t)) inputs.push_back(t);
      }
      const TensorId out = problem.ops[op].output;
      bool consumed_inside = false;
      for (OpId c : sg.ops) consumed_inside |= in_range(c) && contains(problem.ops[c].inputs, out);
      if (consumed_inside) continue;
      sinks.push_back(out);
      if (!contains(sg.retain, out)) written.push_back(out);
    }
    std::sort(inputs.begin(), inputs.end());
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
    INFO(what << ": subgraph " << i);
    CHECK(std::ranges::equal(evaluator.CommittedInputs(i), inputs));
    CHECK(std::ranges::equal(evaluator.CommittedSinks(i), sinks));
    CHECK(std::ranges::equal(evaluator.CommittedWrites(i), written));
  }
  // Op coverage: per op, the subgraphs listing it (ids in range); the recomputed ops and their
  // places.
  std::vector<int> count(num_ops, 0);
  for (const Subgraph& sg : schedule.subgraphs) {
    for (OpId op : sg.ops) {
      if (in_range(op)) ++count[op];
    }
  }
  int recomputed = 0, places = 0;
  for (OpId op = 0; op < num_ops; ++op) {
    INFO(what << ": op " << op);
    CHECK(evaluator.CoverCount(op) == count[op]);
    recomputed += count[op] >= 2;
    places += count[op] >= 2 ? count[op] : 0;
  }
  CHECK(evaluator.RecomputedOps() == recomputed);
  CHECK(evaluator.RecomputedPlaces() == places);
}

// A valid committed total is the committed subgraphs' latencies summed in sequence order from
// 0, to the bit (no drift over commits).
void ExpectExactSum(const IncrementalEvaluator& evaluator, const std::string& what) {
  if (!evaluator.committed().valid) return;
  Latency sum = 0;
  const auto& results = evaluator.subgraph_results();
  for (size_t i = 0; i < results.size(); ++i) sum += results[i].report.latency;
  INFO(what);
  CHECK(evaluator.committed().total == sum);
}

struct RunTally {
  int proposals = 0, valid = 0, commits = 0;
  std::map<std::string, int> rules;  // first failing rule of the invalid proposals
};

void RandomRun(const Problem& problem, std::mt19937_64& rng, CostCache* cache, int moves,
               const std::string& what, RunTally& tally) {
  RandomScheduleOptions options;
  options.max_steps = 300;
  options.invalid_probability = 0.05;
  IncrementalEvaluator evaluator(problem, cache);
  RandomScheduleOptions start_options = options;
  start_options.invalid_probability = 0;
  start_options.extra_retain_probability = 0;
  Schedule committed = RandomSchedule(problem, rng, start_options);
  ExpectSame(evaluator.Reset(committed), EvaluateOracle(problem, committed), what + " reset");
  for (int move = 0; move < moves; ++move) {
    if (committed.subgraphs.empty()) break;
    const ScheduleEdit edit = RandomEdit(problem, committed, rng, options);
    const Schedule proposed = ApplyEdit(committed, edit);
    const Evaluation oracle = EvaluateOracle(problem, proposed);
    const std::string where = what + " move " + std::to_string(move);
    ExpectSame(evaluator.Propose(edit), oracle, where);
    ++tally.proposals;
    tally.valid += oracle.ok();
    if (!oracle.ok()) ++tally.rules[oracle.violation.rule];
    // Commit valid proposals often and invalid ones sometimes: runs must also walk through
    // invalid states and come back.
    const bool commit = std::uniform_real_distribution<double>(0, 1)(rng) < (oracle.ok() ? 0.7 : 0.1);
    if (commit) {
      evaluator.Commit();
      committed = proposed;
      ++tally.commits;
      ExpectSame(evaluator.committed(), oracle, where + " committed");
      ExpectExactSum(evaluator, where + " committed");
      CHECK(evaluator.schedule() == committed);
      REQUIRE(evaluator.subgraph_results().size() == committed.subgraphs.size());
      if (tally.commits % 8 == 0) ExpectSameQueries(problem, committed, evaluator, where);
    } else {
      evaluator.Revert();
      CHECK(evaluator.schedule() == committed);
    }
  }
  // The per-subgraph results stay those of the committed schedule, in context.
  std::vector<TensorId> retained_in;
  for (size_t i = 0; i < committed.subgraphs.size(); ++i) {
    const SubgraphResult expected = EvaluateSubgraphOracle(problem, committed.subgraphs[i], retained_in);
    CHECK(evaluator.subgraph_results()[i].verdict == expected.verdict);
    CHECK(Close(evaluator.subgraph_results()[i].report.latency, expected.report.latency));
    retained_in = committed.subgraphs[i].retain;
  }
}

TEST_CASE("incremental evaluation equals the oracle over random edit, commit and revert runs") {
  RunTally tally;
  CostCache cache(1 << 14);
  uint64_t hits = 0;
  for (DagShape shape : kAllDagShapes) {
    std::mt19937_64 rng(4242 + static_cast<int>(shape));
    for (int trial = 0; trial < 40; ++trial) {
      RandomProblemOptions problem_options;
      problem_options.min_ops = 3;
      problem_options.max_ops = 10;
      const Problem problem = RandomProblem(rng, shape, problem_options);
      cache.Clear();  // a cache serves one problem (problems of this loop share an address)
      RandomRun(problem, rng, trial % 2 ? &cache : nullptr, 150,
                "shape " + std::to_string(static_cast<int>(shape)) + " trial " + std::to_string(trial),
                tally);
      hits += cache.stats().hits;
    }
  }
  std::string rules;
  for (const auto& [rule, count] : tally.rules) rules += " " + rule + ":" + std::to_string(count);
  MESSAGE("proposals " << tally.proposals << ", valid " << tally.valid << ", commits "
                       << tally.commits << ", invalid by rule" << rules);
  CHECK(tally.valid > 3000);
  CHECK(tally.proposals - tally.valid > 3000);
  CHECK(hits > 0);
}

TEST_CASE("incremental evaluation equals the oracle with Layout ops (L1: retained is not enough)") {
  RunTally tally;
  CostCache cache(1 << 14);
  for (DagShape shape : kAllDagShapes) {
    std::mt19937_64 rng(6262 + static_cast<int>(shape));
    for (int trial = 0; trial < 30; ++trial) {
      RandomProblemOptions problem_options;
      problem_options.min_ops = 3;
      problem_options.max_ops = 10;
      problem_options.layout_probability = 0.35;
      const Problem problem = RandomProblem(rng, shape, problem_options);
      cache.Clear();
      RandomRun(problem, rng, trial % 2 ? &cache : nullptr, 150,
                "layout shape " + std::to_string(static_cast<int>(shape)) + " trial " + std::to_string(trial),
                tally);
    }
  }
  std::string rules;
  for (const auto& [rule, count] : tally.rules) rules += " " + rule + ":" + std::to_string(count);
  MESSAGE("with Layout ops: proposals " << tally.proposals << ", valid " << tally.valid << ", commits "
                                        << tally.commits << ", invalid by rule" << rules);
  CHECK(tally.valid > 2000);
  CHECK(tally.rules["L1"] > 100);
}

// Edits that carry one subgraph across a stretch (forwards or backwards), so that the stretch
// comes back shifted by one position: the evaluator answers such subgraphs from the committed
// ones when their retained-in lists are equal too. Sometimes one shifted subgraph is replaced by a
// random one, or the carried one by a random edit's subgraph, so twins and strangers mix.
// The same edit with a run of its replacement that equals committed subgraphs (consecutive, at
// an offset of at most two from their new places) left out as a kept run (ScheduleEdit::
// kept_begin): a random part of the longest such run; the edit as it is when there is none.
ScheduleEdit Hollow(const Schedule& committed, const ScheduleEdit& edit, std::mt19937_64& rng) {
  const int m = static_cast<int>(edit.replacement.size());
  int best_k = 0, best_c = 0, best_len = 0;
  for (int d = -2; d <= 2; ++d) {
    int len = 0;
    for (int k = 0; k <= m; ++k) {
      const int c = edit.begin + k + d;
      const bool same = k < m && c >= edit.begin && c < edit.end && edit.replacement[k] == committed.subgraphs[c];
      if (same) {
        ++len;
        if (len > best_len) best_len = len, best_k = k - len + 1, best_c = c - len + 1;
      } else {
        len = 0;
      }
    }
  }
  ScheduleEdit hollow = edit;
  if (best_len == 0) return hollow;
  auto draw = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int from = draw(0, best_len - 1);
  const int to = draw(from + 1, best_len);
  hollow.kept_at = best_k + from;
  hollow.kept_begin = best_c + from;
  hollow.kept_end = best_c + to;
  hollow.replacement.erase(hollow.replacement.begin() + hollow.kept_at,
                           hollow.replacement.begin() + best_k + to);
  return hollow;
}

// Two candidates to the bit: verdict, total, rule, place and words.
void ExpectIdentical(const Candidate& a, const Candidate& b, const std::string& what) {
  INFO(what);
  REQUIRE(a.valid == b.valid);
  CHECK(a.total == b.total);
  CHECK(a.violation.rule == b.violation.rule);
  CHECK(a.violation.subgraph == b.violation.subgraph);
  CHECK(a.violation.detail == b.violation.detail);
}

TEST_CASE("incremental evaluation equals the oracle on edits that shift a stretch by one") {
  CostCache cache(1 << 14);
  int proposals = 0, valid = 0, kept_runs = 0, kept_subgraphs = 0;
  for (DagShape shape : kAllDagShapes) {
    std::mt19937_64 rng(9191 + static_cast<int>(shape));
    for (int trial = 0; trial < 30; ++trial) {
      RandomProblemOptions problem_options;
      problem_options.min_ops = 4;
      problem_options.max_ops = 12;
      const Problem problem = RandomProblem(rng, shape, problem_options);
      cache.Clear();
      RandomScheduleOptions options;
      options.max_steps = 300;
      options.invalid_probability = 0.05;
      RandomScheduleOptions start_options = options;
      start_options.invalid_probability = 0;
      start_options.extra_retain_probability = 0;
      IncrementalEvaluator evaluator(problem, trial % 2 ? &cache : nullptr);
      // Beside it, in lockstep, one that is given the edits with a kept run where they have one
      // (the stretch read in place): the same candidates and committed states, to the bit.
      IncrementalEvaluator kept(problem, trial % 2 ? &cache : nullptr);
      Schedule committed = RandomSchedule(problem, rng, start_options);
      const std::string what = "shift shape " + std::to_string(static_cast<int>(shape)) + " trial " +
                               std::to_string(trial);
      ExpectSame(evaluator.Reset(committed), EvaluateOracle(problem, committed), what + " reset");
      kept.Reset(committed);
      for (int move = 0; move < 120; ++move) {
        const int n = static_cast<int>(committed.subgraphs.size());
        if (n < 2) break;
        auto draw = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
        const int i = draw(0, n - 2);
        const int j = draw(i + 1, n - 1);
        ScheduleEdit edit{i, j + 1, {}};
        const auto& sgs = committed.subgraphs;
        if (draw(0, 1) == 0) {  // s[j] carried before the stretch
          edit.replacement.push_back(sgs[j]);
          for (int k = i; k < j; ++k) edit.replacement.push_back(sgs[k]);
        } else {  // s[i] carried after it
          for (int k = i + 1; k <= j; ++k) edit.replacement.push_back(sgs[k]);
          edit.replacement.push_back(sgs[i]);
        }
        if (draw(0, 3) == 0) {
          const ScheduleEdit other = RandomEdit(problem, committed, rng, options);
          if (!other.replacement.empty()) {
            edit.replacement[draw(0, static_cast<int>(edit.replacement.size()) - 1)] = other.replacement[0];
          }
        }
        if (draw(0, 3) == 0) {
          // One of them twice (run again): two twins of one committed subgraph, whose facts
          // the evaluator lends once.
          const int k = draw(0, static_cast<int>(edit.replacement.size()) - 1);
          edit.replacement.insert(edit.replacement.begin() + k + 1, edit.replacement[k]);
        }
        const Schedule proposed = ApplyEdit(committed, edit);
        const Evaluation oracle = EvaluateOracle(problem, proposed);
        const std::string where = what + " move " + std::to_string(move);
        ScheduleEdit hollow = Hollow(committed, edit, rng);
        CHECK(ApplyEdit(committed, hollow) == proposed);
        kept_runs += hollow.kept() > 0;
        kept_subgraphs += hollow.kept();
        const Candidate plain = evaluator.Propose(edit);
        ExpectSame(plain, oracle, where);
        // By rvalue half of the time (the evaluator takes the edit's storage).
        const Candidate kept_candidate = move % 2 ? kept.Propose(std::move(hollow)) : kept.Propose(hollow);
        ExpectIdentical(kept_candidate, plain, where + " kept run");
        ++proposals;
        valid += oracle.ok();
        if (oracle.ok() || draw(0, 9) == 0) {
          evaluator.Commit();
          kept.Commit();
          committed = proposed;
          ExpectSame(evaluator.committed(), oracle, where + " committed");
          ExpectIdentical(kept.committed(), evaluator.committed(), where + " kept run committed");
          ExpectExactSum(evaluator, where + " committed");
          ExpectExactSum(kept, where + " kept run committed");
          REQUIRE(evaluator.subgraph_results().size() == committed.subgraphs.size());
          REQUIRE(kept.subgraph_results().size() == committed.subgraphs.size());
          for (size_t k = 0; k < committed.subgraphs.size(); ++k) {
            CHECK(kept.subgraph_results()[k].report == evaluator.subgraph_results()[k].report);
          }
          if (move % 4 == 0) {
            ExpectSameQueries(problem, committed, evaluator, where);
            ExpectSameQueries(problem, committed, kept, where + " kept run");
          }
        } else {
          evaluator.Revert();
          kept.Revert();
        }
        CHECK(evaluator.schedule() == committed);
        CHECK(kept.schedule() == committed);
      }
      std::vector<TensorId> retained_in;
      for (size_t k = 0; k < committed.subgraphs.size(); ++k) {
        const SubgraphResult expected = EvaluateSubgraphOracle(problem, committed.subgraphs[k], retained_in);
        CHECK(evaluator.subgraph_results()[k].verdict == expected.verdict);
        CHECK(Close(evaluator.subgraph_results()[k].report.latency, expected.report.latency));
        retained_in = committed.subgraphs[k].retain;
      }
    }
  }
  MESSAGE("shifted stretches: proposals " << proposals << ", valid " << valid << "; with a kept run "
                                           << kept_runs << " (" << kept_subgraphs << " subgraphs)");
  CHECK(valid > 1000);
  CHECK(proposals - valid > 500);
  CHECK(kept_runs > 3000);
}

TEST_CASE("SpareSubgraphs lends storage only: what it was given, emptied of nothing but its owner") {
  // The thread's spares may hold subgraphs of earlier tests: drain them (a spare always has
  // op storage, a new subgraph none).
  while (SpareSubgraphs::Take().ops.capacity() > 0) {
  }
  std::vector<Subgraph> given(3);
  for (int i = 0; i < 3; ++i) given[i].ops.assign(10 + i, i);
  given.emplace_back();  // no storage to lend: not kept
  SpareSubgraphs::Give(given);
  CHECK(given.empty());
  std::vector<size_t> capacities;
  for (int i = 0; i < 3; ++i) {
    const Subgraph spare = SpareSubgraphs::Take();
    capacities.push_back(spare.ops.capacity());
  }
  std::sort(capacities.begin(), capacities.end());
  CHECK(capacities[0] >= 10);
  CHECK(capacities[2] >= 12);
  CHECK(SpareSubgraphs::Take().ops.capacity() == 0);  // none left: a new one
  // The bound: no more than 4,096 kept.
  std::vector<Subgraph> many(5000);
  for (Subgraph& sg : many) sg.ops.assign(1, 0);
  SpareSubgraphs::Give(many);
  int taken = 0;
  while (SpareSubgraphs::Take().ops.capacity() > 0) ++taken;
  CHECK(taken == 4096);
}

TEST_CASE("incremental evaluation: the second proposal replaces the first, Commit without one is a no-op") {
  std::mt19937_64 rng(31);
  const Problem problem = RandomProblem(rng, DagShape::kChain, {.min_ops = 4, .max_ops = 6});
  RandomScheduleOptions options;
  options.invalid_probability = 0;
  options.max_steps = 300;
  const Schedule schedule = RandomSchedule(problem, rng, options);
  IncrementalEvaluator evaluator(problem, nullptr);
  const Candidate start = evaluator.Reset(schedule);
  ScheduleEdit erase_all{0, static_cast<int>(schedule.subgraphs.size()), {}};
  const Candidate empty = evaluator.Propose(erase_all);
  CHECK_FALSE(empty.valid);
  CHECK(empty.violation.rule == "V1");
  ScheduleEdit nothing{0, 0, {}};
  const Candidate same = evaluator.Propose(nothing);
  CHECK(same.valid == start.valid);
  CHECK(same.total == doctest::Approx(start.total));
  evaluator.Commit();
  CHECK(evaluator.schedule() == schedule);
  evaluator.Commit();  // nothing pending
  CHECK(evaluator.schedule() == schedule);
  CHECK_THROWS_AS(evaluator.Propose({2, 1, {}}), std::out_of_range);
}

}  // namespace
}  // namespace annealer
