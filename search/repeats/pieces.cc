#include "search/repeats/pieces.h"

#include <algorithm>
#include <span>
#include <utility>
#include <vector>

#include "search/repeats/layout.h"

namespace annealer {

namespace {

// The largest set of `prefix` (a prefix of a topological order of what is left) that holds every
// producer of its ops that `prefix` holds and whose every produced tensor is read either only
// inside it or only outside: a reader whose tensor other readers read after the set leaves, with
// what it feeds in the set (condition (a) of eval/model/subproblem.h). On an Inception module cut
// in the middle, the next module's MatMuls that read the first branches leave, so the set ends
// where the module does.
std::vector<OpId> ClosedPart(const Problem& problem, std::span<const OpId> prefix, std::vector<char>& in) {
  for (const OpId op : prefix) in[op] = 1;
  std::vector<OpId> drop;
  auto remove = [&](OpId op) {
    if (!in[op]) return;
    in[op] = 0;
    drop.push_back(op);
    while (!drop.empty()) {
      const OpId x = drop.back();
      drop.pop_back();
      for (const OpId c : problem.consumers[problem.ops[x].output]) {
        if (in[c]) {
          in[c] = 0;
          drop.push_back(c);
        }
      }
    }
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (const OpId op : prefix) {
      if (!in[op]) continue;
      const std::vector<OpId>& readers = problem.consumers[problem.ops[op].output];
      const bool outside = std::any_of(readers.begin(), readers.end(), [&](OpId c) { return !in[c]; });
      if (!outside) continue;
      for (const OpId c : readers) {
        if (in[c]) {
          remove(c);
          changed = true;
        }
      }
    }
  }
  std::vector<OpId> part;
  for (const OpId op : prefix) {
    if (in[op]) part.push_back(op);
    in[op] = 0;
  }
  return part;
}

// Tensors `part` makes that ops outside it read: what the composition writes at the cut.
int ExportedTensors(const Problem& problem, const std::vector<OpId>& part, std::vector<char>& in) {
  for (const OpId op : part) in[op] = 1;
  int exported = 0;
  for (const OpId op : part) {
    const std::vector<OpId>& readers = problem.consumers[problem.ops[op].output];
    exported += std::any_of(readers.begin(), readers.end(), [&](OpId c) { return !in[c]; });
  }
  for (const OpId op : part) in[op] = 0;
  return exported;
}

}  // namespace

RepeatPlan CutIntoPieces(const Problem& problem, const PieceOptions& options) {
  const int n = static_cast<int>(problem.ops.size());
  const int max_ops = static_cast<int>(std::max<int64_t>(1, options.max_piece_ops));
  const int min_ops = static_cast<int>(std::clamp<int64_t>(options.min_piece_ops, 1, max_ops));
  if (n <= max_ops) return {};
  std::vector<OpId> rest = MakeLayout(problem).order;
  std::vector<OpId> order;
  std::vector<std::pair<int, int>> ranges;
  std::vector<char> in(n, 0);
  while (static_cast<int>(rest.size()) > max_ops) {
    // Each prefix of up to twice max_ops gives its closed part; the piece is the one that exports
    // the fewest tensors, of min_ops to max_ops ops and leaving at least min_ops (ties: the
    // largest, then the shortest prefix).
    std::vector<OpId> piece;
    int piece_exports = 0;
    const int longest = std::min<int>(2 * max_ops, static_cast<int>(rest.size()));
    for (int length = min_ops; length <= longest; ++length) {
      std::vector<OpId> part = ClosedPart(problem, std::span<const OpId>(rest.data(), length), in);
      const int size = static_cast<int>(part.size());
      if (size < min_ops || size > max_ops || static_cast<int>(rest.size()) - size < min_ops) continue;
      const int exports = ExportedTensors(problem, part, in);
      if (piece.empty() || exports < piece_exports || (exports == piece_exports && size > static_cast<int>(piece.size()))) {
        piece = std::move(part);
        piece_exports = exports;
      }
    }
    if (piece.empty()) break;
    ranges.emplace_back(static_cast<int>(order.size()), static_cast<int>(order.size() + piece.size()));
    order.insert(order.end(), piece.begin(), piece.end());
    for (const OpId op : piece) in[op] = 1;
    std::erase_if(rest, [&](OpId op) { return in[op] != 0; });
    for (const OpId op : piece) in[op] = 0;
  }
  // Where no piece fits, the graph is no chain of small pieces: what is left would be one block
  // of hundreds of ops, whose search in its slice does worse than the workers (DenseNet-121, whose
  // features every later layer of a dense block reads: with such blocks allowed, its pieces
  // composed at 7.4 M against the workers' 4.4 M on ascend910-core).
  if (ranges.empty() || static_cast<int>(rest.size()) > max_ops) return {};
  ranges.emplace_back(static_cast<int>(order.size()), n);
  order.insert(order.end(), rest.begin(), rest.end());
  return PlanFromRanges(problem, LayoutOfOrder(problem, std::move(order)), ranges);
}

}  // namespace annealer
