// The cost cache's shape layer: a context whose ops and tensors are an order-preserving
// relabelling of a priced one (the same layer elsewhere in a deep graph) is answered without
// pricing, with exactly the result CostSubgraph gives for it; a context that differs in any
// priced fact (a shape, a base cost, an edge) is not.
#include <doctest/doctest.h>

#include <cstdint>
#include <numeric>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "eval/cost/cost_cache.h"
#include "eval/model/traversal.h"
#include "eval/random_schedule.h"
#include "eval/cost/subgraph_cost.h"

namespace annealer {
namespace {

// `copies` disjoint copies of `one`: copy c's op i is op c * |ops| + i, its tensor t is tensor
// c * |tensors| + t, so a context of copy 0 shifted by c is an order-preserving relabelling.
Problem Copies(const Problem& one, int copies) {
  Problem many;
  many.fast_memory_capacity = one.fast_memory_capacity;
  many.slow_memory_bandwidth = one.slow_memory_bandwidth;
  many.native = one.native;
  const auto num_tensors = static_cast<TensorId>(one.tensors.size());
  for (int c = 0; c < copies; ++c) {
    many.tensors.insert(many.tensors.end(), one.tensors.begin(), one.tensors.end());
    for (Op op : one.ops) {
      for (TensorId& t : op.inputs) t += c * num_tensors;
      op.output += c * num_tensors;
      many.ops.push_back(op);
    }
  }
  REQUIRE(many.Finalize().empty());
  return many;
}

// `subgraph` of copy 0 moved to copy `c` (traversal and granularity unchanged).
Subgraph Shifted(const Subgraph& subgraph, const Problem& one, int c) {
  Subgraph moved = subgraph;
  for (OpId& op : moved.ops) op += c * static_cast<OpId>(one.ops.size());
  for (TensorId& t : moved.retain) t += c * static_cast<TensorId>(one.tensors.size());
  return moved;
}

std::vector<TensorId> Shifted(const std::vector<TensorId>& set, const Problem& one, int c) {
  std::vector<TensorId> moved = set;
  for (TensorId& t : moved) t += c * static_cast<TensorId>(one.tensors.size());
  return moved;
}

bool Same(const SubgraphResult& a, const SubgraphResult& b) {
  return a.verdict == b.verdict && a.report == b.report && a.violation.rule == b.violation.rule &&
         a.violation.detail == b.violation.detail;
}

// Calls visit(one, three, subgraph, retained_in, trial) for every context of the shape tests:
// each subgraph of a random schedule of a small random DAG, and a variant of it with other
// settings, after the retained set of the subgraph before; `three` holds three disjoint copies
// of `one` (see Copies).
template <typename Visit>
void ForEachContextOfCopies(uint64_t seed, const Visit& visit) {
  std::mt19937_64 rng(seed);
  RandomScheduleOptions options;
  options.max_steps = 200;
  const DagShape kShapes[] = {DagShape::kChain, DagShape::kDiamond, DagShape::kFanOut, DagShape::kMixed,
                              DagShape::kSharedInput};
  for (int trial = 0; trial < 60; ++trial) {
    const Problem one = RandomProblem(rng, kShapes[trial % 5], {.min_ops = 3, .max_ops = 10});
    const Problem three = Copies(one, 3);
    const Schedule schedule = RandomSchedule(one, rng, options);
    std::vector<TensorId> retained_in;
    for (const Subgraph& s : schedule.subgraphs) {
      Subgraph variant = s;
      RandomizeSettings(one, variant, rng, options);
      for (const Subgraph* sub : {&s, static_cast<const Subgraph*>(&variant)}) {
        visit(one, three, *sub, retained_in, trial);
      }
      retained_in = s.retain;
    }
  }
}

TEST_CASE("cost cache shapes: a context met again in another copy is not priced again, and equals its own pricing") {
  int contexts = 0, failing = 0, shape_hits = 0;
  ForEachContextOfCopies(2026, [&](const Problem& one, const Problem& three, const Subgraph& sub,
                                   const std::vector<TensorId>& retained_in, int trial) {
    CostCache cache(1 << 12);
    SubgraphResult result;
    // Copy 0 is priced; copies 1 and 2 are answered by the shape, or re-derived when it
    // fails (the words of a violation name the copy's own ids).
    for (int c = 0; c < 3; ++c) {
      const Subgraph moved = Shifted(sub, one, c);
      const std::vector<TensorId> in = Shifted(retained_in, one, c);
      const CacheStats before = cache.stats();
      cache.LookupOrCompute(three, moved, in, result);
      const SubgraphResult direct = CostSubgraph(three, moved, in);
      INFO("trial " << trial << " copy " << c << ": " << direct.violation.Message());
      CHECK(Same(result, direct));
      if (c == 0) {
        CHECK(Same(direct, CostSubgraph(one, sub, retained_in)));
        continue;
      }
      const CacheStats after = cache.stats();
      // Valid: a hit. Failing: a hit when the rule is checked before pricing (e.g. V11).
      if (direct.ok()) {
        CHECK(after.hits == before.hits + 1);
        ++shape_hits;
      }
    }
    ++contexts;
    failing += !result.ok();
  });
  MESSAGE(contexts << " contexts, " << failing << " failing, " << shape_hits << " answered by shape");
  CHECK(contexts > 200);
  CHECK(failing > 20);
  CHECK(shape_hits > 200);
}

TEST_CASE("cost cache shapes: LookupValid answers valid and failing copies by shape, with CostSubgraph's verdict and report") {
  int contexts = 0, failing = 0;
  ForEachContextOfCopies(2027, [&](const Problem& one, const Problem& three, const Subgraph& sub,
                                   const std::vector<TensorId>& retained_in, int trial) {
    CostCache cache(1 << 12);
    for (int c = 0; c < 3; ++c) {
      const Subgraph moved = Shifted(sub, one, c);
      const std::vector<TensorId> in = Shifted(retained_in, one, c);
      const SubgraphResult direct = CostSubgraph(three, moved, in);
      INFO("trial " << trial << " copy " << c << ": " << direct.violation.Message());
      const CacheStats before = cache.stats();
      SubgraphReport report;
      CHECK(cache.LookupValid(three, moved, in, report) == direct.ok());
      if (direct.ok()) CHECK(report == direct.report);
      // Copy 0 is priced; copies 1 and 2 are answered by its shape, failing or not.
      const CacheStats after = cache.stats();
      CHECK(after.misses == before.misses + (c == 0 ? 1 : 0));
      CHECK(after.hits == before.hits + (c == 0 ? 0 : 1));
      // The full lookup of the same context still gives the violation's words.
      SubgraphResult result;
      cache.LookupOrCompute(three, moved, in, result);
      CHECK(Same(result, direct));
      // Asked again: the same answer (from the front table or the shared shapes).
      CHECK(cache.LookupValid(three, moved, in, report) == direct.ok());
      if (direct.ok()) CHECK(report == direct.report);
    }
    ++contexts;
    failing += !CostSubgraph(three, sub, retained_in).ok();
  });
  MESSAGE(contexts << " contexts, " << failing << " failing");
  CHECK(contexts > 200);
  CHECK(failing > 20);
}

TEST_CASE("cost cache shapes: LookupValid stays exact from another thread on many long keys") {
  // Many contexts with explicit traversals (a key word per tile; a thread's ring of key words,
  // 2^18 of them when one held shapes, would wrap several times): every answer must still be
  // CostSubgraph's, and another thread, whose own tables are empty, must be answered by the
  // shared table without pricing.
  std::mt19937_64 rng(99);
  RandomScheduleOptions options;
  options.max_steps = 4096;
  const Problem one = RandomProblem(rng, DagShape::kMixed, {.min_ops = 8, .max_ops = 12});
  const Problem four = Copies(one, 4);
  CostCache cache(1 << 16);
  std::vector<std::pair<Subgraph, std::vector<TensorId>>> contexts;
  int checked = 0, failing = 0;
  size_t traversal_words = 0;
  for (int round = 0; round < 400; ++round) {
    const Schedule schedule = RandomSchedule(one, rng, options);
    std::vector<TensorId> retained_in;
    for (const Subgraph& s : schedule.subgraphs) {
      for (int variant = 0; variant < 4; ++variant) {
        Subgraph sub = s;
        if (variant > 0) RandomizeSettings(one, sub, rng, options);
        const int c = static_cast<int>(rng() % 4);
        const Subgraph moved = Shifted(sub, one, c);
        const std::vector<TensorId> in = Shifted(retained_in, one, c);
        const SubgraphResult direct = CostSubgraph(four, moved, in);
        SubgraphReport report;
        REQUIRE(cache.LookupValid(four, moved, in, report) == direct.ok());
        if (direct.ok()) REQUIRE(report == direct.report);
        failing += !direct.ok();
        ++checked;
        if (moved.traversal) traversal_words += moved.traversal->size();
        if (contexts.size() < 200) contexts.emplace_back(moved, in);
      }
      retained_in = s.retain;
    }
  }
  const CacheStats before = cache.stats();
  std::thread other([&] {
    for (const auto& [subgraph, in] : contexts) {
      const SubgraphResult direct = CostSubgraph(four, subgraph, in);
      SubgraphReport report;
      CHECK(cache.LookupValid(four, subgraph, in, report) == direct.ok());
      if (direct.ok()) CHECK(report == direct.report);
    }
  });
  other.join();
  CHECK(cache.stats().misses == before.misses);
  MESSAGE(checked << " contexts checked, " << failing << " failing, " << traversal_words << " traversal words");
  CHECK(traversal_words > (size_t{1} << 19));  // twice the ring (2^18 words), and more
  CHECK(failing > 50);
}

TEST_CASE("cost cache shapes: a copy that differs in a shape, a base cost or an edge is priced on its own") {
  std::mt19937_64 rng(7);
  const Problem one = RandomProblem(rng, DagShape::kChain, {.min_ops = 4, .max_ops = 4});
  Problem three = Copies(one, 3);
  // Copy 1: op 1's base cost doubled. Copy 2: op 0's output one column wider (so its
  // consumers' shapes follow only where the rules allow: the context may turn invalid, which
  // is fine, it must just not be taken for copy 0's).
  three.ops[one.ops.size() + 1].base_cost *= 2;
  three.tensors[2 * one.tensors.size() + one.ops[0].output].width += 1;
  Subgraph all;
  for (OpId op = 0; op < static_cast<OpId>(one.ops.size()); ++op) all.ops.push_back(op);
  all.granularity = {1, 1, 1};
  CostCache cache(1 << 10);
  SubgraphResult result;
  for (int c = 0; c < 3; ++c) {
    const Subgraph moved = Shifted(all, one, c);
    const CacheStats before = cache.stats();
    cache.LookupOrCompute(three, moved, {}, result);
    CHECK(Same(result, CostSubgraph(three, moved, {})));
    CHECK(cache.stats().misses == before.misses + 1);  // priced: nothing of its shape before
  }
  // An unchanged copy would have been a hit: copy 0 again, relabelled into a fresh problem.
  const Problem two = Copies(one, 2);
  CostCache fresh(1 << 10);
  fresh.LookupOrCompute(two, all, {}, result);
  fresh.LookupOrCompute(two, Shifted(all, one, 1), {}, result);
  CHECK(fresh.stats().hits == 1);
  CHECK(Same(result, CostSubgraph(two, Shifted(all, one, 1), {})));
}

}  // namespace
}  // namespace annealer

namespace annealer {
namespace {

// AppendTraversalWords' format read back (see eval/cost/cost_cache.h), given the order's length
// as the key's header holds it; empty when the words are not a whole encoding of that length.
std::optional<std::vector<int64_t>> DecodeTraversalWords(const std::vector<uint64_t>& words, size_t length) {
  if (words.empty()) return std::nullopt;
  std::vector<int64_t> order;
  if (words[0] == 0) {
    if (words.size() != 1 + length) return std::nullopt;
    for (size_t i = 1; i < words.size(); ++i) order.push_back(static_cast<int64_t>(words[i]));
    return order;
  }
  if (words[0] != 1 || words.size() < 2 || words.size() % 2 != 0) return std::nullopt;
  uint64_t tile = words[1];
  order.push_back(static_cast<int64_t>(tile));
  for (size_t i = 2; i + 1 < words.size(); i += 2) {
    if (words[i + 1] == 0 || order.size() + words[i + 1] > length) return std::nullopt;
    for (uint64_t r = 0; r < words[i + 1]; ++r) {
      tile += words[i];
      order.push_back(static_cast<int64_t>(tile));
    }
  }
  if (order.size() != length) return std::nullopt;
  return order;
}

// MakeTraversal's order, raster's (nullopt) written out.
std::vector<int64_t> Tiles(TraversalPattern pattern, int64_t rows, int64_t cols) {
  std::optional<std::vector<int64_t>> order = MakeTraversal(pattern, rows, cols);
  if (order) return *order;
  std::vector<int64_t> raster(static_cast<size_t>(rows * cols));
  std::iota(raster.begin(), raster.end(), 0);
  return raster;
}

TEST_CASE("cost cache: a traversal's key words decode to the traversal, and the named patterns take few") {
  std::mt19937_64 rng(2026);
  int checked = 0, by_runs = 0;
  std::vector<std::vector<int64_t>> orders;
  // The named patterns on grids up to 64 x 64, and with a tile or two swapped (no longer a
  // pattern, a few runs more); random orders; sequences of equal and extreme tiles.
  for (int64_t rows = 1; rows <= 64; rows += 1 + static_cast<int64_t>(rng() % 5)) {
    for (int64_t cols = 1; cols <= 64; cols += 1 + static_cast<int64_t>(rng() % 5)) {
      for (TraversalPattern pattern : kAllTraversalPatterns) {
        std::vector<int64_t> order = Tiles(pattern, rows, cols);
        orders.push_back(order);
        if (order.size() >= 2) {
          std::swap(order[rng() % order.size()], order[rng() % order.size()]);
          orders.push_back(order);
        }
      }
    }
  }
  for (int trial = 0; trial < 8000; ++trial) {
    const size_t n = 1 + rng() % (trial % 4 == 0 ? 300 : 40);
    std::vector<int64_t> order(n);
    const int kind = static_cast<int>(rng() % 4);
    for (size_t i = 0; i < n; ++i) {
      switch (kind) {
        case 0: order[i] = static_cast<int64_t>(rng() % 8); break;                 // many equal steps
        case 1: order[i] = static_cast<int64_t>(rng());  break;                     // any bits
        case 2: order[i] = i % 2 == 0 ? INT64_MIN : INT64_MAX; break;               // wrapping steps
        default: order[i] = static_cast<int64_t>(i * 3) - static_cast<int64_t>(rng() % (trial % 8 == 3 ? 40 : 2));  // near-runs
      }
    }
    orders.push_back(order);
  }
  orders.push_back({});
  for (const std::vector<int64_t>& order : orders) {
    std::vector<uint64_t> words{42};  // appended after what is there
    AppendTraversalWords(order, words);
    REQUIRE(words[0] == 42);
    words.erase(words.begin());
    const std::optional<std::vector<int64_t>> back = DecodeTraversalWords(words, order.size());
    REQUIRE(back.has_value());
    CHECK(*back == order);
    CHECK(words.size() <= order.size() + 1);  // never longer than the tiles and the tag
    by_runs += words[0] == 1;
    ++checked;
  }
  // A named pattern of R rows (or columns) is at most 1 + 2 * (2R) words after the tag.
  for (TraversalPattern pattern : kAllTraversalPatterns) {
    std::vector<uint64_t> words;
    AppendTraversalWords(Tiles(pattern, 32, 64), words);
    CHECK(words.size() <= 2 + 4 * 64);
    CHECK(words.size() < 2048 / 4);
  }
  MESSAGE(checked << " orders, " << by_runs << " keyed by runs");
  CHECK(checked > 10000);
  CHECK(by_runs > 3000);
}

}  // namespace
}  // namespace annealer

namespace annealer {
namespace {

TEST_CASE("cost cache shapes: keys longer than an arena block, across flushes, stay exact") {
  // A shard keeps its shapes in blocks of 2^15 words; a key longer than that (a random order of
  // 36,864 tiles: a word per tile) gets a block of its own, and a flush keeps the blocks for the
  // next generation. Long and short keys in turn, under a budget that flushes a shard at every
  // insert and one that keeps everything: every answer is CostSubgraph's, and a copy of a long
  // context met again without a flush is answered by its shape.
  Problem one;
  one.native = 4;
  one.fast_memory_capacity = 1 << 20;
  one.slow_memory_bandwidth = 2;
  one.tensors = {{192, 192}, {192, 192}};
  one.ops = {{OpKind::Pointwise, {0}, 1, 3.0}};
  REQUIRE(one.Finalize().empty());
  const Problem two = Copies(one, 2);
  std::mt19937_64 rng(5);
  std::vector<Subgraph> contexts;
  for (int i = 0; i < 3; ++i) {
    std::vector<int64_t> order(192 * 192);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    contexts.push_back({{0}, Granularity{1, 1, 1}, order, {}});
  }
  for (Elements side : {4, 8, 16, 64}) contexts.push_back({{0}, Granularity{side, side, 1}, std::nullopt, {}});
  std::vector<SubgraphResult> direct;
  for (const Subgraph& s : contexts) direct.push_back(CostSubgraph(two, s, {}));
  REQUIRE(direct[0].ok());
  for (std::size_t budget : {std::size_t{16}, std::size_t{1} << 10}) {
    INFO("budget " << budget);
    CostCache cache(budget);
    for (int round = 0; round < 60; ++round) {
      const size_t i = rng() % contexts.size();
      for (int c = 0; c < 2; ++c) {
        const Subgraph moved = Shifted(contexts[i], one, c);
        const uint64_t misses = cache.stats().misses;
        SubgraphReport report;
        REQUIRE(cache.LookupValid(two, moved, {}, report) == direct[i].ok());
        if (direct[i].ok()) CHECK(report == direct[i].report);
        // Copy 1 right after copy 0: the same shape, in the shard copy 0 just left it in.
        if (c == 1) CHECK(cache.stats().misses == misses);
      }
    }
    const CacheStats stats = cache.stats();
    if (budget > 16) CHECK(stats.misses == contexts.size());
    CHECK(stats.hits + stats.misses == 120);
  }
}

}  // namespace
}  // namespace annealer

namespace annealer {
namespace {

TEST_CASE("cost cache shapes: LookupValid with a prepared ticket answers as without it") {
  // PrepareValid derives a context's key ahead and prefetches (ValidTicket); a batch of contexts
  // prepared first, their records prefetched, then looked up with their tickets, must get
  // CostSubgraph's verdict and report, and leave the cache counting what a cache asked without
  // tickets counts.
  std::mt19937_64 rng(4242);
  RandomScheduleOptions options;
  options.max_steps = 512;
  const Problem one = RandomProblem(rng, DagShape::kMixed, {.min_ops = 6, .max_ops = 12});
  const Problem three = Copies(one, 3);
  CostCache with(1 << 12), without(1 << 12);
  int checked = 0, valid = 0, shape_hits = 0;
  for (int round = 0; round < 150; ++round) {
    const Schedule schedule = RandomSchedule(one, rng, options);
    std::vector<TensorId> retained_in;
    for (const Subgraph& s : schedule.subgraphs) {
      // One context at several settings, in one of the copies: a fit's batch.
      const int c = static_cast<int>(rng() % 3);
      const std::vector<TensorId> in = Shifted(retained_in, one, c);
      std::vector<Subgraph> batch;
      for (int variant = 0; variant < 6; ++variant) {
        Subgraph sub = s;
        if (variant > 0) RandomizeSettings(one, sub, rng, options);
        batch.push_back(Shifted(sub, one, c));
      }
      std::vector<ValidTicket> tickets(batch.size());
      for (size_t i = 0; i < batch.size(); ++i) with.PrepareValid(three, batch[i], in, tickets[i]);
      for (const ValidTicket& ticket : tickets) with.PrefetchRecord(ticket);
      for (size_t i = 0; i < batch.size(); ++i) {
        const SubgraphResult direct = CostSubgraph(three, batch[i], in);
        SubgraphReport by_ticket, plain;
        REQUIRE(with.LookupValid(three, batch[i], in, by_ticket, &tickets[i]) == direct.ok());
        REQUIRE(without.LookupValid(three, batch[i], in, plain) == direct.ok());
        if (direct.ok()) {
          CHECK(by_ticket == direct.report);
          CHECK(plain == direct.report);
          ++valid;
        }
        ++checked;
      }
      retained_in = s.retain;
    }
  }
  const CacheStats a = with.stats(), b = without.stats();
  CHECK(a.hits == b.hits);
  CHECK(a.misses == b.misses);
  CHECK(a.shape_hits == b.shape_hits);
  shape_hits = static_cast<int>(a.shape_hits);
  MESSAGE(checked << " lookups, " << valid << " valid, " << shape_hits << " answered by shape");
  CHECK(checked > 3000);
  CHECK(valid > checked / 4);
  CHECK(shape_hits > checked / 10);
}

TEST_CASE("cost cache: SortById sorts and de-duplicates as std::sort and std::unique, and leaves its bitmap zero") {
  std::mt19937_64 rng(31337);
  int repeats = 0;
  for (int trial = 0; trial < 5000; ++trial) {
    const size_t range = 1 + rng() % (trial % 3 == 0 ? 64 : 20000);
    std::vector<uint64_t> bits((range + 63) / 64, 0);
    std::vector<int32_t> ids(rng() % 300);
    for (int32_t& id : ids) id = static_cast<int32_t>(rng() % range);
    std::vector<int32_t> reference = ids;
    std::sort(reference.begin(), reference.end());
    const bool repeated = std::adjacent_find(reference.begin(), reference.end()) != reference.end();
    reference.erase(std::unique(reference.begin(), reference.end()), reference.end());
    INFO("trial " << trial << ", " << ids.size() << " ids below " << range);
    CHECK(SortById(ids, bits) == repeated);
    CHECK(ids == reference);
    CHECK(std::all_of(bits.begin(), bits.end(), [](uint64_t w) { return w == 0; }));
    repeats += repeated;
  }
  CHECK(repeats > 1000);
}

}  // namespace
}  // namespace annealer
