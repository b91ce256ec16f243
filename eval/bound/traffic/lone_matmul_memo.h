// LoneMatMulLatency (eval/bound/traffic/alone.h), worked out once per MatMul shape.
#pragma once

#include <map>
#include <tuple>
#include <vector>

#include "eval/bound/traffic/alone.h"
#include "eval/model/problem.h"

namespace annealer::bound_internal {

// Keyed on all that LoneMatMulLatency reads of x: its output's rows and columns, its reduction
// length, its base cost, whether each operand takes the weight path, and the arguments (the
// retentions, `epilogue`, `fit_memory`); the rest it reads is the problem's (native size,
// capacity, bandwidths, chip rules). So one memo serves one problem and one `weights`, which
// its owner keeps for the memo's life; two MatMuls of one key get the same value to the bit.
// A deep network repeats its layers' shapes (Inception-v3 on mlsys-2026: 318 MatMuls with K > n,
// 25 shapes), and each call walks every tile shape.
class LoneMatMulMemo {
 public:
  double Latency(const Problem& problem, OpId x, const std::vector<char>& weights, bool lhs_retained,
                 bool rhs_retained, bool output_retained, double epilogue = 0, bool fit_memory = false) {
    const Op& op = problem.ops[x];
    const Tensor& out = problem.tensors[op.output];
    const bool two_paths = problem.chip.two_paths();
    const int flags = (two_paths && weights[op.inputs[0]] ? 1 : 0) | (two_paths && weights[op.inputs[1]] ? 2 : 0) |
                      (lhs_retained ? 4 : 0) | (rhs_retained ? 8 : 0) | (output_retained ? 16 : 0) |
                      (fit_memory ? 32 : 0);
    const Key key{out.height, out.width, problem.ReductionLength(x), op.base_cost, epilogue, flags};
    const auto it = latency_.find(key);
    if (it != latency_.end()) return it->second;
    const double latency =
        LoneMatMulLatency(problem, x, weights, lhs_retained, rhs_retained, output_retained, epilogue, fit_memory);
    latency_.emplace(key, latency);
    return latency;
  }

 private:
  using Key = std::tuple<Elements, Elements, Elements, double, double, int>;
  std::map<Key, double> latency_;
};

}  // namespace annealer::bound_internal
