"""Streaming chat users driven through the concurrency ladder (the sweep's locustfile).

    locust -f locustfiles/ladder.py --host http://127.0.0.1:8000 \
        --ladder 1,2,5,10,30 --warmup 10 --measure 30 --csv reports/manual/run

Without `--headless` the web UI shows the ladder and both windows as custom parameters;
the shape then steps through the rungs on Start, and the Tokens tab shows tokens per
second, per-user speed, TTFT and each finished rung's figures live. `--processes N` or
master/worker mode work as with any locustfile (the shape runs on the master).
`python locustfiles/ladder.py --help` lists every option, specload's too (Locust's own
`--help` runs before it imports a locustfile).
"""

from specload.loadgen.locustfile_ladder import ChatStreamUser, LadderShape
from specload.loadgen.options import print_locust_help

__all__ = ["ChatStreamUser", "LadderShape"]

if __name__ == "__main__":
    print_locust_help()
