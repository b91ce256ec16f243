// A bounded, thread-safe memo of subgraph costs, shared by every search worker.
//
// The cost of a subgraph depends only on its context: the op list as given (order matters for
// V6), the granularity, the traversal (or raster), the tensors retained in from the previous
// subgraph and the tensors it retains out. That context is the key; the full key is stored so
// that a hash collision can never return another subgraph's cost.
//
// It depends on the ids in the context only through what pricing reads of them (op kinds, base
// costs, inputs and outputs, tensor shapes) and through their order (sorts by id), so a
// context's SHAPE — its ids replaced by their ranks among the context's own ops and tensors,
// with those facts — also determines it: contexts of one shape are order-preserving
// relabellings of each other and price in the same steps to the same bits. A deep model
// repeats its layers, so on a stack of N layers N contexts share a shape, and keying by shape
// keeps what the cache holds, and what a lookup costs, from growing with the number of layers.
// A valid context is therefore answered by its shape. A failure's words name ids, so a shape
// known to fail answers only whether a context fails (LookupValid); the words come from the
// exact context, kept for failures only, or are re-derived (cheaply when a rule checked before
// pricing fails, e.g. V11, else by pricing). One cache serves ONE problem object for its
// lifetime: the keys hold the problem's address, not its contents, so call Clear() before using
// the cache for another problem (which may sit at the same address).
//
// Levels, in the order a lookup tries them:
// - a per-thread front table: no lock, no shared write. It holds valid results of small raster
//   contexts (at most 12 op and tensor ids in all, sides below 2^21) keyed by their ids, packed
//   into eight words and compared word by word; two-way sets, 2048 entries of 128 bytes (256 KB
//   per thread), the older of a set's two entries replaced. Each entry also carries the
//   subgraph's sequence facts (eval/model/flat_problem.h) for EvaluateFast. Ids cost nothing to key,
//   but on a deep graph they seldom repeat.
// - for a context the front table cannot key (an explicit traversal, more than 12 ids), a
//   per-thread id table: its ids as words, valid and failing, each key kept whole in a ring of
//   words (512 KB) and compared in full; 4096 entries. LookupOrCompute only (see LookupValid).
// - the shared tables: shards, each with its own spin lock, share of the budget and open-
//   addressing indexes, one of shapes and one of exact contexts (failures and contexts without
//   a shape key; violation strings in a side table), so what one thread priced another finds.
//   Memory is bounded by the entry budget: a full shard is flushed whole (generation flush) —
//   simple, and a search re-fills the hot entries within a few moves.
// The per-thread tables are filled by LookupOrCompute only: the evaluator asks for the same
// contexts again and again, while a granularity fit (LookupValid) asks for a dozen contexts per
// move that are mostly new, whose entries would only evict others (on ResNet-50 the thread's
// tables answered 13 % of LookupValid's lookups, and its stores cost more than the hits saved).
// No per-thread table holds shapes: on a deep graph a shape recurs mostly after thousands of
// others (another layer, another move), beyond a thread table's reach, and its key (~43 words
// on ResNet-50) costs as many cache lines to compare there as in the shared table.
// A thread's tables serve one cache and one problem at a time (a serial number unique per
// cache object and per Clear()); using another empties them.
// Hits and misses are counted per thread in counter blocks the cache owns (each written by its
// thread only, plain load + store) and summed by stats(): exact, and free of shared writes.
//
// The cache also holds the problem's flat DAG facts (eval/model/flat_problem.h), derived once on first
// use, for the sequence rules of EvaluateFast.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "eval/cost/cache_keys.h"
#include "eval/model/flat_problem.h"
#include "eval/model/evaluation.h"
#include "eval/model/problem.h"
#include "eval/model/schedule.h"

namespace annealer {

struct CacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t shape_hits = 0;     // hits answered by another context's shape (part of `hits`)
  uint64_t entries = 0;        // exact contexts stored (failing ones, and those without a shape key)
  uint64_t shape_entries = 0;  // shapes stored (entries + shape_entries stay within the budget)
  double hit_rate() const {
    const uint64_t lookups = hits + misses;
    return lookups == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(lookups);
  }
};

// What LookupValid derives of a context before it reads the shared tables: its shape key and the
// key's hash. CostCache::PrepareValid derives it ahead, so that a caller with several lookups to
// make (FitSubgraph's descent prices up to a dozen candidates of one context at a time) can have
// the memory they will read fetched for all of them at once, instead of waiting for each
// lookup's table slot and then its record in turn. A ticket answers for the one context
// (problem, subgraph, retained-in set) it was prepared for, unchanged since.
struct ValidTicket {
  std::vector<uint64_t> key;
  uint64_t hash = 0;
  bool has_shape = false;
};

class CostCache {
 public:
  // `max_entries` bounds the number of stored subgraph contexts (at least one per shard).
  explicit CostCache(std::size_t max_entries);
  ~CostCache();
  CostCache(const CostCache&) = delete;
  CostCache& operator=(const CostCache&) = delete;

  // The cost of `subgraph` after a subgraph that retained `retained_in`: from the cache when
  // present, otherwise computed by CostSubgraph (eval/cost/subgraph_cost.h) and stored.
  // Equal to EvaluateSubgraphOracle(problem, subgraph, retained_in) in verdict, rule and report.
  SubgraphResult LookupOrCompute(const Problem& problem, const Subgraph& subgraph,
                                 const std::vector<TensorId>& retained_in);
  // The same, written into `result` (reusing its strings' storage: no construction or
  // destruction of a SubgraphResult per call).
  void LookupOrCompute(const Problem& problem, const Subgraph& subgraph,
                       const std::vector<TensorId>& retained_in, SubgraphResult& result);

  // Whether the context is valid and, when it is, its report in `report`: the verdict and report
  // of LookupOrCompute without the violation's words. A caller that only compares latencies
  // (granularity fitting tries a dozen contexts per move, most of them never seen before on a
  // deep graph) is answered by the context's shape whether that shape was priced valid or
  // failing, so what it costs does not grow with the number of copies of a layer. Order: the
  // front table (a context it cannot key skips it), then the shared shape table (no probe of the
  // exact table), then pricing, stored under the shape only; nothing is stored per thread. A
  // context without a shape key goes to the exact table.
  // `traversal_words`, when given (no ticket), must be AppendTraversalWords' words for
  // subgraph.traversal, as for PrepareValid.
  bool LookupValid(const Problem& problem, const Subgraph& subgraph,
                   const std::vector<TensorId>& retained_in, SubgraphReport& report,
                   const ValidTicket* ticket = nullptr, const std::vector<uint64_t>* traversal_words = nullptr);
  // Fills `ticket` for the context (see ValidTicket) and prefetches the line of its front-table
  // set and that of its first shape slot; PrefetchRecord then, after the slots of a batch have
  // had time to arrive, prefetches the record the slot names. Both only hint: LookupValid with
  // the ticket answers exactly as without it, and only skips deriving the key again.
  // `traversal_words`, when given, must be AppendTraversalWords' words for subgraph.traversal
  // (a caller that lends one order to many pricings derives them once).
  void PrepareValid(const Problem& problem, const Subgraph& subgraph,
                    const std::vector<TensorId>& retained_in, ValidTicket& ticket,
                    const std::vector<uint64_t>* traversal_words = nullptr);
  void PrefetchRecord(const ValidTicket& ticket) const;

  // The costs of all subgraphs of `schedule`, each after its predecessor's retained set, into
  // results[0, n) (grown as needed): the same as LookupOrCompute on each in turn, but every
  // key is built and its front-table slot prefetched first, so the lookups' memory accesses
  // overlap. facts[i] gets subgraph i's sequence facts when the front table holds them
  // (unknown otherwise).
  void LookupOrComputeAll(const Problem& problem, const Schedule& schedule,
                          std::vector<SubgraphResult>& results,
                          std::vector<SmallSequenceFacts>& facts);

  // The flat DAG facts of `problem`, derived on the first call after construction or Clear();
  // null when the cache already serves another problem object.
  const FlatProblem* Flat(const Problem& problem);

  // Not concurrent with lookups.
  CacheStats stats() const;
  // Empties the cache and its counters and unbinds every thread's front table. Not concurrent
  // with lookups.
  void Clear();

  struct CounterBlock;  // one per (thread, cache): hits and misses, written by that thread

 private:
  struct Shard;
  static constexpr std::size_t kShards = 16;
  std::size_t entries_per_shard_;
  std::unique_ptr<Shard[]> shards_;
  // Unique per cache object and per Clear(): a thread's front table serves the cache whose
  // serial it holds.
  std::atomic<uint64_t> serial_;
  mutable std::mutex counters_mutex_;
  std::vector<std::unique_ptr<CounterBlock>> counter_blocks_;
  CounterBlock* RegisterCounterBlock();

  struct FrontKey;    // a small context packed in eight words
  struct FrontTable;  // a thread's lock-free table of recent valid results
  struct WordTable;   // a thread's table of recent word keys (shapes, large contexts' ids)
  static thread_local FrontTable front_;
  FrontTable& BoundFront(const Problem& problem);
  static bool FrontHit(const FrontTable& local, const FrontKey& key, uint64_t front_hash,
                       SubgraphResult& result, SmallSequenceFacts* facts);
  // Behind the front table: a valid context by its shape, a failing one (its words name ids)
  // from the exact table; pricing on a miss. Stores a valid result in the front table when
  // `key` is given, with its sequence facts (also written to `facts` when not null).
  void LookupBehindFront(FrontTable& local, const Problem& problem, const Subgraph& subgraph,
                         const std::vector<TensorId>& retained_in, const FrontKey* key,
                         uint64_t front_hash, SubgraphResult& result, SmallSequenceFacts* facts);
  // LookupBehindFront past the thread's id table.
  void ResolveBehindFront(FrontTable& local, const Problem& problem, const Subgraph& subgraph,
                          const std::vector<TensorId>& retained_in, const FrontKey* key,
                          uint64_t front_hash, SubgraphResult& result, SmallSequenceFacts* facts,
                          std::span<const uint64_t> traversal_words = {});
  // LookupValid past the front table: by shape (or the exact table), storing nothing per thread.
  bool ResolveValid(FrontTable& local, const Problem& problem, const Subgraph& subgraph,
                    const std::vector<TensorId>& retained_in, SubgraphReport& report,
                    const ValidTicket* ticket, std::span<const uint64_t> traversal_words);
  enum class ShapeAnswer { kNoShape, kValid, kFails };
  // The verdict of a context by its shape (report in `report`): from the shared shape table, or
  // by pricing, when `priced` is set and `priced_result` holds the whole result, words
  // included. kNoShape: the context has no shape key, nothing was done. With a ticket, its key
  // and hash are the context's (not derived again). `traversal_words`, when not empty, are
  // AppendTraversalWords' words for subgraph.traversal (a caller that has them: the id table's
  // key ends with them, a fit lends cached orders with theirs).
  ShapeAnswer AnswerByShape(const Problem& problem, const Subgraph& subgraph,
                            const std::vector<TensorId>& retained_in, SubgraphReport& report,
                            SubgraphResult& priced_result, bool& priced,
                            const ValidTicket* ticket = nullptr, std::span<const uint64_t> traversal_words = {});
  // The exact table, then (a shape `known_to_fail` first tries StructuralFailure) pricing;
  // what it derives is stored under the exact context. Counts the lookup.
  void LookupExact(FrontTable& local, const Problem& problem, const Subgraph& subgraph,
                   const std::vector<TensorId>& retained_in, bool known_to_fail, SubgraphResult& result);
  void StoreExact(uint64_t hash, const Problem& problem, const Subgraph& subgraph,
                  const std::vector<TensorId>& retained_in, const SubgraphResult& result);
  // A valid result into the thread's front table when `key` is given, with its sequence facts
  // (also written to `facts` when not null; unknown without a key).
  void StoreFront(FrontTable& local, const Problem& problem, const Subgraph& subgraph,
                  const FrontKey* key, uint64_t front_hash, const SubgraphReport& report,
                  SmallSequenceFacts* facts);
  std::atomic<const FlatProblem*> flat_{nullptr};
  std::unique_ptr<FlatProblem> flat_storage_;
  std::mutex flat_mutex_;
};

}  // namespace annealer
