"""annealer: the MLSys 2026 scheduler's engine for Python.

    import annealer
    p = annealer.Problem.load("problems/mlsys-2026-13.json")
    print(p.ops, p.tensors, p.capacity, annealer.lower_bound(p))
    r = annealer.search(p, time=30, seed=1, config={"sa.cooling": 0.9},
                        on_improvement=lambda t, latency, kind: print(t, latency, kind))
    r.schedule.save("s13.json"); print(r.total, r.gap, r.proof)
    e = annealer.evaluate(p, r.schedule)
    annealer.report(p, r.schedule, "s13.html", log=r.log)

Everything runs in the C++ engine (annealer._core), the code the command line runs; this
module only adapts Python arguments. See docs/python.md.
"""

from __future__ import annotations

import json as _json
import os as _os

from . import _core
from ._core import (
    ConfigError,
    Evaluation,
    InputError,
    LogEntry,
    NoScheduleError,
    Problem,
    Schedule,
    SearchResult,
    Violation,
    baseline,
    default_config,
    evaluate,
    lower_bound,
)

__all__ = [
    "ConfigError", "Evaluation", "InputError", "LogEntry", "NoScheduleError", "Problem", "Schedule", "SearchResult",
    "Violation", "baseline", "default_config", "evaluate", "hardware_profile", "hardware_profiles", "lower_bound",
    "report", "search", "sweep", "sweep_report",
]
__version__ = "0.1.0"


def _problem_from_dict(data: dict, origin: str = "<dict>") -> Problem:
    """Builds a Problem from a dict in the contest's JSON layout. Raises InputError."""
    if not isinstance(data, dict):
        raise TypeError(f"Problem.from_dict expects a dict, got {type(data).__name__}")
    return Problem.from_json(_json.dumps(data), origin)


def _schedule_from_dict(data: dict, origin: str = "<dict>") -> Schedule:
    """Builds a Schedule from a dict in the contest's JSON layout. Raises InputError."""
    if not isinstance(data, dict):
        raise TypeError(f"Schedule.from_dict expects a dict, got {type(data).__name__}")
    return Schedule.from_json(_json.dumps(data), origin)


def _to_dict(self, *args):
    """The object's JSON as a dict (json.loads(self.to_json()))."""
    return _json.loads(self.to_json(*args))


Problem.from_dict = staticmethod(_problem_from_dict)
Problem.from_onnx = staticmethod(_core.problem_from_onnx)
Problem.to_dict = _to_dict
Schedule.from_dict = staticmethod(_schedule_from_dict)
Schedule.to_dict = _to_dict
hardware_profiles = _core.hardware_profiles
hardware_profile = _core.hardware_profile


def _setting_text(key, value) -> str:
    if not isinstance(key, str):
        raise TypeError(f"config keys are strings like 'sa.cooling', got {key!r}")
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (int, float, str)):
        text = repr(value) if isinstance(value, float) else str(value)
    else:
        raise TypeError(f"config value of {key!r} must be a bool, int, float or str, got {type(value).__name__}")
    return f"{key}={text}"


def search(problem: Problem, time: float = 10, threads: int | None = None, seed: int | None = None,
           config=None, on_improvement=None, on_progress=None) -> SearchResult:
    """Searches for a low-latency schedule of `problem` for at most `time` seconds.

    threads: worker threads (None: the config's, by default every core); seed: the master seed.
    config: settings applied in order, like the CLI's --config and --set: a dict
      {"sa.cooling": 0.9, ...}, a path to a YAML file (e.g. "configs/deterministic.yaml"), or a
      list of those. threads and seed are applied after it. A bad key or value raises
      ConfigError (a ValueError) with the CLI's message.
    on_improvement(seconds, latency, kind): called, with the GIL held and never two at once,
      for every strictly better total, the baseline first (the CLI's --log lines).
    on_progress(dict): about every progress interval: seconds, best, moves, moves_per_second,
      cache_hit_rate, epoch.

    The GIL is released while the search runs. Ctrl-C (KeyboardInterrupt) stops it promptly
    and the best schedule so far is returned with r.interrupted = True. A callback that
    raises stops the search and its exception is raised here. Returns a SearchResult whose
    schedule has passed the oracle. Raises NoScheduleError (a ValueError) when there is no
    valid start schedule (nothing fits the capacity).
    """
    if not isinstance(problem, Problem):
        raise TypeError(f"search expects an annealer.Problem, got {type(problem).__name__}")
    if isinstance(time, bool) or not isinstance(time, (int, float)):
        raise TypeError(f"time is a number of seconds, got {type(time).__name__}")
    config_files: list[str] = []
    overrides: list[tuple[str, str]] = []
    items = config if isinstance(config, list) else ([] if config is None else [config])
    for item in items:
        if isinstance(item, (str, _os.PathLike)):
            if overrides:
                raise ValueError("config: YAML files come before the dict settings (as --config before --set)")
            config_files.append(_os.fspath(item))
        elif isinstance(item, dict):
            overrides.extend(("--set", _setting_text(k, v)) for k, v in item.items())
        else:
            raise TypeError(f"config takes a dict, a YAML path or a list of those, got {type(item).__name__}")
    for name, value in (("threads", threads), ("seed", seed)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        overrides.append((f"--{name}", f"{name}={value}"))
    for callback in (on_improvement, on_progress):
        if callback is not None and not callable(callback):
            raise TypeError(f"callbacks must be callable, got {type(callback).__name__}")
    return _core._search(problem, float(time), config_files, overrides, on_improvement, on_progress)


def report(problem: Problem, schedule: Schedule, path, log=None, problem_name: str = "problem",
           schedule_name: str = "schedule") -> None:
    """Writes the HTML report of `schedule` (what `annealer report` draws) to `path`.

    log: the search's improvements (SearchResult.log, a list of LogEntry) or the path of a
    --log JSONL file, drawn as the convergence chart. An invalid schedule still gets a report
    showing the broken rule.
    """
    if log is not None and not isinstance(log, (str, list, tuple)):
        log = _os.fspath(log)
    if isinstance(log, tuple):
        log = list(log)
    _core._report(problem, schedule, _os.fspath(path), log, problem_name, schedule_name)


def sweep(models=None, hardware=None, vary=None, points=None, search=None, *, spec=None, output=None,
          executor=None, workers=None, quiet=False) -> list:
    """Runs many searches (models x hardware x varied keys x seeds) and returns one row per point.

        rows = annealer.sweep(models=["tests/models/resnet50.onnx"], hardware=["tpu-v5e"],
                              vary={"fast_memory": ["4 MiB", "16 MiB"]},
                              search={"time": "20s", "threads": 1, "seeds": [1, 2]},
                              output="results.csv", executor=client.get_executor())

    The fields are sweep.yaml's (docs/sweeps.md); spec="sweep.yaml" reads them from a file.
    output: the results CSV, resumable (finished points are skipped; schedules go to
    RESULTS.schedules/). executor: any concurrent.futures executor, e.g. a dask.distributed
    Client's get_executor(); None runs a local process pool (`workers` processes, by default
    every core / threads). Raises annealer.sweeps.SweepError (a ValueError: "file:line: key: why")
    before any work for a bad description, SweepIncomplete when the executor gave up on points.
    """
    from . import sweeps

    return sweeps.sweep(models, hardware, vary, points, search, spec=spec, output=output, executor=executor,
                        workers=workers, quiet=quiet)


def sweep_report(results, path) -> None:
    """Writes the HTML page of a sweep's results (`annealer sweep-report`): `results` is the CSV's
    path or the rows annealer.sweep returned."""
    from . import sweeps_html as _report

    _report.write_report(results, _os.fspath(path))
