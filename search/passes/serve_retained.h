// A start pass that serves a loader of a shared tensor from a retained copy (docs/search.md,
// "Serve a loader by retention").
//
// A tensor t read by many subgraphs is loaded by each of them unless the subgraph right before
// retains it ([R1]: a retained tensor lives one subgraph), and only a subgraph that makes t may
// retain it ([V8]). Where t is made again inside several subgraphs (ViT-B/16 on tpu-v1: each
// group of query or value heads runs the LayerNorm again, the regrouping of
// search/starts/constructive.h), each of them can retain it for one loader placed right after it
// (a key projection, which cannot run the LayerNorm itself: V11). The moves never get there: the
// loader must cross a stretch of subgraphs and the retention must be switched on in the same
// step, and either alone costs or changes nothing.
#pragma once

#include <cstddef>
#include <functional>

#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"

namespace annealer {

// For every subgraph i that retains nothing and makes a tensor t with three or more reading ops
// (not a graph output), every other subgraph j that loads t (reads it, does not make it, retains
// nothing, takes nothing retained from the subgraph before it) is tried moved right after i with
// t retained by i (a refit of j with t retained in as well); the best that lowers the whole
// schedule's total is committed. Schedule order; `stop` is polled. Leaves the schedule as it is
// where no tensor has three or more readers (never on a contest problem).
Schedule ServeLoadsByRetention(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                               const std::function<bool()>& stop);

// The same served by running t's producer again (docs/search.md, "Serve a loader by running the
// producer again"). A tensor t = p(s), made by a Pointwise op p from an s that only p reads, and
// written for readers outside its subgraph i (FCN-ResNet50's trunk tensors after each residual
// ReLU, read by the next block's k-split `conv1` and by the next residual sum), cannot be retained
// by i for one loader: a retained tensor is not written back (R3). i can keep s instead; p then
// runs again, for its compute alone, inside the loader placed right after i, or alone between them
// retaining t where the loader cannot hold p (V11). For every subgraph i that retains nothing and
// every such p, the loaders of t (as above, at most 32) are tried both ways, i refitted with s
// retained; the best that lowers the whole schedule's total is committed. Only where
// MergeReadersApplies (never on a contest problem); `stop` is polled.
Schedule ServeLoadsByRecompute(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                               const std::function<bool()>& stop);

}  // namespace annealer
