"""A real llama-server that crashes or hangs in the middle of a rung.

`specload sweep` runs one `command:` llama-server (no speculation, 2 slots) through
ladder 1/2/4 and the test breaks it during the second rung:
- killed (SIGKILL, as a CUDA error or the OOM killer ends a server): the runner says at
  once that it exited, with its status and the last lines of its log, starts it again
  (`restart_on_exit`, default 1) and repeats the rung; the finished rung is kept, the
  requests the crash cut short are recorded as failures of no rung, and the sweep
  completes with every rung free of failures;
- stopped (SIGSTOP: it keeps its connections and sends nothing, as a stuck GPU does):
  requests fail by their timeouts and users back off; after `stall_after_s` of silence
  with its health route unanswered the arm is declared stalled, the rung ends with that
  reason, the server is stopped, and the report builds with the finished rung and says
  "server stalled at C=2".
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest
import yaml

from specload.runner.progress import live_lines
from tests.support import llama_server
from tests.support.sweeps import (
    BackgroundSweep,
    read_csv,
    read_manifest,
    sweep_cmd,
    wait_for,
)

pytestmark = [pytest.mark.real, pytest.mark.timeout(600)]
LADDER = [1, 2, 4]


def _scenario(folder: Path, name: str, measure_s: float = 4, **arm: object) -> Path:
    scenario = {"name": name, "ladder": LADDER, "warmup_s": 1, "measure_s": measure_s,
                "min_requests": 0, "verify": False,
                "request": {**llama_server.request(), "request_timeout_s": 6},
                "arms": [{**llama_server.command_arm("server", slots=2), **arm}]}
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False), encoding="utf-8")
    return path


def _break_in_the_second_rung(background_sweep, scenario: Path, sig: signal.Signals
                              ) -> tuple[BackgroundSweep, Path, int]:
    """Start the sweep (stopped with what it left running when the test ends), wait until
    its first rung is done and the second has begun, and send `sig` to the server; the
    sweep, its run folder and the server's pid."""
    sweep = background_sweep(str(scenario), "--out", "out")
    run_dir = sweep.run_dir()
    # the first rung complete: every request that could count for it has ended (a sleep
    # of 2.5 s after its window once left one in flight on a cold first server: a failure
    # at C = 1), and the second rung under way
    wait_for(lambda: live_lines(run_dir / "server" / "locust"), 120, "the first rung")
    time.sleep(0.5)
    children = json.loads((run_dir / ".specload-children.json").read_text())
    (pid,) = [int(p) for p, child in children.items() if child["what"].startswith("server")]
    psutil.Process(pid).send_signal(sig)
    return sweep, run_dir, pid


def _report(run_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*sweep_cmd()[:-1], "report", str(run_dir)], capture_output=True,
                          text=True, timeout=120)


def test_a_crashed_server_is_started_again_and_its_rung_repeated(tmp_path: Path,
                                                                 background_sweep) -> None:
    sweep, run_dir, pid = _break_in_the_second_rung(
        background_sweep, _scenario(tmp_path, "crash"), signal.SIGKILL)
    assert sweep.wait(300) == 0, sweep.text()
    text = sweep.text()
    said = [line for line in text.splitlines() if "exited during the rung" in line]
    assert len(said) == 1, text
    head = "[server] the server exited during the rung at C=2: start command exited with " \
           "status -9: "
    tail = "; starting it again to repeat that rung (0 restart(s) left)"
    assert said[0].startswith(head) and said[0].endswith(tail), said
    assert said[0][len(head):-len(tail)].strip(), said  # the last lines of its log
    arm = run_dir / "server"
    assert [r["users"] for r in read_csv(arm / "locust_rungs.csv")] == ["1", "2", "4"]
    assert read_manifest(run_dir)["status"] == "done"
    kinds = Counter(r["error_kind"] for r in read_csv(arm / "locust_requests.csv"))
    assert sum(n for kind, n in kinds.items() if kind) >= 1, kinds  # the crash's, kept
    assert set(kinds) - {""} <= {"connection", "stream_cut"}, kinds
    summary = json.loads((run_dir / "summary.json").read_text())["summary"]
    assert [(r["concurrency"], r["failures"]) for r in summary] == [(c, 0) for c in LADDER]
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"


def test_a_hung_server_is_declared_stalled_and_the_report_says_where(tmp_path: Path,
                                                                      background_sweep
                                                                      ) -> None:
    # the rest of the ladder (two rungs of 1 + 8 s) outlasts the stall bound, its probe
    # and the runner's health check interval
    scenario = _scenario(tmp_path, "hang", measure_s=8, stall_after_s=8)
    sweep, run_dir, pid = _break_in_the_second_rung(background_sweep, scenario,
                                                    signal.SIGSTOP)
    assert sweep.wait(300) == 1, sweep.text()
    text = sweep.text()
    assert "[server] FAILED: server stalled at C=2: no token for " in text, text
    error = read_manifest(run_dir)["arms"][0]["reps"][0]["error"]
    assert error.startswith("server stalled at C=2: no token for "), error
    # the second rung's window may have ended in the silence: then it is no finished rung
    assert re.search(r"/health answered: no answer within 1\.33 s"
                     r"( \(C=2, measured in the silence, is to run again\))?$", error), error
    arm = run_dir / "server"
    assert [r["users"] for r in read_csv(arm / "locust_rungs.csv")] == ["1"]
    rows = read_csv(arm / "locust_requests.csv")
    timed_out = [r for r in rows if r["error_kind"].startswith("timeout")]
    assert timed_out, Counter(r["error_kind"] for r in rows)
    assert any(float(r["backoff_ms"]) > 0 for r in rows), "no user backed off"
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
    assert not list(run_dir.glob(".specload*"))
    report = _report(run_dir)
    assert report.returncode == 0, report.stdout + report.stderr
    assert "arm server rep 1: 1 of 3 rungs finished (server stalled at C=2: " in report.stdout
    summary = json.loads((run_dir / "summary.json").read_text())["summary"]
    assert [r["concurrency"] for r in summary] == [1]
