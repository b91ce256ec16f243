// The switch of the pricer's shortcuts (eval/cost/pricer/step_pricer.h), for the tests that hold
// them to its general loops. Included by eval/cost/subgraph_cost.h, where callers find it.
#pragma once

namespace annealer {

// Within a scope on its thread, CostSubgraph prices every step by its general loops: without the
// shortcuts a context's shape allows (loads and charges without chip rules or the weight path,
// D5 and C5 skipped when every tensor and op has one template, held-over slices told by the
// step indices under step classes). The shortcuts must give the same results to the bit; the
// scope is what the tests compare them with.
class PricingShortcutsOff {
 public:
  PricingShortcutsOff() { ++depth_; }
  ~PricingShortcutsOff() { --depth_; }
  PricingShortcutsOff(const PricingShortcutsOff&) = delete;
  PricingShortcutsOff& operator=(const PricingShortcutsOff&) = delete;
  static bool Allowed() { return depth_ == 0; }

 private:
  static inline thread_local int depth_ = 0;
};

}  // namespace annealer
