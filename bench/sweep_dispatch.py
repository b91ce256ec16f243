#!/usr/bin/env python3
"""The sweep's dispatch cost: points per second on tiny points, against the number of workers,
for the local process pool and a Dask cluster on the loopback address (docs/sweeps.md).

    PYTHONPATH=build/python /usr/bin/python3 bench/sweep_dispatch.py [--points 60] [--workers 1 2]
        [--problem mlsys-2026-1 --epoch-moves 4000 --max-epochs 3]

By default each point is example_problem.json under the deterministic preset with a budget of
one epoch of 100 moves: its search takes a few milliseconds, so the wall time is almost all
dispatch (pickling the task, the pool or the scheduler, the row's fsyncs); --problem and the
budget make longer points, to see the workers scale. Prints a Markdown table: workers,
engine, wall seconds, points per second, the mean search seconds per point (the rows' `seconds`)
and the overhead per point (wall x workers / points - search seconds).
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time

import annealer
from annealer import sweeps

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


ARGS = argparse.Namespace(problem="example_problem", epoch_moves=100, max_epochs=1)


def spec(points):
    return sweeps.Sweep.from_fields(
        models=[os.path.join(REPO, "problems", f"{ARGS.problem}.json")],
        search={"time": "60s", "threads": 1, "seeds": list(range(1, points + 1)),
                "config": os.path.join(REPO, "configs", "deterministic.yaml"),
                "set": {"max_epochs": ARGS.max_epochs, "epoch_moves": ARGS.epoch_moves}})


def measure(points, executor=None, workers=None):
    with tempfile.TemporaryDirectory() as scratch:
        start = time.monotonic()
        rows = sweeps.run(spec(points), output=os.path.join(scratch, "r.csv"), executor=executor, workers=workers,
                          quiet=True)
        wall = time.monotonic() - start
    assert len(rows) == points and not [r for r in rows if r["error"]]
    return wall, sum(r["seconds"] for r in rows) / len(rows)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dask(points, workers):
    import distributed

    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    processes = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                   "--port", str(port), "--no-dashboard"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        for _ in range(workers):
            processes.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", address, "--host", "127.0.0.1", "--nthreads",
                 "1", "--no-nanny", "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        client = distributed.Client(address, timeout=30)
        try:
            client.wait_for_workers(workers, timeout=60)
            measure(4, executor=client.get_executor(pure=False))  # warm: imports on the workers
            return measure(points, executor=client.get_executor(pure=False))
        finally:
            client.close()
    finally:
        for process in reversed(processes):
            process.kill()
            process.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=60)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--no-dask", action="store_true")
    parser.add_argument("--problem", default=ARGS.problem)
    parser.add_argument("--epoch-moves", type=int, default=ARGS.epoch_moves)
    parser.add_argument("--max-epochs", type=int, default=ARGS.max_epochs)
    args = parser.parse_args()
    ARGS.problem, ARGS.epoch_moves, ARGS.max_epochs = args.problem, args.epoch_moves, args.max_epochs
    print(f"{args.points} points of {args.problem} ({args.max_epochs} x {args.epoch_moves} moves), "
          f"annealer {annealer.__version__}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    print("| engine | workers | wall (s) | points/s | search s/point | overhead s/point |")
    print("|---|---|---|---|---|---|")
    for workers in args.workers:
        engines = [("local pool", lambda: measure(args.points, workers=workers))]
        if not args.no_dask:
            engines.append(("Dask (loopback)", lambda: dask(args.points, workers)))
        for name, run in engines:
            wall, search = run()
            print(f"| {name} | {workers} | {wall:.2f} | {args.points / wall:.1f} | {search:.3f} | "
                  f"{wall * workers / args.points - search:.3f} |", flush=True)


if __name__ == "__main__":
    main()
