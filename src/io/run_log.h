// The search's improvement log (`annealer ... --log RUN.jsonl`): one JSON object per line, one
// line per improvement of the best schedule, appended and flushed as it happens, so that a
// killed run leaves every line it had found. `annealer report --log` reads it back to draw the
// search's convergence.
//
//   {"seconds": 0.137, "latency": 367001.6, "worker": "sa", "lower_bound": 112000}
//
// `seconds` counts from the program's start; `latency` is the total of the improving schedule
// as the search priced it (the written schedule is re-checked by the oracle); `worker` is the
// kind that found it ("baseline", "sa", "ga", "greedy-fusion", ...); `lower_bound` is
// ComputeLowerBound(problem).total(). Lines come in time order with decreasing latency.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "eval/model/problem.h"

namespace annealer {

struct RunLogEntry {
  double seconds = 0;
  Latency latency = 0;
  std::string worker;
  Latency lower_bound = 0;
  bool operator==(const RunLogEntry&) const = default;
};

// One line of the log, with its newline.
std::string RunLogLine(const RunLogEntry& entry);

// Reads a whole log. Blank lines are skipped; anything else that is not such an object throws
// InputError naming the file and the line: "run.jsonl:3: latency: expected a number, ...".
std::vector<RunLogEntry> ReadRunLog(const std::string& path);
std::vector<RunLogEntry> ParseRunLog(const std::string& text, const std::string& origin);

// Appends lines to a log file, flushing each one. Not thread-safe: the search's improvement
// callback is serialized.
class RunLogWriter {
 public:
  // Creates or truncates `path`; throws std::runtime_error "cannot write the log <path>: <why>".
  explicit RunLogWriter(const std::string& path);
  ~RunLogWriter();
  RunLogWriter(const RunLogWriter&) = delete;
  RunLogWriter& operator=(const RunLogWriter&) = delete;

  // False once a write failed (disk full, ...); later appends are dropped.
  bool Append(const RunLogEntry& entry);
  bool failed() const { return failed_; }

 private:
  std::FILE* file_ = nullptr;
  bool failed_ = false;
};

}  // namespace annealer
