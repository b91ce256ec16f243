#!/usr/bin/env python3
"""Latency against scratchpad size: one problem, its fast-memory capacity swept over a range.

For each capacity, a short search finds a schedule; the plot shows its latency next to the lower
bound (no valid schedule beats it), so the gap says how much the search may still leave on the
table, and the knee of the curve is the scratchpad size worth building.

    /usr/bin/python3 examples/sweep_capacity.py                      # writes sweep_capacity.png
    /usr/bin/python3 examples/sweep_capacity.py problems/mlsys-2026-17.json --points 8 \
        --from 0.25 --to 2 --time 2 -o docs/sweep_capacity.png

Needs the annealer package (docs/python.md) and matplotlib (Debian: python3-matplotlib).
"""
import argparse
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

import annealer  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def sweep(problem, capacities, seconds, seed):
    """(capacity, latency or None, lower bound, proof) per capacity; None when nothing fits."""
    rows = []
    for capacity in capacities:
        variant = problem.with_hardware(capacity=capacity)
        bound = annealer.lower_bound(variant)
        try:
            result = annealer.search(variant, time=seconds, seed=seed)
        except annealer.NoScheduleError as error:  # nothing fits at this size
            print(f"capacity {capacity:>10,}: {error}", file=sys.stderr)
            rows.append((capacity, None, bound, None))
            continue
        print(f"capacity {capacity:>10,}: latency {result.total:>14,.1f}  bound {bound:>14,.1f}  "
              f"gap {result.gap:6.2f} %{'  ' + result.proof.split(' (')[0].split(',')[0] if result.proof else ''}")
        rows.append((capacity, result.total, bound, result.proof))
    return rows


def plot(rows, name, original_capacity, path):
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=120)
    found = [(c, t) for c, t, _, _ in rows if t is not None]
    ax.plot([c for c, _ in found], [t for _, t in found], "o-", color="#1f77b4", label="best schedule found")
    ax.plot([c for c, *_ in rows], [b for _, _, b, _ in rows], "s--", color="#d62728", label="lower bound")
    proven = [(c, t) for c, t, _, proof in rows if proof]
    if proven:
        ax.plot([c for c, _ in proven], [t for _, t in proven], "*", markersize=14, color="#2ca02c",
                label="proven optimal")
    ax.axvline(original_capacity, color="grey", linewidth=0.8, linestyle=":")
    ax.annotate("as given", (original_capacity, ax.get_ylim()[1]), textcoords="offset points", xytext=(4, -12),
                fontsize=8, color="grey")
    ax.set_xlabel("fast-memory capacity (elements)")
    ax.set_ylabel("latency (cost-model time units)")
    ax.set_title(f"{name}: latency against scratchpad size")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("problem", nargs="?", default=os.path.join(HERE, "..", "problems", "mlsys-2026-13.json"))
    parser.add_argument("--from", dest="low", type=float, default=0.25, help="smallest capacity, x the given one")
    parser.add_argument("--to", dest="high", type=float, default=2.0, help="largest capacity, x the given one")
    parser.add_argument("--points", type=int, default=8, help="capacities, evenly spaced")
    parser.add_argument("--time", type=float, default=1.5, help="search seconds per capacity")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-o", "--output", default="sweep_capacity.png")
    args = parser.parse_args(argv)

    problem = annealer.Problem.load(args.problem)
    step = (args.high - args.low) / max(1, args.points - 1)
    capacities = sorted({max(1, round(problem.capacity * (args.low + i * step))) for i in range(args.points)})
    rows = sweep(problem, capacities, args.time, args.seed)
    plot(rows, os.path.basename(args.problem), problem.capacity, args.output)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
