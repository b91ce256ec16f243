// Arithmetic on values known at import time (shape computations, scalars), shared by the
// elementwise converters and Expand.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/import/lowering/values.h"

namespace annealer::lowering {

// The numpy broadcast of two shapes; `ok` false if they do not broadcast.
std::vector<int64_t> Broadcast(std::vector<int64_t> a, std::vector<int64_t> b, bool& ok);

// a `op` b broadcast to `out` (Add, Sub, Mul, Div, Equal, Less, Greater, Max, Min, Pow, And, Or,
// Mod); nullopt when an operand has no values, the result is over kMaxConstantElements, or the
// op is another.
std::optional<std::vector<double>> FoldBinary(const std::string& op, const Const& a, const Const& b,
                                              const std::vector<int64_t>& out);

}  // namespace annealer::lowering
