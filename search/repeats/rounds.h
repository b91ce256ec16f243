// The rounds of the repeated-block and piece starts (docs/search.md, "Rounds of the repeated-block
// start"). A composition's worth is what the passes make of it, and that is not ordered by how
// long its blocks were searched: on ResNet-50 (tpu-v5e) a 60-s share's composition, better as a
// sum of blocks, ended higher after the passes than a 5-s share's. So a long run first composes
// what a short run composes (round 1, its share capped at repeats.round_seconds of the time left),
// then spends the rest of the share on further rounds as long, with other seeds, and keeps the
// composition that is lowest after the passes: it never starts from worse than a short run does.
#pragma once

#include <cstddef>
#include <cstdint>

#include "eval/model/problem.h"

namespace annealer {

// Seconds of a round's nested searches: time_share of the time left, but of at most
// round_seconds of it (0: no cap, the whole share in one round).
double RoundSeconds(double seconds_left, double time_share, double round_seconds);

// Free mode: seconds of round `r` (0-based, r >= 1), `elapsed` seconds after the rounds began
// with `seconds_left` to the deadline: the first round's `first` seconds times growth^r, but no
// more than what is left of the share (time_share of seconds_left); 0 (no round) when less than
// `first` is left of it.
double NextRoundSeconds(double elapsed, double first, int r, double growth, double seconds_left, double time_share);

// The seed of class `c`'s nested search in round `r` (0-based) of a plan of `classes` classes:
// round 0 keeps the seeds of a single round (seed + 1 + c); no two (round, class) pairs share one.
uint64_t RoundSeed(uint64_t seed, int r, std::size_t classes, std::size_t c);

// Which round's composition the workers walk from: the lowest after the passes, the first on a
// tie (strictly lower by more than rounding noise to move).
struct RoundChoice {
  int rounds = 0;               // compositions offered
  int chosen = 0;               // 1-based round of the lowest; 0 before the first
  Latency first = 0;            // the first round's total after the passes
  Latency lowest = 0;           // the chosen one's
  Latency first_composed = 0;   // the first round's total as composed, before the passes
  Latency chosen_composed = 0;  // the chosen one's

  // Records round `round`'s (1-based) composition, `composed` before the passes and `polished`
  // after them; true when it becomes the chosen. (A round offered again, its block proofs having
  // improved a class, is compared as any other offer.)
  bool Offer(int round, Latency polished, Latency composed);
};

}  // namespace annealer
