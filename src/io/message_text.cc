#include "src/io/message_text.h"

namespace annealer {

namespace {

void AppendEscaped(std::string_view text, bool quotes, std::string& quoted) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"': quoted += quotes ? "\\\"" : "\""; break;
      case '\\': quoted += quotes ? "\\\\" : "\\"; break;
      case '\n': quoted += "\\n"; break;
      case '\r': quoted += "\\r"; break;
      case '\t': quoted += "\\t"; break;
      default:
        if (byte < 0x20 || byte == 0x7f) {
          static constexpr char kHex[] = "0123456789abcdef";
          quoted += "\\x";
          quoted += kHex[byte >> 4];
          quoted += kHex[byte & 0xf];
        } else {
          quoted += c;
        }
    }
  }
}

}  // namespace

std::string QuoteForMessage(std::string_view text, std::size_t max_bytes) {
  const bool cut = text.size() > max_bytes;
  if (cut) text = text.substr(0, max_bytes);
  std::string quoted = "\"";
  quoted.reserve(text.size() + 5);
  AppendEscaped(text, true, quoted);
  if (cut) quoted += "...";
  return quoted + "\"";
}

std::string OneLineForMessage(std::string_view text) {
  std::string line;
  line.reserve(text.size());
  AppendEscaped(text, false, line);
  return line;
}

}  // namespace annealer
