// Pricing one subgraph in its context (retained-in set, own retain set) through the shared cost
// cache, and fitting its granularity and traversal: what every move, pass and start of the search
// asks of a candidate subgraph. The op-set facts it builds on are search/subgraph_tools.h.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "eval/oracle.h"
#include "search/subgraph_tools.h"

namespace annealer {

class CostCache;
struct ValidTicket;

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

}  // namespace annealer
