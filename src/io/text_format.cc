#include "src/io/text_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace annealer {

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
          out += buffer;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string HtmlEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string JoinIds(const std::vector<int32_t>& ids, const char* separator) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += separator;
    out += std::to_string(ids[i]);
  }
  return out;
}

std::string GranularityText(const Granularity& g) {
  return std::to_string(g.w) + "x" + std::to_string(g.h) + "x" + std::to_string(g.k);
}

std::optional<double> GapPercent(Latency total, Latency bound) {
  if (!(bound > 0)) return std::nullopt;
  return (total / bound - 1.0) * 100.0;
}

std::string Readable(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.3f", value);
  std::string text = buffer;
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
  }
  return text == "-0" ? "0" : text;
}

std::string PercentText(double percent, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f %%", decimals, percent);
  return buffer;
}

std::string Grouped(double value) {
  const bool negative = value < 0;
  const double rounded = std::round(std::abs(value) * 10) / 10;
  const auto whole = static_cast<long long>(std::floor(rounded));
  const int tenth = static_cast<int>(std::lround((rounded - static_cast<double>(whole)) * 10)) % 10;
  std::string digits = std::to_string(whole);
  std::string grouped;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) grouped += ',';
    grouped += digits[i];
  }
  if (tenth != 0) {
    grouped += '.';
    grouped += static_cast<char>('0' + tenth);
  }
  if (negative) grouped.insert(0, 1, '-');
  return grouped;
}

std::string Compact(double value) {
  char buffer[32];
  if (value >= 1e6) {
    std::snprintf(buffer, sizeof buffer, "%.2fM", value / 1e6);
  } else if (value >= 1e4) {
    std::snprintf(buffer, sizeof buffer, "%.1fk", value / 1e3);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.0f", value);
  }
  return buffer;
}

std::string FormatTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) {
      if (c > 0) out += "  ";
      if (c + 1 < row.size()) {
        out += std::string(widths[c] - row[c].size(), ' ') + row[c];
      } else {
        out += row[c];
      }
    }
    out += '\n';
  }
  return out;
}

}  // namespace annealer
