#include "src/import/hardware_profile.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <span>
#include <utility>

#include "src/import/builtin_hardware.h"
#include "src/io/json_fields.h"
#include "src/io/message_text.h"
#include "src/io/problem_reader.h"
#include "src/io/yaml_document.h"

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
constexpr std::string_view kOptionalKeys[] = {"dtype", "element_bytes", "clock", "sources", "notes"};

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
    profile.bandwidth_bytes_per_cycle = Bandwidth(profile.clock_hz);
    profile.native = Integer("matrix_unit", kMaxTensorSide);
    profile.macs_per_cycle = Quantity("macs_per_cycle", {}, 1.0);
    profile.vector_elements_per_cycle = Quantity("vector_elements_per_cycle", {}, 1.0);
    if (values_.count("sources")) profile.sources = Sources();
    if (values_.count("notes")) profile.notes = Text("notes");
    const double capacity = std::floor(profile.fast_memory_bytes / profile.element_bytes);
    if (capacity < 1) FailKey("fast_memory", "fast_memory: holds no element of " + std::to_string(profile.element_bytes) + " bytes");
    if (capacity > 0x1p53) FailKey("fast_memory", "fast_memory: too large (more than 2^53 elements)");
    return profile;
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
    return "\"16 B/cycle\" or \"819 GB/s\"";
  }

  double Bandwidth(double clock_hz) const {
    std::vector<Unit> units(std::begin(kPerCycleUnits), std::end(kPerCycleUnits));
    units.insert(units.end(), std::begin(kPerSecondUnits), std::end(kPerSecondUnits));
    const double value = Quantity("bandwidth", units, 0);
    const std::string text = Scalar("bandwidth", "a number");
    const bool per_second = text.size() >= 2 && text.compare(text.size() - 2, 2, "/s") == 0;
    if (!per_second) return value;
    if (clock_hz == 0) {
      FailKey("bandwidth", "bandwidth: " + text +
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
  for (OpId op = 0; op < static_cast<OpId>(problem.ops.size()); ++op) {
    const OpKind kind = problem.ops[op].kind;
    problem.ops[op].base_cost = kind == OpKind::MatMul   ? MatMulBaseCost(hardware, problem.ReductionLength(op))
                                : kind == OpKind::Layout ? 0.0  // data movement costs no compute (spec L3)
                                                         : hardware.pointwise_base;
  }
}

}  // namespace annealer
