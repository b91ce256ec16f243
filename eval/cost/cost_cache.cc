#include "eval/cost/cost_cache.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <array>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>

#include "eval/cost/context_reuse.h"
#include "eval/cost/hash_mix.h"
#include "eval/cost/subgraph_cost.h"
#include "eval/model/subgraph_structure.h"

namespace annealer {

namespace {

uint64_t Mix(uint64_t x) { return SplitMix64(x); }

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

// Whether a context's counts and sides fit the shape key's header (a context that does not,
// e.g. a granularity side of 2^21 or more, which V2 rejects anyway, has no shape key).
bool ShapeKeyFits(const Subgraph& subgraph, const std::vector<TensorId>& retained_in) {
  const Granularity& g = subgraph.granularity;
  constexpr Elements kMaxSide = Elements{1} << 21;
  return subgraph.ops.size() < (size_t{1} << 24) && retained_in.size() < (size_t{1} << 16) &&
         subgraph.retain.size() < (size_t{1} << 16) && g.w >= 0 && g.w < kMaxSide && g.h >= 0 &&
         g.h < kMaxSide && g.k >= 0 && g.k < kMaxSide;
}

// Four independent multiply-add lanes (no serial chain through every word), then a
// finalizer. (A key's traversal is among its words: AppendTraversalWords.)
uint64_t HashWords(const std::vector<uint64_t>& words) {
  uint64_t lanes[4] = {words.size(), 0x9e3779b97f4a7c15ULL, 0xbf58476d1ce4e5b9ULL, 0x94d049bb133111ebULL};
  const size_t size = words.size();
  size_t i = 0;
  for (; i + 4 <= size; i += 4) {
    for (int j = 0; j < 4; ++j) lanes[j] = lanes[j] * kPrime + words[i + j];
  }
  for (; i < size; ++i) lanes[i & 3] = lanes[i & 3] * kPrime + words[i];
  return Mix(lanes[0] ^ Mix(lanes[1] ^ Mix(lanes[2] ^ Mix(lanes[3]))));
}

// Appends 32-bit fields two to a word (the last word zero-padded). Every list's length is in
// the key before it, so the packing is unambiguous.
class Packer {
 public:
  explicit Packer(std::vector<uint64_t>& key) : key_(key) {}
  ~Packer() { Flush(); }
  void Put(uint32_t field) {
    if (half_) {
      key_.back() |= static_cast<uint64_t>(field) << 32;
    } else {
      key_.push_back(field);
    }
    half_ = !half_;
  }
  void Flush() { half_ = false; }

 private:
  std::vector<uint64_t>& key_;
  bool half_ = false;
};

// A set's entries sorted (insertion sort: retained sets hold a handful of tensors), packed.
template <typename Map>
void PutSorted(const std::vector<TensorId>& set, Map map, Packer& packer) {
  uint32_t sorted[16];
  if (set.size() > 16) {
    std::vector<uint32_t> many;
    for (TensorId t : set) many.push_back(map(t));
    std::sort(many.begin(), many.end());
    for (uint32_t v : many) packer.Put(v);
    return;
  }
  size_t size = 0;
  for (TensorId t : set) {
    const uint32_t v = map(t);
    size_t j = size++;
    for (; j > 0 && sorted[j - 1] > v; --j) sorted[j] = sorted[j - 1];
    sorted[j] = v;
  }
  for (size_t i = 0; i < size; ++i) packer.Put(sorted[i]);
}

// Four words: op count | retained-in count << 24 | retain count << 40 (each count fits, see
// ShapeKeyFits); w | h << 21 | k << 42; the problem's address; the traversal's length + 1 (0
// for raster).
void AppendHeader(const Problem& problem, const Subgraph& subgraph,
                  const std::vector<TensorId>& retained_in, std::vector<uint64_t>& key) {
  const Granularity& g = subgraph.granularity;
  key.push_back(subgraph.ops.size() | static_cast<uint64_t>(retained_in.size()) << 24 |
                static_cast<uint64_t>(subgraph.retain.size()) << 40);
  key.push_back(static_cast<uint64_t>(g.w) | static_cast<uint64_t>(g.h) << 21 |
                static_cast<uint64_t>(g.k) << 42);
  key.push_back(reinterpret_cast<uintptr_t>(&problem));
  key.push_back(subgraph.traversal ? subgraph.traversal->size() + 1 : 0);
}

// Scratch of BuildShapeKey, one per thread.
struct ShapeScratch {
  std::vector<OpId> ops;         // the context's ops, sorted
  std::vector<TensorId> tensors; // every tensor it names, sorted, unique
  // Per op and per tensor of the problem: the local id in the context being keyed (only the
  // context's own entries are written, then read).
  std::vector<uint32_t> op_rank, tensor_local;
  // Per 64 ops and per 64 tensors of the problem: bits, all zero between keys (SortById).
  std::vector<uint64_t> op_bits, tensor_bits;
};

}  // namespace

bool SortById(std::vector<int32_t>& ids, std::vector<uint64_t>& bits) {
  if (ids.empty()) return false;
  size_t lo = bits.size(), hi = 0;
  bool repeated = false;
  for (const int32_t id : ids) {
    const size_t w = static_cast<size_t>(id) >> 6;
    const uint64_t bit = uint64_t{1} << (id & 63);
    repeated = repeated || (bits[w] & bit) != 0;
    bits[w] |= bit;
    lo = std::min(lo, w);
    hi = std::max(hi, w);
  }
  // No more distinct ids than ids: written over the list in place, then cut.
  size_t n = 0;
  for (size_t w = lo; w <= hi; ++w) {
    for (uint64_t x = bits[w]; x != 0; x &= x - 1) ids[n++] = static_cast<int32_t>(w * 64 + std::countr_zero(x));
    bits[w] = 0;
  }
  ids.resize(n);
  return repeated;
}

namespace {

// The shape key of a context whose ids are all in range and whose tensor sides are below
// 2^32 (false otherwise). Ranks keep the order of ids, so pricing the context and pricing its
// relabelled image run the same steps in the same order (sorts by op or tensor id included)
// and give bit-identical reports. Layout after the header: the number of tensors; per op, its
// rank | MatMul bit | input count | Layout bit, and its base cost; then, packed, every op's
// local input and output ids; the tensors' sides (width | height << 32); the sorted local
// retained sets.
bool BuildShapeKey(const Problem& problem, const Subgraph& subgraph,
                   const std::vector<TensorId>& retained_in, ShapeScratch& scratch,
                   std::vector<uint64_t>& key) {
  if (!ShapeKeyFits(subgraph, retained_in)) return false;
  const auto num_ops = static_cast<OpId>(problem.ops.size());
  const auto num_tensors = static_cast<TensorId>(problem.tensors.size());
  std::vector<OpId>& ops = scratch.ops;
  std::vector<TensorId>& tensors = scratch.tensors;
  ops.clear();
  tensors.clear();
  for (OpId op : subgraph.ops) {
    if (op < 0 || op >= num_ops) return false;
    ops.push_back(op);
    const Op& o = problem.ops[op];
    tensors.insert(tensors.end(), o.inputs.begin(), o.inputs.end());
    tensors.push_back(o.output);
  }
  for (const std::vector<TensorId>* set : {&retained_in, &subgraph.retain}) {
    for (TensorId t : *set) {
      if (t < 0 || t >= num_tensors) return false;
      tensors.push_back(t);
    }
  }
  // Ids in range (checked above for ops and the retained sets; the problem's own tensors are).
  scratch.op_bits.resize((static_cast<size_t>(num_ops) + 63) / 64);
  scratch.tensor_bits.resize((static_cast<size_t>(num_tensors) + 63) / 64);
  if (SortById(ops, scratch.op_bits)) {
    // An op listed twice stays twice (its rank is its last place), as the sort keeps it.
    ops.assign(subgraph.ops.begin(), subgraph.ops.end());
    std::sort(ops.begin(), ops.end());
  }
  SortById(tensors, scratch.tensor_bits);
  constexpr Elements kMaxSide = Elements{1} << 32;
  for (TensorId t : tensors) {
    const Tensor& tensor = problem.tensors[t];
    if (tensor.width < 0 || tensor.width >= kMaxSide || tensor.height < 0 || tensor.height >= kMaxSide) {
      return false;
    }
  }
  // Local ids by table (a binary search per id was most of the key's cost on large subgraphs).
  scratch.op_rank.resize(num_ops);
  scratch.tensor_local.resize(num_tensors);
  for (size_t i = 0; i < ops.size(); ++i) scratch.op_rank[ops[i]] = static_cast<uint32_t>(i);
  for (size_t i = 0; i < tensors.size(); ++i) scratch.tensor_local[tensors[i]] = static_cast<uint32_t>(i);
  auto local = [&](TensorId t) { return scratch.tensor_local[t]; };
  key.clear();
  AppendHeader(problem, subgraph, retained_in, key);
  key.push_back(tensors.size());
  for (OpId op : subgraph.ops) {
    const Op& o = problem.ops[op];
    const uint64_t rank = scratch.op_rank[op];
    // (The Layout bit sits at the top, so the words of MatMul and Pointwise ops are those
    // they had before Layout ops existed.)
    key.push_back(rank | static_cast<uint64_t>(o.kind == OpKind::MatMul) << 32 |
                  static_cast<uint64_t>(o.inputs.size()) << 33 |
                  static_cast<uint64_t>(o.kind == OpKind::Layout) << 63);
    uint64_t cost_bits;
    static_assert(sizeof(cost_bits) == sizeof(o.base_cost));
    std::memcpy(&cost_bits, &o.base_cost, sizeof(cost_bits));
    key.push_back(cost_bits);
  }
  Packer packer(key);
  for (OpId op : subgraph.ops) {
    const Op& o = problem.ops[op];
    for (TensorId in : o.inputs) packer.Put(local(in));
    packer.Put(local(o.output));
  }
  packer.Flush();
  for (TensorId t : tensors) {
    key.push_back(static_cast<uint64_t>(problem.tensors[t].width) |
                  static_cast<uint64_t>(problem.tensors[t].height) << 32);
  }
  PutSorted(retained_in, local, packer);
  PutSorted(subgraph.retain, local, packer);
  return true;
}

// BuildShapeKey, remembering the last context's words within a ContextReuse scope
// (eval/cost/context_reuse.h): a key's words depend on the granularity and the traversal only through
// its header, which is rebuilt for each call; then the traversal's words (AppendTraversalWords),
// which make the key of a context with an explicit traversal.
// `traversal_words`, when not empty, are AppendTraversalWords' words for subgraph.traversal (a
// caller that lends the same order to many pricings, or has them in another key, derives them
// once; the words of an order are never empty).
bool BuildShapeKeyReusing(const Problem& problem, const Subgraph& subgraph,
                          const std::vector<TensorId>& retained_in, ShapeScratch& scratch,
                          std::vector<uint64_t>& key, std::span<const uint64_t> traversal_words = {}) {
  auto append_traversal = [&] {
    if (!subgraph.traversal) return;
    if (!traversal_words.empty()) {
      key.insert(key.end(), traversal_words.begin(), traversal_words.end());
    } else {
      AppendTraversalWords(*subgraph.traversal, key);
    }
  };
  struct Memo {
    uint64_t generation = 0;
    const Problem* problem = nullptr;
    std::vector<OpId> ops;
    std::vector<TensorId> retain, retained_in;
    std::vector<uint64_t> words;
  };
  thread_local Memo memo;
  thread_local std::vector<uint64_t> header;
  const uint64_t generation = ContextReuse::Current();
  if (generation != 0 && memo.generation == generation && memo.problem == &problem && memo.ops == subgraph.ops &&
      memo.retain == subgraph.retain && memo.retained_in == retained_in) {
    if (!ShapeKeyFits(subgraph, retained_in)) return false;
    header.clear();
    AppendHeader(problem, subgraph, retained_in, header);
    key.assign(memo.words.begin(), memo.words.end());
    std::copy(header.begin(), header.end(), key.begin());
    append_traversal();
    return true;
  }
  memo.generation = 0;
  if (!BuildShapeKey(problem, subgraph, retained_in, scratch, key)) return false;
  if (generation != 0) {
    memo.generation = generation;
    memo.problem = &problem;
    memo.ops.assign(subgraph.ops.begin(), subgraph.ops.end());
    memo.retain.assign(subgraph.retain.begin(), subgraph.retain.end());
    memo.retained_in.assign(retained_in.begin(), retained_in.end());
    memo.words.assign(key.begin(), key.end());
  }
  append_traversal();
  return true;
}

}  // namespace

void AppendTraversalWords(const std::vector<int64_t>& order, std::vector<uint64_t>& words) {
  const size_t n = order.size();
  const size_t begin = words.size();
  // One pass writing the runs (steps in 64-bit unsigned arithmetic, wrapping, so defined for
  // any tiles: tile i is tile i - 1 plus the step, modulo 2^64, which gives back its bits); the
  // tiles themselves instead once the runs would be no shorter (more than (n - 2) / 2 of them).
  if (n >= 4) {
    const size_t max_runs = (n - 2) / 2;
    const int64_t* tiles = order.data();
    words.push_back(1);
    words.push_back(static_cast<uint64_t>(tiles[0]));
    uint64_t step = static_cast<uint64_t>(tiles[1]) - static_cast<uint64_t>(tiles[0]);
    size_t run_begin = 1, runs = 1;
    for (size_t i = 2; i < n; ++i) {
      const uint64_t s = static_cast<uint64_t>(tiles[i]) - static_cast<uint64_t>(tiles[i - 1]);
      if (s == step) continue;
      if (++runs > max_runs) break;
      words.push_back(step);
      words.push_back(i - run_begin);
      step = s;
      run_begin = i;
    }
    if (runs <= max_runs) {
      words.push_back(step);
      words.push_back(n - run_begin);
      return;
    }
    words.resize(begin);
  }
  words.push_back(0);
  words.insert(words.end(), order.begin(), order.end());  // each tile's bits as a word
}

bool ContextShapeWords(const Problem& problem, const std::vector<OpId>& ops,
                       const std::vector<TensorId>& retained_in, const std::vector<TensorId>& retain,
                       std::vector<uint64_t>& words) {
  thread_local ShapeScratch scratch;
  thread_local Subgraph context;  // its vectors keep their capacity from call to call
  context.ops.assign(ops.begin(), ops.end());
  context.retain.assign(retain.begin(), retain.end());
  return BuildShapeKeyReusing(problem, context, retained_in, scratch, words);
}

namespace {

// The ids of a context as words, the key of a thread's id table (contexts the front table cannot
// key: an explicit traversal, more than 12 ids): the counts, the granularity, the ops as listed,
// then the sorted retained sets, 32-bit ids two to a word, then the traversal's words
// (AppendTraversalWords). Returns where those begin (the key's size when there is no traversal).
size_t BuildIdKey(const Subgraph& subgraph, const std::vector<TensorId>& retained_in,
                  std::vector<uint64_t>& key) {
  const Granularity& g = subgraph.granularity;
  key.clear();
  key.push_back(subgraph.ops.size());
  key.push_back(retained_in.size() | static_cast<uint64_t>(subgraph.retain.size()) << 32);
  key.push_back(subgraph.traversal ? subgraph.traversal->size() + 1 : 0);
  key.push_back(static_cast<uint64_t>(g.w));
  key.push_back(static_cast<uint64_t>(g.h));
  key.push_back(static_cast<uint64_t>(g.k));
  Packer packer(key);
  for (OpId op : subgraph.ops) packer.Put(static_cast<uint32_t>(op));
  packer.Flush();
  auto same = [](TensorId t) { return static_cast<uint32_t>(t); };
  PutSorted(retained_in, same, packer);
  packer.Flush();
  PutSorted(subgraph.retain, same, packer);
  packer.Flush();
  const size_t traversal_at = key.size();
  if (subgraph.traversal) AppendTraversalWords(*subgraph.traversal, key);
  return traversal_at;
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
  thread_local ShapeScratch scratch;
  thread_local std::vector<uint64_t> built_key;
  uint64_t shape_hash;
  const std::vector<uint64_t>* key = &built_key;
  if (ticket != nullptr) {
#ifndef NDEBUG
    {  // The caller's promise (see ValidTicket), checked in debug builds.
      std::vector<uint64_t> check;
      const bool has = BuildShapeKeyReusing(problem, subgraph, retained_in, scratch, check);
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
    if (!BuildShapeKeyReusing(problem, subgraph, retained_in, scratch, built_key, traversal_words)) {
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
  const uint64_t hash = HashKey(problem, subgraph, retained_in);
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
    StoreExact(HashKey(problem, subgraph, retained_in), problem, subgraph, retained_in, result);
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
  thread_local ShapeScratch scratch;
  ticket.has_shape = BuildShapeKeyReusing(
      problem, subgraph, retained_in, scratch, ticket.key,
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
