#include "eval/bound/crossing.h"

#include <algorithm>
#include <array>
#include <functional>
#include <limits>

namespace annealer::bound_internal {

double CrossingBound(const Problem& problem, const Built& built, const std::vector<std::vector<Line>>& lines,
                     const std::vector<char>& beside_memory) {
  if (problem.chip.two_paths() || built.islands < 2) return 0;
  const int num_ops = static_cast<int>(problem.ops.size());
  const int islands = built.islands;
  const double bandwidth = problem.slow_memory_bandwidth;
  // The weights tried per island: any fixed choice gives a bound, the grid only picks a good one.
  constexpr int kGrid = 20;
  const auto weight = [](int k) { return static_cast<double>(k) / kGrid; };
  std::vector<std::vector<OpId>> members(islands);
  for (OpId op = 0; op < num_ops; ++op) members[built.island_of[op]].push_back(op);
  // V_I at each grid weight, and whether P14's form gives it (then sigma may be 0).
  std::vector<std::array<double, kGrid + 1>> value(islands);
  std::vector<std::array<char, kGrid + 1>> p14_form(islands);
  for (int i = 0; i < islands; ++i) {
    for (int k = 0; k <= kGrid; ++k) {
      const double a = weight(k);
      double lines_sum = 0;
      for (OpId op : members[i]) {
        double least = std::numeric_limits<double>::infinity();
        for (const Line& l : lines[op]) least = std::min(least, l.at0 + a * (l.at1 - l.at0));
        lines_sum += least;
      }
      const double linear = a * built.island_compute[i] +
                            (1 - a) * static_cast<double>(built.island_traffic[i]) / bandwidth;
      value[i][k] = std::max(lines_sum, linear);
      p14_form[i][k] = lines_sum > linear;
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
    if (c.readers.empty()) continue;
    const int index = static_cast<int>(crossings.size());
    touching[c.home].push_back(index);
    for (int j : c.readers) touching[j].push_back(index);
    crossings.push_back(std::move(c));
  }
  if (crossings.empty()) return 0;
  std::vector<int> choice(islands, 0);
  for (int i = 0; i < islands; ++i) {
    for (int k = 1; k <= kGrid; ++k) {
      if (value[i][k] > value[i][choice[i]]) choice[i] = k;
    }
  }
  std::vector<double> loads;
  const auto claim = [&](const Crossing& c) {
    const double size = static_cast<double>(problem.tensors[c.tensor].size()) / bandwidth;
    const double a_home = weight(choice[c.home]);
    const double sigma = c.beside_memory && p14_form[c.home][choice[c.home]] ? 0.0 : a_home * c.compute;
    const double write = (1 - a_home) * size;
    loads.clear();
    for (int j : c.readers) loads.push_back((1 - weight(choice[j])) * size);
    std::sort(loads.begin(), loads.end(), std::greater<double>());
    // Serve the s islands with the largest loads. An instance of p whose subgraph retains t does
    // not write it (R3), so with an island unserved the instances number s + 1 (one writes),
    // with every island served r; one instance is free.
    double unserved = 0;
    for (double l : loads) unserved += l;
    double best = unserved + write;  // s = 0: one instance writes t, every island loads it
    for (size_t s = 1; s <= loads.size(); ++s) {
      unserved -= loads[s - 1];
      const double cost = s < loads.size() ? sigma * static_cast<double>(s) + unserved + write
                                           : sigma * static_cast<double>(s - 1);
      best = std::min(best, cost);
    }
    return best;
  };
  const auto island_part = [&](int i) {
    double sum = value[i][choice[i]];
    for (int index : touching[i]) sum += claim(crossings[index]);
    return sum;
  };
  for (int pass = 0; pass < 3; ++pass) {
    bool changed = false;
    for (int i = 0; i < islands; ++i) {
      if (touching[i].empty()) continue;
      const int current = choice[i];
      double best = island_part(i);
      int best_k = current;
      for (int k = 0; k <= kGrid; ++k) {
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
  for (int i = 0; i < islands; ++i) total += value[i][choice[i]];
  for (const Crossing& c : crossings) total += claim(c);
  return total;
}

}  // namespace annealer::bound_internal
