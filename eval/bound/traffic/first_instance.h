// P26, MatMuls whose first instance is in the k-loop (eval/bound/bounds.h lists the parts;
// docs/lower-bound.md, "A MatMul first runs in its k-loop (P26)", proves it).
#pragma once

#include <utility>
#include <vector>

#include "eval/model/problem.h"

namespace annealer::bound_internal {

// P26. Per op: 1 when the op is a MatMul x with K > n that every valid schedule runs in the k-loop
// (F, G3) of some subgraph; 0 when that is not proven. Two sufficient reasons:
//
// (a) x's output is a graph output or a Layout op's input: it is then in slow memory at some point
// (V9; L1), written by a subgraph where x is a sink (only sinks write, M2), and a MatMul sink is in F.
//
// (b) Let Dep(x) be the ops reached from x through a path that enters a Layout op (the Layout op and
// everything below it). An instance of z in Dep(x) at subgraph s needs an instance of x at a
// subgraph before s: along the path each op's input is produced in s, or loaded or retained,
// hence produced before s (V7, V8), and a Layout op's input is in slow memory before s, written
// by an earlier subgraph (L1). So the first subgraph S1 that holds x holds no op of Dep(x) and
// reads no descendant of x as a boundary input. If x is not in S1's F, x is no sink (a MatMul sink
// is in F), so a path of ops of S1 runs from x, through consumers produced and consumed in S1, to a
// sink; were all of them Pointwise, the G3 walk from that sink would reach x. So one of them is a
// MatMul other than x, reached from x through ops outside Dep(x). When no such MatMul exists, x is
// in F at its first instance. Structural only: it holds under any chip rules, and on the problem, not a decoupled
// image (Decouple cuts the Layout ops' input edges), so the caller computes it before Decouple.
std::vector<char> FirstInstanceInLoop(const Problem& problem);

// Dep(x) of (b): stamps in_dep[y] = x for every op y reached from x's output through a path that
// enters a Layout op (below_seen[y] = x for the ops reached on a path that has not yet); `walk` is
// scratch. P50's walk (eval/bound/islands/gather_windows.h) takes the same set.
void MarkDep(const Problem& problem, OpId x, std::vector<int>& in_dep, std::vector<int>& below_seen,
             std::vector<std::pair<OpId, bool>>& walk);

// Sets ancestor[y] = 1 exactly for the ops x depends on (not x itself), 0 elsewhere; `stack` is
// scratch. P49's cap and P50's windows ask which ops ran by the time x first did.
void MarkAncestors(const Problem& problem, OpId x, std::vector<char>& ancestor, std::vector<OpId>& stack);

// Ablation switch for tests only (measures what P26 adds): false makes FirstInstanceInLoop prove
// nothing. Not thread-safe; never set elsewhere.
extern bool g_first_instance_in_loop;

}  // namespace annealer::bound_internal
