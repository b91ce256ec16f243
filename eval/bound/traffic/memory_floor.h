// P17, the memory floor (eval/bound/bounds.h states the fact, docs/lower-bound.md, "The memory floor
// (P17)", proves it).
#pragma once

#include "eval/model/problem.h"

namespace annealer::bound_internal {

// P17. Every step costs at least its memory time (T1, and with prefetch H5 the sum of the
// steps is at least the sum of their memory terms), so the total is at least the time of any
// set of distinct transfers every valid schedule makes. Counted on the problem itself (not its
// decoupled image), each once:
//  - the first load of each graph input some non-Layout op reads (P3, V8);
//  - the first gather of each Layout op's output Y, |Y| (L2, L4);
//  - the write of each graph output (V9) and of each produced tensor X a Layout op reads (L1: X
//    must be in slow memory before the Layout op's subgraph, and only an unretained sink is
//    written, R3, M2);
//  - reloads of sinks that sit alone: for a tensor t made by a Pointwise op p, let R_t be its
//    readers c that are MatMuls with K > n (k always splits, so p is never beside c, V11, P1),
//    whose other operand is a graph input, and whose output must be written (a graph output,
//    V9, or read by a Layout op, L1) or is read only by a Pointwise e whose other inputs are
//    graph inputs and whose output must be written and only Layout ops read. Some subgraph S_c
//    runs c beside at most e, without p: (a) the one writing c's output (c a sink, no internal
//    edge, V5); (b) the one writing e's output if it runs c, else the one before it if that
//    retains c's output, else the one that wrote c's output (c alone). S_c retains at most c's
//    and e's outputs (R3, V8), which serve nothing else (c's is read by e only, e's by Layout
//    ops only, which never read a retained tensor, L1); distinct c, distinct S_c. S_c loads |t|
//    unless the subgraph before retains t, which then runs p (V8): then the stretch of
//    subgraphs between the previous picked S and S_c makes t from nothing useful retained and
//    loads at least f(t), where f(graph input) = |t|, f(Layout output) = |Y|, f(t) = min(|t|,
//    max over p's inputs of f) (each op instance computes its whole output and needs every
//    element of its inputs, P7). The counted first
//    loads and gathers of t's ancestors all happen no later than t's first computation, so in
//    at most one of those stretches; the others' loads are counted nowhere else. So at least
//    (|R_t| - 1) f(t) more.
// On a chip with a weight path (H6) the weight-path graph inputs travel apart,
// max(weight / Bw, other / B), and f counts them 0 (their loads might be on the other path).
double MemoryFloor(const Problem& problem);

}  // namespace annealer::bound_internal
