// The oracle's least over every tile shape of a weight-streaming stem {Y, E} (Y = G @ W, E an
// epilogue of base gamma, retained for a last op), the reference P48's and P56's excesses answer
// to (tests/eval/bound/traffic/perstep_test.cc, unheld_strips_test.cc).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <limits>

#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "eval/oracle.h"
#include "tests/support/graph_builder.h"

namespace annealer::testing {

// The stem: G (M x K, a graph input only Y reads) -> Y = G @ W (W a graph input, base beta) -> E
// (Pointwise, base gamma) -> F (base 0, a graph output), n = 4. With bw > 0 W is on a weight path
// of that bandwidth (P48), with bw = 0 everything moves on the one path at b (P56). {Y, E} retaining
// E for {F} loads G's strips and W's slices and writes nothing.
inline Problem StemProblem(Elements m, Elements n_cols, Elements k, double beta, double gamma, double b, double bw) {
  Problem p;
  p.native = 4;
  p.tensors = {{k, m}, {n_cols, k}, {n_cols, m}, {n_cols, m}, {n_cols, m}};  // G, W, Y, E, F
  p.ops = {{OpKind::MatMul, {0, 1}, 2, beta}, {OpKind::Pointwise, {2}, 3, gamma}, {OpKind::Pointwise, {3}, 4, 0}};
  p.fast_memory_capacity = 1 << 20;
  p.slow_memory_bandwidth = b;
  p.chip.weight_bandwidth = bw;
  REQUIRE(p.Finalize().empty());
  REQUIRE(p.chip.two_paths() == (bw > 0));
  if (bw > 0) {
    REQUIRE(p.OnWeightPath(1));
    REQUIRE(!p.OnWeightPath(0));
  }
  return p;
}

struct StemLeast {
  double least = std::numeric_limits<double>::infinity();
  int most_tiles = 0;  // the most tiles a shape took (the grid's step times it bounds the gap)
  int compared = 0;
};

// What P48's and P56's drivers check of one product: the excess at or above P24's alone and never
// above the oracle's least (a floor of every subgraph); counted, those above P24's and those
// within the grid of the least (its step, 0.5, times the tiles: where the rows of tiles the
// excess takes are whole, R real being a floor).
struct StemTally {
  int compared = 0, above = 0, tight = 0;
  void Check(double excess, double without, const StemLeast& found) {
    compared += found.compared;
    CHECK(excess >= without - 1e-9);
    CHECK(excess <= found.least + 1e-6);
    tight += found.least - excess <= 0.5 * found.most_tiles + 1e-6 ? 1 : 0;
    above += excess > without + 1e-9 ? 1 : 0;
  }
};

// `make(gamma)` builds the problem for an epilogue base gamma: ops 0 and 1 are Y and E, op 2 reads
// tensor 3 (E's output), n = 4, Y's output M x N. For gamma = 0, 0.5, ... up to gamma_max and every
// w, h, k in 1..4, the schedule {Y, E} at [w, h, k] retaining E, then {op 2}: the least of
// `value(latency of {Y, E}, gamma, rows of tiles)`.
template <typename Make, typename Value>
StemLeast LeastOverStemShapes(Elements m, Elements n_cols, double gamma_max, const Make& make, const Value& value) {
  StemLeast result;
  for (double gamma = 0; gamma <= gamma_max; gamma += 0.5) {
    const Problem p = make(gamma);
    for (Elements w = 1; w <= 4; ++w) {
      for (Elements h = 1; h <= 4; ++h) {
        for (Elements k = 1; k <= 4; ++k) {
          Schedule s;
          s.subgraphs = {Sg({0, 1}, {w, h, k}, {3}), Sg({2}, {4, 4, 1})};
          const Evaluation e = EvaluateOracle(p, s);
          REQUIRE(e.ok());
          const Elements rows_of_tiles = (m + h - 1) / h;
          result.least = std::min(result.least, value(e.subgraphs[0].latency, gamma, rows_of_tiles));
          result.most_tiles = std::max<int>(result.most_tiles, static_cast<int>(rows_of_tiles * ((n_cols + w - 1) / w)));
          ++result.compared;
        }
      }
    }
  }
  return result;
}

}  // namespace annealer::testing
