# Type stub of the annealer package (the engine is the C++ extension annealer._core).
from __future__ import annotations

import os
from typing import Any, Callable, Optional, Sequence, Union

__version__: str

class InputError(ValueError):
    """Bad input; str(e) is the CLI's one line. file / field / index name where it is."""
    file: Optional[str]
    field: Optional[str]
    index: Optional[int]
    message: str

class ConfigError(ValueError):
    """A bad search setting or time, with the CLI's message."""

class NoScheduleError(ValueError):
    """search found no valid start schedule (e.g. the capacity is too small)."""

class ExportError(ValueError):
    """Problem.from_torch: torch.onnx.export failed on the module (the torch error is __cause__)."""

class Problem:
    """A scheduling problem: the graph (ops, tensors) and the hardware."""
    @staticmethod
    def load(path: str) -> Problem: ...
    @staticmethod
    def from_json(text: str, origin: str = "<string>") -> Problem: ...
    @staticmethod
    def from_dict(data: dict[str, Any], origin: str = "<dict>") -> Problem: ...
    @staticmethod
    def from_onnx(path: str, hardware: Optional[str] = None,
                  inputs: Optional[dict[str, list[int]]] = None,
                  hardware_overrides: Optional[dict[str, str]] = None) -> Problem:
        """Imports an ONNX model for a hardware profile (built-in name or YAML file), as
        `annealer import` does; inputs fixes dynamic input dims; hardware_overrides replaces
        keys of the profile in its units ({'fast_memory': '4 MiB'}). Raises InputError."""
    @staticmethod
    def from_torch(module: Any, example_inputs: Any, hardware: Optional[Union[str, os.PathLike[str]]] = None,
                   opset: int = 17, inputs: Optional[dict[str, list[int]]] = None,
                   hardware_overrides: Optional[dict[str, str]] = None,
                   input_names: Optional[Sequence[str]] = None, origin: Optional[str] = None) -> Problem:
        """Exports a torch.nn.Module to ONNX in memory (eval mode, opset, constant folding) and
        imports it as from_onnx would the same export in a file. Raises ImportError without
        torch, TypeError/ValueError for a bad argument, ExportError, InputError."""
    @staticmethod
    def _from_onnx_bytes(data: bytes, hardware: str, inputs: Optional[dict[str, list[int]]] = None,
                         hardware_overrides: Optional[dict[str, str]] = None, origin: str = "<bytes>") -> Problem: ...
    @property
    def ops(self) -> int: ...
    @property
    def tensors(self) -> int: ...
    @property
    def capacity(self) -> int: ...
    @property
    def bandwidth(self) -> float: ...
    @property
    def native(self) -> int: ...
    def with_hardware(self, capacity: Optional[int] = None,
                      bandwidth: Optional[float] = None) -> Problem: ...
    def with_profile(self, hardware: str, overrides: Optional[dict[str, str]] = None) -> Problem:
        """A copy with a hardware profile's numbers (`annealer hardware NAME --apply`)."""
    def to_json(self) -> str: ...
    def to_dict(self) -> dict[str, Any]: ...
    def save(self, path: str) -> None: ...

class Schedule:
    """A schedule (contest format)."""
    @staticmethod
    def load(path: str) -> Schedule: ...
    @staticmethod
    def from_json(text: str, origin: str = "<string>") -> Schedule: ...
    @staticmethod
    def from_dict(data: dict[str, Any], origin: str = "<dict>") -> Schedule: ...
    @property
    def subgraphs(self) -> list[dict[str, Any]]: ...
    @property
    def latencies(self) -> Optional[list[float]]: ...
    def to_json(self, problem: Optional[Problem] = None) -> str: ...
    def to_dict(self, problem: Optional[Problem] = None) -> dict[str, Any]: ...
    def save(self, path: str, problem: Optional[Problem] = None) -> None: ...
    def __len__(self) -> int: ...

class Violation:
    """The first rule a schedule breaks."""
    rule: str
    subgraph: Optional[int]
    detail: str
    message: str

class Evaluation:
    """The oracle's verdict on a schedule."""
    valid: bool
    verdict: str
    violation: Optional[Violation]
    total: float
    lower_bound: float
    gap: Optional[float]
    peak_working_set: int
    rows: list[dict[str, Any]]
    warnings: list[str]
    partial_edge_tiles: list[int]
    def __bool__(self) -> bool: ...

class LogEntry:
    """One improvement of the best schedule."""
    seconds: float
    latency: float
    worker: str
    lower_bound: float
    def __init__(self, seconds: float, latency: float, worker: str, lower_bound: float = 0.0) -> None: ...
    def to_json(self) -> str: ...

class SearchResult:
    """What search() found."""
    schedule: Schedule
    total: float
    lower_bound: float
    gap: Optional[float]
    proof: Optional[str]
    interrupted: bool
    log: list[LogEntry]
    seconds: float
    threads: int
    epochs: int
    moves: int
    cache_hit_rate: float
    improvements_by_kind: dict[str, int]
    deterministic_cut: bool
    exact: Optional[dict[str, Any]]
    failure: Optional[str]

ConfigItem = Union[dict[str, Union[bool, int, float, str]], str, os.PathLike[str]]

def lower_bound(problem: Problem, parts: bool = False) -> Any:
    """A float; parts=True: a dict with total, weight and every part of `annealer bound --json`
    (compute, graph_io, traffic, combined, islands, ...), each part's count beside it."""
def baseline(problem: Problem, resident: bool = False, greedy: bool = False) -> Schedule:
    """The schedule without search `annealer baseline [--resident | --greedy]` writes."""
def evaluate(problem: Problem, schedule: Schedule) -> Evaluation: ...
def search(problem: Problem, time: float = 10, threads: Optional[int] = None,
           seed: Optional[int] = None,
           config: Union[None, ConfigItem, list[ConfigItem]] = None,
           on_improvement: Optional[Callable[[float, float, str], Any]] = None,
           on_progress: Optional[Callable[[dict[str, Any]], Any]] = None) -> SearchResult: ...
def report(problem: Problem, schedule: Schedule, path: Union[str, os.PathLike[str]],
           log: Union[None, str, Sequence[LogEntry]] = None, problem_name: str = "problem",
           schedule_name: str = "schedule") -> None: ...
def default_config() -> str: ...
def hardware_profile(name_or_path: str, overrides: Optional[dict[str, str]] = None) -> dict[str, Any]:
    """One profile with overrides in its units, as a dict of its derived numbers."""
def sweep(models: Optional[list[str]] = None, hardware: Optional[list[str]] = None,
          vary: Optional[dict[str, list[Any]]] = None, points: Optional[list[dict[str, Any]]] = None,
          search: Optional[dict[str, Any]] = None, *, spec: Any = None,
          output: Optional[Union[str, os.PathLike[str]]] = None, executor: Any = None,
          workers: Optional[int] = None, quiet: bool = False) -> list[dict[str, Any]]:
    """Many searches, one row per point (docs/sweeps.md)."""
def sweep_report(results: Union[str, os.PathLike[str], list[dict[str, Any]]],
                 path: Union[str, os.PathLike[str]]) -> None:
    """The HTML page of a sweep's results."""
def hardware_profiles() -> list[dict[str, Any]]:
    """The built-in hardware profiles with their derived problem numbers (capacity, bandwidth,
    native, matmul_base, pointwise_base, balance, tiles_that_fit, sources, ...)."""
