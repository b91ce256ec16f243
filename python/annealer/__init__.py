"""annealer: the MLSys 2026 scheduler's engine for Python.

    import annealer
    p = annealer.Problem.load("problems/mlsys-2026-13.json")
    print(p.ops, p.tensors, p.capacity, annealer.lower_bound(p))
    r = annealer.search(p, time=30, seed=1, config={"sa.cooling": 0.9},
                        on_improvement=lambda t, latency, kind: print(t, latency, kind))
    r.schedule.save("s13.json"); print(r.total, r.gap, r.proof)
    e = annealer.evaluate(p, r.schedule)
    annealer.report(p, r.schedule, "s13.html", log=r.log)
    m = annealer.Problem.from_torch(torchvision.models.resnet18(), torch.randn(1, 3, 224, 224),
                                    hardware="tpu-v5e")

Everything runs in the C++ engine (annealer._core), the code the command line runs; this
module only adapts Python arguments. See docs/python.md.
"""

from __future__ import annotations

import io as _io
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
    "ConfigError", "Evaluation", "ExportError", "InputError", "LogEntry", "NoScheduleError", "Problem", "Schedule", "SearchResult",
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


class ExportError(ValueError):
    """Problem.from_torch: torch.onnx.export failed on the module (the message says why; the
    torch exception is its __cause__)."""


def _problem_from_torch(module, example_inputs, hardware=None, opset: int = 17, inputs=None,
                        hardware_overrides=None, input_names=None, origin: str | None = None) -> Problem:
    """Exports a torch.nn.Module to ONNX in memory and imports it for a hardware profile.

    The export is torch.onnx.export(module.eval(), example_inputs, buffer, opset_version=opset,
    do_constant_folding=True) under torch.enable_grad(), with the parameters requiring grad
    (torch 1.13 cannot export the fused no-grad path of nn.MultiheadAttention); the module's
    train/eval and requires_grad flags are restored after.
    The bytes go through the importer Problem.from_onnx uses, so the problem is the one
    from_onnx gives for the same export written to a file.

    example_inputs: a tensor or a tuple of the forward's arguments (their shapes fix the
    model's). hardware: a built-in profile name (hardware_profiles()) or a YAML path;
    hardware_overrides, inputs: as Problem.from_onnx (inputs names graph inputs: torch calls
    them input.1, ... unless input_names is given). origin names the model in error messages
    (default "<Class> (torch.onnx.export)").

    Raises ImportError without torch, TypeError/ValueError naming a bad argument, ExportError
    when torch cannot export the module, InputError (the CLI's message) when the importer
    rejects the model or the profile.
    """
    try:
        import torch
    except ImportError as error:
        raise ImportError(f"Problem.from_torch needs PyTorch, which does not import ({error}); on Debian 12: "
                          "apt-get install python3-torch") from error
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"Problem.from_torch: module must be a torch.nn.Module, got {type(module).__name__}")
    if isinstance(example_inputs, torch.Tensor):
        args = (example_inputs,)
    elif isinstance(example_inputs, (tuple, list)) and len(example_inputs) > 0:
        args = tuple(example_inputs)
    else:
        raise TypeError("Problem.from_torch: example_inputs must be a torch.Tensor or a non-empty tuple of the "
                        f"forward's arguments, got {type(example_inputs).__name__}"
                        + (" (empty)" if isinstance(example_inputs, (tuple, list)) else ""))
    if hardware is None:
        raise TypeError("Problem.from_torch: hardware is required: a built-in profile name "
                        "(annealer.hardware_profiles()) or a profile YAML path")
    if not isinstance(hardware, (str, _os.PathLike)):
        raise TypeError(f"Problem.from_torch: hardware must be a profile name or a YAML path, got {type(hardware).__name__}")
    hardware = _os.fspath(hardware)
    if isinstance(opset, bool) or not isinstance(opset, int):
        raise TypeError(f"Problem.from_torch: opset must be an int, got {type(opset).__name__}")
    try:
        from torch.onnx import _constants
        lowest, highest = _constants.ONNX_MIN_OPSET, _constants.ONNX_MAX_OPSET
    except (ImportError, AttributeError):  # another torch: its export says what it supports
        lowest, highest = 1, opset
    if not lowest <= opset <= highest:
        raise ValueError(f"Problem.from_torch: opset={opset} is outside the {lowest}..{highest} torch {torch.__version__} exports")
    if origin is None:
        origin = f"{type(module).__name__} (torch.onnx.export)"
    # A bad profile or override fails here, before the (possibly long) export.
    _core.hardware_profile(hardware, hardware_overrides)

    # torch 1.13's nn.MultiheadAttention and TransformerEncoderLayer take a fused fast path, which
    # has no ONNX export, in eval mode when grad is off or no parameter requires grad: so the
    # export runs with grad on and every floating-point parameter requiring grad, then the
    # module's flags are put back.
    modes = [(m, m.training) for m in module.modules()]
    frozen = [p for p in module.parameters() if p.is_floating_point() and not p.requires_grad]
    buffer = _io.BytesIO()
    try:
        module.eval()
        for parameter in frozen:
            parameter.requires_grad_(True)
        with torch.enable_grad():
            torch.onnx.export(module, args, buffer, opset_version=opset, do_constant_folding=True,
                              input_names=input_names)
    except Exception as error:
        lines = [line for line in str(error).splitlines() if line.strip()]
        why = f"{type(error).__name__}: {lines[0] if lines else ''}"
        raise ExportError(f"Problem.from_torch: torch.onnx.export of module ({type(module).__name__}, "
                          f"opset {opset}) failed: {why}") from error
    finally:
        for submodule, training in modes:
            submodule.training = training
        for parameter in frozen:
            parameter.requires_grad_(False)
    return _core._problem_from_onnx_bytes(buffer.getvalue(), hardware, inputs, hardware_overrides, origin)


Problem.from_dict = staticmethod(_problem_from_dict)
Problem.from_onnx = staticmethod(_core.problem_from_onnx)
Problem.from_torch = staticmethod(_problem_from_torch)
Problem._from_onnx_bytes = staticmethod(_core._problem_from_onnx_bytes)
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
