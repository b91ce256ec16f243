// What the move kinds share beyond search/moves/moves.h: the random draws, the piece of an edit and
// Finish (which fits the pieces, filters retain sets and repairs availability), and a few
// schedule queries. Internal to search/: moves.cc holds the general kinds, repair.cc the repair and Finish,
// pattern_moves.cc the kinds drawn only where a graph pattern exists (MergeReadersApplies,
// GatherKLoopApplies). Every draw goes through the worker's generator, so a seed fixes them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "search/moves/moves.h"

namespace annealer::move_kit {

using Rng = std::mt19937_64;

// No tensors: the retained-in or retain set of a context without any.
inline const std::vector<TensorId> kNothing;

inline int Uniform(Rng& rng, int n) { return static_cast<int>(std::uniform_int_distribution<int>(0, n - 1)(rng)); }
inline bool Coin(Rng& rng, double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }

// Whether a short id list holds x. Forced inline: the repair's scan calls it per input, and the
// compiler's budget for that large function otherwise leaves std::find a call.
[[gnu::always_inline]] inline bool Contains(const std::vector<int32_t>& list, int32_t x) {
  for (const int32_t y : list) {
    if (y == x) return true;
  }
  return false;
}

// The nodes 0..n-1 (n = after.size()) in an order where each comes before the nodes `after` lists
// for it, taking at each step the ready node of least key(a), the first on ties: Kahn's algorithm
// with a fixed choice, so a move or start that reorders pieces stays deterministic. waiting[b]
// counts the nodes b waits for. nullopt on a cycle.
template <typename Key>
std::optional<std::vector<int>> OrderByLeastKey(const std::vector<std::vector<int>>& after,
                                                std::vector<int> waiting, const Key& key) {
  const int count = static_cast<int>(after.size());
  std::vector<int> order;
  order.reserve(count);
  std::vector<char> done(count, 0);
  while (static_cast<int>(order.size()) < count) {
    int pick = -1;
    for (int a = 0; a < count; ++a) {
      if (done[a] || waiting[a] > 0) continue;
      if (pick < 0 || key(a) < key(pick)) pick = a;
    }
    if (pick < 0) return std::nullopt;
    done[pick] = 1;
    order.push_back(pick);
    for (int b : after[pick]) --waiting[b];
  }
  return order;
}

// A random topological order of `ops` (Kahn's algorithm, each step a uniform draw among the ready
// positions in list order): Split's cut. A list holding an op twice is ordered with its copies as
// one producer (the first placed releases the readers); `ops` as given if it is not acyclic.
std::vector<OpId> RandomOrder(const Problem& problem, const std::vector<OpId>& ops, Rng& rng);

// A subgraph-to-be of an edit: its ops, the retain set it wants, and a configuration hint.
struct Piece {
  std::vector<OpId> ops;
  std::vector<TensorId> retain;
  const Subgraph* hint = nullptr;  // start of the fit, or the configuration kept as is
  bool refit = true;               // false: keep `hint` (same ops) and only set the retain set
  // `*hint` as it is, its ops and retain set read from it rather than copied (refit false): a
  // subgraph the edit keeps; a move across a long stretch makes one per subgraph of it.
  bool kept = false;
  const std::vector<OpId>& Ops() const { return kept ? hint->ops : ops; }
  const std::vector<TensorId>& Retain() const { return kept ? hint->retain : retain; }
};
// The piece that keeps subgraph `sg` as it is (refit false, its own retain set).
inline Piece Kept(const Subgraph& sg) { return {{}, {}, &sg, false, true}; }
// The pieces as a list, moved in (a braced list would copy each piece's ops and retain set).
template <typename... Pieces>
std::vector<Piece> PiecesOf(Pieces&&... pieces) {
  std::vector<Piece> list;
  list.reserve(sizeof...(pieces));
  (list.push_back(std::move(pieces)), ...);
  return list;
}

// What subgraph `index` finds retained from the subgraph before it (nothing for the first).
const std::vector<TensorId>& RetainedInto(const Schedule& s, int index);

// Builds the edit replacing [begin, end) of `s` by the pieces: filters retain sets to what the
// next subgraph actually reads, fits every piece in its new context, rewrites the retain set of
// subgraph begin-1 when the subgraph it fed changed, and repairs availability. nullopt when a
// piece is empty or does not fit.
std::optional<ScheduleEdit> Finish(const MoveContext& ctx, const Schedule& s, int begin, int end,
                                   std::vector<Piece> pieces);

// Whether `from` writes a tensor `to` reads.
bool Feeds(const Problem& problem, const Subgraph& from, const Subgraph& to);
// Whether every consumer of t is among `ops`: retaining t into `ops` cannot starve a later
// subgraph.
bool AllConsumersIn(const Problem& problem, TensorId t, const std::vector<OpId>& ops);

// Subgraph `sg` cut into `parts` (in order), as pieces fitted from it: the last keeps sg's retain
// set; an earlier one, where keep() says so (asked in order, once per earlier part), retains what
// only the next part reads (no write, no load).
template <typename Keep>
std::vector<Piece> PiecesOfParts(const Problem& problem, std::vector<std::vector<OpId>>&& parts, const Subgraph& sg,
                                 Keep&& keep) {
  std::vector<Piece> pieces;
  pieces.reserve(parts.size());
  for (size_t p = 0; p < parts.size(); ++p) {
    Piece piece{std::move(parts[p]), {}, &sg, true};
    if (p + 1 == parts.size()) {
      piece.retain = sg.retain;
    } else if (keep()) {
      for (TensorId t : ProducedTensors(problem, piece.ops)) {
        if (AllConsumersIn(problem, t, parts[p + 1])) piece.retain.push_back(t);
      }
    }
    pieces.push_back(std::move(piece));
  }
  return pieces;
}

// A uniformly random position i of [0, n) for which accept(i) holds, or -1 when none does.
// Short schedules list the positions that qualify and draw one; long ones (more than
// kListUpTo) draw positions until one qualifies, which is the same distribution without a
// walk over the whole schedule, and list them only after kDraws misses.
template <typename Accept>
inline int RandomPosition(Rng& rng, int n, const Accept& accept) {
  constexpr int kListUpTo = 256;
  constexpr int kDraws = 64;
  if (n > kListUpTo) {
    for (int draw = 0; draw < kDraws; ++draw) {
      const int i = Uniform(rng, n);
      if (accept(i)) return i;
    }
  }
  thread_local std::vector<int> candidates;
  candidates.clear();
  for (int i = 0; i < n; ++i) {
    if (accept(i)) candidates.push_back(i);
  }
  if (candidates.empty()) return -1;
  return candidates[Uniform(rng, static_cast<int>(candidates.size()))];
}

// The kinds of pattern_moves.cc (see MoveKind).
std::optional<ScheduleEdit> MergeReaders(const MoveContext& ctx, const Schedule& s, Rng& rng);
std::optional<ScheduleEdit> GatherKLoop(const MoveContext& ctx, const Schedule& s, Rng& rng);
// The kind of search/moves/split_recompute.cc.
std::optional<ScheduleEdit> SplitRecompute(const MoveContext& ctx, const Schedule& s, Rng& rng);

}  // namespace annealer::move_kit
