"""Trace-replay users: each arrival of the plan sends its trace request's prompt.

`TraceReplayUser` is one of the open loop's pool (`open_loop.OpenLoopUser`): it takes
the next arrival at its scheduled time, and the arrival says which request of the
trace's window it replays, and in which pass (`trace_plan.Replay`). Its prompt comes
from the process's `trace_prompts.TracePrompts` (attached to the `ProcessState` when a
run's users replay a trace), written from the prompt set's text, its length calibrated
on what the server counts; its reply is as long as the trace's, `ignore_eos` on.
"""

from __future__ import annotations

from typing import Any, ClassVar

from specload.loadgen.open_loop import ARRIVALS, OpenLoopUser
from specload.loadgen.process_state import EXTENSIONS, ProcessState
from specload.loadgen.users import Tags
from specload.loadgen.workload_options import WorkloadOptions
from specload.traffic.trace_plan import Replay, TracePlan
from specload.traffic.trace_prompts import TracePrompts


class TraceReplayUser(OpenLoopUser):
    """One of the pool: sends each trace request it takes at its scheduled time."""

    replays_traces: ClassVar[bool] = True

    def arrive(self, ctx: ProcessState, model: str, tags: Tags, replay: Any) -> None:
        plan = ARRIVALS.plan
        assert isinstance(plan, TracePlan) and isinstance(replay, Replay)
        assert ctx.trace_prompts is not None, "the context has no trace prompts"
        prompt = ctx.trace_prompts.build(plan.trace.requests[replay.request], replay)
        self.stream(ctx, prompt, model, tags=tags)


def _attach_prompts(ctx: ProcessState) -> None:
    """Give the context a trace prompt writer when a user class of the run replays one."""
    if not any(getattr(u, "replays_traces", False) for u in ctx.env.user_classes):
        return
    opts = WorkloadOptions.from_env(ctx.env)
    ctx.trace_prompts = TracePrompts(ctx.corpus, opts.block_tokens, ctx.opts.seed)


EXTENSIONS.append(_attach_prompts)
