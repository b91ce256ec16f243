// Small facts about subgraphs that every part of the search needs: topological sorting of an
// op set, connectivity, produced / boundary tensors, and the pricing + granularity fitting of one
// subgraph in its context (retained-in set, own retain set).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "eval/oracle.h"
#include "eval/model/problem.h"
#include "eval/model/schedule.h"

namespace annealer {

class CostCache;
struct ValidTicket;

// Topological rank of every op (its index in problem.topological_order).
std::vector<int> TopologicalRanks(const Problem& problem);

// Sorts and de-duplicates `ops` by topological rank (`rank`: TopologicalRanks, distinct).
std::vector<OpId> SortTopologically(const std::vector<int>& rank, std::vector<OpId> ops);
// The same by std::sort and std::unique: the reference SortTopologically's one- and two-run
// fast paths answer to (tests/search/search_speed_helpers_test.cc).
std::vector<OpId> SortTopologicallyReference(const std::vector<int>& rank, std::vector<OpId> ops);

// True when the ops are weakly connected through tensors produced and consumed among them (V5).
bool IsConnected(const Problem& problem, const std::vector<OpId>& ops);

// The weakly connected components of `ops` (each in the input's relative order).
std::vector<std::vector<OpId>> Components(const Problem& problem, const std::vector<OpId>& ops);

// True when a path leaves the op set and comes back into it (the set is not convex): no order of
// subgraphs can then run it as one subgraph.
bool LeavesAndReturns(const Problem& problem, const std::vector<int>& rank, const std::vector<OpId>& ops);

// A set of small non-negative ids (tensors, ops) that empties in O(1): an id is a member when
// its stamp equals the current generation. The move generator keeps these per thread, sized to
// the problem, instead of allocating and zeroing a flag vector on every call.
class StampSet {
 public:
  // Empties the set and makes room for ids in [0, size).
  void Clear(size_t size) {
    if (stamps_.size() < size) stamps_.resize(size, 0);
    if (++generation_ == 0) {  // wrapped: old stamps could read as members again
      std::fill(stamps_.begin(), stamps_.end(), 0);
      generation_ = 1;
    }
  }
  void Insert(int id) { stamps_[id] = generation_; }
  // Inserts `id`; false when it was already a member.
  bool InsertNew(int id) {
    if (stamps_[id] == generation_) return false;
    stamps_[id] = generation_;
    return true;
  }
  bool Contains(int id) const { return stamps_[id] == generation_; }

 private:
  std::vector<uint32_t> stamps_;
  uint32_t generation_ = 0;
};

// Tensors produced by ops of the subgraph, sorted.
std::vector<TensorId> ProducedTensors(const Problem& problem, const std::vector<OpId>& ops);
// Tensors consumed by ops of the subgraph and produced by none of them (IN(S), spec A.4), sorted.
std::vector<TensorId> BoundaryInputs(const Problem& problem, const std::vector<OpId>& ops);
// The same into a caller's buffer (cleared first), so a hot loop reuses its capacity.
void ProducedTensorsInto(const Problem& problem, const std::vector<OpId>& ops, std::vector<TensorId>& out);
void BoundaryInputsInto(const Problem& problem, const std::vector<OpId>& ops, std::vector<TensorId>& out);

// holding[op]: the subgraphs of `s` that run op, ascending (several when it is recomputed), into
// a caller's buffer sized to the problem's ops. Passes that look up where a tensor's producer or
// readers run build it once per schedule instead of scanning every subgraph per lookup.
void SubgraphsHoldingInto(const Schedule& s, size_t op_count, std::vector<std::vector<int>>& holding);

// True when `to` reads (as a boundary input) a tensor that `from` produces.
bool Feeds(const Problem& problem, const std::vector<OpId>& from, const std::vector<OpId>& to);
// Feeds with one side fixed and its tensors derived once, for a scan over many subgraphs of the
// other side (a move checks what it would pass): FeedsFrom(from)(to) and FeedsInto(to)(from)
// are Feeds(from, to).
class FeedsFrom {
 public:
  FeedsFrom(const Problem& problem, const std::vector<OpId>& from);
  bool operator()(const std::vector<OpId>& to) const;

 private:
  const Problem& problem_;
  std::vector<TensorId> made_;  // sorted
};
class FeedsInto {
 public:
  FeedsInto(const Problem& problem, const std::vector<OpId>& to);
  bool operator()(const std::vector<OpId>& from) const;

 private:
  const Problem& problem_;
  std::vector<TensorId> inputs_;  // BoundaryInputs(to), sorted
};

// What the search needs to know of one subgraph's op list, whatever its configuration: its
// boundary inputs (sorted) and its sinks (outputs no op of it reads, in op order).
struct OpsFacts {
  std::vector<TensorId> inputs;
  std::vector<TensorId> sinks;
  bool operator==(const OpsFacts&) const = default;
};
// Refills `facts` (keeping its capacity) in one walk over the ops' inputs.
void ComputeOpsFacts(const Problem& problem, const std::vector<OpId>& ops, OpsFacts& facts);
// Appends the same facts to two lists, so that those of many subgraphs can lie back to back.
void AppendOpsFacts(const Problem& problem, const std::vector<OpId>& ops, std::vector<TensorId>& inputs,
                    std::vector<TensorId>& sinks);
// ComputeOpsFacts(ops) from the facts (inputs, sinks) of an op list that grew into `ops` by the
// ops `pulled`: `ops` sorted by `rank` (TopologicalRanks) and distinct, `pulled` distinct ops
// it did not hold, each the producer of one of its boundary inputs (so no pulled op is a sink).
// Work in proportion to the old facts and the pulled ops, not to `ops` (a repair pulling a
// producer into a subgraph of ~70 ops recomputed its facts each round). `facts` must not be
// what `inputs` or `sinks` view.
void GrowOpsFacts(const Problem& problem, const std::vector<int>& rank, const std::vector<OpId>& ops,
                  std::span<const TensorId> inputs, std::span<const TensorId> sinks,
                  const std::vector<OpId>& pulled, OpsFacts& facts);

// Prices one subgraph in context through the shared cache when there is one.
class SubgraphPricer {
 public:
  SubgraphPricer(const Problem& problem, CostCache* cache);
  SubgraphResult Price(const Subgraph& subgraph, const std::vector<TensorId>& retained_in) const;
  // The latency of a valid context, nullopt for an invalid one (CostCache::LookupValid: no
  // violation words, so a shape answers either way).
  // With a ticket that PrepareLatency filled for this context, the lookup does not derive the
  // context's key again (CostCache::PrepareValid).
  // Without a ticket, `traversal_words` (when given) are AppendTraversalWords' words for
  // subgraph.traversal, which the lookup then does not derive (as for PrepareLatency).
  std::optional<Latency> PriceLatency(const Subgraph& subgraph, const std::vector<TensorId>& retained_in,
                                      const ValidTicket* ticket = nullptr,
                                      const std::vector<uint64_t>* traversal_words = nullptr) const;
  // A batch's PriceLatency calls prepared ahead (CostCache::PrepareValid, PrefetchRecord):
  // false, and nothing done, without a cache.
  bool PrepareLatency(const Subgraph& subgraph, const std::vector<TensorId>& retained_in,
                      ValidTicket& ticket, const std::vector<uint64_t>* traversal_words = nullptr) const;
  void PrefetchRecord(const ValidTicket& ticket) const;
  const Problem& problem() const { return problem_; }
  CostCache* cache() const { return cache_; }
  // Unique per pricer object (copies share it): what FitSubgraph's per-thread memo is bound to,
  // since another problem may later sit at the same address.
  uint64_t serial() const { return serial_; }

 private:
  const Problem& problem_;
  CostCache* cache_;
  uint64_t serial_;
};

// Chooses granularity and traversal for the given ops, retained-in set and retain set by a
// coordinate descent over w, h, k (powers of two up to native / K) and the named traversals,
// starting from `start` when given (else the largest granularity). Returns nullopt when no
// candidate tried is valid. `thorough` widens the search (polish) and then refines each side
// between powers of two: with sides that divide their dimension, or with any side when
// `partial_edge_tiles` (whose latency rests on spec O9). `stop` is polled between evaluations
// and inside long pricings; when it returns true the best found so far is returned.
// The fit is a function of its arguments (the pricer's answers are exact), so each thread
// memoizes complete fits (not those `stop` cut) per pricer, keyed by every input it reads: the
// ops, both tensor sets, `thorough`, `partial_edge_tiles`, the start's granularity and the
// named traversal it starts from. A move re-fits the same few subgraphs in the same contexts
// again and again (an SA walk proposes, rejects and proposes again); on a network a fit costs
// ~20 pricings of large subgraphs, a memo hit one key comparison.
struct FitResult {
  Subgraph subgraph;
  Latency latency = 0;
};
std::optional<FitResult> FitSubgraph(const SubgraphPricer& pricer, const std::vector<OpId>& ops,
                                     const std::vector<TensorId>& retained_in,
                                     const std::vector<TensorId>& retain,
                                     const Subgraph* start, bool thorough,
                                     const std::function<bool()>& stop,
                                     bool partial_edge_tiles = false);

// True when no granularity or traversal gives the context a valid subgraph, by the structural
// rules alone (eval/model/subgraph_structure.h, no pricing): a rule that does not depend on them
// fails (V1, V5, V6, V8, V12, G3, L1), or V11 fails at the largest sides and k a fit tries
// (w = h = native, k = min(native, the least reduction length)), below which it keeps failing
// (it asks w >= K or h >= K of a MatMul split in k, k < K). FitSubgraph asks it when its first
// candidate fails, instead of walking down every size (on a network most of those fits,
// e.g. a Pointwise op moved in front of a MatMul with K > native, can never be valid).
bool NoGranularityFits(const Problem& problem, const std::vector<OpId>& ops,
                       const std::vector<TensorId>& retained_in, const std::vector<TensorId>& retain);

// The retain set of a subgraph filtered to what is allowed and useful: produced by it (V8),
// not a graph output (O5), and a boundary input of `next` (when there is a next subgraph).
std::vector<TensorId> UsefulRetain(const Problem& problem, const std::vector<OpId>& ops,
                                   const std::vector<TensorId>& retain, const Subgraph* next);
// The same with only the next subgraph's ops (null when there is none).
std::vector<TensorId> UsefulRetain(const Problem& problem, const std::vector<OpId>& ops,
                                   const std::vector<TensorId>& retain, const std::vector<OpId>* next_ops);
// The same into `out` (its buffer reused; not `retain`).
void UsefulRetainInto(const Problem& problem, const std::vector<OpId>& ops, const std::vector<TensorId>& retain,
                      const std::vector<OpId>* next_ops, std::vector<TensorId>& out);

}  // namespace annealer
