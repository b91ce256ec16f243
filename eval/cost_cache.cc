#include "eval/cost_cache.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <thread>

#include "eval/subgraph_cost.h"

namespace annealer {

namespace {

uint64_t Mix(uint64_t x) {  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

constexpr uint64_t kPrime = 0x100000001b3ULL;

// Retained sets are sets: their hash must not depend on the order they were listed in.
uint64_t HashSet(const std::vector<TensorId>& set, uint64_t salt) {
  uint64_t h = set.size();
  for (TensorId t : set) h += (static_cast<uint64_t>(t) + salt) * 0x9e3779b97f4a7c15ULL;
  return h;
}

// Cheap multiply-add chaining with one finalizer: every key is compared in full on a match, so
// the hash only has to spread keys, not resist adversaries.
uint64_t HashKey(const Problem& problem, const Subgraph& subgraph,
                 const std::vector<TensorId>& retained_in) {
  uint64_t h = reinterpret_cast<uintptr_t>(&problem);
  for (OpId op : subgraph.ops) h = h * kPrime + static_cast<uint64_t>(op);
  const Granularity& g = subgraph.granularity;
  h = h * kPrime + (static_cast<uint64_t>(g.w) ^ static_cast<uint64_t>(g.h) << 21 ^
                    static_cast<uint64_t>(g.k) << 42 ^ static_cast<uint64_t>(subgraph.ops.size()) << 56);
  if (subgraph.traversal) {
    // A sample of at most 16 entries: distinct traversals of one subgraph almost always differ
    // there, and the stored key is compared in full anyway.
    const auto& order = *subgraph.traversal;
    const size_t size = order.size();
    h = h * kPrime + 0x5151 + size;
    const size_t stride = size <= 16 ? 1 : size / 16;
    for (size_t i = 0; i < size; i += stride) h = h * kPrime + static_cast<uint64_t>(order[i]);
  }
  h = h * kPrime + HashSet(retained_in, 0x1234567);
  h = h * kPrime + HashSet(subgraph.retain, 0x7654321);
  return Mix(h);
}

// Multiset equality of a query (any order) and a stored sorted set.
inline bool SameSet(const std::vector<TensorId>& query, const std::vector<TensorId>& sorted) {
  if (query.size() != sorted.size()) return false;
  if (query.empty()) return true;
  if (query.size() == 1) return query[0] == sorted[0];
  for (TensorId t : query) {
    const auto range = std::equal_range(sorted.begin(), sorted.end(), t);
    if (std::count(query.begin(), query.end(), t) != range.second - range.first) return false;
  }
  return true;
}

std::vector<TensorId> Sorted(std::vector<TensorId> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// Test-and-test-and-set: a hit holds the lock for a few dozen instructions, so waiting is
// normally a spin; a holder that takes long (a generation flush frees a shard's entries) or
// was preempted makes the waiters yield instead of burning the other core.
class SpinLock {
 public:
  void lock() {
    for (int spins = 0; locked_.exchange(true, std::memory_order_acquire); ++spins) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins > 64) std::this_thread::yield();
      }
    }
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace

struct alignas(64) CostCache::Shard {
  struct Entry {
    uint64_t hash;
    const Problem* problem;
    std::vector<OpId> ops;
    Granularity granularity;
    std::optional<std::vector<int64_t>> traversal;
    std::vector<TensorId> retained_in;  // sorted
    std::vector<TensorId> retain;       // sorted
    Verdict verdict;
    int32_t violation_index;  // into `violations` when verdict != kValid
    SubgraphReport report;

    bool Matches(const Problem& p, const Subgraph& s, const std::vector<TensorId>& in) const {
      if (problem != &p || !(granularity == s.granularity) || ops.size() != s.ops.size()) {
        return false;
      }
      for (size_t i = 0; i < ops.size(); ++i) {  // short lists: a loop beats a memcmp call
        if (ops[i] != s.ops[i]) return false;
      }
      return traversal == s.traversal && SameSet(in, retained_in) && SameSet(s.retain, retain);
    }
  };

  SpinLock mutex;
  // Updated under the mutex with plain load/store (no read-modify-write), read by stats()
  // without it.
  std::atomic<uint64_t> hits{0};
  std::atomic<uint64_t> misses{0};
  std::vector<Entry> entries;
  std::vector<Violation> violations;  // of the failed entries
  // Open addressing, linear probing: entry index + 1 per slot, 0 when empty. Never deleted
  // from (a flush clears everything), so probing needs no tombstones. Kept at most half full.
  std::vector<uint32_t> slots;

  const Entry* Find(uint64_t hash, const Problem& p, const Subgraph& s,
                    const std::vector<TensorId>& in) const {
    if (slots.empty()) return nullptr;
    const size_t mask = slots.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const uint32_t slot = slots[i];
      if (slot == 0) return nullptr;
      const Entry& e = entries[slot - 1];
      if (e.hash == hash && e.Matches(p, s, in)) return &e;
    }
  }

  void Index(uint32_t entry_index) {
    const size_t mask = slots.size() - 1;
    size_t i = entries[entry_index].hash & mask;
    while (slots[i] != 0) i = (i + 1) & mask;
    slots[i] = entry_index + 1;
  }

  void Insert(Entry entry, const Violation& violation, size_t budget) {
    if (entries.size() >= budget) {  // generation flush
      entries.clear();
      violations.clear();
      std::fill(slots.begin(), slots.end(), 0);
    }
    if (entry.verdict != Verdict::kValid) {
      entry.violation_index = static_cast<int32_t>(violations.size());
      violations.push_back(violation);
    }
    entries.push_back(std::move(entry));
    if (2 * entries.size() > slots.size()) {
      slots.assign(std::max<size_t>(64, 2 * slots.size()), 0);
      for (uint32_t i = 0; i < entries.size(); ++i) Index(i);
    } else {
      Index(static_cast<uint32_t>(entries.size() - 1));
    }
  }
};

CostCache::CostCache(std::size_t max_entries)
    : entries_per_shard_(std::max<std::size_t>(1, max_entries / kShards)),
      shards_(new Shard[kShards]) {}

CostCache::~CostCache() = default;

SubgraphResult CostCache::LookupOrCompute(const Problem& problem, const Subgraph& subgraph,
                                          const std::vector<TensorId>& retained_in) {
  SubgraphResult result;
  LookupOrCompute(problem, subgraph, retained_in, result);
  return result;
}

void CostCache::LookupOrCompute(const Problem& problem, const Subgraph& subgraph,
                                const std::vector<TensorId>& retained_in, SubgraphResult& result) {
  const uint64_t hash = HashKey(problem, subgraph, retained_in);
  Shard& shard = shards_[hash >> 60];
  {
    std::lock_guard lock(shard.mutex);
    if (const Shard::Entry* e = shard.Find(hash, problem, subgraph, retained_in)) {
      shard.hits.store(shard.hits.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      result.verdict = e->verdict;
      result.report = e->report;
      if (e->verdict == Verdict::kValid) {
        result.violation.rule.clear();
        result.violation.detail.clear();
        result.violation.subgraph = -1;
      } else {
        result.violation = shard.violations[e->violation_index];
      }
      return;
    }
    shard.misses.store(shard.misses.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  // Priced outside the lock: other threads keep using the shard meanwhile.
  result = CostSubgraph(problem, subgraph, retained_in);
  Shard::Entry entry{hash,
                     &problem,
                     subgraph.ops,
                     subgraph.granularity,
                     subgraph.traversal,
                     Sorted(retained_in),
                     Sorted(subgraph.retain),
                     result.verdict,
                     -1,
                     result.report};
  std::lock_guard lock(shard.mutex);
  if (!shard.Find(hash, problem, subgraph, retained_in)) {  // another thread may have raced us
    shard.Insert(std::move(entry), result.violation, entries_per_shard_);
  }
}

const FlatProblem* CostCache::Flat(const Problem& problem) {
  const FlatProblem* flat = flat_.load(std::memory_order_acquire);
  if (flat == nullptr) {
    std::lock_guard lock(flat_mutex_);
    flat = flat_.load(std::memory_order_relaxed);
    if (flat == nullptr) {
      flat_storage_ = std::make_unique<FlatProblem>();
      flat_storage_->Build(problem);
      flat = flat_storage_.get();
      flat_.store(flat, std::memory_order_release);
    }
  }
  return flat->problem == &problem ? flat : nullptr;
}

CacheStats CostCache::stats() const {
  CacheStats stats;
  for (std::size_t i = 0; i < kShards; ++i) {
    Shard& shard = shards_[i];
    std::lock_guard lock(shard.mutex);
    stats.hits += shard.hits.load(std::memory_order_relaxed);
    stats.misses += shard.misses.load(std::memory_order_relaxed);
    stats.entries += shard.entries.size();
  }
  return stats;
}

void CostCache::Clear() {
  for (std::size_t i = 0; i < kShards; ++i) {
    Shard& shard = shards_[i];
    std::lock_guard lock(shard.mutex);
    shard.entries.clear();
    shard.violations.clear();
    std::fill(shard.slots.begin(), shard.slots.end(), 0);
    shard.hits.store(0, std::memory_order_relaxed);
    shard.misses.store(0, std::memory_order_relaxed);
  }
  // Not concurrent with users of the cache (see the header): nobody holds the old facts.
  std::lock_guard lock(flat_mutex_);
  flat_.store(nullptr, std::memory_order_release);
  flat_storage_.reset();
}

}  // namespace annealer
