"""The description of a sweep: the YAML file or sweep()'s Python values, read and checked into a
Sweep whose points() are the searches to run, each with the key that identifies it in the
results file (sweeps.py runs them). Every value is checked here, before any work, and a bad one
raises SweepError "file:line: key: why".
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import tempfile
from dataclasses import dataclass, field

import annealer
from annealer import _core
from .sweep_results import RESULT_COLUMNS, SweepError, _write_atomic

# Keys of a hardware profile that `vary` and `points` may set (docs/hardware.md), in the
# profile's units ("4 MiB", "400 GB/s").
PROFILE_KEYS = ("fast_memory", "bandwidth", "clock", "matrix_unit", "macs_per_cycle",
                "vector_elements_per_cycle", "dtype", "element_bytes")
# Fields of the problem itself, in its units (elements, elements per time unit), applied last.
PROBLEM_KEYS = ("fast_memory_capacity", "slow_memory_bandwidth")
# The hardware entry meaning "the problem file's own numbers" (contest JSON only).
GIVEN = "given"
TOP_KEYS = ("models", "hardware", "vary", "points", "search")
SEARCH_KEYS = ("time", "threads", "seeds", "seed", "config", "set")
KEY_VERSION = 1


# ---------------------------------------------------------------------------------------------
# The description: YAML nodes or Python values, both as _Node (a value and where it was written).

@dataclass
class _Node:
    value: object  # str (a scalar's text), list of _Node, or list of (key _Node, value _Node)
    where: str     # "sweep.yaml:7" or "sweep()"
    kind: str      # "scalar", "list", "map"

    def fail(self, key: str, message: str):
        raise SweepError(f"{self.where}: {key}: {message}" if key else f"{self.where}: {message}")

    def scalar(self, key: str) -> str:
        if self.kind != "scalar":
            self.fail(key, f"expected a value, not a {self.kind}")
        return self.value

    def items(self, key: str, allow_scalar: bool = False) -> list:
        if self.kind == "scalar" and allow_scalar:
            return [self]
        if self.kind != "list":
            self.fail(key, f"expected a list, not a {self.kind}")
        return self.value

    def mapping(self, key: str) -> list:
        if self.kind != "map":
            self.fail(key, f"expected a map of keys, not a {self.kind}")
        return self.value


def _yaml_node(node, source: str) -> _Node:
    import yaml

    where = f"{source}:{node.start_mark.line + 1}"
    if isinstance(node, yaml.ScalarNode):
        return _Node(node.value, where, "scalar")
    if isinstance(node, yaml.SequenceNode):
        return _Node([_yaml_node(item, source) for item in node.value], where, "list")
    pairs, seen = [], set()
    for key, value in node.value:
        k = _yaml_node(key, source)
        if k.kind != "scalar":
            k.fail("", "expected a key name")
        if k.value in seen:
            k.fail("", f"duplicate key {k.value!r}")
        seen.add(k.value)
        pairs.append((k, _yaml_node(value, source)))
    return _Node(pairs, where, "map")


def _python_node(value, where: str) -> _Node:
    if isinstance(value, dict):
        return _Node([(_python_node(str(k), where), _python_node(v, where)) for k, v in value.items()], where, "map")
    if isinstance(value, (list, tuple)):
        return _Node([_python_node(v, where) for v in value], where, "list")
    if isinstance(value, bool):
        return _Node("true" if value else "false", where, "scalar")
    if isinstance(value, float):
        return _Node(repr(value), where, "scalar")
    if isinstance(value, (int, str)):
        return _Node(str(value), where, "scalar")
    if isinstance(value, os.PathLike):
        return _Node(os.fspath(value), where, "scalar")
    if value is None:
        return _Node("", where, "scalar")
    raise TypeError(f"sweep(): {value!r} is not a str, number, bool, list or dict")


def _sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Point:
    """One search of the sweep: its coordinates and everything a worker needs to run it."""
    key: str
    model: str                   # as written
    hardware: str                # as written: a built-in name, a YAML path, or "given"
    coordinates: tuple           # ((varied key, text or ""), ...) in the sweep's column order
    seed: int
    task: dict = field(compare=False, repr=False)  # run_point's argument (picklable)


@dataclass
class Sweep:
    """A checked sweep description (Sweep.load / Sweep.from_fields)."""
    models: list        # (as written, absolute path, sha256)
    hardware: list      # (as written, argument for the profile reader or None, key material, text or None)
    varied: list        # varied keys in column order
    settings: list      # [((key, text), ...)] one per coordinate set, in order
    seeds: list
    time: float
    threads: int
    configs: list       # (as written, text)
    fixed: list         # search.set as (key, text)
    source: str

    # ----- construction

    @staticmethod
    def load(path) -> "Sweep":
        """Reads and checks a sweep YAML file; raises SweepError "file:line: key: why"."""
        import yaml

        path = os.fspath(path)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as error:
            raise SweepError(f"{path}: cannot read: {error.strerror}") from None
        try:
            root = yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            line = f":{mark.line + 1}" if mark is not None else ""
            problem = getattr(error, "problem", None) or str(error).splitlines()[0]
            raise SweepError(f"{path}{line}: YAML syntax error: {problem}") from None
        if root is None:
            raise SweepError(f"{path}:1: empty sweep (expected the keys {', '.join(TOP_KEYS)})")
        return Sweep._parse(_yaml_node(root, path), os.path.dirname(os.path.abspath(path)), path)

    @staticmethod
    def from_fields(models, hardware=None, vary=None, points=None, search=None, base_dir=None) -> "Sweep":
        """The same fields as the YAML file, as Python values; paths relative to base_dir (the
        current directory by default)."""
        fields = {"models": models}
        for name, value in (("hardware", hardware), ("vary", vary), ("points", points), ("search", search)):
            if value is not None:
                fields[name] = value
        return Sweep._parse(_python_node(fields, "sweep()"), os.path.abspath(base_dir or os.getcwd()), "sweep()")

    @staticmethod
    def _parse(root: _Node, base_dir: str, source: str) -> "Sweep":
        fields = {}
        for key, value in root.mapping(""):
            if key.value not in TOP_KEYS:
                key.fail("", f"unknown key {key.value!r} (known keys: {', '.join(TOP_KEYS)})")
            fields[key.value] = value
        if "models" not in fields:
            root.fail("", "missing key 'models' (a list of .onnx models and problem .json files)")

        def resolve(path: str) -> str:
            return os.path.normpath(os.path.join(base_dir, os.path.expanduser(path)))

        models = []
        for i, node in enumerate(fields["models"].items("models", allow_scalar=True)):
            written = node.scalar(f"models[{i}]")
            if not (written.endswith(".onnx") or written.endswith(".json")):
                node.fail(f"models[{i}]", f"{written!r}: expected a .onnx model or a problem .json file")
            absolute = resolve(written)
            try:
                models.append((written, absolute, _sha256_file(absolute)))
            except OSError as error:
                node.fail(f"models[{i}]", f"cannot read {written}: {error.strerror}")
        if not models:
            fields["models"].fail("models", "no model")

        search = {}
        if "search" in fields:
            for key, value in fields["search"].mapping("search"):
                if key.value not in SEARCH_KEYS:
                    key.fail("search", f"unknown key {key.value!r} (known keys: {', '.join(SEARCH_KEYS)})")
                search[key.value] = value
        if "seed" in search and "seeds" in search:
            search["seed"].fail("search.seed", "give seed or seeds, not both")
        configs = []
        if "config" in search:
            for i, node in enumerate(search["config"].items("search.config", allow_scalar=True)):
                written = node.scalar(f"search.config[{i}]")
                try:
                    with open(resolve(written), encoding="utf-8") as f:
                        configs.append((written, f.read(), node))
                except OSError as error:
                    node.fail(f"search.config[{i}]", f"cannot read {written}: {error.strerror}")
        with tempfile.TemporaryDirectory(prefix="annealer-sweep-") as scratch:
            config_paths = _write_configs(scratch, [(w, t) for w, t, _ in configs])
            for i, (_, _, node) in enumerate(configs):
                _check_settings(node, f"search.config[{i}]", config_paths[: i + 1], [])
            fixed = []
            if "set" in search:
                for key, value in search["set"].mapping("search.set"):
                    setting = (key.value, value.scalar(f"search.set.{key.value}"))
                    _check_settings(value, f"search.set.{key.value}", config_paths, [setting])
                    fixed.append(setting)

            time_text = search["time"].scalar("search.time") if "time" in search else "10s"
            seconds = _duration(time_text, search.get("time"))
            threads_node = search.get("threads")
            threads_text = threads_node.scalar("search.threads") if threads_node else "1"
            if not threads_text.isdigit() or int(threads_text) < 1:
                (threads_node or root).fail("search.threads", f"expected a positive integer, got {threads_text!r}")
            threads = int(threads_text)
            _check_settings(threads_node or root, "search.threads", config_paths, [("threads", threads_text)])
            seed_nodes = (search["seeds"].items("search.seeds", allow_scalar=True) if "seeds" in search
                          else [search["seed"]] if "seed" in search else [])
            seeds = []
            for i, node in enumerate(seed_nodes):
                text = node.scalar(f"search.seeds[{i}]")
                if not text.isdigit():
                    node.fail(f"search.seeds[{i}]", f"expected a non-negative integer, got {text!r}")
                _check_settings(node, f"search.seeds[{i}]", config_paths, [("seed", text)])
                if int(text) in seeds:
                    node.fail(f"search.seeds[{i}]", f"seed {text} is listed twice")
                seeds.append(int(text))
            if not seeds:
                seeds = [1]

            hardware = []
            hardware_nodes = (fields["hardware"].items("hardware", allow_scalar=True) if "hardware" in fields
                              else [_Node(GIVEN, root.where, "scalar")])
            for i, node in enumerate(hardware_nodes):
                written = node.scalar(f"hardware[{i}]")
                if written == GIVEN:
                    onnx = [m for m, _, _ in models if m.endswith(".onnx")]
                    if onnx:
                        node.fail(f"hardware[{i}]" if "hardware" in fields else "hardware",
                                  f"the model {onnx[0]} needs a hardware profile (a built-in name such as tpu-v5e, "
                                  f"or a .yaml file; `annealer hardware` lists them)")
                    hardware.append((GIVEN, None, GIVEN, None))
                    continue
                if "/" in written or written.endswith(".yaml") or written.endswith(".yml"):
                    try:
                        with open(resolve(written), encoding="utf-8") as f:
                            text = f.read()
                    except OSError as error:
                        node.fail(f"hardware[{i}]", f"cannot read {written}: {error.strerror}")
                    entry = (written, resolve(written), "file:" + _sha256_text(text), text)
                else:
                    entry = (written, written, "builtin:" + written, None)
                try:
                    _core.hardware_profile(entry[1])
                except annealer.InputError as error:
                    node.fail(f"hardware[{i}]", str(error))
                hardware.append(entry)

            varied, value_sets = _coordinates(fields, hardware, config_paths)
        return Sweep(models=models, hardware=hardware, varied=varied, settings=value_sets, seeds=seeds,
                     time=seconds, threads=threads, configs=[(w, t) for w, t, _ in configs], fixed=fixed,
                     source=source)

    # ----- the points

    def columns(self) -> list:
        return ["key", "model", "hardware", *self.varied, *(name for name, _ in RESULT_COLUMNS)]

    def points(self) -> list:
        """Every point, in order: models, hardware, coordinate sets, seeds; duplicates dropped."""
        out, seen = [], set()
        config_material = [_sha256_text(text) for _, text in self.configs]
        for (model, model_path, model_sha), (hw, hw_arg, hw_material, hw_text), values, seed in itertools.product(
                self.models, self.hardware, self.settings, self.seeds):
            given = dict(values)
            hardware_overrides = {k: v for k, v in given.items() if k in PROFILE_KEYS and v != ""}
            problem_overrides = {k: v for k, v in given.items() if k in PROBLEM_KEYS and v != ""}
            settings = [(k, v) for k, v in values if k not in PROFILE_KEYS and k not in PROBLEM_KEYS and v != ""]
            material = {
                "version": KEY_VERSION, "model": model_sha, "hardware": hw_material,
                "hardware_overrides": sorted(hardware_overrides.items()),
                "problem_overrides": sorted(problem_overrides.items()),
                "configs": config_material, "set": self.fixed, "settings": sorted(settings),
                "seed": seed, "time": self.time, "threads": self.threads,
            }
            key = hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:16]
            if key in seen:
                continue
            seen.add(key)
            task = {
                "key": key, "model_path": model_path, "model_sha256": model_sha,
                "hardware": None if hw == GIVEN else hw_arg, "hardware_text": hw_text,
                "hardware_overrides": hardware_overrides, "problem_overrides": problem_overrides,
                "configs": [text for _, text in self.configs], "settings": self.fixed + settings,
                "seed": seed, "time": self.time, "threads": self.threads,
            }
            out.append(Point(key, model, hw, tuple((k, given.get(k, "")) for k in self.varied), seed, task))
        return out


def _duration(text: str, node) -> float:
    if text.replace(".", "", 1).isdigit():  # a bare number is seconds
        text += "s"
    try:
        return _core._parse_duration(text)
    except annealer.ConfigError as error:
        (node or _Node("", "sweep", "scalar")).fail("search.time", str(error))


def _write_configs(directory: str, configs) -> list:
    """The config files' texts written under `directory` (a worker has no access to the
    coordinator's files); content-addressed, so concurrent points share them."""
    paths = []
    for _, text in configs:
        path = os.path.join(directory, f"config-{_sha256_text(text)[:16]}.yaml")
        if not os.path.exists(path):
            _write_atomic(path, text.encode())
        paths.append(path)
    return paths


def _check_settings(node: _Node, key: str, config_paths, settings) -> None:
    overrides = [("--set", f"{k}={v}") for k, v in settings]
    try:
        _core._check_config(list(config_paths), overrides)
    except annealer.ConfigError as error:
        node.fail(key, str(error))


def _coordinates(fields, hardware, config_paths):
    """The varied keys (columns) and the coordinate sets: the product of `vary`'s lists, then
    the explicit `points`. Every value is checked alone against every profile and the search
    settings, so that a typo fails here, before any work, at its line."""
    varied, axes = [], []
    if "vary" in fields:
        for key, values in fields["vary"].mapping("vary"):
            name = key.value
            nodes = values.items(f"vary.{name}", allow_scalar=True)
            if not nodes:
                values.fail(f"vary.{name}", "empty list")
            texts = []
            for i, node in enumerate(nodes):
                texts.append(_check_value(name, node.scalar(f"vary.{name}[{i}]"), node, f"vary.{name}[{i}]",
                                          hardware, config_paths))
            varied.append(name)
            axes.append(texts)
    sets = [tuple(zip(varied, combo)) for combo in itertools.product(*axes)] if axes else []
    if "points" in fields:
        for i, point in enumerate(fields["points"].items("points")):
            values = []
            for key, value in point.mapping(f"points[{i}]"):
                name = key.value
                values.append((name, _check_value(name, value.scalar(f"points[{i}].{name}"), value,
                                                  f"points[{i}].{name}", hardware, config_paths)))
                if name not in varied:
                    varied.append(name)
            sets.append(tuple(values))
    if not sets:
        sets = [()]
    return varied, sets


def _check_value(name: str, text: str, node: _Node, key: str, hardware, config_paths) -> str:
    if name in ("seed", "seeds"):
        node.fail(key, "seeds are listed in search.seeds")
    if name in ("key", "model", "hardware") or name in dict(RESULT_COLUMNS):
        node.fail(key, f"{name!r} is a column of the results, not a key to vary")
    if name in PROFILE_KEYS:
        for hw, hw_arg, _, _ in hardware:
            if hw == GIVEN:
                node.fail(key, f"hardware 'given' has no profile to set {name} in; vary fast_memory_capacity or "
                               f"slow_memory_bandwidth (the problem's own fields, in elements) instead")
            try:
                _core.hardware_profile(hw_arg, {name: text})
            except annealer.InputError as error:
                node.fail(key, str(error))
    elif name in PROBLEM_KEYS:
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if not number > 0 or not math.isfinite(number) or (name == "fast_memory_capacity" and number != int(number)):
            node.fail(key, f"expected a positive {'integer' if name == 'fast_memory_capacity' else 'number'} "
                           f"(in elements), got {text!r}")
    else:
        _check_settings(node, key, config_paths, [(name, text)])
    return text
