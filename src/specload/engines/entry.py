"""What an engine entry is made of: the shared types of every engine module.

An `Engine` holds an engine's id and display name, how its start command gives it away,
the simulator flavours that imitate it (names only: the simulator imports nothing from
here), the /metrics series it exposes and how each is read (`Series`), whether it
streams one event per token, where its responses carry a request's own drafted and
accepted tokens (`RequestSpeculation`), where it lists its context and counts a prompt's
tokens (`ContextWindow`), its benchmarking mode with a fixed acceptance
(`SyntheticAcceptance`) and, for an engine that changes its draft length with the batch
size, its `LoadSwitch`: the writer of its setting (`engines.schedule.Writer`), the
placeholder `command.verify_command` takes it in, the methods it switches and its caveats.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from specload.engines.schedule import Writer

Meaning = Literal["generated", "prompt", "running", "waiting", "kv_usage", "finished",
                  "preemptions", "drafts", "draft_tokens", "accepted", "accepted_first",
                  "verify_steps", "accept_length",
                  "accept_rate", "cache_hit_rate", "prefix_queries", "prefix_hits",
                  "gen_throughput", "latency"]
OTHER = "other"


@dataclass(frozen=True, slots=True)
class Series:
    """One /metrics series as exposed, what it means, and how its label sets combine.

    Counters and queue sizes add up across label sets (data-parallel ranks,
    `is_streaming`, ...); ratio gauges are averaged, weighted by `weight`, a series of the
    same labels (the running requests of the same rank: two SGLang ranks at acceptance
    length 2.8 and 2.6 read 2.7, not 5.4). Of a per-position counter only the label sets
    holding `only` are kept: over the drafts, the first position's is the acceptance rate
    of the one position every draft has. Names are as prometheus_client's parser yields
    them (counters with `_total`).
    """

    name: str
    meaning: Meaning
    combine: Literal["sum", "mean"] = "sum"
    weight: str | None = None
    only: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> str:
        """The name its samples are kept under: the series name, with `only` as labels."""
        if not self.only:
            return self.name
        return self.name + "{" + ",".join(f'{k}="{v}"' for k, v in self.only) + "}"


@dataclass(frozen=True, slots=True)
class LoadSwitch:
    """How an engine changes its draft length with the batch size."""

    writer: Writer
    placeholder: str  # where `command.verify_command` takes the setting
    caveats: tuple[str, ...] = ()  # shown after the engine's name wherever it is written
    methods: tuple[str, ...] | None = None  # the methods it switches (None: any)


@dataclass(frozen=True, slots=True)
class RequestSpeculation:
    """Where a streamed response tells one request's own speculation: the object of a
    chunk (`section`, its keys from the top level down) that holds the draft tokens the
    request proposed, those the target accepted and, where the engine counts them, its
    verification steps; and what the server must be started with to send it."""

    section: tuple[str, ...]
    drafted: str
    accepted: str
    steps: str | None = None
    needs: str = ""  # the server option that turns it on ("": always sent)
    # the list of drafts accepted at each verification step, in order (`accept_by_step`),
    # and the server option that adds it
    per_step: str | None = None
    per_step_needs: str = ""


ACCEPTANCE = "{acceptance}"  # the mean acceptance length: tokens per step, the target's too
ACCEPTED_DRAFTS = "{accepted_drafts}"  # the same less the target's token: accepted drafts


@dataclass(frozen=True, slots=True)
class SyntheticAcceptance:
    """How an engine is started with its acceptance fixed, for benchmarking: the part of
    its start command that sets it, with `ACCEPTANCE` or `ACCEPTED_DRAFTS` where the value
    goes, and what fixing it changes besides."""

    knob: str
    caveats: tuple[str, ...] = ()


def fill_acceptance(text: str, length: float) -> str:
    """`text` with both acceptance placeholders set for a mean acceptance length."""
    return text.replace(ACCEPTANCE, f"{length:g}").replace(ACCEPTED_DRAFTS, f"{length - 1:g}")


MODELS_ROUTE = "/v1/models"


@dataclass(frozen=True, slots=True)
class ContextWindow:
    """Where an engine lists the context a request's prompt and output must fit, and
    counts a chat request's prompt tokens: the keys down to the context length, from the
    first entry of a `/v1/models` answer or from the top of another GET route's
    (`listed_route`); the route that takes `{"model", "messages"}` and answers the count
    in `count_field` (a number, or a list of the tokens); and, for an engine that also
    limits the prompt alone, the keys of that limit in the same answer (`input_limit`)."""

    listed: tuple[str, ...]
    count_route: str
    count_field: str
    listed_route: str = MODELS_ROUTE
    input_limit: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class Refusal:
    """A start line an engine's adaptive mode cannot run with (`pattern` matches it), and
    why: the engine's own words and where they are."""

    pattern: re.Pattern[str]
    reason: str


@dataclass(frozen=True, slots=True)
class AdaptiveMode:
    """An engine's own controller of speculation (`spec: adaptive` on an arm): the start
    line that turns it on (`on` matches it; `how` says it), the set-ups it refuses or
    silently leaves static, the speculative methods it runs with (empty: any), and what
    to know about it. `check` reads what the start line points at (a config file) and
    gives its problems."""

    on: re.Pattern[str]
    how: str
    refusals: tuple[Refusal, ...] = ()
    methods: tuple[str, ...] = ()  # vLLM method names (`spec_command`), empty: any
    caveats: tuple[str, ...] = ()
    check: Callable[[str], list[str]] | None = None

    def problems(self, start: str, method: str | None) -> list[str]:
        """Why an arm whose start line is `start` (speculating with `method`) cannot run
        this mode: every reason, none when it can."""
        found = [] if self.on.search(start) else [f"its start line does not turn it on: {self.how}"]
        found += [r.reason for r in self.refusals if r.pattern.search(start)]
        if self.methods and method is not None and method not in self.methods:
            found.append(f"it runs with {', '.join(self.methods)}, not {method}")
        return found + (self.check(start) if self.check is not None else [])


@dataclass(frozen=True, slots=True)
class Engine:
    """One engine: its names, its series, what it streams and what it can switch."""

    id: str
    name: str
    command: re.Pattern[str] | None = None  # matches its start command
    sim_flavors: tuple[str, ...] = ()  # the simulator flavours that imitate it
    series: tuple[Series, ...] = ()
    histograms: tuple[str, ...] = ()  # latency histograms whose `_sum`, `_count` are kept
    per_token_events: bool = False  # one event per token even when a step accepts several
    speculation: RequestSpeculation | None = None  # per request, in its responses
    context: ContextWindow | None = None  # None: prompts are not checked against it
    switch: LoadSwitch | None = None
    synthetic: SyntheticAcceptance | None = None  # its benchmarking mode, if it has one
    adaptive: AdaptiveMode | None = None  # its own controller of speculation, if it has one
    generic: bool = False  # stands for any engine not listed: every switch's setting
