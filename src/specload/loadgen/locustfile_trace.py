"""The sweep's locustfile for `workload: {kind: trace}`: a trace replayed at speeds.

`trace_replay.TraceReplayUser` carries the arrivals of `trace_shape.TraceShape`;
`locustfiles/trace.py` re-exports this for people who run Locust by hand
(`locust -f locustfiles/trace.py --trace t.jsonl --speeds 1,2,4`). Replies are as long
as the trace says, so `--ignore-eos` is always on.
"""

from __future__ import annotations

from typing import Any

from locust import events

from specload.loadgen import open_loop, plugin, shape, workload_options
from specload.loadgen.trace_replay import TraceReplayUser
from specload.loadgen.trace_shape import TraceShape

__all__ = ["TraceReplayUser", "TraceShape"]

plugin.install(workload_options, open_loop, shape)


@events.init.add_listener
def _replies_as_long_as_the_trace(environment: Any, **_: Any) -> None:
    opts = getattr(environment, "parsed_options", None)
    if opts is not None:
        opts.ignore_eos = True
