#include "eval/cost_cache.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "eval/subgraph_cost.h"

namespace annealer {

namespace {

uint64_t Mix(uint64_t x) {  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Retained sets are sets: their hash must not depend on the order they were listed in.
uint64_t HashSet(const std::vector<TensorId>& set, uint64_t salt) {
  uint64_t h = Mix(salt + set.size());
  for (TensorId t : set) h += Mix(static_cast<uint64_t>(t) ^ salt);
  return h;
}

uint64_t HashKey(const Problem& problem, const Subgraph& subgraph,
                 const std::vector<TensorId>& retained_in) {
  uint64_t h = reinterpret_cast<uintptr_t>(&problem);
  for (OpId op : subgraph.ops) h = h * 0x100000001b3ULL + static_cast<uint64_t>(op);
  const Granularity& g = subgraph.granularity;
  h = Mix(h ^ (static_cast<uint64_t>(subgraph.ops.size()) << 56));
  h = Mix(h ^ static_cast<uint64_t>(g.w) ^ static_cast<uint64_t>(g.h) << 21 ^
          static_cast<uint64_t>(g.k) << 42);
  if (subgraph.traversal) {
    // A sample of at most 16 entries: distinct traversals of one subgraph almost always differ
    // there, and the stored key is compared in full anyway.
    const auto& order = *subgraph.traversal;
    const size_t size = order.size();
    h = Mix(h ^ (0x5151 + size));
    const size_t stride = size <= 16 ? 1 : size / 16;
    for (size_t i = 0; i < size; i += stride) h = h * 0x100000001b3ULL + static_cast<uint64_t>(order[i]);
    h = Mix(h);
  }
  h ^= HashSet(retained_in, 0x1234567);
  h ^= HashSet(subgraph.retain, 0x7654321) * 3;
  return h;
}

// Multiset equality of a query (any order) and a stored sorted set.
bool SameSet(const std::vector<TensorId>& query, const std::vector<TensorId>& sorted) {
  if (query.size() != sorted.size()) return false;
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

}  // namespace

struct CostCache::Shard {
  struct Entry {
    const Problem* problem;
    std::vector<OpId> ops;
    Granularity granularity;
    std::optional<std::vector<int64_t>> traversal;
    std::vector<TensorId> retained_in;  // sorted
    std::vector<TensorId> retain;       // sorted
    SubgraphResult result;

    bool Matches(const Problem& p, const Subgraph& s, const std::vector<TensorId>& in) const {
      return problem == &p && granularity == s.granularity && ops == s.ops &&
             traversal == s.traversal && SameSet(in, retained_in) && SameSet(s.retain, retain);
    }
  };
  mutable std::mutex mutex;
  std::unordered_multimap<uint64_t, Entry> entries;
};

CostCache::CostCache(std::size_t max_entries)
    : entries_per_shard_(std::max<std::size_t>(1, max_entries / kShards)),
      shards_(new Shard[kShards]) {}

CostCache::~CostCache() = default;

SubgraphResult CostCache::LookupOrCompute(const Problem& problem, const Subgraph& subgraph,
                                          const std::vector<TensorId>& retained_in) {
  const uint64_t hash = HashKey(problem, subgraph, retained_in);
  Shard& shard = shards_[hash >> 60];
  {
    std::lock_guard lock(shard.mutex);
    auto [it, end] = shard.entries.equal_range(hash);
    for (; it != end; ++it) {
      if (it->second.Matches(problem, subgraph, retained_in)) {
        hits_.fetch_add(1, std::memory_order_relaxed);
        return it->second.result;
      }
    }
  }
  misses_.fetch_add(1, std::memory_order_relaxed);
  // Priced outside the lock: other threads keep using the shard meanwhile.
  SubgraphResult result = CostSubgraph(problem, subgraph, retained_in);
  Shard::Entry entry{&problem,           subgraph.ops,           subgraph.granularity,
                     subgraph.traversal, Sorted(retained_in),    Sorted(subgraph.retain),
                     result};
  std::lock_guard lock(shard.mutex);
  auto [it, end] = shard.entries.equal_range(hash);
  for (; it != end; ++it) {
    if (it->second.Matches(problem, subgraph, retained_in)) return result;  // raced: keep one
  }
  if (shard.entries.size() >= entries_per_shard_) shard.entries.clear();  // generation flush
  shard.entries.emplace(hash, std::move(entry));
  return result;
}

CacheStats CostCache::stats() const {
  CacheStats stats;
  stats.hits = hits_.load(std::memory_order_relaxed);
  stats.misses = misses_.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < kShards; ++i) {
    std::lock_guard lock(shards_[i].mutex);
    stats.entries += shards_[i].entries.size();
  }
  return stats;
}

void CostCache::Clear() {
  for (std::size_t i = 0; i < kShards; ++i) {
    std::lock_guard lock(shards_[i].mutex);
    shards_[i].entries.clear();
  }
  hits_.store(0, std::memory_order_relaxed);
  misses_.store(0, std::memory_order_relaxed);
}

}  // namespace annealer
