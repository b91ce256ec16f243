// libFuzzer target: the problem reader (src/io/contest/problem_reader.h) on arbitrary bytes. A problem it
// accepts must be one the rest of the program can use without crashing: the baseline builder
// (search/starts/baseline.h) either builds a schedule or says which op fits nowhere, and on small
// problems the oracle and the fast path agree on that schedule.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "eval/oracle.h"
#include "eval/cost/evaluate_fast.h"
#include "fuzz/fuzz_checks.h"
#include "search/starts/baseline.h"
#include "src/io/contest/problem_reader.h"

namespace {

// The baseline tries tiles down to a sixteenth of the native size and the oracle walks every
// step: evaluate only problems whose ops have few steps at that size (seconds per input else).
bool Small(const annealer::Problem& problem) {
  const double side = std::max<double>(1, static_cast<double>(problem.native / 16));
  double steps = 0;
  for (const annealer::Op& op : problem.ops) {
    const annealer::Tensor& out = problem.tensors[op.output];
    double k_steps = 1;
    if (op.kind == annealer::OpKind::MatMul) k_steps = std::ceil(problem.tensors[op.inputs[0]].width / side);
    steps += std::ceil(out.width / side) * std::ceil(out.height / side) * k_steps;
  }
  return steps <= 1e5;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace annealer;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  static const std::string origin = "fuzz.json";
  Problem problem;
  try {
    problem = ParseProblem(text, origin);
  } catch (const InputError& error) {
    fuzz::CheckErrorMessage(error.what(), origin);
    return 0;
  }
  if (!Small(problem)) return 0;
  Schedule baseline;
  try {
    baseline = BuildBaseline(problem);
  } catch (const std::runtime_error&) {
    return 0;  // an op that fits in fast memory at no granularity: reported, not a crash
  }
  const Evaluation oracle = EvaluateOracle(problem, baseline);
  const Evaluation fast = EvaluateFast(problem, baseline);
  if (fast.verdict != oracle.verdict || fast.violation.rule != oracle.violation.rule) {
    fuzz::Finding("baseline: fast path says " + fast.violation.Message() + ", the oracle " +
                  oracle.violation.Message());
  }
  if (oracle.ok() && std::abs(fast.total - oracle.total) > 1e-9 * std::max(1.0, oracle.total)) {
    fuzz::Finding("baseline: fast total differs from the oracle's");
  }
  return 0;
}
