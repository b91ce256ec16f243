// The scatter of the data-movement family (src/import/lowering/data_movement.cc), shared with
// the cache update of attention.cc (TensorScatter).
#pragma once

#include <cstddef>
#include <optional>

#include "src/import/lowering/context.h"

namespace annealer::lowering {

// The data (input 0) with updates written over it (ScatterND, ScatterElements, TensorScatter):
// one Layout op per part of the data, at its size, reading the data's part, the updates (input
// `updates`) and computed indices (input `indices`, when given and present), as a gather at
// computed addresses reads its indices. `match_parts`: the updates laid out as the data, part p
// read by part p of the output (a cache's heads); otherwise every part reads all of them.
// `reduces` (a scatter-add, -mul, -max, -min): the updates gathered at the data's size, then a
// 1-pass Pointwise op with the data. Data or updates known at import are folded
// (`broadcast-constant`). Binds output 0.
void ScatterInto(Context& cx, const OnnxNode& node, size_t updates, std::optional<size_t> indices, bool match_parts,
                 bool reduces);

}  // namespace annealer::lowering
