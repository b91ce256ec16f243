// See cost_cache.h for the levels a lookup tries and why; the keys themselves are cache_keys.h's.
#include "eval/cost/cost_cache.h"

#include <algorithm>
#include <cassert>
#include <array>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>

#include "eval/cost/hash_mix.h"
#include "eval/cost/subgraph_cost.h"
#include "eval/model/subgraph_structure.h"

namespace annealer {

namespace {

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

// Odd multipliers for the front key's words (splitmix64 outputs).
constexpr std::array<uint64_t, 8> kMultipliers = [] {
  std::array<uint64_t, 8> m{};
  uint64_t x = 0x2545f4914f6cdd1dULL;
  for (uint64_t& v : m) {
    x += kGoldenGamma;
    v = MixBits(x) | 1;
  }
  return m;
}();

// The context of a small raster subgraph packed in eight words, the front tables' key:
//   word 0: present bit 63 | ops.size() | retained_in.size() << 16 | retain.size() << 32
//   word 1: w | h << 21 | k << 42
//   words 2-7: ops, sorted retained_in, sorted retain, two 32-bit ids per word, zero-padded.
// Fits when the three lists hold at most 12 ids, every side is in [0, 2^21) and there is no
// explicit traversal; other contexts skip the front tables.
}  // namespace

struct CostCache::FrontKey {
  static constexpr int kWords = 8;
  static constexpr size_t kMaxIds = 2 * (kWords - 2);
  static constexpr Elements kMaxSide = Elements{1} << 21;
  alignas(64) std::array<uint64_t, kWords> words;

  bool Build(const Subgraph& subgraph, const std::vector<TensorId>& retained_in) {
    const size_t num_ops = subgraph.ops.size(), num_in = retained_in.size(),
                 num_retain = subgraph.retain.size();
    const Granularity& g = subgraph.granularity;
    if (subgraph.traversal || num_ops + num_in + num_retain > kMaxIds || g.w < 0 ||
        g.w >= kMaxSide || g.h < 0 || g.h >= kMaxSide || g.k < 0 || g.k >= kMaxSide) {
      return false;
    }
    words[0] = uint64_t{1} << 63 | num_ops | num_in << 16 | num_retain << 32;
    words[1] = static_cast<uint64_t>(g.w) | static_cast<uint64_t>(g.h) << 21 |
               static_cast<uint64_t>(g.k) << 42;
    for (int i = 2; i < kWords; ++i) words[i] = 0;
    size_t n = 0;
    for (OpId op : subgraph.ops) Put(n++, op);
    PutSorted(retained_in, n);
    PutSorted(subgraph.retain, n);
    return true;
  }

  // Word by word with an early exit: std::array's == calls memcmp, and a branch-free loop is
  // vectorised into 16-byte loads of a key just written in 8-byte stores, which stalls store
  // forwarding (measured: half the lookup's time).
  bool operator==(const FrontKey& other) const {
    for (int i = 0; i < kWords; ++i) {
      if (words[i] != other.words[i]) return false;
    }
    return true;
  }

  // Independent multiplies summed (no serial chain, no finalizer): the front tables index by
  // the top bits, where every bit of every word has reached. Matches compare the full key.
  uint64_t Hash() const {
    uint64_t h = 0;
    for (int i = 0; i < kWords; ++i) h += words[i] * kMultipliers[i];
    return h;
  }

 private:
  // Id n goes to the low or high half of word 2 + n / 2. Written in place with scalar
  // shifts: staging the ids in a 32-bit array and packing it makes the compiler reload 4-byte
  // stores as 16-byte vectors, which stalls store forwarding.
  void Put(size_t n, int32_t id) {
    words[2 + n / 2] |= static_cast<uint64_t>(static_cast<uint32_t>(id)) << (32 * (n & 1));
  }
  // Appends `set` sorted (insertion sort: retained sets hold a handful of tensors).
  void PutSorted(const std::vector<TensorId>& set, size_t& n) {
    if (set.size() == 1) {
      Put(n++, set[0]);
      return;
    }
    uint32_t sorted[kMaxIds];
    size_t size = 0;
    for (TensorId t : set) {
      size_t j = size++;
      for (; j > 0 && sorted[j - 1] > static_cast<uint32_t>(t); --j) sorted[j] = sorted[j - 1];
      sorted[j] = static_cast<uint32_t>(t);
    }
    for (size_t i = 0; i < size; ++i) Put(n++, static_cast<int32_t>(sorted[i]));
  }
};

namespace {

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

namespace {

// A shape's record in a shard's arena, in consecutive words: this header (the key's length and
// the verdict, then the report), then the key's words.
struct ShapeRecord {
  uint64_t words;  // the key's length
  Verdict verdict;
  SubgraphReport report;
  const uint64_t* key() const { return reinterpret_cast<const uint64_t*>(this + 1); }
  bool Matches(const std::vector<uint64_t>& other) const {
    return words == other.size() && std::memcmp(key(), other.data(), words * sizeof(uint64_t)) == 0;
  }
};
static_assert(sizeof(ShapeRecord) % sizeof(uint64_t) == 0 && alignof(ShapeRecord) <= alignof(uint64_t));
static_assert(std::is_trivially_copyable_v<ShapeRecord>);
constexpr size_t kShapeHeaderWords = sizeof(ShapeRecord) / sizeof(uint64_t);

// A shard's shape records, appended into blocks of words that a flush keeps for the next
// generation (no allocation per shape, none freed per flush). A record never spans two blocks;
// one longer than a block gets a block of its own.
class ShapeArena {
 public:
  const ShapeRecord* Add(const std::vector<uint64_t>& key, Verdict verdict, const SubgraphReport& report) {
    const size_t need = kShapeHeaderWords + key.size();
    while (current_ < blocks_.size() && fill_ + need > blocks_[current_].size) {
      ++current_;
      fill_ = 0;
    }
    if (current_ == blocks_.size()) {
      const size_t size = std::max(kBlockWords, need);
      blocks_.push_back({std::make_unique_for_overwrite<uint64_t[]>(size), size});  // no zeroing: every word is written before it is read
      fill_ = 0;
    }
    uint64_t* at = blocks_[current_].words.get() + fill_;
    fill_ += need;
    ShapeRecord header{key.size(), verdict, report};
    std::memcpy(at, &header, sizeof(header));
    std::memcpy(at + kShapeHeaderWords, key.data(), key.size() * sizeof(uint64_t));
    return reinterpret_cast<const ShapeRecord*>(at);
  }
  void Clear() {
    current_ = 0;
    fill_ = 0;
  }

 private:
  static constexpr size_t kBlockWords = size_t{1} << 15;  // 256 KB
  struct Block {
    std::unique_ptr<uint64_t[]> words;
    size_t size;
  };
  std::vector<Block> blocks_;
  size_t current_ = 0;  // the block being filled
  size_t fill_ = 0;     // words used in it
};

// Open addressing, linear probing, over (hash, record) slots: a probe reads a record only when
// the whole hash matches, and goes from the slot straight to the record. Never deleted from (a
// flush clears everything), so probing needs no tombstones. Kept at most half full.
// Find, Add and Clear run under the shard's lock. Prefetch runs without it: it only reads the
// current table's slots (atomics, relaxed: a torn or stale pair only misdirects a prefetch) and
// issues prefetches, which never fault. So that it never reads freed memory, a table replaced
// by a larger one is kept until the index is destroyed (together they are at most as large as
// the current one).
class ShapeSlots {
 public:
  const ShapeRecord* Find(uint64_t hash, const std::vector<uint64_t>& key) const {
    const Table* table = table_.load(std::memory_order_relaxed);
    if (table == nullptr) return nullptr;
    for (size_t i = hash & table->mask;; i = (i + 1) & table->mask) {
      const Slot& slot = table->slots[i];
      const ShapeRecord* record = slot.record.load(std::memory_order_relaxed);
      if (record == nullptr) return nullptr;
      if (slot.hash.load(std::memory_order_relaxed) == hash && record->Matches(key)) return record;
    }
  }
  void Add(uint64_t hash, const ShapeRecord* record) {
    const Table* table = table_.load(std::memory_order_relaxed);
    const size_t size = table == nullptr ? 0 : table->mask + 1;
    if (2 * (count_ + 1) > size) {
      auto grown = std::make_unique<Table>(std::max<size_t>(64, 2 * size));
      if (table != nullptr) {
        for (size_t i = 0; i < size; ++i) {
          const ShapeRecord* r = table->slots[i].record.load(std::memory_order_relaxed);
          if (r != nullptr) Place(*grown, table->slots[i].hash.load(std::memory_order_relaxed), r);
        }
      }
      // Published with release: an unlocked reader that sees the new table sees its slots.
      table_.store(grown.get(), std::memory_order_release);
      tables_.push_back(std::move(grown));
    }
    Place(*tables_.back(), hash, record);
    ++count_;
  }
  void Clear() {
    if (const Table* table = table_.load(std::memory_order_relaxed)) {
      for (size_t i = 0; i <= table->mask; ++i) {
        table->slots[i].record.store(nullptr, std::memory_order_relaxed);
        table->slots[i].hash.store(0, std::memory_order_relaxed);
      }
    }
    count_ = 0;
  }
  // Without the shard's lock (see above): prefetches `hash`'s first slot when `key_words` is 0;
  // else reads the slots from there on and prefetches the lines of the first record whose hash
  // matches, as long as a record of a `key_words`-word key (what Find will read to compare).
  void Prefetch(uint64_t hash, size_t key_words) const {
    const Table* table = table_.load(std::memory_order_acquire);
    if (table == nullptr) return;
    size_t i = hash & table->mask;
    if (key_words == 0) {
      __builtin_prefetch(&table->slots[i]);
      return;
    }
    for (int probes = 0; probes < 8; ++probes, i = (i + 1) & table->mask) {
      const Slot& slot = table->slots[i];
      const ShapeRecord* record = slot.record.load(std::memory_order_relaxed);
      if (record == nullptr) return;
      if (slot.hash.load(std::memory_order_relaxed) == hash) {
        const char* begin = reinterpret_cast<const char*>(record);
        // (At most 16 lines: a longer key's compare streams, and the hardware follows it.)
        const char* end = reinterpret_cast<const char*>(record->key() + std::min<size_t>(key_words, 120));
        for (const char* line = begin; line < end; line += 64) __builtin_prefetch(line);
        __builtin_prefetch(end - 1);  // the last line, when the record does not start on a line
        return;
      }
    }
  }

 private:
  struct Slot {
    std::atomic<uint64_t> hash{0};
    std::atomic<const ShapeRecord*> record{nullptr};  // null: empty
  };
  struct Table {
    explicit Table(size_t size) : mask(size - 1), slots(new Slot[size]) {}
    const size_t mask;
    const std::unique_ptr<Slot[]> slots;
  };
  static void Place(Table& table, uint64_t hash, const ShapeRecord* record) {
    size_t i = hash & table.mask;
    while (table.slots[i].record.load(std::memory_order_relaxed) != nullptr) i = (i + 1) & table.mask;
    table.slots[i].hash.store(hash, std::memory_order_relaxed);
    table.slots[i].record.store(record, std::memory_order_relaxed);
  }
  std::atomic<const Table*> table_{nullptr};
  std::vector<std::unique_ptr<Table>> tables_;  // the current one last
  size_t count_ = 0;
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

  // Open addressing, linear probing: per slot, the entry's hash's top 32 bits << 32 | entry
  // index + 1, 0 when empty; a probe reads an entry only when those bits match (the entries are
  // large and scattered: reading each probed one was a cache miss per probe). Never deleted
  // from (a flush clears everything), so probing needs no tombstones. Kept at most half full.
  struct SlotIndex {
    std::vector<uint64_t> slots;

    static uint64_t Tag(uint64_t hash) { return hash & ~uint64_t{0xffffffff}; }

    // The index of the first entry with this hash that `matches`, or -1.
    template <typename Matches>
    int64_t Find(uint64_t hash, const Matches& matches) const {
      if (slots.empty()) return -1;
      const size_t mask = slots.size() - 1;
      const uint64_t tag = Tag(hash);
      for (size_t i = hash & mask;; i = (i + 1) & mask) {
        const uint64_t slot = slots[i];
        if (slot == 0) return -1;
        const uint32_t entry = static_cast<uint32_t>(slot) - 1;
        if (Tag(slot) == tag && matches(entry)) return entry;
      }
    }
    // Adds entry `count - 1` (the newest of `count`), growing when more than half full;
    // hash_of(i) is entry i's hash.
    template <typename HashOf>
    void Add(size_t count, const HashOf& hash_of) {
      if (2 * count > slots.size()) {
        slots.assign(std::max<size_t>(64, 2 * slots.size()), 0);
        for (uint32_t i = 0; i < count; ++i) Place(hash_of(i), i);
      } else {
        Place(hash_of(count - 1), static_cast<uint32_t>(count - 1));
      }
    }
    void Clear() { std::fill(slots.begin(), slots.end(), 0); }

   private:
    void Place(uint64_t hash, uint32_t entry_index) {
      const size_t mask = slots.size() - 1;
      size_t i = hash & mask;
      while (slots[i] != 0) i = (i + 1) & mask;
      slots[i] = Tag(hash) | (uint64_t{entry_index} + 1);
    }
  };

  SpinLock mutex;
  std::vector<Entry> entries;
  std::vector<Violation> violations;  // of the failed entries
  SlotIndex index;

  const Entry* Find(uint64_t hash, const Problem& p, const Subgraph& s,
                    const std::vector<TensorId>& in) const {
    const int64_t i = index.Find(hash, [&](uint32_t e) {
      return entries[e].hash == hash && entries[e].Matches(p, s, in);
    });
    return i < 0 ? nullptr : &entries[i];
  }

  // The shapes of priced contexts (see BuildShapeKey): a valid one answers for every context of
  // that shape; a failed one only says that such a context fails (the words of a violation
  // name ids). Each is one record in the shard's arena (ShapeArena): its verdict and report,
  // then its key's words, so that a hit reads one run of consecutive lines after its slot (a
  // key kept in its own heap block was a third dependent miss per hit, and a malloc per shape
  // priced). Indexed by ShapeSlots.
  ShapeArena shape_arena;
  ShapeSlots shape_index;
  size_t shape_count = 0;

  const ShapeRecord* FindShape(uint64_t hash, const std::vector<uint64_t>& key) const {
    return shape_index.Find(hash, key);
  }

  // Both kinds of entries share the shard's budget; a full shard is emptied whole.
  void FlushIfFull(size_t budget) {
    if (entries.size() + shape_count >= budget) Clear();
  }
  void Clear() {
    entries.clear();
    violations.clear();
    index.Clear();
    shape_arena.Clear();
    shape_index.Clear();
    shape_count = 0;
  }

  void InsertShape(uint64_t hash, const std::vector<uint64_t>& key, Verdict verdict,
                   const SubgraphReport& report, size_t budget) {
    FlushIfFull(budget);
    const ShapeRecord* record = shape_arena.Add(key, verdict, report);
    shape_index.Add(hash, record);
    ++shape_count;
  }

  void Insert(Entry entry, const Violation& violation, size_t budget) {
    FlushIfFull(budget);
    if (entry.verdict != Verdict::kValid) {
      entry.violation_index = static_cast<int32_t>(violations.size());
      violations.push_back(violation);
    }
    entries.push_back(std::move(entry));
    index.Add(entries.size(), [&](uint32_t i) { return entries[i].hash; });
  }
};

struct alignas(64) CostCache::CounterBlock {
  std::thread::id owner;
  std::atomic<uint64_t> hits{0};
  std::atomic<uint64_t> misses{0};
  std::atomic<uint64_t> shape_hits{0};
  static void Count(std::atomic<uint64_t>& counter) {  // the owner is the only writer
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
};

// A thread's table of recent contexts keyed by words, valid and failing: the ids of contexts
// the front table cannot key (an explicit traversal, more than 12 ids; see BuildIdKey), which
// the evaluator asks for again and again (a worker prices the same few hundred contexts);
// answering them here takes no lock and reads no line another core writes. (A second such
// table of recent shapes stood before the shared shapes until speed round 6: on ResNet-50 it
// answered 18 % of the shape lookups, each of the others copied a key of ~43 words into its
// 2 MB ring, and a hit read as many lines as a shared one: a third of the last-level misses
// per move.) Two-way sets; each key (its words, the traversal's included) is kept whole, so a
// hash collision is never an answer, in a ring of words: an entry whose words were overwritten
// since is stale. Keys longer than kMaxKeyWords are not
// kept. Bound like the front table it belongs to (one cache, one problem): a rebinding bumps
// `epoch`, and entries of another epoch are empty.
struct CostCache::WordTable {
  static constexpr size_t kMaxKeyWords = 1024;
  WordTable(int bits, size_t words_in_ring)
      : set_bits(bits), sets(size_t{1} << bits), ring_words(words_in_ring) {}
  const int set_bits;
  const size_t sets;
  const size_t ring_words;  // a power of two
  // A set's two ways in one line, most recent first; each names its record in the ring: the
  // verdict and report, then the key's words (ShapeRecord's layout). A lookup reads the set's
  // line, then (on a hash match) one run of lines in the ring: two waits, where an entry array
  // between them (hashes, then an entry holding the report and the key's place, then the key)
  // made three.
  struct Way {
    uint64_t hash = 0;
    uint64_t position = 0;  // of the record's first word in the ring (a running count)
    uint32_t words = 0;     // of the key
    uint32_t epoch = 0;     // 0: empty
  };
  struct alignas(64) Set {
    Way way[2];
  };
  std::unique_ptr<Set[]> table;
  std::unique_ptr<uint64_t[]> ring;
  uint64_t written = 0;  // words written to the ring so far
  uint32_t epoch = 0;

  void Bind() {
    if (!table) {
      table.reset(new Set[sets]);
      ring = std::make_unique_for_overwrite<uint64_t[]>(ring_words);
    }
    if (++epoch == 0) {  // wrapped: clear for real
      for (size_t i = 0; i < sets; ++i) table[i] = Set{};
      epoch = 1;
    }
  }

  const ShapeRecord* Match(const Way& way, uint64_t hash, const std::vector<uint64_t>& key) const {
    if (way.epoch != epoch || way.hash != hash || way.words != key.size() || written - way.position > ring_words) {
      return nullptr;
    }
    const auto* record = reinterpret_cast<const ShapeRecord*>(&ring[way.position & (ring_words - 1)]);
    const uint64_t* stored = record->key();
    for (size_t i = 0; i < key.size(); ++i) {
      if (stored[i] != key[i]) return nullptr;
    }
    return record;
  }

  const ShapeRecord* Find(uint64_t hash, const std::vector<uint64_t>& key) const {
    const Set& set = table[hash >> (64 - set_bits)];
    if (const ShapeRecord* record = Match(set.way[0], hash, key)) return record;
    return Match(set.way[1], hash, key);
  }

  void Insert(uint64_t hash, const std::vector<uint64_t>& key, Verdict verdict, const SubgraphReport& report) {
    const size_t words = key.size();
    if (words > kMaxKeyWords) return;
    const size_t need = kShapeHeaderWords + words;
    // A record is stored in one piece: one that would run past the ring's end starts at its
    // beginning (the words skipped count as written).
    if ((written & (ring_words - 1)) + need > ring_words) written = (written | (ring_words - 1)) + 1;
    uint64_t* at = &ring[written & (ring_words - 1)];
    const ShapeRecord header{words, verdict, report};
    std::memcpy(at, &header, sizeof(header));
    std::copy(key.begin(), key.end(), at + kShapeHeaderWords);
    Set& set = table[hash >> (64 - set_bits)];
    set.way[1] = set.way[0];
    set.way[0] = {hash, written, static_cast<uint32_t>(words), epoch};
    written += need;
  }
};

// A thread's front table: two-way set-associative, valid results only, keyed by FrontKey and
// bound to one cache (by serial) and one problem at a time. 128-byte entries, 2048 of them.
struct CostCache::FrontTable {
  struct Entry {
    FrontKey key;  // words[0] == 0: empty (a built key has its present bit)
    SubgraphReport report;
    SmallSequenceFacts facts;
  };
  static_assert(sizeof(Entry) == 128, "two cache lines per entry");
  static constexpr int kSetBits = 10;
  static constexpr size_t kSets = size_t{1} << kSetBits;

  uint64_t serial = 0;  // 0: bound to no cache
  const Problem* problem = nullptr;
  CounterBlock* counters = nullptr;  // the bound cache's block for this thread
  std::unique_ptr<Entry[]> entries;  // set s holds entries 2s and 2s + 1, most recent first
  // Bound with this table, allocated on first use: recent contexts the front table cannot key
  // (4,096 entries in 2,048 sets, 512 KB of records).
  std::unique_ptr<WordTable> ids;
  WordTable& Ids() {
    if (!ids) {
      ids = std::make_unique<WordTable>(11, size_t{1} << 16);
      ids->Bind();
    }
    return *ids;
  }

  void Bind(uint64_t cache_serial, const Problem& p, CostCache::CounterBlock* block) {
    if (!entries) entries.reset(new Entry[2 * kSets]);
    if (ids) ids->Bind();
    for (size_t i = 0; i < 2 * kSets; ++i) entries[i].key.words[0] = 0;
    serial = cache_serial;
    problem = &p;
    counters = block;
  }

  void Prefetch(uint64_t hash) const {
    const Entry* set = &entries[2 * (hash >> (64 - kSetBits))];
    __builtin_prefetch(set);
    __builtin_prefetch(reinterpret_cast<const char*>(set) + 64);
  }

  const Entry* Find(const FrontKey& key, uint64_t hash) const {
    const Entry* set = &entries[2 * (hash >> (64 - kSetBits))];
    if (set[0].key == key) return &set[0];
    if (set[1].key == key) return &set[1];
    return nullptr;
  }

  void Insert(const FrontKey& key, uint64_t hash, const SubgraphReport& report,
              const SmallSequenceFacts& facts) {
    Entry* set = &entries[2 * (hash >> (64 - kSetBits))];
    set[1] = set[0];
    set[0].key = key;
    set[0].report = report;
    set[0].facts = facts;
  }
};

thread_local CostCache::FrontTable CostCache::front_;

namespace {

std::atomic<uint64_t> next_serial{1};

uint64_t NewSerial() { return next_serial.fetch_add(1, std::memory_order_relaxed); }

}  // namespace

CostCache::CostCache(std::size_t max_entries)
    : entries_per_shard_(std::max<std::size_t>(1, max_entries / kShards)),
      shards_(new Shard[kShards]),
      serial_(NewSerial()) {}

CostCache::~CostCache() = default;

CostCache::CounterBlock* CostCache::RegisterCounterBlock() {
  std::lock_guard lock(counters_mutex_);
  const std::thread::id self = std::this_thread::get_id();
  for (const auto& block : counter_blocks_) {
    if (block->owner == self) return block.get();
  }
  counter_blocks_.push_back(std::make_unique<CounterBlock>());
  counter_blocks_.back()->owner = self;
  return counter_blocks_.back().get();
}

SubgraphResult CostCache::LookupOrCompute(const Problem& problem, const Subgraph& subgraph,
                                          const std::vector<TensorId>& retained_in) {
  SubgraphResult result;
  LookupOrCompute(problem, subgraph, retained_in, result);
  return result;
}

CostCache::FrontTable& CostCache::BoundFront(const Problem& problem) {
  FrontTable& local = front_;
  const uint64_t serial = serial_.load(std::memory_order_relaxed);
  if (local.serial != serial || local.problem != &problem) {
    local.Bind(serial, problem, RegisterCounterBlock());
  }
  return local;
}

namespace {

void MarkValid(SubgraphResult& result, const SubgraphReport& report) {
  result.verdict = Verdict::kValid;
  result.report = report;
  result.violation.rule.clear();
  result.violation.detail.clear();
  result.violation.subgraph = -1;
}

}  // namespace

bool CostCache::FrontHit(const FrontTable& local, const FrontKey& key, uint64_t front_hash,
                         SubgraphResult& result, SmallSequenceFacts* facts) {
  const FrontTable::Entry* e = local.Find(key, front_hash);
  if (e == nullptr) return false;
  if (facts) *facts = e->facts;
  CounterBlock::Count(local.counters->hits);
  MarkValid(result, e->report);
  return true;
}

void CostCache::LookupOrCompute(const Problem& problem, const Subgraph& subgraph,
                                const std::vector<TensorId>& retained_in, SubgraphResult& result) {
  FrontTable& local = BoundFront(problem);
  FrontKey key;
  if (key.Build(subgraph, retained_in)) {
    const uint64_t front_hash = key.Hash();
    if (!FrontHit(local, key, front_hash, result, nullptr)) {
      LookupBehindFront(local, problem, subgraph, retained_in, &key, front_hash, result, nullptr);
    }
  } else {
    LookupBehindFront(local, problem, subgraph, retained_in, nullptr, 0, result, nullptr);
  }
}

void CostCache::LookupOrComputeAll(const Problem& problem, const Schedule& schedule,
                                   std::vector<SubgraphResult>& results,
                                   std::vector<SmallSequenceFacts>& facts) {
  FrontTable& local = BoundFront(problem);
  const size_t n = schedule.subgraphs.size();
  if (results.size() < n) results.resize(n);
  if (facts.size() < n) facts.resize(n);
  // Pass 1: every key, its hash and a prefetch of its front set, so that pass 2's loads overlap
  // instead of waiting one by one (the sets are scattered over the table).
  thread_local std::vector<FrontKey> keys;
  thread_local std::vector<uint64_t> hashes;  // 0 for keys that do not fit the front table
  if (keys.size() < n) {
    keys.resize(n);
    hashes.resize(n);
  }
  static const std::vector<TensorId> kNothing;
  for (size_t i = 0; i < n; ++i) {
    const std::vector<TensorId>& in = i > 0 ? schedule.subgraphs[i - 1].retain : kNothing;
    hashes[i] = 0;
    if (keys[i].Build(schedule.subgraphs[i], in)) {
      hashes[i] = keys[i].Hash() | 1;  // odd: never 0 (the set index uses the top bits)
      local.Prefetch(hashes[i]);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const std::vector<TensorId>& in = i > 0 ? schedule.subgraphs[i - 1].retain : kNothing;
    if (hashes[i] == 0) {
      LookupBehindFront(local, problem, schedule.subgraphs[i], in, nullptr, 0, results[i], &facts[i]);
    } else if (!FrontHit(local, keys[i], hashes[i], results[i], &facts[i])) {
      LookupBehindFront(local, problem, schedule.subgraphs[i], in, &keys[i], hashes[i], results[i],
                        &facts[i]);
    }
  }
}

CostCache::ShapeAnswer CostCache::AnswerByShape(const Problem& problem,
                                                const Subgraph& subgraph,
                                                const std::vector<TensorId>& retained_in,
                                                SubgraphReport& report, SubgraphResult& priced_result,
                                                bool& priced, const ValidTicket* ticket,
                                                std::span<const uint64_t> traversal_words) {
  priced = false;
  thread_local std::vector<uint64_t> built_key;
  uint64_t shape_hash;
  const std::vector<uint64_t>* key = &built_key;
  if (ticket != nullptr) {
#ifndef NDEBUG
    {  // The caller's promise (see ValidTicket), checked in debug builds.
      std::vector<uint64_t> check;
      const bool has = ShapeKey(problem, subgraph, retained_in, check);
      assert(has == ticket->has_shape && (!has || check == ticket->key));
    }
#endif
    if (!ticket->has_shape) return ShapeAnswer::kNoShape;
    key = &ticket->key;
    shape_hash = ticket->hash;
  } else {
#ifndef NDEBUG
    if (!traversal_words.empty()) {  // the caller's promise, checked in debug builds
      std::vector<uint64_t> check;
      if (subgraph.traversal) AppendTraversalWords(*subgraph.traversal, check);
      assert(!subgraph.traversal || std::equal(check.begin(), check.end(), traversal_words.begin(), traversal_words.end()));
    }
#endif
    if (!ShapeKey(problem, subgraph, retained_in, built_key, traversal_words)) {
      return ShapeAnswer::kNoShape;
    }
    shape_hash = HashWords(built_key);
  }
  const std::vector<uint64_t>& shape_key = *key;
  Shard& shard = shards_[shape_hash >> 60];
  bool found = false;
  Verdict verdict = Verdict::kValid;
  {
    std::lock_guard lock(shard.mutex);
    if (const ShapeRecord* e = shard.FindShape(shape_hash, shape_key)) {
      found = true;
      verdict = e->verdict;
      report = e->report;
    }
  }
  if (!found) {
    // Priced outside the lock: other threads keep using the shard meanwhile. A pricing
    // cancelled by the stop test throws before anything is stored.
    priced_result = CostSubgraph(problem, subgraph, retained_in);
    priced = true;
    verdict = priced_result.verdict;
    report = priced_result.report;
    std::lock_guard lock(shard.mutex);
    if (!shard.FindShape(shape_hash, shape_key)) {
      shard.InsertShape(shape_hash, shape_key, verdict, report, entries_per_shard_);
    }
  }
  return verdict == Verdict::kValid ? ShapeAnswer::kValid : ShapeAnswer::kFails;
}

void CostCache::StoreFront(FrontTable& local, const Problem& problem, const Subgraph& subgraph,
                           const FrontKey* key, uint64_t front_hash, const SubgraphReport& report,
                           SmallSequenceFacts* facts) {
  SmallSequenceFacts derived;  // unknown
  if (key != nullptr) {
    // Op ids are in range (the context was priced valid), so the facts can be derived.
    if (const FlatProblem* flat = Flat(problem)) derived.Derive(*flat, subgraph);
    local.Insert(*key, front_hash, report, derived);
  }
  if (facts) *facts = derived;
}

void CostCache::LookupExact(FrontTable& local, const Problem& problem, const Subgraph& subgraph,
                            const std::vector<TensorId>& retained_in, bool known_to_fail,
                            SubgraphResult& result) {
  const uint64_t hash = HashExactKey(problem, subgraph, retained_in);
  Shard& shard = shards_[hash >> 60];
  {
    std::lock_guard lock(shard.mutex);
    if (const Shard::Entry* e = shard.Find(hash, problem, subgraph, retained_in)) {
      if (e->verdict == Verdict::kValid) {
        MarkValid(result, e->report);
      } else {
        result.verdict = e->verdict;
        result.report = e->report;
        result.violation = shard.violations[e->violation_index];
      }
      CounterBlock::Count(local.counters->hits);
      return;
    }
  }
  // A shape known to fail: re-derived cheaply when a rule checked before pricing fails (e.g.
  // V11), else priced.
  std::optional<SubgraphResult> failure;
  if (known_to_fail) failure = StructuralFailure(problem, subgraph, retained_in);
  if (failure) {
    result = std::move(*failure);
    CounterBlock::Count(local.counters->hits);
    CounterBlock::Count(local.counters->shape_hits);
  } else {
    CounterBlock::Count(local.counters->misses);
    result = CostSubgraph(problem, subgraph, retained_in);  // outside the lock
  }
  StoreExact(hash, problem, subgraph, retained_in, result);
}

void CostCache::StoreExact(uint64_t hash, const Problem& problem, const Subgraph& subgraph,
                           const std::vector<TensorId>& retained_in, const SubgraphResult& result) {
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
  Shard& shard = shards_[hash >> 60];
  std::lock_guard lock(shard.mutex);
  if (!shard.Find(hash, problem, subgraph, retained_in)) {  // another thread may have raced us
    shard.Insert(std::move(entry), result.violation, entries_per_shard_);
  }
}

void CostCache::LookupBehindFront(FrontTable& local, const Problem& problem,
                                  const Subgraph& subgraph, const std::vector<TensorId>& retained_in,
                                  const FrontKey* key, uint64_t front_hash, SubgraphResult& result,
                                  SmallSequenceFacts* facts) {
  if (key != nullptr) {
    ResolveBehindFront(local, problem, subgraph, retained_in, key, front_hash, result, facts);
    return;
  }
  // A context the front table cannot key: the thread's id table first (a valid entry answers;
  // a failing one lacks the violation's words).
  thread_local std::vector<uint64_t> id_key;
  // The key ends with the traversal's words, which a shape key ends with too (a miss builds one).
  const size_t traversal_at = BuildIdKey(subgraph, retained_in, id_key);
  const uint64_t id_hash = HashWords(id_key);
  WordTable& ids = local.Ids();
  const ShapeRecord* e = ids.Find(id_hash, id_key);
  if (e != nullptr && e->verdict == Verdict::kValid) {
    CounterBlock::Count(local.counters->hits);
    MarkValid(result, e->report);
    if (facts) *facts = {};
    return;
  }
  ResolveBehindFront(local, problem, subgraph, retained_in, nullptr, 0, result, facts,
                     std::span<const uint64_t>(id_key).subspan(traversal_at));
  if (e == nullptr) ids.Insert(id_hash, id_key, result.verdict, result.report);
}

void CostCache::ResolveBehindFront(FrontTable& local, const Problem& problem,
                                   const Subgraph& subgraph, const std::vector<TensorId>& retained_in,
                                   const FrontKey* key, uint64_t front_hash, SubgraphResult& result,
                                   SmallSequenceFacts* facts, std::span<const uint64_t> traversal_words) {
  SubgraphReport report;
  bool priced = false;
  const ShapeAnswer answer =
      AnswerByShape(problem, subgraph, retained_in, report, result, priced, nullptr, traversal_words);
  if (answer == ShapeAnswer::kValid) {
    if (priced) {
      CounterBlock::Count(local.counters->misses);
    } else {
      CounterBlock::Count(local.counters->hits);
      CounterBlock::Count(local.counters->shape_hits);
    }
    MarkValid(result, report);
    StoreFront(local, problem, subgraph, key, front_hash, report, facts);
    return;
  }
  if (answer == ShapeAnswer::kFails && priced) {
    // `result` holds the failure with its words: kept under the exact context for the next ask.
    CounterBlock::Count(local.counters->misses);
    StoreExact(HashExactKey(problem, subgraph, retained_in), problem, subgraph, retained_in, result);
    if (facts) *facts = {};
    return;
  }
  // No shape key, or a shape known to fail, whose words name ids: the exact table.
  LookupExact(local, problem, subgraph, retained_in, answer == ShapeAnswer::kFails, result);
  if (result.ok()) {
    StoreFront(local, problem, subgraph, key, front_hash, result.report, facts);
  } else if (facts) {
    *facts = {};
  }
}

bool CostCache::LookupValid(const Problem& problem, const Subgraph& subgraph,
                            const std::vector<TensorId>& retained_in, SubgraphReport& report,
                            const ValidTicket* ticket, const std::vector<uint64_t>* traversal_words) {
  FrontTable& local = BoundFront(problem);
  FrontKey key;
  if (key.Build(subgraph, retained_in)) {
    if (const FrontTable::Entry* e = local.Find(key, key.Hash())) {
      CounterBlock::Count(local.counters->hits);
      report = e->report;
      return true;
    }
  }
  return ResolveValid(local, problem, subgraph, retained_in, report, ticket,
                      traversal_words != nullptr ? std::span<const uint64_t>(*traversal_words) : std::span<const uint64_t>());
}

void CostCache::PrepareValid(const Problem& problem, const Subgraph& subgraph,
                             const std::vector<TensorId>& retained_in, ValidTicket& ticket,
                             const std::vector<uint64_t>* traversal_words) {
#ifndef NDEBUG
  if (traversal_words != nullptr) {  // the caller's promise, checked in debug builds
    std::vector<uint64_t> check;
    if (subgraph.traversal) AppendTraversalWords(*subgraph.traversal, check);
    assert(check == *traversal_words);
  }
#endif
  FrontTable& local = BoundFront(problem);
  FrontKey key;
  if (key.Build(subgraph, retained_in)) local.Prefetch(key.Hash());
  ticket.has_shape = ShapeKey(
      problem, subgraph, retained_in, ticket.key,
      traversal_words != nullptr ? std::span<const uint64_t>(*traversal_words) : std::span<const uint64_t>());
  if (!ticket.has_shape) return;
  ticket.hash = HashWords(ticket.key);
  shards_[ticket.hash >> 60].shape_index.Prefetch(ticket.hash, 0);
}

void CostCache::PrefetchRecord(const ValidTicket& ticket) const {
  if (ticket.has_shape) shards_[ticket.hash >> 60].shape_index.Prefetch(ticket.hash, ticket.key.size());
}

bool CostCache::ResolveValid(FrontTable& local, const Problem& problem, const Subgraph& subgraph,
                             const std::vector<TensorId>& retained_in, SubgraphReport& report,
                             const ValidTicket* ticket, std::span<const uint64_t> traversal_words) {
  thread_local SubgraphResult full;
  bool priced = false;
  ShapeAnswer answer;
  {
    // A failure priced here is kept by its shape only (verdict and report), and `full` is
    // dropped: its words are never read.
    const ViolationWordsOff no_words;
    answer = AnswerByShape(problem, subgraph, retained_in, report, full, priced, ticket, traversal_words);
  }
  if (answer == ShapeAnswer::kNoShape) {
    LookupExact(local, problem, subgraph, retained_in, false, full);
    report = full.report;
    return full.ok();
  }
  if (priced) {
    CounterBlock::Count(local.counters->misses);
  } else {
    CounterBlock::Count(local.counters->hits);
    CounterBlock::Count(local.counters->shape_hits);
  }
  return answer == ShapeAnswer::kValid;
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
    stats.entries += shard.entries.size();
    stats.shape_entries += shard.shape_count;
  }
  std::lock_guard lock(counters_mutex_);
  for (const auto& block : counter_blocks_) {
    stats.hits += block->hits.load(std::memory_order_relaxed);
    stats.misses += block->misses.load(std::memory_order_relaxed);
    stats.shape_hits += block->shape_hits.load(std::memory_order_relaxed);
  }
  return stats;
}

void CostCache::Clear() {
  for (std::size_t i = 0; i < kShards; ++i) {
    Shard& shard = shards_[i];
    std::lock_guard lock(shard.mutex);
    shard.Clear();
  }
  {
    std::lock_guard lock(counters_mutex_);
    counter_blocks_.clear();
  }
  // Every front table holds the old serial: each empties itself on its next use.
  serial_.store(NewSerial(), std::memory_order_relaxed);
  // Not concurrent with users of the cache (see the header): nobody holds the old facts.
  std::lock_guard lock(flat_mutex_);
  flat_.store(nullptr, std::memory_order_release);
  flat_storage_.reset();
}

}  // namespace annealer
