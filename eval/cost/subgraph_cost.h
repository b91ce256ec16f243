// The fast cost of one subgraph in its context — the same function as EvaluateSubgraphOracle
// (eval/oracle.h), computed from the subgraph's structure instead of step by step.
//
// How: the oracle's backward derivation (spec D1-D4, C2-C4) is run ONCE per subgraph on
// symbolic intervals ("the tile's rows", "the tile's columns", "the step's k-range", "a fixed
// range [0, x)", each with the clip bound met on the way), giving slice-request and charge
// templates. A step is then priced by instantiating the templates with plain arithmetic.
//
// When no interval is ever empty, two slices of the same template are equal exactly when the
// tile indices they depend on are equal. So are two templates of one tensor (or two charges of
// one op) when they follow the same axis, or one is fixed and the other never meets it or has
// a single index (a residual input read as whole rows by a MatMul and as the tile by the
// epilogue). A step's cost then depends only on its class: whether its tile is on the last row
// / last column, whether it is the first, a middle or the last k-step, and (for a first k-step)
// which of row and column changed since the previous tile. Each class is priced once on a
// representative step and multiplied by its count; counts come in closed form for raster and
// from one pass over the tiles for an explicit traversal. Anything else (a tensor read through
// templates of two moving axes, e.g. a residual input read both as an LHS strip over the k-range
// and by the epilogue) is priced step by step on the templates — still exact.
#pragma once

#include <optional>
#include <vector>

#include "eval/model/evaluation.h"
#include "eval/model/problem.h"
#include "eval/model/schedule.h"

// PricingShortcutsOff, the scope within which CostSubgraph takes none of its shortcuts.
#include "eval/cost/pricer/pricing_shortcuts.h"

namespace annealer {

// Equal to EvaluateSubgraphOracle(problem, subgraph, retained_in): verdict, violation (rule
// and detail) and report (latency to rounding, every other field exactly).
// Throws PricingCancelled when it walks steps one by one and the thread's stop test (see
// eval/cost/pricing_stop.h) says stop; never otherwise.
SubgraphResult CostSubgraph(const Problem& problem, const Subgraph& subgraph,
                            const std::vector<TensorId>& retained_in);

// What CostSubgraph returns when the subgraph breaks a rule checked before any pricing
// (AnalyseSubgraph, CheckRetainedIn in eval/model/subgraph_structure.h), else nullopt. Cheap: no
// templates, no steps.
std::optional<SubgraphResult> StructuralFailure(const Problem& problem, const Subgraph& subgraph,
                                                const std::vector<TensorId>& retained_in);

// The same, always pricing every step on the templates (never the step classes). For tests
// and benchmarks that check the class shortcut against the plain template walk.
SubgraphResult CostSubgraphStepByStep(const Problem& problem, const Subgraph& subgraph,
                                      const std::vector<TensorId>& retained_in);

// Whether CostSubgraph prices this subgraph by step classes (true) or step by step (false).
// Invalid subgraphs report false.
bool CostSubgraphUsesStepClasses(const Problem& problem, const Subgraph& subgraph,
                                 const std::vector<TensorId>& retained_in);

}  // namespace annealer
