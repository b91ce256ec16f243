#include "eval/bound/islands/crossing.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

namespace annealer::bound_internal {

double CrossingBound(const Problem& problem, const Built& built, const std::vector<std::vector<Line>>& lines,
                     const std::vector<char>& beside_memory, const std::vector<AloneFloor>& alone,
                     const PerStepIsland* per_step, const std::vector<RecomputeCut>* cuts,
                     const InternalHeads* heads) {
  if (built.islands < 2 && heads == nullptr) return 0;
  const int num_ops = static_cast<int>(problem.ops.size());
  const int islands = built.islands;
  const double bandwidth = problem.slow_memory_bandwidth;
  const bool two_paths = problem.chip.two_paths();
  // The weights tried per island: any fixed choice gives a bound, the grid only picks a good one.
  // A point is (a, b): compute at a, the weight path at b (H6 only; b = 0 with one path), the
  // activation path at 1 - a - b.
  constexpr int kGrid = 20;
  const auto weight = [](int k) { return static_cast<double>(k) / kGrid; };
  // P12's form is also tried alone (`linear_only`; with H6 at every b): where P14's lines are
  // larger they may give sigma = 0, and P12's form may gain more through sigma than it loses.
  struct Point {
    double a = 0, b = 0;
    bool linear_only = false;
  };
  std::vector<Point> points;
  for (int k = 0; k <= kGrid; ++k) points.push_back({weight(k), 0.0, false});
  for (int k = 0; k <= kGrid; ++k) {
    for (int j = 0; k + j <= (two_paths ? kGrid : k); ++j) points.push_back({weight(k), weight(j), true});
  }
  const int num_points = static_cast<int>(points.size());
  std::vector<std::vector<OpId>> members(islands);
  for (OpId op = 0; op < num_ops; ++op) members[built.island_of[op]].push_back(op);
  // Per island and point: V_I, and how a produced tensor's load or write counts there: `share`
  // x (|t| / `path`). P12's form: 1 - a (one path), 1 - a - b at B (H6: produced tensors take
  // the activation path). P14's form (b = 0 only): 1 - a at P14's bandwidth, B + Bw under H6
  // (its lines are the relaxed chip's); then sigma may be 0.
  struct Value {
    double value = 0;
    char p14_form = 0;
    char linear = 0;  // P12's form (P35 prices its served islands' chains only there)
    double share = 0, path = 1;
  };
  std::vector<std::vector<Value>> value(islands, std::vector<Value>(num_points));
  const double p14_path = bandwidth + problem.chip.weight_bandwidth;
  for (int i = 0; i < islands; ++i) {
    for (int k = 0; k < num_points; ++k) {
      const double a = points[k].a, b = points[k].b;
      double lines_sum = -std::numeric_limits<double>::infinity();
      if (!points[k].linear_only) {
        lines_sum = 0;
        for (OpId op : members[i]) {
          double least = std::numeric_limits<double>::infinity();
          for (const Line& l : lines[op]) least = std::min(least, l.at0 + a * (l.at1 - l.at0));
          lines_sum += least;
        }
      }
      double linear = a * built.island_compute[i] +
                      (1 - a) * static_cast<double>(built.island_traffic[i]) / bandwidth;
      if (two_paths) {
        linear = a * built.island_compute[i] +
                 b * static_cast<double>(built.island_weight_traffic[i]) / problem.chip.weight_bandwidth +
                 (1 - a - b) * static_cast<double>(built.island_traffic[i]) / bandwidth;
      }
      // P24: the per-step claims of the island's weight-streaming MatMuls at this point.
      if (per_step != nullptr) linear += per_step->Extra(i, a, b);
      Value& v = value[i][k];
      v.value = std::max(lines_sum, linear);
      v.p14_form = lines_sum > linear;
      v.linear = !v.p14_form;
      v.share = v.p14_form ? 1 - a : std::max(0.0, 1 - a - b);
      v.path = v.p14_form ? p14_path : bandwidth;
      // P21: every subgraph of the island runs its MatMul alone; the least such subgraph, less
      // the loads and writes of crossing tensors that the claims below count at this share.
      // Its second form (a MatMul with epilogue ops) claims nothing apart, and its ops outside the
      // MatMul's subgraph count at full compute: only at a = 1, b = 0, where the claims below
      // count no load or write and sigma is a whole extra instance's compute.
      if (i < static_cast<int>(alone.size()) && alone[i].valid && (!alone[i].compute_point_only || (a == 1 && b == 0))) {
        const double share = std::max(0.0, 1 - a - b);
        const double floor = alone[i].LeastApart(share, bandwidth);
        if (floor > v.value) v = Value{floor, 0, 0, share, bandwidth};
      }
    }
  }
  // The crossing tensors: produced, read in another island, small enough to retain (a tensor
  // too large to retain is already P12's traffic).
  struct Crossing {
    TensorId tensor;
    int home;                 // the producer's island
    double compute;           // c_p
    bool beside_memory;       // p may sit beside an activated op paying on memory (P14)
    std::vector<int> readers;  // the other islands that read it, each once
  };
  std::vector<Crossing> crossings;
  std::vector<std::vector<int>> touching(islands);
  std::vector<int> seen(islands, -1);
  for (TensorId t = 0; t < static_cast<TensorId>(problem.tensors.size()); ++t) {
    const OpId p = problem.producer[t];
    if (p == kNoOp || problem.consumers[t].empty()) continue;
    if (problem.tensors[t].size() + 1 > problem.fast_memory_capacity) continue;
    Crossing c{t, built.island_of[p], problem.ops[p].base_cost * static_cast<double>(problem.NativeTiles(p)),
               beside_memory[p] != 0, {}};
    for (OpId r : problem.consumers[t]) {
      const int j = built.island_of[r];
      if (j == c.home || seen[j] == t) continue;
      seen[j] = t;
      c.readers.push_back(j);
    }
    const bool headed = heads != nullptr && heads->tensors[t].priced && !heads->tensors[t].heads.empty();
    if (c.readers.empty() && !headed) continue;
    const int index = static_cast<int>(crossings.size());
    touching[c.home].push_back(index);
    for (int j : c.readers) touching[j].push_back(index);
    crossings.push_back(std::move(c));
  }
  if (crossings.empty()) return 0;
  // Each island starts at its own best point. A second start puts the islands that only read
  // crossing tensors at (0, 0) in P12's form: from the first, a producer's island in P14's form
  // (or, with H6, paying on the weight path) gives sigma = 0, so no reader gains by counting its
  // loads and the producer's island gains nothing by moving alone (the ascent stops there).
  std::vector<int> own_best(islands, 0);
  for (int i = 0; i < islands; ++i) {
    for (int k = 1; k < num_points; ++k) {
      if (value[i][k].value > value[i][own_best[i]].value) own_best[i] = k;
    }
  }
  std::vector<int> choice = own_best;
  std::vector<double> loads;
  std::vector<double> costs;
  const auto claim = [&](const Crossing& c) {
    const auto elements = static_cast<double>(problem.tensors[c.tensor].size());
    const auto moved = [&](int island) {  // a load or write of t in a subgraph of `island`
      const Value& v = value[island][choice[island]];
      return v.share * (elements / v.path);
    };
    const Value& home = value[c.home][choice[c.home]];
    // P43: every reader of t, heads in the home island and reading islands, loads t or is served
    // by a chain; the earliest chain is free, each other one costs its loads of `any` beyond what
    // the late ops may count there, or p's compute again with those loads at the home's share.
    if (heads != nullptr && heads->island_priced[c.home] && heads->tensors[c.tensor].priced && home.linear) {
      const HeadedTensor& ht = heads->tensors[c.tensor];
      const double a = points[choice[c.home]].a, b = points[choice[c.home]].b;
      const double share = std::max(0.0, 1 - a - b);
      const double y = elements / bandwidth, any = ht.any / bandwidth;
      const double weight_path = two_paths ? problem.chip.weight_bandwidth : bandwidth;
      costs.clear();
      for (const HeadedTensor::Head& h : ht.heads) {
        const double own = per_step != nullptr ? per_step->OpExtra(h.op, a, b) : 0.0;
        const double weight = two_paths ? b * std::min(h.weight / weight_path, y) : 0.0;
        costs.push_back(std::max(share * y, y - a * std::min(h.compute, y) - weight - own));
      }
      for (int j : c.readers) costs.push_back(moved(j));
      std::sort(costs.begin(), costs.end(), std::greater<double>());
      double late_claims = 0;
      if (per_step != nullptr) {
        for (OpId m : ht.late_matmuls) late_claims += per_step->OpExtra(m, a, b);
      }
      const auto late = [&](double chains) {
        return std::max(a * c.compute + share * any,
                        any - a * std::min(ht.late_compute / chains, any) -
                            (two_paths ? b * std::min(ht.late_weight / (chains * weight_path), any) : 0.0) -
                            share * std::min(ht.late_traffic / (chains * bandwidth), any) - late_claims / chains);
      };
      double unserved = 0;
      for (double v : costs) unserved += v;
      const double write = share * y;
      double best = unserved + (costs.empty() ? 0.0 : write);
      for (size_t s = 1; s <= costs.size(); ++s) {
        unserved -= costs[s - 1];
        double cost = (s < costs.size() ? unserved + write : 0.0);
        if (s >= 2) cost += static_cast<double>(s - 1) * late(static_cast<double>(s - 1));
        best = std::min(best, cost);
      }
      return std::max(0.0, best);
    }
    if (c.readers.empty()) return 0.0;  // heads alone: P16 claims nothing
    const double sigma = c.beside_memory && home.p14_form ? 0.0 : points[choice[c.home]].a * c.compute;
    const double write = moved(c.home);
    loads.clear();
    for (int j : c.readers) loads.push_back(moved(j));
    std::sort(loads.begin(), loads.end(), std::greater<double>());
    // P35: serving s islands costs their chains' loads, any / B each, less what I's P12 form may
    // count inside the chains (eval/bound/islands/recompute.h), in place of the s instances' compute.
    const RecomputeCut* cut = cuts != nullptr && (*cuts)[c.tensor].priced && home.linear ? &(*cuts)[c.tensor] : nullptr;
    const double inside = cut == nullptr ? 0.0
                                         : points[choice[c.home]].a * cut->compute + home.share * (cut->traffic / bandwidth);
    double unserved = 0;
    for (double l : loads) unserved += l;
    double best = unserved + write;  // s = 0: one instance writes t, every island loads it
    for (size_t s = 1; s <= loads.size(); ++s) {
      unserved -= loads[s - 1];
      double cost = s < loads.size() ? sigma * static_cast<double>(s) + unserved + write
                                     : sigma * static_cast<double>(s - 1);
      if (cut != nullptr) {
        const double chains = static_cast<double>(s) * cut->any / bandwidth - inside +
                              (s < loads.size() ? unserved + write : 0.0);
        cost = std::max(cost, chains);
      }
      best = std::min(best, cost);
    }
    return best;
  };
  const auto island_part = [&](int i) {
    double sum = value[i][choice[i]].value;
    for (int index : touching[i]) sum += claim(crossings[index]);
    return sum;
  };
  const auto ascend = [&] {
    for (int pass = 0; pass < 3; ++pass) {
      bool changed = false;
      for (int i = 0; i < islands; ++i) {
        if (touching[i].empty()) continue;
        const int current = choice[i];
        double best = island_part(i);
        int best_k = current;
        for (int k = 0; k < num_points; ++k) {
          if (k == current) continue;
          choice[i] = k;
          const double v = island_part(i);
          if (v > best + 1e-9) {
            best = v;
            best_k = k;
          }
        }
        choice[i] = best_k;
        changed = changed || best_k != current;
      }
      if (!changed) break;
    }
    double total = 0;
    for (int i = 0; i < islands; ++i) total += value[i][choice[i]].value;
    for (const Crossing& c : crossings) total += claim(c);
    return total;
  };
  double total = ascend();
  std::vector<char> home(islands, 0);
  for (const Crossing& c : crossings) home[c.home] = 1;
  const int memory_only = kGrid + 1;  // the point (0, 0), P12's form alone
  choice = own_best;
  for (int i = 0; i < islands; ++i) {
    if (!home[i] && !touching[i].empty()) choice[i] = memory_only;
  }
  return std::max(total, ascend());
}

}  // namespace annealer::bound_internal
