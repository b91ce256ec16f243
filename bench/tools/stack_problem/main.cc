// stack_problem: writes a deep problem made of N chained copies of a contest problem (see
// src/io/contest/problem_stack.h), for the scaling benchmark bench/scale.sh.
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "src/io/json_fields.h"
#include "src/io/contest/problem_reader.h"
#include "src/io/contest/problem_stack.h"
#include "src/io/contest/problem_writer.h"
#include "src/io/contest/schedule_io.h"

namespace {

constexpr const char* kUsage =
    "usage: stack_problem PROBLEM.json COPIES [-o OUT.json] [--input TENSOR]\n"
    "\n"
    "Chains COPIES copies of PROBLEM.json: the single graph output of copy i replaces, in copy\n"
    "i+1, a graph input of the same shape (the chained input); every other graph input (the\n"
    "weights) is duplicated per copy. Copy k holds ops [k*N, (k+1)*N) of the result. The problem\n"
    "is written to OUT.json (atomically) or stdout.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE  write to FILE instead of stdout\n"
    "  --input TENSOR     the chained input (default: the lowest-id graph input of the output's\n"
    "                     shape; a note on stderr names the others when there are several)\n"
    "  -h, --help         this text\n"
    "\n"
    "exit status: 0 = written, 1 = bad or unsuitable problem file, unwritable output,\n"
    "2 = bad command line.\n";

int UsageError(const std::string& message) {
  std::fprintf(stderr, "stack_problem: %s\n(run `stack_problem --help` for usage)\n", message.c_str());
  return 2;
}

// A whole decimal number within [min, max], or nullopt.
std::optional<long> WholeNumber(const std::string& text, long min, long max) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (*end != '\0' || value < min || value > max) return std::nullopt;
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace annealer;
  std::vector<std::string> positional;
  std::string output;
  std::optional<TensorId> input;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= argc) return std::nullopt;
      return std::string(argv[++i]);
    };
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "-o" || arg == "--output") {
      const auto v = value();
      if (!v || v->empty()) return UsageError(arg + " needs a file name");
      output = *v;
    } else if (arg == "--input") {
      const auto v = value();
      if (!v) return UsageError("--input needs a tensor id");
      const auto id = WholeNumber(*v, 0, INT32_MAX);
      if (!id) return UsageError("--input: expected a tensor id (a whole number >= 0), got \"" + *v + "\"");
      input = static_cast<TensorId>(*id);
    } else if (arg.size() > 1 && arg[0] == '-') {
      return UsageError("unknown option " + arg);
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() < 2) return UsageError(positional.empty() ? "missing the problem file" : "missing COPIES");
  if (positional.size() > 2) return UsageError("unexpected argument " + positional[2]);
  const auto copies = WholeNumber(positional[1], 1, 100000);
  if (!copies) return UsageError("COPIES: expected a whole number in [1, 100000], got \"" + positional[1] + "\"");
  try {
    const Problem problem = ReadProblemFile(positional[0]);
    const StackPlan plan = PlanStack(problem, input);
    if (!plan.note.empty()) std::fprintf(stderr, "stack_problem: note: %s\n", plan.note.c_str());
    const std::string json = ProblemToJson(StackProblem(problem, plan, static_cast<int>(*copies)));
    if (output.empty()) {
      std::fputs(json.c_str(), stdout);
    } else {
      WriteFileAtomic(output, json);
    }
  } catch (const InputError& error) {
    std::fprintf(stderr, "stack_problem: %s\n", error.what());
    return 1;
  } catch (const StackError& error) {
    std::fprintf(stderr, "stack_problem: %s: %s\n", positional[0].c_str(), error.what());
    return 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "stack_problem: %s\n", error.what());
    return 1;
  }
  return 0;
}
