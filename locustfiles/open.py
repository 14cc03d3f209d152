"""Locustfile: open-loop arrivals through a rate ladder (Poisson or gamma).

    locust -f locustfiles/open.py --headless --host http://127.0.0.1:8000 \
        --rates 1,2,5,10 --warmup 10 --measure 30 --max-in-flight 256 --csv out/run

Requests (or, with `--arrival-unit sessions`, whole chat sessions) start when the
arrival plan says, whether or not earlier ones have finished; every record carries its
scheduled time and how late it started.
"""

from specload.loadgen.locustfile_open import OpenLoopUser, OpenSessionUser, RateShape

__all__ = ["OpenLoopUser", "OpenSessionUser", "RateShape"]
