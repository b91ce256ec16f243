// Quoting input text inside one-line error messages. A value read from a file (a JSON string, a
// YAML key or scalar) may hold line breaks or other control characters; echoed raw it would
// split the "<file>: <field>: <what>" line that every reader promises (README, exit codes).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace annealer {

// `text` in double quotes with \", \\, \n, \r, \t and \xNN for the other control bytes, so the
// result is always one line. With `max_bytes`, longer text is cut there and "..." added.
std::string QuoteForMessage(std::string_view text, std::size_t max_bytes = std::string_view::npos);

// `text` as is, except line breaks and other control bytes written as in QuoteForMessage: for
// messages of libraries that echo input (yaml-cpp's "unknown escape character: <byte>").
std::string OneLineForMessage(std::string_view text);

}  // namespace annealer
