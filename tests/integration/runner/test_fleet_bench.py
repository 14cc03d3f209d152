"""`scripts/bench_fleet.py` at a smaller scale: a fleet on four test hosts stays true.

The benchmark's own run (master, two load machines with 2 processes each, one clock 3 s
ahead, the simulator with its trace, each in a network namespace) at C = 50 and 200
instead of 1,000: the clock offsets are measured, and every rung's tok/s is within 1% of
the server's trace with the TTFT error p50 at most 1 ms and p99 at most 20 ms. The
benchmark's own bound, p99 at most 5 ms, holds on an idle machine (docs/benchmarks.md);
beside three other test modules on a slower two-core machine, a cold CI measured p99s of
9.1 and 5.4 ms while p50 stayed at 0.3 ms (the scheduler takes a process away for a few
4 ms ticks; a wrong clock offset or stamp moves every request). Needs root (skipped
otherwise).
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
TTFT_P50_MS = 1.0
TTFT_P99_MS = 20.0


@pytest.mark.timeout(300)
@pytest.mark.timing
@pytest.mark.flaky(reruns=1)  # its TTFT p99 needs the machine's two cores not saturated
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
        assert 0 <= r["ttft_err_p50_ms"] <= TTFT_P50_MS, shown
        assert r["ttft_err_p99_ms"] <= TTFT_P99_MS, shown
        assert {p["host"] for p in r["processes"]} == {"load-a", "load-b"}, shown
    assert "largest C that stays true:" in shown
