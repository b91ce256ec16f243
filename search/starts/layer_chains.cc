#include "search/starts/layer_chains.h"

#include <algorithm>
#include <map>

#include "eval/cost/incremental.h"
#include "search/moves/move_kit.h"

namespace annealer {

namespace {

using move_kit::Contains;

// A chain longer than this is left alone: a group this large is no convolution's prologue.
constexpr std::size_t kMaxGroupOps = 512;
// Passes over the sums at most.
constexpr int kRounds = 3;

bool IsMatMul(const Problem& problem, OpId op) { return problem.ops[op].kind == OpKind::MatMul; }

// Whether op is a sum the pass looks at: Pointwise, three or more inputs, each made by a MatMul.
bool IsSumOfMatMuls(const Problem& problem, OpId op) {
  const Op& o = problem.ops[op];
  if (o.kind != OpKind::Pointwise || o.inputs.size() < 3) return false;
  for (TensorId u : o.inputs) {
    const OpId q = problem.producer[u];
    if (q == kNoOp || !IsMatMul(problem, q)) return false;
  }
  return true;
}

// A sum whose MatMuls have one reduction length: a convolution's taps (not the partial products
// over a concatenation, whose lengths differ).
bool IsConvolutionSum(const Problem& problem, OpId op) {
  if (!IsSumOfMatMuls(problem, op)) return false;
  const std::vector<TensorId>& inputs = problem.ops[op].inputs;
  return std::all_of(inputs.begin(), inputs.end(), [&](TensorId u) {
    return problem.ReductionLength(problem.producer[u]) == problem.ReductionLength(problem.producer[inputs[0]]);
  });
}

// `roots` and every op (not a Layout op; inside `within` when it is given) whose output only ops
// of the set read, walked up to a fixed point; sorted by op id.
std::vector<OpId> PrivateClosure(const Problem& problem, std::vector<OpId> roots, const std::vector<OpId>* within,
                                 bool stop_at_sums = false) {
  std::vector<OpId> set = std::move(roots);
  std::sort(set.begin(), set.end());
  set.erase(std::unique(set.begin(), set.end()), set.end());
  bool grew = true;
  while (grew && set.size() <= kMaxGroupOps) {
    grew = false;
    for (std::size_t i = 0; i < set.size(); ++i) {
      for (TensorId u : problem.ops[set[i]].inputs) {
        const OpId q = problem.producer[u];
        if (q == kNoOp || problem.IsLayout(q) || std::binary_search(set.begin(), set.end(), q)) continue;
        if (within != nullptr && !std::binary_search(within->begin(), within->end(), q)) continue;
        if (stop_at_sums && IsConvolutionSum(problem, q)) continue;
        const std::vector<OpId>& readers = problem.consumers[problem.ops[q].output];
        const bool only_ours = std::all_of(readers.begin(), readers.end(), [&](OpId c) {
          return std::binary_search(set.begin(), set.end(), c);
        });
        if (!only_ours) continue;
        set.insert(std::upper_bound(set.begin(), set.end(), q), q);
        grew = true;
      }
    }
  }
  return set;
}

// Of MatMuls by reduction length (exactly two lengths), those of the length with fewer of them,
// the larger length on a tie.
std::vector<OpId> MinorityClass(const std::map<Elements, std::vector<OpId>>& by_length) {
  const auto& [small_k, small] = *by_length.begin();
  const auto& [large_k, large] = *by_length.rbegin();
  (void)small_k;
  (void)large_k;
  return small.size() < large.size() ? small : large;
}

// The outputs of `from`'s ops that an op of `to` reads, sorted.
std::vector<TensorId> Handed(const Problem& problem, const std::vector<OpId>& from, const std::vector<OpId>& to) {
  std::vector<TensorId> handed;
  for (OpId op : from) {
    const TensorId t = problem.ops[op].output;
    for (OpId c : problem.consumers[t]) {
      if (std::binary_search(to.begin(), to.end(), c)) {
        handed.push_back(t);
        break;
      }
    }
  }
  std::sort(handed.begin(), handed.end());
  return handed;
}

std::vector<OpId> Minus(const std::vector<OpId>& a, const std::vector<OpId>& b) {
  std::vector<OpId> out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

}  // namespace

std::vector<OpId> LayerChainSums(const Problem& problem) {
  std::vector<OpId> sums;
  std::vector<int> rank;
  bool concatenation = false;
  for (OpId op : problem.topological_order) {
    if (!IsSumOfMatMuls(problem, op)) continue;
    if (rank.empty()) rank = TopologicalRanks(problem);
    if (LayerChainPieces(problem, rank, op, true)) sums.push_back(op);
    concatenation = concatenation || LayerChainPieces(problem, rank, op, false).has_value();
  }
  if (!concatenation) sums.clear();
  return sums;
}

namespace {

std::optional<std::vector<ChainPiece>> PiecesOf(const Problem& problem, const std::vector<int>& rank, OpId sum,
                                                bool stop_at_sums, bool single) {
  const std::vector<OpId> group = PrivateClosure(problem, {sum}, nullptr, stop_at_sums);
  if (group.size() > kMaxGroupOps) return std::nullopt;
  std::vector<OpId> taps;
  for (TensorId u : problem.ops[sum].inputs) taps.push_back(problem.producer[u]);
  std::sort(taps.begin(), taps.end());
  taps.erase(std::unique(taps.begin(), taps.end()), taps.end());
  std::map<Elements, std::vector<OpId>> tap_lengths, other_lengths;
  for (OpId x : group) {
    if (!IsMatMul(problem, x)) continue;
    auto& by_length = std::binary_search(taps.begin(), taps.end(), x) ? tap_lengths : other_lengths;
    by_length[problem.ReductionLength(x)].push_back(x);
  }
  std::vector<std::vector<OpId>> parts;  // a (maybe), b, c (maybe), by op id
  if (tap_lengths.size() == 1 && (other_lengths.size() == 2 || (single && other_lengths.size() == 1))) {
    std::vector<OpId> c = taps;
    c.insert(std::upper_bound(c.begin(), c.end(), sum), sum);
    std::vector<OpId> a;
    if (other_lengths.size() == 2) {
      a = PrivateClosure(problem, MinorityClass(other_lengths), &group);
      for (OpId x : c) {
        if (std::binary_search(a.begin(), a.end(), x)) return std::nullopt;
      }
    }
    std::vector<OpId> b = Minus(Minus(group, a), c);
    if (!a.empty()) parts.push_back(std::move(a));
    parts.push_back(std::move(b));
    parts.push_back(std::move(c));
  } else if (tap_lengths.size() == 2 && other_lengths.empty()) {
    std::vector<OpId> a = PrivateClosure(problem, MinorityClass(tap_lengths), &group);
    if (std::binary_search(a.begin(), a.end(), sum)) return std::nullopt;
    parts.push_back(Minus(group, a));
    parts.insert(parts.begin(), std::move(a));
  } else {
    return std::nullopt;
  }
  std::vector<ChainPiece> pieces;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].empty()) return std::nullopt;
    ChainPiece piece;
    if (i + 1 < parts.size()) piece.retain = Handed(problem, parts[i], parts[i + 1]);
    piece.ops = SortTopologically(rank, parts[i]);
    pieces.push_back(std::move(piece));
  }
  return pieces;
}

}  // namespace

std::optional<std::vector<ChainPiece>> LayerChainPieces(const Problem& problem, const std::vector<int>& rank,
                                                        OpId sum, bool single) {
  if (!IsSumOfMatMuls(problem, sum)) return std::nullopt;
  std::optional<std::vector<ChainPiece>> pieces = PiecesOf(problem, rank, sum, false, single);
  return pieces ? pieces : PiecesOf(problem, rank, sum, true, single);
}

std::optional<ScheduleEdit> LayerChainAt(const MoveContext& ctx, const Schedule& s, OpId sum) {
  using namespace move_kit;
  const Problem& problem = ctx.problem;
  std::optional<std::vector<ChainPiece>> chain = LayerChainPieces(problem, ctx.rank, sum, true);
  if (!chain) return std::nullopt;
  std::vector<OpId> group;
  for (const ChainPiece& piece : *chain) group.insert(group.end(), piece.ops.begin(), piece.ops.end());
  std::sort(group.begin(), group.end());
  const auto in_group = [&](OpId op) { return std::binary_search(group.begin(), group.end(), op); };

  // The span: every subgraph running an op of the group; the chain goes where the sum ran first.
  const int n = static_cast<int>(s.subgraphs.size());
  int begin = n, end = -1, home = -1;
  for (int i = 0; i < n; ++i) {
    const std::vector<OpId>& ops = s.subgraphs[i].ops;
    if (!std::any_of(ops.begin(), ops.end(), in_group)) continue;
    begin = std::min(begin, i);
    end = i + 1;
    if (home < 0 && Contains(ops, sum)) home = i;
  }
  if (home < 0) return std::nullopt;

  // Nodes of the span's new order: subgraphs without group ops as they are, the connected
  // components of what the others keep, and the chain.
  struct Node {
    std::vector<OpId> ops;  // all of the node's ops (the chain's pieces together)
    int key;                // the subgraph it comes from: its place unless it must wait
    int kept;               // the subgraph kept as it is, or -1
    int chain;              // 1 for the chain
  };
  std::vector<Node> nodes;
  for (int i = begin; i < end; ++i) {
    const std::vector<OpId>& ops = s.subgraphs[i].ops;
    std::vector<OpId> rest;
    for (OpId op : ops) {
      if (!in_group(op)) rest.push_back(op);
    }
    if (rest.size() == ops.size()) {
      nodes.push_back({ops, i, i, 0});
      continue;
    }
    if (i == home) nodes.push_back({group, i, -1, 1});
    if (rest.empty()) continue;
    for (std::vector<OpId>& component : Components(problem, rest)) {
      nodes.push_back({SortTopologically(ctx.rank, std::move(component)), i, -1, 0});
    }
  }
  // An op in several nodes is run again: its output orders nothing (it comes from slow memory
  // or the repair makes it available), as in RegroupReaderPartsAt.
  const int count = static_cast<int>(nodes.size());
  std::map<OpId, int> runs;
  for (const Node& node : nodes) {
    for (OpId op : node.ops) ++runs[op];
  }
  std::vector<std::vector<int>> after(count);
  std::vector<int> waiting(count, 0);
  for (int a = 0; a < count; ++a) {
    for (int b = 0; b < count; ++b) {
      if (a == b) continue;
      bool reads = false;
      for (OpId op : nodes[b].ops) {
        for (TensorId u : problem.ops[op].inputs) {
          const OpId q = problem.producer[u];
          reads = reads || (q != kNoOp && runs[q] == 1 && Contains(nodes[a].ops, q));
        }
      }
      if (!reads) continue;
      after[a].push_back(b);
      ++waiting[b];
    }
  }
  const std::optional<std::vector<int>> order =
      move_kit::OrderByLeastKey(after, std::move(waiting), [&](int a) { return nodes[a].key; });
  if (!order) return std::nullopt;
  std::vector<Piece> pieces;
  for (int a : *order) {
    const Node& node = nodes[a];
    if (node.kept >= 0) {
      pieces.push_back(Kept(s.subgraphs[node.kept]));
    } else if (node.chain) {
      for (ChainPiece& piece : *chain) pieces.push_back({std::move(piece.ops), std::move(piece.retain), nullptr, true});
    } else {
      pieces.push_back({node.ops, s.subgraphs[node.key].retain, nullptr, true});
    }
  }
  return Finish(ctx, s, begin, end, std::move(pieces));
}

Schedule LayerChains(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                     const std::function<bool()>& stop) {
  const std::vector<OpId> sums = LayerChainSums(problem);
  if (sums.empty()) return start;
  const std::vector<int> rank = TopologicalRanks(problem);
  IncrementalEvaluator evaluator(problem, pricer.cache());
  Candidate current = evaluator.Reset(start);
  if (!current.valid) return start;
  const MoveContext context{problem, rank, pricer, stop, &evaluator, false, false};
  // A chain the schedule around it made dearer may pay once a later sum's chain is in: a few
  // rounds, until one commits nothing.
  for (int round = 0; round < kRounds; ++round) {
    bool committed = false;
    for (OpId sum : sums) {
      if (stop && stop()) return evaluator.schedule();
      std::optional<ScheduleEdit> edit = LayerChainAt(context, evaluator.schedule(), sum);
      if (!edit) continue;
      committed |= evaluator.CommitIfLower(std::move(*edit), current);
    }
    if (!committed) break;
  }
  return evaluator.schedule();
}

}  // namespace annealer
