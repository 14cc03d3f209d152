"""The locustfile the sweep runner passes to `locust -f`: chat users plus the ladder shape.

It lives inside the package so that an installed specload (editable or from a wheel)
can always locate it (`specload.runner.locust_proc.LOCUSTFILE`, found without importing
Locust into the runner); `locustfiles/ladder.py` re-exports it for
people who run Locust by hand, e.g. `locust -f locustfiles/ladder.py --host URL` for
the web UI with the ladder and its windows as custom parameters.
"""

from __future__ import annotations

from specload.loadgen import plugin, shape
from specload.loadgen.shape import LadderShape
from specload.loadgen.users import ChatStreamUser

plugin.install(shape)

__all__ = ["ChatStreamUser", "LadderShape"]
