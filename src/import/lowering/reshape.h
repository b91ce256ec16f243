// Relabelling an activation under other dims (src/import/lowering/reshape.cc), for converters
// that rewrite an op into reshapes, transposes and MatMuls (Einsum).
#pragma once

#include <cstdint>
#include <vector>

#include "src/import/lowering/context.h"

namespace annealer::lowering {

// x under `dims` (same elements, ONNX's flat order): the same tensors relabelled when the 2-D
// layout allows it, else a pending rearrangement (one Layout op when a consumer reads it).
Act ReshapeAct(Context& cx, const OnnxNode& node, const Act& x, const std::vector<int64_t>& dims);
// x with its axes permuted (`perm`, a permutation checked by the caller): a relabelling.
Act TransposeAct(Context& cx, const OnnxNode& node, const Act& x, const std::vector<int64_t>& perm);

}  // namespace annealer::lowering
