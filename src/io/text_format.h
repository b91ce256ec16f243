// How numbers, ids and strings are written by the commands that show a schedule (evaluate's
// table and JSON, the HTML report, the trace, the search's log and progress lines), so that
// every view writes the same value the same way.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "eval/model/problem.h"
#include "eval/model/schedule.h"

namespace annealer {

// A JSON string literal with quotes; control characters escaped.
std::string JsonString(const std::string& text);

// Text with &, <, >, " and ' escaped, safe inside HTML/SVG text and attribute values.
std::string HtmlEscape(const std::string& text);

// "3,7,12" with `separator` between the ids.
std::string JoinIds(const std::vector<int32_t>& ids, const char* separator);

// "128x64x32" (w x h x k).
std::string GranularityText(const Granularity& g);

// total / bound - 1 in percent; nullopt when the bound is zero (nothing to compare with).
std::optional<double> GapPercent(Latency total, Latency bound);

// For human eyes only: three decimals at most, trailing zeros dropped, so that accumulated
// rounding noise (117964.79999999994) reads as 117964.8. JSON outputs stay exact.
std::string Readable(double value);

// "12.34 %" with `decimals` decimals; `percent` is already in percent.
std::string PercentText(double percent, int decimals = 2);

// "1,234,567" or "1,234,567.5": latencies with digit groups, at most one decimal.
std::string Grouped(double value);

// "950", "12.3k", "4.56M": a rough figure for progress lines and chart axes.
std::string Compact(double value);

// Rows of cells as a text table: every column but the last right-aligned, the last (free
// text) left-aligned, two spaces between columns, one line per row.
std::string FormatTable(const std::vector<std::vector<std::string>>& rows);

}  // namespace annealer
