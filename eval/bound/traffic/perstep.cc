#include "eval/bound/traffic/perstep.h"

#include "eval/bound/traffic/fresh_fill.h"
#include "eval/bound/traffic/upstream_weight.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <span>
#include <vector>

namespace annealer::bound_internal {

bool g_per_step_excess = true;
bool g_lhs_strips = true;
bool g_unheld_strips = true;
bool g_upstream_capacity = true;

namespace {

// P48: P24's delta when every step of a twin loads its LHS strip over the activation path (a graph
// input the twin alone reads: never retained, V8, and no step requests the k-range of the step
// before it, M1). Per column of tiles and step j, with R rows of tiles: each row tile costs at least
// max(m_j, its strip), m_j = max(c_j, w_j), and the strips add to X_j = M k_j / B, so the column's
// steps cost at least max(R m_j, X_j) while the share taken away is (1 - a) R w_j. The least over
// R >= R0 of max(R m, X) - (1 - a) R w is p max(R0, X / m), p = m - (1 - a) w (R real: a floor).
// The least over o_j >= the strip of max(c, w, o) - (1 - a - b) o is (a + b) max(c, w, strip).
// Kept apart from PerStepExcess's own loop so that P24's figures stay bit for bit.
//
// P56, one path (a = 1): the strip and the weight slice share the path, so a row tile's step costs
// max(c_j, w_j + its strip); over R >= R0 rows at least max(R c_j, R w_j + X_j), least at R0.
double LhsStripExcess(double beta, Elements rows, Elements cols, Elements reduction, Elements native,
                      double weight_bandwidth, double a, double lhs_time, double fill_cap, bool one_path) {
  const double b = 1 - a;
  const double r0 = static_cast<double>(CeilDiv(rows, native));
  const double native_tiles = r0 * static_cast<double>(CeilDiv(cols, native));
  const auto term = [&](double c, double w, double strip) {
    if (one_path) return std::max(r0 * c, r0 * w + strip);
    const double m = std::max(c, w);
    return (m - b * w) * std::max(r0, strip / m);
  };
  double best = std::numeric_limits<double>::infinity();
  std::vector<double> gammas;
  for (Elements k = 1; k <= std::min(native, reduction - 1); ++k) {
    const Elements steps = CeilDiv(reduction, k), k_last = reduction - (steps - 1) * k;
    const double c_full = beta * static_cast<double>(k) / static_cast<double>(reduction);
    const double c_last = beta * static_cast<double>(k_last) / static_cast<double>(reduction);
    const double strip_full = lhs_time * static_cast<double>(k), strip_last = lhs_time * static_cast<double>(k_last);
    for (Elements w = 1; w <= std::min(native, cols); ++w) {
      const Elements col_tiles = CeilDiv(cols, w), w_last = cols - (col_tiles - 1) * w;
      struct Class {
        double count, before, last_weight;
      };
      std::array<Class, 2> classes{};
      int num = 0;
      for (const auto& [count, wc] : {std::pair<Elements, Elements>{col_tiles - 1, w}, {1, w_last}}) {
        if (count == 0) continue;
        const double full = static_cast<double>(k * wc) / weight_bandwidth;
        const double last = static_cast<double>(k_last * wc) / weight_bandwidth;
        classes[num++] = {static_cast<double>(count),
                          static_cast<double>(steps - 1) * term(c_full, full, strip_full), last};
      }
      // In gamma each column's last step is constant, then concave (strip / m), then linear with a
      // slope of at least R0 per column (the tiles number at least the native ones): between the
      // breakpoints the sum is concave, so its least is at 0 or a breakpoint.
      const auto excess = [&](double gamma) {
        double sum = 0;
        for (int i = 0; i < num; ++i) {
          sum += classes[i].count * (classes[i].before + term(c_last + gamma, classes[i].last_weight, strip_last));
        }
        return sum - a * (beta + gamma) * native_tiles;
      };
      gammas.assign(1, 0.0);
      for (int i = 0; i < num; ++i) {
        gammas.push_back(classes[i].last_weight - c_last);
        // One path: each column's last step is convex in gamma with its kink where the compute
        // meets the weight slice and the strip's share of a row.
        if (one_path) gammas.push_back(classes[i].last_weight + strip_last / r0 - c_last);
      }
      gammas.push_back(strip_last / r0 - c_last);
      // P49: on [0, fill_cap] the least is at 0, a breakpoint below the cap, or the cap.
      if (fill_cap < std::numeric_limits<double>::infinity()) gammas.push_back(fill_cap);
      for (double gamma : gammas) {
        if (gamma >= 0 && gamma <= fill_cap) best = std::min(best, excess(gamma));
      }
    }
  }
  return best;
}

}  // namespace

void PerStepExcessAt(double beta, Elements rows, Elements cols, Elements reduction, Elements native,
                     double weight_bandwidth, std::span<const double> alphas, double lhs_time, double fill_cap,
                     std::span<double> out) {
  if (lhs_time > 0) {
    for (std::size_t i = 0; i < alphas.size(); ++i) {
      out[i] = LhsStripExcess(beta, rows, cols, reduction, native, weight_bandwidth, alphas[i], lhs_time, fill_cap,
                              false);
    }
    return;
  }
  const Elements row_tiles = CeilDiv(rows, native);  // h = min(n, M): the least rows of tiles
  const double native_tiles = static_cast<double>(row_tiles * CeilDiv(cols, native));
  const double weight_time = static_cast<double>(reduction) * static_cast<double>(cols) *
                             static_cast<double>(row_tiles) / weight_bandwidth;
  std::fill(out.begin(), out.end(), std::numeric_limits<double>::infinity());
  for (Elements k = 1; k <= std::min(native, reduction - 1); ++k) {
    const Elements steps = CeilDiv(reduction, k), k_last = reduction - (steps - 1) * k;
    const double c_full = beta * static_cast<double>(k) / static_cast<double>(reduction);
    const double c_last = beta * static_cast<double>(k_last) / static_cast<double>(reduction);
    for (Elements w = 1; w <= std::min(native, cols); ++w) {
      const Elements col_tiles = CeilDiv(cols, w), w_last = cols - (col_tiles - 1) * w;
      // Two classes of column: full (col_tiles - 1 of them) and the last; per class, the steps
      // before the last and the last step's weight time.
      struct Class {
        double count, before, last_weight;
      };
      std::array<Class, 2> classes{};
      int num = 0;
      for (const auto& [count, wc] : {std::pair<Elements, Elements>{col_tiles - 1, w}, {1, w_last}}) {
        if (count == 0) continue;
        const double full = static_cast<double>(k * wc) / weight_bandwidth;
        const double last = static_cast<double>(k_last * wc) / weight_bandwidth;
        classes[num++] = {static_cast<double>(count * row_tiles),
                          static_cast<double>(steps - 1) * std::max(c_full, full), last};
      }
      // Convex and piecewise linear in gamma, nondecreasing beyond its breakpoints (the tiles
      // number at least the native ones): its least is at 0 or a breakpoint; on [0, fill_cap]
      // (P49) at 0, a breakpoint below the cap, or the cap. The classes do not depend on a, so
      // every a of the grid reads them here (the same figures as one a at a time).
      const auto occupied = [&](double gamma) {
        double sum = 0;
        for (int i = 0; i < num; ++i) {
          sum += classes[i].count * (classes[i].before + std::max(c_last + gamma, classes[i].last_weight));
        }
        return sum;
      };
      std::array<double, 4> gammas{};
      std::array<double, 4> sums{};
      int candidates = 0;
      const auto add = [&](double gamma) {
        gammas[candidates] = gamma;
        sums[candidates++] = occupied(gamma);
      };
      add(0);
      for (int i = 0; i < num; ++i) {
        const double gamma = classes[i].last_weight - c_last;
        if (gamma > 0 && gamma <= fill_cap) add(gamma);
      }
      if (fill_cap < std::numeric_limits<double>::infinity()) add(fill_cap);
      for (std::size_t j = 0; j < alphas.size(); ++j) {
        const double a = alphas[j], b = 1 - a;
        for (int c = 0; c < candidates; ++c) {
          out[j] = std::min(out[j], sums[c] - a * (beta + gammas[c]) * native_tiles - b * weight_time);
        }
      }
    }
  }
}

double OnePathStripExcess(double beta, Elements rows, Elements cols, Elements reduction, Elements native,
                          double bandwidth, double lhs_time) {
  return LhsStripExcess(beta, rows, cols, reduction, native, bandwidth, 1.0, lhs_time,
                        std::numeric_limits<double>::infinity(), true);
}

double PerStepExcess(double beta, Elements rows, Elements cols, Elements reduction, Elements native,
                     double weight_bandwidth, double a, double lhs_time, double fill_cap) {
  double out = 0;
  PerStepExcessAt(beta, rows, cols, reduction, native, weight_bandwidth, std::span<const double>(&a, 1), lhs_time,
                  fill_cap, std::span<double>(&out, 1));
  return out;
}

namespace {

double Chord(const std::array<double, PerStepIsland::kGrid + 1>& values, double a, double b) {
  const double share = a + b;
  if (share <= 0) return 0;
  const double x = std::min(1.0, a / share) * PerStepIsland::kGrid;
  const int g = std::min(PerStepIsland::kGrid - 1, static_cast<int>(std::floor(x)));
  const double t = x - g;
  return share * ((1 - t) * values[g] + t * values[g + 1]);
}

}  // namespace

double PerStepIsland::Extra(int island, double a, double b) const {
  if (island >= static_cast<int>(claims.size())) return 0;
  return Chord(claims[island], a, b);
}

double PerStepIsland::OpExtra(OpId op, double a, double b) const {
  if (op < 0 || op >= static_cast<OpId>(op_claims.size())) return 0;
  return Chord(op_claims[op], a, b);
}

PerStepIsland PerStepIslands(const Problem& problem, const Analysis& a, const Built& built,
                             const std::vector<char>& weights, const std::vector<char>& first_in_loop) {
  PerStepIsland result;
  result.value.assign(built.islands, 0);
  result.claims.assign(built.islands, {});
  result.op_claims.assign(problem.ops.size(), {});
  // A step costs max(compute, memory) only without prefetch (H5; the reader refuses it beside H6).
  // With one path a candidate's weight is a graph input it alone reads, loaded at B beside the
  // rest: its slices still bound the step's memory from below, and the points are (a, 0).
  if (!g_per_step_excess || problem.chip.prefetch) return result;
  const bool two_paths = problem.chip.two_paths();
  if (two_paths && weights.empty()) return result;
  const double bandwidth = problem.slow_memory_bandwidth;
  const double weight_bandwidth = two_paths ? problem.chip.weight_bandwidth : bandwidth;
  const int num_ops = static_cast<int>(problem.ops.size());
  const Elements n = problem.native;
  for (const Op& op : problem.ops) {  // the worlds need Pointwise ops to keep shapes
    if (op.kind != OpKind::Pointwise) continue;
    const Tensor& out = problem.tensors[op.output];
    for (TensorId t : op.inputs) {
      if (problem.tensors[t].width != out.width || problem.tensors[t].height != out.height) return result;
    }
  }
  const auto t_only = [&](OpId y) {
    for (int m = 0; m < kModes; ++m) {
      if (m != kT && a.HasMode(y, m)) return false;
    }
    return true;
  };
  // A candidate: a MatMul with K > n whose RHS is a weight it alone reads (its other modes are
  // priced by other_factor).
  const auto candidate = [&](OpId y) {
    const Op& op = problem.ops[y];
    if (op.kind != OpKind::MatMul || problem.ReductionLength(y) <= n) return false;
    const TensorId rhs = op.inputs[1];
    const bool own = two_paths ? weights[rhs] != 0 : problem.producer[rhs] == kNoOp;
    return own && op.inputs[0] != rhs && problem.consumers[rhs].size() == 1;
  };
  // The least factor of an instance upstream of a k-loop (P7, P13), where the weight FIFO (H6)
  // forbids requesting the whole weight (FL; FR's full case is never its least) and caps the
  // columns of the weight a step requests in SR and FR (c_max = min(n, FIFO / K)): each step
  // then charges at least one native column of x's output per at most c_max of its columns, so a
  // pass over them charges ceil(N / c_max) where native tiles count ceil(N / n). Infinity: no
  // such instance. P57: on one path the weight's slices of a step sit in the fast memory (W; a
  // graph input is never retained, V8), which caps them as the FIFO does.
  const Elements fifo = two_paths ? problem.chip.weight_fifo_capacity
                                  : (g_upstream_capacity ? problem.fast_memory_capacity : 0);
  const auto other_factor = [&](OpId y) {
    const Op& op = problem.ops[y];
    const Elements k = problem.ReductionLength(y), cols = problem.tensors[op.output].width;
    const Elements whole = problem.tensors[op.inputs[1]].size();
    const Elements c_max = fifo > 0 ? std::min(n, fifo / k) : n;
    double least = std::numeric_limits<double>::infinity();
    for (int m = 0; m < kModes; ++m) {
      if (m == kT || !a.HasMode(y, m)) continue;
      double factor = static_cast<double>(a.Factor(y, m));
      if (m == kFL && fifo > 0 && whole > fifo) continue;
      if (m == kSR || m == kFR) {
        if (c_max <= 0) continue;
        factor *= static_cast<double>(CeilDiv(cols, c_max)) / static_cast<double>(CeilDiv(cols, n));
      }
      least = std::min(least, factor);
    }
    return least;
  };
  std::vector<char> done(num_ops, 0);
  // A world (P14's, below) depends on the candidate only through (K*, output shape): candidates
  // that agree share it. Per world: f and u per op, and its classes' ops in ascending order.
  struct World {
    std::vector<char> f, u;
    std::vector<int> class_of;               // per op
    std::vector<std::vector<OpId>> classes;  // ops per class, ascending
  };
  std::map<std::array<Elements, 3>, World> worlds;
  const auto world_of = [&](Elements k_star, const Tensor& shape) -> const World& {
    if (!g_share_work) worlds.clear();
    auto [slot, fresh] = worlds.try_emplace({k_star, shape.height, shape.width});
    World& world = slot->second;
    if (!fresh) return world;
    std::vector<char>& f = world.f;
    std::vector<char>& u = world.u;
    std::vector<char> e(num_ops);
    std::vector<int> parent(num_ops);
    f.assign(num_ops, 0);
    u.assign(num_ops, 0);
    const auto find = [&](int x) {
      while (parent[x] != x) x = parent[x] = parent[parent[x]];
      return x;
    };
    for (OpId y = 0; y < num_ops; ++y) {
      const Op& op = problem.ops[y];
      const Tensor& out = problem.tensors[op.output];
      const bool same = out.width == shape.width && out.height == shape.height;
      f[y] = op.kind == OpKind::MatMul && problem.ReductionLength(y) == k_star && same;
      e[y] = op.kind == OpKind::Pointwise && same;
      parent[y] = y;
    }
    // U (P14's worlds): an op with a mode upstream of a k-loop that feeds a MatMul F candidate
    // (K* > n: only a MatMul can, V11) or another U op.
    const auto& order = problem.topological_order;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const OpId y = *it;
      u[y] = 0;
      if (t_only(y)) continue;
      for (OpId c : problem.consumers[problem.ops[y].output]) {
        if ((f[c] && problem.ops[y].kind == OpKind::MatMul) || u[c]) u[y] = 1;
      }
    }
    // The world's edges (P14): into F from a MatMul or a Layout op, into E from E, F or a Layout
    // op, into U from anything. A subgraph holding x in F lies in x's class (V5).
    for (OpId c = 0; c < num_ops; ++c) {
      for (TensorId t : problem.ops[c].inputs) {
        const OpId p = problem.producer[t];
        if (p == kNoOp) continue;
        const OpKind pk = problem.ops[p].kind;
        const bool edge = (f[c] && (pk == OpKind::MatMul || pk == OpKind::Layout)) ||
                          (e[c] && (f[p] || e[p] || pk == OpKind::Layout)) || u[c];
        if (edge) parent[find(p)] = find(c);
      }
    }
    world.class_of.assign(num_ops, -1);
    std::vector<int> index_of_root(num_ops, -1);
    for (OpId y = 0; y < num_ops; ++y) {
      const int root = find(y);
      if (index_of_root[root] < 0) {
        index_of_root[root] = static_cast<int>(world.classes.size());
        world.classes.emplace_back();
      }
      world.class_of[y] = index_of_root[root];
      world.classes[index_of_root[root]].push_back(y);
    }
    return world;
  };
  // One signature's delta on the weight grid, cached (many twins share a signature).
  struct Signature {
    double beta;
    Elements rows, cols, reduction;
    double lhs_time;  // P48: M / B when every twin of the class streams a graph input as its LHS
    double fill_cap;  // P49: the fresh compute a last step may hold (infinity: uncapped)
    double strip_time;  // P56: M / (B q) when every twin's LHS is never in fast memory (0: none)
    std::array<double, PerStepIsland::kGrid + 1> delta;
    std::array<double, PerStepIsland::kGrid + 1> capped;  // delta with gamma at most fill_cap
    std::array<double, PerStepIsland::kGrid + 1> own;     // capped, with P56's strips where they raise it
  };
  // P48 (two paths only; one path keeps P24's figures): the LHS a graph input on the activation
  // path that the MatMul alone reads, so that no step finds its strip in fast memory.
  const auto lhs_streamed = [&](OpId y) {
    const Op& op = problem.ops[y];
    const TensorId lhs = op.inputs[0];
    return g_lhs_strips && two_paths && problem.producer[lhs] == kNoOp && !weights[lhs] &&
           lhs != op.inputs[1] && problem.consumers[lhs].size() == 1;
  };
  // P56: a twin's LHS is never in fast memory when a step asks for its strip if it is a graph
  // input (never retained, V8; with two paths, one on the activation path) or an op's output
  // larger than the fast memory (a retained tensor counts whole, R5), made by no Layout op (one in
  // the class would gather it inside the subgraph, L1), and read in the class by twins alone, as
  // their LHS (no other request of it can precede a strip, M1). q: the most twins of the class that
  // read one LHS (their requests in a step are one, D5). 0: some twin's LHS is not such a tensor.
  const Elements capacity = problem.fast_memory_capacity;
  const auto strip_share = [&](const std::vector<OpId>& members, const World& world, int root) {
    int q = 0;
    for (OpId y : members) {
      const TensorId lhs = problem.ops[y].inputs[0];
      const OpId maker = problem.producer[lhs];
      const bool unheld = maker == kNoOp ? !two_paths || !weights[lhs]
                                         : problem.ops[maker].kind != OpKind::Layout && problem.tensors[lhs].size() > capacity;
      if (!unheld) return 0;
      int readers = 0;
      for (OpId c : problem.consumers[lhs]) {
        if (world.class_of[c] != root) continue;
        const Op& reader = problem.ops[c];
        if (reader.kind != OpKind::MatMul || reader.inputs[1] == lhs) return 0;
        ++readers;
      }
      q = std::max(q, readers);
    }
    return q;
  };
  std::vector<Signature> signatures;
  // Per candidate: its signature's delta when its T instances' class qualifies (-1: it claims
  // nothing there), and the compute surplus of an instance upstream of a k-loop.
  struct Claim {
    OpId op;
    int signature;
    double other;  // (least other factor - 1) x c_x; infinity: no such instance
    double upstream = 0;  // P51: what the upstream instance leaves in its bracket (>= other)
  };
  std::vector<Claim> claims;
  for (OpId x = 0; x < num_ops; ++x) {
    if (done[x] || !candidate(x)) continue;
    const Elements k_star = problem.ReductionLength(x);
    const Tensor& shape = problem.tensors[problem.ops[x].output];
    const World& world = world_of(k_star, shape);
    const std::vector<char>& f = world.f;
    const std::vector<char>& u = world.u;
    const int root = world.class_of[x];
    const auto find = [&](OpId y) { return world.class_of[y]; };
    const Op& xop = problem.ops[x];
    // The class qualifies when it holds no U op and its MatMuls are twins of x, none fed by a
    // member other than a Layout op.
    bool twins_only = true, lhs_all = true;
    std::vector<OpId> members;  // its MatMuls that are candidates
    for (OpId y : world.classes[root]) {
      const Op& op = problem.ops[y];
      if (u[y]) twins_only = false;
      if (op.kind != OpKind::MatMul) continue;
      const OpId lhs_producer = problem.producer[op.inputs[0]];
      const bool twin = f[y] && candidate(y) && op.base_cost == xop.base_cost &&
                        (lhs_producer == kNoOp || find(lhs_producer) != root ||
                         problem.ops[lhs_producer].kind == OpKind::Layout);
      twins_only = twins_only && twin;
      lhs_all = lhs_all && lhs_streamed(y);
      if (f[y] && candidate(y)) members.push_back(y);  // the candidates of this world
    }
    int sig = -1;
    if (twins_only) {
      const double lhs_time = lhs_all ? static_cast<double>(shape.height) / bandwidth : 0.0;
      const int q = g_unheld_strips ? strip_share(members, world, root) : 0;
      const double strip_time = q > 0 ? static_cast<double>(shape.height) / (bandwidth * q) : 0.0;
      // P49 (weight path only, so that one-path bounds stay P24's): the class caps gamma.
      // Every breakpoint of delta in gamma lies below n min(n, N) / Bw (the last weight slice) and
      // n M / B (P48's strip): a cap at or above both binds nothing, and counts as none.
      const double unbound = std::max(static_cast<double>(n) * static_cast<double>(std::min(n, shape.width)) / weight_bandwidth,
                                      static_cast<double>(n) * lhs_time);
      double fill_cap = std::numeric_limits<double>::infinity();
      if (g_fresh_fill && two_paths) {
        fill_cap = FreshFillCap(problem, world.classes[root], members, unbound);
        if (fill_cap >= unbound) fill_cap = std::numeric_limits<double>::infinity();
      }
      for (int i = 0; i < static_cast<int>(signatures.size()); ++i) {
        const Signature& s = signatures[i];
        if (s.beta == xop.base_cost && s.rows == shape.height && s.cols == shape.width && s.reduction == k_star &&
            s.lhs_time == lhs_time && s.fill_cap == fill_cap && s.strip_time == strip_time) {
          sig = i;
        }
      }
      if (sig < 0) {
        Signature s{xop.base_cost, shape.height, shape.width, k_star, lhs_time, fill_cap, strip_time, {}, {}, {}};
        std::array<double, PerStepIsland::kGrid + 1> alphas{};
        for (int i = 0; i <= PerStepIsland::kGrid; ++i) alphas[i] = static_cast<double>(i) / PerStepIsland::kGrid;
        PerStepExcessAt(s.beta, s.rows, s.cols, s.reduction, n, weight_bandwidth, alphas, s.lhs_time,
                        std::numeric_limits<double>::infinity(), s.delta);
        std::array<double, PerStepIsland::kGrid + 1> capped = s.delta;
        if (fill_cap != std::numeric_limits<double>::infinity()) {
          PerStepExcessAt(s.beta, s.rows, s.cols, s.reduction, n, weight_bandwidth, alphas, s.lhs_time, fill_cap,
                          capped);
        }
        for (int i = 0; i <= PerStepIsland::kGrid; ++i) {
          // delta_Phi >= delta; where the cap does not bind the two differ by rounding alone (the
          // cap is one more point on a flat or rising piece), and delta keeps the figures as they were.
          s.capped[i] = capped[i] > s.delta[i] + 1e-9 * (1 + std::abs(s.delta[i])) ? capped[i] : s.delta[i];
        }
        // P56, in the island's own value only (P16, P43 and P50 keep P24's claims): with two paths
        // P48's form at the strip's share; on one path only a = 1 is read (the points are (a, 0)).
        s.own = s.capped;
        if (strip_time > 0 && strip_time != lhs_time) {
          std::array<double, PerStepIsland::kGrid + 1> strips{};
          if (two_paths) {
            PerStepExcessAt(s.beta, s.rows, s.cols, s.reduction, n, weight_bandwidth, alphas, strip_time, fill_cap,
                            strips);
          } else {
            strips = s.capped;
            strips[PerStepIsland::kGrid] =
                OnePathStripExcess(s.beta, s.rows, s.cols, s.reduction, n, bandwidth, strip_time);
          }
          for (int i = 0; i <= PerStepIsland::kGrid; ++i) {
            if (strips[i] > s.capped[i] + 1e-9 * (1 + std::abs(s.capped[i]))) s.own[i] = strips[i];
          }
        }
        sig = static_cast<int>(signatures.size());
        signatures.push_back(s);
      }
    }
    for (OpId y : members) {
      done[y] = 1;
      const double factor = other_factor(y);
      const double c_y = problem.ops[y].base_cost * static_cast<double>(problem.NativeTiles(y));
      const bool in_loop = !first_in_loop.empty() && first_in_loop[y];  // P26: no upstream-only run
      if (in_loop && sig >= 0 && factor != std::numeric_limits<double>::infinity()) ++result.first_in_loop;
      claims.push_back({y, sig, factor == std::numeric_limits<double>::infinity() || in_loop ? std::numeric_limits<double>::infinity() : (factor - 1) * c_y});
    }
  }
  // P51 (weight path only): an upstream instance's subgraph also loads x's whole weight, when x is
  // the only candidate that claims an upstream instance's surplus (another's raised claim could take
  // the same subgraph's bracket).
  int upstream_claimants = 0;
  for (Claim& claim : claims) {
    claim.upstream = claim.other;
    const bool upstream = claim.signature >= 0 && claim.other > 0 && claim.other != std::numeric_limits<double>::infinity();
    upstream_claimants += upstream ? 1 : 0;
  }
  for (Claim& claim : claims) {
    if (!two_paths || upstream_claimants != 1 || claim.signature < 0 || claim.other <= 0 ||
        claim.other == std::numeric_limits<double>::infinity()) {
      continue;
    }
    const double c_y = problem.ops[claim.op].base_cost * static_cast<double>(problem.NativeTiles(claim.op));
    claim.upstream = std::max(claim.other, UpstreamWeightSurplus(problem, weights, claim.op, claim.other / c_y + 1,
                                                                 claim.other, weight_bandwidth, 0));
  }
  std::vector<std::vector<int>> island_claims(built.islands);
  for (int i = 0; i < static_cast<int>(claims.size()); ++i) {
    if (claims[i].signature < 0 || claims[i].other <= 0) continue;
    island_claims[built.island_of[claims[i].op]].push_back(i);
    ++result.twins;
  }
  for (int i = 0; i < built.islands; ++i) {
    if (island_claims[i].empty()) continue;
    // P49: the island's own value takes the capped claims (its points credit each op's first
    // instance alone); P16 and P43 count instances run again in their compute, so they keep P24's.
    std::array<double, PerStepIsland::kGrid + 1> own_claims{};
    for (int g = 0; g <= PerStepIsland::kGrid; ++g) {
      const double alpha = static_cast<double>(g) / PerStepIsland::kGrid;
      double sum = 0, capped_sum = 0;
      for (int c : island_claims[i]) {
        const Signature& s = signatures[claims[c].signature];
        const double own = std::min(s.delta[g], alpha * claims[c].upstream);
        result.op_claims[claims[c].op][g] = own;
        sum += own;
        capped_sum += std::min(s.own[g], alpha * claims[c].upstream);
      }
      result.claims[i][g] = sum;
      own_claims[g] = capped_sum;
    }
    for (int c : island_claims[i]) {
      const Signature& s = signatures[claims[c].signature];
      bool raised = false, strips = false;
      for (int g = 0; g <= PerStepIsland::kGrid; ++g) {
        raised = raised || s.capped[g] > s.delta[g];
        strips = strips || s.own[g] > s.capped[g];
      }
      result.capped += raised ? 1 : 0;
      result.unheld_strips += strips ? 1 : 0;
    }
    double best = 0;
    for (int k = 0; k <= PerStepIsland::kGrid; ++k) {
      for (int j = 0; k + j <= (two_paths ? PerStepIsland::kGrid : k); ++j) {
        const double a = static_cast<double>(k) / PerStepIsland::kGrid, b = static_cast<double>(j) / PerStepIsland::kGrid;
        const double weight_part = two_paths ? b * static_cast<double>(built.island_weight_traffic[i]) / weight_bandwidth : 0;
        best = std::max(best, a * built.island_compute[i] + weight_part +
                                  (1 - a - b) * static_cast<double>(built.island_traffic[i]) / bandwidth +
                                  Chord(own_claims, a, b));
      }
    }
    result.value[i] = best;
  }
  return result;
}

}  // namespace annealer::bound_internal
