"""Run a setup script of `scripts/` that prints a path as its last line (a binary, a
venv's Python, a model folder), failing the test with its error output if it fails."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


def printed_path(command: list[str], what: str, timeout: float = 3000) -> Path:
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        pytest.fail(f"{what} failed: {done.stderr[-2000:]}")
    return Path(done.stdout.strip().splitlines()[-1])
