"""search(): the snippet of the issue, callbacks, the GIL, Ctrl-C, errors, determinism, proofs."""
import os
import signal
import subprocess
import threading
import time

import pytest

import annealer


@pytest.fixture
def p13(problem_path):
    return annealer.Problem.load(problem_path("mlsys-2026-13"))


def test_the_snippet_of_the_issue(p13, tmp_path):
    calls = []
    r = annealer.search(p13, time=1, threads=None, seed=1, config={"sa.cooling": 0.9},
                        on_improvement=lambda t, latency, kind: calls.append((t, latency, kind)))
    r.schedule.save(str(tmp_path / "s13.json"))
    assert annealer.Schedule.load(str(tmp_path / "s13.json")) == r.schedule
    assert r.proof is None or r.proof.startswith("optimal")
    assert r.gap == pytest.approx((r.total / r.lower_bound - 1) * 100)
    assert r.lower_bound == annealer.lower_bound(p13)
    assert not r.interrupted and r.failure is None and r.seconds < 1.5
    # The callbacks are the log: the baseline first, then strictly better totals, in time order.
    assert calls[0][2] == "baseline"
    assert [(e.seconds, e.latency, e.worker) for e in r.log] == calls
    assert all(a[1] > b[1] and a[0] <= b[0] for a, b in zip(calls, calls[1:]))
    e = annealer.evaluate(p13, r.schedule)
    assert e.valid and e.total == r.total and r.schedule.latencies == [row["latency"] for row in e.rows]
    annealer.report(p13, r.schedule, str(tmp_path / "s13.html"), log=r.log)
    assert "<svg" in (tmp_path / "s13.html").read_text()
    assert repr(r).startswith("<annealer.SearchResult: total ")
    assert r.threads >= 1 and r.epochs >= 0 and r.moves >= 0 and 0 <= r.cache_hit_rate <= 1
    assert sum(r.improvements_by_kind.values()) >= 1


def test_callbacks_hold_the_gil_and_never_overlap(p13):
    inside = threading.Lock()
    overlaps, progress = [], []

    def on_improvement(t, latency, kind):
        if not inside.acquire(blocking=False):
            overlaps.append(kind)
            return
        time.sleep(0.005)  # Python code runs: the GIL is held
        inside.release()

    r = annealer.search(p13, time=1.5, seed=3, threads=2, on_improvement=on_improvement,
                        on_progress=progress.append)
    assert not overlaps and len(r.log) >= 1
    assert progress and set(progress[0]) == {"seconds", "best", "moves", "moves_per_second", "cache_hit_rate",
                                             "epoch"}


def test_the_gil_is_released_while_searching(p13):
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    counter = threading.Thread(target=count)
    counter.start()
    try:
        annealer.search(p13, time=0.6, seed=1, threads=1)
    finally:
        stop.set()
        counter.join()
    assert len(ticks) > 100  # ~500 if the thread ran freely


@pytest.mark.parametrize("which", ["on_improvement", "on_progress"])
def test_a_callback_that_raises_stops_the_search_and_re_raises(p13, which):
    class Boom(Exception):
        pass

    def explode(*args):
        raise Boom("from the callback")

    start = time.monotonic()
    with pytest.raises(Boom, match="from the callback"):
        annealer.search(p13, time=30, seed=1, **{which: explode})
    assert time.monotonic() - start < 5


def test_ctrl_c_stops_promptly_with_the_best_so_far(p13):
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    try:
        r = annealer.search(p13, time=30, seed=1)
    finally:
        timer.cancel()
    elapsed = time.monotonic() - start
    assert r.interrupted and elapsed < 3
    assert annealer.evaluate(p13, r.schedule).valid
    assert r.total == annealer.evaluate(p13, r.schedule).total


def cli_message(cli, problem, *args):
    run = subprocess.run([cli, "--quiet", "--time", "1s", *args, problem], capture_output=True, text=True)
    assert run.returncode == 2
    return run.stderr.removeprefix("annealer: ").rstrip("\n")


@pytest.mark.parametrize("kwargs, cli_args", [
    ({"config": {"sa.cooling": 2}}, ["--set", "sa.cooling=2"]),
    ({"config": {"no.such.key": 1}}, ["--set", "no.such.key=1"]),
    ({"config": {"deterministic": "maybe"}}, ["--set", "deterministic=maybe"]),
    ({"config": "no-such-config.yaml"}, ["--config", "no-such-config.yaml"]),
    ({"threads": -1}, ["--threads", "-1"]),
    ({"seed": -5}, ["--seed", "-5"]),
])
def test_bad_settings_raise_the_cli_message(p13, problem_path, cli, kwargs, cli_args):
    with pytest.raises(annealer.ConfigError) as error:
        annealer.search(p13, time=0.3, **kwargs)
    assert isinstance(error.value, ValueError)
    assert str(error.value) == cli_message(cli, problem_path("mlsys-2026-13"), *cli_args)


@pytest.mark.parametrize("seconds", [0, -1, 10**9])
def test_bad_times_raise(p13, seconds):
    with pytest.raises(annealer.ConfigError, match="^time: bad duration"):
        annealer.search(p13, time=seconds)


@pytest.mark.parametrize("kwargs", [
    {"time": "1"}, {"time": True}, {"threads": "2"}, {"seed": 1.5}, {"config": 42}, {"config": {1: 2}},
    {"config": {"sa.cooling": [0.9]}}, {"on_improvement": 5}, {"on_progress": "print"},
])
def test_bad_argument_types_raise_type_error(p13, kwargs):
    with pytest.raises(TypeError):
        annealer.search(p13, **{"time": 0.3, **kwargs})


def test_other_errors(p13, source_dir):
    with pytest.raises(TypeError):
        annealer.search("problems/mlsys-2026-13.json", time=0.3)
    with pytest.raises(ValueError, match="finite"):
        annealer.search(p13, time=float("nan"))
    with pytest.raises(ValueError, match="YAML files come before"):
        annealer.search(p13, time=0.3, config=[{"seed": 2}, str(source_dir / "configs" / "quick.yaml")])


def test_the_deterministic_preset_matches_the_cli_byte_for_byte(problem_path, source_dir, cli, tmp_path):
    problem = problem_path("mlsys-2026-5")
    preset = str(source_dir / "configs" / "deterministic.yaml")
    out = tmp_path / "cli.json"
    run = subprocess.run([cli, "--quiet", "--config", preset, "--set", "max_epochs=4", "--set", "epoch_moves=1000",
                          "--time", "60s", problem, "-o", str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    r = annealer.search(annealer.Problem.load(problem), time=60,
                        config=[preset, {"max_epochs": 4, "epoch_moves": 1000}])
    assert not r.deterministic_cut
    assert r.schedule.to_json() == out.read_text()
    # The same run proves its best optimal within the exact solver's family, as the CLI says.
    assert r.proof.startswith("optimal within family no recomputation")
    assert r.exact["status"] == "optimal"


def test_a_bound_meeting_schedule_is_proven_optimal(problem_path):
    r = annealer.search(annealer.Problem.load(problem_path("example_problem")), time=0.5, seed=1)
    assert r.proof == "optimal: meets the lower bound, which no valid schedule beats"
    assert r.gap == pytest.approx(0, abs=1e-9)


def test_a_capacity_sweep(problem_path):
    p = annealer.Problem.load(problem_path("mlsys-2026-1"))
    totals = [annealer.search(p.with_hardware(capacity=c), time=0.3, seed=1, threads=1).total
              for c in (30000, 60000)]
    assert totals[0] >= totals[1] * (1 - 1e-9)  # more fast memory never hurts the best found here


def test_a_problem_without_a_start_schedule_raises(problem_path, cli, tmp_path):
    p = annealer.Problem.load(problem_path("mlsys-2026-1")).with_hardware(capacity=1)
    with pytest.raises(annealer.NoScheduleError) as error:
        annealer.search(p, time=0.3)
    assert isinstance(error.value, ValueError)
    p.save(str(tmp_path / "tiny.json"))
    run = subprocess.run([cli, "--quiet", "--time", "1s", str(tmp_path / "tiny.json")], capture_output=True, text=True)
    assert run.returncode == 1
    assert run.stderr == f"annealer: {error.value}\n".replace("problem:", f"{tmp_path / 'tiny.json'}:", 1)


def test_baselines_match_the_cli(p13, problem_path, tmp_path, cli):
    spilling = annealer.baseline(p13)
    resident = annealer.baseline(p13, resident=True)
    greedy = annealer.baseline(p13, greedy=True)
    for s in (spilling, resident, greedy):
        assert annealer.evaluate(p13, s).valid
    assert all(not sg["retain"] for sg in spilling.subgraphs)
    assert sum(resident.latencies) <= sum(spilling.latencies)
    # The CLI writes the same schedules.
    for flags, s in (([], spilling), (["--resident"], resident), (["--greedy"], greedy)):
        out = tmp_path / "b.json"
        subprocess.run([cli, "baseline", problem_path("mlsys-2026-13"), "-o", str(out)] + flags,
                       check=True, capture_output=True)
        assert annealer.Schedule.load(str(out)) == s
    with pytest.raises(ValueError, match="exclude each other"):
        annealer.baseline(p13, resident=True, greedy=True)
    with pytest.raises(annealer.NoScheduleError, match="at no granularity"):
        annealer.baseline(p13.with_hardware(capacity=10))
