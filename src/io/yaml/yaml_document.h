// Loading one YAML document with one-line, located errors; shared by the readers of YAML
// files (src/io/yaml/config for search hyperparameters, src/import/hardware_profile for hardware profiles).
#pragma once

// yaml-cpp 0.7's node templates trip GCC 12's -Wdangling-pointer (a false positive in the
// library header, reported upstream); keep our own build output clean.
#pragma GCC diagnostic push
#ifndef __clang__  // clang (the fuzz build) has no such warning
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif
#include <yaml-cpp/yaml.h>
#pragma GCC diagnostic pop

#include <stdexcept>
#include <string>

namespace annealer {

// A YAML text that is not one well-formed document; the message is one line and starts with
// the source and line ("configs/x.yaml:7: YAML syntax error: ...").
struct YamlDocumentError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "<source>:<line>" (1-based), or just `source` when the mark is null.
std::string Located(const std::string& source, const YAML::Mark& mark);

// Parses `text`, which must hold at most one document (an empty text gives a null node).
// Throws YamlDocumentError on a syntax error or on several documents. Safe against yaml-cpp
// 0.7's endless loop on a line starting with ',' (config_fuzz).
YAML::Node LoadOneYamlDocument(const std::string& text, const std::string& source);

}  // namespace annealer
