// The elementwise lowering (src/import/lowering/elementwise.cc) for converters whose op is an
// elementwise function of several operands with a pass count of its own (RotaryEmbedding).
#pragma once

#include <vector>

#include "src/import/lowering/context.h"

namespace annealer::lowering {

// One Pointwise op of `passes` per part of the result, the broadcast of the operands' dims in the
// largest activation's layout. Activation operands of another shape or layout are gathered at
// the result's size (a Layout op); constants smaller than the result are folded
// (`broadcast-constant`), a full-size parameter is a weight tensor; row statistics are read
// through their sources. Binds output 0 of `node`.
void LowerOnActivations(Context& cx, const OnnxNode& node, const std::vector<const Value*>& data, double passes);

}  // namespace annealer::lowering
