// File helpers shared by the tests that write and read real files or read the bundled problems.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "src/io/contest/problem_reader.h"

namespace annealer::testing {

// One of the bundled problems (problems/NAME), read by the project's reader.
inline Problem ReadBundledProblem(const std::string& name) {
  return ReadProblemFile(std::string(ANNEALER_SOURCE_DIR) + "/problems/" + name);
}

// A fresh, empty directory named after the test file's `prefix`, this process and `name`.
inline std::filesystem::path ScratchDir(const std::string& prefix, const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("annealer-" + prefix + "-" + std::to_string(::getpid()) + "-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The whole content of a file ("" when it cannot be read).
inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace annealer::testing
