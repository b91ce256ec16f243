// libFuzzer target: the YAML configuration loader (src/io/yaml/config.h) on arbitrary text. Accepted
// text must give a configuration that passes ValidateParams or is refused by it with a reason
// (as the search command does), and that survives the --print-config round trip exactly.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_checks.h"
#include "search/params.h"
#include "src/io/yaml/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace annealer;
  const std::string text(reinterpret_cast<const char*>(data), size);
  static const std::string origin = "fuzz.yaml";
  SearchParams params;
  try {
    ApplyYamlText(text, origin, params);
  } catch (const ConfigError& error) {
    fuzz::CheckErrorMessage(error.what(), origin);
    return 0;
  }
  (void)ValidateParams(params);
  SearchParams again;
  const std::string printed = FormatConfigYaml(params);
  try {
    ApplyYamlText(printed, "printed", again);
  } catch (const ConfigError& error) {
    fuzz::Finding(std::string("--print-config output does not load: ") + error.what());
  }
  if (FormatConfigYaml(again) != printed) fuzz::Finding("--print-config does not round-trip");
  return 0;
}
