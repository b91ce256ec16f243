#include "eval/model/chip_rules.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace annealer {

namespace {
std::string Str(int64_t v) { return std::to_string(v); }
}  // namespace

bool SideAllowed(const ChipRules& rules, SideAxis axis, Elements side, Elements dimension) {
  const Elements base = axis == SideAxis::kW ? rules.base_w : axis == SideAxis::kH ? rules.base_h : rules.base_k;
  if (base <= 1 || side % base == 0) return true;
  // A side that covers the whole dimension is one tile (k: one k-step); V3 keeps k <= K.
  return axis == SideAxis::kK ? side == dimension : side >= dimension;
}

Elements AlignSide(const ChipRules& rules, SideAxis axis, Elements side, Elements dimension, Elements top) {
  if (SideAllowed(rules, axis, side, dimension)) return side;
  const Elements base = axis == SideAxis::kW ? rules.base_w : axis == SideAxis::kH ? rules.base_h : rules.base_k;
  const Elements multiple = side / base * base;
  if (multiple >= base) return multiple;
  if (base <= top) return base;
  return std::min(top, dimension);
}

RoleFootprints Footprints(const ChipRules& rules, const RoleUse& use) {
  RoleFootprints f;
  f.staging = use.staging * (rules.double_staging ? 2 : 1);
  f.accumulator = use.accumulator * rules.accumulator_factor * (rules.double_accumulator ? 2 : 1);
  f.vector = use.vector * (rules.double_vector ? 2 : 1);
  return f;
}

std::optional<std::string> RoleOverflow(const ChipRules& rules, const RoleUse& use, int64_t step,
                                        int64_t tile, int64_t k_step) {
  const RoleFootprints f = Footprints(rules, use);
  auto detail = [&](const char* role, Elements raw, Elements footprint, Elements capacity,
                    int64_t factor, bool doubled) {
    std::string how;
    if (factor > 1) how += " x" + Str(factor) + " accumulator precision";
    if (doubled) how += " x2 double-buffered";
    return "step " + Str(step) + " (tile " + Str(tile) + ", k-step " + Str(k_step) + ") needs " +
           Str(footprint) + " elements of " + role + (how.empty() ? "" : " (" + Str(raw) + how + ")") +
           " > capacity " + Str(capacity);
  };
  if (rules.staging_capacity > 0 && f.staging > rules.staging_capacity) {
    return detail("matrix staging", use.staging, f.staging, rules.staging_capacity, 1, rules.double_staging);
  }
  if (rules.accumulator_capacity > 0 && f.accumulator > rules.accumulator_capacity) {
    return detail("accumulator", use.accumulator, f.accumulator, rules.accumulator_capacity,
                  rules.accumulator_factor, rules.double_accumulator);
  }
  if (rules.vector_capacity > 0 && f.vector > rules.vector_capacity) {
    return detail("vector buffer", use.vector, f.vector, rules.vector_capacity, 1, rules.double_vector);
  }
  return std::nullopt;
}

std::optional<std::string> WeightFifoOverflow(const ChipRules& rules, Elements weight_slices, int64_t step,
                                              int64_t tile, int64_t k_step) {
  if (rules.weight_fifo_capacity <= 0 || weight_slices <= rules.weight_fifo_capacity) return std::nullopt;
  return "step " + Str(step) + " (tile " + Str(tile) + ", k-step " + Str(k_step) + ") needs " + Str(weight_slices) +
         " elements of weights in the weight FIFO > capacity " + Str(rules.weight_fifo_capacity);
}

PrefetchSplit ApplyPrefetch(double compute, double memory, double prefetchable, double slack_before) {
  PrefetchSplit split;
  const double hidden = std::min(prefetchable, slack_before);
  split.exposed = memory - (hidden > 0 ? hidden : 0);
  split.slack = std::max(0.0, compute - split.exposed);
  return split;
}

std::string DescribeChipRules(const ChipRules& rules) {
  if (!rules.any()) return "";
  std::string text;
  auto line = [&](const std::string& s) { text += (text.empty() ? "" : "\n") + s; };
  auto role = [&](const char* name, Elements capacity, bool doubled) {
    if (capacity == 0 && !doubled) return;
    line(std::string(name) + ": " + (capacity > 0 ? "capacity " + Str(capacity) + " elements" : "no capacity of its own") +
         (doubled ? ", double-buffered" : ""));
  };
  role("H1 matrix staging", rules.staging_capacity, rules.double_staging);
  role("H1 accumulator", rules.accumulator_capacity, rules.double_accumulator);
  role("H1 vector buffer", rules.vector_capacity, rules.double_vector);
  if (rules.aligned()) {
    line("H3 tile base [w, h, k] = [" + Str(rules.base_w) + ", " + Str(rules.base_h) + ", " + Str(rules.base_k) + "]");
  }
  if (rules.accumulator_factor > 1 || rules.wide_writeback) {
    line("H4 accumulator elements x" + Str(rules.accumulator_factor) +
         (rules.wide_writeback ? ", written back at that width" : ", written back narrowed"));
  }
  if (rules.prefetch) line("H5 prefetch of the next step's double-buffered loads");
  if (rules.two_paths()) {
    char bandwidth[32];
    std::snprintf(bandwidth, sizeof bandwidth, "%.6g", rules.weight_bandwidth);
    line(std::string("H6 weight path: ") + bandwidth + " elements per time unit, in parallel with the slow memory; " +
         (rules.weight_fifo_capacity > 0 ? "weight FIFO " + Str(rules.weight_fifo_capacity) + " elements"
                                         : "weight FIFO not checked"));
  }
  return text;
}

std::string CheckChipRules(const ChipRules& rules, int64_t native, int64_t fast_memory_capacity) {
  const std::pair<const char*, int64_t> capacities[] = {{"staging_capacity", rules.staging_capacity},
                                                        {"accumulator_capacity", rules.accumulator_capacity},
                                                        {"vector_capacity", rules.vector_capacity}};
  for (const auto& [name, value] : capacities) {
    if (value < 0) return std::string(name) + ": must not be negative, got " + Str(value);
    if (value > fast_memory_capacity) {
      return std::string(name) + ": " + Str(value) + " elements is larger than the fast memory (" +
             Str(fast_memory_capacity) + " elements), which every step's working set also fits";
    }
  }
  const std::pair<const char*, int64_t> bases[] = {{"base_w", rules.base_w}, {"base_h", rules.base_h}, {"base_k", rules.base_k}};
  for (const auto& [name, value] : bases) {
    if (value < 1) return std::string(name) + ": must be a positive integer, got " + Str(value);
    if (value > native) {
      return std::string(name) + ": " + Str(value) + " is larger than the native side " + Str(native) +
             " (no side could be a multiple of it)";
    }
  }
  if (rules.accumulator_factor < 1) {
    return "accumulator_factor: must be a positive integer, got " + Str(rules.accumulator_factor);
  }
  if (rules.prefetch && !rules.double_staging && !rules.double_vector) {
    return "prefetch: needs a double-buffered staging or vector role to hold the next step's loads";
  }
  if (!(rules.weight_bandwidth >= 0) || !std::isfinite(rules.weight_bandwidth)) {
    char got[32];
    std::snprintf(got, sizeof got, "%.6g", rules.weight_bandwidth);
    return std::string("weight_bandwidth: must be a finite number >= 0 (0: no weight path), got ") + got;
  }
  if (rules.weight_fifo_capacity < 0) {
    return "weight_fifo_capacity: must not be negative, got " + Str(rules.weight_fifo_capacity);
  }
  if (rules.weight_fifo_capacity > 0 && !rules.two_paths()) {
    return "weight_fifo_capacity: needs a weight path (weight_bandwidth > 0) for the FIFO to sit on";
  }
  if (rules.two_paths() && rules.prefetch) {
    return "weight_bandwidth: the weight path (H6) is not combined with prefetch (H5)";
  }
  return "";
}

}  // namespace annealer
