"""`scripts/soak.py` for one minute: 250 users, memory of every process flat (<= 10%)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO

SOAK = REPO / "scripts" / "soak.py"


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_one_minute_soak_passes(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, str(SOAK), "--duration", "60", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=200)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert lines[-1] == "PASS: every process within 10% RSS growth"
    roles = [ln.split("  ")[0] for ln in lines[2:-2]]
    assert roles == ["sim", "locust master", "locust worker 1", "locust worker 2"], lines
    requests = int(lines[-2].split()[1].rstrip(","))
    assert requests > 1000, lines[-2]
    assert (tmp_path / "soak_requests.csv").stat().st_size > 0
