// The single Google Benchmark entry point of annealer_bench; bench/evaluator/*.cc only register cases.
//
// After the run it prints the evaluator targets (issue 3) for every problem/schedule whose
// benchmarks ran, from the same run's times (the median when --benchmark_repetitions > 1):
//   full       OracleFull / FastFullCached      (target >= 100x)
//   lookup     SubgraphCold / SubgraphCached    (target >= 10x)
//   delta      FastFullCached / MoveDeltaCached (target >= 50x)
// Google Benchmark's flags work as usual (--benchmark_format, --benchmark_out[_format], ...);
// the targets follow the table in console format and go to stderr in json and csv formats.
// e.g.  build/annealer_bench --benchmark_filter='mlsys-2026-17/(baseline|fused)$' --benchmark_repetitions=3
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

// Shows the runs with the display reporter that Google Benchmark's flags ask for
// (--benchmark_format=console|json|csv, --benchmark_color; CreateDefaultDisplayReporter), and
// records per benchmark name "<Kind>/<problem>/<schedule>" the time per iteration (ns): the
// plain run, replaced by the median aggregate when there is one. --benchmark_out and
// --benchmark_out_format are the library's own file reporter, untouched.
class RecordingReporter : public benchmark::BenchmarkReporter {
 public:
  RecordingReporter() : display_(benchmark::CreateDefaultDisplayReporter()) {}

  // The targets go after the table in console format, to stderr otherwise so that stdout stays
  // one JSON or CSV document.
  bool console() const {
    return dynamic_cast<benchmark::ConsoleReporter*>(display_.get()) != nullptr;
  }

  bool ReportContext(const Context& context) override {
    display_->SetOutputStream(&GetOutputStream());
    display_->SetErrorStream(&GetErrorStream());
    return display_->ReportContext(context);
  }
  void Finalize() override { display_->Finalize(); }
  void ReportRuns(const std::vector<Run>& runs) override {
    display_->ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (run.run_type == Run::RT_Aggregate && !median) continue;
      std::string name = run.run_name.function_name;
      const double ns = run.GetAdjustedRealTime();  // the benchmarks report in ns
      if (median || !times_.count(name)) times_[name] = ns;
    }
  }

  void PrintTargets() const {
    std::FILE* out = console() ? stdout : stderr;
    std::fflush(stdout);
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
        std::fprintf(out, "\nTargets (same run): full = OracleFull/FastFullCached >= 100x, lookup = "
                    "SubgraphCold/SubgraphCached >= 10x, delta = FastFullCached/MoveDeltaCached >= 50x\n");
        std::fprintf(out, "%-28s %-17s %-17s %-17s\n", "problem/schedule", "full", "lookup", "delta");
        header = true;
      }
      std::fprintf(out, "%-28s %s %s %s\n", name.c_str(), full.c_str(), lookup.c_str(), delta.c_str());
    }
  }

 private:
  std::unique_ptr<benchmark::BenchmarkReporter> display_;
  std::map<std::string, double> times_;
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
