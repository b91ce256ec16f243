#include "src/io/yaml/yaml_document.h"

#pragma GCC diagnostic push
#ifndef __clang__
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif
#include <yaml-cpp/eventhandler.h>
#pragma GCC diagnostic pop

#include <optional>
#include <sstream>

#include "src/io/message_text.h"

namespace annealer {
namespace {

// Only notes where each document's root starts and whether it is null.
class RootEvents : public YAML::EventHandler {
 public:
  bool null_root = false;
  YAML::Mark root_mark;
  void OnDocumentStart(const YAML::Mark&) override { depth_ = 0; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark, true); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark, false); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override {
    Node(mark, false);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Node(mark, false);
    ++depth_;
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Node(mark, false);
    ++depth_;
  }
  void OnMapEnd() override { --depth_; }

 private:
  void Node(const YAML::Mark& mark, bool null) {
    if (depth_ != 0) return;
    null_root = null;
    root_mark = mark;
  }
  int depth_ = 0;
};

// The number of documents in `text`, counted without YAML::LoadAll: yaml-cpp 0.7's LoadAll
// loops for ever, allocating, on a token no rule consumes (a line starting with ',', found by
// config_fuzz; fixed upstream in 0.8). Such a token yields a null document at the same place
// again and again: that is reported as a syntax error at its line.
int CountYamlDocuments(const std::string& text, const std::string& source) {
  std::istringstream stream(text);
  YAML::Parser parser(stream);
  RootEvents events;
  int documents = 0;
  std::optional<int> last_null_pos;
  while (parser.HandleNextDocument(events)) {
    if (events.null_root) {
      if (last_null_pos == events.root_mark.pos) {
        throw YamlDocumentError(Located(source, events.root_mark) +
                                ": YAML syntax error: unexpected character");
      }
      last_null_pos = events.root_mark.pos;
    } else {
      last_null_pos.reset();
    }
    events.null_root = false;
    ++documents;
  }
  return documents;
}

}  // namespace

std::string Located(const std::string& source, const YAML::Mark& mark) {
  if (mark.is_null()) return source;
  return source + ":" + std::to_string(mark.line + 1);
}

YAML::Node LoadOneYamlDocument(const std::string& text, const std::string& source) {
  try {
    const int documents = CountYamlDocuments(text, source);
    if (documents > 1) {
      throw YamlDocumentError(source + ": expected one YAML document, found " + std::to_string(documents));
    }
    return YAML::Load(text);
  } catch (const YAML::Exception& error) {
    throw YamlDocumentError(Located(source, error.mark) + ": YAML syntax error: " +
                            OneLineForMessage(error.msg));
  }
}

}  // namespace annealer
