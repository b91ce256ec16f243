#include "src/io/run_log.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "src/io/json_fields.h"
#include "src/io/text_format.h"

namespace annealer {

std::string RunLogLine(const RunLogEntry& entry) {
  return "{\"seconds\": " + FormatNumber(entry.seconds) + ", \"latency\": " +
         FormatNumber(entry.latency) + ", \"worker\": " + JsonString(entry.worker) +
         ", \"lower_bound\": " + FormatNumber(entry.lower_bound) + "}\n";
}

std::vector<RunLogEntry> ParseRunLog(const std::string& text, const std::string& origin) {
  std::vector<RunLogEntry> entries;
  simdjson::dom::parser parser;
  size_t begin = 0;
  for (int line = 1; begin < text.size(); ++line) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const std::string_view content(text.data() + begin, end - begin);
    begin = end + 1;
    if (content.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = origin + ":" + std::to_string(line);
    const JsonField root(ParseJsonDocument(parser, content, where), where, "");
    root.RequireObject();
    RunLogEntry entry;
    const JsonField seconds = root.Member("seconds");
    entry.seconds = seconds.FiniteNumber();
    if (entry.seconds < 0) seconds.Fail("must not be negative, got " + seconds.Describe());
    const JsonField latency = root.Member("latency");
    entry.latency = latency.FiniteNumber();
    if (entry.latency < 0) latency.Fail("must not be negative, got " + latency.Describe());
    entry.worker = std::string(root.Member("worker").String());
    const JsonField bound = root.Member("lower_bound");
    entry.lower_bound = bound.FiniteNumber();
    if (entry.lower_bound < 0) bound.Fail("must not be negative, got " + bound.Describe());
    entries.push_back(std::move(entry));
  }
  return entries;
}

std::vector<RunLogEntry> ReadRunLog(const std::string& path) {
  return ParseRunLog(ReadTextFile(path), path);
}

RunLogWriter::RunLogWriter(const std::string& path) {
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr) {
    throw std::runtime_error("cannot write the log " + path + ": " + std::strerror(errno));
  }
}

RunLogWriter::~RunLogWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

bool RunLogWriter::Append(const RunLogEntry& entry) {
  if (failed_) return false;
  const std::string line = RunLogLine(entry);
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    failed_ = true;
  }
  return !failed_;
}

}  // namespace annealer
