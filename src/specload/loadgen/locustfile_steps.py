"""The sweep's locustfile for `workload: {kind: steps}`: chat users whose count jumps.

`users.ChatStreamUser` under `step_shape.StepShape`; `locustfiles/steps.py` re-exports
this for people who run Locust by hand (`locust -f locustfiles/steps.py --steps 4,128,4`).
"""

from __future__ import annotations

from specload.loadgen import plugin, shape, workload_options
from specload.loadgen.step_shape import StepShape
from specload.loadgen.users import ChatStreamUser

plugin.install(workload_options, shape)

__all__ = ["ChatStreamUser", "StepShape"]
