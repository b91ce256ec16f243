#include "src/io/yaml/config.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "src/io/message_text.h"
#include "src/io/yaml/yaml_document.h"

namespace annealer {
namespace {

std::string FormatReal(double value) {
  char buffer[64];
  // Shortest form that reads back to the same double, so --print-config round-trips exactly.
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

std::string FormatValue(const ParamSpec& spec, double value) {
  switch (spec.type) {
    case ParamType::kBool:
      return value != 0 ? "true" : "false";
    case ParamType::kSwitch:
      return value == 0 ? "false" : value == 1 ? "true" : "auto";
    case ParamType::kInt:
      return std::to_string(static_cast<int64_t>(value));
    case ParamType::kReal:
      return FormatReal(value);
  }
  return FormatReal(value);
}

const char* TypeName(ParamType type) {
  switch (type) {
    case ParamType::kBool:
      return "a bool (true or false)";
    case ParamType::kSwitch:
      return "true, false or auto";
    case ParamType::kInt:
      return "an integer";
    case ParamType::kReal:
      return "a real number";
  }
  return "a value";
}

std::string RangeText(const ParamSpec& spec) {
  std::string range = "[";
  range.append(FormatValue(spec, spec.min)).append(", ").append(FormatValue(spec, spec.max)).append("]");
  return range;
}

bool IsSection(std::string_view prefix) {
  for (const ParamSpec& spec : ParamTable()) {
    if (spec.key.size() > prefix.size() && spec.key.compare(0, prefix.size(), prefix) == 0 &&
        spec.key[prefix.size()] == '.') {
      return true;
    }
  }
  return false;
}

// The names directly under `section` ("" = top level), for the hint after an unknown key.
std::string KeysUnder(const std::string& section) {
  const std::string prefix = section.empty() ? "" : section + ".";
  std::vector<std::string> names;
  for (const ParamSpec& spec : ParamTable()) {
    if (spec.key.compare(0, prefix.size(), prefix) != 0) continue;
    std::string rest = spec.key.substr(prefix.size());
    rest = rest.substr(0, rest.find('.'));
    bool known = false;
    for (const std::string& name : names) known = known || name == rest;
    if (!known) names.push_back(rest);
  }
  std::string joined;
  for (const std::string& name : names) joined += (joined.empty() ? "" : ", ") + name;
  return joined;
}

std::string UnknownKeyMessage(const std::string& key) {
  const std::size_t dot = key.rfind('.');
  const std::string section = dot == std::string::npos ? "" : key.substr(0, dot);
  if (!section.empty() && !IsSection(section)) return "unknown key " + QuoteForMessage(key);
  return "unknown key " + QuoteForMessage(key) + " (known " +
         (section.empty() ? std::string("top-level keys") : "keys of " + section) + ": " +
         KeysUnder(section) + ")";
}

struct YamlWalk {
  const std::string& source;
  SearchParams& params;
  std::set<std::string> seen;

  [[noreturn]] void Fail(const YAML::Mark& mark, const std::string& message) const {
    throw ConfigError(Located(source, mark) + ": " + message);
  }

  void Map(const YAML::Node& map, const std::string& section) {
    for (auto it = map.begin(); it != map.end(); ++it) {
      // Copies: the iterator's `->` yields a temporary pair, so references would dangle (ASan:
      // stack-use-after-scope). A Node is a handle; copying it is cheap.
      const YAML::Node key_node = it->first;
      const YAML::Node value = it->second;
      if (!key_node.IsScalar() || key_node.Scalar().empty()) {
        Fail(key_node.Mark(), "expected a key name" +
                                  (section.empty() ? std::string() : " under " + section));
      }
      const std::string key = section.empty() ? key_node.Scalar() : section + "." + key_node.Scalar();
      if (!seen.insert(key).second) Fail(key_node.Mark(), "duplicate key " + QuoteForMessage(key));
      if (const ParamSpec* spec = FindParam(key)) {
        Leaf(*spec, key_node, value);
      } else if (IsSection(key)) {
        if (value.IsMap()) {
          Map(value, key);
        } else if (!value.IsNull()) {  // an empty section (all keys commented out) is fine
          Fail(value.Mark(), QuoteForMessage(key) + " is a section and expects a map of its keys (" +
                                 KeysUnder(key) + ")");
        }
      } else {
        Fail(key_node.Mark(), UnknownKeyMessage(key));
      }
    }
  }

  void Leaf(const ParamSpec& spec, const YAML::Node& key_node, const YAML::Node& value) {
    // An absent value sits after the key, maybe on the next line: point at the key instead.
    if (value.IsNull()) Fail(key_node.Mark(), spec.key + " has no value; it expects " + TypeName(spec.type));
    if (!value.IsScalar()) {
      Fail(value.Mark(), spec.key + " expects " + TypeName(spec.type) + ", not a " +
                             (value.IsMap() ? "map" : "list"));
    }
    // A quoted scalar is a string to YAML, whatever it spells.
    if (value.Tag() == "!") {
      Fail(value.Mark(), spec.key + " expects " + TypeName(spec.type) + ", got the string " +
                             QuoteForMessage(value.Scalar()));
    }
    const std::string error = ApplyValue(spec, value.Scalar(), params);
    if (!error.empty()) Fail(value.Mark(), error);
  }
};

}  // namespace

const ParamSpec* FindParam(std::string_view key) {
  for (const ParamSpec& spec : ParamTable()) {
    if (spec.key == key) return &spec;
  }
  return nullptr;
}

std::string ApplyValue(const ParamSpec& spec, std::string_view text, SearchParams& params) {
  const std::string quoted = QuoteForMessage(text);
  const auto wrong_type = [&] { return spec.key + " expects " + TypeName(spec.type) + ", got " + quoted; };
  const auto out_of_range = [&] {
    return spec.key + ": " + std::string(text) + " is out of range " + RangeText(spec);
  };
  double value = 0;
  switch (spec.type) {
    case ParamType::kBool:
    case ParamType::kSwitch:
      if (text == "true" || text == "True" || text == "TRUE") {
        value = 1;
      } else if (text == "false" || text == "False" || text == "FALSE") {
        value = 0;
      } else if (spec.type == ParamType::kSwitch && (text == "auto" || text == "Auto" || text == "AUTO")) {
        value = 2;
      } else {
        return wrong_type();
      }
      break;
    case ParamType::kInt: {
      std::string_view digits = text.substr(!text.empty() && text[0] == '+' ? 1 : 0);
      const std::string_view unsigned_part = digits.substr(!digits.empty() && digits[0] == '-' ? 1 : 0);
      if (unsigned_part.empty() ||
          unsigned_part.find_first_not_of("0123456789") != std::string_view::npos) {
        return wrong_type();
      }
      int64_t parsed = 0;
      const auto result = std::from_chars(digits.data(), digits.data() + digits.size(), parsed);
      if (result.ec == std::errc::result_out_of_range) return out_of_range();
      if (result.ec != std::errc() || result.ptr != digits.data() + digits.size()) return wrong_type();
      value = static_cast<double>(parsed);
      // Doubles hold every integer of the table's ranges exactly; beyond 2^53 the range check
      // below would compare rounded values, so reject those outright.
      if (parsed > (int64_t{1} << 53) || parsed < -(int64_t{1} << 53)) return out_of_range();
      break;
    }
    case ParamType::kReal: {
      const std::string_view number = text.substr(!text.empty() && text[0] == '+' ? 1 : 0);
      if (number.empty()) return wrong_type();
      const auto result = std::from_chars(number.data(), number.data() + number.size(), value,
                                          std::chars_format::general);
      if (result.ec == std::errc::result_out_of_range) return out_of_range();
      if (result.ec != std::errc() || result.ptr != number.data() + number.size()) return wrong_type();
      // from_chars accepts "inf" and "nan"; neither is a usable hyperparameter.
      if (!std::isfinite(value)) return wrong_type();
      break;
    }
  }
  if (value < spec.min || value > spec.max) return out_of_range();
  spec.set(params, value);
  return "";
}

void ApplyYamlText(const std::string& text, const std::string& source, SearchParams& params) {
  YAML::Node root;
  try {
    root = LoadOneYamlDocument(text, source);
  } catch (const YamlDocumentError& error) {
    throw ConfigError(error.what());
  }
  if (root.IsNull()) return;  // an empty file changes nothing
  if (!root.IsMap()) {
    throw ConfigError(Located(source, root.Mark()) +
                      ": expected a map of keys at the top level (known top-level keys: " +
                      KeysUnder("") + ")");
  }
  YamlWalk walk{source, params, {}};
  try {
    walk.Map(root, "");
  } catch (const YAML::Exception& error) {
    throw ConfigError(Located(source, error.mark) + ": " + OneLineForMessage(error.msg));
  }
}

void ApplyYamlFile(const std::string& path, SearchParams& params) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("cannot read config file " + path + ": " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError("cannot read config file " + path + ": " + std::strerror(errno));
  ApplyYamlText(text.str(), path, params);
}

void ApplySetting(std::string_view assignment, SearchParams& params) {
  const std::string source = "--set " + std::string(assignment);
  const std::size_t equals = assignment.find('=');
  if (equals == std::string_view::npos) {
    throw ConfigError(source + ": expected key=value (e.g. --set sa.cooling=0.9)");
  }
  const std::string key(assignment.substr(0, equals));
  const std::string_view value = assignment.substr(equals + 1);
  const ParamSpec* spec = FindParam(key);
  if (spec == nullptr) throw ConfigError(source + ": " + UnknownKeyMessage(key));
  const std::string error = ApplyValue(*spec, value, params);
  if (!error.empty()) throw ConfigError(source + ": " + error);
}

std::string FormatConfigYaml(const SearchParams& params) {
  static const SearchParams defaults;
  std::ostringstream out;
  out << "# annealer search hyperparameters. Keys mirror search/params.h (ParamTable) one to one;\n"
         "# a key left out keeps its default. `annealer --print-config` prints the effective\n"
         "# configuration in this form; configs/default.yaml is its output without options.\n";
  // Entries of one section are printed together, sections in the order of their first key.
  std::vector<std::string> open;  // the section path currently printed, one name per level
  std::vector<bool> printed(ParamTable().size(), false);
  const auto split = [](const std::string& key) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (std::size_t dot; (dot = key.find('.', start)) != std::string::npos; start = dot + 1) {
      parts.push_back(key.substr(start, dot - start));
    }
    parts.push_back(key.substr(start));
    return parts;
  };
  const auto& table = ParamTable();
  const auto emit = [&](std::size_t index) {
    const ParamSpec& spec = table[index];
    std::vector<std::string> parts = split(spec.key);
    const std::string name = parts.back();
    parts.pop_back();
    std::size_t common = 0;
    while (common < open.size() && common < parts.size() && open[common] == parts[common]) ++common;
    open.resize(common);
    for (std::size_t level = common; level < parts.size(); ++level) {
      if (level == 0) out << "\n";
      out << std::string(2 * level, ' ') << parts[level] << ":\n";
      open.push_back(parts[level]);
    }
    const std::string indent(2 * parts.size(), ' ');
    if (parts.empty()) out << "\n";
    out << indent << "# " << spec.doc << "\n"
        << indent << "# " << TypeName(spec.type);
    if (spec.type != ParamType::kBool && spec.type != ParamType::kSwitch) out << " in " << RangeText(spec);
    out << "; default " << FormatValue(spec, spec.get(defaults)) << "\n"
        << indent << name << ": " << FormatValue(spec, spec.get(params)) << "\n";
    printed[index] = true;
  };
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (printed[i]) continue;
    emit(i);
    // Pull later keys of the same top-level section forward so each section appears once.
    const std::vector<std::string> parts = split(table[i].key);
    if (parts.size() == 1) continue;
    for (std::size_t j = i + 1; j < table.size(); ++j) {
      const std::vector<std::string> other = split(table[j].key);
      if (!printed[j] && other.size() > 1 && other[0] == parts[0]) emit(j);
    }
  }
  return out.str();
}

std::string FormatConfigMarkdown() {
  static const SearchParams defaults;
  const auto section_of = [](const std::string& key) {
    const std::size_t dot = key.find('.');
    return dot == std::string::npos ? std::string() : key.substr(0, dot);
  };
  // A doc string is one table cell: a '|' in it would end the cell early.
  const auto cell = [](const std::string& text) {
    std::string escaped;
    for (const char c : text) {
      if (c == '|') escaped += '\\';
      escaped += c;
    }
    return escaped;
  };
  const auto& table = ParamTable();
  std::vector<std::string> sections;  // in the order of their first key, as in FormatConfigYaml
  for (const ParamSpec& spec : table) {
    const std::string section = section_of(spec.key);
    if (std::find(sections.begin(), sections.end(), section) == sections.end()) sections.push_back(section);
  }
  std::ostringstream out;
  for (const std::string& section : sections) {
    out << "\n#### " << (section.empty() ? std::string("top level") : "`" + section + ".*`") << "\n\n"
        << "| key | default | type and range | meaning |\n|---|---|---|---|\n";
    for (const ParamSpec& spec : table) {
      if (section_of(spec.key) != section) continue;
      out << "| `" << spec.key << "` | `" << FormatValue(spec, spec.get(defaults)) << "` | "
          << (spec.type == ParamType::kBool     ? std::string("true or false")
              : spec.type == ParamType::kSwitch ? std::string("true, false or auto")
                                                : std::string(spec.type == ParamType::kInt ? "integer" : "real") +
                                                      " in " + RangeText(spec))
          << " | " << cell(spec.doc) << " |\n";
    }
  }
  return out.str();
}

std::chrono::milliseconds ParseDuration(std::string_view text) {
  const auto fail = [&](const std::string& why) -> std::chrono::milliseconds {
    throw ConfigError("bad duration " + QuoteForMessage(text) + ": " + why);
  };
  const std::size_t unit_start = text.find_first_not_of("0123456789.");
  if (unit_start == 0 || text.empty()) {
    return fail("expected a number followed by ms, s or m (e.g. 500ms, 30s, 2m)");
  }
  const std::string_view number = text.substr(0, unit_start);
  const std::string_view unit = unit_start == std::string_view::npos ? "" : text.substr(unit_start);
  double factor_ms = 0;
  if (unit == "ms") {
    factor_ms = 1;
  } else if (unit == "s") {
    factor_ms = 1000;
  } else if (unit == "m") {
    factor_ms = 60000;
  } else if (unit.empty()) {
    return fail("missing unit; write ms, s or m (e.g. 500ms, 30s, 2m)");
  } else {
    return fail("unknown unit " + QuoteForMessage(unit) + "; write ms, s or m (e.g. 500ms, 30s, 2m)");
  }
  double value = 0;
  const auto result = std::from_chars(number.data(), number.data() + number.size(), value,
                                      std::chars_format::fixed);
  if (result.ec != std::errc() || result.ptr != number.data() + number.size()) {
    return fail("expected a number followed by ms, s or m (e.g. 500ms, 30s, 2m)");
  }
  const double ms = std::round(value * factor_ms);
  if (ms < 1) return fail("must be at least 1ms");
  if (ms > 7.0 * 24 * 3600 * 1000) return fail("must be at most a week");
  return std::chrono::milliseconds(static_cast<int64_t>(ms));
}

}  // namespace annealer
