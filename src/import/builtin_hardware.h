// The files of hardware/*.yaml, embedded at build time (CMake generates builtin_hardware.cc in
// the build tree from them; see CMakeLists.txt). Read through src/import/hardware_profile.h.
#pragma once

#include <cstddef>
#include <string_view>

namespace annealer::builtin_hardware {

struct File {
  std::string_view name;  // the file name without .yaml
  std::string_view text;
};

extern const File kFiles[];
extern const std::size_t kFileCount;

}  // namespace annealer::builtin_hardware
