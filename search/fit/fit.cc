#include "search/fit/fit.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <numeric>
#include <tuple>
#include <unordered_map>

#include "eval/cost/compute_floor.h"
#include "eval/cost/context_reuse.h"
#include "eval/cost/cost_cache.h"
#include "eval/cost/hash_mix.h"
#include "eval/cost/incremental.h"
#include "eval/cost/pricing_stop.h"
#include "eval/cost/subgraph_cost.h"
#include "eval/model/subgraph_structure.h"
#include "eval/model/traversal.h"

namespace annealer {

SubgraphPricer::SubgraphPricer(const Problem& problem, CostCache* cache) : problem_(problem), cache_(cache) {
  static std::atomic<uint64_t> next_serial{1};
  serial_ = next_serial.fetch_add(1, std::memory_order_relaxed);
}

SubgraphResult SubgraphPricer::Price(const Subgraph& subgraph,
                                     const std::vector<TensorId>& retained_in) const {
  if (cache_ != nullptr) return cache_->LookupOrCompute(problem_, subgraph, retained_in);
  return CostSubgraph(problem_, subgraph, retained_in);
}

bool SubgraphPricer::PrepareLatency(const Subgraph& subgraph, const std::vector<TensorId>& retained_in,
                                    ValidTicket& ticket, const std::vector<uint64_t>* traversal_words) const {
  if (cache_ == nullptr) return false;
  cache_->PrepareValid(problem_, subgraph, retained_in, ticket, traversal_words);
  return true;
}

void SubgraphPricer::PrefetchRecord(const ValidTicket& ticket) const {
  if (cache_ != nullptr) cache_->PrefetchRecord(ticket);
}

std::optional<Latency> SubgraphPricer::PriceLatency(const Subgraph& subgraph,
                                                    const std::vector<TensorId>& retained_in,
                                                    const ValidTicket* ticket,
                                                    const std::vector<uint64_t>* traversal_words) const {
  if (cache_ != nullptr) {
    SubgraphReport report;
    if (!cache_->LookupValid(problem_, subgraph, retained_in, report, ticket, traversal_words)) return std::nullopt;
    return report.latency;
  }
  const SubgraphResult result = CostSubgraph(problem_, subgraph, retained_in);
  if (!result.ok()) return std::nullopt;
  return result.report.latency;
}

namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The coarse candidate values of one axis, largest first: top, top/2, ... (at most `count`),
// plus `extra` (the start's value) when it is in range.
void CoarseValues(Elements top, int count, Elements extra, std::vector<Elements>& values) {
  values.clear();
  for (Elements v = top; v >= 1 && static_cast<int>(values.size()) < count; v /= 2) values.push_back(v);
  if (extra >= 1 && extra <= top && std::find(values.begin(), values.end(), extra) == values.end()) {
    values.push_back(extra);
    std::sort(values.begin(), values.end(), std::greater<>());
  }
}

// The values strictly between `low` and `high` that are the smallest side giving their tile
// count over `dim` (ceil(dim / c) for some count c): any other side with the same count costs the
// same compute and more working set. These are what a tight capacity wants between two powers
// of two (e.g. h = 52 on 1024 rows where 64 does not fit and 32 wastes compute). Without
// `partial_edge_tiles`, only the sides that divide `dim` (whole tiles: every reading of the
// spec prices them alike; spec O9).
std::vector<Elements> FineValuesBetween(Elements dim, Elements low, Elements high,
                                        bool partial_edge_tiles) {
  std::vector<Elements> values;
  if (dim <= 0) return values;
  for (int64_t count = CeilDiv(dim, high); count <= dim; ++count) {
    const Elements v = CeilDiv(dim, count);
    if (v <= low) break;
    if (!partial_edge_tiles && dim % v != 0) continue;
    if (v < high && (values.empty() || values.back() != v)) values.push_back(v);
  }
  return values;
}

constexpr int64_t kMaxExplicitTraversalTiles = 2048;
// Pricing may walk every step (eval/cost/subgraph_cost.h falls back to that), so one candidate on a
// very fine grid can take longer than the whole search may; such grids never win (every tile
// charges its full base cost); the winners on the bundled problems stay at or under 2^16 steps.
constexpr int64_t kMaxStepsPerCandidate = int64_t{1} << 18;

struct Key {
  Elements w, h, k;
  int t;
  bool operator==(const Key&) const = default;
};

// Positions of a fit's priced keys (each listed once) by hash, so that asking whether a key was
// priced costs a probe instead of a walk over all of them: a thorough fit (the polish) prices
// hundreds, and the walks were ~2 % of ResNet-50's instructions. Open addressing with
// generation stamps (emptied in O(1) per fit); past kMaxKeys keys it stops indexing and the
// caller walks the list, as before.
class PricedIndex {
 public:
  static constexpr size_t kMaxKeys = 1024;
  void Clear() {
    if (++generation_ == 0) {
      for (Slot& s : slots_) s.generation = 0;
      generation_ = 1;
    }
    count_ = 0;
  }
  bool Complete() const { return count_ <= kMaxKeys; }
  // The position given with `key`, or -1 (Complete() only).
  int Find(const Key& key) const {
    for (size_t i = Hash(key);; i = (i + 1) & (kSlots - 1)) {
      const Slot& s = slots_[i];
      if (s.generation != generation_) return -1;
      if (s.key == key) return s.position;
    }
  }
  void Insert(const Key& key, int position) {
    if (++count_ > kMaxKeys) return;
    for (size_t i = Hash(key);; i = (i + 1) & (kSlots - 1)) {
      Slot& s = slots_[i];
      if (s.generation != generation_) {
        s = {key, position, generation_};
        return;
      }
    }
  }

 private:
  static constexpr size_t kSlots = 4 * kMaxKeys;
  struct Slot {
    Key key{};
    int position = 0;
    uint32_t generation = 0;
  };
  static size_t Hash(const Key& key) {
    uint64_t h = static_cast<uint64_t>(key.w) * 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(key.h) * 0xbf58476d1ce4e5b9ull ^
                 static_cast<uint64_t>(key.k) * 0x94d049bb133111ebull ^ static_cast<uint64_t>(key.t);
    h ^= h >> 31;
    return static_cast<size_t>(h) & (kSlots - 1);
  }
  std::vector<Slot> slots_ = std::vector<Slot>(kSlots);
  uint32_t generation_ = 0;
  size_t count_ = 0;
};

// FitSubgraph's per-thread memo of complete fits (see fit.h): direct-mapped by the
// hash of the key's words, each slot holding its whole key, so a hit is exact. A key is the
// fit's flags and start, then the context: its ids (a context seen before) or its shape (the
// same context in another copy of a repeated layer; eval/cost/cost_cache.h).
struct FitAnswer {
  bool valid = false;  // false: no candidate tried was valid (FitSubgraph returns nullopt)
  Key key{};
  Latency latency = 0;
};
template <size_t kSlots>
class FitMemo {
 public:
  using Answer = FitAnswer;
  // Starts the key of a fit by the pricer numbered `serial`. (A slot keeps its pricer's serial
  // rather than the memo being emptied for each new pricer: a TBB thread may serve the arenas of
  // a search and of its nested searches by turns.)
  void Begin(uint64_t serial, bool thorough, bool partial_edge_tiles, const Subgraph* start) {
    serial_ = serial;
    words_.clear();
    words_.push_back((thorough ? 1 : 0) | (partial_edge_tiles ? 2 : 0) | (start != nullptr ? 4 : 0));
    if (start != nullptr) {
      words_.push_back(static_cast<uint64_t>(start->granularity.w));
      words_.push_back(static_cast<uint64_t>(start->granularity.h));
      words_.push_back(static_cast<uint64_t>(start->granularity.k));
    }
  }
  void AddIds(const std::vector<int>& ids) {
    words_.push_back(ids.size());
    for (int id : ids) words_.push_back(static_cast<uint64_t>(id));
  }
  void AddWords(const std::vector<uint64_t>& words) { words_.insert(words_.end(), words.begin(), words.end()); }
  // Ends the words but for the start's traversal pattern: their hash, and a prefetch of the
  // slots the key may take, one per pattern (see Here()), so the fit's setup before the
  // lookup hides the wait for them.
  void End() {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ serial_;
    for (uint64_t w : words_) {
      h ^= w + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
      h *= 0xff51afd7ed558ccdull;
    }
    hash_ = h ^ (h >> 29);
    for (size_t t = 0; t < std::size(kAllTraversalPatterns); ++t) __builtin_prefetch(&slots_[(hash_ + t) & (kSlots - 1)]);
  }
  // The start's traversal pattern (its index in kAllTraversalPatterns), the key's last word.
  void SetStartPattern(int t) {
    start_t_ = t;
    words_.push_back(static_cast<uint64_t>(t));
  }
  const Answer* Find() const {
    const Slot& slot = Here();
    if (slot.serial != serial_ || slot.hash != hash_ || slot.words != words_) return nullptr;
    return &slot.answer;
  }
  void Store(const Answer& answer) {
    Slot& slot = Here();
    slot.serial = serial_;
    slot.hash = hash_;
    slot.words.assign(words_.begin(), words_.end());
    slot.answer = answer;
  }

 private:
  struct Slot {
    uint64_t serial = 0;  // of the pricer (serials start at 1): 0 = empty
    uint64_t hash = 0;    // of the words but the pattern
    std::vector<uint64_t> words;
    Answer answer;
  };
  // A context's keys of the four patterns take neighbouring slots (their hash leaves the
  // pattern out): they do not evict each other, and all can be prefetched before the pattern
  // is known.
  const Slot& Here() const { return slots_[(hash_ + start_t_) & (kSlots - 1)]; }
  Slot& Here() { return slots_[(hash_ + start_t_) & (kSlots - 1)]; }
  uint64_t serial_ = 0;
  std::vector<Slot> slots_ = std::vector<Slot>(kSlots);
  std::vector<uint64_t> words_;
  uint64_t hash_ = 0;
  int start_t_ = 0;
};

// The orders of the named traversal patterns by (pattern, rows, cols), each built once per
// thread and lent to the fits that price it (LentOrder): a thread's fits try the same grids again
// and again, and building, allocating and freeing each order in each fit was ~1.5k instructions
// and ~2 last-level misses per move on ResNet-50. Node-stable: a fit holds references to entries,
// so they are only added while fits run; the cache is emptied, when it holds more than kMaxTiles
// tiles, only at a fit's start (Trim). Raster's order is nullopt, as MakeTraversal gives it.
class OrderCache {
 public:
  struct Entry {
    std::optional<std::vector<int64_t>> order;
    std::vector<uint64_t> words;  // AppendTraversalWords' for `order` (empty for raster)
  };
  Entry& Get(int t, int64_t rows, int64_t cols) {
    // A few grids recently asked for, in front of the map: a fit asks for the same few grids
    // again and again (a candidate prepared, then priced; ~1k instructions per move of map
    // lookups on ResNet-50).
    const Grid grid{t, rows, cols};
    Recent& recent = recent_[static_cast<size_t>(static_cast<uint64_t>(rows * 31 + cols) * 4 + static_cast<uint64_t>(t)) %
                             kRecent];
    if (recent.entry != nullptr && recent.grid == grid) return *recent.entry;
    const auto [it, inserted] = orders_.try_emplace(grid);
    if (inserted) {
      Entry& e = it->second;
      e.order = MakeTraversal(kAllTraversalPatterns[t], rows, cols);
      if (e.order) {
        AppendTraversalWords(*e.order, e.words);
        tiles_ += e.order->size() + e.words.size();
      }
    }
    recent = {grid, &it->second};
    return it->second;
  }
  void Trim() {
    if (tiles_ > kMaxTiles) {
      orders_.clear();
      tiles_ = 0;
      for (Recent& r : recent_) r.entry = nullptr;
    }
  }

 private:
  static constexpr size_t kMaxTiles = size_t{1} << 20;  // 8 MB of tiles
  struct Grid {
    int t;
    int64_t rows, cols;
    bool operator==(const Grid&) const = default;
  };
  struct GridHash {
    size_t operator()(const Grid& g) const {
      return static_cast<size_t>(SplitMix64(static_cast<uint64_t>(g.rows) * 0x9e3779b97f4a7c15ull ^
                                            static_cast<uint64_t>(g.cols) << 2 ^ static_cast<uint64_t>(g.t)));
    }
  };
  std::unordered_map<Grid, Entry, GridHash> orders_;
  size_t tiles_ = 0;
  // Direct-mapped by grid; an entry points into orders_ (node-stable until Trim empties both).
  struct Recent {
    Grid grid{};
    Entry* entry = nullptr;
  };
  static constexpr size_t kRecent = 16;
  std::array<Recent, kRecent> recent_{};
};

// Swaps a cached order into a scratch subgraph's traversal for the lifetime of the object and
// back (also when pricing throws: the cache must keep its orders).
class LentOrder {
 public:
  LentOrder(std::optional<std::vector<int64_t>>& cached, std::optional<std::vector<int64_t>>& scratch)
      : cached_(cached), scratch_(scratch) {
    scratch_.swap(cached_);
  }
  ~LentOrder() { scratch_.swap(cached_); }
  LentOrder(const LentOrder&) = delete;
  LentOrder& operator=(const LentOrder&) = delete;

 private:
  std::optional<std::vector<int64_t>>& cached_;
  std::optional<std::vector<int64_t>>& scratch_;
};

}  // namespace

bool NoGranularityFits(const Problem& problem, const std::vector<OpId>& ops,
                       const std::vector<TensorId>& retained_in, const std::vector<TensorId>& retain) {
  const Elements n = problem.native;
  Elements min_reduction = 0;
  for (OpId op : ops) {
    if (op >= 0 && op < static_cast<OpId>(problem.ops.size()) && problem.ops[op].kind == OpKind::MatMul) {
      const Elements k = problem.ReductionLength(op);
      min_reduction = min_reduction == 0 ? k : std::min(min_reduction, k);
    }
  }
  thread_local Subgraph probe;  // its vectors keep their capacity from call to call
  probe.ops.assign(ops.begin(), ops.end());
  probe.retain.assign(retain.begin(), retain.end());
  probe.granularity = {n, n, min_reduction == 0 ? 1 : std::min(n, min_reduction)};
  probe.traversal.reset();
  const ViolationWordsOff no_words;  // the rule alone answers
  const std::optional<SubgraphResult> failure = StructuralFailure(problem, probe, retained_in);
  if (!failure) return false;
  const std::string& rule = failure->violation.rule;
  for (const char* always : {"V1", "V5", "V6", "V8", "V12", "G3", "L1", "V11"}) {
    if (rule == always) return true;
  }
  return false;
}

std::optional<FitResult> FitSubgraph(const SubgraphPricer& pricer, const std::vector<OpId>& ops,
                                     const std::vector<TensorId>& retained_in,
                                     const std::vector<TensorId>& retain,
                                     const Subgraph* start, bool thorough,
                                     const std::function<bool()>& stop, bool partial_edge_tiles) {
  const Problem& problem = pricer.problem();
  // Every pricing below is of this one context (ops, retain, retained-in) at another
  // granularity or traversal.
  const ContextReuse reuse;
  // The fit's memo by ids (see below), its key but for the start's pattern first: End()
  // prefetches its slots while the setup runs.
  thread_local FitMemo<size_t{1} << 16> by_ids;
  thread_local FitMemo<size_t{1} << 15> by_shape;
  thread_local std::vector<uint64_t> shape_words;
  by_ids.Begin(pricer.serial(), thorough, partial_edge_tiles, start);
  by_ids.AddIds(ops);
  by_ids.AddIds(retained_in);
  by_ids.AddIds(retain);
  by_ids.End();
  const Elements n = problem.native;
  // The ops' reduction lengths, derived past the memo (a hit needs neither; see below).
  Elements min_reduction = 0;
  Elements max_reduction = 0;
  // The sink shape fixes the tile grid (spec G2); any sink will do, V12 rejects mixed shapes.
  thread_local StampSet consumed_inside;
  consumed_inside.Clear(problem.tensors.size());
  for (OpId op : ops) {
    for (TensorId t : problem.ops[op].inputs) consumed_inside.Insert(t);
  }
  Tensor sink_shape = problem.tensors[problem.ops[ops.back()].output];
  for (OpId op : ops) {
    if (!consumed_inside.Contains(problem.ops[op].output)) {
      sink_shape = problem.tensors[problem.ops[op].output];
      break;
    }
  }

  const int num_traversals = static_cast<int>(std::size(kAllTraversalPatterns));

  // Explicit traversals are O(tiles) to build, hash, compare and copy; on large grids (tiny
  // tiles, never the winners) only raster is tried.
  auto traversal_allowed = [&](const Key& key) {
    return key.t == 0 ||
           CeilDiv(sink_shape.height, key.h) * CeilDiv(sink_shape.width, key.w) <= kMaxExplicitTraversalTiles;
  };
  auto too_fine = [&](const Key& key) {
    const int64_t tiles = CeilDiv(sink_shape.height, key.h) * CeilDiv(sink_shape.width, key.w);
    const int64_t k_steps = max_reduction == 0 ? 1 : CeilDiv(max_reduction, key.k);
    return tiles * k_steps > kMaxStepsPerCandidate;
  };
  // One scratch subgraph is priced for every key; the traversal of each (pattern, rows, cols)
  // is built once and swapped in and out, so a key costs one cache lookup and no allocation.
  // In a spare subgraph's buffers (eval/cost/incremental.h): the fit's result is a move's
  // replacement, which the evaluator gives back when done. Its traversal starts out empty:
  // the cached orders are swapped in and out of it.
  Subgraph scratch = SpareSubgraphs::Take();
  scratch.traversal.reset();
  scratch.ops.assign(ops.begin(), ops.end());
  scratch.retain.assign(retain.begin(), retain.end());
  thread_local OrderCache orders;
  orders.Trim();
  auto cached_order = [&](const Key& key) -> OrderCache::Entry& {
    return orders.Get(key.t, CeilDiv(sink_shape.height, key.h), CeilDiv(sink_shape.width, key.w));
  };
  auto traversal_of = [&](const Key& key) -> std::optional<std::vector<int64_t>>& { return cached_order(key).order; };
  struct Priced {
    Key key;
    std::optional<Latency> latency;
  };
  thread_local std::vector<Priced> memo;
  thread_local PricedIndex memo_index;  // of memo's keys
  memo.clear();
  memo_index.Clear();
  auto remember_priced = [&](const Key& key, std::optional<Latency> latency) {
    memo_index.Insert(key, static_cast<int>(memo.size()));
    memo.push_back({key, latency});
  };
  // The candidates of a descent round prepared for pricing (SubgraphPricer::PrepareLatency):
  // tickets[i] is prepared_keys[i]'s context, i < prepared.
  thread_local std::vector<ValidTicket> tickets;
  thread_local std::vector<Key> prepared_keys;
  size_t prepared = 0;
  auto ticket_of = [&](const Key& key) -> const ValidTicket* {
    for (size_t i = 0; i < prepared; ++i) {
      if (prepared_keys[i] == key) return &tickets[i];
    }
    return nullptr;
  };
  const ScopedPricingStop pricing_stop(stop);
  auto price_uncached = [&](const Key& key) -> std::optional<Latency> {
    std::optional<Latency> latency;
    scratch.granularity = {key.w, key.h, key.k};
    OrderCache::Entry& cached = cached_order(key);
    const LentOrder lent(cached.order, scratch.traversal);
    try {
      latency = pricer.PriceLatency(scratch, retained_in, ticket_of(key), &cached.words);
    } catch (const PricingCancelled&) {
      // Out of time inside a step-by-step pricing: the candidate counts as not priced, and
      // the loops below see `stop` and return the best found so far.
    }
    return latency;
  };
  auto recalled_by_walk = [&](const Key& key) -> const Priced* {
    for (const Priced& p : memo) {
      if (p.key == key) return &p;
    }
    return nullptr;
  };
  auto recalled = [&](const Key& key) -> const Priced* {
    if (!memo_index.Complete()) return recalled_by_walk(key);
    const int at = memo_index.Find(key);
    const Priced* found = at < 0 ? nullptr : &memo[static_cast<size_t>(at)];
    assert(found == recalled_by_walk(key));  // the index answers as the walk (debug builds)
    return found;
  };
  // A named traversal whose order is raster's on this grid (one row or one column, where every
  // pattern walks the tiles in index order) prices as raster does: pricing reads nothing of a
  // traversal but its order. Such grids are common on a network (a tensor no wider than native
  // is one column); each would otherwise be priced anew as an explicit order.
  auto priced_as = [&](const Key& key) {
    Key as = key;
    if (key.t != 0) {
      const int64_t rows = CeilDiv(sink_shape.height, key.h), cols = CeilDiv(sink_shape.width, key.w);
      if (IsIndexOrder(kAllTraversalPatterns[key.t], rows, cols)) as.t = 0;
    }
    return as;
  };
  auto price = [&](const Key& key) -> std::optional<Latency> {
    if (const Priced* p = recalled(key)) return p->latency;
    std::optional<Latency> latency;
    if (traversal_allowed(key) && !too_fine(key)) {
      const Key as = priced_as(key);
      if (as == key) {
        latency = price_uncached(key);
      } else if (const Priced* p = recalled(as)) {
        latency = p->latency;
      } else {
        latency = price_uncached(as);
        remember_priced(as, latency);
      }
    }
    remember_priced(key, latency);
    return latency;
  };
  // Prepares the context `price(key)` would look up, if it would look one up (the conditions
  // of price and price_uncached), unless it is prepared already.
  auto prepare = [&](const Key& key) {
    if (recalled(key) || !traversal_allowed(key) || too_fine(key)) return;
    const Key as = priced_as(key);
    if ((as != key && recalled(as)) || ticket_of(as) != nullptr) return;
    if (prepared == tickets.size()) {
      tickets.emplace_back();
      prepared_keys.emplace_back();
    }
    scratch.granularity = {as.w, as.h, as.k};
    bool ok;
    {
      OrderCache::Entry& cached = cached_order(as);
      const LentOrder lent(cached.order, scratch.traversal);
      ok = pricer.PrepareLatency(scratch, retained_in, tickets[prepared], &cached.words);
    }
    if (ok) prepared_keys[prepared++] = as;
  };

  // The start's pattern: the index of the named order its traversal is on the grid of its
  // sides (raster when none is, or when the grid is too large for an explicit traversal).
  int start_t = 0;
  if (start != nullptr && start->traversal.has_value()) {
    const Elements w = std::clamp<Elements>(start->granularity.w, 1, n);
    const Elements h = std::clamp<Elements>(start->granularity.h, 1, n);
    const int64_t rows = CeilDiv(sink_shape.height, h), cols = CeilDiv(sink_shape.width, w);
    if (static_cast<int64_t>(start->traversal->size()) == rows * cols) {
      for (int t = 1; t < num_traversals; ++t) {
        // Not through the traversal slots: most fits are answered by the memo below, which
        // needs no order but the answer's (the descent builds the others when it tries them).
        if (IsTraversal(kAllTraversalPatterns[t], rows, cols, start->traversal)) {
          start_t = t;
          break;
        }
      }
    }
    if (!traversal_allowed({w, h, 1, start_t})) start_t = 0;
  }
  // The start is now fixed: the rest of the fit depends on nothing but the memo's key. By ids
  // first; on a miss by shape. 64 Ki slots by ids (~10 MB per thread with their keys): on
  // ResNet-50, 8 Ki answered 79 % of the fits, 64 Ki 84 % (mlsys-2026-13: 92 % and 97 %).
  auto answer = [&](const FitAnswer& known) -> std::optional<FitResult> {
    if (!known.valid) return std::nullopt;
    FitResult fit{std::move(scratch), known.latency};
    fit.subgraph.granularity = {known.key.w, known.key.h, known.key.k};
    fit.subgraph.traversal = traversal_of(known.key);
    return fit;
  };
  by_ids.SetStartPattern(start_t);
  if (const auto* known = by_ids.Find()) return answer(*known);
  const bool has_shape = ContextShapeWords(problem, ops, retained_in, retain, shape_words);
  if (has_shape) {
    by_shape.Begin(pricer.serial(), thorough, partial_edge_tiles, start);
    by_shape.AddWords(shape_words);
    by_shape.End();
    by_shape.SetStartPattern(start_t);
    if (const auto* known = by_shape.Find()) {
      by_ids.Store(*known);
      return answer(*known);
    }
  }
  for (OpId op : ops) {
    if (problem.ops[op].kind == OpKind::MatMul) {
      const Elements k = problem.ReductionLength(op);
      min_reduction = min_reduction == 0 ? k : std::min(min_reduction, k);
      max_reduction = std::max(max_reduction, k);
    }
  }
  const Elements k_top = min_reduction == 0 ? 1 : std::min(n, min_reduction);
  // A floor under any candidate's latency (eval/cost/compute_floor.h): a candidate whose floor is
  // above the best it must beat cannot win, so it is not priced where only a win would matter
  // (not where a loop asks whether a candidate is valid). Its price would only have entered this
  // fit's list and the cost cache, whose answers are exact: the fit picks the same candidate.
  // Without chip rules the memory traffic every pricing moves is a second floor
  // (eval/cost/compute_floor.h): the memory-bound candidates the compute floor lets through.
  // Both are derived when first asked: a fit that ends before any candidate is weighed (no
  // granularity fits, the first one walked down) needs neither, and a candidate the compute
  // floor rules out needs no memory floor (on ResNet-50 a memory floor's terms cost ~2.7k
  // instructions).
  std::optional<double> floor_per_tile;
  std::optional<MemoryFloorTerms> memory_floor;
  auto cannot_beat = [&](const Key& key, Latency bar) {
    if (!floor_per_tile) floor_per_tile = ComputeFloorPerTile(problem, ops);
    if (ComputeFloor(*floor_per_tile, sink_shape.height, sink_shape.width, key.h, key.w) > bar) return true;
    if (!memory_floor) memory_floor = MemoryFloorTermsOf(problem, ops, retained_in, retain);
    return MemoryFloor(*memory_floor, problem.slow_memory_bandwidth, sink_shape.height, sink_shape.width, key.h,
                       key.w, key.k) > bar;
  };
  // Buffers reused by every fit on this thread (a fit never runs inside another).
  thread_local std::vector<Elements> ws, hs, ks;
  CoarseValues(n, thorough ? 6 : 5, start ? start->granularity.w : 0, ws);
  CoarseValues(n, thorough ? 6 : 5, start ? start->granularity.h : 0, hs);
  if (min_reduction == 0) {
    ks.assign(1, 1);
  } else {
    CoarseValues(k_top, thorough ? 8 : 6, start ? start->granularity.k : 0, ks);
  }
  if (problem.chip.aligned()) {  // H3: candidates moved onto the chip's base sides
    auto align = [&](std::vector<Elements>& values, SideAxis axis, Elements dimension, Elements top) {
      for (Elements& v : values) v = AlignSide(problem.chip, axis, v, dimension, top);
      std::sort(values.begin(), values.end(), std::greater<>());
      values.erase(std::unique(values.begin(), values.end()), values.end());
    };
    align(ws, SideAxis::kW, sink_shape.width, n);
    align(hs, SideAxis::kH, sink_shape.height, n);
    if (min_reduction > 0) align(ks, SideAxis::kK, min_reduction, k_top);
  }
  Key current{ws[0], hs[0], ks[0], 0};
  if (start != nullptr) {
    const Granularity& g = start->granularity;
    current = {std::clamp<Elements>(g.w, 1, n), std::clamp<Elements>(g.h, 1, n), std::clamp<Elements>(g.k, 1, k_top),
               start_t};
    if (std::find(ks.begin(), ks.end(), current.k) == ks.end()) current.k = ks[0];
  }
  // Only a fit that `stop` did not cut is the function of its inputs.
  std::optional<Latency> best;
  auto remember = [&](bool valid) {
    if (stop && stop()) return;
    const FitAnswer known{valid, current, valid ? *best : 0};
    by_ids.Store(known);
    if (has_shape) by_shape.Store(known);
  };
  best = price(current);
  if (!best && NoGranularityFits(problem, ops, retained_in, retain)) {
    remember(false);
    return std::nullopt;
  }
  if (!best) {
    // Too big (or an illegal k): walk down the tile sizes, largest area first, then largest k,
    // then (the order in which they were once listed) largest w, until one fits. Only the
    // (w, h) pairs need sorting: a group of equal area is listed once per k, and only as many
    // keys as will be tried.
    const size_t max_tries = thorough ? 400 : 60;
    struct Sides {
      Elements w, h;
    };
    thread_local std::vector<Sides> sides;
    sides.clear();
    for (Elements w : ws) {
      for (Elements h : hs) sides.push_back({w, h});
    }
    // w and the area fix h, so this order is total.
    std::sort(sides.begin(), sides.end(), [](const Sides& a, const Sides& b) {
      const Elements area_a = a.w * a.h, area_b = b.w * b.h;
      return area_a != area_b ? area_a > area_b : a.w > b.w;
    });
    thread_local std::vector<Key> fallbacks;
    fallbacks.clear();
    for (size_t group = 0; group < sides.size() && fallbacks.size() < max_tries;) {
      const Elements area = sides[group].w * sides[group].h;
      size_t group_end = group;
      while (group_end < sides.size() && sides[group_end].w * sides[group_end].h == area) ++group_end;
      for (Elements k : ks) {  // strictly decreasing
        for (size_t i = group; i < group_end; ++i) fallbacks.push_back({sides[i].w, sides[i].h, k, current.t});
      }
      group = group_end;
    }
    size_t tries = 0;
    for (const Key& key : fallbacks) {
      if (++tries > max_tries || (stop && stop())) break;
      if (auto latency = price(key)) {
        current = key;
        best = latency;
        break;
      }
    }
    if (!best) {
      remember(false);
      return std::nullopt;
    }
  }

  auto index_in = [](const std::vector<Elements>& values, Elements v) {
    return static_cast<int>(std::find(values.begin(), values.end(), v) - values.begin());
  };
  auto step = [&](const std::vector<Elements>& values, Elements v, int d) -> Elements {
    const int i = index_in(values, v) + d;
    return i < 0 || i >= static_cast<int>(values.size()) ? 0 : values[i];
  };
  // Best-improvement descent over single-axis steps on the coarse values and traversal changes.
  thread_local std::vector<Key> neighbours;
  for (int round = 0; round < 64; ++round) {
    neighbours.clear();
    auto add = [&](Elements w, Elements h, Elements k, int t) {
      if (w == 0 || h == 0 || k == 0) return;
      neighbours.push_back({w, h, k, t});
    };
    const Key c = current;
    for (int d : {-1, 1}) {
      add(step(ws, c.w, d), c.h, c.k, c.t);
      add(c.w, step(hs, c.h, d), c.k, c.t);
      add(c.w, c.h, step(ks, c.k, d), c.t);
      if (thorough) {
        add(step(ws, c.w, d), step(hs, c.h, -d), c.k, c.t);
        add(step(ws, c.w, d), c.h, step(ks, c.k, -d), c.t);
        add(c.w, step(hs, c.h, d), step(ks, c.k, -d), c.t);
      }
    }
    for (int t = 0; t < num_traversals; ++t) {
      if (t != c.t) add(c.w, c.h, c.k, t);
    }
    // The round's lookups are independent: their keys are derived first and the table lines
    // they read are fetched together (the slots, then the records the slots name), instead of
    // one lookup waiting for its slot and then its record before the next starts.
    for (const Key& key : neighbours) {
      if (!cannot_beat(key, *best)) prepare(key);
    }
    for (size_t i = 0; i < prepared; ++i) pricer.PrefetchRecord(tickets[i]);
    Key next = current;
    Latency next_latency = *best;
    for (const Key& key : neighbours) {
      if (stop && stop()) break;
      if (cannot_beat(key, next_latency)) continue;
      if (auto latency = price(key); latency && *latency < next_latency) {
        next = key;
        next_latency = *latency;
      }
    }
    prepared = 0;
    if (next == current) break;
    current = next;
    best = next_latency;
  }

  if (thorough) {
    // Refine each axis between its coarse neighbours with the sides that are smallest for their
    // tile count; a tight capacity often sits between two powers of two. Then the traversals.
    const Elements k_dim = min_reduction == 0 ? 1 : min_reduction;
    // Joint scan of w and h over the tile-count-minimal sides from half the current
    // side up to twice it, k and traversal fixed: a tight capacity trades one side against the
    // other, which single-axis steps cannot do.
    {
      auto band = [&](Elements dim, Elements v) {
        std::vector<Elements> values = FineValuesBetween(dim, std::max<Elements>(v / 2, 1) - 1, std::min(n, 2 * v) + 1, partial_edge_tiles);
        return values;
      };
      const std::vector<Elements> w_band = band(sink_shape.width, current.w);
      const std::vector<Elements> h_band = band(sink_shape.height, current.h);
      const Key center = current;
      // The current k, and k = K* (one k-step per tile: strips are reused across tiles).
      std::vector<Elements> k_options{center.k};
      if (ks[0] != center.k) k_options.push_back(ks[0]);
      for (Elements w : w_band) {
        for (Elements h : h_band) {
          for (Elements k : k_options) {
            if (stop && stop()) break;
            const Key key{w, h, k, center.t};
            if (cannot_beat(key, *best)) continue;
            if (auto latency = price(key); latency && *latency < *best * (1 - 1e-9)) {
              current = key;
              best = latency;
            }
          }
        }
      }
    }
    // The widest side that fits at k = K* (one k-step per tile: the weight strip stays while the
    // tiles pass): a tight capacity puts it far below the descent's optimum at a small k, out of
    // the joint scan's band and of single steps (a lone ResNet-18 3x3 tap on mlsys-2026, 784 x 128
    // with K = 128 in 30,000: the descent stops at 128x128x16, 21,026, where 128x53x128 costs
    // 15,997). The working set grows with either side, so a bisection over the tile-count-minimal
    // sides finds the widest valid one, at the current other side and at native.
    if (min_reduction > 0 && ks[0] != current.k) {
      const Key center = current;
      for (int axis = 0; axis < 2; ++axis) {
        const Elements dim = axis == 0 ? sink_shape.width : sink_shape.height;
        const Elements other = axis == 0 ? center.h : center.w;
        // Descending: values[0] is the widest side.
        const std::vector<Elements> values = FineValuesBetween(dim, 0, std::min(n, dim) + 1, partial_edge_tiles);
        if (values.empty()) continue;
        for (Elements fixed : {other, std::min(n, axis == 0 ? sink_shape.height : sink_shape.width)}) {
          if (stop && stop()) break;
          auto key_at = [&](size_t i) {
            Key key{0, 0, ks[0], 0};
            (axis == 0 ? key.w : key.h) = values[i];
            (axis == 0 ? key.h : key.w) = fixed;
            return key;
          };
          size_t lo = 0, hi = values.size() - 1;  // values[hi] must fit, values[lo] need not
          if (!price(key_at(hi))) continue;
          if (!price(key_at(lo))) {
            while (hi - lo > 1) {
              const size_t mid = lo + (hi - lo) / 2;
              (price(key_at(mid)) ? hi : lo) = mid;
            }
          } else {
            hi = lo;
          }
          const Key key = key_at(hi);
          if (auto latency = price(key); latency && *latency < *best * (1 - 1e-9)) {
            current = key;
            best = latency;
          }
        }
      }
    }
    for (int round = 0; round < 4; ++round) {
      bool improved = false;
      for (int axis = 0; axis < 3; ++axis) {
        if (axis == 2 && min_reduction == 0) continue;
        const std::vector<Elements>& coarse = axis == 0 ? ws : axis == 1 ? hs : ks;
        const Elements v = axis == 0 ? current.w : axis == 1 ? current.h : current.k;
        const Elements dim = axis == 0 ? sink_shape.width : axis == 1 ? sink_shape.height : k_dim;
        const Elements top = axis == 2 ? k_top : n;
        Elements high = step(coarse, v, -1), low = step(coarse, v, 1);
        if (high == 0) high = std::min(top, 2 * v);
        std::vector<Elements> values = FineValuesBetween(dim, low, high, partial_edge_tiles);
        for (Elements candidate : FineValuesBetween(dim, v, std::min(top + 1, high + 1), partial_edge_tiles)) {
          values.push_back(candidate);
        }
        for (Elements candidate : values) {
          if (candidate == v || candidate > top || candidate < 1) continue;
          if (stop && stop()) break;
          Key key = current;
          (axis == 0 ? key.w : axis == 1 ? key.h : key.k) = candidate;
          // A side change moves the best k with it (k = K* lets strips be reused across tiles,
          // a small k frees working set): try them all with the new side.
          const std::vector<Elements> k_options = axis == 2 ? std::vector<Elements>{candidate} : ks;
          for (Elements k : k_options) {
            key.k = k;
            if (cannot_beat(key, *best)) continue;
            // Only a real gain (not summation noise) is worth an odd side.
            if (auto latency = price(key); latency && *latency < *best * (1 - 1e-9)) {
              current = key;
              best = latency;
              improved = true;
            }
          }
        }
      }
      for (int t = 0; t < num_traversals; ++t) {
        Key key = current;
        key.t = t;
        if (auto latency = price(key); latency && *latency < *best) {
          current = key;
          best = latency;
          improved = true;
        }
      }
      if (!improved) break;
    }
  }

  remember(true);
  FitResult fit{std::move(scratch), *best};
  fit.subgraph.granularity = {current.w, current.h, current.k};
  fit.subgraph.traversal = traversal_of(current);
  return fit;
}

}  // namespace annealer
