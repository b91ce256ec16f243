// Reuse of what a context's pricing derives that does not depend on the granularity or the
// traversal, between consecutive pricings of one context on one thread.
//
// A context is a problem, an op list, a retain set and a retained-in set. Granularity fitting
// (search/fit/fit.h) prices one context at ~20 granularities and traversals in a row;
// within a ContextReuse scope on its thread, CostSubgraph keeps the structure (the checks and
// roles of eval/model/subgraph_structure.h that do not read the granularity) and the slice and charge
// templates of the last context it analysed, and the cost cache keeps the last shape key's words
// but for the granularity and traversal. A call for another context derives everything anew and
// is remembered instead. Each reuse compares the whole context (ops, retain and retained-in sets,
// the problem's address), so what is reused is what would have been derived.
//
// Outside a scope nothing is remembered: a problem may be freed and another built at its address,
// which only the scope's owner can rule out. The problem must outlive the scope; scopes nest (the
// outermost one's bounds count).
#pragma once

#include <cstdint>

namespace annealer {

class ContextReuse {
 public:
  ContextReuse() {
    if (depth_++ == 0) ++generation_;
  }
  ~ContextReuse() {
    if (--depth_ == 0) ++generation_;
  }
  ContextReuse(const ContextReuse&) = delete;
  ContextReuse& operator=(const ContextReuse&) = delete;

  // 0 outside a scope; otherwise a number unique to the outermost scope open on this thread.
  static uint64_t Current() { return depth_ > 0 ? generation_ : 0; }

 private:
  static inline thread_local int depth_ = 0;
  static inline thread_local uint64_t generation_ = 0;
};

}  // namespace annealer
