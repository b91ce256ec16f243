"""The results file of a sweep (docs/sweeps.md): its columns, reading it back, and the atomic
writes every file of a sweep goes through. Shared by the sweep (sweeps.py) and its report
(sweeps_html.py), which depend on it and not on each other."""

from __future__ import annotations

import csv
import io
import os
import tempfile

# Columns after the coordinates; types for reading the file back.
RESULT_COLUMNS = (
    ("seed", int), ("ops", int), ("capacity_elements", int), ("fast_memory_bytes", float),
    ("bandwidth_elements", float),
    ("latency", float), ("lower_bound", float), ("gap", float), ("proof", str), ("layer_by_layer", float),
    ("speedup", float), ("deterministic_cut", bool), ("seconds", float), ("host", str), ("schedule", str),
    ("error", str),
)


class SweepError(ValueError):
    """A bad sweep description or results file: one line naming the file, line and key."""

def _write_atomic(path: str, data: bytes) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp's 0600 is for secrets, not results
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise

def _parse_row(row: dict) -> dict:
    """A row's fields from their CSV text: result columns typed (empty: None), the coordinates
    as written (empty: the key was not set at this point)."""
    types = dict(RESULT_COLUMNS)
    out = {}
    for name, text in row.items():
        kind = types.get(name, str)
        if name not in types:
            out[name] = text
        elif text == "":
            out[name] = None
        elif kind is bool:
            out[name] = text == "true"
        elif kind in (int, float):
            out[name] = kind(text)
        else:
            out[name] = text
    return out

def read_results(path) -> list:
    """The rows of a results CSV as dicts (numbers as numbers, empty fields as None)."""
    path = os.fspath(path)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            data = f.read()
    except OSError as error:
        raise SweepError(f"{path}: cannot read: {error.strerror}") from None
    data = data[: data.rfind("\n") + 1]
    reader = csv.DictReader(io.StringIO(data))
    missing = [name for name, _ in RESULT_COLUMNS if name not in (reader.fieldnames or [])]
    if missing or "key" not in (reader.fieldnames or []):
        raise SweepError(f"{path}:1: not a sweep results file (missing columns: {', '.join(missing or ['key'])})")
    return [_parse_row(row) for row in reader]


def varied_columns(columns) -> list:
    fixed = {"key", "model", "hardware", *(name for name, _ in RESULT_COLUMNS)}
    return [c for c in columns if c not in fixed]
