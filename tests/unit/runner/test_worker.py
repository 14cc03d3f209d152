"""`specload worker`'s pure parts: its options, the Locust command, the restart delays;
and how it stops when the reader of its output goes away."""

from __future__ import annotations

import os
import signal
import sys

import pytest

from specload.cli import build_parser, main
from specload.runner.worker import (
    MAX_RESTART_DELAY_S,
    QUICK_FAILURE_S,
    RESTART_DELAY_S,
    WorkerSettings,
    next_delay,
    serve,
)


def test_cli_defaults_match_the_scenario_defaults() -> None:
    args = build_parser().parse_args(["worker", "load-master"])
    assert (args.master_host, args.port, args.processes, args.loglevel) == (
        "load-master", 5557, None, "WARNING")
    args = build_parser().parse_args(["worker", "h", "--port", "6000", "--processes", "3"])
    assert (args.port, args.processes) == (6000, 3)


def test_locust_command_runs_the_masters_locustfile_as_workers() -> None:
    cmd = WorkerSettings("10.0.0.7", 6000, 4).locust_command()
    assert cmd[1:5] == ["-m", "locust", "-f", "-"]  # downloaded from the master
    joined = " ".join(cmd)
    assert "--worker --master-host 10.0.0.7 --master-port 6000 --processes 4" in joined
    assert cmd[-2:] == ["--loglevel", "WARNING"]
    assert "--headless" not in cmd and "--csv" not in cmd


def test_every_problem_is_reported_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    bad = WorkerSettings(" ", port=70000, processes=0, loglevel="LOUD")
    assert len(bad.problems()) == 4
    assert WorkerSettings("h").problems() == []
    assert main(["worker", "h", "--processes", "0", "--port", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["specload: error: --port must be between 1 and 65535, got 0; "
                   "--processes must be 1 or more, got 0"]


@pytest.mark.parametrize(("status", "ran_s", "last", "expected"), [
    (0, 12.0, 0.0, RESTART_DELAY_S),           # the master quit after its arm
    (255, 306.0, 0.0, RESTART_DELAY_S),        # no master within Locust's 5 min of retries
    (1, 0.5, 0.0, RESTART_DELAY_S),            # failing at once: back off ...
    (1, 0.5, RESTART_DELAY_S, 2 * RESTART_DELAY_S),
    (1, 0.5, 8.0, 16.0),
    (1, 0.5, MAX_RESTART_DELAY_S, MAX_RESTART_DELAY_S),  # ... up to a cap
    (1, QUICK_FAILURE_S + 1, 16.0, RESTART_DELAY_S),     # ran a while: not broken
])
def test_restart_delay(status: int, ran_s: float, last: float, expected: float) -> None:
    assert next_delay(status, ran_s, last) == expected


def test_a_reader_that_goes_away_stops_the_workers_as_ctrl_c_does(monkeypatch) -> None:
    """`specload worker ... | head`: the first line Locust prints after the pipe's reader
    has gone stops its processes as Ctrl-C would, and the status is SIGPIPE's."""
    chatty = [sys.executable, "-c",
              "import time\nprint('Starting Locust', flush=True)\ntime.sleep(60)"]
    monkeypatch.setattr(WorkerSettings, "locust_command", lambda self: chatty)
    read_end, write_end = os.pipe()
    os.close(read_end)
    told: list[str] = []
    with os.fdopen(write_end, "w") as out:
        monkeypatch.setattr(sys, "stdout", out)
        assert serve(WorkerSettings("127.0.0.1"), tell=told.append) == 128 + signal.SIGPIPE
    assert told[-1] == "stopped by SIGPIPE after 1 start(s); no worker left running"
