// layer_chains_pass: the search's LayerChains pass (search/starts/layer_chains.h) applied once
// to a given schedule, for the figures of docs/search.md ("Layer chains"): how much of a
// search's schedule the layer chains alone recover.
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "eval/cost/cost_cache.h"
#include "eval/oracle.h"
#include "search/starts/layer_chains.h"
#include "src/io/problem_reader.h"
#include "src/io/schedule_io.h"

namespace {

constexpr const char* kUsage =
    "usage: layer_chains_pass PROBLEM.json SCHEDULE.json [-o OUT.json]\n"
    "\n"
    "Applies the search's layer chains (LayerChains) to SCHEDULE.json, a\n"
    "valid schedule of PROBLEM.json, prints the latency before and after (both checked by the\n"
    "oracle), the subgraph counts and the pass's time, and writes the result to OUT.json.\n";

int Fail(const std::string& message) {
  std::fprintf(stderr, "layer_chains_pass: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace annealer;
  std::vector<std::string> positional;
  std::string out;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "-o" || arg == "--output") {
      if (i + 1 >= argc) return Fail(arg + " needs a file name");
      out = argv[++i];
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() != 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  try {
    const Problem problem = ReadProblemFile(positional[0]);
    const Schedule schedule = ReadScheduleFile(positional[1]);
    const Evaluation before = EvaluateOracle(problem, schedule);
    if (!before.ok()) return Fail(positional[1] + ": not a valid schedule: " + before.violation.Message());
    CostCache cache(1 << 20);
    SubgraphPricer pricer(problem, &cache);
    const auto start = std::chrono::steady_clock::now();
    const Schedule regrouped = LayerChains(problem, pricer, schedule, [] { return false; });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const Evaluation after = EvaluateOracle(problem, regrouped);
    if (!after.ok()) return Fail("the chained schedule is invalid: " + after.violation.Message());
    std::printf("before %.1f after %.1f subgraphs %zu -> %zu pass %.2f s\n", before.total, after.total,
                schedule.subgraphs.size(), regrouped.subgraphs.size(), seconds);
    if (!out.empty()) {
      std::vector<Latency> latencies;
      for (const SubgraphReport& r : after.subgraphs) latencies.push_back(r.latency);
      WriteFileAtomic(out, ScheduleToJson(regrouped, latencies));
    }
  } catch (const std::exception& e) {
    return Fail(e.what());
  }
  return 0;
}
