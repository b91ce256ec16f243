#include "src/import/hardware_text.h"

#include <algorithm>
#include <cstdio>

#include "src/io/json_fields.h"
#include "src/io/text_format.h"

namespace annealer {
namespace {

std::string Fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string ClockText(double hz) {
  if (hz >= 1e9) return Readable(hz / 1e9) + " GHz";
  if (hz >= 1e6) return Readable(hz / 1e6) + " MHz";
  return Readable(hz) + " Hz";
}

std::string ElementText(const HardwareProfile& profile) {
  const std::string bytes = std::to_string(profile.element_bytes) + (profile.element_bytes == 1 ? " byte" : " bytes");
  return profile.dtype.empty() ? bytes + " per element" : profile.dtype + " (" + bytes + ")";
}

}  // namespace

std::string HardwareTableText(const std::vector<HardwareProfile>& profiles) {
  std::vector<std::vector<std::string>> rows = {{"name", "n", "capacity (el)", "bandwidth (el/cycle)",
                                                 "MatMul base", "Pointwise base", "balance",
                                                 "tiles that fit", "description"}};
  for (const HardwareProfile& profile : profiles) {
    const DerivedHardware d = Derive(profile);
    rows.push_back({profile.name, std::to_string(d.native), Grouped(static_cast<double>(d.capacity)),
                    Readable(d.bandwidth), Readable(d.matmul_base), Readable(d.pointwise_base),
                    Fixed(d.balance, 2), Readable(d.tiles_that_fit), profile.description});
  }
  return FormatTable(rows) +
         "\nBases in cycles per native tile (MatMul: n x n x n; Pointwise: n x n); balance = (n^2 /\n"
         "bandwidth) / MatMul base; tiles that fit = capacity / n^2. `annealer hardware NAME` shows\n"
         "a profile's figures, arithmetic and sources.\n";
}

std::string HardwareProfileText(const HardwareProfile& profile) {
  const DerivedHardware d = Derive(profile);
  const std::string n = std::to_string(profile.native);
  const std::string el = std::to_string(profile.element_bytes) + " B";
  std::string out = profile.name + ": " + profile.description + "\n";
  std::string bandwidth = Readable(profile.bandwidth_bytes_per_cycle) + " B/cycle";
  if (profile.clock_hz > 0) {
    bandwidth += " (" + Readable(profile.bandwidth_bytes_per_cycle * profile.clock_hz / 1e9) + " GB/s at " +
                 ClockText(profile.clock_hz) + ")";
  }
  out += FormatTable({{"origin", profile.origin},
                      {"element", ElementText(profile)},
                      {"fast memory", Grouped(profile.fast_memory_bytes) + " B"},
                      {"bandwidth", bandwidth},
                      {"clock", profile.clock_hz > 0 ? ClockText(profile.clock_hz) : "not given"},
                      {"matrix unit", n + " x " + n},
                      {"MACs per cycle", Readable(profile.macs_per_cycle)},
                      {"vector", Readable(profile.vector_elements_per_cycle) + " elements per cycle"}});
  out += "\nproblem numbers (times in cycles):\n";
  out += FormatTable({
      {"  capacity", Grouped(static_cast<double>(d.capacity)), "elements = " + Grouped(profile.fast_memory_bytes) + " B / " + el},
      {"  bandwidth", Readable(d.bandwidth), "elements per cycle = " + Readable(profile.bandwidth_bytes_per_cycle) + " B/cycle / " + el},
      {"  native", n, "= the matrix unit's side"},
      {"  MatMul base", Readable(d.matmul_base),
       "per " + n + "x" + n + "x" + n + " tile = " + n + "^3 / " + Readable(profile.macs_per_cycle) +
           " MACs per cycle (a MatMul with reduction K: " + Readable(d.matmul_base) + " x ceil(K/" + n + ") per output tile)"},
      {"  Pointwise base", Readable(d.pointwise_base),
       "per " + n + "x" + n + " tile = " + n + "^2 / " + Readable(profile.vector_elements_per_cycle) + " elements per cycle"},
      {"  balance", Fixed(d.balance, 2),
       "= (" + n + "^2 / " + Readable(d.bandwidth) + ") / " + Readable(d.matmul_base) +
           ": time to load a native tile over time to multiply one"},
      {"  tiles that fit", Readable(d.tiles_that_fit), "= " + Grouped(static_cast<double>(d.capacity)) + " / " + n + "^2"},
  });
  if (d.chip.any()) {
    out += "\nchip rules (docs/cost-model.md H1-H6; capacities in elements of " + el + "):\n";
    const std::string text = DescribeChipRules(d.chip);
    size_t begin = 0;
    while (begin < text.size()) {
      const size_t end = std::min(text.find('\n', begin), text.size());
      out += "  " + text.substr(begin, end - begin) + "\n";
      begin = end + 1;
    }
  }
  if (!profile.sources.empty()) {
    out += "\nsources:\n";
    for (const std::string& source : profile.sources) out += "  - " + source + "\n";
  }
  if (!profile.notes.empty()) out += "\nnotes: " + profile.notes + "\n";
  return out;
}

std::string HardwareProfileJson(const HardwareProfile& profile, int indent) {
  const DerivedHardware d = Derive(profile);
  const std::string pad(indent, ' ');
  std::string out = "{\n";
  const auto field = [&](const std::string& key, const std::string& value, bool last = false) {
    out += pad + "  " + JsonString(key) + ": " + value + (last ? "\n" : ",\n");
  };
  field("name", JsonString(profile.name));
  field("description", JsonString(profile.description));
  field("origin", JsonString(profile.origin));
  field("dtype", profile.dtype.empty() ? "null" : JsonString(profile.dtype));
  field("element_bytes", std::to_string(profile.element_bytes));
  field("fast_memory_bytes", FormatNumber(profile.fast_memory_bytes));
  field("bandwidth_bytes_per_cycle", FormatNumber(profile.bandwidth_bytes_per_cycle));
  field("clock_hz", profile.clock_hz > 0 ? FormatNumber(profile.clock_hz) : "null");
  field("matrix_unit", std::to_string(profile.native));
  field("macs_per_cycle", FormatNumber(profile.macs_per_cycle));
  field("vector_elements_per_cycle", FormatNumber(profile.vector_elements_per_cycle));
  field("derived", "{\"capacity\": " + std::to_string(d.capacity) + ", \"bandwidth\": " + FormatNumber(d.bandwidth) +
                       ", \"native\": " + std::to_string(d.native) + ", \"matmul_base\": " + FormatNumber(d.matmul_base) +
                       ", \"pointwise_base\": " + FormatNumber(d.pointwise_base) + ", \"balance\": " +
                       FormatNumber(d.balance) + ", \"tiles_that_fit\": " + FormatNumber(d.tiles_that_fit) + "}");
  if (d.chip.any()) {  // only with rules: the JSON of a profile without them is unchanged
    const ChipRules& c = d.chip;
    std::string roles;
    if (c.double_staging) roles += "\"staging\"";
    if (c.double_accumulator) roles += std::string(roles.empty() ? "" : ", ") + "\"accumulator\"";
    if (c.double_vector) roles += std::string(roles.empty() ? "" : ", ") + "\"vector\"";
    field("chip_rules", "{\"staging_capacity\": " + std::to_string(c.staging_capacity) +
                            ", \"accumulator_capacity\": " + std::to_string(c.accumulator_capacity) +
                            ", \"vector_capacity\": " + std::to_string(c.vector_capacity) + ", \"double_buffer\": [" +
                            roles + "], \"tile_base\": [" + std::to_string(c.base_w) + ", " + std::to_string(c.base_h) +
                            ", " + std::to_string(c.base_k) + "], \"accumulator_factor\": " +
                            std::to_string(c.accumulator_factor) + ", \"wide_writeback\": " +
                            (c.wide_writeback ? "true" : "false") + ", \"prefetch\": " + (c.prefetch ? "true" : "false") +
                            (c.two_paths() ? ", \"weight_bandwidth\": " + FormatNumber(c.weight_bandwidth) +
                                                 ", \"weight_fifo_capacity\": " + std::to_string(c.weight_fifo_capacity)
                                           : std::string()) +
                            "}");
  }
  std::string sources = "[";
  for (size_t i = 0; i < profile.sources.size(); ++i) {
    sources += (i > 0 ? ", " : "") + JsonString(profile.sources[i]);
  }
  field("sources", sources + "]");
  field("notes", JsonString(profile.notes), true);
  return out + pad + "}";
}

std::string HardwareListJson(const std::vector<HardwareProfile>& profiles) {
  std::string out = "[";
  for (size_t i = 0; i < profiles.size(); ++i) {
    out += (i > 0 ? ",\n  " : "\n  ") + HardwareProfileJson(profiles[i], 2);
  }
  return out + (profiles.empty() ? "]\n" : "\n]\n");
}

}  // namespace annealer
