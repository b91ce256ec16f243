"""Sweeps: many independent searches over models x hardware x varied settings x seeds.

    annealer sweep sweep.yaml -o results.csv                              # this machine's cores
    annealer sweep sweep.yaml -o results.csv --scheduler tcp://head:8786  # a Dask cluster
    annealer sweep-report results.csv -o sweep.html

or from Python: annealer.sweep(models=[...], hardware=[...], vary={...}, search={...},
output="results.csv", executor=client.get_executor()). docs/sweeps.md has the YAML and CSV
schemas.

Each point runs annealer.search on a Problem made by Problem.from_onnx / Problem.load with the
hardware applied by the C++ profile reader (hardware_profile overrides in the profile's units):
the engine and the options of the command line, nothing re-implemented here. This module only
runs the points of a checked Sweep (sweep_spec.py reads the description and expands it), dispatches
them to an executor (a local process pool, or Dask's), and keeps the results file.

Protocol of the results file (RESULTS.csv and its folder RESULTS.schedules/):
- one header line, then one line per finished point, appended by a single write() of the whole
  line under an exclusive flock, fsynced; the schedule file is renamed into place before its row
  is written, so a row always has its schedule;
- a row is never rewritten; a torn last line (no newline: the writer was killed mid-write) is
  cut off when the file is opened again;
- a point's identity is its `key`: the sha256 of the model file's content, the hardware (name,
  or the file's content), its overrides, the search configuration (config files' contents, set
  and varied settings), seed, time and threads. A restarted sweep skips the keys in the file.
- a point whose worker died is retried by the executor (Dask reschedules it; the local pool is
  rebuilt); a point that raised (bad model, nothing fits) is a row with its error. Only a point
  the executor itself gave up on is missing from the file, and the sweep says so and fails.
"""

from __future__ import annotations

import concurrent.futures
import csv
import errno
import fcntl
import io
import os
import signal
import socket
import sys
import tempfile
import time

import annealer
from annealer import _core
from .sweep_results import SweepError, _parse_row, _write_atomic, read_results
from .sweep_spec import Sweep, _sha256_file, _sha256_text, _write_configs

__all__ = ["SweepError", "SweepIncomplete", "Sweep", "sweep", "load", "read_results", "main"]


class PointInterrupted(RuntimeError):
    """A point's search was stopped early (Ctrl-C): it must not count as finished."""


class SweepIncomplete(RuntimeError):
    """Some points were given up by the executor (e.g. a Dask KilledWorker): `rows` has the
    finished ones, `lost` one (coordinates, error) per missing point; running the sweep again
    retries them."""

    def __init__(self, message, rows, lost):
        super().__init__(message)
        self.rows = rows
        self.lost = lost


# ---------------------------------------------------------------------------------------------
# A point, on whichever process or host runs it.

_model_hashes: dict = {}
_scratch_dir = None


def _model_sha256(path: str) -> str:
    stat = os.stat(path)
    cache_key = (path, stat.st_size, stat.st_mtime_ns)
    if cache_key not in _model_hashes:
        _model_hashes[cache_key] = _sha256_file(path)
    return _model_hashes[cache_key]


def _scratch() -> str:
    """A folder of this user's for the profile and configuration texts points carry. Its files
    are named by their content's hash and written atomically, so every worker process of every
    sweep shares it and a killed worker leaves nothing half-written or new behind."""
    global _scratch_dir
    if _scratch_dir is None:
        path = os.path.join(tempfile.gettempdir(), f"annealer-sweep-{os.getuid()}")
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
            if os.stat(path).st_uid != os.getuid():
                raise PermissionError(f"{path} belongs to another user")
        except OSError:
            path = tempfile.mkdtemp(prefix="annealer-sweep-")
        _scratch_dir = path
    return _scratch_dir


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    if isinstance(error, (annealer.InputError, annealer.ConfigError, annealer.NoScheduleError, OSError, SweepError)):
        return text
    return f"{type(error).__name__}: {text}"


def _proof_word(proof):
    """The CSV's proof column: "bound" (meets the lower bound: optimal), "family" (optimal within
    the exact solver's family, docs/exact-solver.md) or None."""
    if proof is None:
        return None
    return "bound" if proof.startswith("optimal: meets the lower bound") else "family"


def run_point(task: dict):
    """Runs one point; returns (row dict, schedule JSON text or None). Errors of the point's own
    (a model that does not import, nothing fits) are the row's `error`. Raises only when the
    search was interrupted, so that no truncated search is ever recorded as finished."""
    start = time.monotonic()
    row = {"key": task["key"], "host": socket.gethostname()}
    schedule = None
    try:
        path = task["model_path"]
        if _model_sha256(path) != task["model_sha256"]:
            raise OSError(f"{path} on {row['host']} differs from the coordinator's (sha256 mismatch)")
        hardware = task["hardware"]
        if task["hardware_text"] is not None:  # a profile file: written where this worker can read it
            hardware = os.path.join(_scratch(), f"hardware-{_sha256_text(task['hardware_text'])[:16]}.yaml")
            if not os.path.exists(hardware):
                _write_atomic(hardware, task["hardware_text"].encode())
        overrides = task["hardware_overrides"] or None
        if path.endswith(".onnx"):
            problem = annealer.Problem.from_onnx(path, hardware=hardware, hardware_overrides=overrides)
        else:
            problem = annealer.Problem.load(path)
            if hardware is not None:
                problem = problem.with_profile(hardware, overrides)
        if task["problem_overrides"]:
            p = task["problem_overrides"]
            problem = problem.with_hardware(
                capacity=int(float(p["fast_memory_capacity"])) if "fast_memory_capacity" in p else None,
                bandwidth=float(p["slow_memory_bandwidth"]) if "slow_memory_bandwidth" in p else None)
        row["ops"] = problem.ops
        row["capacity_elements"] = problem.capacity
        row["bandwidth_elements"] = problem.bandwidth
        if hardware is not None:
            row["fast_memory_bytes"] = problem.capacity * _core.hardware_profile(hardware, overrides)["element_bytes"]
        row["lower_bound"] = annealer.lower_bound(problem)
        config = _write_configs(_scratch(), [(None, text) for text in task["configs"]])
        settings = dict(task["settings"])
        result = annealer.search(problem, time=task["time"], threads=task["threads"], seed=task["seed"],
                                 config=config + ([settings] if settings else []))
        if result.interrupted:
            raise PointInterrupted(f"point {task['key']} was interrupted on {row['host']}")
        row["latency"] = result.total
        row["lower_bound"] = result.lower_bound
        row["gap"] = result.gap
        row["proof"] = _proof_word(result.proof)
        if result.log and result.log[0].worker == "baseline":
            row["layer_by_layer"] = result.log[0].latency
            row["speedup"] = result.log[0].latency / result.total if result.total > 0 else None
        row["deterministic_cut"] = result.deterministic_cut
        if result.failure:
            row["error"] = f"search failed, the best schedule before it is kept: {' '.join(result.failure.split())}"
        schedule = result.schedule.to_json()
    except (KeyboardInterrupt, PointInterrupted):
        raise
    except Exception as error:  # noqa: BLE001 - every failure of a point is its row's error
        row["error"] = _one_line(error)
    row["seconds"] = round(time.monotonic() - start, 3)
    return row, schedule


def _local_worker_init(coordinator: int):
    # Ctrl-C is the coordinator's to handle: a worker's search must never end early (it would
    # return a truncated result); the coordinator terminates the pool instead.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A coordinator killed outright (kill -9) cannot stop its pool, and the pool's queue never
    # reports its end (every worker holds its write end): the worker notices being orphaned.
    import threading

    def watch():
        while os.getppid() == coordinator:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="orphan-watch").start()


# ---------------------------------------------------------------------------------------------
# The results file.

def _format_value(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _line(columns, values: dict) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow([_format_value(values.get(c)) for c in columns])
    return buffer.getvalue()


class ResultsFile:
    """RESULTS.csv and RESULTS.schedules/, held under an exclusive lock while a sweep runs."""

    def __init__(self, path, columns):
        self.path = os.fspath(path)
        self.columns = list(columns)
        base = self.path[:-4] if self.path.endswith(".csv") else self.path
        self.schedule_dir = base + ".schedules"
        self.rows = {}  # key -> row (as read back)
        directory = os.path.dirname(os.path.abspath(self.path))
        try:
            os.makedirs(directory, exist_ok=True)
            if not os.path.exists(self.path):
                _write_atomic(self.path, _line(self.columns, dict(zip(self.columns, self.columns))).encode())
            self.fd = os.open(self.path, os.O_RDWR | os.O_APPEND)
        except OSError as error:
            raise SweepError(f"{self.path}: cannot write: {error.strerror}") from None
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            os.close(self.fd)
            if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise SweepError(f"{self.path}: another sweep is writing this file (it is locked)") from None
            raise
        try:
            self._read()
            os.makedirs(self.schedule_dir, exist_ok=True)
            # A sweep killed while writing a schedule leaves its temporary file (never a result:
            # only a finished rename is one). Only the lock holder writes here, so any is stale.
            for name in os.listdir(self.schedule_dir):
                if name.startswith(".tmp-"):
                    try:
                        os.unlink(os.path.join(self.schedule_dir, name))
                    except OSError:
                        pass
        except BaseException:
            self.close()
            raise

    def _read(self):
        with open(self.path, "rb") as f:
            data = f.read()
        end = data.rfind(b"\n") + 1
        if end < len(data):  # a line torn by a killed writer: never a finished point
            os.ftruncate(self.fd, end)
            data = data[:end]
        reader = csv.reader(io.StringIO(data.decode()))
        header = next(reader, None)
        if header != self.columns:
            raise SweepError(f"{self.path}:1: its columns ({', '.join(header or [])}) are not this sweep's "
                             f"({', '.join(self.columns)}); write the results to another file")
        for line, values in enumerate(reader, start=2):
            if len(values) != len(self.columns):
                raise SweepError(f"{self.path}:{line}: {len(values)} fields, expected {len(self.columns)}")
            self.rows[values[0]] = _parse_row(dict(zip(self.columns, values)))

    def add(self, row: dict, schedule) -> dict:
        """Writes the schedule, then the row; returns the row as read back."""
        if schedule is not None:
            name = f"{_stem(row['model'])}.{_stem(row['hardware'])}.{row['key']}.json"
            _write_atomic(os.path.join(self.schedule_dir, name), schedule.encode())
            row = dict(row, schedule=os.path.join(os.path.basename(self.schedule_dir), name))
        data = _line(self.columns, row).encode()
        written = 0
        while written < len(data):
            written += os.write(self.fd, data[written:])
        os.fsync(self.fd)
        parsed = _parse_row(next(csv.DictReader(io.StringIO(data.decode()), fieldnames=self.columns)))
        self.rows[row["key"]] = parsed
        return parsed

    def close(self):
        if self.fd is not None:
            os.close(self.fd)  # releases the lock
            self.fd = None


def _stem(path: str) -> str:
    name = os.path.basename(path)
    for suffix in (".onnx", ".json", ".yaml", ".yml"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


# ---------------------------------------------------------------------------------------------
# Progress on stderr.

def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _describe(row: dict, varied) -> str:
    parts = [os.path.basename(row["model"]), row["hardware"]]
    parts += [f"{k}={row[k]}" for k in varied if row.get(k) not in (None, "")]
    parts.append(f"seed={row['seed']}")
    return " ".join(parts)


class Progress:
    def __init__(self, total, done, varied, quiet, stream=None):
        self.total, self.done, self.varied, self.quiet = total, done, varied, quiet
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self.ran = 0
        self.failed = 0
        self.best = None  # (speedup, description)

    def say(self, text):
        if not self.quiet:
            print(f"sweep: {text}", file=self.stream, flush=True)

    def finished(self, row):
        self.done += 1
        self.ran += 1
        elapsed = time.monotonic() - self.start
        eta = elapsed / self.ran * (self.total - self.done)
        if row.get("error") and row.get("latency") is None:
            self.failed += 1
            outcome = f"error: {row['error']}"
        else:
            gap = f", gap {row['gap']:.1f} %" if row.get("gap") is not None else ""
            speedup = f", {row['speedup']:.2f}x layer-by-layer" if row.get("speedup") else ""
            outcome = f"latency {row['latency']:,.1f}{gap}{speedup}"
            if row.get("speedup") and (self.best is None or row["speedup"] > self.best[0]):
                self.best = (row["speedup"], _describe(row, self.varied))
        best = f" | best speedup {self.best[0]:.2f}x ({self.best[1]})" if self.best else ""
        self.say(f"[{self.done}/{self.total}] {_clock(elapsed)} elapsed, ETA {_clock(eta)} | "
                 f"{_describe(row, self.varied)}: {outcome}{best}")


# ---------------------------------------------------------------------------------------------
# Dispatch.

def _local_workers(threads: int) -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return max(1, cores // max(1, threads))


def _run_local(tasks, workers, on_result, on_lost):
    """A spawn-context process pool; when a worker process dies the pool breaks, so it is
    rebuilt and the unfinished points are submitted again (the third break in a row without a
    point finishing gives up on the rest: on_lost). A process pool rather than a LocalCluster:
    no server, no ports, nothing to tear down, and the retry is this loop."""
    import multiprocessing
    from concurrent.futures.process import BrokenProcessPool

    pending = dict(tasks)
    rebuilds = 0
    finished_any = False
    while pending:
        pool = concurrent.futures.ProcessPoolExecutor(
            max_workers=min(workers, len(pending)), mp_context=multiprocessing.get_context("spawn"),
            initializer=_local_worker_init, initargs=(os.getpid(),))
        broken = None
        try:
            futures = {pool.submit(run_point, task): key for key, task in pending.items()}
            for future in concurrent.futures.as_completed(futures):
                key = futures[future]
                try:
                    row, schedule = future.result()
                except BrokenProcessPool as error:
                    broken = error
                    break
                except Exception as error:  # noqa: BLE001 - pickling, an interrupted search
                    del pending[key]
                    on_lost(key, _one_line(error))
                    continue
                del pending[key]
                rebuilds = 0
                finished_any = True
                on_result(row, schedule)
        except BaseException:
            for process in list(getattr(pool, "_processes", {}).values()):
                process.terminate()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True, cancel_futures=True)
        if broken is not None and pending:
            rebuilds += 1
            if rebuilds >= 3:
                hint = ("; if annealer.sweep() runs from a script, is it under `if __name__ == \"__main__\":`?"
                        if not finished_any else "")
                for key in list(pending):
                    on_lost(key, f"the worker process died three times in a row ({_one_line(broken)}){hint}")
                pending.clear()


def _run_executor(tasks, executor, on_result, on_lost):
    futures = {executor.submit(run_point, task): key for key, task in tasks}
    try:
        for future in concurrent.futures.as_completed(futures):
            key = futures[future]
            try:
                row, schedule = future.result()
            except Exception as error:  # noqa: BLE001 - e.g. Dask's KilledWorker
                on_lost(key, _one_line(error))
                continue
            on_result(row, schedule)
    except BaseException:
        for future in futures:
            future.cancel()
        raise


def run(spec: Sweep, output=None, executor=None, workers=None, quiet=False, stream=None, where=None) -> list:
    """Runs the sweep's unfinished points; returns one row per point (dicts, in point order).

    output: the results CSV (None: rows are only returned). executor: any concurrent.futures
    executor (a dask.distributed Client's get_executor() included); None runs a local process
    pool of `workers` processes (every core / search.threads by default). Raises SweepIncomplete
    when the executor gave up on some points (they are not in the file; run again)."""
    if executor is None:
        import multiprocessing

        if getattr(multiprocessing.current_process(), "_inheriting", False):
            # A local worker is importing the user's script (spawned processes import __main__),
            # which calls sweep() again: it would start pools of pools.
            raise SweepError("annealer.sweep() ran while a worker process imported the main script: put the "
                             "call under `if __name__ == \"__main__\":` (worker processes import that script)")
    points = spec.points()
    results = ResultsFile(output, spec.columns()) if output is not None else None
    try:
        finished = results.rows if results else {}
        todo = [p for p in points if p.key not in finished]
        by_key = {p.key: p for p in points}
        progress = Progress(len(points), len(points) - len(todo), spec.varied, quiet, stream)
        if where is None:
            where = (f"{workers or _local_workers(spec.threads)} local processes x {spec.threads} thread(s)"
                     if executor is None else type(executor).__name__)
        where = f"{len(todo)} to run on {where}"
        done_text = f", {len(points) - len(todo)} already in {output}" if results and len(todo) < len(points) else ""
        progress.say(f"{len(points)} points ({len(spec.models)} models x {len(spec.hardware)} hardware x "
                     f"{len(spec.settings)} settings x {len(spec.seeds)} seed(s), {spec.time:g} s each){done_text}; "
                     f"{where}")
        rows = {}
        lost = []

        def on_result(row, schedule):
            point = by_key[row["key"]]
            row = dict(row, model=point.model, hardware=point.hardware, seed=point.seed, **dict(point.coordinates))
            if results:
                row = results.add(row, schedule)
            else:
                row = _parse_row(next(csv.DictReader(io.StringIO(_line(spec.columns(), row)),
                                                     fieldnames=spec.columns())))
            rows[row["key"]] = row
            progress.finished(row)

        def on_lost(key, error):
            point = by_key[key]
            lost.append((dict(point.coordinates, model=point.model, hardware=point.hardware, seed=point.seed), error))
            progress.say(f"lost {point.model} {point.hardware} {dict(point.coordinates)} seed={point.seed}: {error}")

        tasks = [(p.key, p.task) for p in todo]
        if tasks:
            if executor is None:
                _run_local(tasks, workers or _local_workers(spec.threads), on_result, on_lost)
            else:
                _run_executor(tasks, executor, on_result, on_lost)
        ordered = [rows.get(p.key) or finished.get(p.key) for p in points]
        ordered = [row for row in ordered if row is not None]
        failed = sum(1 for row in ordered if row.get("error") and row.get("latency") is None)
        progress.say(f"done: {len(ordered)} of {len(points)} points"
                     f"{f', {failed} with an error' if failed else ''}"
                     f"{f' (results in {output})' if output else ''}, {_clock(time.monotonic() - progress.start)}")
        if lost:
            raise SweepIncomplete(f"{len(lost)} of {len(points)} points were lost ({lost[0][1]}); "
                                  f"run the sweep again to retry them", ordered, lost)
        return ordered
    finally:
        if results:
            results.close()


def sweep(models=None, hardware=None, vary=None, points=None, search=None, *, spec=None, output=None,
          executor=None, workers=None, quiet=False) -> list:
    """Runs a sweep and returns its rows (see the module's docstring and docs/sweeps.md).

    Either the fields (models, hardware, vary, points, search: as in sweep.yaml, Python values)
    or spec= a sweep YAML path or a Sweep. output: results CSV (resumable); executor: any
    concurrent.futures executor, e.g. dask.distributed.Client(...).get_executor(); workers: the
    local pool's size when executor is None."""
    if spec is None:
        if models is None:
            raise TypeError("sweep() needs models=[...] (or spec='sweep.yaml')")
        spec = Sweep.from_fields(models, hardware, vary, points, search)
    elif not isinstance(spec, Sweep):
        if models is not None:
            raise TypeError("sweep(): give the fields or spec=, not both")
        spec = Sweep.load(spec)
    return run(spec, output=output, executor=executor, workers=workers, quiet=quiet)


def load(path) -> Sweep:
    return Sweep.load(path)


# ---------------------------------------------------------------------------------------------
# The command line: `annealer sweep` and `annealer sweep-report` run `python3 -m annealer.sweeps`.

USAGE = """usage: annealer sweep SWEEP.yaml -o RESULTS.csv [--scheduler ADDRESS] [--workers N] [--quiet]
       annealer sweep-report RESULTS.csv -o REPORT.html

  sweep: every point of SWEEP.yaml (models x hardware x varied settings x seeds) is one search;
  each finished point is a row of RESULTS.csv and its schedule a file of RESULTS.schedules/.
  Run again to finish an interrupted sweep: finished points are skipped. Locally the points run
  on every core (--workers N processes); --scheduler tcp://HOST:8786 sends them to a Dask
  cluster (dask-scheduler and dask-worker on the hosts). Progress goes to stderr.
  sweep-report: a self-contained HTML page of the results (tables and plots).
  Docs: docs/sweeps.md."""


def _connect(address: str, timeout: float):
    try:
        import distributed
    except ImportError:
        raise SweepError("--scheduler needs dask.distributed (Debian: apt install python3-distributed)") from None
    try:
        client = distributed.Client(address, timeout=timeout)
    except (OSError, TimeoutError) as error:
        raise SweepError(f"--scheduler {address}: cannot connect: {_one_line(error)}") from None
    try:
        versions = client.run(_worker_check)
    except Exception as error:  # noqa: BLE001
        client.close()
        raise SweepError(f"--scheduler {address}: a worker cannot run sweeps: {_one_line(error)}") from None
    return client, versions


def _worker_check():
    import annealer as a  # noqa: F401 - the check is that it imports on the worker

    return f"annealer {a.__version__} on {socket.gethostname()}"


def _main_sweep(args) -> int:
    spec_path, output, scheduler, workers, quiet = None, None, None, None, False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-h", "--help"):
            print(USAGE)
            return 0
        if arg in ("-o", "--output", "--scheduler", "--workers"):
            if i + 1 >= len(args):
                raise _Usage(f"{arg} needs a value")
            value = args[i + 1]
            i += 2
            if arg in ("-o", "--output"):
                output = value
            elif arg == "--scheduler":
                scheduler = value
            else:
                if not value.isdigit() or int(value) < 1:
                    raise _Usage(f"--workers expects a positive integer, got {value!r}")
                workers = int(value)
            continue
        if arg == "--quiet":
            quiet = True
        elif arg.startswith("-"):
            raise _Usage(f"unknown option {arg}")
        elif spec_path is None:
            spec_path = arg
        else:
            raise _Usage(f"sweep takes one SWEEP.yaml (got {spec_path} and {arg})")
        i += 1
    if spec_path is None or output is None:
        raise _Usage("sweep needs SWEEP.yaml and -o RESULTS.csv")
    if scheduler and workers:
        raise _Usage("--workers sizes the local pool; with --scheduler the cluster's workers run the points")
    spec = Sweep.load(spec_path)
    client = None
    executor = None
    if scheduler:
        client, versions = _connect(scheduler, timeout=30)
        if not quiet:
            print(f"sweep: {scheduler}: {len(versions)} workers "
                  f"({sum(w['nthreads'] for w in client.scheduler_info()['workers'].values())} threads)",
                  file=sys.stderr)
        executor = client.get_executor(pure=False)
    try:
        run(spec, output=output, executor=executor, workers=workers, quiet=quiet,
            where=f"the Dask cluster at {scheduler}" if scheduler else None)
    except SweepIncomplete as error:
        print(f"annealer: {error}", file=sys.stderr)
        return 1
    finally:
        if client is not None:
            client.close()
    return 0


def _main_report(args) -> int:
    from . import sweeps_html

    csv_path, output = None, None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-h", "--help"):
            print(USAGE)
            return 0
        if arg in ("-o", "--output"):
            if i + 1 >= len(args):
                raise _Usage(f"{arg} needs a value")
            output = args[i + 1]
            i += 2
            continue
        if arg.startswith("-"):
            raise _Usage(f"unknown option {arg}")
        if csv_path is not None:
            raise _Usage(f"sweep-report takes one RESULTS.csv (got {csv_path} and {arg})")
        csv_path = arg
        i += 1
    if csv_path is None or output is None:
        raise _Usage("sweep-report needs RESULTS.csv and -o REPORT.html")
    sweeps_html.write_report(csv_path, output)
    print(f"sweep-report: {output}", file=sys.stderr)
    return 0


class _Usage(Exception):
    pass


def main(argv=None) -> int:
    """`annealer sweep ...` / `annealer sweep-report ...`: argv[0] is the command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("sweep", "sweep-report"):
        print(USAGE, file=sys.stderr)
        return 2
    try:
        return (_main_sweep if argv[0] == "sweep" else _main_report)(argv[1:])
    except _Usage as error:
        print(f"annealer {argv[0]}: {error}\nRun 'annealer {argv[0]} --help' for usage.", file=sys.stderr)
        return 2
    except (SweepError, annealer.InputError, OSError) as error:
        print(f"annealer: {_one_line(error)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("annealer: sweep interrupted; the finished points are saved (run again to go on)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
