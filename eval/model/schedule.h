// A schedule: the ordered subgraphs, each with its ops, granularity, traversal and retention.
// This is the contest's solution format as plain data (spec A.2).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "eval/model/problem.h"

namespace annealer {

struct Granularity {
  Elements w = 128;  // tile width (columns of the output)
  Elements h = 128;  // tile height (rows of the output)
  Elements k = 1;    // reduction slice per step; ignored (treated as 1) without a k-loop
  bool operator==(const Granularity&) const = default;
};

struct Subgraph {
  std::vector<OpId> ops;                          // execution order inside the subgraph
  Granularity granularity;
  std::optional<std::vector<int64_t>> traversal;  // tile order; nullopt = raster (spec G5)
  std::vector<TensorId> retain;                   // tensors_to_retain of this subgraph
  bool operator==(const Subgraph&) const = default;
};

struct Schedule {
  std::vector<Subgraph> subgraphs;
  // subgraph_latencies as written in the file; only compared (warning, spec V13).
  std::optional<std::vector<double>> reported_latencies;
  bool operator==(const Schedule&) const = default;
};

}  // namespace annealer
