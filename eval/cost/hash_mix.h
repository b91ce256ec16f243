// Mixing of 64-bit hash values, shared by the cost cache and the repeated-block detection.
// Neither needs resistance to adversaries (keys are compared in full, or classes are checked
// for equality), only spreading: splitmix64's finalizer does that in a few instructions.
#pragma once

#include <cstdint>

namespace annealer {

inline constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ULL;

// splitmix64's finalizer: every input bit reaches every output bit.
constexpr uint64_t MixBits(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// One step of splitmix64 from state x.
constexpr uint64_t SplitMix64(uint64_t x) { return MixBits(x + kGoldenGamma); }

// The first output of the reference splitmix64 seeded with 0.
static_assert(SplitMix64(0) == 0xe220a8397b1dcdafULL);

// A running hash h extended by the value v (order-dependent).
constexpr uint64_t HashCombine(uint64_t h, uint64_t v) {
  return MixBits(h ^ (v + kGoldenGamma + (h << 6) + (h >> 2)));
}

}  // namespace annealer
