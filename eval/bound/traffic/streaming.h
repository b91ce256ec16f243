// P13-P15, the streaming part of the lower bound (eval/bound/bounds.h states the facts,
// docs/lower-bound.md proves them).
#pragma once

#include <functional>
#include <limits>
#include <vector>

#include "eval/bound/analysis.h"

namespace annealer::bound_internal {

// P14. Weights that no compute of another op can hide (docs/lower-bound.md, "Streamed weights
// (P14)"; the header states the fact). Per MatMul x, c_x = base x native tiles and, for its two
// kinds of instance:
//   T-only (x in F, in no other mode): it loads its own graph inputs (read by x alone) in full,
//     streamed once per column / row tile when K > n (P5), and writes its output when that is a
//     graph output and this is the instance that writes it (V9, M2): W_T;
//   other (some mode upstream of the k-loop): those inputs at least once (P3), W_N, and it
//     computes at least f_N x c_x, f_N its least factor over those modes (P7, P13's passes).
// x is heavy when g_x = min(W_T/B - c_x, max(W_N/B - c_x, (f_N - 1) c_x)) > 0 (a graph output
// is counted at its writing instance, a sink: only W_T). An instance "pays on memory" when its
// own traffic covers c_x + g_x (T-only always; the other kind when W_N/B - c_x >= g_x and the
// compute side does not already cover it), else "on compute".
// A subgraph with F of reduction K* and sinks of shape (H, W) (G3, V12; Pointwise ops keep
// shapes) is a "world": its ops are F (MatMuls of that K* and shape), E (Pointwise ops of that
// shape, fed by E, F or Layout ops) and U (ops with an upstream mode, upstream of a producer of
// an F input: a MatMul, or any op when K* <= n; V11), joined by internal edges (V5). The classes
// of a world's edge graph hold every subgraph of that world. A subgraph with an activated
// instance that pays on memory pays M_S >= its instances' own loads; any other subgraph
// a C_S + (1 - a) M_S. So each op claims the least of the lines of where its picked instance
// can be, and the total is at least their sum for every a (Hid: the members of every class in
// which an activated op may pay on memory, except the heavy ops that pay on memory wherever
// they sit in that class; they can be beside one).
struct Line {  // at0 + a (at1 - at0): a claim at the weight a
  double at0 = 0, at1 = 0;
};
struct Streaming {
  Latency value = 0;   // the best over a of the sum of the ops' least lines, plus `retention`
  int activated = 0;   // heavy ops whose gain counts
  std::vector<std::vector<Line>> lines;  // per op, its claim is the least of these
  // P15: the reloads of produced inputs by activated ops that always sit alone, at weight a
  // (whole problem only: a host may lie in another island).
  std::function<double(double)> retention;
  // P16: per op, whether its instance may sit in a subgraph beside an activated op paying on
  // memory (activated, in Hid, or heavy): there its compute is not counted.
  std::vector<char> beside_memory;
};

// The maximum over a in [0, 1] of the sum over the selected ops of their least line, plus
// `extra` (the sum is concave, P15's term need not be: a ternary search, then the ends; any a
// gives a bound, so an approximate maximum is still one).
template <class Selected>
double BestOverWeight(const std::vector<std::vector<Line>>& lines, const Selected& selected,
                      const std::function<double(double)>& extra = {}) {
  const auto sum = [&](double w) {
    double total = extra ? extra(w) : 0;
    for (size_t op = 0; op < lines.size(); ++op) {
      if (!selected(static_cast<OpId>(op))) continue;
      double least = std::numeric_limits<double>::infinity();
      for (const Line& l : lines[op]) least = std::min(least, l.at0 + w * (l.at1 - l.at0));
      total += least;
    }
    return total;
  };
  double lo = 0, hi = 1;
  for (int i = 0; i < 40; ++i) {
    const double m1 = lo + (hi - lo) / 3, m2 = hi - (hi - lo) / 3;
    if (sum(m1) < sum(m2)) {
      lo = m1;
    } else {
      hi = m2;
    }
  }
  return std::max({sum((lo + hi) / 2), sum(0), sum(1)});
}

// P19 (docs/lower-bound.md, "Streamed activations (P19)"). Whether operand `slot` of MatMul x
// (0: LHS, 1: RHS) is an activation that every T instance of x streams: K > n (k < K, V2, V3),
// made by a Pointwise op (never ephemeral for a k-split MatMul, V11, P1), too large to retain
// or to request whole (|t| + 1 > capacity, P4), and read by MatMuls only, all on this side
// and not on the other (every request of it in a subgraph is R x kappa_j in F or R' x [0, K)
// upstream, D2, D3, so no request of another reader makes x's slice free, M1).
bool StreamedActivationSide(const Problem& problem, OpId x, int slot);
// Elements of such operands a T instance of x loads, as its share: |t| x ceil(N/n) (LHS) or
// |t| x ceil(M/n) (RHS) per subgraph holding a reader in F (P5), divided among t's readers
// (the F readers of one subgraph share one grid and may share each load, D5).
double StreamedActivations(const Problem& problem, OpId x);
// Ablation switch for tests/eval/bound/traffic/streaming_test.cc only (measures what P19 adds): false makes
// StreamedActivations 0, the bound as before P19. Not thread-safe; never set elsewhere.
extern bool g_streamed_activations;

// `forced_writes` (P32, activations.h): per tensor, whether every schedule writes it from a sink
// instance of its producer; a Pointwise producer's T-only instance then counts the write among its
// own, as a graph output's writer does.
Streaming StreamingBound(const Problem& problem, const Analysis& a, const std::vector<char>* forced_writes = nullptr);

}  // namespace annealer::bound_internal
