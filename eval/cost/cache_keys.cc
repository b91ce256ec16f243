#include "eval/cost/cache_keys.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "eval/cost/context_reuse.h"
#include "eval/cost/hash_mix.h"

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


// Whether a context's counts and sides fit the shape key's header (a context that does not,
// e.g. a granularity side of 2^21 or more, which V2 rejects anyway, has no shape key).
bool ShapeKeyFits(const Subgraph& subgraph, const std::vector<TensorId>& retained_in) {
  const Granularity& g = subgraph.granularity;
  constexpr Elements kMaxSide = Elements{1} << 21;
  return subgraph.ops.size() < (size_t{1} << 24) && retained_in.size() < (size_t{1} << 16) &&
         subgraph.retain.size() < (size_t{1} << 16) && g.w >= 0 && g.w < kMaxSide && g.h >= 0 &&
         g.h < kMaxSide && g.k >= 0 && g.k < kMaxSide;
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

uint64_t HashExactKey(const Problem& problem, const Subgraph& subgraph,
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

bool ShapeKey(const Problem& problem, const Subgraph& subgraph, const std::vector<TensorId>& retained_in,
              std::vector<uint64_t>& key, std::span<const uint64_t> traversal_words) {
  thread_local ShapeScratch scratch;
  return BuildShapeKeyReusing(problem, subgraph, retained_in, scratch, key, traversal_words);
}

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

}  // namespace annealer
