// The configurations of P34/P40's claimants, each worked out once per set of ops
// (eval/bound/sums/upstream/upstream_sums.h prices them; P46/P47, eval/bound/sums/upstream/target_instances.h, reads
// the same ones).
#pragma once

#include <array>
#include <map>
#include <memory>
#include <vector>

#include "eval/model/problem.h"

namespace annealer::bound_internal {

// One configuration of a claimant: its (v1, vA, vC), its kind and, for SL, the most targets one
// instance at its tiles can hold (UpstreamSums::TaggedConfigurations says which).
struct TaggedConfiguration {
  std::array<double, 3> v{};
  bool tile = false;  // mode T (P23's step 2)
  int targets = 0;
  int fused = 0;      // j: the claimant's producers run in its subgraph (the others are loaded there)
};

// Keyed on the exact list of ops (order included: the deficits' sums follow it) and the
// claimant's index in its part. Valid because UpstreamSums::TaggedConfigurations is a pure
// function of the problem, the part (its `compute` and `claimants`), the claimant and that list:
// one memo belongs to one part, which is built once for one problem and never changed after
// (copies of it share the memo: P47's copy of P40's part reads the same claimants). P40's value,
// island by island, and P47's over the same islands then ask each claimant's configurations once
// per island instead of twice, and the whole problem's once instead of three times (P40's value,
// P47's copy of it, P47's own). The results are the same to the bit: the same calls, made once.
// Not thread-safe: a part is used by the one thread that computes its bound.
class ConfigurationMemo {
 public:
  struct Entry {
    std::vector<TaggedConfiguration> tagged;  // all of them, in TaggedConfigurations' order
    std::vector<std::array<double, 3>> least; // ParetoLeast of their values
    // P55 (eval/bound/sums/upstream/lone_producers.h): each value plus the floors of the producers it leaves
    // unfused, ParetoLeast; the same as `least` when the claimant has no such floor.
    std::vector<std::array<double, 3>> least_with_lone;
  };
  // The entries over `ops`, one slot per claimant (empty until made).
  std::vector<std::unique_ptr<Entry>>& Of(const std::vector<OpId>& ops, size_t claimants) {
    auto& slots = by_ops_[ops];
    if (slots.size() < claimants) slots.resize(claimants);
    return slots;
  }
  // Per tensor, whether an upstream claimant of the part reads it (the part's claimants alone
  // decide it; empty until first asked).
  std::vector<char> read_by_upstream_sums;

 private:
  std::map<std::vector<OpId>, std::vector<std::unique_ptr<Entry>>> by_ops_;
};

}  // namespace annealer::bound_internal
