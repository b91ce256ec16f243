// The single Google Benchmark entry point of annealer_bench; bench/*.cc only register cases.
//
// After the run it prints the evaluator targets (issue 3) for every problem/schedule whose
// benchmarks ran, from the same run's times (the median when --benchmark_repetitions > 1):
//   full       OracleFull / FastFullCached      (target >= 100x)
//   lookup     SubgraphCold / SubgraphCached    (target >= 10x)
//   delta      FastFullCached / MoveDeltaCached (target >= 50x)
// e.g.  build/annealer_bench --benchmark_filter='mlsys-2026-17/(baseline|fused)$' --benchmark_repetitions=3
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace {

// Records per benchmark name "<Kind>/<problem>/<schedule>" the time per iteration (ns):
// the plain run, replaced by the median aggregate when there is one.
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  // Colours only on a terminal (the default reporter's behaviour), so piped output stays plain.
  RecordingReporter() : ConsoleReporter(isatty(fileno(stdout)) ? OO_ColorTabular : OO_Tabular) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (run.run_type == Run::RT_Aggregate && !median) continue;
      std::string name = run.run_name.function_name;
      const double ns = run.GetAdjustedRealTime();  // the benchmarks report in ns
      if (median || !times_.count(name)) times_[name] = ns;
      if (median) medians_[name] = true;
    }
  }

  void PrintTargets() const {
    std::map<std::string, std::map<std::string, double>> by_case;  // case -> kind -> ns
    for (const auto& [name, ns] : times_) {
      const auto slash = name.find('/');
      if (slash == std::string::npos) continue;
      by_case[name.substr(slash + 1)][name.substr(0, slash)] = ns;
    }
    bool header = false;
    for (const auto& [name, kinds] : by_case) {
      auto ratio = [&](const char* slow, const char* fast, double target) -> std::string {
        const auto s = kinds.find(slow), f = kinds.find(fast);
        if (s == kinds.end() || f == kinds.end() || f->second <= 0) return "       -        ";
        const double r = s->second / f->second;
        char buffer[64];
        std::snprintf(buffer, sizeof buffer, "%7.1fx %-8s", r, r >= target ? "(met)" : "(MISSED)");
        return buffer;
      };
      const std::string full = ratio("OracleFull", "FastFullCached", 100);
      const std::string lookup = ratio("SubgraphCold", "SubgraphCached", 10);
      const std::string delta = ratio("FastFullCached", "MoveDeltaCached", 50);
      if (full[7] == '-' && lookup[7] == '-' && delta[7] == '-') continue;
      if (!header) {
        std::printf("\nTargets (same run): full = OracleFull/FastFullCached >= 100x, lookup = "
                    "SubgraphCold/SubgraphCached >= 10x, delta = FastFullCached/MoveDeltaCached >= 50x\n");
        std::printf("%-28s %-17s %-17s %-17s\n", "problem/schedule", "full", "lookup", "delta");
        header = true;
      }
      std::printf("%-28s %s %s %s\n", name.c_str(), full.c_str(), lookup.c_str(), delta.c_str());
    }
  }

 private:
  std::map<std::string, double> times_;
  std::map<std::string, bool> medians_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintTargets();
  benchmark::Shutdown();
  return 0;
}
