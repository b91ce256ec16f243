// The shared elite pool, after OR-Tools' SharedSolutionRepository: workers Offer() schedules
// into a buffer at any time (thread-safe); the driver calls Synchronize() between epochs, which
// merges the buffer in a stable order (by total, then by a content hash, then by schedule),
// merges duplicates, drops near-duplicates (same partition, total within `diversity`) and keeps
// the best `size`. Readers only ever see the state of the last Synchronize(), so the pool's
// contents do not depend on the order in which workers offered.
#pragma once

#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "eval/model/schedule.h"
#include "search/params.h"

namespace annealer {

struct EliteEntry {
  Schedule schedule;
  Latency total = 0;
  std::string found_by;  // worker kind that offered it
  // HashSchedule of the schedule, derived only when `hash_known` says so: the merge's order
  // reads it only between entries of equal totals (on a network a schedule's content is
  // hundreds of subgraphs with their traversals, and an SA worker offers every new best).
  uint64_t hash = 0;
  bool hash_known = false;
  uint64_t partition_hash = 0;  // of the ops of every subgraph, in order
};

uint64_t HashSchedule(const Schedule& schedule);
uint64_t HashPartition(const Schedule& schedule);

class ElitePool {
 public:
  explicit ElitePool(const PoolParams& params) : params_(params) {}

  // Thread-safe; buffered until the next Synchronize().
  void Offer(const Schedule& schedule, Latency total, const std::string& found_by);
  // Merges the buffer. Not concurrent with Offer-free readers (call between epochs).
  void Synchronize();
  // Drops every entry (not the buffer), then merges `entries` and the buffer as Synchronize
  // does. Between epochs, like Synchronize.
  void Restart(std::vector<EliteEntry> entries);

  bool empty() const { return entries_.empty(); }
  int size() const { return static_cast<int>(entries_.size()); }
  const EliteEntry& best() const { return entries_.front(); }
  const std::vector<EliteEntry>& entries() const { return entries_; }
  // A rank-biased random entry (better ranks more likely); pool must not be empty.
  const EliteEntry& Sample(std::mt19937_64& rng) const;

 private:
  PoolParams params_;
  std::mutex mutex_;
  std::vector<EliteEntry> buffer_;
  std::vector<EliteEntry> entries_;  // sorted best first
};

}  // namespace annealer
