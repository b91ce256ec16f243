// The keys under which the cost cache (eval/cost/cost_cache.h) files a context's price: the
// exact key (the context's ids: its op list as given, the granularity, the traversal, the
// retained sets), the per-thread id key (the same ids packed into words) and the shape key (the
// ids replaced by their ranks among the context's own ops and tensors, with what pricing reads of
// them). What identifies a price lives here; where prices are stored, the cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "eval/model/problem.h"
#include "eval/model/schedule.h"

namespace annealer {

// The hash of a context's exact key (problem address, ops in order, granularity, a sample of the
// traversal, the retained sets as sets). Cheap multiply-add chaining with one finalizer: every
// key is compared in full on a match, so the hash only has to spread keys, not resist
// adversaries.
uint64_t HashExactKey(const Problem& problem, const Subgraph& subgraph, const std::vector<TensorId>& retained_in);

// The hash of a word key (an id key or a shape key).
uint64_t HashWords(const std::vector<uint64_t>& words);

// The shape key of a context into `key`: false when it has none (an id out of range, a count or
// side beyond the header's fields). Contexts of equal shape keys are order-preserving
// relabellings of each other and price to the same bits. Within a ContextReuse scope
// (eval/cost/context_reuse.h) the words of the last context are remembered per thread, so the
// granularities of one fit rebuild only the header. `traversal_words`, when not empty, are
// AppendTraversalWords' words for subgraph.traversal (a caller that lends one order to many
// pricings derives them once).
bool ShapeKey(const Problem& problem, const Subgraph& subgraph, const std::vector<TensorId>& retained_in,
              std::vector<uint64_t>& key, std::span<const uint64_t> traversal_words = {});

// The ids of a context as words, the key of a thread's id table (contexts the front table cannot
// key: an explicit traversal, more than 12 ids): the counts, the granularity, the ops as listed,
// then the sorted retained sets, 32-bit ids two to a word, then the traversal's words
// (AppendTraversalWords). Returns where those begin (the key's size when there is no traversal).
size_t BuildIdKey(const Subgraph& subgraph, const std::vector<TensorId>& retained_in, std::vector<uint64_t>& key);

// The words of the shape (ShapeKey) of the context `ops` after `retained_in`, retaining
// `retain`, at no granularity and raster traversal, into `words`; false when the context has no
// shape key. Contexts of equal words are order-preserving relabellings of each other, so
// whatever is derived only from what pricing reads of them (e.g. search/fit/fit.h's
// granularity fit) is the same for all of them.
bool ContextShapeWords(const Problem& problem, const std::vector<OpId>& ops,
                       const std::vector<TensorId>& retained_in, const std::vector<TensorId>& retain,
                       std::vector<uint64_t>& words);

// The words by which the cache's word keys (a context's shape, a thread's id keys) hold an
// explicit traversal `order`, appended to `words`: a tag, then either the tiles (tag 0) or, when
// shorter, the first tile and the runs of equal steps between consecutive tiles, each as its step
// (64-bit wrapping difference) and its length (tag 1). The named patterns are two runs per row or
// column, so a fit's traversal of up to 2,048 tiles takes a few dozen words instead of one word
// per tile to copy and compare. The key's header holds order.size(), so the words decode to the
// order: two orders of one length have equal words exactly when they are equal.
void AppendTraversalWords(const std::vector<int64_t>& order, std::vector<uint64_t>& words);

// Sorts ids in [0, 64 * bits.size()) and drops repeats, by a bitmap that is all zero before and
// after: what std::sort and std::unique give, at a mark per id and a read per word of the range
// the ids span (a shape key sorts its context's ops and tensors: on ResNet-50's contexts of 50-70
// ops, ~200 ids, the sorts were most of the key's build). Returns whether an id was listed more
// than once.
bool SortById(std::vector<int32_t>& ids, std::vector<uint64_t>& bits);

}  // namespace annealer
