#include "search/repeats/rounds.h"

#include <algorithm>
#include <cmath>

namespace annealer {

double RoundSeconds(double seconds_left, double time_share, double round_seconds) {
  const double base = round_seconds > 0 ? std::min(seconds_left, round_seconds) : seconds_left;
  return std::max(0.0, base) * time_share;
}

double NextRoundSeconds(double elapsed, double first, int r, double growth, double seconds_left, double time_share) {
  const double rest = seconds_left * time_share - elapsed;
  if (first <= 0 || rest < first) return 0;
  return std::min(rest, first * std::pow(growth, r));
}

uint64_t RoundSeed(uint64_t seed, int r, std::size_t classes, std::size_t c) {
  return seed + 1 + c + static_cast<uint64_t>(r) * classes;
}

bool RoundChoice::Offer(int round, Latency polished, Latency composed) {
  if (rounds == 0) {
    first = polished;
    first_composed = composed;
  }
  rounds = std::max(rounds, round);
  if (chosen != 0 && polished >= lowest * (1 - 1e-12)) return false;
  chosen = round;
  lowest = polished;
  chosen_composed = composed;
  return true;
}

}  // namespace annealer
