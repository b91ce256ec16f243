#include "search/workers.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "search/starts/constructive.h"

namespace annealer {

namespace {

const std::vector<TensorId> kNothing;

// Subgraphs polished at once by a worker (the whole schedule when it has no more): the contest's
// problems fit in one window.
constexpr int kPolishWindow = 256;
// Schedule length (subgraphs) up to which a GA child gets ga.local_moves local moves.
constexpr int64_t kChildLength = 128;

double Uniform01(std::mt19937_64& rng) { return std::uniform_real_distribution<double>(0, 1)(rng); }

}  // namespace

bool RepairSchedule(const WorkerEnvironment& env, Schedule& schedule) {
  const MoveContext context{env.problem, env.rank, env.pricer, env.stop};
  return RepairAvailability(context, schedule);
}

std::optional<Schedule> Crossover(const WorkerEnvironment& env, const Schedule& a, const Schedule& b,
                                  std::mt19937_64& rng) {
  const Problem& problem = env.problem;
  const int num_ops = static_cast<int>(problem.ops.size());
  if (num_ops < 2) return std::nullopt;
  const int cut = 1 + static_cast<int>(std::uniform_int_distribution<int>(0, num_ops - 2)(rng));
  Schedule child;
  std::vector<OpId> ops;  // one buffer for every subgraph's part
  auto take = [&](const Schedule& parent, bool before_cut) {
    for (const Subgraph& sg : parent.subgraphs) {
      ops.clear();
      for (OpId op : sg.ops) {
        if ((env.rank[op] < cut) == before_cut) ops.push_back(op);
      }
      if (ops.empty()) continue;
      if (ops.size() == sg.ops.size()) {
        child.subgraphs.push_back(sg);
        continue;
      }
      for (auto& component : Components(problem, ops)) {
        Subgraph piece = sg;
        piece.ops = SortTopologically(env.rank, std::move(component));
        // Marked for refit by RepairSchedule through its retain filter; fit now to be safe.
        auto fit = FitSubgraph(env.pricer, piece.ops, kNothing, kNothing, &sg, false, env.stop);
        if (!fit) return false;
        child.subgraphs.push_back(std::move(fit->subgraph));
      }
    }
    return true;
  };
  if (!take(a, true) || !take(b, false)) return std::nullopt;
  if (!RepairSchedule(env, child)) return std::nullopt;
  return child;
}

bool Worker::EpochOver(int64_t done, int64_t budget, std::chrono::steady_clock::time_point epoch_end) const {
  if (env_.stop()) return true;
  if (done >= budget) return true;
  if (!env_.params.deterministic && std::chrono::steady_clock::now() >= epoch_end) return true;
  return false;
}

void Worker::ReportIfBest(const Schedule& schedule, Latency total, const std::string& kind) {
  if (has_best_ && total >= best_total_) return;
  has_best_ = true;
  best_total_ = total;
  env_.pool.Offer(schedule, total, kind);
}

SaWorker::SaWorker(const WorkerEnvironment& env, uint64_t seed) : Worker(env, seed, "sa") {
  const int64_t ops = static_cast<int64_t>(env.problem.ops.size());
  if (ops > env.params.sa.temperature_ops) {
    temperature_scale_ = static_cast<double>(env.params.sa.temperature_ops) / static_cast<double>(ops);
  }
}

void SaWorker::Restart() {
  const EliteEntry& start = env_.pool.Sample(rng_);
  const Candidate c = evaluator_.Reset(start.schedule);
  run_best_ = c.total;
  temperature_ = env_.params.sa.initial_temperature;
  since_cooling_ = 0;
  cooling_steps_without_gain_ = 0;
  reheats_ = 0;
}

void SaWorker::Rebase(const Schedule& start, const std::vector<EliteEntry>&) {
  const Candidate c = evaluator_.Reset(start);
  if (!c.valid) return;  // never: the driver passes a schedule the pool accepted
  started_ = true;
  run_best_ = c.total;
  temperature_ = env_.params.sa.initial_temperature;
  since_cooling_ = 0;
  cooling_steps_without_gain_ = 0;
  reheats_ = 0;
  has_best_ = true;
  best_total_ = c.total;
  pending_polish_ = start;
  polish_due_ = true;
  polish_cursor_ = 0;
}

void SaWorker::RunEpoch(int64_t budget, std::chrono::steady_clock::time_point epoch_end) {
  const SaParams& sa = env_.params.sa;
  if (!started_) {
    started_ = true;
    Restart();
  }
  int64_t done = 0;
  while (!EpochOver(done, budget, epoch_end)) {
    ++done;
    ++moves_;
    const Latency current = evaluator_.committed().total;
    MoveKind kind;
    std::optional<ScheduleEdit> edit = RandomMove(context_, env_.params.workers, evaluator_.schedule(), rng_, &kind);
    if (edit) {
      const Candidate& c = evaluator_.Propose(std::move(*edit));
      bool accept = false;
      if (c.valid) {
        const double delta = c.total - current;
        const double t = temperature_ * temperature_scale_ * current;
        accept = delta <= 0 || (t > 0 && Uniform01(rng_) < std::exp(-delta / t));
      }
      if (accept) {
        evaluator_.Commit();
        if (c.total < run_best_) {
          run_best_ = c.total;
          cooling_steps_without_gain_ = 0;
        }
        if (!has_best_ || c.total < best_total_) {
          ReportIfBest(evaluator_.schedule(), c.total, "sa");
          pending_polish_ = evaluator_.schedule();
          polish_due_ = true;
        }
      } else {
        evaluator_.Revert();
      }
    }
    if (++since_cooling_ >= sa.moves_per_temperature) {
      since_cooling_ = 0;
      temperature_ *= sa.cooling;
      ++cooling_steps_without_gain_;
      if (cooling_steps_without_gain_ >= sa.reheat_after || temperature_ < sa.final_temperature) {
        temperature_ = sa.initial_temperature;
        cooling_steps_without_gain_ = 0;
        if (++reheats_ > sa.restart_after_reheats) Restart();
      }
    }
  }
  if (env_.params.workers.polish && polish_due_ && !env_.stop()) {
    polish_due_ = false;
    // On a long schedule one polish of everything would take longer than an epoch: each epoch
    // polishes the next window of kPolishWindow subgraphs instead, round the schedule.
    const int n = static_cast<int>(pending_polish_.subgraphs.size());
    int begin = 0, end = n;
    if (n > kPolishWindow) {
      if (polish_cursor_ >= n) polish_cursor_ = 0;
      begin = polish_cursor_;
      end = std::min(n, begin + kPolishWindow);
      polish_cursor_ = end;
    }
    const Schedule polished = Polish(env_.problem, env_.pricer, pending_polish_, env_.stop,
                                     env_.params.workers.partial_edge_tiles == Switch::kOn, begin, end);
    if (!env_.stop()) {
      IncrementalEvaluator check(env_.problem, env_.pricer.cache());
      const Candidate c = check.Reset(polished);
      if (c.valid && c.total < best_total_) {
        ReportIfBest(polished, c.total, "polish");
        // Continue the walk from the polished schedule when it beats the current one.
        if (c.total < evaluator_.committed().total) {
          evaluator_.Reset(polished);
          run_best_ = std::min(run_best_, c.total);
        }
      }
    }
  }
}

const GaWorker::Member& GaWorker::Tournament() {
  const int n = static_cast<int>(population_.size());
  std::uniform_int_distribution<int> pick(0, n - 1);
  int best = pick(rng_);
  for (int64_t r = 1; r < env_.params.ga.tournament; ++r) {
    const int other = pick(rng_);
    if (population_[other].total < population_[best].total) best = other;
  }
  return population_[best];
}

void GaWorker::Insert(const Schedule& schedule, Latency total) {
  // Equal schedules have equal partitions, so the partition's hash filters duplicates as the
  // schedule's did, at a fraction of the cost on a network (no traversals).
  const uint64_t hash = HashPartition(schedule);
  for (const Member& m : population_) {
    if (m.hash == hash && m.schedule == schedule) return;
  }
  if (static_cast<int64_t>(population_.size()) < env_.params.ga.population) {
    population_.push_back({schedule, total, hash});
    return;
  }
  auto worst = std::max_element(population_.begin(), population_.end(),
                                [](const Member& a, const Member& b) { return a.total < b.total; });
  if (total < worst->total) {
    worst->schedule = schedule;  // into the storage of the one it replaces
    worst->total = total;
    worst->hash = hash;
  }
}

void GaWorker::Rebase(const Schedule& start, const std::vector<EliteEntry>& seeds) {
  // The composed schedule of the repeated-block start crossed with the constructive starts is
  // what a run without the overlap does first (its GA found 240.9k -> 227.4k on ResNet-50 in
  // its first epoch); by now the pool holds the lone SA worker's schedules instead, which would
  // crowd the starts out of the population.
  population_.clear();
  IncrementalEvaluator check(env_.problem, env_.pricer.cache());
  const Candidate c = check.Reset(start);
  if (c.valid) Insert(start, c.total);
  for (const EliteEntry& e : seeds) Insert(e.schedule, e.total);
  skip_migration_ = true;
}

void GaWorker::Reseed(const std::vector<EliteEntry>& seeds) {
  population_.clear();
  for (const EliteEntry& e : seeds) Insert(e.schedule, e.total);
  skip_migration_ = true;
}

void GaWorker::RunEpoch(int64_t budget, std::chrono::steady_clock::time_point epoch_end) {
  const GaParams& ga = env_.params.ga;
  // Migration: the pool's entries join the population (duplicates are ignored).
  if (!skip_migration_) {
    for (const EliteEntry& e : env_.pool.entries()) Insert(e.schedule, e.total);
  }
  skip_migration_ = false;
  if (population_.empty()) return;
  int64_t done = 0;
  while (!EpochOver(done, budget, epoch_end)) {
    const Member& first = Tournament();
    std::optional<Schedule> crossed;
    if (Uniform01(rng_) < ga.crossover_rate && population_.size() >= 2) {
      const Member& second = Tournament();
      crossed = Crossover(env_, first.schedule, second.schedule, rng_);
    }
    ++done;
    ++moves_;
    // The child is the crossover's, else the first parent (copied into the evaluator's storage).
    Candidate c = evaluator_.Reset(crossed ? *crossed : first.schedule);
    if (!c.valid) continue;
    // Mutation: random valid moves, accepted whatever their delta.
    for (int64_t m = 0; m < ga.mutation_moves && !EpochOver(done, budget, epoch_end); ++m) {
      ++done;
      ++moves_;
      auto edit = RandomMove(context_, env_.params.workers, evaluator_.schedule(), rng_, nullptr);
      if (!edit) continue;
      const Candidate& next = evaluator_.Propose(std::move(*edit));
      if (next.valid) {
        evaluator_.Commit();
      } else {
        evaluator_.Revert();
      }
    }
    // Local improvement: improving moves only. A child costs time proportional to its length
    // (crossover, repair, a full evaluation), so on long schedules it gets proportionally more
    // local moves: the share of moves in the work stays that of a contest-sized schedule.
    const int64_t length = static_cast<int64_t>(evaluator_.schedule().subgraphs.size());
    const int64_t local_moves = std::max(ga.local_moves, ga.local_moves * length / kChildLength);
    for (int64_t m = 0; m < local_moves && !EpochOver(done, budget, epoch_end); ++m) {
      ++done;
      ++moves_;
      auto edit = RandomMove(context_, env_.params.workers, evaluator_.schedule(), rng_, nullptr);
      if (!edit) continue;
      const Candidate& next = evaluator_.Propose(std::move(*edit));
      if (next.valid && next.total < evaluator_.committed().total) {
        evaluator_.Commit();
      } else {
        evaluator_.Revert();
      }
    }
    c = evaluator_.committed();
    if (!c.valid) continue;
    ReportIfBest(evaluator_.schedule(), c.total, "ga");
    Insert(evaluator_.schedule(), c.total);
  }
}

}  // namespace annealer
