#!/usr/bin/python3
"""The tpu-v1 profile against the TPU v1's measured throughput (Jouppi et al., ISCA 2017).

Usage:  /usr/bin/python3 bench/calibration/tpu_v1_calibration.py [--annealer build/annealer] [--out DIR]
            [--config configs/deterministic.yaml] [--no-search]

Measured (N. P. Jouppi et al., "In-Datacenter Performance Analysis of a Tensor Processing Unit",
ISCA 2017, arXiv:1704.04760): Table 3's TeraOps/s of the six production applications, read from
the chip's performance counters, and its weight-stall fractions; Table 1's layers, weights and
TPU ops per weight byte (batch sizes).

Predicted: for each application a stand-in problem that keeps what decides its throughput on
the roofline, the paper's weights and operations per weight byte: a chain of L equal fully
connected layers (L the application's layer count in Table 1), each an M x s activation times
an s x s weight (s = round(sqrt(weights / L))), with M = the ops per weight byte (one MAC per
weight per row: M rows make M MACs per weight byte; for the MLPs and LSTMs M is the batch).
Each problem gets tpu-v1 (`annealer hardware tpu-v1 --apply`), with its weight path (H6), and
the profile as it was before H6 (chip rules removed, one path at the DDR3's 34 GB/s for all
traffic). Each is priced by the layer-by-layer baseline, the resident baseline (activations
kept in the Unified Buffer, as the TPU runs) and a deterministic search (the --config file).
TOPS = 2 x MACs / time at 700 MHz. Prints a Markdown table; exits 1 if a schedule fails the
oracle. Limits: LSTMs and CNNs are FC chains of equal intensity (no recurrence, no convolution
windows, no vector or pooling layers); an LSTM's vector layers and a CNN's pooling are not
modelled, nor the host's time.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

# name: (layers, weights, ops per weight byte (Table 1); measured TOPS, array active %,
# weight stall % (Table 3)).
APPS = [
    ("MLP0", 5, 20e6, 200, 12.3, 12.7, 53.9),
    ("MLP1", 4, 5e6, 168, 9.7, 10.6, 44.2),
    ("LSTM0", 58, 52e6, 64, 3.7, 8.2, 58.1),
    ("LSTM1", 56, 34e6, 96, 2.8, 10.5, 62.1),
    ("CNN0", 16, 8e6, 2888, 86.0, 78.2, 0.0),
    ("CNN1", 89, 100e6, 1750, 14.1, 46.2, 28.1),
]
CLOCK = 700e6
DDR3 = 34e9 / CLOCK  # elements (bytes) per cycle: the one path of the profile before H6


def chain(layers, weights, rows):
    """The stand-in: X0 @ W1 -> X1, X1 @ W2 -> X2, ...; returns (problem, side, MACs)."""
    side = round(math.sqrt(weights / layers))
    widths, heights = [side], [rows]  # X0
    ops = []
    for i in range(layers):
        w = len(widths)
        widths.append(side)
        heights.append(side)  # W_i
        widths.append(side)
        heights.append(rows)  # X_i
        ops.append((w - 1, w, w + 1))  # X_{i-1} @ W_i -> X_i
    problem = {
        "widths": widths,
        "heights": heights,
        "inputs": [[a, b] for a, b, _ in ops],
        "outputs": [[c] for _, _, c in ops],
        "base_costs": [1 for _ in ops],
        "op_types": ["MatMul" for _ in ops],
        "fast_memory_capacity": 1,
        "slow_memory_bandwidth": 1,
        "native_granularity": [256, 256],
    }
    return problem, side, rows * side * side * layers


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr}")
    return done.stdout


def evaluate(annealer, problem, schedule):
    """(total cycles, total compute cycles) by the oracle; exits when the schedule is invalid."""
    out = subprocess.run([annealer, "evaluate", problem, schedule, "--json"], capture_output=True, text=True)
    result = json.loads(out.stdout) if out.stdout.strip() else {}
    if out.returncode != 0 or not result.get("valid", False):
        sys.exit(f"invalid schedule {schedule} for {problem}: {out.stdout[:300]} {out.stderr[:300]}")
    return result["total_latency"], sum(s["compute_time"] for s in result["subgraphs"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annealer", default="build/annealer")
    parser.add_argument("--config", default="configs/deterministic.yaml")
    parser.add_argument("--out", default=None, help="directory for the problems and schedules (default: a temporary one)")
    parser.add_argument("--no-search", action="store_true", help="baselines only")
    args = parser.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="tpu_v1_calibration_")
    os.makedirs(out, exist_ok=True)

    rows = []
    for name, layers, weights, intensity, measured, active, stall in APPS:
        problem, side, macs = chain(layers, weights, intensity)
        raw = os.path.join(out, f"{name}.raw.json")
        with open(raw, "w") as f:
            json.dump(problem, f)
        rule = os.path.join(out, f"{name}.json")
        run([args.annealer, "hardware", "tpu-v1", "--apply", raw, "-o", rule])
        with open(rule) as f:
            one = json.load(f)
        one.pop("chip_rules", None)
        one["slow_memory_bandwidth"] = DDR3
        plain = os.path.join(out, f"{name}.one-path.json")
        with open(plain, "w") as f:
            json.dump(one, f)
        result = {"name": name, "layers": layers, "side": side, "rows": intensity, "macs": macs,
                  "measured": measured, "active": active, "stall": stall}
        for tag, path in (("rule", rule), ("plain", plain)):
            for kind, extra in (("lbl", []), ("resident", ["--resident"])):
                schedule = os.path.join(out, f"{name}.{tag}.{kind}.schedule.json")
                run([args.annealer, "baseline", path, "-o", schedule] + extra)
                result[f"{tag}.{kind}"], result[f"{tag}.{kind}.compute"] = evaluate(args.annealer, path, schedule)
            if not args.no_search:
                schedule = os.path.join(out, f"{name}.{tag}.search.schedule.json")
                run([args.annealer, "--config", args.config, path, schedule])
                result[f"{tag}.search"], result[f"{tag}.search.compute"] = evaluate(args.annealer, path, schedule)
        rows.append(result)
        print(f"{name}: done", file=sys.stderr)

    def tops(r, key):
        return 2 * r["macs"] / (r[key] / CLOCK) / 1e12

    columns = [("rule.lbl", "layer-by-layer, H6"), ("rule.resident", "resident, H6")]
    if not args.no_search:
        columns.append(("rule.search", "search, H6"))
    columns += [("plain.lbl", "layer-by-layer, one path"), ("plain.resident", "resident, one path")]
    if not args.no_search:
        columns.append(("plain.search", "search, one path"))
    header = ("| app | stand-in | measured TOPS | array active, weight stall |" +
              "".join(f" {title} | error |" for _, title in columns))
    print(header)
    print("|" + "---|" * (4 + 2 * len(columns)))
    for r in rows:
        line = (f"| {r['name']} | {r['layers']} x ({r['rows']} x {r['side']}) @ ({r['side']} x {r['side']}) |"
                f" {r['measured']} | {r['active']} %, {r['stall']} % |")
        for key, _ in columns:
            t = tops(r, key)
            line += f" {t:.1f} | {100 * (t / r['measured'] - 1):+.0f} % |"
        print(line)
    print()
    print("cycles:")
    for r in rows:
        print(r["name"], " ".join(f"{key}={r[key]:.0f}" for key, _ in columns))


if __name__ == "__main__":
    main()
