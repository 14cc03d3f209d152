"""Rows survive how a run ends: users removed by a lower rung, the end, SIGTERM, Ctrl-C.

With `--processes 2` the master must collect workers' rows of requests interrupted at
those moments: every request the server saw (its trace) has a row.
"""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specload.runfiles.records import REQUESTS_SUFFIX
from tests.support import REPO

# Requests of ~2-3 s, and users spawned 1/3 s apart so that their requests do not end
# in step: with all six started at once (identical requests), a rung change that fell
# into the moment the whole round ended (a starved machine shifts it) found no user
# mid-request and no interrupted row.
SHAPE = '''
from locust import LoadTestShape
from specload.loadgen import plugin
from specload.loadgen.users import ChatStreamUser

plugin.install()

class DownThenStop(LoadTestShape):
    def tick(self):
        t = self.get_run_time()
        if t < 4:
            return (6, 3)
        if t < 8:
            return (2, 100)
        return None
'''


def assert_no_gaps(rows: list[dict[str, str]]) -> None:
    """Every load process's requests are recorded 1, 2, ..., n: no row was lost."""
    seqs: dict[str, list[int]] = {}
    for r in rows:
        seqs.setdefault(r["client_id"], []).append(int(r["seq"]))
    for got in seqs.values():
        assert sorted(got) == list(range(1, len(got) + 1))


@pytest.mark.slow
@pytest.mark.timing
@pytest.mark.flaky(reruns=1)  # a worker starved for seconds could still end a round early
def test_lowering_users_and_stopping_keep_every_row(sim_server, master_ports, tmp_path: Path):
    sim = sim_server()
    locustfile = tmp_path / "shape_file.py"
    locustfile.write_text(SHAPE)
    prefix = tmp_path / "out" / "locust"
    proc = subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(locustfile), "--headless", "--processes",
         "2", "--csv", str(prefix), "--host", sim.url, "--only-summary",
         "--max-tokens", "500", "--ignore-eos", *master_ports],
        capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    with open(f"{prefix}{REQUESTS_SUFFIX}", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len({r["client_id"] for r in rows}) == 2
    assert_no_gaps(rows)
    assert {t["request_id"] for t in sim.read_trace()} <= {r["request_id"] for r in rows}

    interrupted = sorted(float(r["end"]) for r in rows if r["interrupted"] == "1")
    first_start = min(float(r["start"]) for r in rows)
    at_rung_change = [e for e in interrupted if e - first_start < 6.5]
    at_end = [e for e in interrupted if e - first_start >= 6.5]
    assert 1 <= len(at_rung_change) <= 4, interrupted  # 6 -> 2 users
    assert 1 <= len(at_end) <= 2, interrupted  # the last 2 users
    cut = [r for r in rows if r["interrupted"] == "1"]
    assert all(r["error_kind"] == "interrupted" for r in cut)
    # A user stopped mid-reply keeps its chunks; one stopped before its first token came
    # (it had just sent its next request) has none, and no TTFT either.
    assert any(int(r["num_chunks"]) > 0 for r in cut)
    assert all((int(r["num_chunks"]) > 0) == bool(r["ttft_ms"]) for r in cut)


@pytest.mark.slow
@pytest.mark.parametrize("processes, how", [(1, "sigterm"), (2, "sigterm"), (2, "ctrl-c")])
def test_killed_run_keeps_every_row(fake_stream_server, master_ports, tmp_path: Path,
                                    processes: int, how: str):
    """SIGTERM to the (master) process, or Ctrl-C: SIGINT to every process at once."""
    trace = tmp_path / "trace.jsonl"
    url = fake_stream_server("--step-ms", "20", "--trace", str(trace))  # ~3 s per request
    prefix = tmp_path / "locust"
    cmd = [sys.executable, "-m", "locust", "-f", str(REPO / "locustfiles" / "chat.py"),
           "--headless", "-u", "4", "-r", "4", "-t", "60s", "--csv", str(prefix),
           "--host", url, "--only-summary", "--max-tokens", "300"]
    if processes > 1:
        cmd += ["--processes", str(processes), *master_ports]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=tmp_path, start_new_session=True)
    rows_file = Path(f"{prefix}{REQUESTS_SUFFIX}")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not rows_file.exists():  # created at test start
        time.sleep(0.1)
    time.sleep(2.0)  # all four users are in their first request
    if how == "sigterm":
        proc.send_signal(signal.SIGTERM)
    else:
        os.killpg(proc.pid, signal.SIGINT)
    output, _ = proc.communicate(timeout=60)
    with open(rows_file, newline="") as f:
        rows = list(csv.DictReader(f))
    done = [r for r in rows if r["interrupted"] == "0"]
    match = re.search(r"^POST\s+/v1/chat/completions\s+(\d+)", output, re.MULTILINE)
    assert len(done) == (int(match[1]) if match else 0), output[-3000:]
    cut = [r for r in rows if r["interrupted"] == "1"]
    assert 1 <= len(cut) <= 4, output[-4000:]
    assert all(int(r["num_chunks"]) > 0 and int(r["output_tokens"]) > 0 for r in cut)
    assert_no_gaps(rows)
    seen = {json.loads(line)["request_id"] for line in trace.read_text().splitlines()}
    assert seen <= {r["request_id"] for r in rows}
