// The problem the schedule fuzz target evaluates every input against; the regression tests of
// its findings (tests/fuzz_regressions_test.cc) use it too.
#pragma once

#include <string_view>

namespace annealer::fuzz {

// MatMuls with K = 256 and rectangular operands, a Pointwise between them, a fan-out (tensor 3
// feeds ops 1 and 4) and a Pointwise with a second graph input: most rules have something to
// bite on, and every step walk stays short.
inline constexpr std::string_view kFixedProblem = R"({
  "widths":  [256, 256, 128, 256, 256, 128, 128, 128, 256],
  "heights": [128, 256, 256, 128, 128, 128, 128, 128, 128],
  "inputs": [[0, 1], [3], [4, 2], [5, 6], [3]],
  "outputs": [[3], [4], [5], [7], [8]],
  "base_costs": [2000, 500, 2000, 500, 500],
  "op_types": ["MatMul", "Pointwise", "MatMul", "Pointwise", "Pointwise"],
  "fast_memory_capacity": 70000,
  "slow_memory_bandwidth": 10,
  "native_granularity": [128, 128]
})";

// The same graph with ops 1 and 4 Layout ops (spec L1-L6): op 1 rearranges tensor 3 into a
// tensor of the same shape, op 4 transposes it (128x256 -> 256x128). Both read the output of
// MatMul op 0, so L1 (in slow memory, not fused with op 0) has something to bite on, and op 1
// feeds the LHS of the k-split MatMul op 2 (no V11 for a Layout op).
inline constexpr std::string_view kFixedLayoutProblem = R"({
  "widths":  [256, 256, 128, 256, 256, 128, 128, 128, 128],
  "heights": [128, 256, 256, 128, 128, 128, 128, 128, 256],
  "inputs": [[0, 1], [3], [4, 2], [5, 6], [3]],
  "outputs": [[3], [4], [5], [7], [8]],
  "base_costs": [2000, 0, 2000, 500, 0],
  "op_types": ["MatMul", "Layout", "MatMul", "Pointwise", "Layout"],
  "fast_memory_capacity": 70000,
  "slow_memory_bandwidth": 10,
  "native_granularity": [128, 128]
})";

}  // namespace annealer::fuzz
