"""`scripts/bench_report.py` at a small size: it runs (it once failed at its first import,
after a module it used was renamed), its synthetic sweep is a folder `specload report`
reads, the report's chunk parser gives what the previous one gave on the same files, and
the report is timed both measuring every repeat and with the measured tables kept."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_the_report_benchmark_runs_and_its_parsers_agree(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    res = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "bench_report.py"), "--rows", "2000",
         "--runs", "1", "--limit", "0", "--out", str(out)],
        capture_output=True, text=True, timeout=200)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "(same arrays)" in res.stdout, res.stdout
    # timed with an empty cache, then with the tables the first report kept
    assert "first on these files" in res.stdout and "again (" in res.stdout, res.stdout
    assert (out / "report.html").stat().st_size > 0 and (out / "summary.csv").exists()
