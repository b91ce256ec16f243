#include "eval/cost_cache.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
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

// Retained sets are sets: their hash must not depend on the order they were listed in.
inline uint64_t HashSet(const std::vector<TensorId>& set, uint64_t multiplier) {
  uint64_t h = 0;
  for (TensorId t : set) h += (static_cast<uint64_t>(t) + 0x9e3779b97f4a7c15ULL) * multiplier;
  return h;
}

// Terms multiplied by distinct odd constants and summed: the multiplies are independent (no
// serial multiply chain on a hit's critical path), then one finalizer spreads the sum. Every
// key is compared in full on a match, so the hash only has to spread keys, not resist
// adversaries.
uint64_t HashKey(const Subgraph& subgraph, const std::vector<TensorId>& retained_in) {
  const Granularity& g = subgraph.granularity;
  uint64_t h = static_cast<uint64_t>(g.w) * 0xd6e8feb86659fd93ULL +
               static_cast<uint64_t>(g.h) * 0xa0761d6478bd642fULL +
               static_cast<uint64_t>(g.k) * 0xe7037ed1a0b428dbULL;
  uint64_t position = 0x8ebc6af09c88c6e3ULL;
  for (OpId op : subgraph.ops) {  // order matters: each position has its own multiplier
    h += (static_cast<uint64_t>(op) + 0x589965cc75374cc3ULL) * position;
    position += 0x1d8e4e27c47d124fULL * 2;  // stays odd
  }
  if (subgraph.traversal) {
    // A sample of at most 16 entries: distinct traversals of one subgraph almost always differ
    // there, and the stored key is compared in full anyway.
    const auto& order = *subgraph.traversal;
    const size_t size = order.size();
    h += (size + 0x5151) * 0xff51afd7ed558ccdULL;
    const size_t stride = size <= 16 ? 1 : size / 16;
    uint64_t t = 0;
    for (size_t i = 0; i < size; i += stride) t = t * 0x100000001b3ULL + static_cast<uint64_t>(order[i]);
    h += t * 0xc4ceb9fe1a85ec53ULL;
  }
  h += HashSet(retained_in, 0x9fb21c651e98df25ULL) + HashSet(subgraph.retain, 0x2127599bf4325c37ULL);
  return Mix(h);
}

// Seqlock reads. Words that decide WHERE a reader reads next (slots, key shapes and offsets)
// are loaded atomically (relaxed: plain moves on x86) and once, so a racing read is a stale
// value that is bounds-checked before use — never an out-of-range access. Words that are only
// compared or copied (hashes, granularity, key words, reports) are plain reads: a torn value is
// discarded by the sequence check, and relaxed atomics there cost ~7% of a warm full
// evaluation (GCC does not schedule them freely). Writers store everything atomically.
template <class T>
inline T Load(const T& x) {
  return std::atomic_ref<T>(const_cast<T&>(x)).load(std::memory_order_relaxed);
}
template <class T>
inline T Peek(const T& x) {
  return x;
}
template <class T>
inline void Store(T& x, T value) {
  std::atomic_ref<T>(x).store(value, std::memory_order_relaxed);
}

// Test-and-test-and-set, for writers only: a holder that takes long (a generation flush) or was
// preempted makes the waiters yield instead of burning the other core.
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

std::atomic<uint64_t> next_instance_id{1};
std::atomic<uint64_t> next_thread_serial{1};

uint64_t ThreadSerial() {
  thread_local const uint64_t serial = next_thread_serial.fetch_add(1, std::memory_order_relaxed);
  return serial;
}

// The counts of one key, compared first as one word (they also size the key words).
struct KeyShape {
  uint64_t counts;  // ops | retained-in << 16 | retain << 32 | has traversal << 48
  uint32_t traversal_size;
  size_t words() const {
    return (counts & 0xffff) + (counts >> 16 & 0xffff) + (counts >> 32 & 0xffff) + 2 * size_t{traversal_size};
  }
  size_t num_ops() const { return counts & 0xffff; }
  size_t num_in() const { return counts >> 16 & 0xffff; }
  size_t num_retain() const { return counts >> 32 & 0xffff; }
  bool has_traversal() const { return counts >> 48 & 1; }
};

// Keys longer than these limits are not cached (priced cold every time).
bool Representable(const Subgraph& s, const std::vector<TensorId>& in) {
  return s.ops.size() <= 0xffff && in.size() <= 0xffff && s.retain.size() <= 0xffff &&
         (!s.traversal || s.traversal->size() <= 0x7fffffff);
}

KeyShape ShapeOf(const Subgraph& s, const std::vector<TensorId>& in) {
  return {uint64_t{s.ops.size()} | uint64_t{in.size()} << 16 | uint64_t{s.retain.size()} << 32 |
              uint64_t{s.traversal ? 1u : 0u} << 48,
          static_cast<uint32_t>(s.traversal ? s.traversal->size() : 0)};
}

// Multiset equality of a query (any order) and `size` stored words.
bool SameSet(const std::vector<TensorId>& query, const uint32_t* stored) {
  const size_t size = query.size();
  if (size == 1) return static_cast<uint32_t>(query[0]) == Peek(stored[0]);
  for (TensorId t : query) {
    const uint32_t word = static_cast<uint32_t>(t);
    size_t in_query = 0, in_stored = 0;
    for (TensorId u : query) in_query += u == t;
    for (size_t i = 0; i < size; ++i) in_stored += Peek(stored[i]) == word;
    if (in_query != in_stored) return false;
  }
  return true;
}

}  // namespace

struct CostCache::Counters {
  // One writing thread each (relaxed load + store, no read-modify-write); read by stats().
  std::atomic<uint64_t> hits{0};
  std::atomic<uint64_t> misses{0};
  uint64_t thread_serial = 0;
  void Add(std::atomic<uint64_t>& counter) {
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
};

struct alignas(64) CostCache::Shard {
  static constexpr size_t kInlineWords = 6;
  // Two cache lines: header, report and short keys inline.
  struct alignas(64) Entry {
    uint64_t hash;
    Elements w, h, k;
    SubgraphReport report;
    uint64_t counts;  // KeyShape::counts
    uint32_t traversal_size;
    uint32_t key_offset;       // into `key_words` when the key is longer than kInlineWords
    uint32_t violation_index;  // into `violations` when verdict != kValid
    uint8_t verdict;
    // Ops as given, retained-in sorted, retain sorted, traversal as (low, high) word pairs.
    uint32_t inline_words[kInlineWords];
  };
  static_assert(sizeof(Entry) == 128);

  std::atomic<uint32_t> sequence{0};  // odd while a writer writes
  SpinLock writer;
  // Fixed at Init, never moved or freed until destruction: readers racing a writer read stale
  // words, not freed memory.
  Entry* entries = nullptr;
  void* entries_allocation = nullptr;
  size_t capacity = 0;
  // The index: entry index + 1 per slot, 0 when empty; linear probing; at most half full.
  // It grows with the entries (a compact index keeps hot slots in few cache lines); a grown
  // table is published whole and the old one retired, freed only at destruction (readers may
  // still be probing it; the retired tables sum to less than the live one).
  struct SlotTable {
    size_t mask;
    uint32_t slot[1];  // mask + 1 slots
  };
  std::atomic<SlotTable*> table{nullptr};
  std::vector<SlotTable*> retired;
  uint32_t* key_words = nullptr;
  size_t key_capacity = 0;
  // Written by writers only.
  std::atomic<uint32_t> count{0};
  size_t key_used = 0;
  std::vector<Violation> violations;  // of the failed entries; read under the writer lock
  std::vector<TensorId> sorted_scratch;

  void Init(size_t budget) {
    capacity = budget;
    table.store(NewTable(64), std::memory_order_relaxed);
    key_capacity = std::max<size_t>(4096, 32 * budget);
    // calloc: large blocks come zeroed from the system, so untouched capacity costs no memory.
    entries_allocation = std::calloc(1, capacity * sizeof(Entry) + 64);
    key_words = static_cast<uint32_t*>(std::calloc(key_capacity, sizeof(uint32_t)));
    if (!entries_allocation || !key_words) throw std::bad_alloc();
    const uintptr_t raw = reinterpret_cast<uintptr_t>(entries_allocation);
    entries = reinterpret_cast<Entry*>((raw + 63) & ~uintptr_t{63});
  }
  ~Shard() {
    std::free(entries_allocation);
    std::free(table.load(std::memory_order_relaxed));
    for (SlotTable* t : retired) std::free(t);
    std::free(key_words);
  }
  static SlotTable* NewTable(size_t slot_count) {
    void* memory = std::calloc(1, sizeof(SlotTable) + slot_count * sizeof(uint32_t));
    if (!memory) throw std::bad_alloc();
    SlotTable* t = static_cast<SlotTable*>(memory);
    t->mask = slot_count - 1;
    return t;
  }
  static void Place(SlotTable* t, uint64_t hash, uint32_t index) {
    size_t i = hash & t->mask;
    while (t->slot[i] != 0) i = (i + 1) & t->mask;
    Store(t->slot[i], index + 1);
  }

  // The entry's key words, or null when the stored location is out of range (a torn read).
  const uint32_t* Words(const Entry& e, size_t words) const {
    if (words <= kInlineWords) return e.inline_words;
    const size_t offset = Load(e.key_offset);
    return offset + words <= key_capacity ? key_words + offset : nullptr;
  }

  bool Matches(const Entry& e, const Subgraph& s, const std::vector<TensorId>& in,
               const KeyShape& q) const {
    const uint64_t difference =
        (Load(e.counts) ^ q.counts) | (Load(e.traversal_size) ^ q.traversal_size) |
        static_cast<uint64_t>((Peek(e.w) ^ s.granularity.w) | (Peek(e.h) ^ s.granularity.h) |
                              (Peek(e.k) ^ s.granularity.k));
    if (difference != 0) return false;
    const uint32_t* words = Words(e, q.words());
    if (words == nullptr) return false;
    const size_t num_ops = q.num_ops(), num_in = q.num_in(), num_retain = q.num_retain();
    for (size_t i = 0; i < num_ops; ++i) {
      if (Peek(words[i]) != static_cast<uint32_t>(s.ops[i])) return false;
    }
    words += num_ops;
    if (num_in > 0 && !SameSet(in, words)) return false;
    words += num_in;
    if (num_retain > 0 && !SameSet(s.retain, words)) return false;
    words += num_retain;
    if (q.has_traversal()) {
      const std::vector<int64_t>& order = *s.traversal;
      for (size_t i = 0; i < q.traversal_size; ++i) {
        const uint64_t v = static_cast<uint64_t>(order[i]);
        if (Peek(words[2 * i]) != static_cast<uint32_t>(v) ||
            Peek(words[2 * i + 1]) != static_cast<uint32_t>(v >> 32)) {
          return false;
        }
      }
    }
    return true;
  }

  // The matching entry's index, or -1. Consistent only if no writer wrote meanwhile (the
  // caller checks the sequence, or holds the writer lock).
  int64_t Find(uint64_t hash, const Subgraph& s, const std::vector<TensorId>& in,
               const KeyShape& q) const {
    const SlotTable* t = table.load(std::memory_order_acquire);
    const size_t mask = t->mask;
    for (size_t i = hash & mask, probes = 0; probes <= mask; i = (i + 1) & mask, ++probes) {
      const uint32_t slot = Load(t->slot[i]);
      if (slot == 0 || slot > capacity) return -1;
      const Entry& e = entries[slot - 1];
      if (Peek(e.hash) == hash && Matches(e, s, in, q)) return slot - 1;
    }
    return -1;
  }

  enum class Outcome { kMiss, kValidHit, kFailedHit };

  // Lock-free read: on a valid hit, the report is copied into `report`.
  Outcome Read(uint64_t hash, const Subgraph& s, const std::vector<TensorId>& in,
               const KeyShape& q, SubgraphReport& report) const {
    for (int attempt = 0;; ++attempt) {
      const uint32_t before = sequence.load(std::memory_order_acquire);
      if (before & 1) {  // a writer is writing: wait for it
        if (attempt > 64) std::this_thread::yield();
        continue;
      }
      Outcome outcome = Outcome::kMiss;
      const int64_t index = Find(hash, s, in, q);
      if (index >= 0) {
        const Entry& e = entries[index];
        if (static_cast<Verdict>(Load(e.verdict)) == Verdict::kValid) {
          outcome = Outcome::kValidHit;
          report.latency = Peek(e.report.latency);
          report.compute_time = Peek(e.report.compute_time);
          report.memory_time = Peek(e.report.memory_time);
          report.peak_working_set = Peek(e.report.peak_working_set);
          report.tiles = Peek(e.report.tiles);
          report.k_steps = Peek(e.report.k_steps);
        } else {
          outcome = Outcome::kFailedHit;
        }
      }
      std::atomic_thread_fence(std::memory_order_acquire);
      if (sequence.load(std::memory_order_relaxed) == before) return outcome;
      if (attempt > 64) std::this_thread::yield();
    }
  }

  void BeginWrite() {
    sequence.store(sequence.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
  }
  void EndWrite() {
    sequence.store(sequence.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

  void FlushLocked() {  // under the writer lock, inside BeginWrite/EndWrite
    SlotTable* t = table.load(std::memory_order_relaxed);
    for (size_t i = 0; i <= t->mask; ++i) Store(t->slot[i], uint32_t{0});
    count.store(0, std::memory_order_relaxed);
    key_used = 0;
    violations.clear();
  }

  // Under the writer lock, when Find found nothing.
  void Insert(uint64_t hash, const Subgraph& s, const std::vector<TensorId>& in, const KeyShape& q,
              const SubgraphResult& result) {
    const size_t words = q.words();
    const bool spills = words > kInlineWords;
    if (spills && words > key_capacity) return;  // never fits: not cached
    BeginWrite();
    if (count.load(std::memory_order_relaxed) >= capacity || (spills && key_used + words > key_capacity)) {
      FlushLocked();  // generation flush
    }
    const uint32_t index = count.load(std::memory_order_relaxed);
    Entry& e = entries[index];
    Store(e.hash, hash);
    Store(e.w, s.granularity.w);
    Store(e.h, s.granularity.h);
    Store(e.k, s.granularity.k);
    Store(e.report.latency, result.report.latency);
    Store(e.report.compute_time, result.report.compute_time);
    Store(e.report.memory_time, result.report.memory_time);
    Store(e.report.peak_working_set, result.report.peak_working_set);
    Store(e.report.tiles, result.report.tiles);
    Store(e.report.k_steps, result.report.k_steps);
    Store(e.counts, q.counts);
    Store(e.traversal_size, q.traversal_size);
    Store(e.verdict, static_cast<uint8_t>(result.verdict));
    uint32_t violation_index = 0;
    if (!result.ok()) {
      violation_index = static_cast<uint32_t>(violations.size());
      violations.push_back(result.violation);
    }
    Store(e.violation_index, violation_index);
    uint32_t* out = e.inline_words;
    if (spills) {
      Store(e.key_offset, static_cast<uint32_t>(key_used));
      out = key_words + key_used;
      key_used += words;
    }
    for (OpId op : s.ops) Store(*out++, static_cast<uint32_t>(op));
    for (const std::vector<TensorId>* set : {&in, &s.retain}) {
      sorted_scratch.assign(set->begin(), set->end());
      std::sort(sorted_scratch.begin(), sorted_scratch.end());
      for (TensorId t : sorted_scratch) Store(*out++, static_cast<uint32_t>(t));
    }
    if (s.traversal) {
      for (int64_t v : *s.traversal) {
        Store(*out++, static_cast<uint32_t>(static_cast<uint64_t>(v)));
        Store(*out++, static_cast<uint32_t>(static_cast<uint64_t>(v) >> 32));
      }
    }
    SlotTable* t = table.load(std::memory_order_relaxed);
    if (2 * (size_t{index} + 1) > t->mask + 1) {  // grow: a new table, filled, then published
      SlotTable* grown = NewTable(2 * (t->mask + 1));
      for (uint32_t j = 0; j < index; ++j) Place(grown, entries[j].hash, j);
      retired.push_back(t);
      t = grown;
      table.store(grown, std::memory_order_release);
    }
    Place(t, hash, index);
    count.store(index + 1, std::memory_order_relaxed);
    EndWrite();
  }
};

CostCache::CostCache(std::size_t max_entries)
    : entries_per_shard_(std::max<std::size_t>(1, max_entries / kShards)),
      shards_(new Shard[kShards]),
      instance_id_(next_instance_id.fetch_add(1, std::memory_order_relaxed)) {
  for (std::size_t i = 0; i < kShards; ++i) shards_[i].Init(entries_per_shard_);
}

CostCache::~CostCache() = default;

namespace {
// This thread's counters of the caches it used most recently, most recent first.
struct RecentCounters {
  uint64_t cache_id = 0;
  void* counters = nullptr;
};
thread_local RecentCounters recent_counters[4];
thread_local unsigned recent_victim = 0;
}  // namespace

// The common case (the same cache as last time) inline; the rest out of line.
inline CostCache::Counters& CostCache::ThreadCounters() {
  if (recent_counters[0].cache_id == instance_id_) [[likely]] {
    return *static_cast<Counters*>(recent_counters[0].counters);
  }
  return ThreadCountersSlow();
}

CostCache::Counters& CostCache::ThreadCountersSlow() {
  for (RecentCounters& r : recent_counters) {
    if (r.cache_id == instance_id_) {
      std::swap(r, recent_counters[0]);
      return *static_cast<Counters*>(recent_counters[0].counters);
    }
  }
  const uint64_t serial = ThreadSerial();
  std::lock_guard lock(counters_mutex_);
  Counters* mine = nullptr;
  for (const auto& c : counters_) {
    if (c->thread_serial == serial) mine = c.get();
  }
  if (mine == nullptr) {
    counters_.push_back(std::make_unique<Counters>());
    mine = counters_.back().get();
    mine->thread_serial = serial;
  }
  recent_counters[1 + recent_victim++ % 3] = recent_counters[0];
  recent_counters[0] = {instance_id_, mine};
  return *mine;
}

SubgraphResult CostCache::LookupOrCompute(const Problem& problem, const Subgraph& subgraph,
                                          const std::vector<TensorId>& retained_in) {
  SubgraphResult result;
  LookupOrCompute(problem, subgraph, retained_in, result);
  return result;
}

void CostCache::LookupOrCompute(const Problem& problem, const Subgraph& subgraph,
                                const std::vector<TensorId>& retained_in, SubgraphResult& result) {
  Counters& counters = ThreadCounters();
  const Problem* owner = owner_.load(std::memory_order_relaxed);
  if (owner != &problem) {
    if (owner == nullptr) owner_.compare_exchange_strong(owner, &problem);
    if (owner_.load(std::memory_order_relaxed) != &problem || !Representable(subgraph, retained_in)) {
      counters.Add(counters.misses);
      result = CostSubgraph(problem, subgraph, retained_in);
      return;
    }
  } else if (!Representable(subgraph, retained_in)) [[unlikely]] {
    counters.Add(counters.misses);
    result = CostSubgraph(problem, subgraph, retained_in);
    return;
  }
  const KeyShape shape = ShapeOf(subgraph, retained_in);
  const uint64_t hash = HashKey(subgraph, retained_in);
  Shard& shard = shards_[hash >> 60];
  const Shard::Outcome outcome = shard.Read(hash, subgraph, retained_in, shape, result.report);
  if (outcome == Shard::Outcome::kValidHit) {
    counters.Add(counters.hits);
    result.verdict = Verdict::kValid;
    result.violation.rule.clear();
    result.violation.detail.clear();
    result.violation.subgraph = -1;
    return;
  }
  if (outcome == Shard::Outcome::kFailedHit) {  // the violation strings are read under the lock
    std::lock_guard lock(shard.writer);
    const int64_t index = shard.Find(hash, subgraph, retained_in, shape);
    if (index >= 0) {
      const Shard::Entry& e = shard.entries[index];
      counters.Add(counters.hits);
      result.verdict = static_cast<Verdict>(e.verdict);
      result.report = e.report;
      result.violation = shard.violations[e.violation_index];
      return;
    }
  }
  counters.Add(counters.misses);
  // Priced outside the lock: other threads keep using the shard meanwhile.
  result = CostSubgraph(problem, subgraph, retained_in);
  std::lock_guard lock(shard.writer);
  if (shard.Find(hash, subgraph, retained_in, shape) < 0) {  // another thread may have raced us
    shard.Insert(hash, subgraph, retained_in, shape, result);
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
  {
    std::lock_guard lock(counters_mutex_);
    for (const auto& c : counters_) {
      stats.hits += c->hits.load(std::memory_order_relaxed);
      stats.misses += c->misses.load(std::memory_order_relaxed);
    }
  }
  for (std::size_t i = 0; i < kShards; ++i) {
    stats.entries += shards_[i].count.load(std::memory_order_relaxed);
  }
  return stats;
}

void CostCache::Clear() {
  for (std::size_t i = 0; i < kShards; ++i) {
    Shard& shard = shards_[i];
    std::lock_guard lock(shard.writer);
    shard.BeginWrite();
    shard.FlushLocked();
    shard.EndWrite();
  }
  {
    std::lock_guard lock(counters_mutex_);
    for (const auto& c : counters_) {
      c->hits.store(0, std::memory_order_relaxed);
      c->misses.store(0, std::memory_order_relaxed);
    }
  }
  owner_.store(nullptr, std::memory_order_relaxed);
  // Not concurrent with users of the cache (see the header): nobody holds the old facts.
  std::lock_guard lock(flat_mutex_);
  flat_.store(nullptr, std::memory_order_release);
  flat_storage_.reset();
}

}  // namespace annealer
