// Small facts about op sets that every part of the search needs: topological sorting,
// connectivity, produced / boundary tensors, what feeds what, and the retain sets worth keeping.
// Pricing a subgraph and fitting its granularity is search/fit/fit.h.
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
