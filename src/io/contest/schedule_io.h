// The contest's solution format (spec A.2) <-> eval::Schedule, and atomic file writes.
// The reader checks structure only (types, integers, list lengths, 3-entry granularities), with
// the same one-line InputError style as the problem reader; whether the schedule obeys the
// rules is the oracle's job (eval/oracle.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "src/io/json_fields.h"

namespace annealer {

// Keys: "subgraphs", "granularities", "tensors_to_retain" (required, equal lengths);
// "traversal_orders" (optional; missing or null = raster everywhere; entries may be null);
// "subgraph_latencies" (optional; kept as Schedule::reported_latencies).
Schedule ReadScheduleFile(const std::string& path);
Schedule ParseSchedule(std::string_view json, const std::string& origin);

// Compact, readable JSON with one line per key; every number round-trips exactly; nullopt
// traversals are written as null. `latencies` become "subgraph_latencies" and must have one
// entry per subgraph (throws std::invalid_argument otherwise, or for a non-finite latency).
std::string ScheduleToJson(const Schedule& schedule, const std::vector<Latency>& latencies);

// Writes `content` to a temporary file in the directory of `path`, fsyncs it and renames it
// over `path`, so that readers see the old file or the complete new one, never a prefix.
// Throws std::runtime_error naming the path on any failure and leaves no temporary file.
void WriteFileAtomic(const std::string& path, std::string_view content);

}  // namespace annealer
