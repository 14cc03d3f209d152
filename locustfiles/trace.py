"""Locustfile: a trace replayed open-loop at the speeds of a speed ladder.

    locust -f locustfiles/trace.py --headless --host http://127.0.0.1:8000 \
        --trace mooncake_trace.jsonl --speeds 0.5,1,2 --warmup 10 --csv out/run

Requests start at the trace's timestamps (divided by the rung's speed), with prompts of
its input lengths, sharing the prefix blocks its hash ids share, and replies of its
output lengths; every record carries its scheduled time and how late it started.
"""

from specload.loadgen.locustfile_trace import TraceReplayUser, TraceShape

__all__ = ["TraceReplayUser", "TraceShape"]
