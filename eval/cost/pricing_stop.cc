#include "eval/cost/pricing_stop.h"

namespace annealer {

namespace {
thread_local const std::function<bool()>* current_stop = nullptr;
}  // namespace

ScopedPricingStop::ScopedPricingStop(const std::function<bool()>& stop) : previous_(current_stop) {
  current_stop = stop ? &stop : nullptr;
}

ScopedPricingStop::~ScopedPricingStop() { current_stop = previous_; }

void PollPricingStop() {
  if (current_stop != nullptr && (*current_stop)()) throw PricingCancelled();
}

}  // namespace annealer
