// apply_pass: one of the search's schedule passes applied once to a given schedule, for the
// figures of docs/search.md: how much of a schedule the pass alone recovers. `regroup` is
// RegroupReaderParts (search/starts/constructive.h, "Regroup reader parts"), `layer-chains`
// LayerChains (search/starts/layer_chains.h, "Layer chains"), `serve` ServeLoadsByRetention
// (search/starts/serve_retained.h, "Serve a loader by retention").
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "eval/cost/cost_cache.h"
#include "eval/oracle.h"
#include "search/starts/constructive.h"
#include "search/starts/layer_chains.h"
#include "search/starts/serve_retained.h"
#include "src/io/problem_reader.h"
#include "src/io/schedule_io.h"

namespace {

constexpr const char* kUsage =
    "usage: apply_pass regroup|layer-chains|serve PROBLEM.json SCHEDULE.json [-o OUT.json]\n"
    "\n"
    "Applies one of the search's passes to SCHEDULE.json, a valid schedule of PROBLEM.json:\n"
    "  regroup       the regrouping of reader parts (RegroupReaderParts)\n"
    "  layer-chains  the layer chains (LayerChains)\n"
    "  serve         loaders served by retention (ServeLoadsByRetention)\n"
    "prints the latency before and after (both checked by the oracle), the subgraph counts and\n"
    "the pass's time, and writes the result to OUT.json.\n";

int Fail(const std::string& message) {
  std::fprintf(stderr, "apply_pass: %s\n", message.c_str());
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
  if (positional.size() != 3) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  using Pass = std::function<Schedule(const Problem&, SubgraphPricer&, const Schedule&)>;
  const auto never = [] { return false; };
  Pass pass;
  if (positional[0] == "regroup") {
    pass = [&](const Problem& p, SubgraphPricer& pricer, const Schedule& s) { return RegroupReaderParts(p, pricer, s, never); };
  } else if (positional[0] == "layer-chains") {
    pass = [&](const Problem& p, SubgraphPricer& pricer, const Schedule& s) { return LayerChains(p, pricer, s, never); };
  } else if (positional[0] == "serve") {
    pass = [&](const Problem& p, SubgraphPricer& pricer, const Schedule& s) { return ServeLoadsByRetention(p, pricer, s, never); };
  } else {
    return Fail("unknown pass '" + positional[0] + "' (regroup, layer-chains or serve)");
  }
  try {
    const Problem problem = ReadProblemFile(positional[1]);
    const Schedule schedule = ReadScheduleFile(positional[2]);
    const Evaluation before = EvaluateOracle(problem, schedule);
    if (!before.ok()) return Fail(positional[2] + ": not a valid schedule: " + before.violation.Message());
    CostCache cache(1 << 20);
    SubgraphPricer pricer(problem, &cache);
    const auto start = std::chrono::steady_clock::now();
    const Schedule result = pass(problem, pricer, schedule);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const Evaluation after = EvaluateOracle(problem, result);
    if (!after.ok()) return Fail("the schedule after the pass is invalid: " + after.violation.Message());
    std::printf("before %.1f after %.1f subgraphs %zu -> %zu pass %.2f s\n", before.total, after.total,
                schedule.subgraphs.size(), result.subgraphs.size(), seconds);
    if (!out.empty()) {
      std::vector<Latency> latencies;
      for (const SubgraphReport& r : after.subgraphs) latencies.push_back(r.latency);
      WriteFileAtomic(out, ScheduleToJson(result, latencies));
    }
  } catch (const std::exception& e) {
    return Fail(e.what());
  }
  return 0;
}
