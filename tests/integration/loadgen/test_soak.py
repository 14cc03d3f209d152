"""`scripts/soak.py` for two minutes under faults and churn: 250 users over two worker
processes, 5% of the requests failed by the simulator over every fault kind, one worker
killed and replaced halfway. Memory of every process stays flat (its RSS floor grows by
at most 10%), nothing the server completed is missing from the records beyond the kill's
reach, nothing is recorded twice, and every fault is recorded as its own kind."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO

pytestmark = pytest.mark.long(130)  # the slow tier starts it first

SOAK = REPO / "scripts" / "soak.py"


@pytest.mark.slow
@pytest.mark.timeout(360)
def test_two_minute_soak_under_faults_and_churn_passes(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, str(SOAK), "--duration", "120", "--faults", "0.05",
                          "--churn-every", "60", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=330)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert lines[-1].startswith("PASS: every process within 10% RSS growth"), lines
    roles = [ln[:17].strip() for ln in lines[2:-2]]
    assert roles == ["sim", "locust master", "locust worker 1", "locust worker 2",
                     "locust worker 3"], lines
    assert lines[4].split()[-2].endswith("k") or " k " in lines[4], lines  # worker 1 killed
    counts = dict(re.findall(r"(requests|lost|excused|duplicated|misrecorded) (\d+)",
                             lines[-2]))
    assert int(counts["requests"]) > 1000 and counts["lost"] == "0", lines[-2]
    assert counts["duplicated"] == counts["misrecorded"] == "0", lines[-2]
    assert "(at 1 kill(s))" in lines[-2]
    for kind in ("http_error", "empty_stream", "stream_cut", "timeout_first_byte",
                 "timeout_between_chunks", "malformed_chunk", "stream_error"):
        assert kind in lines[-2], (kind, lines[-2])
