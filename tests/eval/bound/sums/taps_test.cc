// P25, a MatMul whose output leaves its subgraph, and P31's isolated taps
// (eval/bound/sums/taps/taps.h, docs/lower-bound.md): by hand and never above the oracle, also
// where K = N beside a reader of A, P38's written sum and P52's written sink.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "eval/bound/bounds.h"
#include "eval/bound/sums/shared_sums.h"
#include "eval/bound/sums/sole_sums.h"
#include "eval/bound/sums/sums.h"
#include "eval/bound/sums/taps/lone_taps.h"
#include "eval/bound/sums/taps/taps.h"
#include "eval/bound/sums/upstream/lhs_strip_sums.h"
#include "eval/bound/sums/upstream/upstream_sums.h"
#include "eval/bound/sums/written_sums.h"
#include "eval/oracle.h"
#include "tests/eval/bound/sums/sum_drivers.h"
#include "tests/support/bound_checks.h"
#include "tests/support/bound_nets.h"
#include "tests/support/graph_builder.h"
#include "tests/support/problem_maker.h"
#include "tests/support/sample_schedules.h"

namespace annealer {
namespace {

using testing::AsppTaps;
using testing::BoundAndWithout;
using testing::ForEachAsppConfiguration;
using testing::ForEachFusedSum;
using testing::ForEachTapGrouping;
using testing::ForEachValidAndAtPeak;
using testing::RealRatioSchedules;
using testing::TapNets;
using testing::ValidRandomOptions;
using testing::WithFused;
using testing::kSlack;

// P25 against the oracle: TapNets, every schedule of RealRatioSchedules (random with recomputation
// and retention, both baselines, short searches, the exact solver's best), each again at the
// capacity of its own peak working set, the taps grouped as co-sinks with and without A's chain
// (moved or recomputed) at every tile shape, and P23's enumeration of the sum with j fused taps.
TEST_CASE("bound: P25's taps never above the oracle") {
  int valid = 0, tight = 0, enumerated = 0, decided = 0, raised = 0, priced = 0;
  double tightest = 0;
  std::mt19937_64 rng(2525);
  for (int trial = 0; trial < 700; ++trial) {
    const Problem problem = TapNets(rng);
    CAPTURE(trial);
    LowerBound without;
    const LowerBound bound = BoundAndWithout(problem, bound_internal::g_tap_excess, without);
    priced += bound.tap_count > 0 ? 1 : 0;
    CHECK(bound.taps >= bound.sums * (1 - kSlack));
    const bool rises = bound.total() > without.total() * (1 + 1e-9);
    raised += rises ? 1 : 0;
    const std::vector<Schedule> schedules = RealRatioSchedules(
        problem, rng, trial, 5, [](int s) { return ValidRandomOptions(0.15 + 0.2 * s, 0.3, 0.2); }, 8, 5);
    const auto check = [&](const Evaluation& e) {
      CHECK(bound.taps <= e.total * (1 + kSlack));
      CHECK(bound.total() <= e.total * (1 + kSlack));
      if (rises) tightest = std::max(tightest, bound.total() / e.total);
      decided += rises ? 1 : 0;
    };
    tight += ForEachValidAndAtPeak(
        problem, schedules, "P25 trial " + std::to_string(trial),
        [&](const Evaluation& e) {
          ++valid;
          check(e);
        },
        [&](const Problem& squeezed, const Evaluation& e) {
          const LowerBound at_peak = ComputeLowerBound(squeezed);
          CHECK(at_peak.taps <= e.total * (1 + kSlack));
          CHECK(at_peak.total() <= e.total * (1 + kSlack));
        });
    const auto enumerated_check = [&](const Schedule&, const Evaluation& e) { check(e); };
    enumerated += ForEachTapGrouping(problem, enumerated_check);
    enumerated += ForEachFusedSum(problem, enumerated_check);
  }
  MESSAGE("P25: problems with a priced tap " << priced << ", bound raised on " << raised << ", valid schedules "
                                             << valid << ", at their peak " << tight << ", enumerated " << enumerated
                                             << ", checked against a raised bound " << decided
                                             << ", tightest bound/latency there " << tightest);
  CHECK(valid > 1500);
  CHECK(enumerated > 5000);
  CHECK(raised > 20);
}

// A MatMul read by nothing whose LHS is made upstream: four taps A @ W_i (A 12x2, W_i 2x4, base
// 20) summed by s (base 5) into F = s @ V (V 4x4, base 20, a graph output), capacity 38, B = 1,
// n = 4. All six ops in one subgraph at [4, 4, 1] cost 320.25 (the compute is 315): the taps hide
// F's write and weight. P25 took F for a tap and claimed 14 (bound 329); it claims nothing now.
TEST_CASE("bound: P25: a MatMul read by nothing whose LHS is made upstream claims nothing") {
  testing::GraphBuilder b(38, 1);
  b.problem.native = 4;
  const TensorId a = b.Tensor(12, 2);
  std::vector<TensorId> taps;
  for (int i = 0; i < 4; ++i) {
    const TensorId w = b.Tensor(2, 4);
    const TensorId out = b.Tensor(12, 4);
    b.Op(OpKind::MatMul, {a, w}, out, 20);
    taps.push_back(out);
  }
  const TensorId sum = b.Tensor(12, 4);
  b.Op(OpKind::Pointwise, taps, sum, 5);
  const TensorId v = b.Tensor(4, 4);
  const TensorId f = b.Tensor(12, 4);
  b.Op(OpKind::MatMul, {sum, v}, f, 20);
  const Problem problem = b.Build();
  Schedule schedule;
  schedule.subgraphs.push_back(testing::Sg({0, 1, 2, 3, 4, 5}, {4, 4, 1}));
  const Evaluation e = EvaluateOracle(problem, schedule);
  REQUIRE(e.ok());
  CHECK(e.total == doctest::Approx(320.25));
  const LowerBound bound = ComputeLowerBound(problem);
  CHECK(bound.tap_count == 0);
  CHECK(bound.taps == doctest::Approx(315));
  CHECK(bound.total() <= e.total);
}

// P25 by hand: one MatMul t = A @ W (A 12x4 and W 4x4 graph inputs, n = 4, base 10, so c_t = 30),
// its output O (48) a graph output, capacity 24, B = 1. A subgraph holding t holds W's slice
// k x w, O's tile h x w and A's slice h x k; nothing can join it (A is a graph input, O8). Per
// class of shapes (row tiles, column tiles, n_k): native tiles (3 x 1) fit only with k = 1
// (4 + 16 + 4 = 24), where W is loaded once per row tile: 48 + 48 + 48 = 144 against 30 of
// compute; with 2 column tiles (w = 2, h = 4, n_k = 4), tau = 2, memory 48 + 48 + 2 x 48 = 192;
// with 12 row tiles at k = 4 (w = 4, h = 1), tau = 4, memory 48 + 16 + 48 = 112 against 120 of
// compute. The least over the classes of the best theta is that last one's (tau - 1) c_t = 90:
// the bound 30 + 90 = 120 (P18 gave 114.10, graph I/O 112). The best shape the oracle finds over
// every w, h, k is [4, 1, 4], 134 (its first step waits 24 for W).
TEST_CASE("bound: P25 by hand, a MatMul alone at the shapes its fast memory allows") {
  Problem problem;
  problem.native = 4;
  problem.tensors = {{4, 12}, {4, 4}, {4, 12}};  // A, W, O (width, height)
  problem.ops.push_back({OpKind::MatMul, {0, 1}, 2, 10});
  problem.fast_memory_capacity = 24;
  problem.slow_memory_bandwidth = 1;
  REQUIRE(problem.Finalize() == "");
  const LowerBound bound = ComputeLowerBound(problem);
  CHECK(bound.tap_count == 1);
  CHECK(bound.taps == doctest::Approx(120));
  CHECK(bound.total() == doctest::Approx(120));
  bound_internal::g_tap_excess = false;
  CHECK(ComputeLowerBound(problem).total() == doctest::Approx(114.098).epsilon(1e-4));
  bound_internal::g_tap_excess = true;
  double best = std::numeric_limits<double>::infinity();
  Granularity at{};
  for (Elements w = 1; w <= 4; ++w) {
    for (Elements h = 1; h <= 4; ++h) {
      for (Elements k = 1; k <= 4; ++k) {
        Schedule schedule;
        Subgraph sg;
        sg.ops = {0};
        sg.granularity = {w, h, k};
        schedule.subgraphs.push_back(sg);
        const Evaluation e = EvaluateOracle(problem, schedule);
        if (!e.ok()) continue;
        CHECK(bound.total() <= e.total * (1 + kSlack));
        if (e.total < best) best = e.total, at = {w, h, k};
      }
    }
  }
  CHECK(best == doctest::Approx(134));
  CHECK(at.w == 4);
  CHECK(at.h == 1);
  CHECK(at.k == 4);
}

// What ResidualTapNets and ResidualSumNets share, drawn in this order: n = 4, A of `rows x d`
// (K = N) from a graph input or, three times in four, its gather, the bandwidth; `Matched(r)` is
// a Pointwise base cost at r times one tile's share of the transfers of a `rows x d` tensor.
struct ResidualShape {
  Elements rows = 0;
  Elements d = 0;
  Elements n = 0;
  double bandwidth = 0;
  TensorId a = 0;
  double Matched(double ratio) const {
    const double tiles = static_cast<double>(((rows + n - 1) / n) * ((d + n - 1) / n));
    return ratio * static_cast<double>(rows * d) / bandwidth / tiles;
  }
};

ResidualShape DrawResidualShape(testing::ProblemMaker& make) {
  Problem& problem = make.problem;
  problem.native = 4;
  ResidualShape shape;
  shape.n = problem.native;
  shape.rows = make.Pick({4, 5, 6, 8, 12});
  shape.d = make.Pick({4, 4, 6, 8});
  problem.slow_memory_bandwidth = make.PickReal({0.5, 1, 4});
  shape.bandwidth = problem.slow_memory_bandwidth;
  shape.a = make.Tensor(shape.rows, shape.d);
  if (!make.Coin(4)) shape.a = make.Op(OpKind::Layout, {shape.a}, shape.rows, shape.d, 0);
  return shape;
}

// P25 where K = N: problems in which a Pointwise op may read the taps' LHS A beside a tap. Taps
// x_i = A @ W_i (1 or 2, a weight each, K = N, so A has the taps' shape), A a graph input or a
// Layout gather of one; 1 or 2 Pointwise readers of A (one over A and a second input sometimes, or
// a chain of two), sinks of the taps' shape; the taps read by nothing, or summed with A as the
// residual (s = sum x_i + A, P23's priced sum when its output is the graph output). At w = k a
// reader's region of A at a tile's last k-step is the next tile's first k-slice when the tile is in
// the first column and the next in its row (M1), the reuse P25's C |A| must survive. n = 4, every
// dimension small enough that every tile shape and order can be enumerated; A and the taps'
// outputs never fit; compute near the transfers.
Problem ResidualTapNets(std::mt19937_64& rng) {
  testing::ProblemMaker make{rng};
  Problem& problem = make.problem;
  const ResidualShape shape = DrawResidualShape(make);
  const Elements rows = shape.rows;
  const Elements d = shape.d;
  const Elements n = shape.n;
  const TensorId a = shape.a;
  const auto matched = [&](double ratio) { return shape.Matched(ratio); };
  const int m = static_cast<int>(make.Pick({1, 2, 2}));
  const double mm = matched(make.PickReal({0.25, 0.5, 1, 2}));
  std::vector<TensorId> parts;
  for (int i = 0; i < m; ++i) parts.push_back(make.Op(OpKind::MatMul, {a, make.Tensor(d, d)}, rows, d, mm));
  const int readers = static_cast<int>(make.Pick({1, 1, 2}));
  for (int i = 0; i < readers; ++i) {
    std::vector<TensorId> in = {a};
    if (make.Coin(3)) in.push_back(make.Tensor(rows, d));
    TensorId z = make.Op(OpKind::Pointwise, in, rows, d, matched(make.PickReal({0, 0.25, 0.5, 1, 2})));
    if (make.Coin(4)) make.Op(OpKind::Pointwise, {z}, rows, d, matched(make.PickReal({0, 0.5, 1})));
  }
  const int ending = static_cast<int>(make.Pick({0, 1, 2, 2}));  // read by nothing, the residual, one of each
  if (ending == 2 && m == 2) parts.pop_back();
  if (ending >= 1) {
    parts.push_back(a);
    const TensorId s = make.Op(OpKind::Pointwise, parts, rows, d, matched(make.PickReal({0, 0.25, 1})));
    if (make.Coin(4)) make.Op(OpKind::Pointwise, {s}, rows, d, matched(make.PickReal({0, 0.5})));
  }
  problem.fast_memory_capacity = std::min(rows * d - 1, n * n * make.Pick({3, 4, 5, 6, 8}) / 2);
  REQUIRE(problem.Finalize() == "");
  return problem;
}

// The tile orders ForEachResidualGrouping tries on a rows x cols grid: every order up to 4 tiles;
// beyond, raster, row-snake, column-major, column-snake, each row's first column followed by its
// last (the order that puts a first-column tile before another tile of its row and a last-column
// tile right after one of its row most often), and two random orders.
std::vector<std::vector<int64_t>> TileOrders(int64_t rows, int64_t cols, std::mt19937_64& rng) {
  std::vector<std::vector<int64_t>> orders;
  std::vector<int64_t> tiles(static_cast<size_t>(rows * cols));
  std::iota(tiles.begin(), tiles.end(), 0);
  if (rows * cols <= 4) {
    do orders.push_back(tiles);
    while (std::next_permutation(tiles.begin(), tiles.end()));
    return orders;
  }
  for (int order = 0; order < 4; ++order) {
    std::vector<int64_t> o;
    const int64_t major = order >= 2 ? cols : rows, minor = rows * cols / major;
    for (int64_t i = 0; i < rows * cols; ++i) {
      const int64_t x = i / minor;
      int64_t y = i % minor;
      if (order % 2 == 1 && x % 2 == 1) y = minor - 1 - y;
      o.push_back(order >= 2 ? y * cols + x : x * cols + y);
    }
    orders.push_back(o);
  }
  std::vector<int64_t> o;
  for (int64_t r = 0; r < rows; ++r) {
    o.push_back(r * cols);
    for (int64_t c = cols - 1; c >= 1; --c) o.push_back(r * cols + c);
  }
  orders.push_back(o);
  for (int i = 0; i < 2; ++i) {
    std::shuffle(tiles.begin(), tiles.end(), rng);
    orders.push_back(tiles);
  }
  return orders;
}

// What ForEachResidualGrouping found: the subgraphs holding one tap and a reader of A at w = k
// with n_k >= 2 and two column tiles or more, and those where A's loads fell below C |A| (a
// reader's region of A at a tile's last step serving the next tile's first k-slice).
struct ResidualRun {
  int checked = 0, reuse_shapes = 0, below_c_a = 0, priced_shapes = 0, priced_below = 0;
  double least_margin = std::numeric_limits<double>::infinity();  // there, (M_S - M_t) B / |A|
  int at_peak = 0;        // those again at the capacity of their own peak working set
  double tightest = 0;    // there, the taps part over the latency, at either capacity
};

// Every valid schedule that runs the first tap (with the second, when the problem has two, or
// not), with A's Pointwise readers (all, the first, none), the residual sum or not, and A's gather
// or not, as one subgraph, at every w, h <= n, every k <= min(K, n), in every order of TileOrders,
// the rest as the baseline runs it. Checks each against `check` and, in the fused subgraph S with
// one tap t, n_k >= 2 and A loaded (never fits), P25's step: S's memory time covers t's write, W_t
// once per row tile and A once per column tile (M_t), and, where a priced sum shares S, t's write
// and weight with the sum's unfused inputs and its written graph output (P23's line beside
// P25's, A's load left out).
void ForEachResidualGrouping(const Problem& problem, double taps_part, std::mt19937_64& rng, ResidualRun& run,
                             const std::function<void(const Evaluation&)>& check) {
  std::map<Elements, LowerBound> at_peak;  // the bound per capacity
  std::vector<OpId> taps, readers, gather;
  OpId sum = kNoOp;
  TensorId a = -1;
  for (OpId o = 0; o < static_cast<OpId>(problem.ops.size()); ++o) {
    const Op& op = problem.ops[o];
    if (op.kind == OpKind::Layout) gather.push_back(o);
    if (op.kind == OpKind::MatMul) taps.push_back(o), a = op.inputs[0];
  }
  // t: a tap read by nothing where there is one (a sink beside the residual sum), else the first.
  if (taps.size() > 1 && problem.consumers[problem.ops[taps[1]].output].empty()) std::swap(taps[0], taps[1]);
  for (OpId o = 0; o < static_cast<OpId>(problem.ops.size()); ++o) {
    const Op& op = problem.ops[o];
    if (op.kind != OpKind::Pointwise) continue;
    bool reads_a = false, reads_tap = false;
    for (TensorId in : op.inputs) {
      reads_a = reads_a || in == a;
      reads_tap = reads_tap || (problem.producer[in] != kNoOp && problem.ops[problem.producer[in]].kind == OpKind::MatMul);
    }
    if (reads_tap) sum = o;
    else if (reads_a) readers.push_back(o);
  }
  const std::optional<Schedule> baseline = testing::BaselineIfAny(problem);
  if (!baseline) return;
  const Elements n = problem.native, d = problem.tensors[a].width, m_rows = problem.tensors[a].height;
  const double bandwidth = problem.slow_memory_bandwidth;
  const bool a_loaded = problem.tensors[a].size() + 1 > problem.fast_memory_capacity;
  const TensorId t_out = problem.ops[taps[0]].output;
  for (int with_tap2 = 0; with_tap2 <= (taps.size() > 1 ? 1 : 0); ++with_tap2) {
    for (int with_readers = 0; with_readers <= std::min<int>(2, static_cast<int>(readers.size())); ++with_readers) {
      for (int with_sum = 0; with_sum <= (sum != kNoOp ? 1 : 0); ++with_sum) {
        for (int with_gather = 0; with_gather <= (gather.empty() ? 0 : 2); ++with_gather) {
          Subgraph fused;
          if (with_gather) fused.ops = gather;
          fused.ops.push_back(taps[0]);
          if (with_tap2) fused.ops.push_back(taps[1]);
          if (with_readers == 1) fused.ops.push_back(readers[0]);
          if (with_readers == 2) fused.ops.insert(fused.ops.end(), readers.begin(), readers.end());
          if (with_sum) fused.ops.push_back(sum);
          std::sort(fused.ops.begin(), fused.ops.end());
          // t a sink of S: its output read by no op of S (the sum may read the other tap's).
          bool t_sink = true;
          for (OpId o : fused.ops) {
            for (TensorId in : problem.ops[o].inputs) t_sink = t_sink && in != t_out;
          }
          // The sum's unfused inputs (outputs of taps not in S) and its graph output, P23's U.
          double sum_claim = 0;
          if (with_sum) {
            for (TensorId in : problem.ops[sum].inputs) {
              const OpId x = problem.producer[in];
              if (x != kNoOp && problem.ops[x].kind == OpKind::MatMul &&
                  std::find(fused.ops.begin(), fused.ops.end(), x) == fused.ops.end()) {
                sum_claim += static_cast<double>(problem.tensors[in].size());
              }
            }
            if (problem.IsGraphOutput(problem.ops[sum].output)) sum_claim += static_cast<double>(problem.tensors[problem.ops[sum].output].size());
          }
          for (Elements h = 1; h <= n; ++h) {
            for (Elements w = 1; w <= n; ++w) {
              const int64_t grid_rows = (m_rows + h - 1) / h, grid_cols = (d + w - 1) / w;
              const std::vector<std::vector<int64_t>> orders = TileOrders(grid_rows, grid_cols, rng);
              for (Elements k = 1; k <= std::min(d, n); ++k) {
                const int64_t nk = (d + k - 1) / k;
                for (size_t order = 0; order < orders.size(); ++order) {
                  Subgraph sg = fused;
                  sg.granularity = {w, h, k};
                  if (order > 0) sg.traversal = orders[order];
                  const Schedule schedule = WithFused(*baseline, sg, with_gather == 2 ? gather : std::vector<OpId>{});
                  const Evaluation e = EvaluateOracle(problem, schedule);
                  if (!e.ok()) continue;
                  ++run.checked;
                  INFO("granularity ", w, "x", h, "x", k, " order ", order, " tap2 ", with_tap2, " readers ", with_readers,
                       " sum ", with_sum, " gather ", with_gather);
                  check(e);
                  // V5, O8: t, a sink on a loaded A, meets other ops only through A's producer.
                  if (t_sink && (with_readers > 0 || with_sum)) CHECK(with_gather > 0);
                  if (!t_sink || with_tap2 || nk < 2 || !a_loaded) continue;
                  size_t at = 0;
                  while (schedule.subgraphs[at] != sg) ++at;
                  const double memory = e.subgraphs[at].memory_time * bandwidth;
                  const double a_size = static_cast<double>(m_rows * d);
                  const double own = static_cast<double>(problem.tensors[t_out].size()) +
                                     static_cast<double>(grid_rows) * static_cast<double>(d * d);
                  const double m_t = own + static_cast<double>(grid_cols) * a_size;
                  // A's loads: S's transfers less t's write and weight, the other sinks' writes and the
                  // other boundary inputs, each loaded once (a region a tile, at its last k-step).
                  double others = own;
                  std::vector<TensorId> seen;
                  for (OpId o : sg.ops) {
                    const TensorId out = problem.ops[o].output;
                    bool read_inside = false;
                    for (OpId c : problem.consumers[out]) {
                      read_inside = read_inside || std::find(sg.ops.begin(), sg.ops.end(), c) != sg.ops.end();
                    }
                    if (o != taps[0] && !read_inside && problem.ops[o].kind != OpKind::Layout) {
                      others += static_cast<double>(problem.tensors[out].size());
                    }
                    if (problem.ops[o].kind == OpKind::Layout) continue;
                    for (TensorId in : problem.ops[o].inputs) {
                      const OpId x = problem.producer[in];
                      const bool inside = x != kNoOp && std::find(sg.ops.begin(), sg.ops.end(), x) != sg.ops.end() &&
                                          problem.ops[x].kind != OpKind::Layout;
                      if (in == a || inside || o == taps[0] || std::find(seen.begin(), seen.end(), in) != seen.end()) continue;
                      seen.push_back(in);
                      others += static_cast<double>(problem.tensors[in].size());
                    }
                  }
                  const double a_loads = memory - others;
                  const bool shape = w == k && grid_cols >= 2 && (with_readers > 0 || with_sum);
                  run.reuse_shapes += shape ? 1 : 0;
                  if (a_loads < static_cast<double>(grid_cols) * a_size - 1e-6) {
                    ++run.below_c_a;
                    // The bound at the schedule's own peak working set, the tightest capacity it fits.
                    Elements peak = 0;
                    for (const SubgraphReport& r : e.subgraphs) peak = std::max(peak, r.peak_working_set);
                    auto known = at_peak.find(peak);
                    if (known == at_peak.end()) {
                      Problem squeezed = problem;
                      squeezed.fast_memory_capacity = peak;
                      known = at_peak.emplace(peak, ComputeLowerBound(squeezed)).first;
                    }
                    Problem squeezed = problem;
                    squeezed.fast_memory_capacity = peak;
                    const Evaluation tight = EvaluateOracle(squeezed, schedule);
                    REQUIRE(tight.ok());
                    ++run.at_peak;
                    CHECK(known->second.taps <= tight.total * (1 + kSlack));
                    CHECK(known->second.total() <= tight.total * (1 + kSlack));
                    run.tightest = std::max({run.tightest, known->second.taps / tight.total, taps_part / e.total});
                    CHECK(shape);  // only a reader's region at w = k can serve t's next k-slice
                    CHECK(with_gather > 0);
                  }
                  if (with_sum && sum_claim > 0) {
                    run.priced_shapes += w == k && grid_cols >= 2 ? 1 : 0;
                    // P23's line beside P25's: t's write and weight, the sum's U (A's load left out).
                    CHECK(memory >= own + sum_claim - 1e-6);
                    if (memory < m_t + sum_claim - 1e-6) ++run.priced_below;
                  } else {
                    CHECK(memory >= m_t - 1e-6);  // P25's M_t in a class without a priced sum
                    if (a_loads < static_cast<double>(grid_cols) * a_size - 1e-6) {
                      run.least_margin = std::min(run.least_margin, (memory - m_t) / a_size);
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

// P25's C |A| where K = N: ResidualTapNets, every schedule of ForEachResidualGrouping, against the
// bound (taps, sole sums and the total) and against P25's step (S's memory time at least M_t). A
// reader of A at w = k serves the next tile's first k-slice (A's loads fall below C |A|), but that
// reader leads to a Pointwise sink of the taps' shape, whose write (|A| when K = N) no part of
// P25's frame claims in a class without a priced sum; beside a priced sum, whose graph output
// P23 claims, P25's line leaves A's load out.
TEST_CASE("bound: P25 where K = N, a reader of A beside the tap at w = k never below the oracle") {
  ResidualRun run;
  int problems = 0, priced = 0;
  double tightest = 0;
  std::mt19937_64 rng(2520);
  for (int trial = 0; trial < 120; ++trial) {
    const Problem problem = ResidualTapNets(rng);
    CAPTURE(trial);
    const LowerBound bound = ComputeLowerBound(problem);
    ++problems;
    priced += bound.tap_count > 0 ? 1 : 0;
    ForEachResidualGrouping(problem, bound.taps, rng, run, [&](const Evaluation& e) {
      CHECK(bound.taps <= e.total * (1 + kSlack));
      CHECK(bound.sole_sums <= e.total * (1 + kSlack));
      CHECK(bound.total() <= e.total * (1 + kSlack));
      if (bound.tap_count > 0) tightest = std::max(tightest, bound.taps / e.total);
    });
  }
  MESSAGE("P25 at K = N: problems " << problems << ", a tap priced in " << priced << ", valid schedules "
                                    << run.checked << ", one tap beside a reader of A at w = k, n_k >= 2, C >= 2 "
                                    << run.reuse_shapes << ", A loaded below C |A| " << run.below_c_a
                                    << ", beside a priced sum at w = k " << run.priced_shapes
                                    << ", below M_t + U there " << run.priced_below
                                    << ", least (M_S - M_t) / |A| there " << run.least_margin << ", again at their peak "
                                    << run.at_peak << ", tightest taps/latency there " << run.tightest
                                    << ", over all " << tightest);
  CHECK(run.checked > 50000);
  CHECK(run.below_c_a > 0);
}

// P25's K = N case beside P38's and P52's claims: ResidualTapNets' shapes, but every tap summed
// (P28's setting, one priced sum of the taps' shape and no tap read by nothing), the sum's extra
// input A, a reader's output of A (the reader chain ending in the sum) or none, and the sum's output
// a graph output or, two times in three, read by a Pointwise op (P52's written sink). P52 claims
// the write of S_1's sink (S_1 runs the sum); P25 counts on the write of a reader's sink only in a
// tap's sink instance, which runs no instance of the sum; P38 is a candidate of its own in the
// islands' max, whose writes are the taps' outputs (read by the sum alone) and T_I.
Problem ResidualSumNets(std::mt19937_64& rng) {
  testing::ProblemMaker make{rng};
  Problem& problem = make.problem;
  const ResidualShape shape = DrawResidualShape(make);
  const Elements rows = shape.rows;
  const Elements d = shape.d;
  const Elements n = shape.n;
  const TensorId a = shape.a;
  const auto matched = [&](double ratio) { return shape.Matched(ratio); };
  const int m = static_cast<int>(make.Pick({1, 2, 3, 3}));
  const double mm = matched(make.PickReal({0.5, 1, 2, 4}));
  std::vector<TensorId> parts;
  for (int i = 0; i < m; ++i) parts.push_back(make.Op(OpKind::MatMul, {a, make.Tensor(d, d)}, rows, d, mm));
  const int readers = static_cast<int>(make.Pick({1, 1, 2}));
  std::vector<TensorId> ends;
  for (int i = 0; i < readers; ++i) {
    std::vector<TensorId> in = {a};
    if (make.Coin(3)) in.push_back(make.Tensor(rows, d));
    TensorId z = make.Op(OpKind::Pointwise, in, rows, d, matched(make.PickReal({0.25, 0.5, 1, 2})));
    if (make.Coin(4)) z = make.Op(OpKind::Pointwise, {z}, rows, d, matched(make.PickReal({0, 0.5})));
    ends.push_back(z);
  }
  if (make.Coin(3)) parts.push_back(a);  // the residual
  for (TensorId z : ends) {
    if (make.Coin(2)) parts.push_back(z);  // a reader's chain ending in the sum
  }
  const TensorId s = make.Op(OpKind::Pointwise, parts, rows, d, matched(make.PickReal({0, 0.25, 1})));
  if (!make.Coin(3)) make.Op(OpKind::Pointwise, {s}, rows, d, matched(make.PickReal({0, 0.25, 0.5})));
  problem.fast_memory_capacity = std::min(rows * d - 1, n * n * make.Pick({3, 3, 4, 6}) / 2);
  REQUIRE(problem.Finalize() == "");
  return problem;
}

// Against the oracle: every schedule of ForEachResidualGrouping (the first tap with the sum, S_1,
// or in a sink instance beside A's readers, at every shape and order) and of RealRatioSchedules,
// the bound (total, taps, sole sums, islands) never above; and how often P52 (sole sums without
// the sink's write) and P38 (the islands without written sums) raised it.
TEST_CASE("bound: P25 where K = N beside P38's written sum and P52's written sink never below the oracle") {
  ResidualRun run;
  int problems = 0, p52_part = 0, p52_total = 0, p38_islands = 0, p38_total = 0, randoms = 0, raised_checked = 0;
  int p38_priced = 0, p38_alone_raised = 0, p38_checked = 0, p52_reuse = 0;
  double tightest = 0, p38_tightest = 0, reuse_tightest = 0;
  std::mt19937_64 rng(3852);
  for (int trial = 0; trial < 150; ++trial) {
    const Problem problem = ResidualSumNets(rng);
    CAPTURE(trial);
    const LowerBound bound = ComputeLowerBound(problem);
    bound_internal::g_sole_sum_write = false;
    const LowerBound no_p52 = ComputeLowerBound(problem);
    bound_internal::g_sole_sum_write = true;
    bound_internal::g_written_sums = false;
    const LowerBound no_p38 = ComputeLowerBound(problem);
    bound_internal::g_written_sums = true;
    // P38 where it sets its island: the other sum parts (P23, P25, P28, P29, P33, P34, P40) off.
    const auto sum_parts = [](bool on) {
      bound_internal::g_sum_excess = bound_internal::g_tap_excess = bound_internal::g_sole_sums = on;
      bound_internal::g_shared_sums = bound_internal::g_upstream_sums = bound_internal::g_lhs_strip_sums = on;
      bound_internal::g_lone_taps = on;
    };
    sum_parts(false);
    const LowerBound p38_alone = ComputeLowerBound(problem);
    bound_internal::g_written_sums = false;
    const LowerBound neither = ComputeLowerBound(problem);
    bound_internal::g_written_sums = true;
    sum_parts(true);
    const bool p38_sets = p38_alone.islands > neither.islands * (1 + 1e-9);
    p38_alone_raised += p38_sets ? 1 : 0;
    p38_priced += bound.written_sum_count > 0 ? 1 : 0;
    ++problems;
    const bool p52 = bound.sole_sums > no_p52.sole_sums * (1 + 1e-9);
    const bool p38 = bound.islands > no_p38.islands * (1 + 1e-9);
    const bool raised = bound.total() > std::min(no_p52.total(), no_p38.total()) * (1 + 1e-9);
    p52_part += p52 ? 1 : 0;
    p52_total += bound.total() > no_p52.total() * (1 + 1e-9) ? 1 : 0;
    p38_islands += p38 ? 1 : 0;
    p38_total += bound.total() > no_p38.total() * (1 + 1e-9) ? 1 : 0;
    const auto check = [&](const Evaluation& e) {
      CHECK(bound.taps <= e.total * (1 + kSlack));
      CHECK(bound.sole_sums <= e.total * (1 + kSlack));
      CHECK(bound.islands <= e.total * (1 + kSlack));
      CHECK(bound.total() <= e.total * (1 + kSlack));
      CHECK(p38_alone.islands <= e.total * (1 + kSlack));
      if (p38_sets) p38_tightest = std::max(p38_tightest, p38_alone.islands / e.total), ++p38_checked;
      if (p52 || p38) {
        raised_checked += raised ? 1 : 0;
        tightest = std::max({tightest, bound.sole_sums / e.total, bound.islands / e.total});
      }
    };
    const int below_before = run.below_c_a;
    double tight_here = 0;
    ForEachResidualGrouping(problem, bound.taps, rng, run, [&](const Evaluation& e) {
      check(e);
      tight_here = std::max(tight_here, bound.total() / e.total);
    });
    if (bound.total() > no_p52.total() * (1 + 1e-9) && run.below_c_a > below_before) {
      ++p52_reuse;  // P52 sets the total and a tap's A loads fall below C |A| beside a reader
      reuse_tightest = std::max(reuse_tightest, tight_here);
    }
    for (const Schedule& schedule : RealRatioSchedules(
             problem, rng, trial, 4, [](int s) { return ValidRandomOptions(0.2 + 0.2 * s, 0.2, 0.3); }, 5, 3)) {
      const Evaluation e = EvaluateOracle(problem, schedule);
      if (!e.ok()) continue;
      ++randoms;
      check(e);
    }
  }
  MESSAGE("P25 at K = N beside P38/P52: problems " << problems << ", P52 raises sole sums on " << p52_part
                                                   << " (the total on " << p52_total << "), P38 raises the islands on "
                                                   << p38_islands << " (the total on " << p38_total << "), valid schedules "
                                                   << run.checked << " enumerated and " << randoms << " random/baseline/search, "
                                                   << "A loaded below C |A| " << run.below_c_a << ", checked against a raised total "
                                                   << raised_checked << ", tightest sole sums or islands / latency there " << tightest
                                                   << "; P38 above C_I and T_I / B on " << p38_priced
                                                   << ", with the other sum parts off raising the islands on " << p38_alone_raised
                                                   << " (" << p38_checked << " schedules, tightest " << p38_tightest << ")"
                                                   << "; P52 raising the total where A's loads fall below C |A| on " << p52_reuse
                                                   << " (tightest total / latency there " << reuse_tightest << ")");
  CHECK(p52_part > 0);
  CHECK(p52_total > 0);
  CHECK(p38_alone_raised > 0);
  CHECK(run.below_c_a > 0);
}

// P25 by hand with a hider: p = f(X) (Pointwise, base 5, c_p = 15) makes A, and t = A @ W (base 10,
// c_t = 30) writes O (48), a graph output; X and W graph inputs, n = 4, capacity 24, B = 1. At
// native tiles (h = w = 4) t fits only with k = 1 (W's slice 4, O's tile 16, A's or X's slice 4):
// n_k = 4, W comes once per row tile, M_t = 48 + 3 x 16 = 96; no sink and no other op's input fits
// beside (room 4), but p does (X's slice 4, its input, replaces A's), making A's strip once per
// tile: f = T ceil(K/n) / N_p = 1, a deficit (1 - theta) c_p. v = (1 - theta)(96 - 30 - 15), 51 at
// theta = 0; two column tiles (w = 2, tau = 2, the same M_t, p's f = 2) give 51 at theta = 0 too,
// the least over the classes (12 row tiles at k = 4: 90; 6 row tiles, n_k = 2: 99): taps = 15 +
// 30 + 51 = 96 before P54. Without p's deficit it would be 111. P54: where p makes A beside t, A's
// k-slices still come from X's, loaded every step (C |X| = 48 at one column tile, 96 at two): the
// native class gives (1 - theta)(144 - 45), 99 at theta = 0, two column tiles 147, and the least is
// now an open class, 4 row and 2 column tiles (h = 3, w = 2, n_k >= 2, tau = 8/3), where a
// Pointwise sink may sit and K = N keeps P54 out: (1 - 3/8) 112 = 70: taps = 15 + 30 + 70 = 115,
// the bound (graph I/O 112). Every shape of p and t in one subgraph costs at least that (the exact
// solver's optimum is 144).
TEST_CASE("bound: P25 by hand, an upstream producer hides part of a tap's weight reloads") {
  Problem problem;
  problem.native = 4;
  problem.tensors = {{4, 12}, {4, 12}, {4, 4}, {4, 12}};  // X, A, W, O (width, height)
  problem.ops.push_back({OpKind::Pointwise, {0}, 1, 5});
  problem.ops.push_back({OpKind::MatMul, {1, 2}, 3, 10});
  problem.fast_memory_capacity = 24;
  problem.slow_memory_bandwidth = 1;
  REQUIRE(problem.Finalize() == "");
  const LowerBound bound = ComputeLowerBound(problem);
  CHECK(bound.tap_count == 1);
  CHECK(bound.sums == doctest::Approx(45));
  CHECK(bound.taps == doctest::Approx(115));
  CHECK(bound.total() == doctest::Approx(115));
  int valid = 0;
  for (Elements w = 1; w <= 4; ++w) {
    for (Elements h = 1; h <= 4; ++h) {
      for (Elements k = 1; k <= 4; ++k) {
        Schedule schedule;
        Subgraph sg;
        sg.ops = {0, 1};
        sg.granularity = {w, h, k};
        schedule.subgraphs.push_back(sg);
        const Evaluation e = EvaluateOracle(problem, schedule);
        if (!e.ok()) continue;
        ++valid;
        CHECK(bound.taps <= e.total * (1 + kSlack));
      }
    }
  }
  CHECK(valid > 0);
}
// P31 against the oracle: AsppTaps, every schedule of RealRatioSchedules (also at its own peak
// working set), every tap alone at every tile shape, the taps grouped with the sum (ForEachFusedSum)
// and as co-sinks (ForEachTapGrouping). Counts the problems where P31 raises the bound (against the
// test-only switch g_pointwise_lhs_loaded = false).
TEST_CASE("bound: P31's isolated taps never above the oracle") {
  int valid = 0, tight = 0, enumerated = 0, raised = 0, decided = 0, met = 0;
  double tightest = 0;
  std::mt19937_64 rng(2929);
  for (int trial = 0; trial < 700; ++trial) {
    const Problem problem = AsppTaps(rng);
    CAPTURE(trial);
    LowerBound without;
    const LowerBound bound = BoundAndWithout(problem, bound_internal::g_pointwise_lhs_loaded, without);
    CHECK(bound.total() >= without.total() * (1 - kSlack));
    const bool rises = bound.total() > without.total() * (1 + 1e-9);
    raised += rises ? 1 : 0;
    const auto check = [&](const Evaluation& e) {
      CHECK(bound.total() <= e.total * (1 + kSlack));
      CHECK(bound.taps <= e.total * (1 + kSlack));
      if (!rises) return;
      ++decided;
      tightest = std::max(tightest, bound.total() / e.total);
      met += bound.total() >= e.total * (1 - 1e-9) ? 1 : 0;
    };
    const std::vector<Schedule> schedules = RealRatioSchedules(
        problem, rng, trial, 4, [](int s) { return ValidRandomOptions(0.2 + 0.25 * s, 0.3, 0.3); }, 8, 5);
    tight += ForEachValidAndAtPeak(
        problem, schedules, "P31 trial " + std::to_string(trial),
        [&](const Evaluation& e) {
          ++valid;
          check(e);
        },
        [&](const Problem& squeezed, const Evaluation& e) {
          const LowerBound at_peak = ComputeLowerBound(squeezed);
          CHECK(at_peak.total() <= e.total * (1 + kSlack));
          CHECK(at_peak.taps <= e.total * (1 + kSlack));
        });
    enumerated += ForEachAsppConfiguration(problem, check);
  }
  MESSAGE("P31: bound raised on " << raised << " problems, valid schedules " << valid << ", at their peak " << tight
                                  << ", enumerated " << enumerated << ", checked against a raised bound " << decided
                                  << " (met " << met << "), tightest bound/latency there " << tightest);
  CHECK(valid > 1500);
  CHECK(enumerated > 5000);
  CHECK(raised > 30);
}

}  // namespace
}  // namespace annealer
