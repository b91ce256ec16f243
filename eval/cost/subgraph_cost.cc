// See subgraph_cost.h for the method. The structural checks are the oracle's own
// (eval/model/subgraph_structure.h), so both report the same first violation. The pricer of one
// context, its templates and its steps are in eval/cost/pricer/; here its steps are added up.
#include "eval/cost/subgraph_cost.h"

#include "eval/cost/pricer/step_pricer.h"
#include "eval/cost/pricing_stop.h"
#include "eval/model/subgraph_structure.h"

namespace annealer {

namespace pricing {

// A step costs about 0.1 µs in release builds (ten times more under sanitizers): a poll every
// 4096 steps answers a stop within a millisecond and costs nothing measurable.
constexpr int64_t kStepsBetweenStopPolls = 4096;

SubgraphResult StepPricer::PriceStepByStep() {
  const int64_t tiles = rows_ * cols_;
  SubgraphResult result;
  SubgraphReport& report = result.report;
  report.tiles = tiles;
  report.k_steps = k_steps_;
  bool has_prev = false;
  int64_t step = 0;
  double slack = 0;  // H5
  const bool prefetch = rules_on_ && problem_.chip.prefetch;
  for (int64_t position = 0; position < tiles; ++position) {
    const int64_t tile = subgraph_.traversal ? (*subgraph_.traversal)[position] : position;
    for (int64_t j = 0; j < k_steps_; ++j, ++step) {
      if ((step & (kStepsBetweenStopPolls - 1)) == kStepsBetweenStopPolls - 1) PollPricingStop();
      const StepCoord s{tile / cols_, tile % cols_, j};
      Requests(s, cur_regions_, cur_alive_, cur_roles_);
      const StepPrice price =
          Price(s, cur_regions_, cur_alive_, cur_roles_, has_prev, prev_regions_, prev_alive_);
      report.peak_working_set = std::max(report.peak_working_set, price.working_set);
      if (std::optional<SubgraphResult> failure = StepFailure(price, step, tile, j)) return *failure;
      double exposed = price.memory;
      if (prefetch) {
        const PrefetchSplit split = ApplyPrefetch(price.compute, price.memory, price.prefetchable, slack);
        exposed = split.exposed;
        slack = split.slack;
      }
      report.compute_time += price.compute;
      report.memory_time += price.memory;
      report.latency += std::max(price.compute, exposed);
      cur_regions_.swap(prev_regions_);
      cur_alive_.swap(prev_alive_);
      cur_roles_.swap(prev_roles_);
      has_prev = true;
    }
  }
  return result;
}

// Step classes. A tile is (last row?, last column?); its first k-step also depends on how the
// traversal arrived: no previous tile, or which of row and column changed.
enum PrevMove { kNoPrev = 0, kRowChanged = 1, kColChanged = 2, kBothChanged = 3 };

SubgraphResult StepPricer::PriceByClasses() {
  cur_step_.reset();  // the buffers hold nothing PriceStep derived for this granularity
  prev_step_.reset();
  cur_own_.known = false;
  const int64_t tiles = rows_ * cols_;
  // counts[row_edge][col_edge][move]: tiles by class.
  int64_t counts[2][2][4] = {};
  auto edge_r = [&](int64_t r) { return r == rows_ - 1 ? 1 : 0; };
  auto edge_c = [&](int64_t c) { return c == cols_ - 1 ? 1 : 0; };
  if (!subgraph_.traversal) {
    // Raster in closed form.
    counts[edge_r(0)][edge_c(0)][kNoPrev] += 1;
    if (cols_ >= 2) {  // tiles (r, c >= 1), arrived from (r, c - 1)
      for (int re = 0; re < 2; ++re) {
        const int64_t row_count = re ? 1 : rows_ - 1;
        counts[re][1][kColChanged] += row_count;
        counts[re][0][kColChanged] += row_count * (cols_ - 2);
      }
    }
    if (rows_ >= 2) {  // tiles (r >= 1, 0), arrived from (r - 1, cols - 1)
      const int move = cols_ > 1 ? kBothChanged : kRowChanged;
      counts[1][edge_c(0)][move] += 1;
      counts[0][edge_c(0)][move] += rows_ - 2;
    }
  } else {
    const auto& order = *subgraph_.traversal;
    int64_t pr = order[0] / cols_, pc = order[0] % cols_;
    counts[edge_r(pr)][edge_c(pc)][kNoPrev] += 1;
    for (int64_t p = 1; p < tiles; ++p) {
      const int64_t r = order[p] / cols_, c = order[p] % cols_;
      const int move = (r != pr ? kRowChanged : 0) | (c != pc ? kColChanged : 0);
      counts[edge_r(r)][edge_c(c)][move] += 1;
      pr = r;
      pc = c;
    }
  }

  // Representative steps. Row index for an edge class: the last row; otherwise row 0 (which
  // exists as a non-edge row whenever such tiles are counted). A changed index picks any other.
  auto rep_row = [&](int re) -> int64_t { return re ? rows_ - 1 : 0; };
  auto rep_col = [&](int ce) -> int64_t { return ce ? cols_ - 1 : 0; };
  auto other = [](int64_t i) -> int64_t { return i == 0 ? 1 : i - 1; };

  StepPrice first[2][2][4];
  StepPrice middle[2][2];
  StepPrice last[2][2];
  bool have_tile[2][2] = {};
  Elements peak = 0;
  const int64_t last_j = k_steps_ - 1;
  for (int re = 0; re < 2; ++re) {
    for (int ce = 0; ce < 2; ++ce) {
      for (int move = 0; move < 4; ++move) {
        if (counts[re][ce][move] == 0) continue;
        have_tile[re][ce] = true;
        const StepCoord s{rep_row(re), rep_col(ce), 0};
        if (move == kNoPrev) {
          first[re][ce][move] = PriceStep(s, nullptr);
        } else {
          const StepCoord prev{move & kRowChanged ? other(s.row) : s.row,
                               move & kColChanged ? other(s.col) : s.col, last_j};
          first[re][ce][move] = PriceStep(s, &prev);
        }
        peak = std::max(peak, first[re][ce][move].working_set);
      }
      if (!have_tile[re][ce] || k_steps_ < 2) continue;
      if (k_steps_ >= 3) {
        const StepCoord s{rep_row(re), rep_col(ce), 1};
        const StepCoord prev{s.row, s.col, 0};
        middle[re][ce] = PriceStep(s, &prev);
        peak = std::max(peak, middle[re][ce].working_set);
      }
      const StepCoord s{rep_row(re), rep_col(ce), last_j};
      const StepCoord prev{s.row, s.col, last_j - 1};
      last[re][ce] = PriceStep(s, &prev);
      peak = std::max(peak, last[re][ce].working_set);
    }
  }

  const Elements capacity = problem_.fast_memory_capacity;
  bool any_fails = peak > capacity;
  if (rules_on_) {
    for (int re = 0; re < 2; ++re) {
      for (int ce = 0; ce < 2; ++ce) {
        if (!have_tile[re][ce]) continue;
        for (int move = 0; move < 4; ++move) {
          if (counts[re][ce][move] == 0) continue;
          any_fails = any_fails || StepFails(first[re][ce][move]);
        }
        if (k_steps_ >= 3) {
          any_fails = any_fails || StepFails(middle[re][ce]);
        }
        if (k_steps_ >= 2) {
          any_fails = any_fails || StepFails(last[re][ce]);
        }
      }
    }
  }
  if (any_fails) {
    // The first step, in execution order, whose class does not fit.
    int64_t pr = -1, pc = -1;
    for (int64_t p = 0; p < tiles; ++p) {
      const int64_t tile = subgraph_.traversal ? (*subgraph_.traversal)[p] : p;
      const int64_t r = tile / cols_, c = tile % cols_;
      const int move = p == 0 ? kNoPrev : (r != pr ? kRowChanged : 0) | (c != pc ? kColChanged : 0);
      const int re = edge_r(r), ce = edge_c(c);
      const int64_t step0 = p * k_steps_;
      if (auto failure = StepFailure(first[re][ce][move], step0, tile, 0)) return *failure;
      if (k_steps_ >= 3) {
        if (auto failure = StepFailure(middle[re][ce], step0 + 1, tile, 1)) return *failure;
      }
      if (k_steps_ >= 2) {
        if (auto failure = StepFailure(last[re][ce], step0 + last_j, tile, last_j)) return *failure;
      }
      pr = r;
      pc = c;
    }
  }

  SubgraphResult result;
  SubgraphReport& report = result.report;
  report.tiles = tiles;
  report.k_steps = k_steps_;
  report.peak_working_set = peak;
  if (rules_on_ && problem_.chip.prefetch) {
    // H5: a step's exposed loads depend on the slack the steps before it left, which the
    // classes do not carry. Each step's price is its class's, so the steps are replayed in
    // execution order with PriceStepByStep's arithmetic, in its order of additions: the same
    // doubles, at a few operations per step instead of deriving and pricing its requests.
    double slack = 0;
    int64_t step = 0;
    int64_t pr = -1, pc = -1;
    for (int64_t p = 0; p < tiles; ++p) {
      const int64_t tile = subgraph_.traversal ? (*subgraph_.traversal)[p] : p;
      const int64_t r = tile / cols_, c = tile % cols_;
      const int move = p == 0 ? kNoPrev : (r != pr ? kRowChanged : 0) | (c != pc ? kColChanged : 0);
      const int re = edge_r(r), ce = edge_c(c);
      for (int64_t j = 0; j < k_steps_; ++j, ++step) {
        if ((step & (kStepsBetweenStopPolls - 1)) == kStepsBetweenStopPolls - 1) PollPricingStop();
        const StepPrice& price = j == 0 ? first[re][ce][move] : j == last_j ? last[re][ce] : middle[re][ce];
        const PrefetchSplit split = ApplyPrefetch(price.compute, price.memory, price.prefetchable, slack);
        slack = split.slack;
        report.compute_time += price.compute;
        report.memory_time += price.memory;
        report.latency += std::max(price.compute, split.exposed);
      }
      pr = r;
      pc = c;
    }
    return result;
  }
  auto add = [&](const StepPrice& price, int64_t count) {
    const double m = static_cast<double>(count);
    report.compute_time += price.compute * m;
    report.memory_time += price.memory * m;
    report.latency += std::max(price.compute, price.memory) * m;
  };
  for (int re = 0; re < 2; ++re) {
    for (int ce = 0; ce < 2; ++ce) {
      int64_t tile_count = 0;
      for (int move = 0; move < 4; ++move) {
        if (counts[re][ce][move] == 0) continue;
        add(first[re][ce][move], counts[re][ce][move]);
        tile_count += counts[re][ce][move];
      }
      if (tile_count == 0 || k_steps_ < 2) continue;
      if (k_steps_ >= 3) add(middle[re][ce], tile_count * (k_steps_ - 2));
      add(last[re][ce], tile_count);
    }
  }
  return result;
}

}  // namespace pricing

using pricing::Fail;
using pricing::StepPricer;


SubgraphResult CostSubgraph(const Problem& problem, const Subgraph& subgraph,
                            const std::vector<TensorId>& retained_in) {
  StepPricer pricer(problem, subgraph, retained_in);
  if (auto failure = pricer.Analyse()) return *failure;
  // Under H5 the classes price the steps and PriceByClasses replays the slack step by step.
  return pricer.step_classes_apply() ? pricer.PriceByClasses() : pricer.PriceStepByStep();
}

std::optional<SubgraphResult> StructuralFailure(const Problem& problem, const Subgraph& subgraph,
                                                const std::vector<TensorId>& retained_in) {
  thread_local SubgraphStructure structure;
  std::optional<Violation> violation = AnalyseSubgraph(problem, subgraph, structure);
  if (!violation) violation = CheckRetainedIn(problem, retained_in);
  if (!violation) return std::nullopt;
  return Fail(Verdict::kInvalid, std::move(violation->rule), std::move(violation->detail));
}

SubgraphResult CostSubgraphStepByStep(const Problem& problem, const Subgraph& subgraph,
                                      const std::vector<TensorId>& retained_in) {
  StepPricer pricer(problem, subgraph, retained_in);
  if (auto failure = pricer.Analyse()) return *failure;
  return pricer.PriceStepByStep();
}

bool CostSubgraphUsesStepClasses(const Problem& problem, const Subgraph& subgraph,
                                 const std::vector<TensorId>& retained_in) {
  StepPricer pricer(problem, subgraph, retained_in);
  if (pricer.Analyse()) return false;
  return pricer.step_classes_apply();
}

}  // namespace annealer
