// Search hyperparameters from YAML files and `--set key=value`, and back to YAML.
//
// The keys are exactly those of search::ParamTable(); a dotted key is a nested YAML map
// (`sa.cooling` is `sa: {cooling: ...}`). Everything is checked on the way in: an unknown key,
// a value of the wrong type or out of its range is a ConfigError whose one-line message quotes
// the key and value and names the source ("configs/x.yaml:7: ..." or "--set ...: ...").
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>

#include "search/params.h"

namespace annealer {

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The table entry for `key`, or nullptr.
const ParamSpec* FindParam(std::string_view key);

// Parses `text` as one value of `spec` and stores it in `params`. Integers take only digits
// (with an optional '-'), reals any finite decimal or exponent form, bools only true/false.
// Returns "" on success, else the reason without the source prefix, e.g.
// `sa.cooling: 1.5 is out of range [0.5, 0.99999]`.
std::string ApplyValue(const ParamSpec& spec, std::string_view text, SearchParams& params);

// Applies every key of a YAML document. `source` names the text in error messages.
// Throws ConfigError. Duplicate keys are rejected too (yaml-cpp would keep both silently).
void ApplyYamlText(const std::string& text, const std::string& source, SearchParams& params);

// Reads `path` and applies it as above. Throws ConfigError (also when unreadable).
void ApplyYamlFile(const std::string& path, SearchParams& params);

// Applies one `key=value` assignment, as given to --set. Throws ConfigError.
void ApplySetting(std::string_view assignment, SearchParams& params);

// The whole configuration as YAML: every key of ParamTable() in table order, grouped into nested
// maps, each preceded by a comment with its doc, type, range and default. Loading the result
// gives back `params` exactly (reals are printed in shortest round-trip form).
// FormatConfigYaml(SearchParams{}) is the text of configs/default.yaml.
std::string FormatConfigYaml(const SearchParams& params);

// The reference of every key of ParamTable() as Markdown: one table per section (key, default,
// type and range, doc), in table order. It is the generated part of docs/configuration.md (a
// test keeps the two equal), so the docs cannot drift from the keys the program accepts.
std::string FormatConfigMarkdown();

// A search time: a positive decimal number followed by `ms`, `s` or `m` ("500ms", "30s",
// "1.5m"). Throws ConfigError quoting the text otherwise (also for zero or more than a week).
std::chrono::milliseconds ParseDuration(std::string_view text);

}  // namespace annealer
