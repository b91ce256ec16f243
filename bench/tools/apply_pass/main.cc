// apply_pass: one of the search's schedule passes applied once to a given schedule, for the
// figures of docs/search.md: how much of a schedule the pass alone recovers. `regroup` is
// RegroupReaderParts (search/starts/constructive.h, "Regroup reader parts"), `layer-chains`
// LayerChains (search/starts/layer_chains.h, "Layer chains"), `serve` ServeLoadsByRetention
// (search/passes/serve_retained.h, "Serve a loader by retention"), `serve-all` ServeEveryLoader and
// `retain-next` RetainForNext (search/passes/serve_every_loader.h, retain_for_next.h, "Serve every
// loader and drop the writer"), `retain-recomputed`
// RetainRecomputed (search/passes/retain_recomputed.h, "Retain what the next subgraph
// recomputes"), `gather-strays` GatherStrays (search/passes/gather_strays.h, "Gather stray
// branches"), `gather-partials` GatherPartials (search/passes/gather_partials.h, "Gather a sum's
// partial products"), `lone-taps` GroupLoneTaps (search/passes/lone_taps.h, "Group lone taps").
// `refit` prices an op
// partition made elsewhere (another profile's schedule of the same model, a hand edit) here.
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "eval/cost/cost_cache.h"
#include "eval/oracle.h"
#include "search/starts/constructive.h"
#include "search/passes/gather_partials.h"
#include "search/passes/lone_taps.h"
#include "search/passes/gather_strays.h"
#include "search/starts/layer_chains.h"
#include "search/passes/retain_recomputed.h"
#include "search/passes/merge_refit.h"
#include "search/passes/retain_for_next.h"
#include "search/passes/serve_every_loader.h"
#include "search/passes/serve_retained.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"
#include "src/io/contest/problem_reader.h"
#include "src/io/contest/schedule_io.h"

namespace {

constexpr const char* kUsage =
    "usage: apply_pass regroup|layer-chains|serve|serve-all|retain-next|serve-recompute|merge-refit|retain-recomputed|gather-strays|gather-partials|refit PROBLEM.json SCHEDULE.json [-o OUT.json]\n"
    "\n"
    "Applies one of the search's passes to SCHEDULE.json, a valid schedule of PROBLEM.json:\n"
    "  regroup       the regrouping of reader parts (RegroupReaderParts)\n"
    "  layer-chains  the layer chains (LayerChains)\n"
    "  serve         loaders served by retention (ServeLoadsByRetention)\n"
    "  serve-all     a writer dropped, every loader served by its producer run again (ServeEveryLoader)\n"
    "  retain-next   what the next subgraph reads from each kept for it (RetainForNext)\n"
    "  serve-recompute  loaders served by an input kept and the producer run again (ServeLoadsByRecompute)\n"
    "  merge-refit   each subgraph refitted at every tile side, neighbours merged (MergeAndRefit)\n"
    "  retain-recomputed  what a subgraph runs again retained from the one before (RetainRecomputed)\n"
    "  gather-strays  ops of alike branches gathered into the subgraph holding most (GatherStrays)\n"
    "  gather-partials  a sum's partial products gathered into the subgraph running the sum (GatherPartials)\n"
    "  refit         every subgraph fitted again in its context, then Polish: SCHEDULE.json may be\n"
    "                another profile's schedule of the same model, or a hand edit (it need not be\n"
    "                valid; a subgraph with no valid fit runs its ops one by one)\n"
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
  } else if (positional[0] == "refit") {
    // Every subgraph fitted again in its own context (its retained-in and retain sets), then the
    // whole polished: a partition found on one profile priced on another (docs/search.md,
    // "Three pairs just above 25 %").
    pass = [&](const Problem& p, SubgraphPricer& pricer, const Schedule& s) {
      // A subgraph with no valid fit here (V11 at this native side) runs its ops one by one,
      // nothing retained into or out of them.
      Schedule fitted;
      for (std::size_t i = 0; i < s.subgraphs.size(); ++i) {
        const Subgraph& sub = s.subgraphs[i];
        std::vector<TensorId> in = fitted.subgraphs.empty() ? std::vector<TensorId>{} : fitted.subgraphs.back().retain;
        if (auto fit = FitSubgraph(pricer, sub.ops, in, sub.retain, nullptr, true, never)) {
          fitted.subgraphs.push_back(fit->subgraph);
          continue;
        }
        if (!in.empty()) {
          Subgraph& prev = fitted.subgraphs.back();
          const std::vector<TensorId> prev_in =
              fitted.subgraphs.size() > 1 ? fitted.subgraphs[fitted.subgraphs.size() - 2].retain : std::vector<TensorId>{};
          if (auto fit = FitSubgraph(pricer, prev.ops, prev_in, {}, nullptr, true, never)) prev = fit->subgraph;
          prev.retain.clear();
        }
        for (OpId op : sub.ops) {
          if (auto fit = FitSubgraph(pricer, {op}, {}, {}, nullptr, true, never)) fitted.subgraphs.push_back(fit->subgraph);
        }
      }
      return Polish(p, pricer, fitted, never, false);
    };
  } else if (positional[0] == "serve") {
    pass = [&](const Problem& p, SubgraphPricer& pricer, const Schedule& s) { return ServeLoadsByRetention(p, pricer, s, never); };
  } else if (positional[0] == "serve-all") {
    pass = [&](const Problem& p, SubgraphPricer& pricer, const Schedule& s) { return ServeEveryLoader(p, pricer, s, never); };
  } else if (positional[0] == "retain-next") {
    pass = [&](const Problem& p, SubgraphPricer& pricer, const Schedule& s) { return RetainForNext(p, pricer, s, never); };
  } else if (positional[0] == "merge-refit") {
    pass = [&](const Problem& p, SubgraphPricer& pricer, const Schedule& s) { return MergeAndRefit(p, pricer, s, never); };
  } else if (positional[0] == "serve-recompute") {
    pass = [&](const Problem& p, SubgraphPricer& pricer, const Schedule& s) { return ServeLoadsByRecompute(p, pricer, s, never); };
  } else if (positional[0] == "retain-recomputed") {
    pass = [&](const Problem& p, SubgraphPricer& pricer, const Schedule& s) { return RetainRecomputed(p, pricer, s, never, false); };
  } else if (positional[0] == "gather-strays") {
    pass = [&](const Problem& p, SubgraphPricer& pricer, const Schedule& s) { return GatherStrays(p, pricer, s, never); };
  } else if (positional[0] == "gather-partials") {
    pass = [&](const Problem& p, SubgraphPricer& pricer, const Schedule& s) { return GatherPartials(p, pricer, s, never); };
  } else if (positional[0] == "lone-taps") {
    pass = [&](const Problem& p, SubgraphPricer& pricer, const Schedule& s) { return GroupLoneTaps(p, pricer, s, never); };
  } else {
    return Fail("unknown pass '" + positional[0] + "' (regroup, layer-chains, serve, serve-all, retain-next, serve-recompute, merge-refit, retain-recomputed, gather-strays, gather-partials, lone-taps or refit)");
  }
  try {
    const Problem problem = ReadProblemFile(positional[1]);
    const Schedule schedule = ReadScheduleFile(positional[2]);
    const Evaluation before = EvaluateOracle(problem, schedule);
    if (!before.ok() && positional[0] != "refit") {
      return Fail(positional[2] + ": not a valid schedule: " + before.violation.Message());
    }
    CostCache cache(1 << 20);
    SubgraphPricer pricer(problem, &cache);
    const auto start = std::chrono::steady_clock::now();
    const Schedule result = pass(problem, pricer, schedule);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const Evaluation after = EvaluateOracle(problem, result);
    if (!after.ok()) return Fail("the schedule after the pass is invalid: " + after.violation.Message());
    char total_text[64];
    std::snprintf(total_text, sizeof total_text, "%.1f", before.total);
    const std::string before_text = before.ok() ? std::string(total_text) : "invalid (" + before.violation.rule + ")";
    std::printf("before %s after %.1f subgraphs %zu -> %zu pass %.2f s\n", before_text.c_str(), after.total,
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
