#include "src/import/hardware_profile.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <numeric>
#include <span>
#include <utility>

#include "src/import/builtin_hardware.h"
#include "src/io/json_fields.h"
#include "src/io/message_text.h"
#include "src/io/contest/problem_reader.h"
#include "src/io/yaml/yaml_document.h"

namespace annealer {
namespace {

struct Unit {
  std::string_view name;
  double factor;  // to bytes, bytes per cycle, bytes per second or Hz
};

constexpr Unit kMemoryUnits[] = {{"B", 1},          {"KB", 1e3},        {"MB", 1e6},
                                 {"GB", 1e9},       {"KiB", 1024.0},    {"MiB", 1048576.0},
                                 {"GiB", 1073741824.0}};
constexpr Unit kPerCycleUnits[] = {{"B/cycle", 1}, {"bit/cycle", 0.125}};
constexpr Unit kPerSecondUnits[] = {
    {"B/s", 1},      {"KB/s", 1e3},         {"MB/s", 1e6},          {"GB/s", 1e9},
    {"TB/s", 1e12},  {"KiB/s", 1024.0},     {"MiB/s", 1048576.0},   {"GiB/s", 1073741824.0},
    {"TiB/s", 1099511627776.0}};
constexpr Unit kClockUnits[] = {{"Hz", 1}, {"kHz", 1e3}, {"MHz", 1e6}, {"GHz", 1e9}};

constexpr std::pair<std::string_view, int> kDtypes[] = {
    {"int8", 1}, {"uint8", 1}, {"fp8", 1},  {"int16", 2}, {"fp16", 2},
    {"bf16", 2}, {"int32", 4}, {"fp32", 4}, {"fp64", 8}};

// Every key a profile may have; the required ones first.
constexpr std::string_view kRequiredKeys[] = {"name",        "description",    "fast_memory",
                                              "bandwidth",   "matrix_unit",    "macs_per_cycle",
                                              "vector_elements_per_cycle"};
constexpr std::string_view kOptionalKeys[] = {"dtype",          "element_bytes",     "clock",
                                              "sources",        "notes",             "staging_buffer",
                                              "accumulator_buffer", "vector_buffer", "double_buffer",
                                              "tile_base",      "row_alignment",     "accumulator_dtype",
                                              "wide_writeback", "prefetch",          "weight_bandwidth",
                                              "weight_fifo"};

std::string KnownKeys() {
  std::string list;
  for (std::string_view key : kRequiredKeys) list += (list.empty() ? "" : ", ") + std::string(key);
  for (std::string_view key : kOptionalKeys) list += ", " + std::string(key);
  return list;
}

class ProfileReader {
 public:
  ProfileReader(const std::string& source, const HardwareOverrides& overrides)
      : source_(source), overrides_(overrides) {}

  [[noreturn]] void Fail(const YAML::Mark& mark, const std::string& message) const {
    // An empty document has no mark; its line is the first.
    throw InputError(mark.is_null() ? source_ + ":1" : Located(source_, mark), "", message);
  }

  // A value's error: located at its line, or named by the override that set it.
  [[noreturn]] void FailKey(const std::string& key, const std::string& message) const {
    const auto overridden = overridden_.find(key);
    if (overridden != overridden_.end()) {
      throw InputError(source_ + " with " + key + "=" + overridden->second, "", message);
    }
    Fail(values_.at(key).Mark(), message);
  }

  HardwareProfile Read(std::string_view text) {
    YAML::Node root;
    try {
      root = LoadOneYamlDocument(std::string(text), source_);
    } catch (const YamlDocumentError& error) {
      // "<source>:<line>: <what>": the located source is the error's origin.
      const std::string text = error.what();
      const size_t colon = text.find(": ", std::min(text.size(), source_.size()));
      if (colon == std::string::npos) throw InputError(source_, "", text);
      throw InputError(text.substr(0, colon), "", text.substr(colon + 2));
    }
    if (!root.IsMap()) {
      Fail(root.Mark(), "expected a map of keys at the top level (known keys: " + KnownKeys() + ")");
    }
    try {
      return Walk(root);
    } catch (const YAML::Exception& error) {
      throw InputError(Located(source_, error.mark), "", OneLineForMessage(error.msg));
    }
  }

 private:
  HardwareProfile Walk(const YAML::Node& root) {
    for (auto it = root.begin(); it != root.end(); ++it) {
      const YAML::Node key = it->first;  // copies: `->` yields a temporary pair
      const YAML::Node value = it->second;
      if (!key.IsScalar()) Fail(key.Mark(), "expected a key name");
      const std::string& name = key.Scalar();
      if (!IsKnownKey(name)) {
        Fail(key.Mark(), "unknown key " + QuoteForMessage(name) + " (known keys: " + KnownKeys() + ")");
      }
      if (!values_.emplace(name, value).second) Fail(key.Mark(), "duplicate key " + QuoteForMessage(name));
      if (value.IsNull()) Fail(key.Mark(), name + " has no value");
    }
    // After the file's own keys: its unknown or duplicate keys stay errors; a value is replaced.
    for (const auto& [name, value] : overrides_) {
      if (!IsKnownKey(name)) {
        throw InputError(source_ + " with " + name + "=" + value, "",
                         "unknown key " + QuoteForMessage(name) + " (known keys: " + KnownKeys() + ")");
      }
      values_[name] = YAML::Node(value);
      overridden_[name] = value;
    }
    for (std::string_view key : kRequiredKeys) {
      if (!values_.count(std::string(key))) {
        Fail(root.Mark(), "missing key " + QuoteForMessage(key) + " (required: " + RequiredList() + ")");
      }
    }
    HardwareProfile profile;
    profile.origin = source_;
    profile.name = Text("name");
    profile.description = Text("description");
    ReadElementSize(root, profile);
    profile.fast_memory_bytes = Quantity("fast_memory", kMemoryUnits, /*bare_unit_factor=*/1.0);
    if (values_.count("clock")) profile.clock_hz = Quantity("clock", kClockUnits, 0);
    profile.bandwidth_bytes_per_cycle = Bandwidth("bandwidth", profile.clock_hz);
    profile.native = Integer("matrix_unit", kMaxTensorSide);
    profile.macs_per_cycle = Quantity("macs_per_cycle", {}, 1.0);
    profile.vector_elements_per_cycle = Quantity("vector_elements_per_cycle", {}, 1.0);
    if (values_.count("sources")) profile.sources = Sources();
    if (values_.count("notes")) profile.notes = Text("notes");
    const double capacity = std::floor(profile.fast_memory_bytes / profile.element_bytes);
    if (capacity < 1) FailKey("fast_memory", "fast_memory: holds no element of " + std::to_string(profile.element_bytes) + " bytes");
    if (capacity > 0x1p53) FailKey("fast_memory", "fast_memory: too large (more than 2^53 elements)");
    ReadChipRules(profile);
    return profile;
  }

  // The optional chip rules (H1-H6), each checked against the rest of the profile.
  void ReadChipRules(HardwareProfile& profile) const {
    const std::pair<const char*, double*> buffers[] = {{"staging_buffer", &profile.staging_bytes},
                                                       {"accumulator_buffer", &profile.accumulator_bytes},
                                                       {"vector_buffer", &profile.vector_bytes}};
    for (const auto& [key, bytes] : buffers) {
      if (!values_.count(key)) continue;
      *bytes = Quantity(key, kMemoryUnits, 1.0);
      // A sweep that overrides fast_memory asks for a smaller chip: a buffer the file sized
      // larger shrinks with the memory it is part of. In the file itself it is a contradiction.
      if (*bytes > profile.fast_memory_bytes && overridden_.count("fast_memory") && !overridden_.count(key)) {
        *bytes = profile.fast_memory_bytes;
      }
      if (*bytes > profile.fast_memory_bytes) {
        FailKey(key, std::string(key) + ": " + Scalar(key, "a number") + " is larger than fast_memory (" +
                         Scalar("fast_memory", "a number") +
                         "), which every step's whole working set must also fit (a buffer is a part of it)");
      }
      if (std::floor(*bytes / profile.element_bytes) < 1) {
        FailKey(key, std::string(key) + ": holds no element of " + std::to_string(profile.element_bytes) + " bytes");
      }
    }
    if (values_.count("double_buffer")) {
      for (const auto& [role, at] : TextList("double_buffer")) {
        bool* flag = role == "staging"       ? &profile.double_staging
                     : role == "accumulator" ? &profile.double_accumulator
                     : role == "vector"      ? &profile.double_vector
                                             : nullptr;
        if (flag == nullptr) {
          Fail(at, "double_buffer: unknown role " + QuoteForMessage(role) + " (expected staging, accumulator, vector)");
        }
        if (*flag) Fail(at, "double_buffer: role " + QuoteForMessage(role) + " listed twice");
        *flag = true;
      }
    }
    if (values_.count("tile_base")) {
      const YAML::Node& value = values_.at("tile_base");
      std::vector<YAML::Node> items;
      if (value.IsSequence()) {
        for (const YAML::Node& item : value) items.push_back(item);
      } else {
        items.push_back(value);
      }
      if (items.size() != 1 && items.size() != 3) {
        FailKey("tile_base", "tile_base: expected one side or three [w, h, k], got " + std::to_string(items.size()));
      }
      for (size_t i = 0; i < 3; ++i) {
        const YAML::Node& item = items[items.size() == 1 ? 0 : i];
        const std::string text = item.IsScalar() ? item.Scalar() : "";
        int64_t side = 0;
        const auto parsed = std::from_chars(text.data(), text.data() + text.size(), side);
        if (parsed.ec != std::errc() || parsed.ptr != text.data() + text.size() || side < 1) {
          Fail(item.Mark(), "tile_base: expected a positive integer side, got " + QuoteForMessage(text));
        }
        if (side > profile.native) {
          Fail(item.Mark(), "tile_base: " + text + " is larger than matrix_unit " + std::to_string(profile.native) +
                                " (no tile side could be a multiple of it)");
        }
        profile.tile_base[i] = side;
      }
    }
    if (values_.count("row_alignment")) {
      profile.row_alignment_bytes = Quantity("row_alignment", kMemoryUnits, 1.0);
      const double elements = profile.row_alignment_bytes / profile.element_bytes;
      if (elements != std::floor(elements) || elements < 1) {
        FailKey("row_alignment", "row_alignment: " + Scalar("row_alignment", "a number") +
                                     " is not a whole number of " + std::to_string(profile.element_bytes) +
                                     "-byte elements");
      }
      const int64_t base_w = std::lcm(profile.tile_base[0], static_cast<int64_t>(elements));
      if (base_w > profile.native) {
        FailKey("row_alignment", "row_alignment: " + Scalar("row_alignment", "a number") + " (" +
                                     std::to_string(static_cast<int64_t>(elements)) + " elements) with tile_base w " +
                                     std::to_string(profile.tile_base[0]) + " needs w a multiple of " +
                                     std::to_string(base_w) + ", larger than matrix_unit " +
                                     std::to_string(profile.native));
      }
    }
    if (values_.count("accumulator_dtype")) {
      profile.accumulator_dtype = Text("accumulator_dtype");
      for (const auto& [name, bytes] : kDtypes) {
        if (name == profile.accumulator_dtype) profile.accumulator_element_bytes = bytes;
      }
      if (profile.accumulator_element_bytes == 0) {
        FailKey("accumulator_dtype", "accumulator_dtype: unknown dtype " + QuoteForMessage(profile.accumulator_dtype));
      }
      if (profile.accumulator_element_bytes < profile.element_bytes ||
          profile.accumulator_element_bytes % profile.element_bytes != 0) {
        FailKey("accumulator_dtype", "accumulator_dtype: " + profile.accumulator_dtype + " (" +
                                         std::to_string(profile.accumulator_element_bytes) +
                                         " bytes) is not a whole multiple of the " +
                                         std::to_string(profile.element_bytes) + "-byte element");
      }
    }
    if (values_.count("wide_writeback")) profile.wide_writeback = Boolean("wide_writeback");
    if (values_.count("prefetch")) {
      profile.prefetch = Boolean("prefetch");
      if (profile.prefetch && !profile.double_staging && !profile.double_vector) {
        FailKey("prefetch", "prefetch: true needs double_buffer to name staging or vector (the next step's loads "
                            "need a second buffer)");
      }
    }
    if (values_.count("weight_bandwidth")) {  // H6
      profile.weight_bandwidth_bytes_per_cycle = Bandwidth("weight_bandwidth", profile.clock_hz);
      if (profile.prefetch) {
        FailKey("weight_bandwidth", "weight_bandwidth: the weight path (H6) is not combined with prefetch: true (H5)");
      }
    }
    if (values_.count("weight_fifo")) {
      profile.weight_fifo_bytes = Quantity("weight_fifo", kMemoryUnits, 1.0);
      if (!values_.count("weight_bandwidth")) {
        FailKey("weight_fifo", "weight_fifo: needs weight_bandwidth (the weight path the FIFO sits on)");
      }
      if (std::floor(profile.weight_fifo_bytes / profile.element_bytes) < 1) {
        FailKey("weight_fifo", "weight_fifo: holds no element of " + std::to_string(profile.element_bytes) + " bytes");
      }
    }
  }

  bool Boolean(const std::string& key) const {
    const std::string text = Scalar(key, "true or false");
    if (text == "true") return true;
    if (text == "false") return false;
    FailKey(key, key + ": expected true or false, got " + QuoteForMessage(text));
  }

  // A list of texts (or one text), each with where it is.
  std::vector<std::pair<std::string, YAML::Mark>> TextList(const std::string& key) const {
    const YAML::Node& value = values_.at(key);
    std::vector<std::pair<std::string, YAML::Mark>> items;
    if (value.IsScalar()) return {{value.Scalar(), value.Mark()}};
    if (!value.IsSequence()) Fail(value.Mark(), key + ": expected a list of names, not a map");
    for (const YAML::Node& item : value) {
      if (!item.IsScalar()) Fail(item.Mark(), key + ": expected a list of names");
      items.emplace_back(item.Scalar(), item.Mark());
    }
    return items;
  }

  static bool IsKnownKey(const std::string& name) {
    return std::find(std::begin(kRequiredKeys), std::end(kRequiredKeys), name) != std::end(kRequiredKeys) ||
           std::find(std::begin(kOptionalKeys), std::end(kOptionalKeys), name) != std::end(kOptionalKeys);
  }

  static std::string RequiredList() {
    std::string list;
    for (std::string_view key : kRequiredKeys) list += (list.empty() ? "" : ", ") + std::string(key);
    return list + ", and dtype or element_bytes";
  }

  std::string Scalar(const std::string& key, const char* expected) const {
    const YAML::Node& value = values_.at(key);
    if (!value.IsScalar()) {
      FailKey(key, key + ": expected " + expected + ", not a " + (value.IsMap() ? "map" : "list"));
    }
    return value.Scalar();
  }

  std::string Text(const std::string& key) const {
    std::string text = Scalar(key, "a text");
    if (text.find_first_not_of(" \t") == std::string::npos) FailKey(key, key + ": is empty");
    // Folded scalars (>-) keep a final newline or two when written with '>'.
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    return text;
  }

  // "<number> <unit>" (the space is optional); `units` empty means a plain number. A number
  // without a unit is taken with `bare_unit_factor`, or refused when that is 0.
  double Quantity(const std::string& key, std::span<const Unit> units, double bare_unit_factor) const {
    const std::string text = Scalar(key, "a number");
    const std::string expected =
        units.empty() ? std::string("a positive number")
                      : "a positive number and a unit, e.g. " + ExampleOf(key);
    double value = 0;
    const char* begin = text.data();
    const char* end = text.data() + text.size();
    const auto parsed = std::from_chars(begin, end, value, std::chars_format::general);
    if (parsed.ec == std::errc::result_out_of_range) FailKey(key, key + ": " + QuoteForMessage(text) + " is out of range");
    if (parsed.ec != std::errc() || !std::isfinite(value)) {
      FailKey(key, key + ": expected " + expected + ", got " + QuoteForMessage(text));
    }
    std::string_view unit(parsed.ptr, static_cast<std::size_t>(end - parsed.ptr));
    while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
    double factor = 0;
    if (unit.empty()) {
      factor = bare_unit_factor;
      if (factor == 0) FailKey(key, key + ": " + text + " has no unit (expected " + UnitNames(units) + ")");
    } else if (units.empty()) {
      FailKey(key, key + ": expected " + expected + ", got " + QuoteForMessage(text));
    } else {
      for (const Unit& candidate : units) {
        if (candidate.name == unit) factor = candidate.factor;
      }
      if (factor == 0) {
        FailKey(key, key + ": unknown unit " + QuoteForMessage(unit) + " (expected " + UnitNames(units) + ")");
      }
    }
    if (value <= 0) FailKey(key, key + ": must be positive, got " + text);
    return value * factor;
  }

  static std::string UnitNames(std::span<const Unit> units) {
    std::string list;
    for (const Unit& unit : units) list += (list.empty() ? "" : ", ") + std::string(unit.name);
    return list;
  }

  static std::string ExampleOf(const std::string& key) {
    if (key == "fast_memory") return "\"128 MiB\"";
    if (key == "clock") return "\"1.5 GHz\"";
    if (key == "weight_fifo") return "\"256 KiB\"";
    return "\"16 B/cycle\" or \"819 GB/s\"";
  }

  double Bandwidth(const std::string& key, double clock_hz) const {
    std::vector<Unit> units(std::begin(kPerCycleUnits), std::end(kPerCycleUnits));
    units.insert(units.end(), std::begin(kPerSecondUnits), std::end(kPerSecondUnits));
    const double value = Quantity(key, units, 0);
    const std::string text = Scalar(key, "a number");
    const bool per_second = text.size() >= 2 && text.compare(text.size() - 2, 2, "/s") == 0;
    if (!per_second) return value;
    if (clock_hz == 0) {
      FailKey(key, key + ": " + text +
                       " needs a clock to become bytes per cycle (add e.g. \"clock: 1.5 GHz\", or give B/cycle)");
    }
    return value / clock_hz;
  }

  int64_t Integer(const std::string& key, int64_t max) const {
    const double value = Quantity(key, {}, 1.0);
    if (value != std::floor(value)) {
      FailKey(key, key + ": expected a positive integer, got " + Scalar(key, "a number"));
    }
    if (value > static_cast<double>(max)) {
      FailKey(key, key + ": " + Scalar(key, "a number") + " is too large (at most " + std::to_string(max) + ")");
    }
    return static_cast<int64_t>(value);
  }

  void ReadElementSize(const YAML::Node& root, HardwareProfile& profile) const {
    const bool has_dtype = values_.count("dtype") > 0;
    const bool has_bytes = values_.count("element_bytes") > 0;
    if (!has_dtype && !has_bytes) {
      Fail(root.Mark(), "missing key \"dtype\" (or element_bytes; required: " + RequiredList() + ")");
    }
    int dtype_bytes = 0;
    if (has_dtype) {
      profile.dtype = Text("dtype");
      for (const auto& [name, bytes] : kDtypes) {
        if (name == profile.dtype) dtype_bytes = bytes;
      }
      if (dtype_bytes == 0 && !has_bytes) {
        std::string known;
        for (const auto& [name, bytes] : kDtypes) known += (known.empty() ? "" : ", ") + std::string(name);
        FailKey("dtype", "dtype: unknown dtype " + QuoteForMessage(profile.dtype) + " (known: " + known +
                                "; or give element_bytes)");
      }
    }
    profile.element_bytes = dtype_bytes;
    if (has_bytes) {
      profile.element_bytes = static_cast<int>(Integer("element_bytes", 64));
      if (dtype_bytes != 0 && dtype_bytes != profile.element_bytes) {
        FailKey("element_bytes", "element_bytes: " + std::to_string(profile.element_bytes) +
                                        " disagrees with dtype " + profile.dtype + " (" +
                                        std::to_string(dtype_bytes) + " bytes)");
      }
    }
  }

  std::vector<std::string> Sources() const {
    const YAML::Node& value = values_.at("sources");
    if (value.IsScalar()) return {Text("sources")};
    if (!value.IsSequence()) Fail(value.Mark(), "sources: expected a list of texts, not a map");
    std::vector<std::string> sources;
    for (const YAML::Node& item : value) {
      if (!item.IsScalar() || item.Scalar().empty()) Fail(item.Mark(), "sources: expected a list of texts");
      sources.push_back(item.Scalar());
    }
    return sources;
  }

  const std::string& source_;
  const HardwareOverrides& overrides_;
  std::map<std::string, YAML::Node> values_;
  std::map<std::string, std::string> overridden_;  // key -> the override's text
};

}  // namespace

std::vector<std::string> BuiltinHardwareNames() {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < builtin_hardware::kFileCount; ++i) {
    names.emplace_back(builtin_hardware::kFiles[i].name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

HardwareProfile ParseHardwareProfile(std::string_view yaml_text, const std::string& source,
                                     const HardwareOverrides& overrides) {
  return ProfileReader(source, overrides).Read(yaml_text);
}

HardwareProfile LoadHardwareProfile(const std::string& name_or_path, const HardwareOverrides& overrides) {
  const auto ends_with = [&](std::string_view suffix) {
    return name_or_path.size() >= suffix.size() &&
           name_or_path.compare(name_or_path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (name_or_path.find('/') != std::string::npos || ends_with(".yaml") || ends_with(".yml")) {
    return ParseHardwareProfile(ReadTextFile(name_or_path), name_or_path, overrides);
  }
  for (std::size_t i = 0; i < builtin_hardware::kFileCount; ++i) {
    const builtin_hardware::File& file = builtin_hardware::kFiles[i];
    if (file.name != name_or_path) continue;
    HardwareProfile profile = ParseHardwareProfile(file.text, "hardware/" + name_or_path + ".yaml", overrides);
    profile.origin = "built-in";
    return profile;
  }
  std::string names;
  for (const std::string& name : BuiltinHardwareNames()) names += (names.empty() ? "" : ", ") + name;
  throw InputError("--hardware " + name_or_path, "", "unknown hardware profile " + QuoteForMessage(name_or_path) + " (built-in: " + names +
                   "; or give the path of a .yaml file)");
}

DerivedHardware Derive(const HardwareProfile& profile) {
  DerivedHardware derived;
  const double n = static_cast<double>(profile.native);
  derived.native = profile.native;
  derived.capacity = static_cast<Elements>(std::floor(profile.fast_memory_bytes / profile.element_bytes));
  derived.bandwidth = profile.bandwidth_bytes_per_cycle / profile.element_bytes;
  derived.matmul_base = n * n * n / profile.macs_per_cycle;
  derived.pointwise_base = n * n / profile.vector_elements_per_cycle;
  derived.balance = (n * n / derived.bandwidth) / derived.matmul_base;
  derived.tiles_that_fit = static_cast<double>(derived.capacity) / (n * n);
  ChipRules& chip = derived.chip;
  const auto elements = [&](double bytes) { return static_cast<Elements>(std::floor(bytes / profile.element_bytes)); };
  chip.staging_capacity = elements(profile.staging_bytes);
  chip.accumulator_capacity = elements(profile.accumulator_bytes);
  chip.vector_capacity = elements(profile.vector_bytes);
  chip.double_staging = profile.double_staging;
  chip.double_accumulator = profile.double_accumulator;
  chip.double_vector = profile.double_vector;
  chip.base_w = profile.tile_base[0];
  chip.base_h = profile.tile_base[1];
  chip.base_k = profile.tile_base[2];
  if (profile.row_alignment_bytes > 0) {
    chip.base_w = std::lcm(chip.base_w, static_cast<Elements>(profile.row_alignment_bytes / profile.element_bytes));
  }
  if (profile.accumulator_element_bytes > 0) {
    chip.accumulator_factor = profile.accumulator_element_bytes / profile.element_bytes;
  }
  chip.wide_writeback = profile.wide_writeback;
  chip.prefetch = profile.prefetch;
  chip.weight_bandwidth = profile.weight_bandwidth_bytes_per_cycle / profile.element_bytes;
  chip.weight_fifo_capacity = elements(profile.weight_fifo_bytes);
  return derived;
}

double MatMulBaseCost(const DerivedHardware& hardware, Elements reduction) {
  const Elements steps = (reduction + hardware.native - 1) / hardware.native;
  return hardware.matmul_base * static_cast<double>(std::max<Elements>(steps, 1));
}

void ApplyHardware(const DerivedHardware& hardware, Problem& problem) {
  problem.fast_memory_capacity = hardware.capacity;
  problem.slow_memory_bandwidth = hardware.bandwidth;
  problem.native = hardware.native;
  problem.chip = hardware.chip;
  for (OpId op = 0; op < static_cast<OpId>(problem.ops.size()); ++op) {
    const OpKind kind = problem.ops[op].kind;
    problem.ops[op].base_cost = kind == OpKind::MatMul   ? MatMulBaseCost(hardware, problem.ReductionLength(op))
                                : kind == OpKind::Layout ? 0.0  // data movement costs no compute (spec L3)
                                                         : hardware.pointwise_base;
  }
}

}  // namespace annealer
