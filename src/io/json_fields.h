// Checked access to a parsed JSON document for the readers of src/: every failure becomes ONE
// line "<file>: <field path>: <what is wrong>", e.g. "p.json: inputs[3][1]: expected an integer,
// got a string", thrown as InputError. Shared by problem_reader and schedule_io.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

namespace annealer {

// Bad input (missing file, malformed JSON, a field with a wrong value). The message is one line
// and names the file, the field and the index; the CLI prints it as "annealer: <message>".
class InputError : public std::runtime_error {
 public:
  // "<origin>: <field>: <what>", or "<origin>: <what>" when `field` is empty; the parts are kept
  // for callers that show them apart (the Python package's InputError).
  InputError(const std::string& origin, const std::string& field, const std::string& what);
  const std::string& origin() const { return origin_; }
  const std::string& field() const { return field_; }  // a field path, "inputs[3][1]"; may be empty

 private:
  std::string origin_;
  std::string field_;
};

// The whole file as text. Throws InputError for a missing, unreadable or empty file.
std::string ReadTextFile(const std::string& path);

// Parses `json` with `parser` (which owns the document) and returns its root. Throws InputError
// "<origin>: malformed JSON: ..." on a syntax error and "<origin>: the input is empty" when
// there is nothing but whitespace.
simdjson::dom::element ParseJsonDocument(simdjson::dom::parser& parser, std::string_view json,
                                         const std::string& origin);

// A JSON value together with where it sits ("inputs[3][1]"), so that any complaint about it can
// name its place. Cheap to copy; valid while the parser that produced the element lives.
class JsonField {
 public:
  JsonField(simdjson::dom::element element, const std::string& origin, std::string path)
      : element_(element), origin_(&origin), path_(std::move(path)) {}

  [[noreturn]] void Fail(const std::string& what) const;
  const std::string& path() const { return path_; }
  simdjson::dom::element element() const { return element_; }

  // Object member `key`; a missing member fails with "<path>.<key>: required field is missing".
  JsonField Member(std::string_view key) const;
  // Object member `key`, or nullopt when absent or null.
  std::optional<JsonField> OptionalMember(std::string_view key) const;

  bool IsNull() const { return element_.is_null(); }
  void RequireObject() const;
  std::vector<JsonField> Items() const;  // requires an array
  // A JSON integer (an integral floating-point value is accepted too) within [min, max].
  int64_t Integer(int64_t min = INT64_MIN, int64_t max = INT64_MAX) const;
  double FiniteNumber() const;
  std::string_view String() const;

  // How the value reads in a message: `a string "Conv"`, `1.5`, `an array`, ...
  std::string Describe() const;

 private:
  simdjson::dom::element element_;
  const std::string* origin_;
  std::string path_;
};

// Shortest text that reads back as exactly `value` (std::to_chars); throws for NaN/inf, which
// JSON cannot carry.
std::string FormatNumber(double value);

// Appends `values` as a JSON array of integers: "[1, 2, 3]".
void AppendIntegers(std::string& out, const std::vector<int64_t>& values);

}  // namespace annealer
