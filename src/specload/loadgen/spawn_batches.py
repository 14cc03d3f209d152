"""A load process creates a rung's users a few at a time, its event loop running in between.

Locust's `Runner.spawn_users` (runners.py of Locust 2.47) creates every user of a spawn
message in one loop that never yields, while every stream already running waits to read
its chunks. A message carries up to a second of the ramp, `ladder.MAX_SPAWN_RATE_PER_PROCESS`
users per process. On the fleet benchmark's busy machine (`scripts/bench_fleet.py`)
gevent's blocking monitor caught that loop holding a load process past 20 ms at the big
rungs' starts: the loop's own run time, stretched by the scheduler taking the CPU away.
Each `BATCH`-th user created in a process yields (`gevent.sleep(0)`), so a stream waits
for one batch at most. A spawn message that arrives meanwhile kills the spawning greenlet
at that yield, as Locust kills it between users anyway: the user being created is then
never started, and the next spawn counts only the users that run.
"""

from __future__ import annotations

from itertools import count

import gevent

BATCH = 16

_created = count(1)


def user_created() -> None:
    """Count one user created in this process; yield the event loop after each batch."""
    if next(_created) % BATCH == 0:
        gevent.sleep(0)
