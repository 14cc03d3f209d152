"""`scripts/bench_fleet.py` at a smaller scale: a fleet on four test hosts stays true.

The benchmark's own run (master, two load machines with 2 processes each, one clock 3 s
ahead, the simulator with its trace, each in a network namespace) at C = 50 and 200
instead of 1,000: the clock offsets are measured, and every rung's tok/s is within 1% of
the server's trace with the TTFT error p99 at most 5 ms, the benchmark's bounds. Needs
root (skipped otherwise).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO, netns

pytestmark = [pytest.mark.slow, pytest.mark.long(45)]

LADDER = (50, 200)
OFFSET_S = 3.0


@pytest.mark.timeout(300)
@pytest.mark.flaky(reruns=1)  # a TTFT p99 within 5 ms needs the machine's two cores not busy
def test_a_small_fleet_stays_true_to_the_trace(tmp_path: Path) -> None:
    reason = netns.unavailable()
    if reason:
        pytest.skip(reason)
    out = tmp_path / "fleet.json"
    res = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "bench_fleet.py"), "--ladder",
         ",".join(map(str, LADDER)), "--warmup-s", "5", "--measure-s", "6",
         "--offset-s", str(OFFSET_S), "--json", str(out)],
        capture_output=True, text=True, timeout=280)
    assert res.returncode == 0, res.stdout + res.stderr
    got = json.loads(out.read_text())
    shown = res.stdout

    hosts = sorted(c["host"] for c in got["clocks"].values())
    assert hosts == ["load-a", "load-a", "load-b", "load-b"], shown
    for c in got["clocks"].values():
        want = OFFSET_S if c["host"] == "load-b" else 0.0
        assert abs(c["offset_s"] - want) < 0.005, shown

    assert [r["c"] for r in got["rungs"]] == list(LADDER), shown
    for r in got["rungs"]:
        assert r["requests"] > r["c"] // 2, shown
        assert abs(r["tok_s"] / r["trace_tok_s"] - 1) <= 0.01, shown
        assert r["ttft_err_p50_ms"] >= 0 and r["ttft_err_p99_ms"] <= 5.0, shown
        assert {p["host"] for p in r["processes"]} == {"load-a", "load-b"}, shown
        assert r["true"], shown
    assert f"largest C that stays true: {LADDER[-1]}" in shown
