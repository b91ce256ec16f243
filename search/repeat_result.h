// What the repeated-block start (search/repeats.h) reports to the driver's caller: shared by the
// driver, which fills it, and the search command, which prints it.
#pragma once

#include <cstdint>
#include <string>

#include "eval/problem.h"

namespace annealer {

struct RepeatResult {
  int blocks = 0;           // blocks the graph was cut into (repeated ones and the rest)
  int classes = 0;          // distinct blocks up to isomorphism (each solved once)
  int repeated_blocks = 0;  // blocks whose class occurs at least twice
  int largest_class = 0;    // occurrences of the most frequent class
  int block_ops = 0;        // ops of one block of the most frequent class
  double seconds = 0;       // detection, the sub-searches and the composition
  int64_t moves = 0;        // moves of the sub-searches
  // It ran alongside the workers' first epochs (SearchSummary::setup_seconds), not before them.
  bool overlapped = false;
  // The composed schedule's total (the evaluator's, = the sum of the blocks' totals); 0 when no
  // schedule was composed (`note` then says why).
  Latency total = 0;
  std::string note;
};

}  // namespace annealer
