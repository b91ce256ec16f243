// The HTML report of a schedule (`annealer report`): one self-contained page — inline SVG, CSS
// and a small script, no external resource — that opens from disk offline. It shows the problem
// and the verdict (a broken rule at the top), total latency, lower bound and gap; the DAG laid
// out in layers (src/report/dag_layout.h) with ops coloured by subgraph; a timeline of the subgraphs
// (length ∝ latency, compute vs memory, retained tensors as links); peak working set against
// the capacity; a per-subgraph table; and, given the search's log, its convergence.
// With labels (src/report/report_labels.h) ops and tensors carry their ONNX names.
// Hovering or clicking a subgraph anywhere highlights it everywhere; the DAG and the charts zoom
// (wheel) and pan (drag).
//
// The script marks the page when it has run: <html data-render-ok="1">; an uncaught script
// error sets data-script-error and shows the message in the page instead (the browser test
// reads both from the DOM).
#pragma once

#include <string>
#include <vector>

#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "src/report/report_labels.h"
#include "src/io/run_log.h"
#include "src/report/schedule_summary.h"

namespace annealer {

struct ReportInput {
  const Problem& problem;
  const Schedule& schedule;
  const ScheduleSummary& summary;  // SummarizeSchedule(problem, schedule)
  std::string problem_name;        // shown as given (a path)
  std::string schedule_name;
  const std::vector<RunLogEntry>* log = nullptr;  // the search's improvements, if any
  std::string log_name;
  // ONNX names of the ops and tensors (an imported model or its map file), if any: the DAG,
  // the timeline and the table then name ops "12 conv2d_3 (Conv, conv-tap)". Without labels
  // the page is exactly what it was before labels existed.
  const ReportLabels* labels = nullptr;
};

std::string ReportHtml(const ReportInput& input);

}  // namespace annealer
