// A bounded, thread-safe memo of subgraph costs, shared by every search worker.
//
// The cost of a subgraph depends only on its context: the op list as given (order matters for
// V6), the granularity, the traversal (or raster), the tensors retained in from the previous
// subgraph and the tensors it retains out. That context is the key; the full key is stored so
// that a hash collision can never return another subgraph's cost. One cache serves ONE problem
// object: the first lookup binds it, lookups for any other problem bypass the cache (priced
// cold, counted as misses); call Clear() before using the cache for another problem (which may
// sit at the same address).
//
// Memory is bounded by an entry budget: the cache is split in shards, each with its own share
// of the budget, fixed arrays (entries, key words) allocated once and never moved, and an
// open-addressing index that grows by publishing a new table (old ones are kept until
// destruction); a full shard is flushed whole (generation flush) — simple, and a search re-fills
// the hot entries within a few moves.
//
// Hits take no lock: each shard is a seqlock. Writers (misses inserting, flushes) serialize on
// a spin lock and make the shard's sequence number odd while they write; a reader reads the
// sequence, probes and copies the entry (the words that steer its reads loaded atomically and
// bounds-checked, see Load/Peek in the .cc), and keeps what it read only if the sequence is
// unchanged and even — otherwise it retries. Because nothing a reader can reach is freed,
// a reader racing a writer reads stale words, never freed memory. A hit is one 64-bit hash of
// the key, a slot, one 128-byte entry (the key words inline for short keys) and no
// read-modify-write: two threads sharing the cache do not bounce a lock's cache line. Results are stored without their violation strings (a side table, read
// under the writer lock, holds those of failures). Hit and miss counts are exact: per thread
// counters (one writer each), summed by stats().
//
// The cache also holds the problem's flat DAG facts (eval/flat_problem.h), derived once on first
// use, for the sequence rules of EvaluateFast.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "eval/flat_problem.h"
#include "eval/oracle.h"
#include "eval/problem.h"
#include "eval/schedule.h"

namespace annealer {

struct CacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t entries = 0;
  double hit_rate() const {
    const uint64_t lookups = hits + misses;
    return lookups == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(lookups);
  }
};

class CostCache {
 public:
  // `max_entries` bounds the number of stored subgraph contexts (at least one per shard).
  explicit CostCache(std::size_t max_entries);
  ~CostCache();
  CostCache(const CostCache&) = delete;
  CostCache& operator=(const CostCache&) = delete;

  // The cost of `subgraph` after a subgraph that retained `retained_in`: from the cache when
  // present, otherwise computed by CostSubgraph (eval/subgraph_cost.h) and stored.
  // Equal to EvaluateSubgraphOracle(problem, subgraph, retained_in) in verdict, rule and report.
  SubgraphResult LookupOrCompute(const Problem& problem, const Subgraph& subgraph,
                                 const std::vector<TensorId>& retained_in);
  // The same, written into `result` (reusing its strings' storage: no construction or
  // destruction of a SubgraphResult per call).
  void LookupOrCompute(const Problem& problem, const Subgraph& subgraph,
                       const std::vector<TensorId>& retained_in, SubgraphResult& result);

  // The flat DAG facts of `problem`, derived on the first call after construction or Clear();
  // null when the cache already serves another problem object.
  const FlatProblem* Flat(const Problem& problem);

  CacheStats stats() const;
  // Not concurrent with any other use of the cache.
  void Clear();

 private:
  struct Shard;
  struct Counters;
  static constexpr std::size_t kShards = 16;
  Counters& ThreadCounters();
  Counters& ThreadCountersSlow();
  std::size_t entries_per_shard_;
  std::unique_ptr<Shard[]> shards_;
  std::atomic<const Problem*> owner_{nullptr};
  const uint64_t instance_id_;  // tells this cache from an earlier one at the same address
  mutable std::mutex counters_mutex_;
  std::vector<std::unique_ptr<Counters>> counters_;
  std::atomic<const FlatProblem*> flat_{nullptr};
  std::unique_ptr<FlatProblem> flat_storage_;
  std::mutex flat_mutex_;
};

}  // namespace annealer
