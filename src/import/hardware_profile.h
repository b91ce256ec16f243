// Hardware profiles: an accelerator described in physical units (bytes, bytes per cycle or per
// second, MACs per cycle) in a YAML file, and the problem numbers derived from it (capacity and
// bandwidth in elements, native side, base costs per native tile). Built-in profiles are the
// files of hardware/, embedded into the binary at build time; `annealer hardware` lists them.
//
// Every problem with a profile is one InputError line naming the file and the line:
//   "hardware/x.yaml:7: bandwidth: unknown unit "GBps" (expected B/cycle, GB/s, MB/s, ...)".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "eval/model/problem.h"

namespace annealer {

struct HardwareProfile {
  std::string name;
  std::string description;
  std::string dtype;   // "bf16", ...; "" when the file gives element_bytes alone
  std::string origin;  // the file's path, or "built-in"
  int element_bytes = 0;
  double fast_memory_bytes = 0;
  double bandwidth_bytes_per_cycle = 0;
  double clock_hz = 0;  // 0 when the file gives no clock
  double macs_per_cycle = 0;
  double vector_elements_per_cycle = 0;
  int64_t native = 0;  // the matrix unit's side n
  std::vector<std::string> sources;
  std::string notes;
  // The chip's memory rules (docs/hardware.md "Chip rules", H1-H6 of docs/cost-model.md); every
  // key optional, none given = the contest's model.
  double staging_bytes = 0;      // staging_buffer: MatMul operand slices (H1)
  double accumulator_bytes = 0;  // accumulator_buffer: MatMul output regions (H1)
  double vector_bytes = 0;       // vector_buffer: Pointwise operands and outputs (H1)
  bool double_staging = false, double_accumulator = false, double_vector = false;  // double_buffer (H2)
  int64_t tile_base[3] = {1, 1, 1};  // tile_base: w, h, k (H3)
  double row_alignment_bytes = 0;    // row_alignment: a row of a tile is a multiple of it (H3)
  std::string accumulator_dtype;     // H4; "" = the element type
  int accumulator_element_bytes = 0;
  bool wide_writeback = false;       // H4
  bool prefetch = false;             // H5
  double weight_bandwidth_bytes_per_cycle = 0;  // H6: the weight path; 0 = none
  double weight_fifo_bytes = 0;                 // H6: 0 = not checked
};

// The problem numbers of a profile. All times are in cycles.
struct DerivedHardware {
  Elements capacity = 0;      // floor(fast-memory bytes / element bytes)
  double bandwidth = 0;       // elements per cycle
  Elements native = 0;        // n
  double matmul_base = 0;     // one n x n x n tile: n^3 / MACs per cycle
  double pointwise_base = 0;  // one n x n tile: n^2 / vector elements per cycle
  double balance = 0;         // (n^2 / bandwidth) / matmul_base: load time over multiply time
  double tiles_that_fit = 0;  // capacity / n^2
  // The profile's rules in elements (capacities floor(bytes / element bytes); the w base is the
  // least common multiple of tile_base's w and the row alignment in elements).
  ChipRules chip;
};

// Keys of the profile's YAML replaced by other values before it is read, in the file's units:
// {"fast_memory", "4 MiB"}, {"bandwidth", "400 GB/s"} (sweeps over a chip's parameters). An
// override's error names it in place of a line: "hardware/tpu-v5e.yaml with fast_memory=4 Mib:
// fast_memory: unknown unit ...". A key may appear once.
using HardwareOverrides = std::vector<std::pair<std::string, std::string>>;

// The names of the built-in profiles (hardware/*.yaml), sorted.
std::vector<std::string> BuiltinHardwareNames();

// A built-in profile by name, or a YAML file when `name_or_path` contains '/' or ends with
// .yaml or .yml, with `overrides` applied. Throws InputError (unknown name, unreadable file, bad
// profile or override).
HardwareProfile LoadHardwareProfile(const std::string& name_or_path, const HardwareOverrides& overrides = {});

// Parses and checks a profile; `source` names the text in error messages and becomes origin.
HardwareProfile ParseHardwareProfile(std::string_view yaml_text, const std::string& source,
                                     const HardwareOverrides& overrides = {});

DerivedHardware Derive(const HardwareProfile& profile);

// The base cost of a MatMul op with reduction length `reduction` on this hardware, per output
// tile over the whole reduction: matmul_base x ceil(K / n).
double MatMulBaseCost(const DerivedHardware& hardware, Elements reduction);

// Sets the problem's capacity, bandwidth, native side and chip rules from `hardware` and every
// op's base cost (MatMul: MatMulBaseCost of its K; Pointwise: pointwise_base, one pass). The problem
// keeps its graph; it stays finalized.
void ApplyHardware(const DerivedHardware& hardware, Problem& problem);

}  // namespace annealer
