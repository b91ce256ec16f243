// Runs the built binary (ANNEALER_BINARY) for the end-to-end tests (cli_test, model import
// errors): exit code, stdout and stderr.
#pragma once

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/support/test_files.h"

namespace annealer::testing {

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string Quote(const std::string& word) {
  std::string out = "'";
  for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs `annealer <args>` (args already quoted) with stdout through popen and stderr to a file.
inline RunResult Run(const std::string& args) {
  const std::filesystem::path err_file =
      std::filesystem::temp_directory_path() / ("annealer-cli-test-" + std::to_string(::getpid()) + ".err");
  const std::string command = Quote(ANNEALER_BINARY) + " " + args + " 2>" + Quote(err_file.string());
  RunResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  size_t got;
  while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, got);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.err = ReadFile(err_file);
  std::filesystem::remove(err_file);
  return result;
}

}  // namespace annealer::testing
