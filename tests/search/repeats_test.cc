// The repeated-block start (search/repeats/repeats.h) and sub-problem extraction (eval/model/subproblem.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>

#include "eval/oracle.h"
#include "eval/random_schedule.h"
#include "eval/cost/subgraph_cost.h"
#include "eval/model/subproblem.h"
#include "search/starts/baseline.h"
#include "search/driver.h"
#include "search/repeats/repeats.h"
#include "src/io/contest/problem_stack.h"
#include "tests/support/test_files.h"

namespace annealer {
namespace {

Problem Bundled(int number) { return testing::ReadBundledProblem("mlsys-2026-" + std::to_string(number) + ".json"); }

Problem Stack(const Problem& one, int copies) { return StackProblem(one, PlanStack(one, std::nullopt), copies); }

// The same problem with op and tensor ids permuted at random (operand order kept).
// `op_perm` (optional): the new id of every old op.
Problem Relabelled(const Problem& problem, std::mt19937_64& rng, std::vector<OpId>* op_perm_out = nullptr) {
  std::vector<OpId> op_perm(problem.ops.size());
  std::iota(op_perm.begin(), op_perm.end(), 0);
  std::shuffle(op_perm.begin(), op_perm.end(), rng);
  std::vector<TensorId> tensor_perm(problem.tensors.size());
  std::iota(tensor_perm.begin(), tensor_perm.end(), 0);
  std::shuffle(tensor_perm.begin(), tensor_perm.end(), rng);
  Problem out;
  out.fast_memory_capacity = problem.fast_memory_capacity;
  out.slow_memory_bandwidth = problem.slow_memory_bandwidth;
  out.native = problem.native;
  out.tensors.resize(problem.tensors.size());
  for (size_t t = 0; t < problem.tensors.size(); ++t) out.tensors[tensor_perm[t]] = problem.tensors[t];
  out.ops.resize(problem.ops.size());
  for (size_t o = 0; o < problem.ops.size(); ++o) {
    Op op = problem.ops[o];
    for (TensorId& t : op.inputs) t = tensor_perm[t];
    op.output = tensor_perm[op.output];
    out.ops[op_perm[o]] = op;
  }
  REQUIRE(out.Finalize().empty());
  if (op_perm_out) *op_perm_out = op_perm;
  return out;
}

// Per block: its class's size and its ops, in execution order ("32x19 32x19 ...").
std::string Describe(const RepeatPlan& plan) {
  std::string s;
  for (const RepeatBlock& b : plan.blocks) {
    if (!s.empty()) s += ' ';
    s += std::to_string(plan.count[b.class_id]);
    s += 'x';
    s += std::to_string(b.sub.op_ids.size());
  }
  return s;
}

std::string Repeat(const std::string& item, int times) {
  std::string s;
  for (int i = 0; i < times; ++i) s += (i ? " " : "") + item;
  return s;
}

// Every op in exactly one block; blocks of a class have equal standalone problems.
void CheckPartition(const Problem& problem, const RepeatPlan& plan) {
  std::vector<int> seen(problem.ops.size(), 0);
  for (const RepeatBlock& b : plan.blocks) {
    for (const OpId op : b.sub.op_ids) ++seen[op];
    CHECK(b.sub.problem == plan.blocks[plan.representative[b.class_id]].sub.problem);
    CHECK(ExportsAreSinks(problem, b.sub));
  }
  CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
}

// The copy (of `copy_ops` ops each) every block's ops come from, or -1 when a block mixes copies;
// `original` maps an op id back to the unshuffled stack's.
std::vector<int> CopyOfBlocks(const RepeatPlan& plan, int copy_ops, const std::vector<OpId>& original) {
  std::vector<int> copies;
  for (const RepeatBlock& b : plan.blocks) {
    int copy = original[b.sub.op_ids[0]] / copy_ops;
    for (const OpId op : b.sub.op_ids) {
      if (original[op] / copy_ops != copy) copy = -1;
    }
    copies.push_back(copy);
  }
  return copies;
}

std::vector<OpId> Identity(size_t n) {
  std::vector<OpId> ids(n);
  std::iota(ids.begin(), ids.end(), 0);
  return ids;
}

TEST_CASE("subproblem: a copy of a stack as a standalone problem equals the single problem's, and maps back") {
  const Problem one = Bundled(5);
  const Problem three = Stack(one, 3);
  const std::vector<OpId> all = Identity(one.ops.size());
  const Subproblem single = ExtractSubproblem(one, all);
  CHECK(single.problem.ops.size() == 19);
  for (int copy = 0; copy < 3; ++copy) {
    std::vector<OpId> ops = all;
    for (OpId& op : ops) op += copy * 19;
    const Subproblem sub = ExtractSubproblem(three, ops);
    CHECK(sub.problem == single.problem);
    CHECK(ExportsAreSinks(three, sub));
    const Schedule mapped = MapScheduleToFull(sub, BuildBaseline(sub.problem));
    REQUIRE(mapped.subgraphs.size() == 19);
    for (const Subgraph& sg : mapped.subgraphs) CHECK(sg.ops[0] / 19 == copy);
  }
}

TEST_CASE("subproblem: a set that exports a tensor it also consumes is refused") {
  // op 0: t0 -> t1; op 1: t1 -> t2; op 2: t1 -> t3 (Pointwise, 128x128 each).
  Problem p;
  p.tensors.assign(4, Tensor{128, 128});
  p.ops = {Op{OpKind::Pointwise, {0}, 1, 100}, Op{OpKind::Pointwise, {1}, 2, 100}, Op{OpKind::Pointwise, {1}, 3, 100}};
  p.fast_memory_capacity = 100000;
  p.slow_memory_bandwidth = 10;
  REQUIRE(p.Finalize().empty());
  const std::vector<OpId> first = {0};
  const std::vector<OpId> first_two = {0, 1};
  const Subproblem alone = ExtractSubproblem(p, first);
  CHECK(ExportsAreSinks(p, alone));
  CHECK(alone.problem.IsGraphOutput(1));
  const Subproblem two = ExtractSubproblem(p, first_two);
  CHECK_FALSE(ExportsAreSinks(p, two));  // t1 leaves for op 2 but op 1 consumes it inside
  CHECK(two.tensor_ids == std::vector<TensorId>{0, 1, 2});
}

TEST_CASE("repeats: stacks of the bundled problems are cut into their copies, also with shuffled ids") {
  std::mt19937_64 rng(7);
  struct Case {
    int number, copies;
    int block_ops, blocks;  // each block = ops [k * block_ops, (k + 1) * block_ops) of the stack
  };
  // -1 has 5 ops, under min_block_ops (16): four copies make one block. -9 is two equal halves.
  for (const Case& c : {Case{5, 12, 19, 12}, Case{9, 7, 16, 14}, Case{17, 4, 103, 4}, Case{1, 24, 20, 6}}) {
    CAPTURE(c.number);
    const Problem stack = Stack(Bundled(c.number), c.copies);
    const std::string expected = Repeat(std::to_string(c.blocks) + "x" + std::to_string(c.block_ops), c.blocks);
    std::vector<int> in_order(c.blocks);
    std::iota(in_order.begin(), in_order.end(), 0);
    const RepeatPlan plan = FindRepeatedBlocks(stack);
    CHECK(Describe(plan) == expected);
    CheckPartition(stack, plan);
    CHECK(CopyOfBlocks(plan, c.block_ops, Identity(stack.ops.size())) == in_order);
    // Shuffled op and tensor ids: the same blocks.
    std::vector<OpId> op_perm;
    const Problem shuffled = Relabelled(stack, rng, &op_perm);
    std::vector<OpId> original(op_perm.size());
    for (size_t o = 0; o < op_perm.size(); ++o) original[op_perm[o]] = static_cast<OpId>(o);
    const RepeatPlan again = FindRepeatedBlocks(shuffled);
    CHECK(Describe(again) == expected);
    CheckPartition(shuffled, again);
    CHECK(CopyOfBlocks(again, c.block_ops, original) == in_order);
  }
}

// A random problem that PlanStack accepts (one graph output, an input of its shape), if one of
// 50 draws is (some shapes never have a single output).
std::optional<Problem> StackableRandom(std::mt19937_64& rng, DagShape shape) {
  RandomProblemOptions options;
  options.min_ops = 4;
  options.max_ops = 10;
  for (int draw = 0; draw < 50; ++draw) {
    Problem p = RandomProblem(rng, shape, options);
    try {
      PlanStack(p, std::nullopt);
      return p;
    } catch (const StackError&) {
    }
  }
  return std::nullopt;
}

TEST_CASE("repeats: stacks of random DAGs are found whatever the ids, and the composed schedule costs the blocks' sum") {
  std::mt19937_64 rng(11);
  int found = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const DagShape shape = kAllDagShapes[trial % std::size(kAllDagShapes)];
    const std::optional<Problem> drawn = StackableRandom(rng, shape);
    if (!drawn) continue;
    const Problem& one = *drawn;
    const int copies = 3 + trial % 6;
    CAPTURE(trial);
    const Problem stack = Stack(one, copies);
    RepeatOptions options;
    options.min_block_ops = 1;
    const RepeatPlan plan = FindRepeatedBlocks(stack, options);
    REQUIRE(!plan.blocks.empty());
    ++found;
    CheckPartition(stack, plan);
    CHECK(plan.repeated_ops() == static_cast<int>(stack.ops.size()));
    // The ids do not matter: the same blocks, in the same order, after shuffling them.
    std::vector<OpId> op_perm;
    const Problem shuffled = Relabelled(stack, rng, &op_perm);
    const RepeatPlan again = FindRepeatedBlocks(shuffled, options);
    CHECK(Describe(again) == Describe(plan));
    CheckPartition(shuffled, again);
    // Any valid schedule per class composes into a valid schedule costing the sum of the blocks.
    std::vector<Schedule> schedules;
    Latency sum = 0;
    for (size_t c = 0; c < again.count.size(); ++c) {
      const Problem& sub = again.blocks[again.representative[c]].sub.problem;
      schedules.push_back(BuildBaseline(sub));
      const Evaluation e = EvaluateOracle(sub, schedules.back());
      REQUIRE(e.ok());
      sum += e.total * again.count[c];
    }
    const Evaluation whole = EvaluateOracle(shuffled, ComposeBlockSchedules(again, schedules));
    REQUIRE(whole.ok());
    CHECK(whole.total == doctest::Approx(sum).epsilon(1e-12));
  }
  CHECK(found >= 30);
}

TEST_CASE("repeats: no repetition, and near-copies stay apart") {
  CHECK(FindRepeatedBlocks(Bundled(1)).blocks.empty());
  // 40 Pointwise ops in a chain, all base costs different: nothing repeats.
  Problem chain;
  chain.tensors.assign(41, Tensor{256, 128});
  for (int i = 0; i < 40; ++i) chain.ops.push_back(Op{OpKind::Pointwise, {i}, i + 1, 100.0 + i});
  chain.fast_memory_capacity = 100000;
  chain.slow_memory_bandwidth = 10;
  REQUIRE(chain.Finalize().empty());
  CHECK(FindRepeatedBlocks(chain).blocks.empty());
  // The same chain with equal costs: 40 repeats of one op; two blocks of 20 cover more than
  // blocks of min_block_ops (16) would.
  for (Op& op : chain.ops) op.base_cost = 100;
  CHECK(Describe(FindRepeatedBlocks(chain)) == "2x20 2x20");
  // The bundled problems have repeated parts of their own (-9 is two equal halves), but they are
  // under repeats.min_ops, so the search never runs the start on them.
  CHECK(Describe(FindRepeatedBlocks(Bundled(9))) == "2x16 2x16");
  for (int number : {1, 5, 9, 13, 17}) CHECK(static_cast<int64_t>(Bundled(number).ops.size()) < SearchParams{}.repeats.min_ops);
  const Problem one = Bundled(5);
  const Problem stack = Stack(one, 8);
  // Copy 3 differs in one base cost; copy 5 in one Pointwise op's inputs (a graph input more, of
  // its shape, so the problem stays valid): neither joins the class.
  for (int variant = 0; variant < 2; ++variant) {
    CAPTURE(variant);
    Problem changed = stack;
    const int copy = variant == 0 ? 3 : 5;
    OpId touched = copy * 19 + 7;
    if (variant == 0) {
      changed.ops[touched].base_cost += 1;
    } else {
      for (touched = copy * 19; touched < (copy + 1) * 19; ++touched) {
        if (changed.ops[touched].kind == OpKind::Pointwise) break;
      }
      REQUIRE(touched < (copy + 1) * 19);
      changed.tensors.push_back(changed.tensors[changed.ops[touched].output]);
      changed.ops[touched].inputs.push_back(static_cast<TensorId>(changed.tensors.size() - 1));
      REQUIRE(changed.Finalize().empty());
    }
    const RepeatPlan plan = FindRepeatedBlocks(changed);
    CheckPartition(changed, plan);
    int class_of_touched = -1;
    for (const RepeatBlock& b : plan.blocks) {
      if (std::find(b.sub.op_ids.begin(), b.sub.op_ids.end(), touched) != b.sub.op_ids.end()) class_of_touched = b.class_id;
    }
    REQUIRE(class_of_touched >= 0);
    CHECK(plan.count[class_of_touched] == 1);
    // The seven unchanged copies still form one class.
    CHECK(Describe(plan) == (variant == 0 ? "7x19 7x19 7x19 1x19 7x19 7x19 7x19 7x19"
                                          : "7x19 7x19 7x19 7x19 7x19 1x19 7x19 7x19"));
  }
}

// A chain of residual units x -> A -> B -> C(+x) -> D -> x' (Pointwise, 128x128): the cut after C
// (the sum alone) is as narrow as the cut after D (the unit's output). Unit 0's A costs more, so
// a run of units 1.. covers units - 1 blocks cut at either: [A, B, C, D] after unit 0, or
// [D, A, B, C] from unit 0's D on (residual layers cut after or before the closing ReLU).
Problem ResidualChain(int units) {
  Problem p;
  p.tensors.assign(1 + 4 * units, Tensor{128, 128});
  TensorId x = 0;
  for (int u = 0; u < units; ++u) {
    const TensorId t = 1 + 4 * u;
    p.ops.push_back(Op{OpKind::Pointwise, {x}, t, u == 0 ? 150.0 : 100.0});
    p.ops.push_back(Op{OpKind::Pointwise, {t}, t + 1, 200});
    p.ops.push_back(Op{OpKind::Pointwise, {t + 1, x}, t + 2, 50});
    p.ops.push_back(Op{OpKind::Pointwise, {t + 2}, t + 3, 30});
    x = t + 3;
  }
  p.fast_memory_capacity = 100000;
  p.slow_memory_bandwidth = 10;
  REQUIRE(p.Finalize().empty());
  return p;
}

// Per block of a chain: its ops ("4 4 ...").
std::string Sizes(const std::vector<const RepeatBlock*>& chain) {
  std::string s;
  for (const RepeatBlock* b : chain) {
    if (!s.empty()) s += ' ';  // appended apart: GCC 12 flags `"" + std::to_string` with a false -Wrestrict
    s += std::to_string(b->sub.op_ids.size());
  }
  return s;
}

TEST_CASE("repeats: where two phases of a run tie, the other phase's blocks are kept and the cheapest chain composes") {
  const Problem chain = ResidualChain(6);
  RepeatOptions options;
  options.min_block_ops = 1;
  // Without alternatives: the phase in step with the graph's start, as before.
  const RepeatPlan alone = FindRepeatedBlocks(chain, options);
  CHECK(Describe(alone) == "1x4 5x4 5x4 5x4 5x4 5x4");
  CHECK(alone.alternative_blocks.empty());
  CHECK(alone.alternatives == 0);
  options.phase_alternatives = 4;
  const RepeatPlan plan = FindRepeatedBlocks(chain, options);
  CHECK(Describe(plan) == Describe(alone));
  CheckPartition(chain, plan);
  // One tied run: one other partition, the head [A, B, C] of unit 0, five [D, A, B, C] and the
  // last D, each a class of its own.
  CHECK(plan.alternatives == 1);
  CHECK(plan.primary_classes == 2);
  CHECK(plan.classes() == 5);
  std::vector<const RepeatBlock*> other;
  for (const RepeatBlock& b : plan.alternative_blocks) other.push_back(&b);
  CHECK(Sizes(other) == "3 4 4 4 4 4 1");
  int position = 0;
  for (const RepeatBlock* b : other) {
    CHECK(b->begin == position);
    CHECK(b->class_id >= plan.primary_classes);
    CHECK(b->sub.problem == plan.ClassBlock(b->class_id).sub.problem);
    CHECK(ExportsAreSinks(chain, b->sub));
    position = b->end;
  }
  CHECK(position == static_cast<int>(chain.ops.size()));
  CHECK(plan.count == std::vector<int>{1, 5, 1, 5, 1});
  // Each class's baseline: the cheapest chain's composition is valid and costs its blocks' sum,
  // at most the chosen partition's.
  std::vector<Schedule> schedules;
  std::vector<Latency> totals;
  for (int c = 0; c < plan.classes(); ++c) {
    const Problem& sub = plan.ClassBlock(c).sub.problem;
    schedules.push_back(BuildBaseline(sub));
    const Evaluation e = EvaluateOracle(sub, schedules.back());
    REQUIRE(e.ok());
    totals.push_back(e.total);
  }
  const std::vector<char> solved(plan.classes(), 1);
  auto sum_of = [&](const std::vector<const RepeatBlock*>& blocks) {
    Latency sum = 0;
    for (const RepeatBlock* b : blocks) sum += totals[b->class_id];
    return sum;
  };
  std::vector<const RepeatBlock*> primary;
  for (const RepeatBlock& b : plan.blocks) primary.push_back(&b);
  const std::vector<const RepeatBlock*> cheapest = CheapestChain(plan, totals, solved);
  CHECK(sum_of(cheapest) <= sum_of(primary));
  const Evaluation composed = EvaluateOracle(chain, ComposeBlockSchedules(cheapest, schedules));
  REQUIRE(composed.ok());
  CHECK(composed.total == doctest::Approx(sum_of(cheapest)).epsilon(1e-12));
  // The other phase's classes made cheaper: the chain is the other partition; made dearer, or
  // left unsolved, the chosen one.
  std::vector<Latency> cheaper = totals;
  for (int c = plan.primary_classes; c < plan.classes(); ++c) cheaper[c] = 0.5 * totals[c];
  CHECK(CheapestChain(plan, cheaper, solved) == other);
  const Evaluation other_composed = EvaluateOracle(chain, ComposeBlockSchedules(other, schedules));
  REQUIRE(other_composed.ok());
  CHECK(other_composed.total == doctest::Approx(sum_of(other)).epsilon(1e-12));
  std::vector<Latency> dearer = totals;
  for (int c = plan.primary_classes; c < plan.classes(); ++c) dearer[c] = 2 * totals[c];
  CHECK(CheapestChain(plan, dearer, solved) == primary);
  std::vector<char> some(plan.classes(), 1);
  some[plan.primary_classes] = 0;
  CHECK(CheapestChain(plan, cheaper, some) == primary);
  // The cap: none kept at 0 (above); shuffled ids keep the same blocks.
  std::mt19937_64 rng(5);
  const RepeatPlan again = FindRepeatedBlocks(Relabelled(chain, rng), options);
  CHECK(again.alternatives == 1);
  std::vector<const RepeatBlock*> again_other;
  for (const RepeatBlock& b : again.alternative_blocks) again_other.push_back(&b);
  CHECK(Sizes(again_other) == "3 4 4 4 4 4 1");
}

TEST_CASE("repeats: the search solves both phases' classes from round 2, deterministically, and ends valid") {
  const Problem chain = ResidualChain(6);
  auto search = [&](int64_t alternatives, int64_t rounds) {
    SearchParams params;
    params.seed = 3;
    params.threads = 2;
    params.deterministic = true;
    params.epoch_moves = 200;
    params.max_epochs = 2;
    params.repeats.deterministic_epochs = 2;
    params.repeats.deterministic_rounds = rounds;
    params.repeats.min_ops = 2;
    params.repeats.min_block_ops = 1;
    params.repeats.phase_alternatives = alternatives;
    std::atomic<bool> stop{false};
    return RunSearch(chain, params, std::chrono::steady_clock::now() + std::chrono::hours(1), stop, {});
  };
  const SearchSummary before = search(0, 1);
  REQUIRE(before.repeats.has_value());
  CHECK(before.repeats->alternatives == 0);
  CHECK(before.repeats->classes == 2);
  // One round (a 10-s run, the deterministic preset): the alternatives' classes wait for a
  // second round, so the run is the one without them, to the byte.
  const SearchSummary one = search(2, 1);
  REQUIRE(one.repeats.has_value());
  CHECK(one.repeats->alternatives == 1);
  CHECK(one.repeats->alternative_classes == 3);
  CHECK(one.repeats->chain_total == 0);
  CHECK(one.best == before.best);
  CHECK(one.best_total == before.best_total);
  CHECK(one.repeats->total == before.repeats->total);

  const SearchSummary first = search(2, 3);
  REQUIRE(first.repeats.has_value());
  const RepeatResult& r = *first.repeats;
  CHECK(r.note == "");
  CHECK(r.alternatives == 1);
  CHECK(r.alternative_classes == 3);
  CHECK(r.classes == 5);
  CHECK(r.blocks == 6);
  // Round 1 is the single round's; later rounds solve the other phase's classes too and compose
  // the cheapest chain when it is another partition; the composition taken is at or below round 1's.
  CHECK(r.total_first == before.repeats->total_first);
  CHECK(r.total <= r.total_first * (1 + 1e-12));
  CHECK(r.rounds >= 2);
  CHECK(EvaluateOracle(chain, first.best).total == doctest::Approx(first.best_total).epsilon(1e-12));
  const SearchSummary second = search(2, 3);
  CHECK(second.best == first.best);
  CHECK(second.repeats->total == r.total);
  CHECK(second.repeats->chain_total == r.chain_total);
}

TEST_CASE("repeats: parameters are checked against each other") {
  SearchParams params;
  CHECK(ValidateParams(params) == "");
  params.repeats.min_block_ops = 500;
  CHECK(ValidateParams(params) == "repeats.min_block_ops = 500 exceeds repeats.max_block_ops = 400");
  params = SearchParams{};
  params.repeats.time_share = 0.95;
  CHECK(ValidateParams(params) == "exact.time_share + repeats.time_share = 1.05 exceeds 1");
}

SearchSummary DeterministicSearch(const Problem& problem) {
  SearchParams params;
  params.seed = 3;
  params.threads = 2;
  params.deterministic = true;
  params.epoch_moves = 200;
  params.max_epochs = 2;
  params.repeats.deterministic_epochs = 2;
  std::atomic<bool> stop{false};
  return RunSearch(problem, params, std::chrono::steady_clock::now() + std::chrono::hours(1), stop, {});
}

TEST_CASE("repeats: the search's start on 12 copies of -5 is 12 optimal copies, deterministically") {
  const Problem stack = Stack(Bundled(5), 12);
  const SearchSummary first = DeterministicSearch(stack);
  REQUIRE(first.repeats.has_value());
  const RepeatResult& r = *first.repeats;
  CHECK(r.note == "");
  CHECK(r.blocks == 12);
  CHECK(r.classes == 1);
  CHECK(r.repeated_blocks == 12);
  CHECK(r.largest_class == 12);
  CHECK(r.block_ops == 19);
  // The nested search's exact solver reaches -5's optimum, 777,693.9 (docs/exact-solver.md).
  CHECK(r.total == doctest::Approx(12 * 777693.86666666).epsilon(1e-9));
  CHECK(first.best_total <= r.total);
  CHECK(first.improvements_by_kind.count("repeat") == 1);
  CHECK(EvaluateOracle(stack, first.best).total == doctest::Approx(first.best_total).epsilon(1e-12));
  const SearchSummary second = DeterministicSearch(stack);
  CHECK(second.best == first.best);
  CHECK(second.best_total == first.best_total);
  CHECK(second.repeats->total == r.total);
  // One copy changed: two classes, the one-off block solved on its own.
  Problem changed = stack;
  changed.ops[3 * 19 + 7].base_cost += 1;
  const SearchSummary mixed = DeterministicSearch(changed);
  REQUIRE(mixed.repeats.has_value());
  CHECK(mixed.repeats->note == "");
  CHECK(mixed.repeats->blocks == 12);
  // The changed copy makes a phase tie (both phases cover as many blocks): its partition's three
  // classes wait for a second round, which a deterministic run of one round does not have.
  CHECK(mixed.repeats->classes - mixed.repeats->alternative_classes == 2);
  CHECK(mixed.repeats->alternatives == 1);
  CHECK(mixed.repeats->searched_classes == 2);
  CHECK(mixed.repeats->repeated_blocks == 11);
  CHECK(mixed.repeats->largest_class == 11);
  // A higher base cost never makes a block cheaper than -5's optimum.
  CHECK(mixed.repeats->total >= 12 * 777693.86666666 * (1 - 1e-12));
  CHECK(mixed.best_total <= mixed.repeats->total);
  CHECK(EvaluateOracle(changed, mixed.best).ok());
  // Below repeats.min_ops (120) the start does not run: the bundled problems search as before.
  CHECK_FALSE(DeterministicSearch(Stack(Bundled(5), 6)).repeats.has_value());
}

TEST_CASE("repeats: in free mode the start runs beside the workers' first epochs and its schedule joins the pool") {
  const Problem stack = Stack(Bundled(5), 12);
  auto search = [&](int threads, bool overlap) {
    SearchParams params;
    params.seed = 3;
    params.threads = threads;
    params.epoch_moves = 200;
    params.max_epochs = 3;
    params.repeats.overlap = overlap;
    // As many states as the deterministic preset gives: enough for -5's block (see above), and
    // the solver on the whole stack ends by them, not by its share of the deadline.
    params.exact.max_states = 1000;
    std::atomic<bool> stop{false};
    // A work budget ends the workers; the block class ends when its exact solver proves it, long
    // before its share of this deadline.
    return RunSearch(stack, params, std::chrono::steady_clock::now() + std::chrono::minutes(10), stop, {});
  };
  for (const auto& [threads, overlap] : {std::pair{2, true}, std::pair{2, false}, std::pair{1, true}}) {
    CAPTURE(threads);
    CAPTURE(overlap);
    const SearchSummary summary = search(threads, overlap);
    REQUIRE(summary.repeats.has_value());
    const RepeatResult& r = *summary.repeats;
    CHECK(r.overlapped == (overlap && threads >= 2));
    CHECK(r.note == "");
    // The exact solver proves the block before its workers move, unless the machine is so loaded
    // that its share of the nested search's time runs out first (seen at load 10 on two cores:
    // 1,034 moves); then the block proof below proves the class instead.
    CHECK(r.proof_runs <= 1);
    if (r.proof_runs == 0) CHECK(r.moves == 0);
    CHECK(r.total == doctest::Approx(12 * 777693.86666666).epsilon(1e-9));
    // The one class is proven within the exact solver's family (-5's bound is 440,183: not met).
    CHECK(r.classes == 1);
    CHECK(r.exact_optimal == 1);
    CHECK(r.bound_met == 0);
    // Published when the thread joined, whenever that was: the best is at least as good.
    CHECK(summary.best_total <= r.total * (1 + 1e-12));
    CHECK(EvaluateOracle(stack, summary.best).total == doctest::Approx(summary.best_total).epsilon(1e-12));
    CHECK(summary.moves > 0);
    CHECK(summary.worker_seconds > 0);
    CHECK(summary.worker_seconds <= summary.search_seconds * (1 + 1e-9));
    // On a composed graph the block proofs replace the exact solver's run on the whole graph.
    CHECK_FALSE(summary.exact.has_value());
  }
}

TEST_CASE("repeats: the block proofs prove a class the nested search left unproven, and take its optimum") {
  const Problem stack = Stack(Bundled(5), 12);
  auto search = [&](bool deterministic, int threads, int64_t proof_states, int64_t max_subgraph_ops = 64) {
    SearchParams params;
    params.exact.max_subgraph_ops = max_subgraph_ops;
    params.seed = 3;
    params.threads = threads;
    params.deterministic = deterministic;
    params.epoch_moves = 200;
    params.max_epochs = 2;
    params.repeats.deterministic_epochs = 2;
    params.repeats.proof_states = proof_states;
    // No exact solver inside the nested search (nor on the whole graph): only the proofs prove.
    params.exact.time_share = 0;
    std::atomic<bool> stop{false};
    return RunSearch(stack, params, std::chrono::steady_clock::now() + std::chrono::minutes(10), stop, {});
  };
  // Without proofs the nested search's 2 epochs leave -5's block above its optimum, unproven.
  const SearchSummary unproven = search(true, 2, 0);
  REQUIRE(unproven.repeats.has_value());
  CHECK(unproven.repeats->proof_runs == 0);
  CHECK(unproven.repeats->exact_optimal == 0);
  CHECK(unproven.repeats->bound_met == 0);
  CHECK(unproven.repeats->total > 12 * 777693.86666666 * (1 + 1e-6));
  // With them (-5 needs 740 states, docs/exact-solver.md): one run, the class proven, the
  // composition redone at 12 x -5's optimum, deterministically; in free mode beside the workers
  // (2 threads) or before them (1 thread) alike.
  for (const auto& [deterministic, threads] : {std::pair{true, 2}, std::pair{false, 2}, std::pair{false, 1}}) {
    CAPTURE(deterministic);
    CAPTURE(threads);
    const SearchSummary proven = search(deterministic, threads, 20000);
    REQUIRE(proven.repeats.has_value());
    const RepeatResult& r = *proven.repeats;
    CHECK(r.note == "");
    CHECK(r.overlapped == (!deterministic && threads >= 2));
    CHECK(r.proof_runs == 1);
    CHECK(r.proof_states >= 740);
    CHECK(r.exact_optimal == 1);
    CHECK(r.total == doctest::Approx(12 * 777693.86666666).epsilon(1e-9));
    CHECK(proven.best_total <= r.total * (1 + 1e-12));
    CHECK(EvaluateOracle(stack, proven.best).total == doctest::Approx(proven.best_total).epsilon(1e-12));
    CHECK_FALSE(proven.exact.has_value());
    if (deterministic) {
      const SearchSummary again = search(true, 2, 20000);
      CHECK(again.best == proven.best);
      CHECK(again.repeats->proof_states == r.proof_states);
    }
  }
  // Too few states: the run ends unproven and the class keeps its schedule.
  const SearchSummary short_of_states = search(true, 2, 10);
  CHECK(short_of_states.repeats->proof_runs == 1);
  CHECK(short_of_states.repeats->exact_optimal == 0);
  CHECK(short_of_states.repeats->total == unproven.repeats->total);
  CHECK(short_of_states.repeats->proof_too_large == 0);
  // A block of more ops (19) than a subgraph of the family may hold is not tried.
  const SearchSummary too_large = search(true, 2, 20000, 18);
  CHECK(too_large.repeats->proof_runs == 0);
  CHECK(too_large.repeats->proof_too_large == 1);
  CHECK(too_large.repeats->exact_optimal == 0);
  CHECK(search(true, 2, 20000, 19).repeats->exact_optimal == 1);
}

}  // namespace
}  // namespace annealer
