"""A finished rung's live line carries its window as the rungs file holds it.

The progress line computes a rung's figures from the live line's window, the report
from the rungs file's (`records.rung_time`, to the microsecond). A window kept to the
nanosecond in one and rounded in the other counts a chunk stamped in the microsecond of
an edge in one of them only (request starts and chunk gaps are whole microseconds too),
and the progress line's tok/s then differs from the table's: the likely cause of one
failure of the e2e sweep's progress-line test.
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
from locust.argument_parser import get_parser
from locust.env import Environment

from specload.loadgen.live import LiveRungs, Span
from specload.runfiles.records import rung_time

T = 1_796_417_840.0


def test_the_live_window_is_the_rungs_files(tmp_path: Path) -> None:
    prefix = str(tmp_path / "run")
    env = Environment(parsed_options=get_parser().parse_args(["--csv", prefix]))
    live = LiveRungs.for_env(env)
    live.reset(prefix)
    live.active = True
    start, end = T + 2.0000004, T + 10.0000007  # between two microseconds
    live.add_window(Span(0, 4, start, end))
    (line,) = live.poll()  # nothing in flight in this process: the rung is complete
    in_file = pd.read_csv(io.StringIO(f"s,e\n{rung_time(start)},{rung_time(end)}\n"))
    assert (line["measure_start"], line["measure_end"]) == (in_file["s"][0], in_file["e"][0])
    assert line["measure_start"] != start and line["measure_end"] != end
