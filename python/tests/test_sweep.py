"""annealer.sweep / `annealer sweep`: the description's errors, the rows, resuming after a kill, and
a Dask cluster on the loopback address that loses a worker mid-point (docs/sweeps.md).

The points are mlsys-2026-1 under the deterministic preset with a work budget (about a second
each on one thread), so every run of a point gives the same row whatever runs it."""
import csv
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

import annealer
from annealer import sweeps

DETERMINISTIC = {"time": "60s", "threads": 1, "seeds": [1, 2], "set": {"max_epochs": 8}}
VOLATILE = ("host", "seconds", "schedule")


def write_spec(tmp_path, source_dir, capacities=(30000, 60000), name="sweep.yaml", extra="", epochs=8):
    spec = tmp_path / name
    spec.write_text(
        f"models: [{source_dir}/problems/mlsys-2026-1.json]\n"
        f"vary:\n  fast_memory_capacity: [{', '.join(str(c) for c in capacities)}]\n"
        f"search:\n  time: 60s\n  threads: 1\n  seeds: [1, 2]\n"
        f"  config: {source_dir}/configs/deterministic.yaml\n  set: {{max_epochs: {epochs}}}\n{extra}")
    return spec


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def stable(rows):
    """Rows without what depends on where and when they ran, by key."""
    return {row["key"]: {k: v for k, v in row.items() if k not in VOLATILE} for row in rows}


def schedules(csv_path, rows):
    base = os.path.dirname(csv_path)
    return {row["key"]: open(os.path.join(base, row["schedule"])).read() for row in rows if row["schedule"]}


# --- the description ---------------------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("models: [{p}]\nhardware: [tpu-v5e]\nvary:\n  fast_memory: [4 MiB, 16 Mib]\n",
     r"sweep.yaml:4: vary.fast_memory\[1\]: hardware/tpu-v5e.yaml with fast_memory=16 Mib: fast_memory: unknown unit"),
    ("models: [{p}]\nvary:\n  fast_memory: [4 MiB]\n",
     r"sweep.yaml:3: vary.fast_memory\[0\]: hardware 'given' has no profile to set fast_memory in"),
    ("models: [{p}]\nsearch:\n  set: {{sa.cooling: 2}}\n",
     r"sweep.yaml:3: search.set.sa.cooling: --set sa.cooling=2: sa.cooling: 2 is out of range"),
    ("models: [{p}]\nvary:\n  sa.coolin: [0.9]\n",
     r"sweep.yaml:3: vary.sa.coolin\[0\]: --set sa.coolin=0.9: unknown key \"sa.coolin\""),
    ("models: [{p}]\nsearch: {{time: 10x}}\n", r"sweep.yaml:2: search.time: bad duration \"10x\""),
    ("models: [{p}]\nsearch: {{seeds: [1, 1]}}\n", r"sweep.yaml:2: search.seeds\[1\]: seed 1 is listed twice"),
    ("models: [{p}, missing.json]\n", r"sweep.yaml:1: models\[1\]: cannot read missing.json: No such file"),
    ("models: [{p}]\nmodles: []\n", r"sweep.yaml:2: unknown key 'modles'"),
    ("models: [{p}]\nmodels: [{p}]\n", r"sweep.yaml:2: duplicate key 'models'"),
    ("models: [{p}\n", r"sweep.yaml:2: YAML syntax error"),
    ("models: [{m}]\n", r"sweep.yaml:1: hardware: the model .*mlp.onnx needs a hardware profile"),
    ("models: [{p}]\nhardware: [tpu-v9]\n", r"sweep.yaml:2: hardware\[0\]: .*unknown hardware profile \"tpu-v9\""),
    ("models: [{p}]\nhardware: [tpu-v5e]\nvary: {{bandwidth: [1 B/cycle], latency: [1]}}\n",
     r"sweep.yaml:3: vary.latency\[0\]: 'latency' is a column of the results, not a key to vary"),
    ("models: [{p}]\nvary: {{fast_memory_capacity: [100, 2.5]}}\n",
     r"sweep.yaml:2: vary.fast_memory_capacity\[1\]: expected a positive integer \(in elements\), got '2.5'"),
])
def test_a_bad_description_is_one_line_naming_file_line_and_key(tmp_path, source_dir, text, message):
    spec = tmp_path / "sweep.yaml"
    spec.write_text(text.format(p=source_dir / "problems" / "example_problem.json",
                                m=source_dir / "tests" / "models" / "mlp.onnx"))
    with pytest.raises(sweeps.SweepError, match=message) as error:
        sweeps.Sweep.load(spec)
    assert "\n" not in str(error.value)


def test_the_cli_reports_a_bad_description_before_any_work(tmp_path, source_dir, cli):
    spec = tmp_path / "sweep.yaml"
    spec.write_text(f"models: [{source_dir}/problems/example_problem.json]\nvary:\n  sa.coolin: [0.9]\n")
    done = subprocess.run([cli, "sweep", str(spec), "-o", str(tmp_path / "r.csv")], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"annealer: {spec}:3: vary.sa.coolin[0]: --set sa.coolin=0.9: unknown key \"sa.coolin\" (known keys of sa: "
        "initial_temperature, final_temperature, moves_per_temperature, cooling, reheat_after, restart_after_reheats, "
        "temperature_ops)"]
    assert not (tmp_path / "r.csv").exists()
    usage = subprocess.run([cli, "sweep", str(spec)], capture_output=True, text=True, timeout=60)
    assert usage.returncode == 2 and "needs SWEEP.yaml and -o RESULTS.csv" in usage.stderr


def test_the_pareto_front_is_the_points_nothing_dominates():
    import random

    from annealer import sweeps_html

    rng = random.Random(1)
    for _ in range(2000):
        points = [(rng.randint(1, 6), rng.randint(1, 6), i) for i in range(rng.randint(1, 12))]
        front = sweeps_html.pareto_front(points)
        # The definition, slowly: not dominated (no other point with <= memory and <= latency, one
        # strictly less); of equal points, the first in (memory, latency) order.
        expected = []
        for m, lat, row in sorted(points, key=lambda p: (p[0], p[1])):
            dominated = any(m2 <= m and l2 <= lat and (m2 < m or l2 < lat) for m2, l2, _ in points)
            if not dominated and not any(e[0] == m and e[1] == lat for e in expected):
                expected.append((m, lat, row))
        assert front == expected


# --- rows, errors, resuming --------------------------------------------------------------------

def test_points_rows_and_a_resumed_sweep(tmp_path, source_dir):
    out = tmp_path / "r.csv"
    fields = dict(models=[str(source_dir / "problems" / "mlsys-2026-1.json")],
                  vary={"fast_memory_capacity": [100, 60000]},
                  search=dict(DETERMINISTIC, config=str(source_dir / "configs" / "deterministic.yaml")))
    rows = annealer.sweep(**fields, output=out, workers=2, quiet=True)
    assert [(r["fast_memory_capacity"], r["seed"]) for r in rows] == [("100", 1), ("100", 2), ("60000", 1),
                                                                     ("60000", 2)]
    tiny, _, given, _ = rows
    # Nothing fits in 100 elements: a row with the engine's one-line error, and the sweep went on.
    assert tiny["latency"] is None and tiny["schedule"] is None and tiny["ops"] == 5 and tiny["capacity_elements"] == 100
    assert "no valid start schedule" in tiny["error"] and "\n" not in tiny["error"]
    # A finished point is the search's result, as annealer.search gives it for the same settings.
    problem = annealer.Problem.load(str(source_dir / "problems" / "mlsys-2026-1.json"))
    r = annealer.search(problem, time=60, threads=1, seed=1,
                        config=[str(source_dir / "configs" / "deterministic.yaml"), {"max_epochs": "8"}])
    assert given["latency"] == r.total and given["lower_bound"] == r.lower_bound and given["gap"] == r.gap
    assert given["layer_by_layer"] == r.log[0].latency and given["speedup"] == r.log[0].latency / r.total
    assert given["deterministic_cut"] is False and given["error"] is None and given["host"] == socket.gethostname()
    assert json.loads((tmp_path / given["schedule"]).read_text()) == json.loads(r.schedule.to_json())
    # The file holds the same rows, in the order the points finished.
    assert sorted(sweeps.read_results(out), key=lambda r: r["key"]) == sorted(rows, key=lambda r: r["key"])
    # The page: the latency figure of the varied key and the Pareto front, every row, nothing external.
    page = tmp_path / "r.html"
    annealer.sweep_report(out, page)
    text = page.read_text()
    assert text.count("<svg") == 2 and "latency against fast_memory_capacity" in text and "Pareto front" in text
    # Tables: the summary (head + 1 pair), the front (head + 1: both seeds found the same latency),
    # every point (head + 4).
    assert text.count("<tr") == 2 + 2 + 5
    assert "<script" not in text and 'href="http' not in text and 'src="' not in text
    # Again: every point is in the file, nothing runs, the file is unchanged.
    before = out.read_bytes()
    again = annealer.sweep(**fields, output=out, quiet=True)
    assert again == rows and out.read_bytes() == before
    # A second sweep on the same file while one holds it is refused.
    held = sweeps.ResultsFile(out, sweeps.Sweep.from_fields(**fields).columns())
    try:
        with pytest.raises(sweeps.SweepError, match="another sweep is writing this file"):
            annealer.sweep(**fields, output=out, quiet=True)
    finally:
        held.close()
    # Another sweep's columns in the same file: refused before any work.
    with pytest.raises(sweeps.SweepError, match=r"r.csv:1: its columns .* are not this sweep's"):
        annealer.sweep(models=fields["models"], search={"time": "1s"}, output=out, quiet=True)


def test_hardware_profiles_and_their_overrides_in_a_sweep(tmp_path, source_dir):
    rows = annealer.sweep(models=[str(source_dir / "tests" / "models" / "mlp.onnx"),
                                  str(source_dir / "problems" / "example_problem.json")],
                          hardware=["gemmini-default"], vary={"fast_memory": ["64 KiB", "1 B"]},
                          search={"time": "1s", "threads": 1, "config": str(source_dir / "configs" / "quick.yaml")},
                          quiet=True, workers=2)
    by = {(os.path.basename(r["model"]), r["fast_memory"]): r for r in rows}
    mlp = annealer.Problem.from_onnx(str(source_dir / "tests" / "models" / "mlp.onnx"), hardware="gemmini-default",
                                     hardware_overrides={"fast_memory": "64 KiB"})
    assert by["mlp.onnx", "64 KiB"]["capacity_elements"] == mlp.capacity == 65536
    assert by["mlp.onnx", "64 KiB"]["fast_memory_bytes"] == 65536 and by["mlp.onnx", "64 KiB"]["ops"] == mlp.ops
    assert by["mlp.onnx", "64 KiB"]["lower_bound"] == annealer.lower_bound(mlp)
    example = annealer.Problem.load(str(source_dir / "problems" / "example_problem.json"))
    applied = example.with_profile("gemmini-default", {"fast_memory": "64 KiB"})
    assert by["example_problem.json", "64 KiB"]["lower_bound"] == annealer.lower_bound(applied)
    # "1 B" holds one int8 element: a valid profile, a capacity nothing fits in, a row with the error.
    assert by["mlp.onnx", "1 B"]["capacity_elements"] == 1 and by["mlp.onnx", "1 B"]["latency"] is None
    assert by["mlp.onnx", "1 B"]["error"]


def test_a_killed_sweep_restarted_does_no_finished_point_twice(tmp_path, source_dir, cli):
    # Points of about half a second (100 epochs): the kill lands after two rows, before six.
    spec = write_spec(tmp_path, source_dir, capacities=(30000, 45000, 60000), epochs=100)
    out = tmp_path / "r.csv"
    command = [cli, "sweep", str(spec), "-o", str(out), "--workers", "2", "--quiet"]
    first = subprocess.Popen(command, start_new_session=True, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and (not out.exists() or len(read_csv(out)) < 2):
            time.sleep(0.05)
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the coordinator and its workers, as a machine dies
        first.wait(timeout=30)
    finished = read_csv(out)
    assert 2 <= len(finished) < 6
    before = out.read_bytes()
    second = subprocess.run(command[:-1], capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    assert f"{len(finished)} already in {out}; {6 - len(finished)} to run" in second.stderr
    rows = read_csv(out)
    assert len(rows) == 6 and len({r["key"] for r in rows}) == 6
    # The finished rows are the file's first lines, byte for byte: none was run again.
    assert out.read_bytes().startswith(before)
    assert len(os.listdir(tmp_path / "r.schedules")) == 6
    assert not [r for r in rows if r["error"] or r["deterministic_cut"] != "false"]


def test_a_local_worker_that_dies_mid_point_has_its_point_run_again(tmp_path, source_dir, cli):
    # Points of about a second (200 epochs), so that the kill lands inside one.
    spec = write_spec(tmp_path, source_dir, epochs=200)
    out = tmp_path / "r.csv"
    sweep = subprocess.Popen([cli, "sweep", str(spec), "-o", str(out), "--workers", "2"], stderr=subprocess.PIPE,
                             text=True)
    try:
        deadline = time.monotonic() + 40
        victim = None
        while victim is None and time.monotonic() < deadline and sweep.poll() is None:
            # The pool's processes are the coordinator's children that run spawn_main.
            workers = []
            try:
                for child in open(f"/proc/{sweep.pid}/task/{sweep.pid}/children").read().split():
                    if b"spawn_main" in open(f"/proc/{child}/cmdline", "rb").read():
                        workers.append(int(child))
            except OSError:  # a process that just ended
                pass
            if len(workers) == 2:
                time.sleep(0.5)  # into the first points' searches
                try:
                    os.kill(workers[0], signal.SIGKILL)
                    victim = workers[0]
                except ProcessLookupError:  # it ended between the listing and the kill: look again
                    pass
            time.sleep(0.05)
        _, stderr = sweep.communicate(timeout=120)
    finally:
        if sweep.poll() is None:
            sweep.kill()
    assert victim is not None and sweep.returncode == 0, stderr
    rows = read_csv(out)
    assert len(rows) == 4 and len({r["key"] for r in rows}) == 4 and not [r for r in rows if r["error"]]


# --- Dask --------------------------------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def dask_cluster():
    """A dask-scheduler and two single-thread dask-workers (no nanny: a killed worker stays dead)
    on 127.0.0.1; yields (address, {worker address: Popen}); always torn down."""
    distributed = pytest.importorskip("distributed")
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    processes = []
    try:
        processes.append(subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", str(port),
             "--no-dashboard", "--idle-timeout", "300"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for _ in range(2):
            processes.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", address, "--host", "127.0.0.1", "--nthreads", "1",
                 "--no-nanny", "--no-dashboard", "--death-timeout", "30"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        client = distributed.Client(address, timeout=30)
        try:
            client.wait_for_workers(2, timeout=30)
            pids = client.run(os.getpid)
        finally:
            client.close()
        by_pid = {p.pid: p for p in processes[1:]}
        yield address, {worker: by_pid[pid] for worker, pid in pids.items()}
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                process.kill()
            process.wait(timeout=30)


def test_a_dask_cluster_that_loses_a_worker_mid_point_gives_the_local_rows(tmp_path, source_dir, cli, dask_cluster):
    import distributed

    address, workers = dask_cluster
    spec = write_spec(tmp_path, source_dir)
    local = tmp_path / "local.csv"
    annealer.sweep(spec=str(spec), output=local, workers=2, quiet=True)

    remote = tmp_path / "remote.csv"
    sweep = subprocess.Popen([cli, "sweep", str(spec), "-o", str(remote), "--scheduler", address],
                             stderr=subprocess.PIPE, text=True)
    killed = None
    watcher = distributed.Client(address, timeout=30)
    try:
        deadline = time.monotonic() + 40
        while killed is None and time.monotonic() < deadline and sweep.poll() is None:
            busy = [worker for worker, tasks in watcher.processing().items() if tasks]
            if busy:
                time.sleep(0.3)  # into the point's search
                killed = busy[0]
                workers[killed].kill()
            time.sleep(0.02)
        _, stderr = sweep.communicate(timeout=120)
    finally:
        watcher.close()
        if sweep.poll() is None:
            sweep.kill()
    assert killed is not None, "no point was seen running"
    assert sweep.returncode == 0, stderr
    local_rows, remote_rows = read_csv(local), read_csv(remote)
    # Every point exactly once, identical to the local run's, schedules byte for byte.
    assert len(remote_rows) == 4 and len({r["key"] for r in remote_rows}) == 4
    assert stable(remote_rows) == stable(local_rows)
    assert schedules(remote, remote_rows) == schedules(local, local_rows)
    assert not [r for r in remote_rows if r["error"] or r["deterministic_cut"] != "false"]
