"""Every request and load setting, declared once: its name, type, default, help and unit.

A setting is a field of `Request`, `Windows`, `Workload`, `Simulator` or `Export`, made
with `setting()`. Its name is the scenario key (`request.max_tokens`, `warmup_s`,
`workload.think_time`) and the Locust option's destination; the option is `--` and the
name with dashes unless the setting gives its own `flag`. Everything else is derived
from these fields: the scenario's pydantic models (`config/scenario.py`), the Locust
options that the command line, `--help` and the web UI's form show
(`loadgen/options.py`), the runner's `locust` command line (`to_args`) and the checks
the load generator runs on what it was given (`problems`, every problem at once, with
the rules that tie two settings together, `joint_problems`).
Pure: neither Locust nor pydantic is imported.
"""

from __future__ import annotations

import argparse
import builtins
import dataclasses
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar, get_args, get_type_hints

from specload.config.api_key import DEFAULT_ENV
from specload.ladder.rungs import (
    DEFAULT_DRAIN_S,
    DEFAULT_MEASURE_S,
    DEFAULT_MIN_REQUESTS,
    DEFAULT_WARMUP_S,
)
from specload.traffic import request_body
from specload.traffic.arrivals import ARRIVAL_KINDS, DEFAULT_MAX_IN_FLIGHT
from specload.traffic.prompt_fit import POLICIES
from specload.traffic.prompt_sets import NAMES as PROMPT_FORMATS
from specload.traffic.shapes import Distribution, LengthError, LengthSpec, ThinkTime
from specload.traffic.traces import AUTO as TRACE_AUTO
from specload.traffic.traces import MOONCAKE_BLOCK_TOKENS
from specload.traffic.traces import NAMES as TRACE_FORMATS

ARRIVAL_UNITS: tuple[str, ...] = ("requests", "sessions")
DEFAULT_STEP_S = 30.0
SPEC_MODES: tuple[str, ...] = ("on", "off", "schedule", "adaptive")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Rule:
    """What a setting says about itself beyond its name, type and default."""

    help: str
    unit: str = ""  # "s", "tokens", ...: shown after the help
    flag: str = ""  # the Locust option when it is not the name with dashes
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    aliases: tuple[str, ...] = ()  # more option names for it
    choices: tuple[str, ...] = ()
    # the text is a distribution (a length or a think time) that this class parses
    distribution: type[Distribution] | None = None
    scenario: bool = True  # False: a Locust option only, not a scenario key
    option: bool = True  # False: a scenario key only (the runner's), no Locust option
    repeat: bool = False  # a list of values, its option given once for each
    # the text is a JSON object of request fields (`traffic/request_body.py`): a mapping
    # in a scenario, held as its canonical text
    json_object: bool = False


def setting(default: Any, help: str, **rule: Any) -> Any:
    """A declared field: its default, and its `Rule` (help, unit, flag, bounds...)."""
    return field(default=default, metadata={"rule": Rule(help, **rule)})


@dataclass(frozen=True, slots=True)
class Declared:
    """One setting as the derivations see it."""

    name: str
    type: type
    default: Any
    rule: Rule

    @property
    def flag(self) -> str:
        return self.rule.flag or "--" + self.name.replace("_", "-")

    @property
    def base(self) -> builtins.type:
        """The type of one value: `int` for `int | None` (None: not given), `str` for a
        repeated `tuple[str, ...]`."""
        args = [a for a in get_args(self.type) if a is not type(None)]
        return args[0] if args else self.type

    @property
    def help(self) -> str:
        return f"{self.rule.help} ({self.rule.unit})" if self.rule.unit else self.rule.help

    def problem(self, value: Any) -> str | None:
        """Why `value` cannot be this setting's, in one line; None when it can."""
        r = self.rule
        if value is None:
            return None
        if r.repeat:
            return next(filter(None, (self.problem_of_one(v) for v in value)), None)
        return self.problem_of_one(value)

    def problem_of_one(self, value: Any) -> str | None:
        r = self.rule
        if r.ge is not None and value < r.ge:
            return f"{self.flag} must be >= {r.ge:g}, got {value}"
        if r.gt is not None and value <= r.gt:
            return f"{self.flag} must be > {r.gt:g}, got {value}"
        if r.le is not None and value > r.le:
            return f"{self.flag} must be <= {r.le:g}, got {value}"
        if r.choices and value not in r.choices:
            return f"{self.flag} must be one of {', '.join(r.choices)}, got {value!r}"
        if r.distribution is not None and value:
            try:
                r.distribution.parse(value)
            except LengthError as exc:
                return f"{self.flag} {exc}"
        if r.json_object and (found := request_body.problems(value)):
            return f"{self.flag}: {'; '.join(found)}"
        return None


@functools.cache
def declared(cls: type) -> tuple[Declared, ...]:
    """The settings a declaring class holds, in their order."""
    hints = get_type_hints(cls)
    return tuple(Declared(f.name, hints[f.name], f.default, f.metadata["rule"])
                 for f in dataclasses.fields(cls) if "rule" in f.metadata)


def _values(values: Any, cls: type) -> Iterator[tuple[Declared, Any]]:
    for d in declared(cls):
        yield d, getattr(values, d.name, d.default)


def joint_problems(values: Any, cls: type) -> list[str]:
    """The rules that tie two of `cls`'s settings together, broken by `values` (any
    object with them as attributes): the scenario and the load generator check these."""
    if issubclass(cls, Request) and values.min_tokens > values.max_tokens:
        return [f"min_tokens ({values.min_tokens}) is larger than max_tokens "
                f"({values.max_tokens})"]
    if issubclass(cls, Request) and values.categories and values.prompt_tokens:
        return ["categories select from the prompt set; synthetic prompts (prompt_tokens) "
                "have none"]
    if issubclass(cls, Workload) and values.cv != 1.0 and values.arrivals != "gamma":
        return ["cv needs arrivals: gamma (Poisson arrivals have cv 1)"]
    return []


def problems(values: Any, cls: type | None = None) -> list[str]:
    """Every setting of `values` (an instance of `cls`) that no server would accept, one
    at a time and jointly."""
    cls = cls or type(values)
    found = [p for d, v in _values(values, cls) if (p := d.problem(v))]
    return found + joint_problems(values, cls)


def _arg_text(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def to_args(values: Any, cls: type) -> list[str]:
    """The Locust options that give `values` (any object with `cls`'s settings as
    attributes) to the load generator: those not at their default, which is the load
    generator's too (a manifest's scenario holds every key, so "given" cannot count)."""
    args: list[str] = []
    for d, value in _values(values, cls):
        if value == d.default:
            continue
        if d.rule.repeat:
            args += [a for v in value for a in (d.flag, _arg_text(v))]
        elif d.base is bool:
            args.append(d.flag if value else "--no-" + d.flag.removeprefix("--"))
        else:
            args += [d.flag, _arg_text(value)]
    return args


class _AppendTuple(argparse.Action):
    """A repeated option's values, a tuple as its setting declares (argparse's `append`
    gives a list, and appends to the default itself)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, (*getattr(namespace, self.dest, ()), values))


def add_options(parser: argparse.ArgumentParser, cls: type, only: tuple[str, ...] = (),
                **extra: Any) -> None:
    """Add the settings `cls` declares (`only` those, when given) to `parser` as options
    (with `extra` keywords for each, such as Locust's include_in_web_ui)."""
    for d in declared(cls):
        if only and d.name not in only:
            continue
        names = (d.flag, *d.rule.aliases)
        shared = {"dest": d.name, "default": d.default, "help": d.help, **extra}
        if d.rule.repeat:
            parser.add_argument(*names, action=_AppendTuple, type=d.base, **shared)
        elif d.base is bool:
            # off by default: a plain switch; else (on, or None: not given) --X and --no-X
            action = "store_true" if d.default is False else argparse.BooleanOptionalAction
            parser.add_argument(*names, action=action, **shared)
        else:
            parser.add_argument(*names, type=d.base, choices=d.rule.choices or None,
                                metavar="N" if d.base is int else None, **shared)


def reference(sections: tuple[tuple[str, type], ...] | None = None) -> str:
    """A Markdown table per declaring class: key, option, default, unit and meaning
    (docs/settings.md is this text; a test keeps it so)."""
    out: list[str] = []
    for title, cls in sections or SECTIONS:
        out += [f"## {title}", "", "| key | option | default | unit | meaning |",
                "|---|---|---|---|---|"]
        for d in declared(cls):
            key = f"`{d.name}`" if d.rule.scenario else "(option only)"
            shown = str(d.default).lower() if isinstance(d.default, bool) else d.default
            default = "none" if d.default in (None, "", ()) else f"`{shown}`"
            flag = f"`{d.flag}`" if d.rule.option else "(none)"
            out.append(f"| {key} | {flag} | {default} | {d.rule.unit} | {d.rule.help} |")
        out.append("")
    return "\n".join(out)


def from_attributes(cls: type[T], source: Any) -> T:
    """A `cls` from the attributes of `source` (Locust's parsed options, say) that it has
    (the rest take their defaults); a None `source` gives the defaults."""
    # every caller's `cls` is a dataclass; a bound TypeVar cannot say so without typeshed
    names = (f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
    return cls(**{n: getattr(source, n) for n in names if hasattr(source, n)})


@dataclass(frozen=True, slots=True)
class Request:
    """What every simulated user sends, and how it waits for the answer."""

    model: str = setting("", "model id to request (default: first id from /v1/models)")
    max_tokens: int = setting(256, "max_tokens per request unless the prompt file sets one",
                              unit="tokens", ge=1)
    min_tokens: int = setting(0, "min_tokens to request (0: not sent)", unit="tokens", ge=0)
    ignore_eos: bool = setting(False, "ask the server to ignore EOS so every request runs "
                               "to max_tokens")
    temperature: float = setting(0.0, "sampling temperature", ge=0)
    prompts: str = setting("", "prompt file: ShareGPT .json, .jsonl, MT-Bench's or "
                           "Spec-Bench's question.jsonl, a SPEED-Bench split (.jsonl or "
                           ".parquet) (default: built-in set)")
    prompt_format: str = setting(
        "auto", "the prompt file's format (auto: as its name and first line show)",
        choices=PROMPT_FORMATS)
    prompt_tokens: str = setting(
        "", "synthetic prompts of this many tokens: N, uniform:LO:HI, normal:MEAN:SD or "
        "lognormal:MEAN:SIGMA (default: the prompt set's)", distribution=LengthSpec)
    output_tokens: str = setting(
        "", "max_tokens per request drawn like --prompt-tokens (default: --max-tokens)",
        distribution=LengthSpec)
    categories: str = setting(
        "", "prompt categories to send and their shares of the requests: code:0.5,chat:0.5 "
        "(default: the prompt set as it is)")
    shared_prefix_tokens: int = setting(
        0, "synthetic prompts: a system prompt of this many tokens, the same for every "
        "request (prefix caching)", unit="tokens", ge=0)
    over_context: str = setting(
        "skip", "prompts too long for the server's context with their max_tokens (counted "
        "by the server before the first rung): skip them on every arm, trim them to fit, or "
        "send them as they are", choices=POLICIES)
    skip_prompts: str = setting("", "indices of prompts in the set to leave out (the "
                                "runner's context check sets it)", scenario=False)
    cut_prompts: str = setting("", "index:characters of prompts whose last message is cut "
                               "to that length (the runner's context check sets it)",
                               scenario=False)
    seed: int = setting(0, "seed for the prompt order and the request `seed` field")
    api_key_env: str = setting(DEFAULT_ENV, "environment variable holding the API key "
                               "(sent as Bearer)")
    request_timeout_s: float = setting(300.0, "time to wait for the first byte and between "
                                       "chunks", unit="s", flag="--request-timeout", gt=0)
    failure_backoff_s: float = setting(
        2.0, "after a failed request a user waits 0.1 s, doubling up to this, until a "
        "request succeeds (0: no waiting)", unit="s", flag="--failure-backoff", ge=0)
    request_id_header: str = setting("X-Request-Id", "header carrying each request's UUID "
                                     "('off': send none)")
    ca_bundle: str = setting("", "HTTPS: CA certificates to trust (default: the system's, "
                             "SSL_CERT_FILE honoured)")
    insecure: bool = setting(False, "HTTPS: do not verify the server's certificate")
    continuous_usage: bool = setting(True, "ask for per-chunk usage (continuous_usage_stats) "
                                     "so token ITL is exact")
    extra_body: str = setting(
        "", "a JSON object merged into every request body: a thinking switch "
        "(chat_template_kwargs), tools, top_p, response_format, an engine's extensions; "
        "fields specload sets itself are refused (a mapping in a scenario)", json_object=True)
    records: bool = setting(True, "write one row per request to <csv prefix>_requests.csv",
                            scenario=False)
    keep_replies: bool = setting(False, "write each reply's text into its request record "
                                 "(only its fingerprint otherwise)")


@dataclass(frozen=True, slots=True)
class Windows:
    """How long each rung warms up and is measured, and the drain after the last."""

    warmup_s: float = setting(DEFAULT_WARMUP_S, "ladder: warmup per rung at most (not "
                              "measured; it ends earlier once every user has completed a "
                              "request)", unit="s", flag="--warmup", ge=0)
    measure_s: float = setting(DEFAULT_MEASURE_S, "ladder: measured time per rung at least",
                               unit="s", flag="--measure", gt=0)
    min_requests: int = setting(DEFAULT_MIN_REQUESTS, "ladder: a measure window lasts until "
                                "this many requests that started in it have completed", ge=0)
    max_measure_s: float = setting(0.0, "ladder: measured time per rung at most (0: four "
                                   "times --measure), longer until a request ended in "
                                   "the window (up to four times)", unit="s", flag="--max-measure",
                                   ge=0)
    drain_s: float = setting(DEFAULT_DRAIN_S, "ladder: after the last rung, time to let "
                             "requests in flight finish", unit="s", flag="--drain", ge=0)


@dataclass(frozen=True, slots=True)
class Search:
    """`ladder: auto`: where the crossover search may look and what it may spend (the
    runner's keys: no Locust option)."""

    max_concurrency: int | None = setting(
        None, "the highest concurrency the search may run (required)", unit="users", ge=2,
        option=False)
    min_concurrency: int = setting(1, "the lowest concurrency it runs", unit="users", ge=1,
                                   option=False)
    precision: float = setting(0.10, "stop once C* is known to within this share either "
                               "way", gt=0, le=0.5, option=False)
    rounds: int = setting(2, "refinement rounds at most after the coarse pass (each starts "
                          "a command arm's server once more)", ge=0, le=10, option=False)
    max_rungs: int = setting(8, "rungs per arm at most, the coarse pass's included", ge=2,
                             option=False)
    max_minutes: float = setting(0.0, "the search's time at most, the coarse pass's "
                                 "included (0: no limit)", unit="min", ge=0, option=False)


@dataclass(frozen=True, slots=True)
class Workload:
    """What chat sessions, open-loop arrivals, load steps and trace replays do
    (docs/workloads.md)."""

    conversations: str = setting("builtin", "sessions: multi-turn conversations, a ShareGPT "
                                 ".json or .jsonl file (default: the built-in set)")
    turns: str = setting("", "sessions: at most this many turns per session, N or drawn like "
                         "uniform:LO:HI (default: every human turn of the conversation)",
                         distribution=LengthSpec)
    think_time: str = setting(
        "lognormal:5:0.8", "sessions: time a user waits after each reply: N, uniform:LO:HI, "
        "normal:MEAN:SD, lognormal:MEAN:SIGMA or exponential:MEAN", unit="s",
        distribution=ThinkTime)
    arrivals: str = setting("poisson", "open loop: the arrival process, poisson or gamma",
                            choices=ARRIVAL_KINDS)
    cv: float = setting(1.0, "open loop, gamma arrivals: coefficient of variation of the gaps "
                        "between arrivals (1: as bursty as Poisson; above 1: burstier)",
                        flag="--arrival-cv", gt=0)
    max_in_flight: int = setting(DEFAULT_MAX_IN_FLIGHT, "open loop, trace replay: at most "
                                 "this many requests (or sessions) in flight; an arrival due "
                                 "while all are busy starts late", ge=1)
    unit: str = setting("requests", "open loop: each arrival is one request, or a whole chat "
                        "session", flag="--arrival-unit", choices=ARRIVAL_UNITS)
    step_s: float = setting(DEFAULT_STEP_S, "load steps: how long each user count holds; its "
                            "second half is the step's steady window", unit="s",
                            flag="--step-time", ge=4)
    trace_format: str = setting(TRACE_AUTO, "trace replay: the trace's format (auto: by its "
                                "name and first line)", choices=TRACE_FORMATS)
    trace: str = setting("", "trace replay: the trace file, Mooncake JSON lines or an Azure "
                         "CSV (read where the rungs are planned: the master's machine)")
    start_s: float = setting(0.0, "trace replay: where in the trace the replayed window "
                             "starts", unit="s", flag="--trace-start", ge=0)
    duration_s: float = setting(0.0, "trace replay: the window's length in trace time (0: "
                                "to the trace's end)", unit="s", flag="--trace-duration",
                                ge=0)
    block_tokens: int = setting(MOONCAKE_BLOCK_TOKENS, "trace replay: tokens per prompt "
                                "block a hash id names", ge=1)


@dataclass(frozen=True, slots=True)
class Simulator:
    """How a built-in simulated server (`specload sim`, a `sim:` arm) behaves: its
    profile, speculation, flavour, faults and the rest."""

    profile: str = setting("seed-glm", "built-in profile name or YAML path")
    spec: str = setting("on", "speculative decoding on, off, by a batch-size schedule (k "
                        "by batch size: adaptive_schedule, else the profile's) or adaptive "
                        "(the flavor's engine's own controller: vllm's adaptive "
                        "verification, sglang's --speculative-adaptive)",
                        choices=SPEC_MODES)
    k: int | None = setting(None, "draft length (default: the profile's)",
                            flag="--num-speculative-tokens", aliases=("-k",), ge=1, le=16)
    seed: int = setting(0, "seed of the server's sampling: accepted drafts, faults, text",
                        ge=0)
    flavor: str = setting("vllm", "whose streaming, health and /metrics conventions to "
                          "follow: an engine's simulator flavour (`specload engines`)")
    faults: tuple[str, ...] = setting(
        (), "faults injected into a seeded fraction of requests, each KIND:FRACTION[:PARAM] "
        "(error500, error400, error429[:retry_after_s], cut[:after_tokens], empty, "
        "stall_first_byte[:seconds], stall_between[:seconds], malformed, stream_error, "
        "alter_token[:position]: a successful reply with one token changed; e.g. cut:0.1:20)",
        flag="--fault", repeat=True)
    tls_cert: str | None = setting(None, "serve HTTPS: the certificate file (with tls_key)")
    tls_key: str | None = setting(None, "serve HTTPS: the private key file (with tls_cert)")

    data_parallel: int = setting(1, "engine ranks behind the API, each with the profile's "
                                 "resources", ge=1, le=64)
    slots: int | None = setting(None, "running-request cap, like llama.cpp's -np (default: "
                                "the flavor's, else the profile's)", ge=1)
    interrupt: bool | None = setting(None, "llama-cpp-python: a waiting request ends the "
                                     "running stream (its interrupt_requests; on by "
                                     "default there)")
    reasoning_tokens: int = setting(0, "stream each request's first N tokens in the "
                                    "flavor's reasoning field", unit="tokens", ge=0)
    prefix_caching: bool | None = setting(
        None, "reuse the KV of cached prompt blocks (default: the profile's, on as in vLLM "
        "V1 and SGLang)", aliases=("--enable-prefix-caching",))
    max_model_len: int | None = setting(
        None, "the context a request's prompt and output must fit, as vLLM's option of the "
        "same name (at most the profile's; default: the profile's)", unit="tokens", ge=2)
    acceptance_length: float | None = setting(
        None, "tokens a speculating request emits per step on average (accepted drafts + "
        "1, at its k): the profile's acceptance rates scaled to it, as the engines' "
        "synthetic acceptance modes fix it (default: the profile's rates)", unit="tokens",
        ge=1)
    per_request_spec_decode_metrics: str = setting(
        "none", "vllm: each request's drafted and accepted tokens in its final usage chunk "
        "(`metrics.speculative_decoding`), as vLLM's flag of the same name does; detailed "
        "adds the drafts accepted and proposed at each verification step",
        choices=("none", "summary", "detailed"))


@dataclass(frozen=True, slots=True)
class Export:
    """Where a Locust run serves its live figures for Prometheus, and their labels (the
    sweep sets these for each run it starts and serves them all on its own port)."""

    metrics_port: int = setting(0, "serve the live figures at /metrics on this port "
                                "(0: only the web UI's own /metrics, when it runs)",
                                scenario=False, ge=0, le=65535)
    metrics_host: str = setting("127.0.0.1", "the address --metrics-port listens on",
                                scenario=False)
    run_label: str = setting("", "the `run` label of every series (default: none)",
                             scenario=False)
    arm_label: str = setting("", "the `arm` label of every series (default: --host)",
                             scenario=False)


# The reference's sections: where in a scenario each class's keys go.
SECTIONS: tuple[tuple[str, type], ...] = (
    ("Requests: `request:`", Request), ("Rung windows: the scenario's top level", Windows),
    ("Crossover search: `search:` with `ladder: auto`", Search),
    ("Workload: `workload:`", Workload), ("Simulated servers: an arm's `sim:`", Simulator),
    ("Live figures for Prometheus: `locust` options", Export))
