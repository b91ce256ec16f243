"""What the gap scripts (gap_parts.py, gap_paths.py, gap_classes.py) share: reading a problem,
asking `annealer` for JSON, and bad input as one line and exit 1 instead of a traceback."""
import json
import os
import subprocess
import sys


class InputError(Exception):
    """A file or a command the script was given did not work; the message names it."""


def ceil_div(a, b):
    return -(-a // b)


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise InputError(f"{path}: {e.strerror}") from None
    except ValueError as e:
        raise InputError(f"{path}: not JSON ({e})") from None


def run_json(cmd):
    try:
        done = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise InputError(f"{cmd[0]}: {e.strerror} (give the binary with --annealer)") from None
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        raise InputError(lines[-1] if lines else f"{' '.join(cmd)} exited with {done.returncode}")
    return json.loads(done.stdout)


def run_main(main):
    try:
        main()
    except InputError as e:
        sys.exit(f"{os.path.basename(sys.argv[0])}: {e}")
