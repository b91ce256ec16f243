#!/usr/bin/env python3
"""Check a bound change against a directory of measured schedules.

    bench/gaps/bound_vs_schedules.py NEW_ANNEALER OLD_ANNEALER DIR [--json OUT.json]

For every DIR/M.PROFILE.problem.json: `bound --json` with both binaries, and `evaluate --json` with
the new one on each of M.PROFILE.{schedule,greedy,baseline,resident}.json that exists. Prints one
line per schedule below the new bound (VIOLATION) and per problem whose bound moved, then the count
of pairs and violations; exits 1 if any schedule is below the new bound. (docs/lower-bound.md,
P36's figures, were checked this way over the 231 pairs of the zoo table.)
"""
import argparse
import glob
import json
import os
import subprocess
import sys


def run_json(args):
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: exit {r.returncode}: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''}")
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("new")
    ap.add_argument("old")
    ap.add_argument("dir")
    ap.add_argument("--json", help="write the rows here")
    a = ap.parse_args()
    rows, bad = [], 0
    problems = sorted(glob.glob(os.path.join(a.dir, "*.problem.json")))
    if not problems:
        raise SystemExit(f"{a.dir}: no *.problem.json")
    for prob in problems:
        stem = prob[: -len(".problem.json")]
        new = run_json([a.new, "bound", prob, "--json"])["lower_bound"]
        old = run_json([a.old, "bound", prob, "--json"])["lower_bound"]
        row = {"pair": os.path.basename(stem), "old": old, "new": new}
        for kind in ("schedule", "greedy", "baseline", "resident"):
            path = f"{stem}.{kind}.json"
            if not os.path.exists(path):
                continue
            latency = run_json([a.new, "evaluate", prob, path, "--json"])["total_latency"]
            row[kind] = latency
            if latency < new * (1 - 1e-9):
                bad += 1
                print(f"VIOLATION {row['pair']} {kind}: latency {latency:,.1f} < bound {new:,.1f}", flush=True)
        if abs(new - old) > 1e-6 * old:
            print(f"moved {row['pair']}: {old:,.1f} -> {new:,.1f}", flush=True)
        rows.append(row)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    print(f"pairs {len(rows)}, violations {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
