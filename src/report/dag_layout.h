// A layered drawing of a DAG, hand-written so that the report needs no graph library:
// longest-path layering (tightened towards consumers), a dummy node per layer crossed by a long
// edge, then barycentric ordering sweeps (each node moves to the mean position of its
// neighbours in the layer before, then after) to cut crossings. Layers run left to right.
// Deterministic; about O(sweeps * (nodes + dummies + edges) log) time.
#pragma once

#include <utility>
#include <vector>

namespace annealer {

struct DagLayout {
  struct Point {
    double x = 0;  // layer index
    double y = 0;  // slot within the layer, centred on 0, one unit between neighbours
  };
  struct Edge {
    int from = 0;
    int to = 0;
    std::vector<Point> points;  // from's centre, the dummies' positions, to's centre
  };
  std::vector<int> layer;       // per node
  std::vector<Point> position;  // per node
  std::vector<Edge> edges;      // one per distinct input edge, in input order
  int layers = 0;
  double min_y = 0;
  double max_y = 0;
};

// `edges` are (from, to) node pairs of a DAG on nodes 0..num_nodes-1; duplicates are merged,
// self-loops ignored. Throws std::invalid_argument for an id out of range or a cycle.
// Long edges get dummy nodes only while their total stays under `max_dummies`; past that they
// are drawn straight (a very wide or deep graph stays cheap to lay out).
DagLayout LayoutDag(int num_nodes, const std::vector<std::pair<int, int>>& edges,
                    int sweeps = 12, int max_dummies = 60000);

}  // namespace annealer
