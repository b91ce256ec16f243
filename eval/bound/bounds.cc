// The facts P1..P17 and the coupling are stated in the header; comments here say which one a
// block applies.
#include "eval/bound/bounds.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>

#include "eval/bound/traffic/alone.h"
#include "eval/bound/analysis.h"
#include "eval/bound/islands/crossing.h"
#include "eval/bound/islands/gather_windows.h"
#include "eval/bound/traffic/first_instance.h"
#include "eval/bound/islands/islands.h"
#include "eval/bound/islands/recompute.h"
#include "eval/bound/islands/internal_heads.h"
#include "eval/bound/sums/sums.h"
#include "eval/bound/sums/upstream/lhs_strip_sums.h"
#include "eval/bound/sums/upstream/target_instances.h"
#include "eval/bound/sums/taps/lone_taps.h"
#include "eval/bound/islands/squeeze.h"
#include "eval/bound/traffic/tap_weights.h"
#include "eval/bound/sums/shared_sums.h"
#include "eval/bound/sums/sole_sums.h"
#include "eval/bound/sums/upstream/upstream_sums.h"
#include "eval/bound/sums/written_sums.h"
#include "eval/bound/islands/activations.h"
#include "eval/bound/sums/taps/taps.h"
#include "eval/bound/traffic/memory_floor.h"
#include "eval/bound/traffic/perstep.h"
#include "eval/bound/traffic/streaming.h"
#include "eval/bound/traffic/tiles.h"

namespace annealer {

namespace {

using namespace bound_internal;  // NOLINT: the parts shared with eval/bound/

// P11: the least a MatMul c with K <= n, alone with both operands (boundary, loaded, only c
// requests them, c in mode T only), loads of them over one subgraph, whatever w, h, k and
// traversal. With k = K (one k-step per tile) a tile's LHS strip R x [0,K) is free only when
// the tile before had the same row, its RHS strip [0,K) x C only when it had the same column
// (M1); consecutive tiles differ in one of them, so every tile loads at least K x min(|R|, |C|).
// The step of tile (0,0) holds both strips and its output tile: h'K + Kw' + h'w' <= capacity
// (W; h' = min(h, M), w' = min(w, N)). With k < K every step loads new slices (P5): |LHS| x
// columns + |RHS| x rows, with h'w' + h' + w' <= capacity. The least over all w, h of both.
Elements StripLoads(const Problem& problem, OpId c) {
  const Op& op = problem.ops[c];
  const Elements k = problem.ReductionLength(c);
  const Tensor& out = problem.tensors[op.output];
  const Elements rows_total = out.height, cols_total = out.width;
  const Elements lhs = problem.tensors[op.inputs[0]].size(), rhs = problem.tensors[op.inputs[1]].size();
  const Elements n = problem.native, capacity = problem.fast_memory_capacity;
  // A side beyond the output's behaves like the output's side; a grid of sides too large to
  // scan makes no claim (a minimum over part of it would not be a bound).
  const Elements max_h = std::min(n, rows_total), max_w = std::min(n, cols_total);
  if (max_h * max_w > (Elements{1} << 16)) return 0;
  Elements best = std::numeric_limits<Elements>::max();
  for (Elements h = 1; h <= max_h; ++h) {
    const Elements hh = std::min(h, rows_total);
    const Elements nr = CeilDiv(rows_total, h), h_last = rows_total - (nr - 1) * h;
    for (Elements w = 1; w <= max_w; ++w) {
      const Elements ww = std::min(w, cols_total);
      const Elements nc = CeilDiv(cols_total, w), w_last = cols_total - (nc - 1) * w;
      if (hh * k + k * ww + hh * ww <= capacity) {
        const Elements sum = (nr - 1) * (nc - 1) * std::min(h, w) + (nr - 1) * std::min(h, w_last) +
                             (nc - 1) * std::min(h_last, w) + std::min(h_last, w_last);
        best = std::min(best, k * sum);
      }
      if (k > 1 && hh * ww + hh + ww <= capacity) best = std::min(best, lhs * nc + rhs * nr);
    }
  }
  return best == std::numeric_limits<Elements>::max() ? 0 : best;
}

// `weights`: per tensor, whether it travels H6's weight path (WeightTensors); empty: none does.
Built Build(const Problem& problem, const std::vector<char>& weights = {}) {
  Built built;
  BoundModel& model = built.model;
  const Analysis a(problem);
  const int num_ops = static_cast<int>(problem.ops.size());
  const int num_tensors = static_cast<int>(problem.tensors.size());
  const Elements n = problem.native;
  // H6: the two paths' sum (the traffic terms count both kinds of elements; see WeightPathRelaxed).
  model.bandwidth = problem.slow_memory_bandwidth + problem.chip.weight_bandwidth;

  // Reach of the ops that read a tensor with several consumers (the only ones P9 asks about),
  // computed once each, on demand.
  std::vector<std::optional<Analysis::ReachSet>> reach(num_ops);
  auto reaches = [&](OpId from, OpId to) {
    if (!reach[from]) reach[from] = a.Reach(from);
    return reach[from]->Contains(to);
  };

  // Per tensor: which consumers load it alone (their mode decides the amount) and which write
  // the consumer designated to carry the write (P8) must add.
  std::vector<std::vector<char>> alone(num_tensors);   // per consumer position
  std::vector<OpId> write_owner(num_tensors, kNoOp);   // designated consumer, or kNoOp
  std::vector<std::vector<Elements>> sl_share(num_tensors);  // P10 charge per consumer, or -1
  for (TensorId t = 0; t < num_tensors; ++t) {
    const auto& consumers = problem.consumers[t];
    if (consumers.empty()) continue;
    const OpId producer = problem.producer[t];
    const Elements size = problem.tensors[t].size();
    const bool retainable = producer != kNoOp && !a.TooLarge(t);
    // Classes of consumers that may share a subgraph (P9): union-find over the pairs.
    const int k = static_cast<int>(consumers.size());
    std::vector<int> cls(k);
    for (int i = 0; i < k; ++i) cls[i] = i;
    auto find = [&](int x) {
      while (cls[x] != x) x = cls[x] = cls[cls[x]];
      return x;
    };
    for (int i = 0; i < k; ++i) {
      for (int j = i + 1; j < k; ++j) {
        if (reaches(consumers[i], consumers[j]) || reaches(consumers[j], consumers[i])) {
          cls[find(i)] = find(j);
        }
      }
    }
    alone[t].assign(k, 0);
    sl_share[t].assign(k, -1);
    bool forced_shared_load = false;
    for (int root = 0; root < k; ++root) {
      if (find(root) != root) continue;
      std::vector<OpId> members;
      for (int i = 0; i < k; ++i) {
        if (find(i) == root) members.push_back(consumers[i]);
      }
      if (members.size() == 1) {
        for (int i = 0; i < k; ++i) {
          if (consumers[i] == members[0]) alone[t][i] = 1;
        }
        continue;
      }
      // Several consumers may share a subgraph: |t| once for the class, unless one of them may
      // see it ephemeral (its producer inside, in a legal mode) or it may be retained (P3, P4).
      bool may_be_free = retainable;
      for (OpId c : members) {
        const Op& cop = problem.ops[c];
        for (int slot = 0; slot < static_cast<int>(cop.inputs.size()) && !may_be_free; ++slot) {
          if (cop.inputs[slot] != t || producer == kNoOp) continue;
          for (int m = 0; m < kModes; ++m) {
            if (a.HasMode(c, m) && a.EdgeFeasible(producer, c, slot, m)) may_be_free = true;
          }
        }
      }
      if (may_be_free) continue;
      if (producer == kNoOp && a.TooLarge(t) && problem.fast_memory_capacity > 1) {
        // P10: strip producers sharing a streamed weight. Every member uses t as its RHS, can
        // only be T (a sink, alone: no other member reachable) or SL toward k-loop MatMuls with
        // K > n, and its LHS strip R x [0,K_c) is a boundary request of a tensor only it reads.
        // In a subgraph holding g' of them, every step holds all g' strips, so the tile height
        // h <= (capacity - 1) / sum K_c and the k-loop has at least M x sum K_c / (capacity - 1)
        // row tiles; all members request the same slice [0,K) x kappa_j of t, a different one
        // each step (P6), so t is loaded at least |t| x that many times, and at least |t|.
        // Charging each member's SL mode |t| x max(min(1, a_min), 1/g), a_min = min |LHS_c| /
        // (capacity - 1), never exceeds any group's load; mode T loads as if alone (P5).
        bool group = true;
        double a_min = 1;
        for (OpId c : members) {
          const Op& cop = problem.ops[c];
          const TensorId lhs = cop.inputs[0];
          const OpId lhs_producer = problem.producer[lhs];
          const int only_slot = a.OnlyConsumerSlot(c);
          const Analysis::ReachSet alone_reach = a.Reach(c, kT);
          bool reaches_other = false;
          for (OpId o : members) reaches_other = reaches_other || (o != c && alone_reach.Contains(o));
          const bool ok = cop.kind == OpKind::MatMul && cop.inputs[1] == t && lhs != t &&
                          a.SinkWhenTile(c) && !reaches_other && a.HasMode(c, kSL) &&
                          !a.HasMode(c, kSR) && !a.HasMode(c, kFL) && !a.HasMode(c, kFR) &&
                          a.StreamTiles(c, kSL) > 0 && only_slot == 0 &&
                          problem.consumers[lhs].size() == 1 &&
                          (lhs_producer == kNoOp || !a.EdgeFeasible(lhs_producer, c, 0, kSL));
          if (!ok) {
            group = false;
            break;
          }
          a_min = std::min(a_min, static_cast<double>(problem.tensors[lhs].size()) /
                                      static_cast<double>(problem.fast_memory_capacity - 1));
        }
        if (group) {
          const double share = std::max(a_min, 1.0 / static_cast<double>(members.size()));
          for (int i = 0; i < k; ++i) {
            if (find(i) == root) sl_share[t][i] = static_cast<Elements>(share * static_cast<double>(size));
          }
          continue;
        }
      }
      forced_shared_load = true;
      std::string names;
      for (size_t i = 0; i < members.size(); ++i) {
        if (i > 0) names += ",";
        names += Str(members[i]);
      }
      BoundModel::Fixed fixed;
      fixed.owners = members;
      fixed.elements = size;
      model.fixed.push_back(fixed);
      built.terms.push_back({{t, members[0],
                              "loaded once by ops " + names +
                                  ", which may share a subgraph (P3, P9; " +
                                  (producer == kNoOp ? "a graph input, never retained, V8"
                                                     : "never ephemeral nor retained, V11/R5") +
                                  ")",
                              size},
                             -1});
    }
    if (producer == kNoOp) continue;
    if (problem.IsGraphOutput(t)) continue;
    if (forced_shared_load) {
      BoundModel::Fixed fixed;
      fixed.owners = {producer};
      fixed.elements = size;
      model.fixed.push_back(fixed);
      built.terms.push_back(
          {{t, producer, "written once: a subgraph must load it (P8, V7)", size}, -1});
    } else {
      for (int i = 0; i < k; ++i) {
        if (alone[t][i]) {
          write_owner[t] = consumers[i];
          break;
        }
      }
    }
  }
  // Graph outputs are written at least once (V9, P8).
  for (TensorId t = 0; t < num_tensors; ++t) {
    if (!problem.IsGraphOutput(t)) continue;
    BoundModel::Fixed fixed;
    fixed.owners = {problem.producer[t]};
    fixed.elements = problem.tensors[t].size();
    model.fixed.push_back(fixed);
    built.terms.push_back(
        {{t, problem.producer[t], "graph output, written at least once (V9)", fixed.elements},
         -1});
  }

  // What op c moves for its input `slot` (tensor t) in mode m when t is a boundary input that
  // is loaded (P3, P5, P6), with the reason.
  auto load_cost = [&](OpId c, int m, int slot) -> std::pair<Elements, std::string> {
    const Op& op = problem.ops[c];
    const TensorId t = op.inputs[slot];
    const Elements size = problem.tensors[t].size();
    const Tensor& out = problem.tensors[op.output];
    const bool twice = std::count(op.inputs.begin(), op.inputs.end(), t) > 1;
    std::string why = "loaded at least once (P3)";
    Elements loads = size;
    if (op.kind == OpKind::MatMul && !twice) {
      const Elements reduction = problem.ReductionLength(c);
      const int only_slot = a.OnlyConsumerSlot(c);
      if (m == kT && reduction > n && (a.TooLarge(t) || a.TileModeAlone(c))) {
        // P5: streamed by the k-loop, once per column tile (LHS) or row tile (RHS).
        const int64_t times = slot == 0 ? CeilDiv(out.width, n) : CeilDiv(out.height, n);
        loads = size * times;
        why = std::string(slot == 0 ? "LHS" : "RHS") + " of k-split MatMul (K=" + Str(reduction) +
              " > n), streamed once per " + (slot == 0 ? "column" : "row") + " tile: x" +
              Str(times) + " (P5, V2)";
      } else if ((m == kSL || m == kSR) && slot == (m == kSL ? 1 : 0) &&
                 problem.producer[t] == kNoOp && a.TooLarge(t) && a.StreamTiles(c, m) > 0 &&
                 only_slot == (m == kSL ? 0 : 1)) {
        // P6: an upstream strip producer streams its other operand once per k-loop tile.
        loads = size * a.StreamTiles(c, m);
        why = "operand of an upstream strip producer, streamed once per tile of the k-loop: x" +
              Str(a.StreamTiles(c, m)) + " (P6, C3)";
      }
    }
    if (problem.producer[t] == kNoOp) why += "; a graph input (V8)";
    return {loads, why + " [mode " + kModeName[m] + "]"};
  };

  // Coupled inputs (P8, P9): t's only consumer c is a MatMul and t can never be retained.
  // Case A: an instance of c sees t ephemeral; pick it and the instance of p beside it, which c
  // demands in a strip or full mode (never T), and c's mode allows the edge. Case B: no instance
  // of c has p beside it; every instance of p is then a sink (mode T) and c, in any mode m,
  // loads L(m) of t, which p wrote. With z = min over c's modes of L(m): p's mode T carries z
  // and the write, c's modes that cannot see t ephemeral carry L(m) - z, the others nothing.
  // Both cases are then counted at most once.
  std::vector<char> coupled(num_tensors, 0);
  std::vector<Elements> coupled_least(num_tensors, 0);
  std::vector<std::string> coupled_why(num_tensors);
  for (TensorId t = 0; t < num_tensors; ++t) {
    const OpId p = problem.producer[t];
    if (p == kNoOp || !a.TooLarge(t)) continue;
    const int slot = a.OnlyConsumerSlot(p);
    if (slot < 0) continue;
    const OpId c = problem.consumers[t][0];
    if (problem.ops[c].kind != OpKind::MatMul) continue;
    coupled[t] = 1;
    write_owner[t] = kNoOp;
    bool first = true;
    for (int mz = 0; mz < kModes; ++mz) {
      if (!a.HasMode(c, mz)) continue;
      auto cost = load_cost(c, mz, slot);
      if (first || cost.first < coupled_least[t]) {
        coupled_least[t] = cost.first;
        coupled_why[t] = std::move(cost.second);
      }
      first = false;
    }
  }

  // Options: one per mode an op can be in.
  model.options.resize(num_ops);
  for (OpId c = 0; c < num_ops; ++c) {
    const Op& op = problem.ops[c];
    const double native_compute = op.base_cost * static_cast<double>(problem.NativeTiles(c));
    for (int m = 0; m < kModes; ++m) {
      if (!a.HasMode(c, m)) continue;
      BoundModel::Option option;
      option.mode = m;
      option.compute = native_compute * static_cast<double>(a.Factor(c, m));  // P7
      const int option_index = static_cast<int>(model.options[c].size());
      auto note = [&](TensorId t, OpId who, const std::string& why, Elements e) {
        built.terms.push_back({{t, who, why, e}, option_index, c});
      };
      Elements loaded_alone[2] = {-1, -1};  // P11: per MatMul operand loaded by c alone
      for (int slot = 0; slot < static_cast<int>(op.inputs.size()); ++slot) {
        const TensorId t = op.inputs[slot];
        if (coupled[t]) {
          const OpId producer = problem.producer[t];
          if (a.EdgeFeasible(producer, c, slot, m)) continue;  // case A possible
          const auto [loads, why] = load_cost(c, m, slot);
          const Elements rest = loads - coupled_least[t];
          if (rest > 0) {
            option.loads += rest;
            note(t, c, why + " (coupled, P9: this part beyond the least load, which op " +
                           Str(producer) + " carries)", rest);
          }
          continue;
        }
        const auto& cons = problem.consumers[t];
        const int pos = static_cast<int>(std::find(cons.begin(), cons.end(), c) - cons.begin());
        if (sl_share[t][pos] >= 0) {  // P10
          if (m == kT) {
            const auto [loads, why] = load_cost(c, m, slot);
            option.loads += loads;
            note(t, c, why, loads);
          } else if (m == kSL) {
            option.loads += sl_share[t][pos];
            note(t, c,
                 "weight streamed by strip producers that may share a subgraph only with fewer "
                 "rows per tile; this op's share (P10, P6, W) [mode SL]",
                 sl_share[t][pos]);
          }
          continue;
        }
        if (!alone[t][pos]) continue;  // a shared class, counted above
        if (std::find(op.inputs.begin(), op.inputs.begin() + slot, t) != op.inputs.begin() + slot) {
          continue;  // the same tensor in two slots: counted at its first
        }
        const OpId producer = problem.producer[t];
        if (producer != kNoOp && a.EdgeFeasible(producer, c, slot, m)) continue;  // may be ephemeral
        if (producer != kNoOp && !a.TooLarge(t)) continue;                       // may be retained
        const auto [loads, why] = load_cost(c, m, slot);
        option.loads += loads;
        note(t, c, why, loads);
        if (slot < 2) loaded_alone[slot] = loads;
        if (write_owner[t] == c) {
          option.writes.push_back({producer, problem.tensors[t].size()});
          note(t, producer,
               "written once so that op " + Str(c) + " can load it (P8, V7) [mode " +
                   kModeName[m] + "]",
               problem.tensors[t].size());
        }
      }
      if (m == kT && op.kind == OpKind::MatMul && loaded_alone[0] >= 0 && loaded_alone[1] >= 0 &&
          op.inputs[0] != op.inputs[1] && problem.ReductionLength(c) <= n && a.TileModeAlone(c)) {
        const Elements strips = StripLoads(problem, c);
        const Elements extra = strips - loaded_alone[0] - loaded_alone[1];
        if (extra > 0) {
          option.loads += extra;
          note(op.inputs[0], c,
               "LHS and RHS strips reloaded as the tiles change row or column, at the largest "
               "tiles that fit: this much beyond one load of each (P11, M1, W) [mode T]",
               extra);
        }
      }
      if (m == kT && coupled[op.output]) {
        const TensorId t = op.output;
        const OpId z = problem.consumers[t][0];
        option.loads += coupled_least[t];
        note(t, z, coupled_why[t] + "; op " + Str(c) + " runs as a sink, so op " + Str(z) +
                       " loads it at least this much in any mode (coupled, P9)",
             coupled_least[t]);
        option.writes.push_back({c, problem.tensors[t].size()});
        note(t, c, "written once: op " + Str(c) + " runs as a sink and op " + Str(z) +
                       " loads it (P8, V7) [mode T]",
             problem.tensors[t].size());
      }
      model.options[c].push_back(std::move(option));
    }
  }
  const std::vector<char> none(weights.empty() ? problem.tensors.size() : 0, 0);
  Islands(problem, a, load_cost, built, weights.empty() ? none : weights);
  return built;
}

// The combined bound at weight a over the ops (and fixed terms) selected by `live`.
struct Evaluated {
  Latency value = 0;
  std::vector<int> choice;  // option index per op (-1 when not live)
};

template <class Live>
Evaluated Evaluate(const BoundModel& model, double a, const Live& live, bool want_choice) {
  Evaluated result;
  if (want_choice) result.choice.assign(model.options.size(), -1);
  const double per_element = (1 - a) / model.bandwidth;
  for (size_t op = 0; op < model.options.size(); ++op) {
    if (!live(static_cast<OpId>(op))) continue;
    double best = std::numeric_limits<double>::infinity();
    int best_index = 0;
    for (size_t i = 0; i < model.options[op].size(); ++i) {
      const BoundModel::Option& o = model.options[op][i];
      Elements moved = o.loads;
      for (const BoundModel::Write& w : o.writes) moved += live(w.producer) ? w.elements : 0;
      const double value = a * o.compute + per_element * static_cast<double>(moved);
      if (value < best) {
        best = value;
        best_index = static_cast<int>(i);
      }
    }
    result.value += best;
    if (want_choice) result.choice[op] = best_index;
  }
  for (const BoundModel::Fixed& f : model.fixed) {
    bool any = false;
    for (OpId o : f.owners) any = any || live(o);
    if (any) result.value += per_element * static_cast<double>(f.elements);
  }
  return result;
}

// The maximum over a in [0, 1] of a concave piecewise-linear function: ternary search, then
// the endpoints. Any a gives a valid bound, so an approximate maximum is still a bound.
template <class Live>
double BestWeight(const BoundModel& model, const Live& live) {
  double lo = 0, hi = 1;
  for (int i = 0; i < 60; ++i) {
    const double m1 = lo + (hi - lo) / 3, m2 = hi - (hi - lo) / 3;
    if (Evaluate(model, m1, live, false).value < Evaluate(model, m2, live, false).value) {
      lo = m1;
    } else {
      hi = m2;
    }
  }
  double best_a = (lo + hi) / 2;
  double best = Evaluate(model, best_a, live, false).value;
  for (double end : {0.0, 1.0}) {
    const double v = Evaluate(model, end, live, false).value;
    if (v > best) best = v, best_a = end;
  }
  return best_a;
}

// The problem the facts are applied to when Layout ops are present (docs/lower-bound.md,
// "Layout ops"): each Layout op X -> Y reads instead a fresh graph input Z of Y's shape. A
// region of Y the op's consumers need is then a region of Z loaded through the op, the same
// request the Layout op makes (L2); alone, the op loads Z and writes Y tile by tile (L4); Y
// may be retained (L5) or, the op in another subgraph, loaded from slow memory — every
// schedule of the problem is a schedule of the image at the same cost, with one rule fewer
// (L1: X in slow memory). The facts treat the image's Layout ops as producers that serve any
// demand (no V11, P1, nor P2 for them). X loses the Layout op as a consumer: never loaded by
// it (a graph input read only by Layout ops is not a graph input of the image), and a graph
// output of the image when no other op reads it (L1: it is written at least once). Z, a graph
// input, is loaded at least once: the whole of Y is gathered once. Op ids are unchanged;
// tensor ids past the problem's are the Zs, `layout_source` maps them back to their Y.
struct Decoupled {
  Problem problem;
  std::vector<TensorId> layout_source;  // per extra tensor: the Y it stands for
};

bool HasLayoutOps(const Problem& problem) {
  return std::any_of(problem.ops.begin(), problem.ops.end(),
                     [](const Op& op) { return op.kind == OpKind::Layout; });
}

Decoupled Decouple(const Problem& problem) {
  Decoupled d;
  d.problem.tensors = problem.tensors;
  d.problem.ops = problem.ops;
  d.problem.fast_memory_capacity = problem.fast_memory_capacity;
  d.problem.slow_memory_bandwidth = problem.slow_memory_bandwidth;
  d.problem.native = problem.native;
  d.problem.chip = problem.chip;
  for (Op& op : d.problem.ops) {
    if (op.kind != OpKind::Layout) continue;
    d.problem.tensors.push_back(problem.tensors[op.output]);
    d.layout_source.push_back(op.output);
    op.inputs = {static_cast<TensorId>(d.problem.tensors.size() - 1)};
  }
  d.problem.Finalize();  // acyclic: only edges were removed, and the Zs have no producer
  return d;
}

// The bound of a problem whose Layout ops, if any, read graph inputs of their own (the image of
// Decouple, or a problem without Layout ops).
BoundModel BuildDecoupledBoundModel(const Problem& problem) {
  Built built = Build(problem);
  auto all = [](OpId) { return true; };
  built.model.weight = BestWeight(built.model, all);
  return std::move(built.model);
}

LowerBound ComputeDecoupledLowerBound(const Problem& problem, BoundModel* model_out, const std::vector<char>& weights,
                                      const std::vector<char>& first_in_loop, const Problem& original);
LowerBound ComputeOneLowerBound(const Problem& problem, BoundModel* model_out);
LowerBound ComputeImageLowerBound(const Problem& problem, BoundModel* model_out);

// H6: per tensor, whether it travels the weight path. Taken from the problem itself, before
// Decouple, whose image could turn a graph input read by a Layout op into a weight.
std::vector<char> WeightTensors(const Problem& problem) {
  std::vector<char> weights(problem.tensors.size(), 0);
  for (TensorId t = 0; t < static_cast<TensorId>(problem.tensors.size()); ++t) weights[t] = problem.OnWeightPath(t);
  return weights;
}

// H6 (a weight path beside the slow memory). Every step of a valid schedule holds its weight
// slices in the FIFO, not in the fast memory, so it fits a one-path chip whose fast memory is
// the capacity plus the FIFO (plus every weight once per consumer when the FIFO is not
// checked), and it moves the same elements there. Its memory time max(w / Bw, o / B) is at
// least (w + o) / (Bw + B): the mode-based terms (traffic, combined) are those of that chip at
// bandwidth B + Bw (BoundModel::bandwidth), while graph I/O and the islands keep the two paths
// apart, max(weight elements / Bw, other elements / B), since each of their amounts is one
// tensor's and so wholly on one path.
Problem WeightPathRelaxed(const Problem& problem) {
  Problem relaxed = problem;
  Elements fifo = problem.chip.weight_fifo_capacity;
  if (fifo <= 0) {
    for (TensorId t = 0; t < static_cast<TensorId>(problem.tensors.size()); ++t) {
      if (problem.OnWeightPath(t)) fifo += problem.tensors[t].size() * static_cast<Elements>(problem.consumers[t].size());
    }
  }
  relaxed.fast_memory_capacity += fifo;
  return relaxed;
}

}  // namespace

BoundModel BuildBoundModel(const Problem& problem) {
  if (problem.chip.two_paths()) {
    const Problem relaxed = WeightPathRelaxed(problem);
    if (HasLayoutOps(relaxed)) return BuildDecoupledBoundModel(Decouple(relaxed).problem);
    return BuildDecoupledBoundModel(relaxed);
  }
  if (HasLayoutOps(problem)) return BuildDecoupledBoundModel(Decouple(problem).problem);
  return BuildDecoupledBoundModel(problem);
}

LowerBound ComputeLowerBound(const Problem& problem, BoundModel* model_out) {
  if (problem.chip.two_paths()) return ComputeOneLowerBound(WeightPathRelaxed(problem), model_out);
  return ComputeOneLowerBound(problem, model_out);
}

namespace {

LowerBound ComputeOneLowerBound(const Problem& problem, BoundModel* model_out) {
  LowerBound bound = ComputeImageLowerBound(problem, model_out);
  bound.memory_floor = MemoryFloor(problem);  // P17 reads L1 and L4 itself: on the problem, not the image
  return bound;
}

LowerBound ComputeImageLowerBound(const Problem& problem, BoundModel* model_out) {
  if (HasLayoutOps(problem)) {
    const Decoupled d = Decouple(problem);
    std::vector<char> weights = WeightTensors(problem);
    weights.resize(d.problem.tensors.size(), 0);  // the Zs are read by Layout ops: never weights
    LowerBound bound = ComputeDecoupledLowerBound(d.problem, model_out, weights, FirstInstanceInLoop(problem), problem);  // P26 reads L1
    const auto first_extra = static_cast<TensorId>(problem.tensors.size());
    for (BoundTerm& term : bound.explanation) {
      if (term.tensor >= first_extra) {
        term.tensor = d.layout_source[term.tensor - first_extra];
        term.why += " [gathered through Layout op " + std::to_string(problem.producer[term.tensor]) + "]";
      }
    }
    return bound;
  }
  return ComputeDecoupledLowerBound(problem, model_out, WeightTensors(problem), FirstInstanceInLoop(problem), problem);
}

LowerBound ComputeDecoupledLowerBound(const Problem& problem, BoundModel* model_out, const std::vector<char>& weights,
                                      const std::vector<char>& first_in_loop, const Problem& original) {
  LowerBound bound;
  for (OpId op = 0; op < static_cast<OpId>(problem.ops.size()); ++op) {
    bound.compute += problem.ops[op].base_cost * static_cast<double>(problem.NativeTiles(op));
  }
  // H6: the two paths apart, each amount being one tensor's and a tensor travelling one path
  // (`weights`, classified on the problem before Decouple).
  const auto paths_time = [&](Elements weight, Elements other) {
    if (!problem.chip.two_paths()) return static_cast<double>(weight + other) / problem.slow_memory_bandwidth;
    return std::max(static_cast<double>(weight) / problem.chip.weight_bandwidth,
                    static_cast<double>(other) / problem.slow_memory_bandwidth);
  };
  Elements io = 0, weight_io = 0;
  for (TensorId t = 0; t < static_cast<TensorId>(problem.tensors.size()); ++t) {
    if (problem.IsGraphInput(t) || problem.IsGraphOutput(t)) (weights[t] ? weight_io : io) += problem.tensors[t].size();
  }
  bound.graph_io = paths_time(weight_io, io);

  Built built = Build(problem, weights);
  const BoundModel& model = built.model;
  auto all = [](OpId) { return true; };
  bound.traffic = Evaluate(model, 0, all, false).value;
  bound.weight = BestWeight(model, all);
  const Evaluated at = Evaluate(model, bound.weight, all, true);
  bound.combined = at.value;
  bound.island_count = built.islands;
  // P14's choice of heavy ops is a heuristic that higher factors (P13's cases) can mislead: keep
  // the better of the two pricings of full modes (each a bound; the lines kept are its own).
  const std::vector<char> forced_writes = ForcedWrites(problem, Analysis(problem), built);  // P32
  bound.island_activations = static_cast<int>(std::count(forced_writes.begin(), forced_writes.end(), 1));
  Streaming streaming = StreamingBound(problem, Analysis(problem), &forced_writes);
  {
    Streaming plain = StreamingBound(problem, Analysis(problem, false), &forced_writes);
    if (plain.value > streaming.value) streaming = std::move(plain);
  }
  bound.streaming = streaming.value;
  bound.streaming_ops = streaming.activated;
  // P12 with P14 inside each island: every subgraph lies in one island, so P14's sum over the
  // island's ops outside Hid bounds the island's subgraphs as well as its compute does.
  std::vector<double> island_streaming(built.islands, 0);
  if (built.islands == 1) {
    island_streaming[0] = streaming.value;
  } else {
    std::vector<std::vector<OpId>> members(built.islands);
    for (OpId op = 0; op < static_cast<OpId>(problem.ops.size()); ++op) members[built.island_of[op]].push_back(op);
    for (int i = 0; i < built.islands; ++i) {
      std::vector<std::vector<Line>> lines;
      for (OpId op : members[i]) lines.push_back(streaming.lines[op]);
      island_streaming[i] = BestOverWeight(lines, [](OpId) { return true; });
    }
  }
  // P32: per island, P14's lines plus (1 - a) x the loads of activations too large to retain that
  // its subgraphs make and no line counts (eval/bound/islands/activations.h). The lines alone, not P15's
  // term (its reloads are produced tensors' loads too).
  {
    const std::vector<Elements> loads = IslandActivationLoads(problem, Analysis(problem), built);
    const double bandwidth = problem.slow_memory_bandwidth + problem.chip.weight_bandwidth;
    std::vector<std::vector<OpId>> members(built.islands);
    for (OpId op = 0; op < static_cast<OpId>(problem.ops.size()); ++op) members[built.island_of[op]].push_back(op);
    for (int i = 0; i < built.islands; ++i) {
      if (loads[i] == 0) continue;
      std::vector<std::vector<Line>> lines;
      for (OpId op : members[i]) lines.push_back(streaming.lines[op]);
      const double extra = static_cast<double>(loads[i]) / bandwidth;
      island_streaming[i] = std::max(island_streaming[i], BestOverWeight(lines, [](OpId) { return true; },
                                                                         [extra](double w) { return (1 - w) * extra; }));
    }
  }
  // P18 (0 with a weight path), whole and island by island: its claims are per subgraph too.
  const Analysis tile_modes(problem);
  const TileLines tiles = TileFloor(problem, tile_modes, built.islands > 1 ? &built.island_of : nullptr);
  bound.tiles = tiles.value;
  std::vector<double> island_tiles(built.islands, 0);
  if (built.islands == 1) {
    island_tiles[0] = tiles.value;
  } else {
    std::vector<std::vector<std::vector<Line>>> lines(built.islands);
    for (OpId op = 0; op < static_cast<OpId>(problem.ops.size()); ++op) lines[built.island_of[op]].push_back(tiles.island_lines[op]);
    for (int i = 0; i < built.islands; ++i) island_tiles[i] = BestOverWeight(lines[i], [](OpId) { return true; });
  }
  // P23, whole and island by island (every subgraph lies in one island, and its claims are per
  // subgraph).
  const SumLines sums = SumFloor(problem, tile_modes);
  bound.sums = sums.value;
  bound.sum_count = sums.sums;
  // The parts priced island by island as well as whole (P23, P25, P28, P29): one island is the
  // whole value; an island's members are listed once, when a part first has something to price.
  std::vector<std::vector<OpId>> island_members;
  const auto by_island = [&](double whole, bool any, const auto& value_of) {
    std::vector<double> values(built.islands, 0);
    if (built.islands == 1) {
      values[0] = whole;
    } else if (any) {
      if (island_members.empty()) {
        island_members.resize(built.islands);
        for (OpId op = 0; op < static_cast<OpId>(problem.ops.size()); ++op) island_members[built.island_of[op]].push_back(op);
      }
      for (int i = 0; i < built.islands; ++i) values[i] = value_of(island_members[i]);
    }
    return values;
  };
  const std::vector<double> island_sums =
      by_island(sums.value, sums.sums > 0, [&](const std::vector<OpId>& ops) { return sums.Value(problem, ops); });
  // P25: P23's prices with the taps' excess, whole and island by island (its claims are per
  // subgraph too); it includes P23's claims, so it is never below `sums`.
  const TapLines taps = TapFloor(problem, tile_modes, sums);
  bound.taps = taps.value;
  bound.tap_count = taps.tap_count;
  const std::vector<double> island_taps =
      by_island(taps.value, taps.tap_count > 0, [&](const std::vector<OpId>& ops) { return taps.Value(problem, ops); });
  std::vector<OpId> all_ops(problem.ops.size());
  for (OpId op = 0; op < static_cast<OpId>(problem.ops.size()); ++op) all_ops[op] = op;
  // P28: P25's value with each shape that holds one priced sum and no lone tap at the larger of
  // its per-subgraph maxima and P25's lambda-mixed term; whole and island by island.
  const SoleSums sole = SoleSumValue(problem, taps, all_ops);
  bound.sole_sums = sole.value;
  bound.sole_sum_count = sole.shapes;
  const std::vector<double> island_sole = by_island(sole.value, !taps.priced.empty(), [&](const std::vector<OpId>& ops) {
    return SoleSumValue(problem, taps, ops).value;
  });
  // P29: P28's value with each shape of two to four priced sums (and no lone tap) priced by the
  // groupings of its sums into subgraphs; whole and island by island.
  const SharedSums shared = SharedSumValue(problem, taps, all_ops);
  bound.shared_sums = shared.value;
  bound.shared_sum_count = shared.shapes;
  const std::vector<double> island_shared = by_island(shared.value, !taps.priced.empty(), [&](const std::vector<OpId>& ops) {
    return SharedSumValue(problem, taps, ops).value;
  });
  // P33, whole and island by island (every subgraph lies in one island, its claims are per
  // subgraph).
  const LoneTaps lone_taps = LoneTapFloor(problem, tile_modes);
  bound.lone_taps = lone_taps.value;
  bound.lone_tap_sums = lone_taps.sums;
  const std::vector<double> island_lone = by_island(lone_taps.value, lone_taps.sums > 0,
                                                    [&](const std::vector<OpId>& ops) { return lone_taps.Value(ops); });
  // P34: P23's sums and the sums that may run upstream of a k-loop, at three weights per
  // subgraph mixed by one lambda; whole and island by island.
  const UpstreamSums upstream = UpstreamSumFloor(problem, tile_modes);
  bound.upstream_sums = upstream.value;
  bound.upstream_sum_count = upstream.upstream_count;
  const std::vector<double> island_upstream = by_island(upstream.value, upstream.upstream_count > 0, [&](const std::vector<OpId>& ops) {
    return upstream.Value(problem, ops);
  });
  // P40: P34 with fanned-out upstream sums; whole and island by island.
  const UpstreamSums lhs_strip = LhsStripSumFloor(problem, tile_modes);
  // Its wider set of upstream sums can also lower a P34 claimant's e_s (their inputs leave the
  // cut's loads, D), so the part is the larger of the two: both are bounds.
  bound.lhs_strip_sums = std::max(lhs_strip.value, upstream.value);
  bound.lhs_strip_sum_count = lhs_strip.upstream_count;
  const std::vector<double> island_lhs_strip = by_island(lhs_strip.value, lhs_strip.upstream_count > 0, [&](const std::vector<OpId>& ops) {
    return lhs_strip.Value(problem, ops);
  });
  // P46: P40 with the sums that feed several taps priced once in mode T or once per group of
  // targets; whole and island by island (its claims are per subgraph).
  const TargetInstances targets = TargetInstanceFloor(problem, tile_modes, lhs_strip);
  bound.target_sums = std::max(targets.value, bound.lhs_strip_sums);
  bound.target_sum_count = targets.claimants;
  const std::vector<double> island_targets = by_island(targets.value, targets.claimants > 0, [&](const std::vector<OpId>& ops) {
    return targets.Value(problem, ops);
  });
  // P36: per op its compute, plus what the first subgraph of each multiply that waits for a tensor
  // gathered from its own input's descendants pays beyond it; on the problem itself (L1), whole
  // and island by island (that subgraph lies in the multiply's island).
  const Squeeze squeeze = SqueezeFloor(original);
  bound.squeeze = squeeze.value;
  bound.squeeze_count = squeeze.count;
  const std::vector<double> island_squeeze = by_island(squeeze.value, squeeze.count > 0, [&](const std::vector<OpId>& ops) {
    return squeeze.Value(ops);
  });
  // P42: per op its compute, plus half of what one class's weights exceed the compute that may
  // hide them; on the problem itself (Layout ops stop the walks), whole only.
  const TapWeights tap_weights = TapWeightFloor(original);
  bound.tap_weights = tap_weights.value;
  bound.tap_weight_members = tap_weights.members;
  // P21: an island that is one MatMul with K > n, or one with its epilogue ops, priced step by
  // step over every tile shape.
  std::vector<AloneFloor> alone(built.islands);
  {
    std::vector<std::vector<OpId>> members(built.islands);
    for (OpId op = 0; op < static_cast<OpId>(problem.ops.size()); ++op) members[built.island_of[op]].push_back(op);
    const std::vector<char> no_weights(problem.tensors.size(), 0);
    for (int i = 0; i < built.islands; ++i) {
      alone[i] = IslandFloor(problem, members[i], weights.empty() ? no_weights : weights);
    }
  }
  // P38: per island, P23's sums with their unfused inputs written and loaded there.
  const WrittenSums written = WrittenSumIslands(problem, tile_modes, built);
  bound.written_sum_count = written.sums;
  // P24 (H6 only): per island, the per-step excess of its weight-streaming twin MatMuls.
  const PerStepIsland per_step = PerStepIslands(problem, tile_modes, built, weights, first_in_loop);
  bound.per_step_twins = per_step.twins;
  bound.first_in_loop_twins = per_step.first_in_loop;
  // P50: per island, P24's form at a = 1 plus the windows whose gathers and loads little compute
  // can hide (on the problem itself: L1 and the first instances need the Layout ops' input edges).
  const GatherWindows gather = GatherWindowExcess(original, built, per_step);
  bound.gather_windows = gather.windows;
  bound.fill_capped_twins = per_step.capped;
  bound.unheld_strip_twins = per_step.unheld_strips;
  bound.island_of = built.island_of;
  bound.island_values.assign(built.islands, 0);
  for (int i = 0; i < built.islands; ++i) {
    bound.island_values[i] = std::max({built.island_compute[i], island_streaming[i], island_tiles[i], island_sums[i], island_taps[i], island_sole[i], island_shared[i], island_lone[i], island_upstream[i], island_lhs_strip[i], island_targets[i], island_squeeze[i],
                               paths_time(built.island_weight_traffic[i], built.island_traffic[i]),
                               alone[i].valid ? alone[i].Least() : 0.0, per_step.value[i], written.island_value[i]});
    if (gather.excess[i] > 0) {
      bound.island_values[i] =
          std::max(bound.island_values[i], built.island_compute[i] + per_step.Extra(i, 1, 0) + gather.excess[i]);
    }
    bound.islands += bound.island_values[i];
  }
  // P16's weights are picked by a coordinate ascent, which P21's values can lead to another end:
  // keep the better of the two (each is a bound), so that P21 never lowers it.
  bound.crossing = std::max(CrossingBound(problem, built, streaming.lines, streaming.beside_memory, alone, &per_step),
                            CrossingBound(problem, built, streaming.lines, streaming.beside_memory));
  // P35: P16 with the loads of the chains that serve islands again; never below P16.
  {
    const std::vector<char> no_weights(problem.tensors.size(), 0);
    const std::vector<RecomputeCut> cuts =
        RecomputeCuts(problem, original, tile_modes, built, weights.empty() ? no_weights : weights);
    bound.recompute_count = static_cast<int>(
        std::count_if(cuts.begin(), cuts.end(), [](const RecomputeCut& c) { return c.priced; }));
    bound.recompute = std::max(
        {bound.crossing,
         CrossingBound(problem, built, streaming.lines, streaming.beside_memory, alone, &per_step, &cuts),
         CrossingBound(problem, built, streaming.lines, streaming.beside_memory, {}, nullptr, &cuts)});
  }
  // P43: P16 with the heads inside an island and every serving chain but the earliest priced.
  {
    const std::vector<char> no_weights(problem.tensors.size(), 0);
    const InternalHeads heads = FindInternalHeads(problem, original, tile_modes, built, weights.empty() ? no_weights : weights);
    bound.internal_head_count = heads.heads;
    bound.internal_heads = std::max(
        {bound.crossing,
         CrossingBound(problem, built, streaming.lines, streaming.beside_memory, alone, &per_step, nullptr, &heads),
         CrossingBound(problem, built, streaming.lines, streaming.beside_memory, {}, nullptr, nullptr, &heads)});
  }
  // The explanation follows the modes chosen at the best weight.
  for (const TermInfo& info : built.terms) {
    if (info.option >= 0 && at.choice[info.owner] != info.option) continue;
    bound.explanation.push_back(info.term);
  }
  std::stable_sort(bound.explanation.begin(), bound.explanation.end(),
                   [](const BoundTerm& x, const BoundTerm& y) { return x.elements > y.elements; });
  if (model_out != nullptr) {
    *model_out = std::move(built.model);
    model_out->weight = bound.weight;  // BuildBoundModel's weight: the same BestWeight
  }
  return bound;
}

}  // namespace

Latency RemainingLowerBound(const BoundModel& model, const std::vector<char>& op_remaining) {
  auto live = [&](OpId op) { return op_remaining[op] != 0; };
  double compute = 0;
  for (size_t op = 0; op < model.options.size(); ++op) {
    if (!op_remaining[op]) continue;
    double least = std::numeric_limits<double>::infinity();
    for (const BoundModel::Option& o : model.options[op]) least = std::min(least, o.compute);
    compute += least;
  }
  const double traffic = Evaluate(model, 0, live, false).value;
  const double combined = Evaluate(model, model.weight, live, false).value;
  return std::max({compute, traffic, combined});
}

}  // namespace annealer
