// YAML hyperparameters, --set and durations: every rejection, the round trip of --print-config,
// and the committed configs/*.yaml files.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "src/io/yaml/config.h"
#include "tests/support/graph_builder.h"

namespace annealer {
namespace {

// The message of the ConfigError thrown by `action` ("" if none was thrown).
std::string ErrorOf(const std::function<void()>& action) {
  try {
    action();
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

std::string YamlError(const std::string& text) {
  SearchParams params;
  return ErrorOf([&] { ApplyYamlText(text, "t.yaml", params); });
}

std::string SetError(const std::string& assignment) {
  SearchParams params;
  return ErrorOf([&] { ApplySetting(assignment, params); });
}

std::string DurationError(const std::string& text) {
  return ErrorOf([&] { ParseDuration(text); });
}

bool StartsWith(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string ConfigPath(const std::string& name) {
  return std::string(ANNEALER_SOURCE_DIR) + "/configs/" + name;
}

TEST_CASE("config: workers.partial_edge_tiles auto is on only where a dimension is not a multiple of the native side") {
  // A tensor of 197 rows: native (128) and power-of-two tiles leave a partial edge tile anyway.
  const auto problem = [](Elements rows) {
    testing::GraphBuilder b(30000, 10);
    const TensorId x = b.Tensor(rows, 256);
    const TensorId w = b.Tensor(256, 128);
    const TensorId y = b.Tensor(rows, 128);
    b.Op(OpKind::MatMul, {x, w}, y, 1000);
    return b.Build();
  };
  SearchParams params;
  REQUIRE(params.workers.partial_edge_tiles == Switch::kAuto);
  CHECK(ResolveAuto(params, problem(256)).workers.partial_edge_tiles == Switch::kOff);
  CHECK(ResolveAuto(params, problem(197)).workers.partial_edge_tiles == Switch::kOn);
  ApplySetting("workers.partial_edge_tiles=false", params);
  CHECK(ResolveAuto(params, problem(197)).workers.partial_edge_tiles == Switch::kOff);
  ApplySetting("workers.partial_edge_tiles=true", params);
  CHECK(ResolveAuto(params, problem(256)).workers.partial_edge_tiles == Switch::kOn);
  ApplySetting("workers.partial_edge_tiles=auto", params);
  CHECK(params.workers.partial_edge_tiles == Switch::kAuto);
}

}  // namespace

TEST_CASE("config: a YAML file sets nested and top-level keys") {
  SearchParams params;
  ApplyYamlText(
      "seed: 42\n"
      "threads: 3\n"
      "deterministic: true\n"
      "sa:\n"
      "  cooling: 0.9\n"
      "  moves_per_temperature: 77\n"
      "workers: {sa_share: 0.25, polish: false}\n",
      "t.yaml", params);
  CHECK(params.seed == 42);
  CHECK(params.threads == 3);
  CHECK(params.deterministic);
  CHECK(params.sa.cooling == 0.9);
  CHECK(params.sa.moves_per_temperature == 77);
  CHECK(params.workers.sa_share == 0.25);
  CHECK_FALSE(params.workers.polish);
  // Untouched keys keep their defaults.
  CHECK(params.ga.population == SearchParams{}.ga.population);
}

TEST_CASE("config: an empty document or an empty section changes nothing") {
  SearchParams params;
  ApplyYamlText("", "t.yaml", params);
  ApplyYamlText("# only a comment\n", "t.yaml", params);
  ApplyYamlText("sa:\n  # cooling: 0.9\n", "t.yaml", params);
  CHECK(params.sa.cooling == SearchParams{}.sa.cooling);
}

TEST_CASE("config: unknown keys are rejected with file and line and the known keys") {
  CHECK(StartsWith(YamlError("seed: 1\nsa:\n  temperature: 5\n"),
                   "t.yaml:3: unknown key \"sa.temperature\" (known keys of sa: initial_temperature, "));
  CHECK(StartsWith(YamlError("sede: 1\n"), "t.yaml:1: unknown key \"sede\" (known top-level keys: seed, "));
  CHECK(StartsWith(YamlError("nosuch:\n  cooling: 1\n"), "t.yaml:1: unknown key \"nosuch\" (known top-level keys: "));
  // Dotted keys may also be written flat; they are checked the same way.
  CHECK(StartsWith(YamlError("sa.colling: 1\n"), "t.yaml:1: unknown key \"sa.colling\" (known keys of sa: "));
  CHECK(StartsWith(YamlError("sa:\n  cooling:\n    deeper: 1\n"), "t.yaml:3: sa.cooling expects a real number, not a map"));
}

TEST_CASE("config: out-of-range values are rejected quoting key and value and range") {
  CHECK(StartsWith(YamlError("sa:\n  cooling: 1.5\n"), "t.yaml:2: sa.cooling: 1.5 is out of range ["));
  CHECK(StartsWith(YamlError("threads: -1\n"), "t.yaml:1: threads: -1 is out of range [0, "));
  CHECK(StartsWith(YamlError("ga:\n  population: 1\n"), "t.yaml:2: ga.population: 1 is out of range [2, "));
  CHECK(StartsWith(YamlError("seed: 99999999999999999999\n"),
                   "t.yaml:1: seed: 99999999999999999999 is out of range [0, "));
  CHECK(StartsWith(YamlError("workers:\n  sa_share: 1e400\n"), "t.yaml:2: workers.sa_share: 1e400 is out of range [0, 1]"));
}

TEST_CASE("config: values of the wrong type are rejected") {
  CHECK(YamlError("threads: abc\n") == "t.yaml:1: threads expects an integer, got \"abc\"");
  CHECK(YamlError("threads: 1.5\n") == "t.yaml:1: threads expects an integer, got \"1.5\"");
  CHECK(YamlError("threads: 2e3\n") == "t.yaml:1: threads expects an integer, got \"2e3\"");
  CHECK(YamlError("sa:\n  cooling: fast\n") == "t.yaml:2: sa.cooling expects a real number, got \"fast\"");
  CHECK(YamlError("sa:\n  cooling: .nan\n") == "t.yaml:2: sa.cooling expects a real number, got \".nan\"");
  CHECK(YamlError("sa:\n  cooling: inf\n") == "t.yaml:2: sa.cooling expects a real number, got \"inf\"");
  CHECK(YamlError("deterministic: 1\n") ==
        "t.yaml:1: deterministic expects a bool (true or false), got \"1\"");
  CHECK(YamlError("deterministic: yes\n") ==
        "t.yaml:1: deterministic expects a bool (true or false), got \"yes\"");
  CHECK(YamlError("workers:\n  partial_edge_tiles: maybe\n") ==
        "t.yaml:2: workers.partial_edge_tiles expects true, false or auto, got \"maybe\"");
  CHECK(YamlError("deterministic: auto\n") ==
        "t.yaml:1: deterministic expects a bool (true or false), got \"auto\"");
  CHECK(YamlError("seed: \"5\"\n") == "t.yaml:1: seed expects an integer, got the string \"5\"");
  CHECK(YamlError("seed: [1, 2]\n") == "t.yaml:1: seed expects an integer, not a list");
  CHECK(YamlError("seed:\n") == "t.yaml:1: seed has no value; it expects an integer");
  CHECK(StartsWith(YamlError("sa: 3\n"), "t.yaml:1: \"sa\" is a section and expects a map of its keys ("));
}

TEST_CASE("config: malformed YAML and duplicate keys and a non-map document are rejected") {
  CHECK(YamlError("seed: 1\nseed: 2\n") == "t.yaml:2: duplicate key \"seed\"");
  CHECK(YamlError("sa:\n  cooling: 0.9\nsa:\n  cooling: 0.8\n") == "t.yaml:3: duplicate key \"sa\"");
  CHECK(YamlError("sa.cooling: 0.9\nsa:\n  cooling: 0.8\n") == "t.yaml:3: duplicate key \"sa.cooling\"");
  CHECK(StartsWith(YamlError("sa:\n  cooling: [0.9\n"), "t.yaml:"));
  CHECK(YamlError("sa:\n  cooling: [0.9\n").find("YAML syntax error") != std::string::npos);
  CHECK(StartsWith(YamlError("- 1\n- 2\n"), "t.yaml:1: expected a map of keys at the top level"));
  CHECK(YamlError("seed: 1\n---\nseed: 2\n") == "t.yaml: expected one YAML document, found 2");
  SearchParams params;
  CHECK(StartsWith(ErrorOf([&] { ApplyYamlFile("/nonexistent/x.yaml", params); }),
                   "cannot read config file /nonexistent/x.yaml: "));
}

TEST_CASE("config: --set applies one key=value with the same checks") {
  SearchParams params;
  ApplySetting("sa.cooling=0.9", params);
  ApplySetting("workers.polish=false", params);
  ApplySetting("seed=7", params);
  CHECK(params.sa.cooling == 0.9);
  CHECK_FALSE(params.workers.polish);
  CHECK(params.seed == 7);
  CHECK(SetError("sa.cooling") == "--set sa.cooling: expected key=value (e.g. --set sa.cooling=0.9)");
  CHECK(StartsWith(SetError("sa.colling=0.9"), "--set sa.colling=0.9: unknown key \"sa.colling\" (known keys of sa: "));
  CHECK(SetError("sa.cooling=") == "--set sa.cooling=: sa.cooling expects a real number, got \"\"");
  CHECK(SetError("threads=two") == "--set threads=two: threads expects an integer, got \"two\"");
  CHECK(StartsWith(SetError("sa.cooling=2"), "--set sa.cooling=2: sa.cooling: 2 is out of range ["));
  CHECK(StartsWith(SetError("sa=1"), "--set sa=1: unknown key \"sa\" (known top-level keys: "));
}

TEST_CASE("config: durations") {
  CHECK(ParseDuration("500ms").count() == 500);
  CHECK(ParseDuration("30s").count() == 30000);
  CHECK(ParseDuration("2m").count() == 120000);
  CHECK(ParseDuration("1.5s").count() == 1500);
  CHECK(ParseDuration("0.25m").count() == 15000);
  const std::string usage = "expected a number followed by ms, s or m (e.g. 500ms, 30s, 2m)";
  CHECK(DurationError("") == "bad duration \"\": " + usage);
  CHECK(DurationError("fast") == "bad duration \"fast\": " + usage);
  CHECK(DurationError("-1s") == "bad duration \"-1s\": " + usage);
  CHECK(DurationError("1.2.3s") == "bad duration \"1.2.3s\": " + usage);
  CHECK(DurationError("60") == "bad duration \"60\": missing unit; write ms, s or m (e.g. 500ms, 30s, 2m)");
  CHECK(DurationError("1h") == "bad duration \"1h\": unknown unit \"h\"; write ms, s or m (e.g. 500ms, 30s, 2m)");
  CHECK(DurationError("1e3s") == "bad duration \"1e3s\": unknown unit \"e3s\"; write ms, s or m (e.g. 500ms, 30s, 2m)");
  CHECK(DurationError("0s") == "bad duration \"0s\": must be at least 1ms");
  CHECK(DurationError("0.4ms") == "bad duration \"0.4ms\": must be at least 1ms");
  CHECK(DurationError("20000m") == "bad duration \"20000m\": must be at most a week");
}

TEST_CASE("config: --print-config output loads back to the same params") {
  // Move every key away from its default to a value that exercises formatting (fractions,
  // large integers, flipped bools).
  SearchParams changed;
  for (const ParamSpec& spec : ParamTable()) {
    double value = 0;
    switch (spec.type) {
      case ParamType::kBool:
        value = spec.get(changed) != 0 ? 0 : 1;
        break;
      case ParamType::kSwitch:
        value = spec.get(changed) == 2 ? 0 : 2;
        break;
      case ParamType::kInt:
        value = std::floor(spec.min + (spec.max - spec.min) * 0.37);
        break;
      case ParamType::kReal:
        value = spec.min + (spec.max - spec.min) * 0.3713;
        break;
    }
    spec.set(changed, value);
    REQUIRE(spec.get(changed) == value);
  }
  const std::string text = FormatConfigYaml(changed);
  SearchParams loaded;
  ApplyYamlText(text, "print-config", loaded);
  for (const ParamSpec& spec : ParamTable()) {
    INFO(spec.key);
    CHECK(spec.get(loaded) == spec.get(changed));
    CHECK(spec.get(loaded) != spec.get(SearchParams{}));
  }
  CHECK(FormatConfigYaml(loaded) == text);
}

TEST_CASE("config: the defaults are valid and configs/default.yaml is the generated text") {
  CHECK(ValidateParams(SearchParams{}) == "");
  INFO("search/params.cc changed? regenerate: build/annealer --print-config > configs/default.yaml");
  CHECK(ReadFile(ConfigPath("default.yaml")) == FormatConfigYaml(SearchParams{}));
}

TEST_CASE("config: the bundled presets load and validate") {
  for (const char* name : {"default.yaml", "quick.yaml", "deterministic.yaml"}) {
    INFO(name);
    SearchParams params;
    CHECK(ErrorOf([&] { ApplyYamlFile(ConfigPath(name), params); }) == "");
    CHECK(ValidateParams(params) == "");
  }
  SearchParams deterministic;
  ApplyYamlFile(ConfigPath("deterministic.yaml"), deterministic);
  CHECK(deterministic.deterministic);
  CHECK(deterministic.max_epochs > 0);
}

TEST_CASE("config: keys and values with line breaks are quoted on one line") {
  // A quoted YAML key or a block scalar carries real line breaks; the message must not.
  CHECK(StartsWith(YamlError("\"se\\ned\": 1\n"), "t.yaml:1: unknown key \"se\\ned\" (known top-level keys: "));
  CHECK(YamlError("seed: |\n  1\n  2\n") == "t.yaml:1: seed expects an integer, got the string \"1\\n2\\n\"");
  CHECK(YamlError("seed: \"a\\u0007\"\n") == "t.yaml:1: seed expects an integer, got the string \"a\\x07\"");
}

TEST_CASE("config: yaml-cpp's own messages are kept on one line (fuzz regression)") {
  // config_fuzz, crash-edc76904: yaml-cpp reports "unknown escape character: " followed by the
  // raw byte, here a control byte; the message must stay one printable line.
  const std::string input("se33333333333333333333333333333333333333333333333\?333333333333333333\xa0\xa0\x01\x00\x10" "a\x00\x00" "333333333333\xdf" "3333333333333333333333333333333\xff" "333333333333333333333", 142);
  const std::string message = YamlError(input);
  CHECK(StartsWith(message, "t.yaml:1: YAML syntax error: unknown escape character: \\x"));
  for (const char c : message) CHECK(static_cast<unsigned char>(c) >= 0x20);
}

TEST_CASE("config: a token no YAML rule consumes is a syntax error, not a hang (fuzz regression)") {
  // config_fuzz, timeout-3c9b74fe: a line starting with ',' made yaml-cpp 0.7's LoadAll loop
  // for ever, allocating (a null document at the same place again and again).
  CHECK(YamlError(",\n") == "t.yaml:1: YAML syntax error: unexpected character");
  CHECK(YamlError("# annealer search hyperparameters\n,# master seed\nseed: 1\n") ==
        "t.yaml:2: YAML syntax error: unexpected character");
  // Documents are still counted, empty ones included.
  CHECK(YamlError("seed: 1\n---\n---\n") == "t.yaml: expected one YAML document, found 3");
  CHECK(YamlError("---\n---\n") == "t.yaml: expected one YAML document, found 2");
}

}  // namespace annealer
