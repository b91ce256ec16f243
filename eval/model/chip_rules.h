// A real chip's memory rules (docs/cost-model.md, rules H1-H6): optional, carried by the Problem,
// all off by default. With every rule off the cost model is the contest's, exactly: every
// evaluator skips this file's work, so contest problems price and search as before.
//
// The rules, as the evaluators apply them (the oracle, eval/oracle.cc, is the reference):
//  H1 per-role working sets, each checked at every step beside the one fast memory (rule W):
//     staging      the step's distinct slices (D5) read by a MatMul (LHS or RHS);
//     accumulator  every MatMul's output region produced in the step (the k-loop MatMuls' tiles,
//                  the regions of upstream MatMuls; one per (op, region), as C5 charges them);
//     vector       the step's distinct slices read by a Pointwise op (or loaded by a Layout
//                  sink), plus the output tile of every Pointwise or Layout sink.
//     A slice read in both roles counts in both. Retained tensors (R5) count only in rule W.
//  H2 a double-buffered role's footprint counts twice. What it buys is T1's overlap of a step's
//     loads with its compute, which the contest already grants, and H5's prefetch.
//  H3 tile sides: w, h and k are each a multiple of the chip's base or cover the whole dimension
//     (w >= the output width, h >= its height, k = K*). A restriction, not a rounding.
//  H4 the accumulator role counts `accumulator_factor` (accumulator bytes / element bytes) per
//     element; with `wide_writeback` a k-loop MatMul sink's tile is also written at that width.
//  H5 prefetch: a step's loads whose slices are only of double-buffered roles may be issued
//     during the previous step of the same subgraph, in its slack (compute - exposed memory).
//  H6 two slow paths (TPU v1): a weight tensor -- a graph input (no producer) that every
//     consumer reads only as a MatMul's RHS -- travels the weight path, the other traffic the
//     slow memory's. A weight slice counts in no fast-memory term (not in W, not in H1's
//     roles) but in the weight FIFO, checked per step like H1's roles; a step's memory time is
//     max(weight loads / weight bandwidth, (other loads + writes) / slow-memory bandwidth).
//     M1's reuse is unchanged. Not combined with H5 (CheckChipRules refuses it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace annealer {

// The rules of one chip. Capacities are in elements of the problem's element type (a profile's
// bytes divided by its element bytes); 0 means the role is not checked.
struct ChipRules {
  int64_t staging_capacity = 0;      // H1
  int64_t accumulator_capacity = 0;  // H1
  int64_t vector_capacity = 0;       // H1
  bool double_staging = false;       // H2
  bool double_accumulator = false;   // H2
  bool double_vector = false;        // H2
  int64_t base_w = 1;                // H3: 1 allows every side
  int64_t base_h = 1;
  int64_t base_k = 1;
  int64_t accumulator_factor = 1;    // H4: accumulator bytes / element bytes
  bool wide_writeback = false;       // H4
  bool prefetch = false;             // H5
  double weight_bandwidth = 0;       // H6: elements per time unit of the weight path; 0 = off
  int64_t weight_fifo_capacity = 0;  // H6: elements; 0 means not checked
  bool operator==(const ChipRules&) const = default;
  bool any() const { return !(*this == ChipRules{}); }
  bool aligned() const { return base_w > 1 || base_h > 1 || base_k > 1; }
  bool two_paths() const { return weight_bandwidth > 0; }
};

using Elements = int64_t;

// The roles a slice request plays (H1): which buffer holds it.
enum SliceRole : uint8_t { kStagingRole = 1, kVectorRole = 2 };

// The raw elements of one step in each role, before H2's and H4's factors.
struct RoleUse {
  Elements staging = 0;
  Elements accumulator = 0;
  Elements vector = 0;
};

// Side axes of H3, in the order of a granularity.
enum class SideAxis { kW, kH, kK };

// What H1 reports per subgraph: the peak footprint of each role (after H2 and H4); and H6's
// weight FIFO (the step's weight slices), which Footprints leaves at 0.
struct RoleFootprints {
  Elements staging = 0;
  Elements accumulator = 0;
  Elements vector = 0;
  Elements weight_fifo = 0;
  bool operator==(const RoleFootprints&) const = default;
};

// Whether a side is allowed under H3 on a dimension (the output width or height, or K*).
bool SideAllowed(const ChipRules& rules, SideAxis axis, Elements side, Elements dimension);

// An allowed side near `side` for the search (H3): `side` itself when allowed, else the largest
// multiple of the base below it, else the base, else min(top, dimension) (the whole dimension
// when it is within `top`, the largest side the caller may use). Without a base, `side`.
Elements AlignSide(const ChipRules& rules, SideAxis axis, Elements side, Elements dimension, Elements top);

// H2, H4: a role's footprint of `use`.
RoleFootprints Footprints(const ChipRules& rules, const RoleUse& use);

// The first role of `use` over its capacity (H1), as the detail of a violation:
// "step 3 (tile 1, k-step 1) needs 40960 elements of matrix staging (20480 x2 double-buffered)
// > capacity 32768". nullopt when every role fits.
std::optional<std::string> RoleOverflow(const ChipRules& rules, const RoleUse& use, int64_t step,
                                        int64_t tile, int64_t k_step);

// H6: the memory time of a step whose loads are `weight` elements on the weight path and `other`
// elements (loads and writes) on the slow memory's: the two paths run in parallel. Without H6,
// other / bandwidth exactly (weight is then 0).
inline double StepMemory(const ChipRules& rules, double bandwidth, Elements weight, Elements other) {
  const double slow = static_cast<double>(other) / bandwidth;
  if (!rules.two_paths()) return slow;
  const double fast = static_cast<double>(weight) / rules.weight_bandwidth;
  return fast > slow ? fast : slow;
}

// H6: the detail of a step whose weight slices overflow the FIFO, or nullopt.
std::optional<std::string> WeightFifoOverflow(const ChipRules& rules, Elements weight_slices, int64_t step,
                                              int64_t tile, int64_t k_step);

// The exposed memory of a step under H5 and the slack it leaves: `memory` the step's memory
// term, `prefetchable` the part of it that may move into the previous step's `slack`.
struct PrefetchSplit {
  double exposed = 0;   // what stays in this step
  double slack = 0;     // max(0, compute - exposed): what the next step may use
};
PrefetchSplit ApplyPrefetch(double compute, double memory, double prefetchable, double slack_before);

// One line per rule that is on, for views of a problem ("" when all are off).
std::string DescribeChipRules(const ChipRules& rules);

// A one-line reason when the rules contradict themselves (a base of 0, a factor of 0, prefetch
// without a double-buffered role, a FIFO without a weight path, H6 with H5), else "". The
// readers of problems and profiles call it.
std::string CheckChipRules(const ChipRules& rules, int64_t native, int64_t fast_memory_capacity);

}  // namespace annealer
