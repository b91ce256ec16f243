#include "src/report/dag_layout.h"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace annealer {

DagLayout LayoutDag(int num_nodes, const std::vector<std::pair<int, int>>& input_edges,
                    int sweeps, int max_dummies) {
  std::vector<std::pair<int, int>> edges;
  std::set<std::pair<int, int>> seen;
  for (const auto& [from, to] : input_edges) {
    if (from < 0 || from >= num_nodes || to < 0 || to >= num_nodes) {
      throw std::invalid_argument("LayoutDag: edge node out of range");
    }
    if (from == to) continue;
    if (seen.emplace(from, to).second) edges.emplace_back(from, to);
  }
  std::vector<std::vector<int>> successors(num_nodes), predecessors(num_nodes);
  for (const auto& [from, to] : edges) {
    successors[from].push_back(to);
    predecessors[to].push_back(from);
  }

  // Kahn's order, smallest ready id first (deterministic).
  std::vector<int> order;
  std::vector<int> indegree(num_nodes);
  for (int v = 0; v < num_nodes; ++v) indegree[v] = static_cast<int>(predecessors[v].size());
  std::vector<int> ready;
  for (int v = num_nodes - 1; v >= 0; --v) {
    if (indegree[v] == 0) ready.push_back(v);
  }
  while (!ready.empty()) {
    const int v = ready.back();
    ready.pop_back();
    order.push_back(v);
    for (int w : successors[v]) {
      if (--indegree[w] == 0) {
        ready.insert(std::upper_bound(ready.begin(), ready.end(), w, std::greater<>()), w);
      }
    }
  }
  if (static_cast<int>(order.size()) != num_nodes) throw std::invalid_argument("LayoutDag: cycle");

  DagLayout layout;
  layout.layer.assign(num_nodes, 0);
  for (int v : order) {
    for (int p : predecessors[v]) layout.layer[v] = std::max(layout.layer[v], layout.layer[p] + 1);
  }
  // Pull every node with consumers right up to just before its first consumer: a weight loaded
  // by one late MatMul then sits next to it instead of in layer 0 with a long edge.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int v = *it;
    if (successors[v].empty()) continue;
    int first = INT32_MAX;
    for (int s : successors[v]) first = std::min(first, layout.layer[s]);
    layout.layer[v] = std::max(layout.layer[v], first - 1);
  }
  for (int v = 0; v < num_nodes; ++v) layout.layers = std::max(layout.layers, layout.layer[v] + 1);

  // Vertices: the nodes, then the dummies. Chains of vertices per edge.
  int64_t dummy_total = 0;
  for (const auto& [from, to] : edges) {
    dummy_total += std::max(0, layout.layer[to] - layout.layer[from] - 1);
  }
  const bool use_dummies = dummy_total <= max_dummies;
  std::vector<int> vertex_layer(layout.layer);
  std::vector<std::vector<int>> up(num_nodes), down(num_nodes);  // neighbours, previous/next layer
  std::vector<std::vector<int>> chains;
  for (const auto& [from, to] : edges) {
    std::vector<int> chain = {from};
    if (use_dummies) {
      for (int l = layout.layer[from] + 1; l < layout.layer[to]; ++l) {
        chain.push_back(static_cast<int>(vertex_layer.size()));
        vertex_layer.push_back(l);
        up.emplace_back();
        down.emplace_back();
      }
    }
    chain.push_back(to);
    for (size_t i = 0; i + 1 < chain.size(); ++i) {
      down[chain[i]].push_back(chain[i + 1]);
      up[chain[i + 1]].push_back(chain[i]);
    }
    chains.push_back(std::move(chain));
  }
  const int num_vertices = static_cast<int>(vertex_layer.size());

  // Initial order: nodes in topological order, then the dummies; the sweeps sort them in.
  std::vector<std::vector<int>> rows(layout.layers);
  for (int v : order) rows[vertex_layer[v]].push_back(v);
  for (int v = num_nodes; v < num_vertices; ++v) rows[vertex_layer[v]].push_back(v);
  std::vector<double> slot(num_vertices, 0);
  const auto renumber = [&](const std::vector<int>& row) {
    for (size_t i = 0; i < row.size(); ++i) slot[row[i]] = static_cast<double>(i);
  };
  for (const auto& row : rows) renumber(row);

  std::vector<std::pair<double, int>> keyed;
  const auto sweep_layer = [&](std::vector<int>& row, const std::vector<std::vector<int>>& neighbours) {
    keyed.clear();
    for (int v : row) {
      double key = slot[v];
      if (!neighbours[v].empty()) {
        double sum = 0;
        for (int n : neighbours[v]) sum += slot[n];
        key = sum / static_cast<double>(neighbours[v].size());
      }
      keyed.emplace_back(key, v);
    }
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < row.size(); ++i) row[i] = keyed[i].second;
    renumber(row);
  };
  for (int s = 0; s < sweeps; ++s) {
    for (int l = 1; l < layout.layers; ++l) sweep_layer(rows[l], up);
    for (int l = layout.layers - 2; l >= 0; --l) sweep_layer(rows[l], down);
  }

  std::vector<DagLayout::Point> point(num_vertices);
  for (int l = 0; l < layout.layers; ++l) {
    const double centre = (static_cast<double>(rows[l].size()) - 1) / 2;
    for (size_t i = 0; i < rows[l].size(); ++i) {
      point[rows[l][i]] = {static_cast<double>(l), static_cast<double>(i) - centre};
      layout.min_y = std::min(layout.min_y, point[rows[l][i]].y);
      layout.max_y = std::max(layout.max_y, point[rows[l][i]].y);
    }
  }
  layout.position.assign(point.begin(), point.begin() + num_nodes);
  for (size_t e = 0; e < edges.size(); ++e) {
    DagLayout::Edge& edge = layout.edges.emplace_back();
    edge.from = edges[e].first;
    edge.to = edges[e].second;
    for (int v : chains[e]) edge.points.push_back(point[v]);
  }
  return layout;
}

}  // namespace annealer
