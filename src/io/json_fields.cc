#include "src/io/json_fields.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "src/io/message_text.h"

namespace annealer {

InputError::InputError(const std::string& origin, const std::string& field, const std::string& what)
    : std::runtime_error(origin + ": " + (field.empty() ? std::string() : field + ": ") + what),
      origin_(origin),
      field_(field) {}

std::string ReadTextFile(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw InputError(path, "", std::string("cannot open file: ") + std::strerror(errno));
  std::string content;
  char buffer[1 << 16];
  size_t got;
  while ((got = std::fread(buffer, 1, sizeof buffer, file.get())) > 0) content.append(buffer, got);
  // A directory opens fine on Linux and only fails here (EISDIR).
  if (std::ferror(file.get())) throw InputError(path, "", std::string("cannot read file: ") + std::strerror(errno));
  if (content.empty()) throw InputError(path, "", "the file is empty");
  return content;
}

simdjson::dom::element ParseJsonDocument(simdjson::dom::parser& parser, std::string_view json,
                                         const std::string& origin) {
  if (json.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    throw InputError(origin, "", "the input is empty");
  }
  simdjson::dom::element root;
  // parse() copies into a padded buffer itself when the input is not padded.
  const simdjson::error_code error = parser.parse(json.data(), json.size()).get(root);
  if (error) {
    throw InputError(origin, "", std::string("malformed JSON: ") + simdjson::error_message(error));
  }
  return root;
}

std::string FormatNumber(double value) {
  if (!std::isfinite(value)) throw std::invalid_argument("cannot write a non-finite number to JSON");
  char buffer[64];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  return std::string(buffer, end);
}

void AppendIntegers(std::string& out, const std::vector<int64_t>& values) {
  out += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(values[i]);
  }
  out += ']';
}

void JsonField::Fail(const std::string& what) const {
  throw InputError(*origin_, path_.empty() ? std::string("top level") : path_, what);
}

std::string JsonField::Describe() const {
  using simdjson::dom::element_type;
  switch (element_.type()) {
    case element_type::ARRAY: return "an array";
    case element_type::OBJECT: return "an object";
    case element_type::INT64: return std::to_string(int64_t(element_));
    case element_type::UINT64: return std::to_string(uint64_t(element_));
    case element_type::DOUBLE: return FormatNumber(double(element_));
    case element_type::STRING:
      return "the string " + QuoteForMessage(element_.get_string().value_unsafe(), 40);
    case element_type::BOOL: return bool(element_) ? "true" : "false";
    case element_type::NULL_VALUE: return "null";
  }
  return "an unknown value";
}

void JsonField::RequireObject() const {
  if (!element_.is_object()) Fail("expected an object, got " + Describe());
}

JsonField JsonField::Member(std::string_view key) const {
  std::optional<JsonField> member = OptionalMember(key);
  const std::string child = path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  if (!member) {
    simdjson::dom::element value;
    if (!element_.get_object().at_key(key).get(value)) {
      JsonField(value, *origin_, child).Fail("expected a value, got null");
    }
    JsonField(element_, *origin_, child).Fail("required field is missing");
  }
  return *member;
}

std::optional<JsonField> JsonField::OptionalMember(std::string_view key) const {
  RequireObject();
  simdjson::dom::element value;
  if (element_.get_object().at_key(key).get(value)) return std::nullopt;
  if (value.is_null()) return std::nullopt;
  return JsonField(value, *origin_, path_.empty() ? std::string(key) : path_ + "." + std::string(key));
}

std::vector<JsonField> JsonField::Items() const {
  if (!element_.is_array()) Fail("expected an array, got " + Describe());
  std::vector<JsonField> items;
  size_t index = 0;
  for (simdjson::dom::element item : element_.get_array()) {
    items.emplace_back(item, *origin_, path_ + "[" + std::to_string(index++) + "]");
  }
  return items;
}

int64_t JsonField::Integer(int64_t min, int64_t max) const {
  using simdjson::dom::element_type;
  int64_t value = 0;
  switch (element_.type()) {
    case element_type::INT64:
      value = int64_t(element_);
      break;
    case element_type::UINT64:
      Fail("integer " + Describe() + " is too large");
    case element_type::DOUBLE: {
      const double d = double(element_);
      // Within +-2^53 every integer is exact, so the conversion below cannot round.
      if (!(std::trunc(d) == d && std::abs(d) <= 9007199254740992.0)) {
        Fail("expected an integer, got " + Describe());
      }
      value = static_cast<int64_t>(d);
      break;
    }
    default:
      Fail("expected an integer, got " + Describe());
  }
  if (value < min || value > max) {
    Fail("integer " + std::to_string(value) + " is out of range [" + std::to_string(min) + ", " +
         std::to_string(max) + "]");
  }
  return value;
}

double JsonField::FiniteNumber() const {
  if (!element_.is_number()) Fail("expected a number, got " + Describe());
  const double value = element_.get_double().value_unsafe();
  if (!std::isfinite(value)) Fail("the number " + Describe() + " is not finite");
  return value;
}

std::string_view JsonField::String() const {
  if (!element_.is_string()) Fail("expected a string, got " + Describe());
  return element_.get_string().value_unsafe();
}

}  // namespace annealer
