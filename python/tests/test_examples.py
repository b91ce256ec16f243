"""examples/sweep_capacity.py runs and draws its PNG."""
import runpy
import sys

import pytest

pytest.importorskip("matplotlib")


def test_sweep_capacity_writes_a_png(source_dir, problem_path, tmp_path, monkeypatch, capsys):
    out = tmp_path / "sweep.png"
    monkeypatch.setattr(sys, "argv", ["sweep_capacity.py", problem_path("mlsys-2026-1"), "--points", "3",
                                      "--from", "0.05", "--to", "1", "--time", "0.3", "-o", str(out)])
    runpy.run_path(str(source_dir / "examples" / "sweep_capacity.py"), run_name="__main__")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr()
    assert sum(line.startswith("capacity ") for line in printed.out.splitlines()) == 3 and f"wrote {out}" in printed.out
