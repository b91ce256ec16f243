// P50, the PCIe transfers of a window that no weight-streaming compute can hide (eval/bound/bounds.h
// lists the parts; docs/lower-bound.md, "Gathers in a window of little compute (P50)", proves it).
#pragma once

#include <vector>

#include "eval/bound/analysis.h"
#include "eval/bound/traffic/perstep.h"

namespace annealer::bound_internal {

// P50 (T1, T2, H5, H6, V1, V5, V7, V8, V11, R1, L1, L2, D1-D4, G3; P12's islands, P24's claims,
// P26's Dep). No prefetch. A *window* is a Layout op g (one input X, made by op x) and a reader z
// of its output Y, with g and z in island I and x in another island J. Let tau be the last subgraph
// before g's first instance that writes X (L1: one exists, and it holds x, so it lies in J) and
// S_z the subgraph of z's first instance. The subgraphs of I in (tau, S_z]:
//   - hold the first instances only of *companions*: ops of I that are neither x nor its
//     ancestors (those first ran by tau) nor in After(z), the ops whose first instance is later
//     than S_z: the descendants of a Layout op whose input z or a descendant of z makes (L1), and
//     of a MatMul m with K > n that runs in its k-loop at its first instance (the walk below) and
//     reads an operand a Pointwise descendant of z (or z) makes (V11 keeps that op out of m's
//     subgraph, so it ran before);
//   - gather Y (L2: g's first instance lies there, Y's regions are loaded, |Y| at least);
//   - load, for another input t of z that is no descendant of g, at least the widest path's
//     least tensor over the paths to t that start at a graph input read by an op of I (not on
//     the weight path) or at the output of a Layout op of I and run through tensors made by
//     non-Layout ops of I: z requests all of t at S_z; t is loaded there, made there, or
//     retained from the subgraph before (R1, V8), which then holds its producer and so lies in I
//     and after tau; walking back the path, some tensor of it is loaded in one of those
//     subgraphs (a graph input is never retained or made; a Layout op loads its output).
// A subgraph costs at least its activation-path time (T1, H6), so those subgraphs cost their
// first instances' native compute plus at least (|Y| + width(t)) / B - C(companions), less the
// P24 claims at a = 1 of the companions (their first instances could take those subgraphs). Windows
// whose subgraphs cannot meet (the later one's x in the earlier one's After) add; the islands
// part takes C_I + P24's claims at a = 1 + the windows of I as one more form of island I.
struct GatherWindows {
  std::vector<double> excess;  // per island: the sum over its chosen windows (time)
  int windows = 0;             // windows chosen
};

// `original`: the problem with its Layout ops' input edges (same op ids as the image); `built`:
// the image's islands; `per_step`: P24's claims (op_claims at alpha = 1).
GatherWindows GatherWindowExcess(const Problem& original, const Built& built, const PerStepIsland& per_step);

// Per op: 1 when a MatMul with K > n runs in its k-loop (F, G3) at its first instance. Any
// instance upstream of a k-loop sits on a path of its subgraph's ops to the last MatMul q before
// a sink, which is in F; the path avoids Dep(m) (P26: ops reached through a Layout op need m run
// before), and its edge into q is from a MatMul, or from a Pointwise op with K_q <= n (V11). No
// such edge among the paths from m outside Dep(m): F at the first instance. With a weight FIFO
// (H6) below m's whole weight, a MatMul q reached through Pointwise ops alone into its LHS takes
// m nowhere: q is then upstream (V11 keeps it out of F when K_q > n), makes its LHS
// rows whole (D3), so m makes all its columns in one step and requests its whole weight there.
// Exposed for tests.
std::vector<char> FirstInstanceInF(const Problem& original);

// Ablation switch for tests only: false drops the FIFO's refusal above (measures what it adds).
// Not thread-safe; never set elsewhere.
extern bool g_fifo_refuses_upstream;

// Ablation switch for tests only: false prices no window. Not thread-safe; never set elsewhere.
extern bool g_gather_windows;

}  // namespace annealer::bound_internal
