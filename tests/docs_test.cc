// The documentation as part of the build: every rule id the program can print has a heading in
// docs/cost-model.md, every relative link of every Markdown file resolves inside the
// repository, docs/configuration.md carries the generated key reference, and `--help` names a
// docs page for each command. A user who reads an error message, or clicks a link in a clone,
// must never land nowhere.
#include <doctest/doctest.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "src/cli/cli.h"
#include "src/io/yaml/config.h"
#include "tests/support/test_files.h"

namespace annealer {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;

const fs::path kRoot = fs::path(ANNEALER_SOURCE_DIR);

// The string literals of a C++ source, comments and character literals skipped. Adjacent
// literals stay separate: a rule id is always a literal (or a literal's start) of its own.
std::vector<std::string> StringLiterals(const std::string& source) {
  std::vector<std::string> literals;
  for (std::size_t i = 0; i < source.size(); ++i) {
    const char c = source[i];
    if (c == '/' && i + 1 < source.size() && source[i + 1] == '/') {
      i = source.find('\n', i);
      if (i == std::string::npos) break;
    } else if (c == '/' && i + 1 < source.size() && source[i + 1] == '*') {
      i = source.find("*/", i + 2);
      if (i == std::string::npos) break;
      ++i;
    } else if (c == '"' && i > 0 && source[i - 1] == 'R') {
      // A raw string (the report's script and style): its text runs to ")delimiter\"".
      const std::size_t open = source.find('(', i);
      if (open == std::string::npos) break;
      std::string close(1, ')');  // appended, not ")" + ...: GCC 12 warns falsely (-Wrestrict)
      close.append(source, i + 1, open - i - 1).push_back('"');
      const std::size_t stop = source.find(close, open);
      if (stop == std::string::npos) break;
      literals.push_back(source.substr(open + 1, stop - open - 1));
      i = stop + close.size() - 1;
    } else if (c == '"' || (c == '\'' && (i == 0 || !std::isalnum(static_cast<unsigned char>(source[i - 1]))))) {
      // (a quote after a digit is a digit separator, 1'000, not a character literal)
      std::string text;
      for (++i; i < source.size() && source[i] != c; ++i) {
        if (source[i] == '\\' && i + 1 < source.size()) ++i;
        text += source[i];
      }
      if (c == '"') literals.push_back(text);
    }
  }
  return literals;
}

// Every rule id the program's code can print, read from its sources: a literal that is an id
// on its own (`Fail("V5", ...)`, `{"V7", i, ...}`), a literal that starts with one
// (`"V13: reported latency ..."`), and an id cited as "spec X" inside a message.
std::set<std::string> RuleIdsInCode() {
  static const std::regex whole(R"(^(V[0-9]+|W|G[0-9]+|L[0-9]+|H[0-9]+)$)");
  static const std::regex leading(R"(^(V[0-9]+): )");
  static const std::regex cited(R"(\bspec ([A-Z](\.?[0-9]+)+))");
  std::set<std::string> ids;
  for (const char* dir : {"eval", "search", "src"}) {
    for (const fs::directory_entry& entry : fs::recursive_directory_iterator(kRoot / dir)) {
      if (entry.path().extension() != ".cc") continue;
      for (const std::string& literal : StringLiterals(ReadFile(entry.path()))) {
        std::smatch match;
        if (std::regex_match(literal, match, whole) || std::regex_search(literal, match, leading)) {
          ids.insert(match[1]);
        }
        for (std::sregex_iterator it(literal.begin(), literal.end(), cited), end; it != end; ++it) {
          ids.insert((*it)[1]);
        }
      }
    }
  }
  return ids;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// The heading lines of a Markdown text ("## Title" -> "Title"), fenced code skipped.
std::vector<std::string> Headings(const std::string& markdown) {
  std::vector<std::string> headings;
  bool in_fence = false;
  for (const std::string& line : Lines(markdown)) {
    if (line.rfind("```", 0) == 0 || line.rfind("~~~", 0) == 0) in_fence = !in_fence;
    if (in_fence || line.empty() || line[0] != '#') continue;
    std::size_t level = line.find_first_not_of('#');
    if (level == std::string::npos || level > 6 || line[level] != ' ') continue;
    std::string title = line.substr(level + 1);
    while (!title.empty() && (title.back() == ' ' || title.back() == '#')) title.pop_back();
    headings.push_back(title);
  }
  return headings;
}

// GitHub's anchor of a heading: links reduced to their text, lower case, every character
// but letters, digits, '_', '-' and spaces dropped, spaces turned into '-'. Non-ASCII
// punctuation and symbols (U+00A0-U+00BF, U+00D7, U+00F7, U+2000-U+2BFF: dashes, quotes,
// arrows, maths) are dropped like ASCII punctuation; other non-ASCII characters (letters)
// are kept as they are.
std::string Slug(std::string title) {
  title = std::regex_replace(title, std::regex(R"(!?\[([^\]]*)\]\([^)]*\))"), "$1");
  std::string slug;
  for (std::size_t i = 0; i < title.size();) {
    const unsigned char c = static_cast<unsigned char>(title[i]);
    if (c < 0x80) {
      if (std::isalnum(c) || c == '_' || c == '-') slug += static_cast<char>(std::tolower(c));
      if (c == ' ') slug += '-';
      ++i;
      continue;
    }
    const std::size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    uint32_t code = c & (length == 2 ? 0x1F : length == 3 ? 0x0F : 0x07);
    for (std::size_t j = 1; j < length && i + j < title.size(); ++j) {
      code = (code << 6) | (static_cast<unsigned char>(title[i + j]) & 0x3F);
    }
    const bool symbol = (code >= 0xA0 && code <= 0xBF) || code == 0xD7 || code == 0xF7 ||
                        (code >= 0x2000 && code <= 0x2BFF);
    if (!symbol) slug += title.substr(i, length);
    i += length;
  }
  return slug;
}

// The anchors GitHub gives the headings of a Markdown text (a repeated slug gets -1, -2, ...).
std::set<std::string> Anchors(const std::string& markdown) {
  std::set<std::string> anchors;
  std::map<std::string, int> seen;
  for (const std::string& heading : Headings(markdown)) {
    const std::string slug = Slug(heading);
    const int count = seen[slug]++;
    anchors.insert(count == 0 ? slug : slug + "-" + std::to_string(count));
  }
  return anchors;
}

// Every Markdown file of the repository (build trees and hidden directories left out).
std::vector<fs::path> MarkdownFiles() {
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(kRoot); it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name.rfind("build", 0) == 0 || name.rfind('.', 0) == 0)) {
      it.disable_recursion_pending();
    } else if (it->is_regular_file() && it->path().extension() == ".md") {
      files.push_back(it->path());
    }
  }
  return files;
}

// The link targets of a Markdown text: inline links and images, reference definitions and
// HTML href/src, outside fenced code and code spans.
std::vector<std::string> LinkTargets(const std::string& markdown) {
  static const std::regex inline_link(R"(\]\(\s*<?([^)\s>]*)>?(\s+"[^"]*")?\s*\))");
  static const std::regex reference(R"(^ {0,3}\[[^\]]+\]:\s*(\S+))");
  static const std::regex html(R"((?:href|src)\s*=\s*"([^"]*)\")");
  static const std::regex code_span(R"(`[^`]*`)");
  std::vector<std::string> targets;
  bool in_fence = false;
  for (std::string line : Lines(markdown)) {
    const std::size_t indent = line.find_first_not_of(' ');
    if (indent != std::string::npos && (line.compare(indent, 3, "```") == 0 || line.compare(indent, 3, "~~~") == 0)) {
      in_fence = !in_fence;
      continue;
    }
    if (in_fence) continue;
    line = std::regex_replace(line, code_span, "");
    for (const std::regex* pattern : {&inline_link, &reference, &html}) {
      for (std::sregex_iterator it(line.begin(), line.end(), *pattern), stop; it != stop; ++it) {
        targets.push_back((*it)[1]);
      }
    }
  }
  return targets;
}

// "" when `target`, a link in `file`, resolves inside the repository, else why not.
std::string LinkProblem(const fs::path& file, const std::string& target) {
  if (target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0 || target.rfind("mailto:", 0) == 0) {
    return "";  // external: allowed, not fetched
  }
  if (target.find("://") != std::string::npos || target.rfind("file:", 0) == 0) return "a non-web URL";
  const std::size_t hash = target.find('#');
  const std::string path = target.substr(0, hash);
  const std::string anchor = hash == std::string::npos ? "" : target.substr(hash + 1);
  if (!path.empty() && path[0] == '/') return "an absolute path (a clone does not have it)";
  const fs::path resolved = path.empty() ? file : (file.parent_path() / path).lexically_normal();
  const fs::path inside = resolved.lexically_relative(kRoot);
  if (inside.empty() || *inside.begin() == "..") return "a path outside the repository";
  if (!fs::exists(resolved)) return "no such file";
  if (!anchor.empty()) {
    if (resolved.extension() != ".md") return "an anchor into a file that is not Markdown";
    if (Anchors(ReadFile(resolved)).count(anchor) == 0) return "no heading with this anchor";
  }
  return "";
}

std::string UsageText() {
  std::FILE* file = std::tmpfile();
  REQUIRE(file != nullptr);
  PrintUsage(file);
  std::rewind(file);
  std::string text;
  for (int c; (c = std::fgetc(file)) != EOF;) text += static_cast<char>(c);
  std::fclose(file);
  return text;
}

}  // namespace

TEST_CASE("docs: every rule id the code can print has a heading in docs/cost-model.md") {
  const std::set<std::string> ids = RuleIdsInCode();
  // One id of each way the code prints them, so that a scanner that finds nothing fails.
  for (const char* expected : {"V1", "V7", "W", "G3", "V13", "O9", "H1", "H3"}) {
    INFO(expected);
    CHECK(ids.count(expected) == 1);
  }
  std::set<std::string> headed;
  static const std::regex id_at_start(R"(^([A-Z](\.?[0-9]+)*)( |,|$))");
  for (const std::string& heading : Headings(ReadFile(kRoot / "docs" / "cost-model.md"))) {
    std::smatch match;
    if (std::regex_search(heading, match, id_at_start)) headed.insert(match[1]);
  }
  for (const std::string& id : ids) {
    INFO("rule id printed by the code: " << id << " (add a heading \"### " << id
                                          << " — ...\" to docs/cost-model.md)");
    CHECK(headed.count(id) == 1);
  }
}

TEST_CASE("docs: every link of every Markdown file resolves inside the repository") {
  const std::vector<fs::path> files = MarkdownFiles();
  CHECK(files.size() >= 2);
  int links = 0;
  for (const fs::path& file : files) {
    const std::string text = ReadFile(file);
    INFO(file.lexically_relative(kRoot).string());
    // The contest's spec folder lies outside the repository: a clone has no such path.
    CHECK(text.find("../shared/") == std::string::npos);
    for (const std::string& target : LinkTargets(text)) {
      ++links;
      INFO("link target: " << target);
      CHECK(LinkProblem(file, target) == "");
    }
  }
  CHECK(links > 20);
}

TEST_CASE("docs: the link checker's own rules") {
  CHECK(Slug("V4 — working set within capacity") == "v4--working-set-within-capacity");
  CHECK(Slug("Exact solver (`annealer exact`)") == "exact-solver-annealer-exact");
  CHECK(Slug("[Lower](lower-bound.md) bound, P1–P11") == "lower-bound-p1p11");
  CHECK(Anchors("# A\n```\n# not a heading\n```\n## A\n") == std::set<std::string>{"a", "a-1"});
  CHECK(LinkTargets("see [x](a.md#b), `[y](no.md)`, ![p](docs/r.png \"t\")\n[r]: c.md\n") ==
        std::vector<std::string>{"a.md#b", "docs/r.png", "c.md"});
  const fs::path readme = kRoot / "README.md";
  CHECK(LinkProblem(readme, "https://example.com/x") == "");
  CHECK(LinkProblem(readme, "docs/cost-model.md") == "");
  CHECK(LinkProblem(readme, "no-such-file.md") == "no such file");
  CHECK(LinkProblem(readme, "../shared/spec/cost-model.md") == "a path outside the repository");
  CHECK(LinkProblem(readme, "/work/x.md") == "an absolute path (a clone does not have it)");
  CHECK(LinkProblem(readme, "docs/cost-model.md#no-such-heading") == "no heading with this anchor");
}

TEST_CASE("docs: docs/configuration.md holds the generated reference of every key") {
  const std::string text = ReadFile(kRoot / "docs" / "configuration.md");
  const std::string begin = "<!-- generated by `annealer --print-config-markdown`; do not edit by hand -->";
  const std::string end = "<!-- end of the generated part -->";
  const std::size_t from = text.find(begin);
  const std::size_t to = text.find(end);
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  const auto trim = [](std::string s) {
    s.erase(0, s.find_first_not_of(" \n"));
    s.erase(s.find_last_not_of(" \n") + 1);
    return s;
  };
  INFO("search/params.cc changed? replace the generated part of docs/configuration.md with the "
       "output of build/annealer --print-config-markdown");
  CHECK(trim(text.substr(from + begin.size(), to - from - begin.size())) == trim(FormatConfigMarkdown()));
  for (const ParamSpec& spec : ParamTable()) {
    INFO(spec.key);
    CHECK(FormatConfigMarkdown().find("| `" + spec.key + "` |") != std::string::npos);
  }
}

TEST_CASE("docs: --help names an existing docs page for each command") {
  const std::string usage = UsageText();
  const std::string commands = usage.substr(0, usage.find("The search command"));
  // One block per command, from its "  annealer ..." line to the next.
  std::vector<std::string> blocks;
  for (std::size_t at = commands.find("\n  annealer "); at != std::string::npos;) {
    const std::size_t next = commands.find("\n  annealer ", at + 1);
    blocks.push_back(commands.substr(at, next == std::string::npos ? std::string::npos : next - at));
    at = next;
  }
  CHECK(blocks.size() >= 7);
  for (const std::string& block : blocks) {
    if (block.find("--help | --version") != std::string::npos) continue;
    INFO(block);
    CHECK(block.find("Docs: docs/") != std::string::npos);
  }
  static const std::regex page(R"(docs/[a-z0-9-]+\.md)");
  int pages = 0;
  for (std::sregex_iterator it(usage.begin(), usage.end(), page), stop; it != stop; ++it, ++pages) {
    INFO(it->str());
    CHECK(fs::exists(kRoot / it->str()));
  }
  CHECK(pages >= 6);
}

}  // namespace annealer
