"""`--run-time` lasts as long as asked, however long the process took to start.

Locust starts its run-time timer from gevent's cached loop time, which is as old as the
process's start-up (`specload.loadgen.loop_clock`): before the fix, a run whose `init`
work took 1.5 s ended 0.5 s after it began, and on a busy machine a `-t 2s` run ended
before its first request.
"""

from __future__ import annotations

import re
from datetime import datetime

from tests.support import REPO

STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\].*?: (.*)$", re.M)


def _when(output: str, text: str) -> datetime:
    stamp = next(s for s, line in STAMP.findall(output) if line.startswith(text))
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f")


def test_the_run_lasts_its_run_time_after_a_slow_start(fake_stream_server, locust_run):
    url = fake_stream_server()
    slow = REPO / "tests" / "support" / "slow_init.py"
    chat = REPO / "locustfiles" / "chat.py"
    run = locust_run(f"{slow},{chat}", url, users=2, run_time="2s",
                     extra=["--max-tokens", "6"])
    assert run.returncode == 0, run.output[-3000:]
    lasted = (_when(run.output, "--run-time limit reached")
              - _when(run.output, "Run time limit set")).total_seconds()
    assert lasted >= 1.95, (lasted, run.output[-3000:])
    assert [r for r in run.requests() if r["interrupted"] == "0"]
