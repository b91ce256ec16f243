// P43, heads that load their operand first or are served (eval/bound/islands/internal_heads.h,
// docs/lower-bound.md "Heads that load their operand first (P43)"): a hand case against the
// exact solver's best and the schedules that write the operand once or serve every head, and
// random decoder-like problems at real-chip ratios whose valid schedules (random, both baselines,
// the exact solver's best, and schedules that serve every head by running the trunk again) the
// oracle prices at or above it.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "eval/bound/bounds.h"
#include "eval/bound/islands/internal_heads.h"
#include "eval/oracle.h"
#include "search/exact/exact.h"
#include "tests/support/problem_maker.h"
#include "tests/support/sample_schedules.h"

namespace annealer {
namespace {

Subgraph One(std::vector<OpId> ops, Granularity g, std::vector<TensorId> retain = {}) {
  Subgraph s;
  s.ops = std::move(ops);
  s.granularity = g;
  s.retain = std::move(retain);
  return s;
}

// A decoder-like layer: a trunk (1-3 Pointwise ops, a residual of X now and then) makes t; each
// internal head h_j = t @ W_j (K > n) feeds a Pointwise op f_j that also reads h_j's output
// through a Layout op (RoPE's slices: alone, or every head's output gathered), and f_j feeds a
// MatMul with K <= n: h_j may run upstream of it beside the trunk (one island), but its first
// instance runs in its k-loop (P26 (b)). External heads are plain t @ W_j (islands of their own).
// A second layer now and then: the first layer's outputs summed, projected (K <= n), added to X
// and normed into t2, which heads of the same kinds read (its chains may hold that projection).
struct Decoder {
  Problem problem;
  struct Layer {
    std::vector<OpId> chain;  // ops that make the layer's tensor from written tensors and X
    TensorId tensor = -1;
    std::vector<OpId> heads;  // internal and external, each served by the chain
  };
  std::vector<Layer> layers;
};

Decoder MakeDecoder(std::mt19937_64& rng, bool hand = false) {
  testing::ProblemMaker make{rng};
  Problem& problem = make.problem;
  problem.native = 4;
  const Elements rows = hand ? 8 : make.Pick({4, 8});
  const Elements d = hand ? 8 : make.Pick({8, 12});
  Decoder decoder;
  const TensorId x = make.Tensor(rows, d);
  TensorId input = x;  // what the next layer's chain starts from
  const int layers = hand ? 1 : (make.Coin(2) ? 2 : 1);
  for (int layer = 0; layer < layers; ++layer) {
    Decoder::Layer l;
    TensorId t = input;
    const int length = hand ? 1 : 1 + static_cast<int>(make.Pick({0, 1, 2}));
    for (int i = 0; i < length; ++i) {
      if (!hand && (i > 0 || layer > 0) && make.Coin(3)) {
        t = make.Op(OpKind::Pointwise, {t, x}, rows, d, make.PickReal({0, 0.5, 2}));  // a residual
      } else {
        t = make.Op(OpKind::Pointwise, {t}, rows, d, hand ? 0 : make.PickReal({0, 0.5, 2}));
      }
      l.chain.push_back(static_cast<OpId>(problem.ops.size() - 1));
    }
    l.tensor = t;
    const int internal = hand ? 2 : static_cast<int>(make.Pick({1, 2, 3}));
    const bool gathered = hand || make.Coin(2);
    std::vector<TensorId> outs;
    for (int j = 0; j < internal; ++j) {
      outs.push_back(make.Op(OpKind::MatMul, {t, make.Tensor(d, 4)}, rows, 4, hand ? 1 : make.PickReal({0, 0.5, 4})));
      l.heads.push_back(static_cast<OpId>(problem.ops.size() - 1));
    }
    std::vector<TensorId> results;
    const TensorId cat = gathered ? make.Op(OpKind::Layout, outs, rows, 4 * internal, 0) : -1;
    for (int j = 0; j < internal; ++j) {
      TensorId y = outs[j];
      if (!hand && make.Coin(3)) y = make.Op(OpKind::Pointwise, {y}, rows, 4, make.PickReal({0, 1}));  // an epilogue
      const TensorId slice = gathered ? make.Op(OpKind::Layout, {cat}, rows, 4, 0) : make.Op(OpKind::Layout, {outs[j]}, rows, 4, 0);
      const TensorId f = make.Op(OpKind::Pointwise, {y, slice}, rows, 4, hand ? 1 : make.PickReal({0, 1, 4}));
      results.push_back(make.Op(OpKind::MatMul, {f, make.Tensor(4, 4)}, rows, 4, hand ? 2 : make.PickReal({0, 1, 4})));
    }
    const int external = hand ? 1 : static_cast<int>(make.Pick({0, 1, 2}));
    for (int j = 0; j < external; ++j) {
      TensorId z = make.Op(OpKind::MatMul, {t, make.Tensor(d, 4)}, rows, 4, hand ? 1 : make.PickReal({0, 0.5, 4}));
      l.heads.push_back(static_cast<OpId>(problem.ops.size() - 1));
      if (!hand && make.Coin(2)) z = make.Op(OpKind::Layout, {z}, 4, rows, 0);
    }
    decoder.layers.push_back(l);
    if (layer + 1 < layers) {  // the next layer's input: the results summed, projected, X added
      const TensorId sum = make.Op(OpKind::Pointwise, results, rows, 4, make.PickReal({0, 1}));
      input = make.Op(OpKind::MatMul, {sum, make.Tensor(4, d)}, rows, d, make.PickReal({0, 1, 4}));
    }
  }
  if (hand) {
    problem.fast_memory_capacity = 4096;
    problem.slow_memory_bandwidth = 1;
    problem.chip.weight_bandwidth = 4;
  } else {
    make.AtRealRatios();
    problem.chip.weight_bandwidth = problem.slow_memory_bandwidth * make.PickReal({0.5, 2.3, 10});
    problem.chip.weight_fifo_capacity = make.Coin(2) ? 0 : problem.fast_memory_capacity / make.Pick({1, 4});
  }
  REQUIRE(problem.Finalize() == "");
  decoder.problem = problem;
  return decoder;
}

// Every op alone in topological order (its output written), except that each head is preceded by
// its layer's chain, run again retaining the layer's tensor: every head served.
Schedule ServeEveryHead(const Decoder& decoder) {
  const Problem& problem = decoder.problem;
  const Elements n = problem.native;
  std::vector<const Decoder::Layer*> head_layer(problem.ops.size(), nullptr);
  for (const Decoder::Layer& l : decoder.layers) {
    for (OpId h : l.heads) head_layer[h] = &l;
  }
  Schedule s;
  for (OpId op : problem.topological_order) {
    if (head_layer[op] != nullptr) {
      s.subgraphs.push_back(One(head_layer[op]->chain, Granularity{n, n, 1}, {head_layer[op]->tensor}));
    }
    s.subgraphs.push_back(One({op}, Granularity{n, n, problem.ops[op].kind == OpKind::MatMul ? std::min<Elements>(n, problem.ReductionLength(op)) : 1}));
  }
  return s;
}

// By hand (n = 4, B = 1, Bw = 4): X (8x8) -> P (base 0) -> A, two internal heads A @ W_j (base 1,
// K = 8 > n; their outputs gathered by one Layout op, each f_j = Y_j + its slice of that (base 1),
// M_j = F_j @ V_j, base 2, K = 4) and one external head A @ W_3 (base 1). Every head's first subgraph loads A (64) or is
// served by a chain that loads X (64); the earliest chain is free. P16 sees one crossing reader.
// P43 gives 488, P16 and P35 360; P17's memory floor, 544, is the bound; the exact solver's best,
// optimal in its family, and the resident baseline cost 736.
TEST_CASE("P43 by hand: internal heads load their operand or pay a chain each") {
  std::mt19937_64 rng(43);
  const Decoder decoder = MakeDecoder(rng, true);
  const Problem& p = decoder.problem;
  const LowerBound bound = ComputeLowerBound(p);
  MESSAGE("crossing " << bound.crossing << " recompute " << bound.recompute << " heads " << bound.internal_heads
                      << " count " << bound.internal_head_count << " islands " << bound.islands);
  CHECK(bound.internal_head_count == 2);
  CHECK(bound.crossing == doctest::Approx(360));
  CHECK(bound.recompute == doctest::Approx(360));
  CHECK(bound.internal_heads == doctest::Approx(488));  // + the two heads' loads of A, 64 each
  CHECK(bound.memory_floor == doctest::Approx(544));  // P17 (Layout inputs written, gathered) decides here
  CHECK(bound.total() == doctest::Approx(544));
  bound_internal::g_internal_heads = false;
  const LowerBound without = ComputeLowerBound(p);
  bound_internal::g_internal_heads = true;
  CHECK(without.internal_heads == doctest::Approx(without.crossing));
  std::vector<Schedule> schedules{ServeEveryHead(decoder)};
  testing::AppendBaselines(p, schedules);
  ExactOptions exact;
  exact.max_states = 200000;
  exact.max_subgraph_ops = 8;
  const ExactResult result = SolveExact(p, exact);
  REQUIRE(result.best);
  schedules.push_back(*result.best);
  double least = 1e30;
  for (const Schedule& s : schedules) {
    const Evaluation e = EvaluateOracle(p, s);
    REQUIRE(e.ok());
    MESSAGE("schedule " << e.total);
    least = std::min(least, e.total);
    CHECK(bound.total() <= e.total * (1 + 1e-9));
  }
  MESSAGE("least " << least << ", exact " << result.total << " optimal in its family " << (result.status == ExactStatus::kOptimal));
  CHECK(result.total == doctest::Approx(736));
  CHECK(least == doctest::Approx(736));
}

TEST_CASE("P43: heads that load their operand first, never above the oracle (real ratios)") {
  std::mt19937_64 rng(4343);
  int valid = 0, gained = 0, decided = 0, priced = 0, served_valid = 0;
  double tightest = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    Decoder decoder = MakeDecoder(rng);
    Problem& problem = decoder.problem;
    const double ratio[] = {0.1, 0.5, 2, 10};
    for (Op& op : problem.ops) op.base_cost *= ratio[trial % 4];
    if (trial % 5 == 0) problem.chip.weight_bandwidth = 0;  // one path now and then
    const LowerBound bound = ComputeLowerBound(problem);
    priced += bound.internal_head_count > 0;
    const bool gains = bound.internal_heads > std::max(bound.crossing, bound.recompute) * (1 + 1e-9);
    gained += gains;
    const double others = std::max({bound.compute, bound.graph_io, bound.traffic, bound.combined, bound.islands,
                                    bound.streaming, bound.crossing, bound.recompute, bound.memory_floor, bound.tiles,
                                    bound.sums, bound.taps, bound.sole_sums, bound.shared_sums});
    const bool decides = bound.internal_heads > others * (1 + 1e-9);
    std::vector<Schedule> schedules = testing::SampleSchedules(problem, rng, trial % 4 == 0);
    schedules.push_back(ServeEveryHead(decoder));
    for (size_t k = 0; k < schedules.size(); ++k) {
      const Evaluation evaluation = EvaluateOracle(problem, schedules[k]);
      if (!evaluation.ok()) continue;
      ++valid;
      served_valid += k + 1 == schedules.size();
      decided += decides;
      INFO("trial " << trial << " schedule " << k << ": crossing " << bound.crossing << " recompute "
                    << bound.recompute << " heads " << bound.internal_heads << " islands " << bound.islands
                    << ", oracle " << evaluation.total);
      CHECK(bound.internal_heads <= evaluation.total * (1 + 1e-9));
      CHECK(bound.total() <= evaluation.total * (1 + 1e-9));
      if (decides) tightest = std::max(tightest, bound.internal_heads / evaluation.total);
    }
  }
  MESSAGE("P43: valid schedules " << valid << " (" << served_valid << " serving every head), problems priced " << priced
                                  << ", where P43 exceeds P16 and P35 " << gained
                                  << ", schedules where it is above every other part " << decided
                                  << ", tightest heads/latency " << tightest);
  CHECK(valid > 4000);
  CHECK(gained > 50);
  CHECK(decided > 100);
}

}  // namespace
}  // namespace annealer
