"""The workload kinds (`workload.kind`), each declared once as a `WorkloadKind`.

A kind is what the clients do: closed-loop users (`users`, the default), multi-turn chat
sessions with think time (`sessions`), open-loop arrivals at the rates of a rate
ladder (`open`), closed-loop users whose count jumps from step to step (`steps`) or a
trace's own arrivals replayed at the speeds of a speed ladder (`trace`). Its
`WorkloadKind` is pure data: the `workload:` keys it takes, the packaged locustfile and
user classes the runner starts, the `Axis` its rungs step (where the scenario lists
them, the Locust option that passes them, the summary column they become, their words
and the crossover's name), and what the report shows: its per-rung table's view and its
figures and data-quality checks, by name. The layers resolve the
names in their own registries (`report/rung_columns.View`, `report/figures.FIGURES`,
`report/quality.CHECKS`; `tests/unit/test_workload_kinds.py` holds every name to exist
there), so a new kind is one entry in `KINDS` plus whatever new behaviour it brings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

SESSION_KEYS = ("conversations", "turns", "think_time")


@dataclass(frozen=True, slots=True)
class Axis:
    """What a kind's rungs step, from the scenario to the report's x axis."""

    column: str  # the summary column the levels become
    title: str  # the figures' x-axis title
    flag: str  # the Locust option that passes the levels
    whole: bool  # the levels are counts (of users or sessions)
    workload_key: str | None  # the `workload:` key listing the levels; None: `ladder`
    levels_help: str  # what `workload_key` holds, for the error that misses it
    plan_words: str  # how the sweep's plan names the levels
    run_words: str  # what precedes the levels of one Locust run
    rung_words: str  # one rung, a format of its level
    crossover: str  # where speculation stops paying off
    heading: str = ""  # the report's section on it (default: "Crossover <crossover>")

    def arg(self, levels: Sequence[float]) -> list[str]:
        """The Locust option and its value for these levels."""
        text = (str(int(x)) if self.whole else f"{x:g}" for x in levels)
        return [self.flag, ",".join(text)]

    def rung(self, level: float) -> str:
        return self.rung_words.format(level)


LADDER = Axis(column="concurrency", title="concurrency C (concurrent users, log scale)",
              flag="--ladder", whole=True, workload_key=None, levels_help="",
              plan_words="ladder", run_words="C=", rung_words="C={}", crossover="C*")
RATES = Axis(column="rate", title="arrival rate (per second, log scale)", flag="--rates",
             whole=False, workload_key="rates",
             levels_help="the arrival rates per second, e.g. [1, 2, 5]",
             plan_words="rates (per second)", run_words="rates ", rung_words="rate={:g}/s",
             crossover="rate*")

# a trace replay's rungs are speeds of the trace (2: its arrivals twice as close)
SPEEDS = Axis(column="speed", title="trace speed (times the trace's own rate, log scale)",
              flag="--speeds", whole=False, workload_key="speed",
              levels_help="the speeds to replay the trace at, e.g. [0.5, 1, 2, 4]",
              plan_words="trace speeds", run_words="speeds ", rung_words="speed {:g}x",
              crossover="speed*")

# a load step's rungs are its steps: the user counts in order, a count may come back
STEPS = Axis(column="step", title="time since the first step (s)", flag="--steps",
             whole=True, workload_key="steps",
             levels_help="the user counts to step through, e.g. [4, 128, 4]",
             plan_words="load steps (users)", run_words="steps ", rung_words="{} users",
             crossover="the time to settle after each jump",
             heading="Settling after each step")


@dataclass(frozen=True, slots=True)
class WorkloadKind:
    """One workload kind: everything that differs between kinds, as data."""

    name: str  # the scenario's `workload.kind`
    axis: Axis
    keys: tuple[str, ...]  # the `workload:` keys it takes
    locustfile: str  # under specload/loadgen/
    user_classes: tuple[str, ...]  # the locustfile's users (the second: `session_unit`)
    view: str  # the report table's `rung_columns.View`
    figures: tuple[str, ...]  # `figures.FIGURES` names, in reading order
    checks: tuple[str, ...]  # `quality.CHECKS` names, each rung's in this order
    gives_schedule: bool  # its crossover is an engine setting in batch size
    a_run: str  # how prose names one of its runs
    open_loop: bool = False  # arrivals on a plan: a latency speedup, the crossover a rate
    sessions: bool = False  # its users hold chat sessions
    # its rungs only mean something together (a step is measured from the one before):
    # a repeat runs them in one Locust run, never split, interleaved or resumed midway
    whole_runs: bool = False
    session_unit: str | None = None  # ... or they do when its `unit` is this

    def holds_sessions(self, unit: str) -> bool:
        return self.sessions or unit == self.session_unit

    def keys_for(self, unit: str) -> tuple[str, ...]:
        """The `workload:` keys it takes with this `unit`."""
        return (*self.keys, *(SESSION_KEYS if unit == self.session_unit else ()))

    @property
    def every_key(self) -> tuple[str, ...]:
        """The keys it takes with one `unit` or another."""
        return self.keys_for(self.session_unit) if self.session_unit else self.keys


_ON_THE_LADDER = ("system_throughput", "speedup", "category_speedup",
                  "context_bucket_speedup", "acceptance_map",
                  "context_map", "position_speedup",
                  "envelope", "arms_envelope",
                  "batch_size", "per_user_throughput", "frontier", "ttft", "inter_token",
                  "tokens_per_chunk", "acceptance_spread", "acceptance_histogram",
                  "acceptance_by_step", "token_lengths")
_CHECKS_AROUND = ("tokens", "trace", "acceptance", "workers", "clock")

USERS = WorkloadKind(
    name="users", axis=LADDER, keys=(), locustfile="locustfile_ladder.py",
    user_classes=("ChatStreamUser",), view="users", figures=(*_ON_THE_LADDER, "failures"),
    checks=("failures", "concurrency", "client", "latency_samples", *_CHECKS_AROUND),
    gives_schedule=True, a_run="a closed-loop run")
# think time keeps the requests in flight below the sessions: no concurrency check
SESSIONS = WorkloadKind(
    name="sessions", axis=LADDER, keys=SESSION_KEYS, locustfile="locustfile_sessions.py",
    user_classes=("ChatSessionUser",), view="sessions",
    figures=(*_ON_THE_LADDER, "in_flight", "failures"),
    checks=("failures", "client", "latency_samples", *_CHECKS_AROUND),
    gives_schedule=True, a_run="a chat-session run", sessions=True)
OPEN = WorkloadKind(
    name="open", axis=RATES, keys=("rates", "arrivals", "cv", "max_in_flight", "unit"),
    locustfile="locustfile_open.py", user_classes=("OpenLoopUser", "OpenSessionUser"),
    view="open", figures=("rate_throughput", "rate_speedup", "rate_latency", "rate_achieved"),
    checks=("failures", "rate", "client", "latency_samples_fixed_window", *_CHECKS_AROUND),
    gives_schedule=False, a_run="an open-loop run", open_loop=True, session_unit="sessions")

# closed-loop users whose count jumps: how fast each arm settles after a jump
LOAD_STEPS = WorkloadKind(
    name="steps", axis=STEPS, keys=("steps", "step_s"), locustfile="locustfile_steps.py",
    user_classes=("ChatStreamUser",), view="steps", figures=("load_steps",),
    checks=("failures", "client", *_CHECKS_AROUND), gives_schedule=False,
    a_run="a load-step run", whole_runs=True)

# a trace replayed open-loop at each speed: arrivals, prompt and reply lengths, shared
# prefixes as the trace has them
TRACE = WorkloadKind(
    name="trace", axis=SPEEDS,
    keys=("trace", "trace_format", "speed", "start_s", "duration_s", "block_tokens",
          "max_in_flight"),
    locustfile="locustfile_trace.py", user_classes=("TraceReplayUser",), view="trace",
    figures=OPEN.figures, checks=(*OPEN.checks, "schedule"), gives_schedule=False,
    a_run="a trace replay",
    open_loop=True)

KINDS: dict[str, WorkloadKind] = {k.name: k for k in (USERS, SESSIONS, OPEN, LOAD_STEPS,
                                                       TRACE)}
NAMES = tuple(KINDS)


def workload_keys() -> tuple[str, ...]:
    """Every kind's `workload:` keys, once each, in the order the kinds declare them."""
    return tuple(dict.fromkeys(key for kind in KINDS.values() for key in kind.every_key))


def kinds_taking(key: str) -> str:
    """The kinds that take a `workload:` key, in words, e.g. "kind: open"."""
    always = [k.name for k in KINDS.values() if key in k.keys]
    by_unit = [f"{k.name} with unit: {k.session_unit}" for k in KINDS.values()
               if key not in k.keys and key in k.every_key]
    return f"kind: {' or '.join(always)}" + (f" (or {' or '.join(by_unit)})" if by_unit else "")
