#include "eval/bound/islands/gather_windows.h"

#include <algorithm>
#include <utility>

#include "eval/bound/traffic/first_instance.h"

namespace annealer::bound_internal {

bool g_gather_windows = true;
bool g_fifo_refuses_upstream = true;

std::vector<char> FirstInstanceInF(const Problem& problem) {
  const int num_ops = static_cast<int>(problem.ops.size());
  std::vector<char> result(num_ops, 0);
  // Per op and per kind of path from m (1: m's output reaches it through Pointwise ops only), the
  // stamp of the last m whose walk reached it that way.
  std::vector<int> in_dep(num_ops, -1), below_seen(num_ops, -1), reached[2];
  reached[0].assign(num_ops, -1);
  reached[1].assign(num_ops, -1);
  std::vector<std::pair<OpId, bool>> walk;  // (op, a Layout op lies on the path to it)
  std::vector<std::pair<OpId, bool>> stack;  // (op, reached from m through Pointwise ops only)
  const int64_t fifo = problem.chip.weight_fifo_capacity;
  for (OpId m = 0; m < num_ops; ++m) {
    const Op& op = problem.ops[m];
    if (op.kind != OpKind::MatMul || problem.ReductionLength(m) <= problem.native) continue;
    // Dep(m): every op at or below a Layout op that m reaches; none shares m's first subgraph.
    MarkDep(problem, m, in_dep, below_seen, walk);
    // H6: a MatMul q upstream of a k-loop makes its LHS rows whole (D3); when m's output reaches
    // that LHS through Pointwise ops only, m then makes all its columns in one step and
    // requests its whole weight there, which a FIFO below it refuses. Such a q cannot take m.
    const TensorId w_m = op.inputs[1];
    const bool whole_refused = g_fifo_refuses_upstream && fifo > 0 && problem.OnWeightPath(w_m) && problem.tensors[w_m].size() > fifo;
    // An edge into a MatMul q that q may take in F (from a MatMul, or from a Pointwise op when
    // K_q <= n, V11) would let m sit upstream of q.
    bool upstream = false;
    stack.emplace_back(m, true);
    reached[1][m] = m;
    while (!stack.empty() && !upstream) {
      const auto [p, plain] = stack.back();
      stack.pop_back();
      const TensorId out = problem.ops[p].output;
      for (OpId q : problem.consumers[out]) {
        if (in_dep[q] == m) continue;
        const Op& qop = problem.ops[q];
        if (qop.kind == OpKind::MatMul &&
            (problem.ops[p].kind != OpKind::Pointwise || problem.ReductionLength(q) <= problem.native)) {
          upstream = true;
          break;
        }
        if (qop.kind == OpKind::MatMul && plain && whole_refused && qop.inputs[0] == out && qop.inputs[1] != out) continue;
        const bool next_plain = plain && qop.kind == OpKind::Pointwise;  // a Pointwise op keeps its input's shape
        if (reached[next_plain][q] != m) {
          reached[next_plain][q] = m;
          stack.emplace_back(q, next_plain);
        }
      }
    }
    stack.clear();
    result[m] = upstream ? 0 : 1;
  }
  return result;
}

namespace {

struct Window {
  int island;
  OpId x;
  double excess;
  std::vector<char> after;  // per op: its first instance is later than the window's subgraphs
};

}  // namespace

GatherWindows GatherWindowExcess(const Problem& problem, const Built& built, const PerStepIsland& per_step) {
  GatherWindows result;
  result.excess.assign(built.islands, 0);
  if (!g_gather_windows || problem.chip.prefetch) return result;  // H5 may hide a step's loads in the one before
  const int num_ops = static_cast<int>(problem.ops.size());
  const int num_tensors = static_cast<int>(problem.tensors.size());
  const bool any_layout = std::any_of(problem.ops.begin(), problem.ops.end(), [](const Op& op) { return op.kind == OpKind::Layout; });
  if (!any_layout) return result;
  const double bandwidth = problem.slow_memory_bandwidth;
  std::vector<int> position(num_ops, 0);
  for (int i = 0; i < num_ops; ++i) position[problem.topological_order[i]] = i;
  const auto island = [&](OpId op) { return built.island_of[op]; };
  const auto size = [&](TensorId t) { return static_cast<double>(problem.tensors[t].size()); };
  // The widest path's least tensor over the paths to a tensor that start at a source of island I
  // (a graph input off the weight path read by an op of I, or a Layout op of I's output) and run
  // through tensors made by non-Layout ops of I; 0 when no such path reaches it.
  std::vector<double> width(num_tensors, 0);
  const auto source_width = [&](TensorId v, int in) -> double {
    const OpId p = problem.producer[v];
    if (p == kNoOp) return problem.OnWeightPath(v) ? 0.0 : size(v);
    if (island(p) != in) return 0.0;
    if (problem.ops[p].kind == OpKind::Layout) return size(v);
    return width[v];
  };
  for (OpId o : problem.topological_order) {
    if (problem.ops[o].kind == OpKind::Layout) continue;
    double best = 0;
    for (TensorId v : problem.ops[o].inputs) best = std::max(best, source_width(v, island(o)));
    width[problem.ops[o].output] = std::min(size(problem.ops[o].output), best);
  }
  const std::vector<char> first_in_f = FirstInstanceInF(problem);
  std::vector<std::vector<OpId>> members(built.islands);
  for (OpId o = 0; o < num_ops; ++o) members[island(o)].push_back(o);
  const auto own = [&](OpId o) {
    return problem.ops[o].base_cost * static_cast<double>(problem.NativeTiles(o)) + per_step.OpExtra(o, 1, 0);
  };
  std::vector<char> ancestor(num_ops), below(num_ops);
  std::vector<OpId> stack;
  const auto mark_down = [&](std::vector<char>& mark) {  // mark every op below the stack's, and them
    while (!stack.empty()) {
      const OpId y = stack.back();
      stack.pop_back();
      for (OpId c : problem.consumers[problem.ops[y].output]) {
        if (mark[c]) continue;
        mark[c] = 1;
        stack.push_back(c);
      }
    }
  };
  std::vector<Window> windows;
  for (OpId g = 0; g < num_ops; ++g) {
    const Op& gop = problem.ops[g];
    if (gop.kind != OpKind::Layout || gop.inputs.size() != 1) continue;
    const OpId x = problem.producer[gop.inputs[0]];
    if (x == kNoOp || island(x) == island(g)) continue;
    const int in = island(g);
    const TensorId y_out = gop.output;
    // x and its ancestors first ran by tau, the subgraph that wrote X.
    MarkAncestors(problem, x, ancestor, stack);
    ancestor[x] = 1;
    for (OpId z : problem.consumers[y_out]) {
      if (island(z) != in || problem.ops[z].kind == OpKind::Layout) continue;
      double t_width = 0;
      for (TensorId t : problem.ops[z].inputs) {
        if (t == y_out) continue;
        const OpId p = problem.producer[t];
        if (p != kNoOp && position[p] > position[g]) continue;  // might descend from g
        t_width = std::max(t_width, source_width(t, in));
      }
      const double gain = (size(y_out) + t_width) / bandwidth;
      // After(z): below z, the Layout ops (L1) and the MatMuls of V11 that first run after S_z.
      std::fill(below.begin(), below.end(), 0);
      below[z] = 1;
      stack.push_back(z);
      mark_down(below);
      std::vector<char> after(num_ops, 0);
      for (OpId o = 0; o < num_ops; ++o) {
        if (!below[o] || after[o]) continue;
        const Op& op = problem.ops[o];
        bool seed = op.kind == OpKind::Layout && o != z;
        if (op.kind == OpKind::MatMul && first_in_f[o]) {
          for (TensorId v : op.inputs) {
            const OpId q = problem.producer[v];
            seed = seed || (q != kNoOp && below[q] && problem.ops[q].kind == OpKind::Pointwise);
          }
        }
        if (!seed) continue;
        after[o] = 1;
        stack.push_back(o);
        mark_down(after);
      }
      double companions = 0;
      for (OpId o : members[in]) {
        if (!ancestor[o] && !after[o]) companions += own(o);
      }
      const double excess = gain - companions;
      if (excess > 0) windows.push_back({in, x, excess, std::move(after)});
    }
  }
  // Windows of one island add when their subgraphs cannot meet: the later one's x first runs
  // after the earlier one's S_z, so its tau does too.
  std::stable_sort(windows.begin(), windows.end(), [](const Window& a, const Window& b) { return a.excess > b.excess; });
  std::vector<std::vector<const Window*>> chosen(built.islands);
  for (const Window& w : windows) {
    bool apart = true;
    for (const Window* c : chosen[w.island]) apart = apart && (c->after[w.x] || w.after[c->x]);
    if (!apart) continue;
    chosen[w.island].push_back(&w);
    result.excess[w.island] += w.excess;
    ++result.windows;
  }
  return result;
}

}  // namespace annealer::bound_internal
