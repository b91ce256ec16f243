// P34, a sum that may run upstream of a k-loop (eval/bound/bounds.h states the fact,
// docs/lower-bound.md, "A sum that may run upstream of a k-loop (P34)", proves it).
#pragma once

#include <memory>
#include <vector>

#include "eval/bound/analysis.h"
#include "eval/bound/sums/upstream/configuration_memo.h"
#include "eval/model/problem.h"

namespace annealer::bound_internal {

// P34 (T1, T2, C1-C6, D1-D5, G2-G4, M1, R5, V8, V9, V11, V12, W, W1, W4, P23). P23's frame (every
// op priced c_o, each claimant s picked in one subgraph S_s that runs it, its claim a share of
// L(S_s) - X), with three weights per subgraph instead of two: theta = 1, theta = 1/tau_S and
// theta = 1/C_S (C_S the grid's column tiles), mixed by one lambda = (l1, lA, lC) for the whole
// set of ops. Claimants: P23's sums (mode T only), and *upstream sums*: a Pointwise s with P23's
// designated inputs o_i (MatMul outputs read by s alone, |o_i| + 1 > capacity), modes T and SL
// only, whose output reaches, through Pointwise ops of one consumer each, the LHS of exactly one
// MatMul F, with K_F = s's width <= n and F in mode T only. In S_s, s is either
//  - T (its chain broken in S): P23's step 2, per top-left tile r x c and j producers fused;
//  - SL with n_k = 1 ("b"): the grid is F's, each step holds the (m - j) unfused slices h x K,
//    a sink's tile h x w, F's RHS slice K x w (when F's RHS is a graph input only F reads) and
//    each fused producer's RHS K_x x K (the same), within W; every o_i is loaded at least once;
//  - SL with n_k >= 2 ("c"): V11 gives w >= K, every step asks o_i's rows x kappa_j, a new
//    slice each step (M1: consecutive steps differ in kappa, also across tiles), so each o_i is
//    loaded C times; the k-loop MatMuls of the grid's shape hold a tile each (W1, W4), so at most
//    q = floor((cap - (m - j) h) / (h w)) of them are in S.
// Per subgraph and weight, the claimants' shares add up (distinct ops, distinct tensors), and at
// theta = 1/C_S the ops that may be charged less than C_S times their price (deficits
// (1 - f_o / C)^+ c_o, f_o >= tau for every op, >= C for an LHS strip producer, >= R for an RHS
// one, >= T n_k / N_o further upstream) are subtracted from each claimant's share (a bound of
// all of them over the set of ops): sum_s (a_s - D)^+ <= (sum_s a_s - D_S)^+ <= L(S) - X.
// e_s(lambda) = the least over s's configurations of l1 v1 + lA vA + lC vC; the part is sum c_o
// plus the best lambda of sum_s e_s, whole and island by island.
// Not derived with a weight path (H6, weight slices outside W): then nothing is claimed.
extern bool g_upstream_sums;  // test switch: false claims nothing (sum c_o)

struct UpstreamSums {
  struct Claimant {
    OpId sum = kNoOp;
    std::vector<OpId> producers;  // of the designated inputs
    bool upstream = false;        // may run SL (else mode T only, P23's)
    OpId f = kNoOp;               // the MatMul it feeds, when upstream (the first of `fs`)
    std::vector<OpId> fs;         // every MatMul whose LHS strips it may make (P34: one; P40: any)
    bool full_left = false;       // P40: may also run FL (its region every step, all its columns)
    bool tile_rows = false;       // P40: FL only ever at the grid's tile rows (tau_S >= its factor)
    std::vector<double> loads;    // designated inputs' |o_i| / B, ascending
    std::vector<double> computes; // their producers' c, ascending
    std::vector<Elements> q;      // K_x when x's RHS is a graph input only x reads, else 0
    double written = 0;           // |out| / B when s's output is a graph output
    // P55 (eval/bound/sums/upstream/lone_producers.h): per producer, ascending, what its lone sink instance
    // costs beyond its compute (0 where not proven), when it does not find its LHS retained from
    // the maker's priced run (lone_floors) and when it does (lone_retained); at most one producer
    // per LHS tensor does, saving at most lone_discount in all. Empty when not derived (P34).
    std::vector<double> lone_floors, lone_retained;
    double lone_discount = 0;
    // P55 (eval/bound/sums/upstream/strip_sink_writes.h): |out| / B when the sink of a mode-T subgraph of s
    // writes a tensor no other claimant's can be; 0 otherwise and in P34.
    double sink_write = 0;
  };
  std::vector<double> compute;  // per op, c_o
  std::vector<Claimant> claimants;
  int upstream_count = 0;       // upstream sums among the claimants
  double value = 0;             // Value() over every op
  // Per claimant, its configurations' (v1, vA, vC) over `ops` (the deficits read `ops`).
  std::vector<std::array<double, 3>> Configurations(const Problem& problem, const Claimant& claimant,
                                                   const std::vector<OpId>& ops) const;
  // The same configurations before the least are kept, each with its kind and, for SL, the most
  // targets (of `fs`) one instance at its tiles can hold when every target is a k-loop MatMul
  // there (P46, eval/bound/sums/upstream/target_instances.h); 0 when not bounded.
  using Tagged = TaggedConfiguration;
  std::vector<Tagged> TaggedConfigurations(const Problem& problem, const Claimant& claimant,
                                           const std::vector<OpId>& ops) const;
  // Both of the above for claimants[i], through `memo` (eval/bound/sums/upstream/configuration_memo.h
  // states why it is valid); `slots` is memo->Of(ops, claimants.size()).
  std::shared_ptr<ConfigurationMemo> memo = std::make_shared<ConfigurationMemo>();
  const ConfigurationMemo::Entry& Memoized(const Problem& problem, size_t i, const std::vector<OpId>& ops,
                                           std::vector<std::unique_ptr<ConfigurationMemo::Entry>>& slots) const;
  // Per tensor, whether an upstream claimant reads it (made once per part, in `memo`).
  const std::vector<char>& ReadByUpstreamSums(const Problem& problem) const;
  // sum over `ops` of c_o, plus the best lambda of the claimants' (those among `ops`) e_s.
  double Value(const Problem& problem, const std::vector<OpId>& ops) const;
};
UpstreamSums UpstreamSumFloor(const Problem& problem, const Analysis& modes);

// Keeps the configurations no other one is at or below in all three values (the least over them
// at any lambda >= 0 is the same).
std::vector<std::array<double, 3>> ParetoLeast(std::vector<std::array<double, 3>> all);

// Which upstream modes a sum s (not T only) is priced in: the MatMuls whose LHS strips it may make
// (SL), and whether it may run FL; in_scope false when s is not priced.
struct StripScope {
  bool in_scope = false;
  std::vector<OpId> fs;
  bool full_left = false;
  bool tile_rows = false;
};
using StripScopeOf = StripScope (*)(const Problem& problem, const Analysis& modes, OpId s);
// Applied to the claimants once they are found, before any value is worked out (P40: P55's floors).
using ClaimantsFinish = void (*)(const Problem& problem, const Analysis& modes, UpstreamSums& part);
// P34's frame with the claimants' scope found by `scope` (P34: modes T and SL, the single chain
// of Pointwise ops of one consumer each; P40, eval/bound/sums/upstream/lhs_strip_sums.h: modes T, SL and FL, any
// Pointwise path). `enabled` false claims nothing (sum c_o).
UpstreamSums UpstreamSumFloor(const Problem& problem, const Analysis& modes, bool enabled, StripScopeOf scope,
                              ClaimantsFinish finish = nullptr);

}  // namespace annealer::bound_internal
