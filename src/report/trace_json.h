// A schedule as a Chrome trace-event JSON file (the "JSON Array/Object Format" read by
// ui.perfetto.dev and chrome://tracing): one complete event ("ph": "X") per priced subgraph in
// execution order, on one track, 1 latency unit = 1 µs, with its ops, granularity, compute,
// memory and working set in args; a "working set" counter track; the per-step detail of small
// subgraphs nested under their subgraph event, capped in count; a broken rule as an instant
// event. Subgraph events tile the time axis from 0: their durations sum to the summary's total.
#pragma once

#include <cstdint>
#include <string>

#include "eval/model/problem.h"
#include "src/report/report_labels.h"
#include "src/report/schedule_summary.h"

namespace annealer {

struct TraceOptions {
  // Per-step events are written only for subgraphs of at most this many steps...
  int64_t max_steps_per_subgraph = 256;
  // ...and at most this many in the whole file (Perfetto stays quick, the file small).
  int64_t max_step_events = 4096;
  // ONNX names of the ops (an imported model): subgraph events are then named after their ops,
  // "subgraph 3: 12–20 conv2d_3 (Conv, conv-tap), 21 relu (Relu, elementwise)" (at most
  // kTraceNameRuns runs), and carry every op's label in args.op_labels.
  const ReportLabels* labels = nullptr;
};
constexpr size_t kTraceNameRuns = 3;

// `title` names the process track (e.g. "problem.json / schedule.json").
std::string TraceJson(const Problem& problem, const ScheduleSummary& summary,
                      const std::string& title, const TraceOptions& options = {});

}  // namespace annealer
