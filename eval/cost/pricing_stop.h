// Cooperative cancellation of a long pricing.
//
// Most subgraphs are priced by step classes in time independent of their number of steps, but
// the step-by-step fallback (eval/cost/subgraph_cost.h) walks every step: on a fine grid one pricing
// can outlast what is left of a search's time budget. A search thread installs its stop test
// with ScopedPricingStop; the step walk polls it every few thousand steps and, when it answers
// true, throws PricingCancelled. Nothing half-priced escapes: the exception leaves before any
// result is returned or stored in a cache, and the caller treats the candidate as not priced.
#pragma once

#include <exception>
#include <functional>

namespace annealer {

class PricingCancelled : public std::exception {
 public:
  const char* what() const noexcept override { return "pricing cancelled: the search must stop"; }
};

// Installs `stop` (may be empty) as the calling thread's stop test for its lifetime; nests.
class ScopedPricingStop {
 public:
  explicit ScopedPricingStop(const std::function<bool()>& stop);
  ~ScopedPricingStop();
  ScopedPricingStop(const ScopedPricingStop&) = delete;
  ScopedPricingStop& operator=(const ScopedPricingStop&) = delete;

 private:
  const std::function<bool()>* previous_;
};

// Throws PricingCancelled when the calling thread's stop test says stop.
void PollPricingStop();

}  // namespace annealer
