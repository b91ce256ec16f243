// annealer._core: the engine for Python, thin over the same public API the command line uses
// (src/io/contest/problem_reader, src/io/contest/schedule_io, src/jobs/search_job, src/report/schedule_summary, src/report/report_html).
// The Python layer (python/annealer/__init__.py) only adapts arguments and adds docstrings'
// examples; every check, price and search happens here, in the C++ code the CLI runs.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "eval/bound/bounds.h"
#include "eval/oracle.h"
#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "src/io/yaml/config.h"
#include "src/import/hardware_profile.h"
#include "src/io/json_fields.h"
#include "src/import/model_source.h"
#include "src/io/contest/problem_reader.h"
#include "src/io/contest/problem_writer.h"
#include "src/report/report_html.h"
#include "src/io/run_log.h"
#include "src/io/contest/schedule_io.h"
#include "src/report/schedule_summary.h"
#include "src/jobs/search_job.h"
#include "src/io/text_format.h"

namespace py = pybind11;
using namespace annealer;

namespace {

using Clock = std::chrono::steady_clock;

// Created at import, never freed (exception types live as long as the interpreter).
PyObject* g_input_error = nullptr;
PyObject* g_config_error = nullptr;
PyObject* g_no_schedule_error = nullptr;

// The last "[N]" of a field path ("inputs[3][1]" -> 1), or None.
py::object LastIndex(const std::string& field) {
  const std::size_t close = field.rfind(']');
  const std::size_t open = field.rfind('[', close);
  if (close == std::string::npos || open == std::string::npos || close == open + 1) return py::none();
  const std::string digits = field.substr(open + 1, close - open - 1);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return py::none();
  return py::int_(std::stoll(digits));
}

void RaiseInputError(const InputError& error) {
  py::object exception = py::reinterpret_borrow<py::object>(g_input_error)(error.what());
  exception.attr("file") = error.origin().empty() ? py::object(py::none()) : py::object(py::str(error.origin()));
  exception.attr("field") = error.field().empty() ? py::object(py::none()) : py::object(py::str(error.field()));
  exception.attr("index") = LastIndex(error.field());
  exception.attr("message") = py::str(error.what());
  PyErr_SetObject(g_input_error, exception.ptr());
}

// Writes through WriteFileAtomic; its failures are the caller's OSError.
void SaveText(const std::string& path, const std::string& text) {
  try {
    WriteFileAtomic(path, text);
  } catch (const std::runtime_error& error) {
    PyErr_SetString(PyExc_OSError, error.what());
    throw py::error_already_set();
  }
}

HardwareOverrides OverridesOf(const std::optional<std::map<std::string, std::string>>& overrides) {
  if (!overrides) return {};
  return HardwareOverrides(overrides->begin(), overrides->end());
}

py::dict ProfileDict(const HardwareProfile& profile) {
  const DerivedHardware d = Derive(profile);
  py::dict row;
  row["name"] = profile.name;
  row["description"] = profile.description;
  row["dtype"] = profile.dtype;
  row["capacity"] = d.capacity;
  row["bandwidth"] = d.bandwidth;
  row["native"] = d.native;
  row["matmul_base"] = d.matmul_base;
  row["pointwise_base"] = d.pointwise_base;
  row["balance"] = d.balance;
  row["tiles_that_fit"] = d.tiles_that_fit;
  row["sources"] = profile.sources;
  row["fast_memory_bytes"] = profile.fast_memory_bytes;
  row["bandwidth_bytes_per_cycle"] = profile.bandwidth_bytes_per_cycle;
  row["clock_hz"] = profile.clock_hz;
  row["element_bytes"] = profile.element_bytes;
  return row;
}

std::string ProblemRepr(const Problem& p) {
  return "<annealer.Problem: " + std::to_string(p.ops.size()) + " ops, " + std::to_string(p.tensors.size()) +
         " tensors, capacity " + std::to_string(p.fast_memory_capacity) + ", bandwidth " +
         Readable(p.slow_memory_bandwidth) + ">";
}

Problem WithHardware(const Problem& problem, std::optional<Elements> capacity, std::optional<double> bandwidth) {
  Problem copy = problem;
  std::string origin = "with_hardware(";
  if (capacity) {
    copy.fast_memory_capacity = *capacity;
    origin += "capacity=" + std::to_string(*capacity);
  }
  if (bandwidth) {
    if (capacity) origin += ", ";
    origin += "bandwidth=" + (std::isfinite(*bandwidth) ? FormatNumber(*bandwidth) : std::string("nan/inf"));
    if (!std::isfinite(*bandwidth)) {
      throw InputError(origin + ")", "slow_memory_bandwidth", "must be a finite number");
    }
    copy.slow_memory_bandwidth = *bandwidth;
  }
  // Through the reader, so that the new hardware passes the same checks as a file's.
  return ParseProblem(ProblemToJson(copy), origin + ")");
}

py::dict SubgraphDict(const Subgraph& s) {
  py::dict d;
  d["ops"] = s.ops;
  d["granularity"] = py::make_tuple(s.granularity.w, s.granularity.h, s.granularity.k);
  d["traversal"] = s.traversal ? py::object(py::cast(*s.traversal)) : py::object(py::none());
  d["retain"] = s.retain;
  return d;
}

std::string ScheduleJson(const Schedule& schedule, const Problem* problem) {
  if (schedule.reported_latencies) return ScheduleToJson(schedule, *schedule.reported_latencies);
  if (problem == nullptr) {
    throw py::value_error("the schedule carries no subgraph latencies: give the problem, "
                          "schedule.to_json(problem), to price it");
  }
  const Evaluation evaluation = EvaluateOracle(*problem, schedule);
  if (!evaluation.ok()) throw py::value_error("invalid schedule: " + evaluation.violation.Message());
  return ScheduleToJson(schedule, SubgraphLatencies(evaluation));
}

// annealer.evaluate's result.
struct PyEvaluation {
  bool valid = false;
  std::string verdict;
  std::optional<Violation> violation;
  Latency total = 0;
  Latency lower_bound = 0;
  std::optional<double> gap;
  Elements peak_working_set = 0;
  py::list rows;
  std::vector<std::string> warnings;
  std::vector<int> partial_edge_tiles;
};

PyEvaluation Evaluate(const Problem& problem, const Schedule& schedule) {
  const ScheduleSummary summary = SummarizeSchedule(problem, schedule);
  PyEvaluation out;
  out.valid = summary.valid();
  out.verdict = VerdictName(summary.evaluation.verdict);
  if (!out.valid) out.violation = summary.evaluation.violation;
  out.total = summary.total;
  out.lower_bound = summary.bound.total();
  out.gap = summary.gap_percent;
  out.warnings = summary.evaluation.warnings;
  out.partial_edge_tiles = summary.partial_edge_tiles;
  for (const SubgraphSummary& s : summary.subgraphs) {
    py::dict row = SubgraphDict(*s.subgraph);
    row["retained_in"] = s.retained_in;
    row["start"] = s.start;
    row["partial_edge_tiles"] = s.partial_edge_tiles;
    if (s.report) {
      row["latency"] = s.report->latency;
      row["compute_time"] = s.report->compute_time;
      row["memory_time"] = s.report->memory_time;
      row["peak_working_set"] = s.report->peak_working_set;
      row["tiles"] = s.report->tiles;
      row["k_steps"] = s.report->k_steps;
      row["memory_bound"] = s.memory_bound();
      out.peak_working_set = std::max(out.peak_working_set, s.report->peak_working_set);
    } else {
      for (const char* key : {"latency", "compute_time", "memory_time", "peak_working_set", "tiles", "k_steps",
                              "memory_bound"}) {
        row[key] = py::none();
      }
    }
    row["violation"] = s.violation ? py::object(py::cast(*s.violation)) : py::object(py::none());
    out.rows.append(row);
  }
  return out;
}

// annealer.search's result.
struct PySearchResult {
  Schedule schedule;
  Latency total = 0;
  Latency lower_bound = 0;
  std::optional<double> gap;
  std::optional<std::string> proof;
  bool interrupted = false;
  std::vector<RunLogEntry> log;
  double seconds = 0;
  int threads = 1;
  int epochs = 0;
  int64_t moves = 0;
  double cache_hit_rate = 0;
  std::map<std::string, int> improvements_by_kind;
  bool deterministic_cut = false;
  py::object exact = py::none();
  std::optional<std::string> failure;
};

py::dict ProgressDict(const SearchProgress& p) {
  py::dict d;
  d["seconds"] = p.elapsed_seconds;
  d["best"] = p.best_total;
  d["moves"] = p.moves;
  d["moves_per_second"] = p.moves_per_second;
  d["cache_hit_rate"] = p.cache_hit_rate;
  d["epoch"] = p.epoch;
  return d;
}

// Runs RunSearchJob on a thread of its own while the calling thread, without the GIL, wakes
// every 50 ms to let Python run its signal handlers: Ctrl-C (KeyboardInterrupt) sets the stop
// flag, and the search returns its best so far. The callbacks take the GIL; the first one that
// raises stops the search and its exception is raised here once the search has returned.
PySearchResult Search(const Problem& problem, double time, const std::vector<std::string>& config_files,
                      const std::vector<std::pair<std::string, std::string>>& overrides,
                      const py::object& on_improvement, const py::object& on_progress) {
  const Clock::time_point start = Clock::now();
  if (!std::isfinite(time)) throw py::value_error("time: expected a finite number of seconds");
  std::chrono::milliseconds duration;
  try {
    duration = ParseDuration(FormatNumber(time) + "s");
  } catch (const ConfigError& error) {
    throw ConfigError(std::string("time: ") + error.what());
  }
  const SearchParams params = BuildSearchParams(config_files, overrides);

  std::atomic<bool> stop{false};
  std::exception_ptr callback_error;  // the first callback's exception (set with the GIL held)
  const auto call = [&](const py::object& function, auto&&... args) {
    if (function.is_none()) return;
    py::gil_scoped_acquire gil;
    if (callback_error) return;
    try {
      function(std::forward<decltype(args)>(args)...);
    } catch (...) {
      callback_error = std::current_exception();
      stop.store(true);
    }
  };
  SearchJobHooks hooks;
  hooks.on_log = [&](const RunLogEntry& e) { call(on_improvement, e.seconds, e.latency, e.worker); };
  if (!on_progress.is_none()) {
    hooks.on_progress = [&](const SearchProgress& p) {
      py::gil_scoped_acquire gil;
      if (callback_error) return;
      try {
        on_progress(ProgressDict(p));
      } catch (...) {
        callback_error = std::current_exception();
        stop.store(true);
      }
    };
  }
  const SearchJobOptions options{.start = start, .time = duration, .name = "problem", .output_path = "",
                                 .exit_at_watchdog = false};

  std::optional<SearchJobResult> result;
  std::exception_ptr job_error;
  std::optional<py::error_already_set> signal_error;
  bool interrupted = false;
  {
    py::gil_scoped_release release;
    std::mutex mutex;
    std::condition_variable finished;
    bool done = false;
    std::thread worker([&] {
      try {
        result = RunSearchJob(problem, params, options, stop, hooks);
      } catch (...) {
        job_error = std::current_exception();
      }
      std::lock_guard lock(mutex);
      done = true;
      finished.notify_one();
    });
    std::unique_lock lock(mutex);
    while (!finished.wait_for(lock, std::chrono::milliseconds(50), [&] { return done; })) {
      lock.unlock();
      {
        py::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() != 0) {
          if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
            PyErr_Clear();
            interrupted = true;
          } else if (!signal_error) {
            signal_error.emplace();  // fetches the handler's exception
          } else {
            PyErr_Clear();
          }
          stop.store(true);
        }
      }
      lock.lock();
    }
    lock.unlock();
    worker.join();
  }
  if (callback_error) std::rethrow_exception(callback_error);
  if (signal_error) throw std::move(*signal_error);
  if (job_error) std::rethrow_exception(job_error);

  PySearchResult out;
  out.schedule = result->best;
  out.total = result->total;
  out.lower_bound = result->bound.total();
  out.gap = GapPercent(result->total, out.lower_bound);
  out.proof = OptimalityProof(*result);
  out.interrupted = interrupted;
  out.log = result->log;
  out.seconds = result->elapsed_seconds;
  out.threads = result->threads;
  out.epochs = result->summary.epochs;
  out.moves = result->summary.moves;
  out.cache_hit_rate = result->summary.cache_hit_rate;
  out.improvements_by_kind = result->summary.improvements_by_kind;
  out.deterministic_cut = result->summary.deterministic_cut;
  if (const std::optional<ExactResult>& exact = result->summary.exact) {
    py::dict d;
    d["status"] = exact->status == ExactStatus::kOptimal ? "optimal" : "not proven";
    d["total"] = exact->total;
    d["family"] = exact->family;
    d["seconds"] = exact->seconds;
    d["states"] = exact->states;
    d["stop_reason"] = exact->stop_reason;
    out.exact = d;
  }
  if (!result->failure.empty()) out.failure = result->failure;
  return out;
}

std::vector<RunLogEntry> LogArgument(const py::object& log) {
  if (log.is_none()) return {};
  if (py::isinstance<py::str>(log)) return ReadRunLog(log.cast<std::string>());
  try {
    return log.cast<std::vector<RunLogEntry>>();
  } catch (const py::cast_error&) {
    throw py::type_error("log: expected a list of annealer.LogEntry or the path of a --log file");
  }
}

void Report(const Problem& problem, const Schedule& schedule, const std::string& path, const py::object& log,
            const std::string& problem_name, const std::string& schedule_name) {
  const std::vector<RunLogEntry> entries = LogArgument(log);
  const ScheduleSummary summary = SummarizeSchedule(problem, schedule);
  ReportInput input{problem, schedule, summary, problem_name, schedule_name, nullptr, ""};
  if (!log.is_none()) {
    input.log = &entries;
    input.log_name = py::isinstance<py::str>(log) ? log.cast<std::string>() : std::string("search log");
  }
  SaveText(path, ReportHtml(input));
}

template <typename T>
std::string Optional(const std::optional<T>& value) {
  if (!value) return "None";
  if constexpr (std::is_same_v<T, std::string>) {
    return "'" + *value + "'";
  } else {
    return Readable(*value);
  }
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "The annealer engine (C++), wrapped by the annealer package.";

  g_input_error = PyErr_NewExceptionWithDoc(
      "annealer.InputError",
      "Bad input: a missing or unreadable file, malformed JSON, a field with a wrong value.\n\n"
      "str(error) is the one line the command line prints. Attributes: file (the file or the\n"
      "input's name), field (the field path, e.g. 'inputs[3][1]', or None), index (the last\n"
      "index of the field path, or None), message (the whole line).",
      PyExc_ValueError, nullptr);
  g_config_error = PyErr_NewExceptionWithDoc(
      "annealer.ConfigError",
      "A bad search setting (unknown key, wrong type, out of range) or time; the message is the\n"
      "command line's.",
      PyExc_ValueError, nullptr);
  g_no_schedule_error = PyErr_NewExceptionWithDoc(
      "annealer.NoScheduleError",
      "search found no valid start schedule for the problem (e.g. an op fits in fast memory at no\n"
      "granularity: the capacity is too small); the message is the CLI's.",
      PyExc_ValueError, nullptr);
  m.attr("InputError") = py::handle(g_input_error);
  m.attr("NoScheduleError") = py::handle(g_no_schedule_error);
  m.attr("ConfigError") = py::handle(g_config_error);
  py::register_exception_translator([](std::exception_ptr pointer) {
    try {
      if (pointer) std::rethrow_exception(pointer);
    } catch (const InputError& error) {
      RaiseInputError(error);
    } catch (const ConfigError& error) {
      PyErr_SetString(g_config_error, error.what());
    } catch (const SearchJobError& error) {
      PyErr_SetString(g_no_schedule_error, error.what());
    }
  });

  // The ONNX importer and the hardware profiles (src/import/model_source.h, src/import/hardware_profile.h):
  // Problem.from_onnx and hardware_profiles() in the package.
  m.def(
      "problem_from_onnx",
      [](const std::string& path, std::optional<std::string> hardware,
         std::optional<std::map<std::string, std::vector<int64_t>>> inputs,
         std::optional<std::map<std::string, std::string>> hardware_overrides) {
        if (!IsOnnxPath(path)) throw InputError(path, "", "Problem.from_onnx reads an ONNX model (a .onnx file)");
        return LoadProblem(ProblemSource{path, hardware, inputs.value_or(std::map<std::string, std::vector<int64_t>>{}),
                                         OverridesOf(hardware_overrides)})
            .problem;
      },
      py::arg("path"), py::arg("hardware") = py::none(), py::arg("inputs") = py::none(),
      py::arg("hardware_overrides") = py::none(),
      "Imports an ONNX model for a hardware profile (a built-in name such as 'tpu-v5e', or a YAML\n"
      "file) as `annealer import` does; inputs fixes dynamic input dims, e.g.\n"
      "{'input': [1, 3, 224, 224]}; hardware_overrides replaces keys of the profile in its units,\n"
      "e.g. {'fast_memory': '4 MiB'}. Raises InputError (the CLI's one-line message).");
  m.def(
      "_problem_from_onnx_bytes",
      [](const py::bytes& data, const std::string& hardware,
         std::optional<std::map<std::string, std::vector<int64_t>>> inputs,
         std::optional<std::map<std::string, std::string>> hardware_overrides, const std::string& origin) {
        const std::string bytes = data;
        return ImportModelBytes(bytes, origin, hardware, inputs.value_or(std::map<std::string, std::vector<int64_t>>{}),
                                OverridesOf(hardware_overrides))
            .problem;
      },
      py::arg("data"), py::arg("hardware"), py::arg("inputs") = py::none(), py::arg("hardware_overrides") = py::none(),
      py::arg("origin") = "<bytes>",
      "Problem.from_onnx on the bytes of a model in memory (Problem.from_torch's export); `origin`\n"
      "names them in error messages. Raises InputError.");
  m.def(
      "hardware_profiles",
      [] {
        py::list out;
        for (const std::string& name : BuiltinHardwareNames()) out.append(ProfileDict(LoadHardwareProfile(name)));
        return out;
      },
      "The built-in hardware profiles: one dict per profile with its derived problem numbers\n"
      "(capacity and bandwidth in elements, native side, MatMul and Pointwise base costs per\n"
      "native tile), as `annealer hardware --json` prints them.");
  m.def(
      "hardware_profile",
      [](const std::string& name_or_path, std::optional<std::map<std::string, std::string>> overrides) {
        return ProfileDict(LoadHardwareProfile(name_or_path, OverridesOf(overrides)));
      },
      py::arg("name_or_path"), py::arg("overrides") = py::none(),
      "One profile (a built-in name or a YAML file) with `overrides` replacing keys in the file's\n"
      "units ({'fast_memory': '4 MiB', 'bandwidth': '400 GB/s'}), as a dict like\n"
      "hardware_profiles()'s plus fast_memory_bytes, bandwidth_bytes_per_cycle, clock_hz and\n"
      "element_bytes. Raises InputError naming the file and line, or the override.");
  m.def(
      "_parse_duration", [](const std::string& text) { return ParseDuration(text).count() / 1000.0; },
      py::arg("text"), "A duration as --time takes it ('500ms', '30s', '1.5m') in seconds; raises ConfigError.");
  m.def(
      "_check_config",
      [](const std::vector<std::string>& config_files, const std::vector<std::pair<std::string, std::string>>& overrides) {
        BuildSearchParams(config_files, overrides);
      },
      py::arg("config_files"), py::arg("overrides"),
      "Applies the settings as annealer.search would and raises ConfigError if they are bad.");

  py::class_<Problem>(m, "Problem", "A scheduling problem: the graph (ops, tensors) and the hardware.")
      .def_static("load", &ReadProblemFile, py::arg("path"),
                  "Reads a problem JSON file (contest format). Raises InputError.")
      .def_static("from_json", &ParseProblem, py::arg("text"), py::arg("origin") = "<string>",
                  "Parses problem JSON text; `origin` names it in error messages. Raises InputError.")
      .def_property_readonly("ops", [](const Problem& p) { return p.ops.size(); }, "Number of ops.")
      .def_property_readonly("tensors", [](const Problem& p) { return p.tensors.size(); }, "Number of tensors.")
      .def_property_readonly("capacity", [](const Problem& p) { return p.fast_memory_capacity; },
                             "fast_memory_capacity, in elements.")
      .def_property_readonly("bandwidth", [](const Problem& p) { return p.slow_memory_bandwidth; },
                             "slow_memory_bandwidth, in elements per time unit.")
      .def_property_readonly("native", [](const Problem& p) { return p.native; },
                             "The native tile side (w = h = k).")
      .def("with_hardware", &WithHardware, py::arg("capacity") = py::none(), py::arg("bandwidth") = py::none(),
           "A copy with another fast-memory capacity and/or bandwidth (for sweeps), checked like a file's.")
      .def(
          "with_profile",
          [](const Problem& problem, const std::string& hardware, std::optional<std::map<std::string, std::string>> overrides) {
            const HardwareProfile profile = LoadHardwareProfile(hardware, OverridesOf(overrides));
            Problem copy = problem;
            ApplyHardware(Derive(profile), copy);
            // Through the reader, as `annealer hardware NAME --apply` writes it and a search reads it.
            return ParseProblem(ProblemToJson(copy), "with_profile(" + hardware + ")");
          },
          py::arg("hardware"), py::arg("overrides") = py::none(),
          "A copy with the numbers of a hardware profile (`annealer hardware NAME --apply`): capacity,\n"
          "bandwidth, native side and every op's base cost; overrides as in hardware_profile().")
      .def("to_json", &ProblemToJson, "The problem as contest JSON text.")
      .def("save", [](const Problem& p, const std::string& path) { SaveText(path, ProblemToJson(p)); },
           py::arg("path"), "Writes the problem JSON to `path` (atomically).")
      .def("__eq__", [](const Problem& a, const Problem& b) { return a == b; })
      .def("__repr__", &ProblemRepr);

  py::class_<Schedule>(m, "Schedule", "A schedule: the ordered subgraphs with their settings (contest format).")
      .def_static("load", &ReadScheduleFile, py::arg("path"), "Reads a schedule JSON file. Raises InputError.")
      .def_static("from_json", &ParseSchedule, py::arg("text"), py::arg("origin") = "<string>",
                  "Parses schedule JSON text. Raises InputError.")
      .def_property_readonly(
          "subgraphs",
          [](const Schedule& s) {
            py::list out;
            for (const Subgraph& sub : s.subgraphs) out.append(SubgraphDict(sub));
            return out;
          },
          "The subgraphs as dicts: ops, granularity (w, h, k), traversal (list or None), retain.")
      .def_property_readonly(
          "latencies", [](const Schedule& s) { return s.reported_latencies; },
          "subgraph_latencies as carried by the schedule (the oracle's for a search result), or None.")
      .def(
          "to_json", [](const Schedule& s, const Problem* problem) { return ScheduleJson(s, problem); },
          py::arg("problem") = nullptr,
          "The schedule as contest JSON text, byte for byte what the CLI writes. A schedule without "
          "latencies needs the problem to price them.")
      .def(
          "save",
          [](const Schedule& s, const std::string& path, const Problem* problem) {
            SaveText(path, ScheduleJson(s, problem));
          },
          py::arg("path"), py::arg("problem") = nullptr, "Writes to_json() to `path` (atomically).")
      .def("__len__", [](const Schedule& s) { return s.subgraphs.size(); })
      .def("__eq__", [](const Schedule& a, const Schedule& b) { return a.subgraphs == b.subgraphs; })
      .def("__repr__", [](const Schedule& s) {
        return "<annealer.Schedule: " + std::to_string(s.subgraphs.size()) + " subgraphs>";
      });

  py::class_<Violation>(m, "Violation", "The first rule a schedule breaks.")
      .def_readonly("rule", &Violation::rule, "The spec's rule id: 'V1'..'V13', 'W', 'G3', ...")
      .def_property_readonly(
          "subgraph",
          [](const Violation& v) { return v.subgraph >= 0 ? py::object(py::int_(v.subgraph)) : py::object(py::none()); },
          "Index of the subgraph that breaks it, or None for a rule about the whole schedule.")
      .def_readonly("detail", &Violation::detail, "Where it fails (step, tensor or op).")
      .def_property_readonly("message", &Violation::Message, "The one line the CLI prints.")
      .def("__str__", &Violation::Message)
      .def("__repr__", [](const Violation& v) { return "<annealer.Violation: " + v.Message() + ">"; });

  py::class_<PyEvaluation>(m, "Evaluation", "The oracle's verdict on a schedule (annealer.evaluate).")
      .def_readonly("valid", &PyEvaluation::valid, "True when the schedule obeys every rule.")
      .def_readonly("verdict", &PyEvaluation::verdict, "'VALID', 'OOM' or 'INVALID' (as `annealer evaluate --json`).")
      .def_readonly("violation", &PyEvaluation::violation, "The first broken rule (Violation), or None.")
      .def_readonly("total", &PyEvaluation::total,
                    "Total latency; for an invalid schedule the sum of the subgraphs priced on their own.")
      .def_readonly("lower_bound", &PyEvaluation::lower_bound, "The problem's lower bound.")
      .def_readonly("gap", &PyEvaluation::gap, "total / lower_bound - 1 in percent (None if invalid).")
      .def_readonly("peak_working_set", &PyEvaluation::peak_working_set,
                    "Largest working set of any step, in elements.")
      .def_readonly("rows", &PyEvaluation::rows,
                    "One dict per subgraph: ops, granularity, traversal, retain, retained_in, start, latency, "
                    "compute_time, memory_time, peak_working_set, tiles, k_steps, memory_bound, "
                    "partial_edge_tiles, violation.")
      .def_readonly("warnings", &PyEvaluation::warnings, "Spec V13 warnings (reported latencies that differ).")
      .def_readonly("partial_edge_tiles", &PyEvaluation::partial_edge_tiles,
                    "Indices of subgraphs whose tiles overhang the tensor edge.")
      .def("__bool__", [](const PyEvaluation& e) { return e.valid; })
      .def("__repr__", [](const PyEvaluation& e) {
        if (!e.valid) return "<annealer.Evaluation: invalid, " + e.violation->Message() + ">";
        return "<annealer.Evaluation: valid, total " + Readable(e.total) + ", lower bound " +
               Readable(e.lower_bound) + ", gap " + (e.gap ? PercentText(*e.gap) : std::string("n/a")) + ">";
      });

  py::class_<RunLogEntry>(m, "LogEntry", "One improvement of the best schedule during a search.")
      .def(py::init([](double seconds, Latency latency, std::string worker, Latency lower_bound) {
             return RunLogEntry{seconds, latency, std::move(worker), lower_bound};
           }),
           py::arg("seconds"), py::arg("latency"), py::arg("worker"), py::arg("lower_bound") = 0.0)
      .def_readonly("seconds", &RunLogEntry::seconds, "Seconds since the search started.")
      .def_readonly("latency", &RunLogEntry::latency, "Total latency of the improving schedule.")
      .def_readonly("worker", &RunLogEntry::worker, "The kind that found it: 'baseline', 'sa', 'ga', ...")
      .def_readonly("lower_bound", &RunLogEntry::lower_bound, "The problem's lower bound.")
      .def("to_json", [](const RunLogEntry& e) { std::string line = RunLogLine(e); line.pop_back(); return line; },
           "The entry as one JSON line of `annealer --log`.")
      .def("__eq__", [](const RunLogEntry& a, const RunLogEntry& b) { return a == b; })
      .def("__repr__", [](const RunLogEntry& e) {
        return "<annealer.LogEntry: " + Readable(e.seconds) + " s, " + Readable(e.latency) + " by " + e.worker + ">";
      });

  py::class_<PySearchResult>(m, "SearchResult", "What annealer.search found.")
      .def_readonly("schedule", &PySearchResult::schedule, "The best schedule (checked by the oracle).")
      .def_readonly("total", &PySearchResult::total, "Its total latency (the oracle's).")
      .def_readonly("lower_bound", &PySearchResult::lower_bound, "The problem's lower bound.")
      .def_readonly("gap", &PySearchResult::gap, "total / lower_bound - 1 in percent, or None.")
      .def_readonly("proof", &PySearchResult::proof,
                    "'optimal: meets the lower bound, ...', 'optimal within family ...', or None.")
      .def_readonly("interrupted", &PySearchResult::interrupted,
                    "True when Ctrl-C (KeyboardInterrupt) stopped the search early.")
      .def_readonly("log", &PySearchResult::log, "The improvements, as a list of LogEntry (for report).")
      .def_readonly("seconds", &PySearchResult::seconds, "Wall time of the call.")
      .def_readonly("threads", &PySearchResult::threads, "Worker threads used.")
      .def_readonly("epochs", &PySearchResult::epochs, "Epochs the workers ran.")
      .def_readonly("moves", &PySearchResult::moves, "Moves tried.")
      .def_readonly("cache_hit_rate", &PySearchResult::cache_hit_rate, "Cost cache hit rate (0..1).")
      .def_readonly("improvements_by_kind", &PySearchResult::improvements_by_kind,
                    "Improvements of the best per worker kind.")
      .def_readonly("deterministic_cut", &PySearchResult::deterministic_cut,
                    "Deterministic mode only: the time ran out before the work budget (not reproducible).")
      .def_readonly("exact", &PySearchResult::exact,
                    "The exact solver's run as a dict (status, total, family, seconds, states, stop_reason), or None.")
      .def_readonly("failure", &PySearchResult::failure,
                    "The search's error when it failed (the result is then the baseline), or None.")
      .def("__repr__", [](const PySearchResult& r) {
        return "<annealer.SearchResult: total " + Readable(r.total) + ", lower bound " + Readable(r.lower_bound) +
               ", gap " + (r.gap ? PercentText(*r.gap) : std::string("n/a")) + ", proof " + Optional(r.proof) +
               (r.interrupted ? ", interrupted" : "") + ">";
      });

  m.def(
      "lower_bound",
      [](const Problem& p, bool parts) -> py::object {
        const LowerBound bound = ComputeLowerBound(p);
        if (!parts) return py::float_(bound.total());
        py::dict d;
        d["total"] = bound.total();
        for (const BoundPart& part : kBoundParts) {
          d[part.name] = bound.*part.value;
          if (part.count != nullptr) d[part.count_name] = bound.*part.count;
        }
        d["weight"] = bound.weight;
        d["island_activations"] = bound.island_activations;  // P32: a count inside `islands`
        d["written_sums"] = bound.written_sum_count;         // P38: a count inside `islands`
        return d;
      },
      py::arg("problem"), py::arg("parts") = false,
      "The lower bound no valid schedule beats (float); parts=True: a dict with its parts.");
  m.def(
      "baseline",
      [](const Problem& p, bool resident, bool greedy) {
        if (resident && greedy) throw py::value_error("resident and greedy exclude each other");
        const BaselineKind kind = greedy     ? BaselineKind::kGreedy
                                  : resident ? BaselineKind::kResident
                                             : BaselineKind::kSpilling;
        return BuildBaselineSchedule(p, kind, "problem").schedule;
      },
      py::arg("problem"), py::arg("resident") = false, py::arg("greedy") = false,
      "The schedule without search `annealer baseline` writes (its latencies the oracle's): one op\n"
      "per subgraph at its best tiling, every intermediate spilled; resident=True keeps an op's\n"
      "output in fast memory for its only consumer when it fits (--resident); greedy=True the\n"
      "search's greedy-fusion start (--greedy). Raises NoScheduleError when some op fits at no\n"
      "granularity.");
  m.def("evaluate", &Evaluate, py::arg("problem"), py::arg("schedule"),
        "Prices `schedule` with the oracle: an Evaluation (rows, total, peak working set, violation).");
  m.def("_search", &Search, py::arg("problem"), py::arg("time"), py::arg("config_files"), py::arg("overrides"),
        py::arg("on_improvement"), py::arg("on_progress"), "See annealer.search.");
  m.def("_report", &Report, py::arg("problem"), py::arg("schedule"), py::arg("path"), py::arg("log"),
        py::arg("problem_name"), py::arg("schedule_name"), "See annealer.report.");
  m.def(
      "default_config", [] { return FormatConfigYaml(SearchParams{}); },
      "Every search setting with its documentation and default, as YAML (configs/default.yaml).");
}
