// P46, a sum that feeds several taps, run once per group of them (eval/bound/bounds.h states the
// fact, docs/lower-bound.md, "A sum run once per group of its targets (P46)", proves it).
#pragma once

#include <vector>

#include "eval/bound/analysis.h"
#include "eval/bound/sums/upstream/upstream_sums.h"
#include "eval/model/problem.h"

namespace annealer::bound_internal {

// P46 (P40's facts, P23, P34, P35's frame of instances, G3, R5, V8, W1, W4, D5). A P40 claimant s
// (modes T and SL, not FL) with t >= 2 targets F_i, each in mode T only, whose output and every
// Pointwise op between it and the targets' LHS are too large to retain. If no subgraph runs s on
// a Pointwise path from a sink (mode T), none writes those tensors, so every subgraph that runs a
// target makes its LHS there: it runs s (upstream, SL) and every op of the chain all targets share.
// Such an instance holds its targets as k-loop MatMuls of its grid (G3), each with its own RHS
// slice and, at n_k >= 2, its tile (W1, W4), so one instance at a configuration's tiles holds at
// most q of them (UpstreamSums::Tagged::targets), and with N instances sum q >= t. Each instance
// claims its configuration in its own subgraph (the frame's inequality holds per subgraph), and
// all but one also the compute of s and the shared chain (picked once, run N times).
// e_s(lambda) = min(least T configuration, least over sets of SL configurations covering t targets
// of sum (lambda . v + k0) - k0), k0 = c_s + the shared chain's compute.
extern bool g_target_instances;  // test switch: false gives P40's value
// P47 (P46, P40's FL, D3, C6): the same claim for a claimant that may also run FL, whose targets
// may run in any mode. If no subgraph runs s in mode T, a subgraph running a target that is not a
// k-loop MatMul there (upstream, D3) asks full-width rows of its LHS, so of s: s has an FL demand
// there and claims an FL configuration (P40's step (2) holds beside any SL demand), that instance
// counted as holding all t; an instance whose targets are all k-loop MatMuls is P46's (SL, at most
// q of them). So e_s is P46's with the FL configurations as one-instance covers.
extern bool g_upstream_target_instances;  // test switch: false gives P46's scope

struct TargetInstances {
  UpstreamSums base;                   // P40's claimants and configurations
  std::vector<char> counted;           // per claimant: priced by its instances
  std::vector<double> again;           // per claimant: k0
  int claimants = 0;                   // claimants priced so
  int upstream_claimants = 0;          // of them, in P47's scope only (FL, or targets not T only)
  double value = 0;                    // the larger of P40's and Value() over every op
  // Over `ops`: sum c_o plus the best lambda's claims, or 0 when no claimant priced by instances
  // is among them (P40's value stands there).
  double Value(const Problem& problem, const std::vector<OpId>& ops) const;
};
TargetInstances TargetInstanceFloor(const Problem& problem, const Analysis& modes);
// The same with P40's part already built (LhsStripSumFloor of the same problem and modes): its
// copy shares that part's memo of configurations, so none is worked out twice.
TargetInstances TargetInstanceFloor(const Problem& problem, const Analysis& modes, const UpstreamSums& lhs_strip);

}  // namespace annealer::bound_internal
