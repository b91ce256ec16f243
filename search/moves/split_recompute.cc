// The split-recompute move (kSplitRecompute): one subgraph cut in two where both parts compute
// the subgraph's cheap first ops (its head) again, instead of the second part loading what the
// first made of them. docs/search.md, "Split with recompute".
#include <algorithm>
#include <vector>

#include "search/moves/move_kit.h"
#include "search/moves/moves.h"
#include "search/subgraph_tools.h"

namespace annealer {

namespace {

// Position of each op of `ops` in it, -1 for the others; per thread, reset by the caller's scope.
struct LocalIndex {
  explicit LocalIndex(const Problem& problem, const std::vector<OpId>& ops) : ops_(ops) {
    thread_local std::vector<int> index;
    if (index.size() < problem.ops.size()) index.assign(problem.ops.size(), -1);
    for (size_t a = 0; a < ops.size(); ++a) index[ops[a]] = static_cast<int>(a);
    index_ = &index;
  }
  ~LocalIndex() {
    for (OpId op : ops_) (*index_)[op] = -1;
  }
  int operator()(OpId op) const { return op == kNoOp ? -1 : (*index_)[op]; }

 private:
  const std::vector<OpId>& ops_;
  std::vector<int>* index_;
};

}  // namespace

SplitRecomputeShape SplitRecomputeShapeOf(const Problem& problem, const std::vector<OpId>& ops) {
  SplitRecomputeShape shape;
  const int n = static_cast<int>(ops.size());
  shape.head.assign(n, 0);
  shape.depth.assign(n, 0);
  const LocalIndex local(problem, ops);
  // ops is in topological order (every subgraph's ops are), so one pass sees producers first.
  for (int a = 0; a < n; ++a) {
    const Op& op = problem.ops[ops[a]];
    bool head = op.kind == OpKind::Pointwise && !problem.IsLayout(ops[a]);
    for (TensorId t : op.inputs) {
      const int p = local(problem.producer[t]);
      if (p < 0) continue;
      head = head && shape.head[p];
      shape.depth[a] = std::max(shape.depth[a], shape.depth[p] + 1);
    }
    shape.head[a] = head;
    if (head) {
      ++shape.head_ops;
    } else {
      shape.body.push_back(a);
    }
  }
  return shape;
}

std::optional<ScheduleEdit> SplitRecomputeAt(const MoveContext& ctx, const Schedule& s, int i, OpId pivot,
                                             bool retain) {
  using namespace move_kit;
  const Problem& problem = ctx.problem;
  const Subgraph& sg = s.subgraphs[i];
  const std::vector<OpId>& ops = sg.ops;
  const int n = static_cast<int>(ops.size());
  const SplitRecomputeShape shape = SplitRecomputeShapeOf(problem, ops);
  if (shape.head_ops == 0 || shape.body.size() < 2) return std::nullopt;
  const LocalIndex local(problem, ops);
  const int q = local(pivot);
  if (q < 0 || shape.head[q]) return std::nullopt;

  // The first part: the pivot's class (body ops of its kind, depth inside the subgraph and
  // output shape: the same op in every parallel branch, such as each head's scores) with all
  // their ancestors in the body. Closed under ancestors, it never reads the second part. When
  // the class's ancestors are the whole body (the branches all alike), the pivot alone with its
  // ancestors: one branch peeled off.
  const Op& pivot_op = problem.ops[pivot];
  const Tensor& pivot_out = problem.tensors[pivot_op.output];
  std::vector<char> first(n, 0);
  std::vector<int> stack;
  auto close = [&] {
    while (!stack.empty()) {
      const int a = stack.back();
      stack.pop_back();
      for (TensorId t : problem.ops[ops[a]].inputs) {
        const int p = local(problem.producer[t]);
        if (p < 0 || shape.head[p] || first[p]) continue;
        first[p] = 1;
        stack.push_back(p);
      }
    }
  };
  for (int b : shape.body) {
    const Op& op = problem.ops[ops[b]];
    const Tensor& out = problem.tensors[op.output];
    if (op.kind == pivot_op.kind && shape.depth[b] == shape.depth[q] && out.width == pivot_out.width &&
        out.height == pivot_out.height) {
      first[b] = 1;
      stack.push_back(b);
    }
  }
  close();
  auto in_first = [&] { return static_cast<size_t>(std::count(first.begin(), first.end(), 1)); };
  if (in_first() == shape.body.size()) {
    std::fill(first.begin(), first.end(), 0);
    first[q] = 1;
    stack.push_back(q);
    close();
  }
  std::vector<OpId> part[2];
  for (int b : shape.body) part[first[b] ? 0 : 1].push_back(ops[b]);
  if (part[0].empty() || part[1].empty()) return std::nullopt;

  // Each part takes the head ops it descends from; a part that needs none of them is an
  // ordinary split, which kSplit makes.
  int recomputed = 0;
  std::vector<std::vector<OpId>> pieces_ops;
  for (std::vector<OpId>& body : part) {
    std::vector<char> needed(n, 0);
    for (OpId op : body) stack.push_back(local(op));
    while (!stack.empty()) {
      const int a = stack.back();
      stack.pop_back();
      for (TensorId t : problem.ops[ops[a]].inputs) {
        const int p = local(problem.producer[t]);
        if (p < 0 || !shape.head[p] || needed[p]) continue;
        needed[p] = 1;
        stack.push_back(p);
      }
    }
    std::vector<OpId> piece = body;
    bool any = false;
    for (int a = 0; a < n; ++a) {
      if (needed[a]) {
        piece.push_back(ops[a]);
        any = true;
      }
    }
    recomputed += any;
    for (auto& component : Components(problem, SortTopologically(ctx.rank, piece))) {
      pieces_ops.push_back(SortTopologically(ctx.rank, component));
    }
  }
  if (recomputed < 2) return std::nullopt;
  // A head op neither part descends from (a head sink read only outside the subgraph) would be
  // made nowhere: no split.
  for (int a = 0; a < n; ++a) {
    if (!shape.head[a]) continue;
    bool placed = false;
    for (const auto& piece : pieces_ops) placed = placed || Contains(piece, ops[a]);
    if (!placed) return std::nullopt;
  }

  // The second part's loads of what the first made (the scores) stay in fast memory where `retain`.
  return Finish(ctx, s, i, i + 1, PiecesOfParts(problem, std::move(pieces_ops), sg, [&] { return retain; }));
}

namespace move_kit {

std::optional<ScheduleEdit> SplitRecompute(const MoveContext& ctx, const Schedule& s, Rng& rng) {
  const int i = RandomPosition(rng, static_cast<int>(s.subgraphs.size()),
                               [&](int at) { return s.subgraphs[at].ops.size() >= 3; });
  if (i < 0) return std::nullopt;
  const std::vector<OpId>& ops = s.subgraphs[i].ops;
  const SplitRecomputeShape shape = SplitRecomputeShapeOf(ctx.problem, ops);
  if (shape.head_ops == 0 || shape.body.size() < 2) return std::nullopt;
  const OpId pivot = ops[shape.body[Uniform(rng, static_cast<int>(shape.body.size()))]];
  return SplitRecomputeAt(ctx, s, i, pivot, Coin(rng, 0.5));
}

}  // namespace move_kit

}  // namespace annealer
