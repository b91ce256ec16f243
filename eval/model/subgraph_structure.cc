// The order of the checks below is part of the contract (see the header): both evaluators
// report the first rule broken in this order.
#include "eval/model/subgraph_structure.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace annealer {

namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
std::string Str(int64_t v) { return std::to_string(v); }

Violation Fail(std::string rule, std::string detail) {
  Violation violation;
  violation.rule = std::move(rule);
  violation.detail = std::move(detail);
  return violation;
}

// A granularity check's violation: its words only when wanted (see ViolationWordsOff).
template <typename Words>
Violation FailLazily(const char* rule, const Words& words) {
  Violation violation;
  violation.rule = rule;
  if (ViolationWordsOff::Wanted()) violation.detail = words();
  return violation;
}

}  // namespace

std::optional<Violation> AnalyseContext(const Problem& problem, const Subgraph& subgraph,
                                        SubgraphStructure& st) {
  const auto& ops = subgraph.ops;
  const int num_ops = static_cast<int>(problem.ops.size());
  st.sinks.clear();
  st.k_loop_matmuls.clear();
  st.epilogue_ops.clear();
  st.reduction = 0;
  st.layout_sink = false;

  // V1 (local part): non-empty, ids in range, no op twice.
  if (ops.empty()) return Fail("V1", "the subgraph has no ops");
  // Cleared in time proportional to the last subgraph, not to the problem: a reused structure
  // analyses subgraphs of a 10,000-op graph as fast as those of a 100-op one.
  if (st.in_subgraph.size() != static_cast<size_t>(num_ops)) {
    st.in_subgraph.assign(num_ops, 0);
  } else {
    for (OpId op : st.marked) st.in_subgraph[op] = 0;
  }
  st.marked.clear();
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i] < 0 || ops[i] >= num_ops) {
      return Fail("V1",
                  "op id " + Str(ops[i]) + " at position " + Str(i) + " is out of range (" +
                      Str(num_ops) + " ops)");
    }
    if (st.in_subgraph[ops[i]]) {
      return Fail("V1", "op " + Str(ops[i]) + " is listed twice");
    }
    st.in_subgraph[ops[i]] = static_cast<int32_t>(i) + 1;
    st.marked.push_back(ops[i]);
  }

  // V6: declared order is topological with respect to internal edges. A position is looked up
  // in the marks (a search of the op list per input was quadratic in a large subgraph's ops).
  auto position = [&](OpId op) { return static_cast<int>(st.in_subgraph[op]) - 1; };
  for (size_t i = 0; i < ops.size(); ++i) {
    for (TensorId in : problem.ops[ops[i]].inputs) {
      const OpId p = problem.producer[in];
      if (p != kNoOp && st.Contains(p) && position(p) > static_cast<int>(i)) {
        return Fail("V6",
                    "op " + Str(ops[i]) + " runs before op " + Str(p) +
                        ", which produces its input tensor " + Str(in));
      }
    }
  }

  // L1 (local part): a Layout op gathers its input from slow memory; it does not fuse with the
  // op that produces it.
  for (OpId op : ops) {
    if (problem.ops[op].kind != OpKind::Layout) continue;
    for (TensorId x : problem.ops[op].inputs) {
      if (st.Produces(problem, x)) {
        return Fail("L1", "Layout op " + Str(op) + " reads tensor " + Str(x) +
                              ", which is produced in the same subgraph");
      }
    }
  }

  // V5: weakly connected through internal producer->consumer edges (union-find over
  // positions in the op list).
  std::vector<int>& component = st.component;
  component.resize(ops.size());
  std::iota(component.begin(), component.end(), 0);
  auto find = [&](int x) {
    while (component[x] != x) x = component[x] = component[component[x]];
    return x;
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    for (TensorId in : problem.ops[ops[i]].inputs) {
      const OpId p = problem.producer[in];
      if (p != kNoOp && st.Contains(p)) component[find(static_cast<int>(i))] = find(position(p));
    }
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    if (find(static_cast<int>(i)) != find(0)) {
      return Fail("V5",
                  "op " + Str(ops[i]) + " is not connected to op " + Str(ops[0]) +
                      " through tensors produced and consumed inside the subgraph");
    }
  }

  // V8: only tensors produced here may be retained, each once.
  for (size_t i = 0; i < subgraph.retain.size(); ++i) {
    const TensorId t = subgraph.retain[i];
    if (t < 0 || t >= static_cast<TensorId>(problem.tensors.size())) {
      return Fail("V8",
                  "tensors_to_retain[" + Str(i) + "] = " + Str(t) + " is not a tensor id");
    }
    if (!st.Produces(problem, t)) {
      return Fail("V8",
                  "tensor " + Str(t) + " is retained but not produced by this subgraph");
    }
    if (std::find(subgraph.retain.begin(), subgraph.retain.begin() + i, t) !=
        subgraph.retain.begin() + i) {
      return Fail("V8", "tensor " + Str(t) + " is retained twice");
    }
  }

  // Sinks and V12.
  for (OpId op : ops) {
    if (!st.ConsumesInside(problem, problem.ops[op].output)) st.sinks.push_back(op);
  }
  const Tensor& z = problem.tensors[problem.ops[st.sinks[0]].output];
  for (OpId s : st.sinks) {
    const Tensor& t = problem.tensors[problem.ops[s].output];
    if (t.width != z.width || t.height != z.height) {
      return Fail("V12",
                  "sinks op " + Str(st.sinks[0]) + " and op " + Str(s) +
                      " have output shapes of different size");
    }
  }
  st.output_height = z.height;
  st.output_width = z.width;
  // With L1, a Layout sink has no producer inside and no consumer inside: V5 left it alone.
  st.layout_sink = problem.ops[st.sinks[0]].kind == OpKind::Layout;

  // G3: F = MatMuls reached from the sinks through Pointwise ops only. The walk stops at a
  // Layout op (spec L2): its output is loaded, not derived.
  {
    std::vector<char>& seen = st.seen;
    seen.assign(ops.size(), 0);
    for (OpId s : st.sinks) seen[position(s)] = 1;
    std::vector<OpId>& stack = st.chain;
    stack.assign(st.sinks.begin(), st.sinks.end());
    while (!stack.empty()) {
      const OpId op = stack.back();
      stack.pop_back();
      if (problem.ops[op].kind == OpKind::MatMul) {
        st.k_loop_matmuls.push_back(op);
        continue;
      }
      if (problem.ops[op].kind == OpKind::Layout) continue;
      st.epilogue_ops.push_back(op);
      for (TensorId in : problem.ops[op].inputs) {
        const OpId p = problem.producer[in];
        if (p != kNoOp && st.Contains(p) && !seen[position(p)]) {
          seen[position(p)] = 1;
          stack.push_back(p);
        }
      }
    }
  }
  std::sort(st.k_loop_matmuls.begin(), st.k_loop_matmuls.end());
  std::sort(st.epilogue_ops.begin(), st.epilogue_ops.end());
  for (OpId m : st.k_loop_matmuls) {
    const Elements k_op = problem.ReductionLength(m);
    if (st.reduction == 0) st.reduction = k_op;
    if (k_op != st.reduction) {
      return Fail("G3",
                  "k-loop MatMuls op " + Str(st.k_loop_matmuls[0]) + " and op " + Str(m) +
                      " have different reduction lengths " + Str(st.reduction) + " and " +
                      Str(k_op));
    }
  }

  return std::nullopt;
}

std::optional<Violation> CheckGranularityRange(const Problem& problem, const Granularity& g) {
  const Elements n = problem.native;
  // V2: 1 <= w, h, k <= native.
  if (g.w < 1 || g.w > n || g.h < 1 || g.h > n || g.k < 1 || g.k > n) {
    return FailLazily("V2", [&] {
      return "granularity [" + Str(g.w) + "," + Str(g.h) + "," + Str(g.k) + "] is outside [1, " + Str(n) +
             "] in some axis";
    });
  }
  return std::nullopt;
}

std::optional<Violation> AnalyseGranularity(const Problem& problem, const Subgraph& subgraph,
                                            SubgraphStructure& st) {
  const auto& ops = subgraph.ops;
  const Granularity g = subgraph.granularity;
  const Tensor z{st.output_width, st.output_height};
  // V3: k <= K for every MatMul of the subgraph.
  for (OpId op : ops) {
    if (problem.ops[op].kind == OpKind::MatMul && g.k > problem.ReductionLength(op)) {
      return FailLazily("V3", [&] {
        return "k = " + Str(g.k) + " exceeds the reduction length K = " + Str(problem.ReductionLength(op)) +
               " of MatMul op " + Str(op);
      });
    }
  }

  // V11: a Pointwise prologue of a k-split MatMul needs w >= K (LHS side) or h >= K (RHS).
  if (st.reduction > 0 && g.k < st.reduction) {
    for (OpId m : st.k_loop_matmuls) {
      for (int side = 0; side < 2; ++side) {
        const Elements needed = st.reduction;
        const Elements have = side == 0 ? g.w : g.h;
        std::vector<OpId>& chain = st.chain;
        chain.clear();
        const OpId first = problem.producer[problem.ops[m].inputs[side]];
        if (first != kNoOp && st.Contains(first)) chain.push_back(first);
        while (!chain.empty()) {
          const OpId op = chain.back();
          chain.pop_back();
          if (problem.ops[op].kind != OpKind::Pointwise) continue;
          if (have < needed) {
            return FailLazily("V11", [&] {
              return "Pointwise op " + Str(op) + " feeds the " +
                     (side == 0 ? std::string("LHS") : std::string("RHS")) + " of k-split MatMul op " + Str(m) +
                     ", which needs " + (side == 0 ? "w" : "h") + " >= K = " + Str(needed) + " (have " + Str(have) +
                     ")";
            });
          }
          for (TensorId in : problem.ops[op].inputs) {
            const OpId p = problem.producer[in];
            if (p != kNoOp && st.Contains(p)) chain.push_back(p);
          }
        }
      }
    }
  }

  // Grid (G2) and V10.
  st.rows = CeilDiv(z.height, g.h);
  st.cols = CeilDiv(z.width, g.w);
  const int64_t tiles = st.rows * st.cols;
  if (subgraph.traversal) {
    const auto& order = *subgraph.traversal;
    if (static_cast<int64_t>(order.size()) != tiles) {
      return FailLazily("V10", [&] {
        return "traversal order has " + Str(order.size()) + " entries for " + Str(tiles) + " tiles";
      });
    }
    std::vector<char>& used = st.used_tiles;
    used.assign(tiles, 0);
    for (size_t i = 0; i < order.size(); ++i) {
      if (order[i] < 0 || order[i] >= tiles || used[order[i]]) {
        return FailLazily("V10", [&] {
          return "traversal entry " + Str(i) + " = " + Str(order[i]) + " is out of range or repeated (" + Str(tiles) +
                 " tiles)";
        });
      }
      used[order[i]] = 1;
    }
  }

  // H3: the chip's base tile sides (eval/model/chip_rules.h).
  if (problem.chip.aligned()) {
    const struct {
      SideAxis axis;
      const char* name;
      Elements side, base, dimension;
      const char* what;
    } sides[] = {{SideAxis::kW, "w", g.w, problem.chip.base_w, z.width, "the output width"},
                 {SideAxis::kH, "h", g.h, problem.chip.base_h, z.height, "the output height"},
                 {SideAxis::kK, "k", g.k, problem.chip.base_k, st.reduction, "the reduction length K"}};
    for (const auto& s : sides) {
      if (s.axis == SideAxis::kK && st.reduction == 0) continue;  // no k-loop: k is not used
      if (!SideAllowed(problem.chip, s.axis, s.side, s.dimension)) {
        return FailLazily("H3", [&] {
          return std::string(s.name) + " = " + Str(s.side) + " is not a multiple of the chip's base " + Str(s.base) +
                 " and does not cover " + s.what + " " + Str(s.dimension);
        });
      }
    }
  }
  return std::nullopt;
}

std::optional<Violation> AnalyseSubgraph(const Problem& problem, const Subgraph& subgraph,
                                         SubgraphStructure& st) {
  std::optional<Violation> context = AnalyseContext(problem, subgraph, st);
  if (context && context->rule == "V1") return context;
  if (std::optional<Violation> range = CheckGranularityRange(problem, subgraph.granularity)) return range;
  if (context) return context;
  return AnalyseGranularity(problem, subgraph, st);
}

std::optional<Violation> CheckRetainedIn(const Problem& problem, const std::vector<TensorId>& retained_in) {
  for (size_t i = 0; i < retained_in.size(); ++i) {
    const TensorId t = retained_in[i];
    if (t < 0 || t >= static_cast<TensorId>(problem.tensors.size())) {
      return Fail("V8", "tensors_to_retain[" + Str(i) + "] = " + Str(t) +
                            " of the previous subgraph is not a tensor id");
    }
  }
  return std::nullopt;
}

std::vector<int> SubgraphsWithPartialEdgeTiles(const Problem& problem, const Schedule& schedule) {
  std::vector<int> partial;
  SubgraphStructure structure;
  for (int i = 0; i < static_cast<int>(schedule.subgraphs.size()); ++i) {
    const Subgraph& subgraph = schedule.subgraphs[i];
    if (AnalyseSubgraph(problem, subgraph, structure)) continue;  // invalid: not ours to judge
    const Granularity& g = subgraph.granularity;
    const bool rows = structure.output_height % g.h != 0;
    const bool cols = structure.output_width % g.w != 0;
    const bool steps = structure.reduction > 0 && structure.reduction % g.k != 0;
    if (rows || cols || steps) partial.push_back(i);
  }
  return partial;
}

std::string PartialEdgeTilesNote(const std::vector<int>& subgraphs) {
  std::string list;
  const size_t shown = std::min<size_t>(subgraphs.size(), 10);
  for (size_t i = 0; i < shown; ++i) list += (i > 0 ? ", " : "") + std::to_string(subgraphs[i]);
  if (shown < subgraphs.size()) list += " and " + std::to_string(subgraphs.size() - shown) + " more";
  return std::string(subgraphs.size() == 1 ? "subgraph " : "subgraphs ") + list +
         (subgraphs.size() == 1 ? " has" : " have") +
         " partial edge tiles (a tile side or k that does not divide its dimension); the "
         "latency assumes spec O9 (clipped transfers at the edges), which the official "
         "evaluator may read differently";
}

}  // namespace annealer
