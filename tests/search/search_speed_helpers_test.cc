// The allocation-free helpers of the move generator agree with the plain definitions they
// replace: stamped sets, the one-walk subgraph facts (boundary inputs and sinks), Feeds and the
// op-list form of UsefulRetain, Split's random order, on random op sets of the bundled problems and
// of random graphs.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "eval/random_schedule.h"
#include "eval/model/traversal.h"
#include "search/moves/move_kit.h"
#include "search/subgraph_tools.h"
#include "src/io/contest/problem_reader.h"
#include "tests/support/test_files.h"

namespace annealer {
namespace {

using testing::ReadBundledProblem;

std::vector<TensorId> ReferenceProduced(const Problem& problem, const std::vector<OpId>& ops) {
  std::vector<TensorId> produced;
  for (OpId op : ops) produced.push_back(problem.ops[op].output);
  std::sort(produced.begin(), produced.end());
  produced.erase(std::unique(produced.begin(), produced.end()), produced.end());
  return produced;
}

std::vector<TensorId> ReferenceInputs(const Problem& problem, const std::vector<OpId>& ops) {
  const std::vector<TensorId> produced = ReferenceProduced(problem, ops);
  std::vector<TensorId> inputs;
  for (OpId op : ops) {
    for (TensorId t : problem.ops[op].inputs) {
      if (!std::binary_search(produced.begin(), produced.end(), t)) inputs.push_back(t);
    }
  }
  std::sort(inputs.begin(), inputs.end());
  inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
  return inputs;
}

std::vector<TensorId> ReferenceSinks(const Problem& problem, const std::vector<OpId>& ops) {
  std::vector<TensorId> sinks;
  for (OpId op : ops) {
    bool read_inside = false;
    for (OpId other : ops) {
      const auto& in = problem.ops[other].inputs;
      read_inside |= std::find(in.begin(), in.end(), problem.ops[op].output) != in.end();
    }
    if (!read_inside) sinks.push_back(problem.ops[op].output);
  }
  return sinks;
}

// A random set of 1..max_size distinct ops in topological order (often a connected chain).
std::vector<OpId> RandomOps(const Problem& problem, const std::vector<int>& rank, std::mt19937_64& rng,
                            int max_size) {
  const int num_ops = static_cast<int>(problem.ops.size());
  std::vector<OpId> ops{static_cast<OpId>(rng() % num_ops)};
  const int size = 1 + static_cast<int>(rng() % max_size);
  while (static_cast<int>(ops.size()) < size) {
    const OpId last = ops[rng() % ops.size()];
    const auto& consumers = problem.consumers[problem.ops[last].output];
    if (!consumers.empty() && rng() % 4 != 0) {
      ops.push_back(consumers[rng() % consumers.size()]);
    } else {
      ops.push_back(static_cast<OpId>(rng() % num_ops));
    }
    ops = SortTopologically(rank, ops);
  }
  return ops;
}

// MakeTraversal as it was written before its lines were walked by stride: per entry.
std::optional<std::vector<int64_t>> ReferenceTraversal(TraversalPattern pattern, int64_t rows, int64_t cols) {
  if (pattern == TraversalPattern::kRaster) return std::nullopt;
  std::vector<int64_t> order;
  const bool by_rows = pattern == TraversalPattern::kRowSnake;
  const bool snake = pattern != TraversalPattern::kColumnMajor;
  const int64_t outer = by_rows ? rows : cols;
  const int64_t inner = by_rows ? cols : rows;
  for (int64_t a = 0; a < outer; ++a) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t b = snake && a % 2 == 1 ? inner - 1 - i : i;
      order.push_back(by_rows ? a * cols + b : b * cols + a);
    }
  }
  return order;
}

TEST_CASE("named traversals: MakeTraversal builds the reference's orders, IsTraversal recognises one entry changed") {
  std::mt19937_64 rng(5);
  int changed = 0;
  for (int64_t rows = 0; rows <= 70; rows += 1 + static_cast<int64_t>(rng() % 4)) {
    for (int64_t cols = 0; cols <= 70; cols += 1 + static_cast<int64_t>(rng() % 4)) {
      for (TraversalPattern p : kAllTraversalPatterns) {
        const std::optional<std::vector<int64_t>> built = MakeTraversal(p, rows, cols);
        REQUIRE(built == ReferenceTraversal(p, rows, cols));
        CHECK(IsTraversal(p, rows, cols, built));
        if (built && !built->empty()) {
          std::optional<std::vector<int64_t>> other = built;
          (*other)[rng() % other->size()] += 1 + static_cast<int64_t>(rng() % 3);
          CHECK_FALSE(IsTraversal(p, rows, cols, other));
          ++changed;
        }
      }
    }
  }
  CHECK(changed > 1000);
}

TEST_CASE("named traversals: IsTraversal and IsIndexOrder answer as the built orders do") {
  // Every pattern and grid up to 9 x 9 (empty grids included), against every pattern's order of
  // the same grid and of the transposed one (same size, other entries), and raster's nullopt.
  int checks = 0;
  for (int64_t rows = 0; rows <= 9; ++rows) {
    for (int64_t cols = 0; cols <= 9; ++cols) {
      std::vector<std::optional<std::vector<int64_t>>> orders;
      for (TraversalPattern p : kAllTraversalPatterns) {
        orders.push_back(MakeTraversal(p, rows, cols));
        orders.push_back(MakeTraversal(p, cols, rows));
      }
      std::vector<int64_t> truncated = *MakeTraversal(TraversalPattern::kRowSnake, rows, cols);
      if (!truncated.empty()) {
        truncated.pop_back();
        orders.push_back(truncated);
      }
      for (TraversalPattern p : kAllTraversalPatterns) {
        const std::optional<std::vector<int64_t>> built = MakeTraversal(p, rows, cols);
        for (const auto& order : orders) {
          CHECK(IsTraversal(p, rows, cols, order) == (built == order));
          ++checks;
        }
        bool index_order = built.has_value();
        for (size_t i = 0; built && i < built->size(); ++i) index_order = index_order && (*built)[i] == static_cast<int64_t>(i);
        CHECK(IsIndexOrder(p, rows, cols) == index_order);
      }
    }
  }
  CHECK(checks == 4 * (81 * 9 + 19 * 8));  // 9 orders per grid, 8 on the 19 empty grids
}

TEST_CASE("stamp set: clearing empties it, growing keeps it empty, InsertNew reports repeats") {
  StampSet set;
  set.Clear(4);
  CHECK_FALSE(set.Contains(3));
  CHECK(set.InsertNew(3));
  CHECK_FALSE(set.InsertNew(3));
  set.Insert(1);
  CHECK(set.Contains(1));
  set.Clear(10);
  for (int id = 0; id < 10; ++id) CHECK_FALSE(set.Contains(id));
  set.Insert(9);
  CHECK(set.Contains(9));
  for (int round = 0; round < 1000; ++round) set.Clear(10);
  CHECK_FALSE(set.Contains(9));
}

TEST_CASE("subgraph facts: the one-walk facts, BoundaryInputs and Feeds match their definitions") {
  for (const char* name : {"mlsys-2026-9.json", "mlsys-2026-17.json"}) {
    CAPTURE(name);
    const Problem problem = ReadBundledProblem(name);
    const std::vector<int> rank = TopologicalRanks(problem);
    std::mt19937_64 rng(11);
    OpsFacts facts;
    std::vector<TensorId> inputs, sinks;
    for (int trial = 0; trial < 500; ++trial) {
      const std::vector<OpId> ops = RandomOps(problem, rank, rng, 6);
      const std::vector<TensorId> want_inputs = ReferenceInputs(problem, ops);
      const std::vector<TensorId> want_sinks = ReferenceSinks(problem, ops);
      ComputeOpsFacts(problem, ops, facts);
      CHECK(facts.inputs == want_inputs);
      CHECK(facts.sinks == want_sinks);
      // Appending after other facts leaves them alone and adds the same lists.
      inputs.assign(1, -7);
      sinks.assign(1, -7);
      AppendOpsFacts(problem, ops, inputs, sinks);
      CHECK(std::vector<TensorId>(inputs.begin() + 1, inputs.end()) == want_inputs);
      CHECK(std::vector<TensorId>(sinks.begin() + 1, sinks.end()) == want_sinks);
      CHECK(inputs[0] == -7);
      CHECK(BoundaryInputs(problem, ops) == want_inputs);
      CHECK(ProducedTensors(problem, ops) == ReferenceProduced(problem, ops));

      const std::vector<OpId> to = RandomOps(problem, rank, rng, 4);
      const std::vector<TensorId> made = ReferenceProduced(problem, ops);
      bool feeds = false;
      for (TensorId t : ReferenceInputs(problem, to)) feeds |= std::binary_search(made.begin(), made.end(), t);
      CHECK(Feeds(problem, ops, to) == feeds);
    }
  }
}

TEST_CASE("useful retain: the op-list form agrees with the subgraph form") {
  const Problem problem = ReadBundledProblem("mlsys-2026-17.json");
  const std::vector<int> rank = TopologicalRanks(problem);
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    const std::vector<OpId> ops = RandomOps(problem, rank, rng, 5);
    Subgraph next;
    next.ops = RandomOps(problem, rank, rng, 5);
    // Ask to retain everything it produces and a few tensors it does not.
    std::vector<TensorId> retain = ReferenceProduced(problem, ops);
    retain.push_back(static_cast<TensorId>(rng() % problem.tensors.size()));
    const std::vector<TensorId> by_subgraph = UsefulRetain(problem, ops, retain, &next);
    CHECK(UsefulRetain(problem, ops, retain, &next.ops) == by_subgraph);
    for (TensorId t : by_subgraph) {
      const std::vector<TensorId> next_inputs = ReferenceInputs(problem, next.ops);
      CHECK(std::binary_search(next_inputs.begin(), next_inputs.end(), t));
      CHECK_FALSE(problem.IsGraphOutput(t));
    }
    CHECK(UsefulRetain(problem, ops, retain, static_cast<const Subgraph*>(nullptr)).empty());
  }
}

// Components by their definition: a breadth-first walk over "a produces what b reads" in both
// directions, components listed by their first op in `ops`, each in the order of `ops`.
std::vector<std::vector<OpId>> ReferenceComponents(const Problem& problem, const std::vector<OpId>& ops) {
  const size_t n = ops.size();
  std::vector<int> component(n, -1);
  int count = 0;
  for (size_t start = 0; start < n; ++start) {
    if (component[start] >= 0) continue;
    std::vector<size_t> queue{start};
    component[start] = count;
    for (size_t q = 0; q < queue.size(); ++q) {
      const size_t a = queue[q];
      for (size_t b = 0; b < n; ++b) {
        if (component[b] >= 0) continue;
        auto feeds = [&](size_t x, size_t y) {
          const auto& inputs = problem.ops[ops[y]].inputs;
          return std::find(inputs.begin(), inputs.end(), problem.ops[ops[x]].output) != inputs.end();
        };
        if (feeds(a, b) || feeds(b, a)) {
          component[b] = count;
          queue.push_back(b);
        }
      }
    }
    ++count;
  }
  std::vector<std::vector<OpId>> components(count);
  for (size_t a = 0; a < n; ++a) components[component[a]].push_back(ops[a]);
  return components;
}

TEST_CASE("components: the union-find by positions and the pairwise one (an op listed twice) agree with the definition") {
  std::mt19937_64 rng(77);
  int long_lists = 0;
  std::vector<std::pair<std::string, Problem>> problems;
  for (const char* name : {"mlsys-2026-1.json", "mlsys-2026-5.json", "mlsys-2026-9.json", "mlsys-2026-13.json",
                           "mlsys-2026-17.json"}) {
    problems.emplace_back(name, ReadBundledProblem(name));
  }
  for (int i = 0; i < 10; ++i) {
    problems.emplace_back("random " + std::to_string(i),
                          RandomProblem(rng, kAllDagShapes[i % std::size(kAllDagShapes)], {.min_ops = 80, .max_ops = 300}));
  }
  for (const auto& [name, problem] : problems) {
    const auto num_ops = static_cast<OpId>(problem.ops.size());
    for (int trial = 0; trial < 200; ++trial) {
      // A random subset in random order (long and short ones), sometimes with an op listed twice.
      std::vector<OpId> ops;
      const double keep = std::uniform_real_distribution<double>(0.05, 1.0)(rng);
      for (OpId op = 0; op < num_ops; ++op) {
        if (std::uniform_real_distribution<double>(0, 1)(rng) < keep) ops.push_back(op);
      }
      std::shuffle(ops.begin(), ops.end(), rng);
      if (!ops.empty() && trial % 7 == 0) ops.push_back(ops[rng() % ops.size()]);
      long_lists += ops.size() > 64;
      INFO(name << " trial " << trial << ", " << ops.size() << " ops");
      const auto reference = ReferenceComponents(problem, ops);
      CHECK(Components(problem, ops) == reference);
      CHECK(IsConnected(problem, ops) == (ops.size() <= 1 || reference.size() == 1));
    }
  }
  CHECK(long_lists > 1000);
  // Short lists grown along the edges from one op (connected), sometimes with one more op drawn
  // anywhere (connected or not): IsConnected's both answers on subgraph-sized lists.
  int connected = 0, short_lists = 0;
  for (const auto& [name, problem] : problems) {
    const auto num_ops = static_cast<OpId>(problem.ops.size());
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<OpId> ops{static_cast<OpId>(rng() % num_ops)};
      const size_t size = 1 + rng() % 30;
      for (int tries = 0; tries < 200 && ops.size() < size; ++tries) {
        const Op& op = problem.ops[ops[rng() % ops.size()]];
        std::vector<OpId> next;
        for (TensorId t : op.inputs) {
          if (problem.producer[t] != kNoOp) next.push_back(problem.producer[t]);
        }
        for (OpId c : problem.consumers[op.output]) next.push_back(c);
        if (next.empty()) continue;
        const OpId pick = next[rng() % next.size()];
        if (std::find(ops.begin(), ops.end(), pick) == ops.end()) ops.push_back(pick);
      }
      if (trial % 3 == 0) ops.push_back(static_cast<OpId>(rng() % num_ops));
      std::shuffle(ops.begin(), ops.end(), rng);
      INFO(name << " grown trial " << trial << ", " << ops.size() << " ops");
      const auto reference = ReferenceComponents(problem, ops);
      CHECK(Components(problem, ops) == reference);
      const bool is_connected = ops.size() <= 1 || reference.size() == 1;
      CHECK(IsConnected(problem, ops) == is_connected);
      connected += is_connected;
      short_lists += ops.size() <= 64;
    }
  }
  CHECK(connected > 1000);
  CHECK(short_lists == 3000);
}

TEST_CASE("topological sort: the one- and two-run paths give the plain sort's list") {
  // Lists of the shapes the moves pass (one sorted run, two sorted runs with or without shared
  // ops, an op appended, duplicates) and shuffled ones, on random graphs.
  std::mt19937_64 rng(2024);
  int runs[4] = {};
  for (int g = 0; g < 20; ++g) {
    const Problem problem = RandomProblem(rng, kAllDagShapes[g % std::size(kAllDagShapes)], {.min_ops = 20, .max_ops = 200});
    const std::vector<int> rank = TopologicalRanks(problem);
    const auto num_ops = static_cast<OpId>(problem.ops.size());
    auto subset = [&] {
      std::vector<OpId> ops;
      const double keep = std::uniform_real_distribution<double>(0.0, 0.6)(rng);
      for (OpId op = 0; op < num_ops; ++op) {
        if (std::uniform_real_distribution<double>(0, 1)(rng) < keep) ops.push_back(op);
      }
      return SortTopologicallyReference(rank, ops);
    };
    for (int trial = 0; trial < 500; ++trial) {
      std::vector<OpId> ops = subset();
      const int shape = trial % 4;
      if (shape == 1 || shape == 2) {
        const std::vector<OpId> other = subset();
        ops.insert(ops.end(), other.begin(), other.end());  // two runs (shared ops in both at times)
        if (shape == 2 && !other.empty()) ops.push_back(other.front());  // a third run
      } else if (shape == 3) {
        std::shuffle(ops.begin(), ops.end(), rng);
        if (!ops.empty()) ops.push_back(ops[rng() % ops.size()]);
      }
      if (num_ops > 0 && trial % 5 == 0) ops.push_back(static_cast<OpId>(rng() % num_ops));
      ++runs[shape];
      INFO("graph " << g << " trial " << trial << ", " << ops.size() << " ops");
      CHECK(SortTopologically(rank, ops) == SortTopologicallyReference(rank, ops));
    }
  }
  CHECK(runs[1] == 2500);
}

TEST_CASE("grown facts: GrowOpsFacts after pulling producers of inputs gives ComputeOpsFacts' facts") {
  // A repair's rounds: an op list, then producers of some of its boundary inputs pulled in,
  // round after round, on the bundled problems and random graphs.
  std::mt19937_64 rng(909);
  std::vector<Problem> problems;
  for (const char* name : {"mlsys-2026-5.json", "mlsys-2026-13.json", "mlsys-2026-17.json"}) {
    problems.push_back(ReadBundledProblem(name));
  }
  for (int g = 0; g < 8; ++g) {
    problems.push_back(RandomProblem(rng, kAllDagShapes[g % std::size(kAllDagShapes)], {.min_ops = 30, .max_ops = 250}));
  }
  int rounds = 0, pulled_total = 0;
  for (const Problem& problem : problems) {
    const std::vector<int> rank = TopologicalRanks(problem);
    const auto num_ops = static_cast<OpId>(problem.ops.size());
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<OpId> ops;
      const double keep = std::uniform_real_distribution<double>(0.01, 0.5)(rng);
      for (OpId op = 0; op < num_ops; ++op) {
        if (std::uniform_real_distribution<double>(0, 1)(rng) < keep) ops.push_back(op);
      }
      if (ops.empty()) ops.push_back(static_cast<OpId>(rng() % num_ops));
      ops = SortTopologicallyReference(rank, ops);
      OpsFacts facts;
      ComputeOpsFacts(problem, ops, facts);
      for (int round = 0; round < 4; ++round) {
        std::vector<OpId> pulled;
        for (TensorId t : facts.inputs) {
          const OpId p = problem.producer[t];
          if (p != kNoOp && rng() % 3 != 0) pulled.push_back(p);
        }
        if (pulled.empty()) break;
        ops.insert(ops.end(), pulled.begin(), pulled.end());
        ops = SortTopologicallyReference(rank, ops);
        OpsFacts grown, reference;
        GrowOpsFacts(problem, rank, ops, facts.inputs, facts.sinks, pulled, grown);
        ComputeOpsFacts(problem, ops, reference);
        INFO("trial " << trial << " round " << round << ", " << ops.size() << " ops, " << pulled.size() << " pulled");
        REQUIRE(grown == reference);
        facts = grown;
        ++rounds;
        pulled_total += static_cast<int>(pulled.size());
      }
    }
  }
  MESSAGE(rounds << " rounds, " << pulled_total << " ops pulled");
  CHECK(rounds > 3000);
}


// Split's order as plain Kahn: a position is ready when each producer of its inputs that the list
// holds has a copy placed; the same draw among the ready positions in list order.
std::vector<OpId> ReferenceRandomOrder(const Problem& problem, const std::vector<OpId>& ops, move_kit::Rng& rng) {
  std::vector<char> done(ops.size(), 0);
  std::vector<OpId> order;
  while (order.size() < ops.size()) {
    std::vector<int> ready;
    for (size_t a = 0; a < ops.size(); ++a) {
      bool waits = false;
      for (TensorId t : problem.ops[ops[a]].inputs) {
        const OpId p = problem.producer[t];
        if (p == kNoOp || std::find(ops.begin(), ops.end(), p) == ops.end()) continue;
        bool placed = false;
        for (size_t b = 0; b < ops.size(); ++b) placed |= done[b] && ops[b] == p;
        waits |= !placed;
      }
      if (!done[a] && !waits) ready.push_back(static_cast<int>(a));
    }
    if (ready.empty()) return ops;
    const int a = ready[move_kit::Uniform(rng, static_cast<int>(ready.size()))];
    done[a] = 1;
    order.push_back(ops[a]);
  }
  return order;
}

// A random graph of equal-shape Pointwise ops reading one to three earlier tensors, drawn with
// repeats (x * x): the readers of an op's output twice that the bundled problems lack.
Problem RandomPointwiseGraph(std::mt19937_64& rng) {
  Problem problem;
  problem.native = 32;
  const int inputs = 1 + static_cast<int>(rng() % 3);
  for (int t = 0; t < inputs; ++t) problem.tensors.push_back({32, 32});
  const int num_ops = 3 + static_cast<int>(rng() % 20);
  for (int op = 0; op < num_ops; ++op) {
    std::vector<TensorId> in(1 + rng() % 3);
    for (TensorId& t : in) t = static_cast<TensorId>(rng() % problem.tensors.size());
    problem.tensors.push_back({32, 32});
    problem.ops.push_back({OpKind::Pointwise, in, static_cast<TensorId>(problem.tensors.size() - 1), 1});
  }
  problem.fast_memory_capacity = 1 << 20;
  problem.slow_memory_bandwidth = 1;
  REQUIRE(problem.Finalize().empty());
  return problem;
}

TEST_CASE("random order: Split's order is the plain Kahn draw's, with the same draws, on lists with and without repeats") {
  std::mt19937_64 rng(23);
  int lists = 0, repeated = 0, twice_read = 0;
  const Problem bundled = ReadBundledProblem("mlsys-2026-17.json");
  const std::vector<int> bundled_rank = TopologicalRanks(bundled);
  for (int trial = 0; trial < 3000; ++trial) {
    const Problem random = RandomPointwiseGraph(rng);
    const bool use_bundled = trial % 3 == 0;
    const Problem& problem = use_bundled ? bundled : random;
    const std::vector<int> rank = use_bundled ? bundled_rank : TopologicalRanks(problem);
    std::vector<OpId> ops = RandomOps(problem, rank, rng, std::min<int>(12, static_cast<int>(problem.ops.size())));
    if (rng() % 5 == 0) {  // an op listed twice, as a list under edit may hold it
      ops.insert(ops.begin() + static_cast<long>(rng() % (ops.size() + 1)), ops[rng() % ops.size()]);
      ++repeated;
    }
    if (rng() % 4 == 0) std::shuffle(ops.begin(), ops.end(), rng);  // any list order, not only topological
    for (OpId op : ops) {
      const auto& in = problem.ops[op].inputs;
      for (size_t i = 1; i < in.size(); ++i) twice_read += std::find(in.begin(), in.begin() + i, in[i]) != in.begin() + i;
    }
    const uint64_t seed = rng();
    move_kit::Rng fast_rng(seed), reference_rng(seed);
    const std::vector<OpId> fast = move_kit::RandomOrder(problem, ops, fast_rng);
    const std::vector<OpId> reference = ReferenceRandomOrder(problem, ops, reference_rng);
    INFO("trial " << trial << ", " << ops.size() << " ops");
    REQUIRE(fast == reference);
    CHECK(fast_rng() == reference_rng());
    // A topological order of the list (every op after the copies of its producers that the list
    // holds, but a repeat after the first) and a permutation of it.
    std::vector<OpId> sorted_fast = fast, sorted_ops = ops;
    std::sort(sorted_fast.begin(), sorted_fast.end());
    std::sort(sorted_ops.begin(), sorted_ops.end());
    CHECK(sorted_fast == sorted_ops);
    for (size_t a = 0; a < fast.size(); ++a) {
      for (TensorId t : problem.ops[fast[a]].inputs) {
        const OpId p = problem.producer[t];
        if (p == kNoOp || std::find(ops.begin(), ops.end(), p) == ops.end()) continue;
        CHECK(std::find(fast.begin(), fast.begin() + static_cast<long>(a), p) != fast.begin() + static_cast<long>(a));
      }
    }
    ++lists;
  }
  MESSAGE(lists << " lists, " << repeated << " with an op twice, " << twice_read << " inputs read twice by one op");
  CHECK(repeated > 400);
  CHECK(twice_read > 1000);
}

}  // namespace
}  // namespace annealer
