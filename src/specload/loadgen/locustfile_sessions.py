"""The sweep's locustfile for `workload: {kind: sessions}`: chat sessions up the ladder.

The ladder's rungs are numbers of concurrent sessions (`sessions.ChatSessionUser`);
`locustfiles/sessions.py` re-exports this for people who run Locust by hand.
"""

from __future__ import annotations

from specload.loadgen import plugin, shape, workload_options
from specload.loadgen.sessions import ChatSessionUser
from specload.loadgen.shape import LadderShape

plugin.install(workload_options, shape)

__all__ = ["ChatSessionUser", "LadderShape"]
