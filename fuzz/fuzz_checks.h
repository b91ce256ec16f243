// Shared by the libFuzzer targets: the promise every reader makes about bad input (README, exit
// codes): one exception of the documented type whose message is ONE line that starts with the
// input's name and then names a field. Anything else (another exception, a crash, a sanitizer
// report, a message on several lines) is a finding: the target aborts so libFuzzer keeps the
// input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace annealer::fuzz {

[[noreturn]] inline void Finding(const std::string& what) {
  std::fprintf(stderr, "FUZZ FINDING: %s\n", what.c_str());
  std::abort();
}

// `message` must be one printable line "<origin>: <field>: <what>" (a config error may put
// ":<line>" after the origin).
inline void CheckErrorMessage(std::string_view message, std::string_view origin) {
  for (const char c : message) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      Finding("error message with a control character: " + std::string(message));
    }
  }
  if (message.substr(0, origin.size()) != origin) {
    Finding("error message does not start with the input's name: " + std::string(message));
  }
  const std::string_view rest = message.substr(origin.size());
  const std::size_t colon = rest.find(": ");
  if (colon == std::string_view::npos || colon + 2 >= rest.size()) {
    Finding("error message names no field or reason: " + std::string(message));
  }
}

}  // namespace annealer::fuzz
