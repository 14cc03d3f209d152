"""Streaming chat users driven through the concurrency ladder (the sweep's locustfile).

    locust -f locustfiles/ladder.py --host http://127.0.0.1:8000 \
        --ladder 1,2,5,10,30 --warmup 10 --measure 30 --csv reports/manual/run

Without `--headless` the web UI shows the ladder and both windows as custom parameters;
the shape then steps through the rungs on Start. `--processes N` or master/worker mode
work as with any locustfile (the shape runs on the master).
"""

from specload.loadgen.locustfile_ladder import ChatStreamUser, LadderShape

__all__ = ["ChatStreamUser", "LadderShape"]
