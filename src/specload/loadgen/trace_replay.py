"""Trace-replay users: each arrival of the plan sends its trace request's prompt.

`TraceReplayUser` is one of the open loop's pool (`open_loop.OpenLoopUser`): it takes
the next arrival at its scheduled time, and the arrival says which request of the
trace's window it replays, and in which pass (`trace_plan.Replay`). Its prompt comes
from the process's `trace_prompts.TracePrompts` (attached to the `ProcessState` when a
run's users replay a trace), written from the prompt set's text; its reply is as long as
the trace's, `ignore_eos` on. Before the first arrival (the plan starts a moment after
the users), one user of the process sends the two probe prompts as ordinary chat
requests of one output token and fits the prompt lengths to what the server counted
(`usage.prompt_tokens`); a server that will not count them leaves the first guess, said
in the log. The probes are not measured requests.
"""

from __future__ import annotations

import logging
import urllib.error
import urllib.request
from typing import Any, ClassVar

import orjson
from gevent.lock import Semaphore

from specload.loadgen.open_loop import ARRIVALS, OpenLoopUser
from specload.loadgen.process_state import EXTENSIONS, ProcessState
from specload.loadgen.users import Tags
from specload.loadgen.workload_options import WorkloadOptions
from specload.traffic import request_body
from specload.traffic.shapes import INITIAL_CHARS_PER_TOKEN
from specload.traffic.trace_plan import Replay, TracePlan
from specload.traffic.trace_prompts import TracePrompts

log = logging.getLogger(__name__)
CHAT_PATH = "/v1/chat/completions"
_FITTING = Semaphore()  # one user of the process sends the probes, the others wait


class ProbeError(Exception):
    """The server did not count a probe prompt; the message says how it answered."""


def prompt_tokens(host: str, ctx: ProcessState, model: str, text: str) -> int:
    """The server's `usage.prompt_tokens` for a chat request of `text` (one output
    token, the user's own request fields as every request sends them)."""
    opts = ctx.opts
    body = {"model": model, "messages": [{"role": "user", "content": text}],
            "max_tokens": 1, "temperature": 0, "stream": False,
            **request_body.fields(opts.extra_body)}
    request = urllib.request.Request(
        host.rstrip("/") + CHAT_PATH, data=orjson.dumps(body),
        headers={**ctx.auth_headers, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=opts.request_timeout_s,
                                    context=ctx.url_tls(host)) as resp:
            got: Any = orjson.loads(resp.read())
    except urllib.error.HTTPError as exc:
        raise ProbeError(f"HTTP {exc.code}") from exc
    except (OSError, orjson.JSONDecodeError) as exc:
        raise ProbeError(str(exc)) from exc
    usage = got.get("usage") if isinstance(got, dict) else None
    count = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    if not isinstance(count, int) or count <= 0:
        raise ProbeError("no usage.prompt_tokens in the reply")
    return count


class TraceReplayUser(OpenLoopUser):
    """One of the pool: sends each trace request it takes at its scheduled time."""

    replays_traces: ClassVar[bool] = True

    def prepare(self, ctx: ProcessState, model: str) -> None:
        prompts = ctx.trace_prompts
        if prompts is None or prompts.fitted:
            return
        with _FITTING:
            if prompts.fitted:
                return
            try:
                short, long = (prompt_tokens(self.host or "", ctx, model, text)
                               for text in prompts.probes())
            except ProbeError as exc:
                log.warning("trace replay: the server did not count the probe prompts (%s): "
                            "prompts sized at %g characters a token", exc,
                            INITIAL_CHARS_PER_TOKEN)
                prompts.fitted = True
                return
            prompts.fit((short, long))
            log.info("trace replay: prompts sized by the server's count, %.3f tokens a "
                     "character and %.0f of template", prompts.model.density,
                     prompts.model.overhead)

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
