// The two worker kinds of the parallel search. A worker owns its RNG (seeded up front by the
// driver), an IncrementalEvaluator over the shared CostCache and its private state; it touches
// the shared ElitePool only through Offer() during an epoch and reads the pool between epochs
// (the driver synchronizes the pool while no worker runs).
//
// Protocol (driver thread for the calls, one TBB task per worker per epoch):
//   construct  (RunEpoch)*      RunEpoch(budget) runs until `budget` moves are done or, in free
//                               mode, the epoch end time or the stop predicate.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "eval/cost/incremental.h"
#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "search/elite_pool.h"
#include "search/moves/moves.h"
#include "search/params.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"

namespace annealer {

struct WorkerEnvironment {
  const Problem& problem;
  const SearchParams& params;
  const std::vector<int>& rank;
  const SubgraphPricer& pricer;
  ElitePool& pool;
  std::function<bool()> stop;  // deadline or stop flag
};

// Repairs data availability (V7) of a schedule by recomputing missing producers inside the
// subgraph that needs them, drops useless retains, and refits changed subgraphs. Returns false
// when the repair gave up.
bool RepairSchedule(const WorkerEnvironment& env, Schedule& schedule);

// One-point partition crossover on the topological order: subgraphs of `a` restricted to the
// ops before the cut, then those of `b` restricted to the rest, split into connected
// components, then repaired. nullopt when the repair failed.
std::optional<Schedule> Crossover(const WorkerEnvironment& env, const Schedule& a, const Schedule& b,
                                  std::mt19937_64& rng);

class Worker {
 public:
  Worker(const WorkerEnvironment& env, uint64_t seed, std::string kind)
      : env_(env), rng_(seed), kind_(std::move(kind)), evaluator_(env.problem, env.pricer.cache()),
        context_{env.problem, env.rank, env.pricer, env.stop, &evaluator_, MergeReadersApplies(env.problem),
                 GatherKLoopApplies(env.problem)} {}
  virtual ~Worker() = default;
  virtual void RunEpoch(int64_t budget, std::chrono::steady_clock::time_point epoch_end) = 0;
  // A start from elsewhere (the overlapped repeated-block start, search/driver.h) that the
  // worker should work from, whatever its own best: SA walks on from it and its improvements
  // on it count as its new bests (reported, polished); GA's population becomes it and `seeds`
  // (the constructive starts), without the pool for one epoch.
  virtual void Rebase(const Schedule& start, const std::vector<EliteEntry>& seeds) = 0;
  // The overlapped start ended without a schedule to work from (nothing repeats): walks go on
  // as they are, and GA's population becomes `seeds` (the constructive starts and the best so
  // far), without the pool for one epoch.
  virtual void Reseed(const std::vector<EliteEntry>& seeds) { (void)seeds; }
  const std::string& kind() const { return kind_; }
  int64_t moves() const { return moves_; }

 protected:
  bool EpochOver(int64_t done, int64_t budget, std::chrono::steady_clock::time_point epoch_end) const;
  // Offers the schedule when it beats this worker's best; polishes it first when enabled.
  void ReportIfBest(const Schedule& schedule, Latency total, const std::string& kind);

  const WorkerEnvironment& env_;
  std::mt19937_64 rng_;
  std::string kind_;
  IncrementalEvaluator evaluator_;
  MoveContext context_;
  int64_t moves_ = 0;
  Latency best_total_ = 0;
  bool has_best_ = false;
};

class SaWorker : public Worker {
 public:
  SaWorker(const WorkerEnvironment& env, uint64_t seed);
  void RunEpoch(int64_t budget, std::chrono::steady_clock::time_point epoch_end) override;
  void Rebase(const Schedule& start, const std::vector<EliteEntry>& seeds) override;

 private:
  void Restart();
  bool started_ = false;
  double temperature_ = 0;  // fraction of the current total, before temperature_scale_
  // min(1, sa.temperature_ops / ops): exactly 1 on a graph of at most temperature_ops ops.
  double temperature_scale_ = 1;
  int64_t since_cooling_ = 0;
  int64_t cooling_steps_without_gain_ = 0;
  int64_t reheats_ = 0;
  Latency run_best_ = 0;
  Schedule pending_polish_;
  bool polish_due_ = false;
  int polish_cursor_ = 0;  // first subgraph of the next polish window on a long schedule
};

class GaWorker : public Worker {
 public:
  GaWorker(const WorkerEnvironment& env, uint64_t seed) : Worker(env, seed, "ga") {}
  void RunEpoch(int64_t budget, std::chrono::steady_clock::time_point epoch_end) override;
  void Rebase(const Schedule& start, const std::vector<EliteEntry>& seeds) override;
  void Reseed(const std::vector<EliteEntry>& seeds) override;

 private:
  struct Member {
    Schedule schedule;
    Latency total;
    uint64_t hash;  // HashPartition of the schedule
  };
  const Member& Tournament();
  // Copies the schedule only when it joins the population.
  void Insert(const Schedule& schedule, Latency total);
  std::vector<Member> population_;
  bool skip_migration_ = false;  // set by Rebase for the next epoch
};

}  // namespace annealer
