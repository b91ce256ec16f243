#include "src/report/trace_json.h"

#include <algorithm>

#include "src/io/json_fields.h"
#include "src/io/text_format.h"

namespace annealer {
namespace {

constexpr int kPid = 1;
constexpr int kTid = 1;

std::string IdArray(const std::vector<int32_t>& ids) {
  std::string out = "[";
  out += JoinIds(ids, ", ");
  return out += "]";
}

// ["conv2d_3 (Conv, conv-tap)", ...], one per id.
std::string LabelArray(const std::vector<int32_t>& ids, const std::vector<ItemLabel>& labels) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    const bool known = ids[i] >= 0 && ids[i] < static_cast<int32_t>(labels.size());
    out += (i ? ", " : "") + JsonString(known ? LabelText(labels[ids[i]]) : std::string());
  }
  return out += "]";
}

// Common head of an event on the schedule's track.
std::string EventHead(const char* phase, const std::string& name, const char* category,
                      Latency ts) {
  return "{\"ph\": \"" + std::string(phase) + "\", \"name\": " + JsonString(name) +
         ", \"cat\": \"" + category + "\", \"pid\": " + std::to_string(kPid) +
         ", \"tid\": " + std::to_string(kTid) + ", \"ts\": " + FormatNumber(ts);
}

std::string SubgraphArgs(const Problem& problem, const SubgraphSummary& s, int index,
                         const std::vector<ItemLabel>* labels) {
  const SubgraphReport& r = *s.report;
  const Granularity& g = s.subgraph->granularity;
  return "{\"subgraph\": " + std::to_string(index) + ", \"ops\": " + IdArray(s.subgraph->ops) +
         ", \"granularity\": [" + std::to_string(g.w) + ", " + std::to_string(g.h) + ", " +
         std::to_string(g.k) + "], \"tiles\": " + std::to_string(r.tiles) +
         ", \"k_steps\": " + std::to_string(r.k_steps) + ", \"latency\": " +
         FormatNumber(r.latency) + ", \"compute_time\": " + FormatNumber(r.compute_time) +
         ", \"memory_time\": " + FormatNumber(r.memory_time) + ", \"bound_by\": \"" +
         (s.memory_bound() ? "memory" : "compute") + "\", \"peak_working_set\": " +
         std::to_string(r.peak_working_set) + ", \"capacity\": " +
         std::to_string(problem.fast_memory_capacity) + ", \"retained_in\": " +
         IdArray(s.retained_in) + ", \"retain\": " + IdArray(s.subgraph->retain) +
         ", \"partial_edge_tiles\": " + (s.partial_edge_tiles ? "true" : "false") +
         (labels ? ", \"op_labels\": " + LabelArray(s.subgraph->ops, *labels) : std::string()) + "}";
}

}  // namespace

std::string TraceJson(const Problem& problem, const ScheduleSummary& summary,
                      const std::string& title, const TraceOptions& options) {
  std::vector<std::string> events;
  events.push_back("{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": " + std::to_string(kPid) +
                   ", \"args\": {\"name\": " + JsonString(title) + "}}");
  events.push_back("{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " + std::to_string(kPid) +
                   ", \"tid\": " + std::to_string(kTid) +
                   ", \"args\": {\"name\": \"subgraphs (1 latency unit = 1 us)\"}}");

  const std::vector<ItemLabel>* labels =
      options.labels != nullptr && options.labels->ops.size() == problem.ops.size()
          ? &options.labels->ops
          : nullptr;
  int64_t step_budget = options.max_step_events;
  for (int i = 0; i < static_cast<int>(summary.subgraphs.size()); ++i) {
    const SubgraphSummary& s = summary.subgraphs[i];
    if (!s.report) {
      events.push_back(EventHead("i", "subgraph " + std::to_string(i) + " not priced", "violation",
                                 s.start) +
                       ", \"s\": \"t\", \"args\": {\"message\": " +
                       JsonString(s.violation ? s.violation->Message() : "") + "}}");
      continue;
    }
    const SubgraphReport& r = *s.report;
    events.push_back("{\"ph\": \"C\", \"name\": \"working set\", \"pid\": " +
                     std::to_string(kPid) + ", \"ts\": " + FormatNumber(s.start) +
                     ", \"args\": {\"peak\": " + std::to_string(r.peak_working_set) +
                     ", \"capacity\": " + std::to_string(problem.fast_memory_capacity) + "}}");
    const std::string name =
        labels ? "subgraph " + std::to_string(i) + ": " +
                     RunsText(s.subgraph->ops, *labels, kTraceNameRuns)
               : "subgraph " + std::to_string(i) + " [" + JoinIds(s.subgraph->ops, ",") + "]";
    events.push_back(EventHead("X", name, "subgraph", s.start) +
                     ", \"dur\": " + FormatNumber(r.latency) +
                     ", \"args\": " + SubgraphArgs(problem, s, i, labels) + "}");

    const int64_t steps = r.tiles * r.k_steps;
    if (steps > options.max_steps_per_subgraph || steps > step_budget) continue;
    step_budget -= steps;
    // The steps come from the oracle itself (the same walk that priced the subgraph), so they
    // add up to its latency; the last end is clamped so rounding never pokes out of the parent.
    const Latency end = s.start + r.latency;
    Latency at = s.start;
    EvaluateSubgraphOracleSteps(problem, *s.subgraph, s.retained_in, [&](const StepRecord& step) {
      const Latency dur = std::max<Latency>(0, std::min(step.latency(), end - at));
      events.push_back(EventHead("X", "step " + std::to_string(step.step), "step", at) +
                       ", \"dur\": " + FormatNumber(dur) +
                       ", \"args\": {\"tile\": " + std::to_string(step.tile) +
                       ", \"k_step\": " + std::to_string(step.k_step) +
                       ", \"compute\": " + FormatNumber(step.compute) +
                       ", \"memory\": " + FormatNumber(step.memory) +
                       ", \"working_set\": " + std::to_string(step.working_set) + "}}");
      at += step.latency();
    });
  }
  events.push_back("{\"ph\": \"C\", \"name\": \"working set\", \"pid\": " + std::to_string(kPid) +
                   ", \"ts\": " + FormatNumber(summary.total) +
                   ", \"args\": {\"peak\": 0, \"capacity\": " +
                   std::to_string(problem.fast_memory_capacity) + "}}");
  if (!summary.valid()) {
    const Violation& v = summary.evaluation.violation;
    const Latency at = v.subgraph >= 0 && v.subgraph < static_cast<int>(summary.subgraphs.size())
                           ? summary.subgraphs[v.subgraph].start
                           : summary.total;
    events.push_back(EventHead("i", "INVALID: " + v.rule, "violation", at) +
                     ", \"s\": \"g\", \"args\": {\"message\": " + JsonString(v.Message()) + "}}");
  }

  std::string out = "{\"displayTimeUnit\": \"ms\",\n \"otherData\": {\"title\": " +
                    JsonString(title) + ", \"valid\": " + (summary.valid() ? "true" : "false") +
                    ", \"total_latency\": " + FormatNumber(summary.total) +
                    ", \"lower_bound\": " + FormatNumber(summary.bound.total()) +
                    ", \"time_unit\": \"1 latency unit = 1 us\"},\n \"traceEvents\": [\n";
  for (size_t i = 0; i < events.size(); ++i) {
    out += "  " + events[i] + (i + 1 < events.size() ? ",\n" : "\n");
  }
  out += "]}\n";
  return out;
}

}  // namespace annealer
