// The layer-chains start pass (search/starts/layer_chains.h, docs/search.md "Layer chains"): the
// chains it cuts on a dense block by hand, the schedule it reaches there, and on random dense
// blocks that it keeps every schedule valid and never makes one dearer.
#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "eval/cost/cost_cache.h"
#include "eval/oracle.h"
#include "search/starts/baseline.h"
#include "search/starts/constructive.h"
#include "search/starts/layer_chains.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"
#include "tests/support/graph_builder.h"
#include "tests/support/test_files.h"

namespace annealer {
namespace {

struct DenseBlock {
  Problem problem;
  std::vector<OpId> sums;  // per layer: the sum of its taps (the layer's output feature)
  std::vector<OpId> partial_sums;  // per layer from the second: the op summing its partial products
};

// A dense block as the importer lowers DenseNet's: the block input f0 (rows x f0_width, a graph
// input) and, per layer l, for every feature f_i before it a Pointwise prologue p_i (batch norm
// and ReLU) and a partial product m_i = p_i @ V_i (K = width of f_i, N = inner), their sum s
// (Pointwise) and its activation a, `taps` MatMuls t_j = a @ T_j (K = inner, N = growth) and their
// sum f_l. Bases: prologue 768, products and taps 256, sums 256, the taps' sum `tap_sum_base`.
DenseBlock MakeDenseBlock(int layers, Elements rows, Elements f0_width, Elements growth, Elements inner, int taps,
                          Elements capacity, double bandwidth, double weight_bandwidth, Elements native,
                          double tap_sum_base = 0) {
  testing::GraphBuilder b(capacity, bandwidth);
  b.problem.native = native;
  b.problem.chip.weight_bandwidth = weight_bandwidth;
  DenseBlock block;
  std::vector<TensorId> features{b.Tensor(rows, f0_width)};
  for (int l = 0; l < layers; ++l) {
    std::vector<TensorId> partials;
    for (TensorId f : features) {
      const Elements width = b.problem.tensors[f].width;
      const TensorId p = b.Tensor(rows, width);
      b.Op(OpKind::Pointwise, {f}, p, 768);
      const TensorId m = b.Tensor(rows, inner);
      b.Op(OpKind::MatMul, {p, b.Tensor(width, inner)}, m, 256);
      partials.push_back(m);
    }
    TensorId s = partials[0];
    if (partials.size() > 1) {
      s = b.Tensor(rows, inner);
      block.partial_sums.push_back(b.Op(OpKind::Pointwise, partials, s, 256));
    }
    const TensorId a = b.Tensor(rows, inner);
    b.Op(OpKind::Pointwise, {s}, a, 256);
    std::vector<TensorId> products;
    for (int j = 0; j < taps; ++j) {
      const TensorId t = b.Tensor(rows, growth);
      b.Op(OpKind::MatMul, {a, b.Tensor(inner, growth)}, t, 256);
      products.push_back(t);
    }
    const TensorId f = b.Tensor(rows, growth);
    block.sums.push_back(b.Op(OpKind::Pointwise, products, f, tap_sum_base));
    features.push_back(f);
  }
  block.problem = b.Build();
  return block;
}

const auto kNever = [] { return false; };

TEST_CASE("layer chains: the pieces of a dense block's layers, by hand") {
  // Three layers, f0 64 wide, growth 32, inner 128, three taps. Ops: layer 1 is p0 (0), m0 (1),
  // a (2), taps 3-5, f1's sum 6; layer 2 is p0 7, m0 8, p1 9, m1 10, s 11, a 12, taps 13-15,
  // sum 16; layer 3 is p0 17, m0 18, p1 19, m1 20, p2 21, m2 22, s 23, a 24, taps 25-27, sum 28.
  const DenseBlock block = MakeDenseBlock(3, 256, 64, 32, 128, 3, 1 << 22, 20, 0, 128);
  const Problem& p = block.problem;
  REQUIRE(block.sums == std::vector<OpId>{6, 16, 28});
  REQUIRE(block.partial_sums == std::vector<OpId>{11, 23});
  const std::vector<int> rank = TopologicalRanks(p);
  // Layer 1: one partial product (K = 64) beside taps of K = 128: b = its prologue, product and
  // activation, retaining the activation (tensor 5) for c = the taps and their sum.
  {
    const auto pieces = LayerChainPieces(p, rank, 6);
    REQUIRE(pieces);
    REQUIRE(pieces->size() == 2);
    CHECK((*pieces)[0].ops == std::vector<OpId>{0, 1, 2});
    CHECK((*pieces)[0].retain == std::vector<TensorId>{p.ops[2].output});
    CHECK((*pieces)[1].ops == std::vector<OpId>{3, 4, 5, 6});
    CHECK((*pieces)[1].retain.empty());
  }
  // Layer 2: products of K = 64 and K = 32, one each: a = the larger's chain (tie), retaining
  // m0's output into b = the other product, the sum and the activation, retaining it into c.
  {
    const auto pieces = LayerChainPieces(p, rank, 16);
    REQUIRE(pieces);
    REQUIRE(pieces->size() == 3);
    CHECK((*pieces)[0].ops == std::vector<OpId>{7, 8});
    CHECK((*pieces)[0].retain == std::vector<TensorId>{p.ops[8].output});
    CHECK((*pieces)[1].ops == std::vector<OpId>{9, 10, 11, 12});
    CHECK((*pieces)[1].retain == std::vector<TensorId>{p.ops[12].output});
    CHECK((*pieces)[2].ops == std::vector<OpId>{13, 14, 15, 16});
  }
  // Layer 3's sum of partial products (three inputs) is a sum too: its products have K = 64
  // (one) and 32 (two), no others, so a = the K = 64 chain and b = the rest with the sum.
  {
    const auto pieces = LayerChainPieces(p, rank, 23);
    REQUIRE(pieces);
    REQUIRE(pieces->size() == 2);
    CHECK((*pieces)[0].ops == std::vector<OpId>{17, 18});
    CHECK((*pieces)[1].ops == std::vector<OpId>{19, 20, 21, 22, 23});
  }
  CHECK(LayerChainSums(p) == std::vector<OpId>{6, 16, 23, 28});
  // Nothing sums three MatMuls in the contest problems: the pass never runs there.
  for (const char* name : {"example_problem.json", "mlsys-2026-1.json", "mlsys-2026-5.json", "mlsys-2026-9.json",
                           "mlsys-2026-13.json", "mlsys-2026-17.json"}) {
    CHECK_MESSAGE(LayerChainSums(testing::ReadBundledProblem(name)).empty(), name);
  }
}

TEST_CASE("layer chains: on a dense block at tpu-v1's ratios the chains meet the compute, where the greedy start does not") {
  // tpu-v1's ratios: native 256, B = 21.47, a weight path at 48.57, a large fast memory; a dense
  // block of 3,136 rows (13 row tiles), as DenseNet-121's first block, three layers.
  const DenseBlock block = MakeDenseBlock(3, 3136, 64, 32, 128, 9, 25165824, 21.47483648, 48.57142857142857, 256);
  const Problem& p = block.problem;
  CostCache cache(1 << 16);
  SubgraphPricer pricer(p, &cache);
  const Schedule greedy = GreedyFusion(p, pricer, BuildBaseline(p), kNever);
  const Evaluation before = EvaluateOracle(p, greedy);
  REQUIRE(before.ok());
  const Schedule chained = LayerChains(p, pricer, greedy, kNever);
  const Evaluation after = EvaluateOracle(p, chained);
  REQUIRE(after.ok());
  // Every op computed once at 13 native tiles: 3 x (9 taps + their sum + the activation) x 256
  // x 13 (the taps' sum has base 0), the six prologues at 768 and products at 256, two sums of
  // products: (3 x 10 x 256 + 6 x 1024 + 2 x 256) x 13 = 186,368. Every chain's loads (a feature
  // in, the layer's output out) hide under its compute.
  double compute = 0;
  for (OpId op = 0; op < static_cast<OpId>(p.ops.size()); ++op) compute += p.ops[op].base_cost * static_cast<double>(p.NativeTiles(op));
  CHECK(compute == 186368);
  CHECK(after.total == doctest::Approx(186368));
  CHECK(before.total > 186368 + 1000);
  // Layer by layer: a chain of 2 pieces, then 3, then 3.
  CHECK(chained.subgraphs.size() == 8);
  CHECK(LayerChains(p, pricer, greedy, kNever) == chained);  // deterministic
}

TEST_CASE("layer chains: valid and never dearer on random dense blocks, with and without a weight path") {
  std::mt19937_64 rng(24);
  auto pick = [&](std::initializer_list<Elements> values) {
    return *(values.begin() + std::uniform_int_distribution<int>(0, static_cast<int>(values.size()) - 1)(rng));
  };
  int cases = 0, changed = 0, lower = 0;
  for (int round = 0; round < 600; ++round) {
    const int layers = static_cast<int>(pick({1, 2, 3, 4}));
    const Elements native = pick({32, 64, 128});
    const Elements rows = pick({64, 100, 256, 512});
    const Elements f0 = pick({16, 32, 64, 96}), growth = pick({8, 16, 32}), inner = pick({32, 64, 128});
    const int taps = static_cast<int>(pick({3, 4, 9}));
    const Elements capacity = pick({6000, 20000, 60000, 1 << 20});
    const double bandwidth = static_cast<double>(pick({1, 4, 10, 40}));
    const double weight_bandwidth = round % 3 == 0 ? 0.0 : bandwidth * static_cast<double>(pick({1, 2, 4}));
    const DenseBlock block = MakeDenseBlock(layers, rows, f0, growth, inner, taps, capacity, bandwidth,
                                            weight_bandwidth, native, static_cast<double>(pick({0, 64})));
    const Problem& p = block.problem;
    CostCache cache(1 << 14);
    SubgraphPricer pricer(p, &cache);
    const Schedule baseline = BuildBaseline(p);
    if (!EvaluateOracle(p, baseline).ok()) continue;
    const Schedule start = round % 2 == 0 ? baseline : GreedyFusion(p, pricer, baseline, kNever);
    const Evaluation before = EvaluateOracle(p, start);
    REQUIRE(before.ok());
    const Schedule after = LayerChains(p, pricer, start, kNever);
    const Evaluation e = EvaluateOracle(p, after);
    REQUIRE_MESSAGE(e.ok(), "round " << round << ": " << e.violation.Message());
    CHECK(e.total <= before.total);
    ++cases;
    changed += !(after == start);
    lower += e.total < before.total * (1 - 1e-9);
  }
  MESSAGE(cases << " problems, " << changed << " schedules changed, " << lower << " lowered");
  CHECK(cases > 400);
  CHECK(lower > 100);
}

}  // namespace
}  // namespace annealer
