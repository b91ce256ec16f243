// A start pass that drops the writer of a shared tensor by serving every one of its loaders from
// a retained copy (docs/search.md, "Serve every loader and drop the writer").
//
// A subgraph that runs an op p alone and writes its output t for many loaders (ViT-B/16's
// LayerNorm on tpu-v1: its output is read by the block's key projections, which cannot run the
// LayerNorm themselves, V11) pays t's write on top of its input's load. Serving one loader with a
// copy of p run again just before it, retaining t ([R1], [V8]), costs that copy's load of p's
// input: a little more than the loader's own load of t, so the serve passes never take it one
// loader at a time. Once every loader of t is served, nobody needs t in slow memory and the
// writer goes: the sum falls by the write and the writer's load, less the copies' excess.
#pragma once

#include <functional>

#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"

namespace annealer {

// For every subgraph i that holds one op p alone (no MatMul, no Layout op), retains nothing and
// writes p's output t (not a graph output, no Layout reader, three or more reading ops), where
// every later subgraph that reads t without running p either has it retained from the subgraph
// before it or loads it and takes nothing else retained: i is dropped and p runs alone, retaining
// t, right before each such loader (at most 32), each loader refitted with t retained in; the
// edit is committed where it lowers the whole schedule's total. Schedule order; `stop` is
// polled. Only where MergeReadersApplies (never on a contest problem).
Schedule ServeEveryLoader(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                          const std::function<bool()>& stop);

}  // namespace annealer
