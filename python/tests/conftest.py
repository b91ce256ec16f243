"""Shared fixtures: where the sources, the bundled problems and the CLI binary are.

ctest sets PYTHONPATH (the built package), ANNEALER_SOURCE_DIR and ANNEALER_BINARY; run by hand:
    PYTHONPATH=build/python /usr/bin/python3 -m pytest -q python/tests
"""
import os
import pathlib
import shutil

import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("ANNEALER_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))


@pytest.fixture
def source_dir() -> pathlib.Path:
    return SOURCE_DIR


@pytest.fixture
def problem_path():
    """problem_path("mlsys-2026-5") -> the bundled problem's path (str)."""
    return lambda name: str(SOURCE_DIR / "problems" / f"{name}.json")


@pytest.fixture
def cli() -> str:
    """The annealer command-line binary (skips when it is not built)."""
    binary = os.environ.get("ANNEALER_BINARY") or shutil.which("annealer") or str(SOURCE_DIR / "build" / "annealer")
    if not os.path.exists(binary):
        pytest.skip("the annealer binary is not built")
    return binary
