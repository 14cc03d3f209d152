"""YAML scenario -> validated `Scenario`, with every problem reported at once.

A scenario names a ladder, its warmup and measure windows, the request settings the
Locust users send, how many load processes (or remote workers) drive the load, and a
list of arms. An arm is one server under test: a built-in simulated server
(`sim: {profile, spec, k}`), a server started and stopped by shell commands
(`command: {start, stop, base_url, ready_url, ready_timeout_s}`) or an already-running
base URL (`url:`); an arm may name its `engine:` (which the report's recommendation
follows), and `slo: {ttft_p99_ms, tpot_p99_ms}` makes the report recommend on goodput
within those latencies. `workload:` says what the clients do (docs/workloads.md): `users`
(closed loop, the default), `sessions` (multi-turn chat with think time, the ladder
counts sessions) or `open` (arrivals at the `rates` of a rate ladder), each kind's keys
and levels as `traffic/kinds.py` declares them.
`load_scenario` collects YAML syntax errors, unknown keys, wrong types, ladder
mistakes, duplicate arm names, bad URLs, missing files and prompt or conversation
files that do not parse into a single `UserError`, one line per problem, each prefixed with
its key path (`arms[1].sim.spec`).
Relative file paths (prompts, profile YAML) are resolved against the scenario's folder.
"""

from __future__ import annotations

import functools
import json
import re
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import urlsplit

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from specload import engines
from specload.config.settings import (
    Request,
    Search,
    Simulator,
    Windows,
    declared,
    from_attributes,
    joint_problems,
)
from specload.config.settings import Workload as SettingsWorkload
from specload.engines.spec_command import parse_command
from specload.errors import UserError
from specload.host import cpu_sets
from specload.ladder.rungs import (
    DEFAULT_LADDER,
    STRETCH_LIMIT,
    parse_ladder,
    validate_ladder,
    validate_steps,
    window_cap_s,
)
from specload.ladder.search import AUTO, coarse
from specload.sim import SimConfigError
from specload.sim.faults import DEFAULT_PARAMS as FAULT_KINDS
from specload.sim.faults import parse_fault
from specload.sim.flavors import adaptive_controller, flavor_named
from specload.sim.profile import builtin_names, schedule_problems
from specload.traffic import prompt_sets, request_body
from specload.traffic.arrivals import validate_rates
from specload.traffic.category_mix import CategoryMix
from specload.traffic.conversations import load_conversations
from specload.traffic.kinds import (
    KINDS,
    NAMES,
    TRACE,
    USERS,
    WorkloadKind,
    kinds_taking,
    workload_keys,
)
from specload.traffic.prompt_sets import load_prompts
from specload.traffic.shapes import Distribution, LengthError, LengthSpec
from specload.traffic.trace_plan import validate_speeds
from specload.traffic.traces import AUTO as TRACE_AUTO
from specload.traffic.traces import Trace, load_trace

BUILTIN_PROFILES = tuple(builtin_names())
SPEC_MODES = ("on", "off", "schedule", "adaptive")
V = TypeVar("V")
ARM_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

# `schedule`: k by batch size from a schedule (the simulator's, or an engine's load switch
# set by the start line, as the verification arm runs it); `adaptive`: the engine's own
# controller (`engines.entry.AdaptiveMode`), never a schedule of specload's.
Spec = Literal["on", "off", "schedule", "adaptive"]
SimSpec = Literal["on", "off", "schedule", "adaptive"]
Role = Literal["spec_on", "spec_off", "verify", "other"]
# The placeholder of a command arm's start line in a multi-k study (those of
# `command.verify_command` are the registered load switches', `engines.verify_placeholders`).
K_PLACEHOLDER = "{k}"
# `placement: apart`: servers and load on CPUs of their own (`cpu_sets.split_apart`)
APART = "apart"


def _cpu_list(value: str | None) -> str | None:
    """A CPU list as the kernel writes it (`0,2-3`), or None."""
    return None if value is None else cpu_sets.words(cpu_sets.parse(value))


def _registered(value: str | None, known: tuple[str, ...]) -> str | None:
    """An engine id or sim flavour the registry (`specload.engines`) holds at validation."""
    if value is not None and value not in known:
        raise ValueError(f"must be one of {', '.join(known)}")
    return value


def _no_problems(value: V, validate: Callable[[V], list[str]]) -> V:
    """`value` (None passes) if `validate` finds no problem with it, else every problem
    in one ValueError."""
    problems = validate(value) if value is not None else []
    if problems:
        raise ValueError("; ".join(problems))
    return value


def _yaml_bool_to_spec(value: Any) -> Any:
    # YAML 1.1 reads a bare `on`/`off` as a boolean; in a spec field it means the word.
    if value is True:
        return "on"
    if value is False:
        return "off"
    return value


def _check_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{value!r} is not an http(s) URL; write it like http://127.0.0.1:8000")
    return value.rstrip("/")


def _folder_name(value: str, what: str) -> str:
    if not ARM_NAME_RE.fullmatch(value):
        raise ValueError(
            f"{what} {value!r} must be 1-64 letters, digits, '.', '_' or '-' "
            "(it becomes a folder name)"
        )
    return value


def _resolve_file(value: str, info: ValidationInfo, what: str) -> str:
    base = Path((info.context or {}).get("base_dir", "."))
    path = (base / Path(value).expanduser()).resolve()
    if path.is_dir():
        raise ValueError(f"{what} file {value!r} is a folder, not a file (looked at {path})")
    if not path.is_file():
        raise ValueError(f"{what} file {value!r} not found (looked at {path})")
    try:
        with path.open("rb") as fh:
            fh.read(1)
    except OSError as exc:
        raise ValueError(f"{what} file {value!r} is not readable: {exc.strerror}") from exc
    return str(path)


_LENGTH_KEYS = {"fixed": ("value",), "uniform": ("low", "high"), "normal": ("mean", "sd"),
                "lognormal": ("mean", "sigma")}


def _length_from_mapping(v: dict[str, Any]) -> str:
    """{kind: normal, mean: 1024, sd: 128} -> "normal:1024:128"."""
    kind = v.get("kind")
    if kind not in _LENGTH_KEYS or set(v) != {"kind", *_LENGTH_KEYS[kind]}:
        forms = "; ".join(f"{{kind: {k}, {', '.join(keys)}}}" for k, keys in
                          _LENGTH_KEYS.items())
        raise ValueError(f"a length mapping is one of {forms}")
    return ":".join([kind, *(str(v[k]) for k in _LENGTH_KEYS[kind])]) \
        if kind != "fixed" else str(v["value"])


def _distribution(v: Any, spec: type[Distribution]) -> str:
    """A distribution key (text, number or mapping) as its canonical text ("": none)."""
    if v is None or v == "":
        return ""
    if isinstance(v, bool):
        raise ValueError(f"expected a {spec.WHAT}, got {v!r}")
    if isinstance(v, dict):
        v = _length_from_mapping(v)
    try:
        return spec.parse(v).text()
    except LengthError as exc:
        raise ValueError(str(exc)) from None


def _as_text(spec: type[Distribution]) -> Callable[[Any], str]:
    return lambda v: _distribution(v, spec)


def _json_text(v: Any) -> Any:
    """A mapping as the canonical JSON text its setting holds (JSON text as it is)."""
    if isinstance(v, dict):
        return request_body.canonical(v)
    if v is not None and not isinstance(v, str):
        raise ValueError("must be a mapping of request fields, e.g. {chat_template_kwargs: "
                         "{enable_thinking: false}}")
    return v


def _checked_file(v: str, info: ValidationInfo, what: str, load: Any) -> str:
    """A file that exists and parses (so a broken file stops a sweep before any server
    starts); its path, resolved against the scenario's folder."""
    path = _resolve_file(v, info, what)
    try:
        load(path)
    except UserError as exc:
        # "<path>:<line>: why" or "<path>: why" -> "<what> file 'v' line <line>: why"
        where = re.sub(r"^:(\d+):", r" line \1:", str(exc).removeprefix(path))
        raise ValueError(f"{what} file {v!r}{where}") from None
    return path


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _jointly(model: Any, cls: type) -> Any:
    """`model`, unless it breaks a rule that ties two settings together."""
    found = joint_problems(model, cls)
    if found:
        raise ValueError("; ".join(found))
    return model


def _model_of(cls: type, base: type[BaseModel] | None = None) -> type[BaseModel]:
    """The pydantic model of the scenario keys a `settings` class declares: each key's
    type, default, bounds and choices as declared, distributions as canonical text."""
    fields: dict[str, Any] = {}
    lengths: dict[str, Any] = {}
    for d in declared(cls):
        if not d.rule.scenario:
            continue
        kind = Literal[d.rule.choices] if d.rule.choices else d.type
        fields[d.name] = (kind, Field(d.default, ge=d.rule.ge, gt=d.rule.gt, le=d.rule.le,
                                      description=d.help))
        if d.rule.distribution is not None:
            lengths[f"_{d.name}_text"] = field_validator(d.name, mode="before")(
                _as_text(d.rule.distribution))
        if d.rule.json_object:
            lengths[f"_{d.name}_json"] = field_validator(d.name, mode="before")(_json_text)
            lengths[f"_{d.name}_ok"] = field_validator(d.name)(
                lambda v: _no_problems(v, request_body.problems))
    return create_model(f"{cls.__name__}Keys", __base__=base or _Strict, __validators__=lengths,
                        **fields)


# The bases below are models `_model_of` makes at import from the settings' declarations,
# which a type checker cannot follow: each `# type: ignore[misc]` says so.
class RequestSettings(_model_of(Request)):  # type: ignore[misc]
    """What every simulated user sends: the scenario keys of `settings.Request`."""

    @field_validator("ca_bundle")
    @classmethod
    def _ca_bundle_exists(cls, v: str, info: ValidationInfo) -> str:
        return v and _resolve_file(v, info, "ca_bundle")

    @field_validator("prompts")
    @classmethod
    def _prompts_exist(cls, v: str, info: ValidationInfo) -> str:
        return v and _checked_file(v, info, "prompts", load_prompts)

    @field_validator("categories", mode="before")
    @classmethod
    def _mix_text(cls, v: Any) -> str:
        if v is None or v == "":
            return ""
        try:
            return CategoryMix.parse(v).text()
        except UserError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v):
            raise ValueError(
                f"{v!r} is not an environment variable name; give the NAME of the variable "
                "holding the key, never the key itself"
            )
        return v

    @model_validator(mode="after")
    def _joint(self) -> RequestSettings:
        try:
            if self.prompts and self.prompt_format != prompt_sets.AUTO:  # the file as that format
                load_prompts(self.prompts, self.prompt_format)
            if self.categories and not self.prompt_tokens:
                CategoryMix.parse(self.categories).deal(
                    load_prompts(self.prompts or None, self.prompt_format))
        except UserError as exc:
            raise ValueError(str(exc)) from None
        return _jointly(self, Request)


class SimArm(_model_of(Simulator)):  # type: ignore[misc]
    """A built-in simulated server started by the runner: `settings.Simulator`'s keys,
    whether it writes its trace, and an adaptive arm's schedule as data."""

    spec: SimSpec = Field(description=(  # `specload sim` takes on by default; an arm says
        "speculative decoding on, off, or by a batch-size schedule: the one key a `sim:` "
        "arm must give"))
    trace: bool = Field(True, description="write the server's ground truth for every "
                        "request (server_trace.jsonl)")
    _flavor = field_validator("flavor")(lambda v: _registered(v, engines.sim_flavors()))
    adaptive_schedule: list[tuple[int, int, int]] | None = Field(None, description=(
        "spec schedule: k per batch size, vLLM's form [[lo, hi, k], ...] (default: the "
        "profile's)"))

    @model_validator(mode="before")
    @classmethod
    def _adaptive_word(cls, data: Any) -> Any:
        """`spec: adaptive` is the flavour's engine's own controller; with
        `adaptive_schedule` it is a manifest's older word for `schedule`."""
        if (isinstance(data, dict) and data.get("spec") == "adaptive"
                and data.get("adaptive_schedule") is not None):
            return {**data, "spec": "schedule"}
        return data

    _schedule_ok = field_validator("adaptive_schedule")(
        lambda v: _no_problems(v, schedule_problems))

    @field_validator("tls_cert", "tls_key")
    @classmethod
    def _tls_files(cls, v: str | None, info: ValidationInfo) -> str | None:
        return None if v is None else _resolve_file(v, info, info.field_name or "tls")

    @model_validator(mode="after")
    def _tls_pair(self) -> SimArm:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("tls_cert and tls_key go together")
        if self.adaptive_schedule is not None and self.spec != "schedule":
            raise ValueError("adaptive_schedule needs spec: schedule")
        try:
            adaptive_controller(flavor_named(self.flavor), self.spec)
        except SimConfigError as exc:
            raise ValueError(f"{exc}; spec: schedule runs k by batch size") from None
        return self

    def settings(self) -> Simulator:
        """The arm's `specload sim` settings (its files' paths resolved)."""
        return from_attributes(Simulator, self)

    def extra_args(self) -> list[str]:
        """`specload sim` options beyond its settings: the adaptive schedule."""
        if self.adaptive_schedule is None:
            return []
        return ["--adaptive-schedule", json.dumps(self.adaptive_schedule)]

    _spec_word = field_validator("spec", mode="before")(_yaml_bool_to_spec)

    @field_validator("profile")
    @classmethod
    def _profile_known(cls, v: str, info: ValidationInfo) -> str:
        if v in BUILTIN_PROFILES:
            return v
        if v.endswith((".yaml", ".yml")) or "/" in v:
            return _resolve_file(v, info, "profile")
        raise ValueError(
            f"unknown profile {v!r}; use one of {', '.join(BUILTIN_PROFILES)} or a YAML path"
        )

    @field_validator("faults")
    @classmethod
    def _faults_shape(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for f in v:
            try:
                parse_fault(f)
            except SimConfigError:
                raise ValueError(
                    f"fault {f!r} must look like KIND:FRACTION[:PARAM], e.g. cut:0.1:20, with "
                    f"KIND one of {', '.join(FAULT_KINDS)}, 0 <= FRACTION <= 1 and PARAM >= 0"
                ) from None
        return v


# the workload kinds whose contexts are compared: closed-loop users of synthetic prompts
CONTEXT_KINDS = ("users",)


def _length_text(v: Any) -> str:
    """A prompt length as `request.prompt_tokens` takes it, checked."""
    text = str(v).strip()
    try:
        LengthSpec.parse(text).check()
    except LengthError as exc:
        raise ValueError(f"prompt length {exc}") from None
    return text


def _context_of(arm: Any) -> Any:
    return arm.context if isinstance(arm, Arm) else \
        arm.get("context") if isinstance(arm, dict) else None


def _at_context(arm: Any, length: str | None) -> Any:
    """A raw or validated arm at one context (None: as it is)."""
    if length is None or not isinstance(arm, dict | Arm):
        return arm
    if isinstance(arm, Arm):
        return arm.with_context(length)
    if not isinstance(arm.get("name"), str):
        return arm  # its name's own check says why (a bare `on` is YAML's True)
    return {**arm, "name": f"{arm.get('name')}-ctx{context_label(length)}", "context": length}


def context_label(length: str) -> str:
    """A prompt length as it appears in an arm's name: `8192`, `uniform-400-600`."""
    return length.replace(":", "-")


class CommandArm(_Strict):
    """A server the runner starts and stops with shell commands."""

    start: str = Field(min_length=1, description=(
        "the shell line that starts the server (its own process group; `{cpus}`, "
        "`{ncpus}`, `{k}` and `{acceptance}` filled in)"))
    stop: str | None = Field(None, description=(
        "a shell line run to stop it, before its process group is stopped (SIGTERM, "
        "SIGKILL after `stop_timeout_s`)"))
    base_url: str = Field(description="where the started server answers")
    ready_url: str | None = Field(None, description=(
        "polled until it answers 2xx (default: `/health`, then `/v1/models`)"))
    ready_timeout_s: float = Field(600.0, gt=0, description="how long it may take to be ready")
    stop_timeout_s: float = Field(60.0, gt=0, description=(
        "how long it may take to stop before it is killed"))
    restart_on_exit: int = Field(1, ge=0, description=(
        "a server that exits during a rung is started again this many times, each time "
        "repeating its rung (0: the arm fails, to be resumed)"))
    verify_command: str | None = Field(None, description=(
        "the verification arm's start line: `start` with the recommended setting in its "
        "engine's placeholder (docs/measurement.md)"))
    cpus: str | None = Field(None, description=(
        "the CPUs this server runs on (a Linux CPU list, `0` or `0-3`), over "
        "`placement`"))
    _cpus = field_validator("cpus")(lambda v: _cpu_list(v))

    @field_validator("verify_command")
    @classmethod
    def _verify_placeholders(cls, v: str | None) -> str | None:
        placeholders = engines.verify_placeholders()
        if v is not None and not any(p in v for p in placeholders):
            raise ValueError(f"verify_command uses none of {', '.join(placeholders)}: "
                             "it would start the server without the recommended setting")
        return v

    _urls = field_validator("base_url", "ready_url")(
        lambda v: None if v is None else _check_url(v)
    )


class PrometheusSource(_Strict):
    """A Prometheus server that scrapes an arm's replicas, and which series are theirs."""

    url: str = Field(description="the Prometheus server (its HTTP API: `/api/v1/query`)")
    selector: str = Field("", description=(
        "label matchers of the engine's series, e.g. `job=\"vllm\"` (default: every "
        "series of the engines' names)"))
    _url = field_validator("url")(_check_url)


class Arm(_Strict):
    """One server under test; exactly one of `sim`, `command`, `url`."""

    name: str = Field(description="the arm's name, also its folder in the run")
    sim: SimArm | None = Field(None, description=(
        "a simulated server the runner starts (its keys: Simulated servers, below)"))
    command: CommandArm | None = Field(None, description=(
        "a server the runner starts and stops with shell commands (Command arms, below)"))
    url: str | None = Field(None, description="a server that is already running")
    spec: Spec | None = Field(None, description=(
        "`on`, `off`, `schedule` (k by batch size, set by the start line) or `adaptive` "
        "(the engine's own controller, `specload engines`): the arm's speculation"))
    k: Annotated[int, Field(ge=0)] | list[Annotated[int, Field(ge=1, le=16)]] | None = Field(
        None, description="the draft length; a list runs one arm per k (`<name>-k<k>`)")
    acceptance: (Annotated[float, Field(ge=1, le=17)]
                 | list[Annotated[float, Field(ge=1, le=17)]] | None) = Field(
        None, description=(
            "the mean acceptance length the server is set to (the sim's, or the engine's "
            "benchmarking knob through `{acceptance}`); a list runs one arm per length"))
    context: str | None = Field(None, description=(
        "the prompt length its requests are sent with, as `request.prompt_tokens` takes "
        "it (the scenario's `contexts:` sets it on each arm it expands)"))
    role: Role | None = Field(None, description=(
        "`spec_on`, `spec_off` or `verify` (default: from `spec`)"))
    engine: str | None = Field(None, description=(
        "the engine it serves (`specload engines`; default: from the start command or "
        "the sim flavour)"))
    _engine = field_validator("engine")(lambda v: _registered(v, engines.ids()))
    engine_version: str | None = Field(None, description=(
        "the engine's version (`0.33.1`): which form of a setting it takes, e.g. whether "
        "vLLM's file may hold a context grid"))
    metrics_url: str | list[str] | None = Field(None, description=(
        "its Prometheus exposition (default: `/metrics` of its URL); a list: one per "
        "replica behind its URL, their series combined"))
    prometheus: PrometheusSource | None = Field(None, description=(
        "read its engine's series from a Prometheus server instead (`url`, `selector`)"))
    ready_url: str | None = Field(None, description=(
        "polled until it answers 2xx (default: `/health`, then `/v1/models`)"))
    stall_after_s: float = Field(180.0, gt=0, description=(
        "a server that streams no token for this long while requests are in flight, "
        "and does not answer its health route, has stalled: the rung ends so"))

    _spec_word = field_validator("spec", mode="before")(_yaml_bool_to_spec)
    _context = field_validator("context", mode="before")(
        lambda v: None if v is None else _length_text(v))
    _urls = field_validator("url", "ready_url")(
        lambda v: None if v is None else _check_url(v)
    )
    _metrics_urls = field_validator("metrics_url")(
        lambda v: [_check_url(u) for u in v] if isinstance(v, list) else
        None if v is None else _check_url(v))

    _name = field_validator("name")(lambda v: _folder_name(v, "arm name"))

    @property
    def metrics_urls(self) -> list[str]:
        """The /metrics URLs given (none: its URL's own)."""
        return [self.metrics_url] if isinstance(self.metrics_url, str) else \
            list(self.metrics_url or [])

    @model_validator(mode="after")
    def _one_metrics_source(self) -> Arm:
        if self.prometheus is not None and self.metrics_url is not None:
            raise ValueError("metrics_url and prometheus both say where its series are: "
                             "give one")
        if isinstance(self.metrics_url, list) and not self.metrics_url:
            raise ValueError("metrics_url: an empty list (leave it out for `/metrics` of "
                             "its URL)")
        return self

    @model_validator(mode="after")
    def _k_list_fits(self) -> Arm:
        if not isinstance(self.k, list):
            return self
        if not self.k or len(set(self.k)) != len(self.k):
            raise ValueError("a k list needs distinct draft lengths, e.g. [1, 2, 3, 5]")
        if self.url:
            raise ValueError("a k list needs a sim or command arm (a url arm cannot "
                             "change its server's k)")
        if self.command and K_PLACEHOLDER not in self.command.start:
            raise ValueError(f"a k list on a command arm needs {K_PLACEHOLDER} in "
                             "command.start")
        if self.sim and (self.sim.spec != "on" or self.sim.k is not None):
            raise ValueError("a k list on a sim arm needs sim.spec: on and no sim.k")
        return self

    @model_validator(mode="after")
    def _acceptance_list_fits(self) -> Arm:
        if not isinstance(self.acceptance, list):
            return self
        if not self.acceptance or len(set(self.acceptance)) != len(self.acceptance):
            raise ValueError("an acceptance list needs distinct mean acceptance lengths, e.g. "
                             "[2.0, 2.5, 3.0]")
        if isinstance(self.k, list):
            raise ValueError("a k list and an acceptance list: give one of them")
        if self.url:
            raise ValueError("an acceptance list needs a sim or command arm (a url arm "
                             "cannot change its server's acceptance)")
        if self.command and not any(p in self.command.start for p in (
                engines.ACCEPTANCE, engines.ACCEPTED_DRAFTS)):
            raise ValueError(f"an acceptance list on a command arm needs {engines.ACCEPTANCE} "
                             f"(or {engines.ACCEPTED_DRAFTS}) in command.start, at the "
                             "engine's knob (docs/measurement.md: the acceptance map)")
        if self.sim and (self.sim.spec != "on" or self.sim.acceptance_length is not None):
            raise ValueError("an acceptance list on a sim arm needs sim.spec: on and no "
                             "sim.acceptance_length")
        return self

    @model_validator(mode="before")
    @classmethod
    def _verify_word(cls, data: Any) -> Any:
        """A verification arm runs a schedule: `adaptive` is an older manifest's word."""
        if isinstance(data, dict) and data.get("role") == "verify" and \
                data.get("spec") == "adaptive":
            return {**data, "spec": "schedule"}
        return data

    @model_validator(mode="after")
    def _adaptive_fits(self) -> Arm:
        """An arm on an engine's own adaptive mode: an engine that has one, turned on by
        the start line, in a set-up it runs (`engines.entry.AdaptiveMode`)."""
        if self.spec != "adaptive" or self.sim is not None:
            return self
        found, _ = engines.resolve_engine(self.model_dump(mode="json"))
        engine = engines.REGISTRY.get(found or "")
        if engine is None:
            if self.command is None:
                return self  # a url arm of an unnamed engine: nothing to check
            raise ValueError("spec: adaptive needs the engine (`engine:`) to know its "
                             "adaptive mode")
        if engine.adaptive is None:
            having = [e.id for e in engines.REGISTRY.values() if e.adaptive is not None]
            raise ValueError(f"spec: adaptive: {engine.name} has no adaptive mode of its own "
                             f"(engines with one: {', '.join(having)}); spec: schedule or on")
        if self.command is not None:
            start = self.command.start
            problems = engine.adaptive.problems(start, parse_command(start).method)
            if problems:
                raise ValueError(f"spec: adaptive on {engine.name}: " + "; ".join(problems))
        return self

    @model_validator(mode="after")
    def _one_server(self) -> Arm:
        given = [k for k in ("sim", "command", "url") if getattr(self, k) is not None]
        if len(given) != 1:
            what = "none" if not given else " and ".join(given)
            raise ValueError(
                f"an arm needs exactly one server: `sim`, `command` or `url` (got {what})"
            )
        return self

    @property
    def kind(self) -> Literal["sim", "command", "url"]:
        return "sim" if self.sim else "command" if self.command else "url"

    @property
    def spec_mode(self) -> str | None:
        return self.sim.spec if self.sim else self.spec

    @property
    def draft_k(self) -> int | None:
        if self.sim and self.sim.k is not None:
            return self.sim.k
        return self.k if isinstance(self.k, int) else None

    def with_k(self, k: int) -> Arm:
        """This arm at one draft length of its `k` list: `<name>-k<k>`, sim `-k`, `{k}`."""
        update: dict[str, Any] = {"name": f"{self.name}-k{k}", "k": k}
        if self.sim:
            update["sim"] = self.sim.model_copy(update={"k": k})
        if self.command:
            update["command"] = self.command.model_copy(
                update={"start": self.command.start.replace(K_PLACEHOLDER, str(k))})
        return self.model_copy(update=update)

    def with_acceptance(self, length: float) -> Arm:
        """This arm at one mean acceptance length of its list: `<name>-a<length>`, the
        sim's `acceptance_length`, `{acceptance}` in the start command."""
        update: dict[str, Any] = {"name": f"{self.name}-a{length:g}", "acceptance": length}
        if self.sim:
            update["sim"] = self.sim.model_copy(update={"acceptance_length": length})
        if self.command:
            update["command"] = self.command.model_copy(update={
                "start": engines.fill_acceptance(self.command.start, length)})
        return self.model_copy(update=update)

    def with_context(self, length: str) -> Arm:
        """This arm at one prompt length of the scenario's `contexts`:
        `<name>-ctx<length>` (a distribution's colons as dashes)."""
        return self.model_copy(update={"name": f"{self.name}-ctx{context_label(length)}",
                                       "context": length})

    @property
    def target_acceptance(self) -> float | None:
        """The mean acceptance length the arm's server is set to, if it is."""
        if self.sim and self.sim.acceptance_length is not None:
            return self.sim.acceptance_length
        return self.acceptance if isinstance(self.acceptance, float | int) else None

    @property
    def arm_role(self) -> str:
        if self.role:
            return self.role
        return {"on": "spec_on", "off": "spec_off"}.get(self.spec_mode or "", "other")


class Slo(_Strict):
    """Latency objectives a rung must meet for its throughput to count as goodput."""

    ttft_p99_ms: float | None = Field(None, gt=0, description="the TTFT p99 a rung must meet")
    tpot_p99_ms: float | None = Field(None, gt=0, description="the TPOT p99 a rung must meet")

    @model_validator(mode="after")
    def _at_least_one(self) -> Slo:
        if self.ttft_p99_ms is None and self.tpot_p99_ms is None:
            raise ValueError("give ttft_p99_ms, tpot_p99_ms or both (milliseconds)")
        return self


class Placement(_Strict):
    """Which CPUs of this machine the servers it starts and the load processes run on
    (Linux CPU lists); `placement: apart` splits the usable CPUs between them
    (`runner/placement.py`)."""

    apart: bool = Field(False, description=(
        "`placement: apart`: the load processes on the last usable CPUs, the servers on "
        "the rest"))
    servers: str | None = Field(None, description="the servers' CPUs (a Linux CPU list)")
    load: str | None = Field(None, description="the load processes' CPUs (a Linux CPU list)")
    _cpus = field_validator("servers", "load")(lambda v: _cpu_list(v))

    @model_validator(mode="before")
    @classmethod
    def _apart(cls, v: Any) -> Any:
        if v == APART:
            return {"apart": True}
        if isinstance(v, str):
            raise ValueError(f"expected {APART} or {{servers: CPU list, load: CPU list}}, "
                             f"got {v!r}")
        return v

    @model_validator(mode="after")
    def _one_way(self) -> Placement:
        if self.apart and (self.servers or self.load):
            raise ValueError("placement: give apart or CPU lists, not both")
        return self


class Distributed(_Strict):
    """Locust master/worker mode: the runner starts a master, workers connect to it."""

    workers: int = Field(ge=1, description="how many worker processes the master waits for")
    master_bind_host: str = Field("127.0.0.1", description="where the master listens")
    master_bind_port: int = Field(5557, ge=1, le=65535, description="the master's port")
    workers_wait_s: int = Field(300, ge=1, description="how long it waits for the workers")


class Workload(_model_of(SettingsWorkload)):  # type: ignore[misc]
    """What the clients do: closed-loop users, chat sessions, or open-loop arrivals.

    The keys of `settings.Workload` (think time, turns, the arrival process...), the
    kind, and an open workload's rate ladder.
    """

    # the kinds' names, a tuple read from `workload_kinds` at import
    kind: Literal[NAMES] = USERS.name  # type: ignore[valid-type]
    rates: list[float] | None = None
    steps: list[int] | None = None
    speed: list[float] | None = None

    _steps_ok = field_validator("steps")(lambda v: _no_problems(v, validate_steps))
    _rates_ok = field_validator("rates")(lambda v: _no_problems(v, validate_rates))
    _speeds_ok = field_validator("speed")(lambda v: _no_problems(v, validate_speeds))

    @field_validator("trace")
    @classmethod
    def _trace_reads(cls, v: str, info: ValidationInfo) -> str:
        if not v:
            return v
        fmt = info.data.get("trace_format", TRACE_AUTO)
        return _checked_file(v, info, "trace", lambda path: load_trace(path, fmt))

    @field_validator("conversations")
    @classmethod
    def _conversations_exist(cls, v: str, info: ValidationInfo) -> str:
        if v == "builtin":
            return v
        return _checked_file(v, info, "conversations", load_conversations)

    @model_validator(mode="after")
    def _keys_fit_kind(self) -> Workload:
        # a key counts as given when it holds more than its default: a manifest's dump
        # writes every key
        defaults = {k: f.default for k, f in type(self).model_fields.items()}
        given = {k for k in self.model_fields_set if getattr(self, k) != defaults[k]}
        kind = KINDS[self.kind]
        stray = [f"`{k}` is for {kinds_taking(k)}" for k in workload_keys()
                 if k in given and k not in kind.keys_for(self.unit)]
        if stray:
            raise ValueError("; ".join(stray))
        axis = kind.axis
        if axis.workload_key and not getattr(self, axis.workload_key):
            raise ValueError(f"kind: {self.kind} needs `{axis.workload_key}`, "
                             f"{axis.levels_help}")
        if kind == TRACE:
            self.replayed()  # the window holds requests
        return _jointly(self, SettingsWorkload)

    def replayed(self) -> Trace:
        """A trace workload's window of its trace (read again: a scenario holds no
        trace); raises ValueError when the file is gone or the window is empty."""
        if not self.trace:
            raise ValueError("kind: trace needs `trace`, the trace file to replay")
        try:
            return load_trace(self.trace, self.trace_format).window(
                self.start_s, self.duration_s or None)
        except UserError as exc:
            raise ValueError(str(exc)) from None

    @property
    def holds_sessions(self) -> bool:
        return KINDS[self.kind].holds_sessions(self.unit)


class SearchSettings(_model_of(Search)):  # type: ignore[misc]
    """`ladder: auto`: the crossover search's range and budget (`settings.Search`)."""

    @model_validator(mode="after")
    def _range(self) -> SearchSettings:
        if self.max_concurrency is None:
            raise ValueError("max_concurrency is required: the highest C the search may run")
        if self.max_concurrency <= self.min_concurrency:
            raise ValueError(f"max_concurrency ({self.max_concurrency}) must be more than "
                             f"min_concurrency ({self.min_concurrency})")
        return self


class _Ladder(_Strict):
    name: str = Field(description="the scenario's name, also its folder under the output")
    description: str = Field("", description="a line shown in the report")
    ladder: list[int] | Literal["auto"] = Field(
        default_factory=lambda: list(DEFAULT_LADDER), description=(
            "the user counts of the rungs, or `auto`: the crossover search plans them"))
    search: SearchSettings | None = Field(None, description=(
        "the search's bounds, with `ladder: auto` (Crossover search, below)"))


class Scenario(_model_of(Windows, base=_Ladder)):  # type: ignore[misc]
    """A validated scenario file: its name and ladder, the rungs' windows
    (`settings.Windows`) and the rest, in this order (errors are listed in it)."""
    repeats: int = Field(1, ge=1, le=100, description="how many times every arm runs the ladder")
    tiebreak_repeats: int = Field(0, ge=0, le=10, description=(
        "while the repeats' verdicts disagree, up to this many more rounds of every arm"))
    interleave: bool = Field(False, description=(
        "run the arms rung by rung, every arm's server up for the whole repeat, so a "
        "machine's drift moves both arms of a rung together"))
    processes: int | None = Field(None, description=(
        "Locust worker processes on this machine, as `--processes N` (default: one "
        "process)"))
    distributed: Distributed | None = Field(None, description=(
        "Locust master/worker mode across machines (Distributed, below)"))
    placement: Placement | None = Field(None, description=(
        "the CPUs of the servers started here and of the load processes (Placement, "
        "below)"))
    request: RequestSettings = Field(default_factory=RequestSettings, description=(
        "what every user sends (Requests, below)"))
    workload: Workload = Field(default_factory=Workload, description=(
        "what the clients do (Workload, below)"))
    slo: Slo | None = Field(None, description=(
        "latency objectives: the crossover on SLO goodput too (SLO, below)"))
    verify: bool | None = Field(None, description=(
        "run a verification arm with the recommended setting after the pair (default: "
        "yes when the spec-on arm is simulated)"))
    contexts: list[str] | None = Field(None, description=(
        "prompt lengths to compare the arms at (N tokens, or a distribution as "
        "`request.prompt_tokens` takes it): every arm runs once per length, as "
        "`<arm>-ctx<length>`, with synthetic prompts of that length"))
    context_mix: dict[str, float] | None = Field(None, description=(
        "your traffic's share of each of `contexts` (`{512: 0.7, 8192: 0.3}`): the "
        "batch-size schedule for engines without a context axis follows it (default: "
        "equal shares)"))
    context_buckets: list[Annotated[int, Field(gt=0)]] | None = Field(None, description=(
        "a mixed-length run's context buckets, by their inner edges in prompt tokens "
        "(`[1024, 4096]`; each rounded to a power of two): speedup and C* per bucket "
        "(default: the traffic's terciles)"))
    arms: Annotated[list[Arm], Field(min_length=1, description=(
        "the servers compared (Arms, below)"))]

    @field_validator("arms")
    @classmethod
    def _expand(cls, arms: list[Arm]) -> list[Arm]:
        """An arm with a k list becomes one arm per k, one with an acceptance list one arm
        per mean acceptance length; names must stay unique."""
        out = [x for a in arms for x in
               ([a.with_k(k) for k in a.k] if isinstance(a.k, list) else
                [a.with_acceptance(x) for x in a.acceptance]
                if isinstance(a.acceptance, list) else [a])]
        seen = [a.name for a in out]
        clash = sorted({n for n in seen if seen.count(n) > 1})
        if clash:
            raise ValueError(f"arm names clash after expanding k or acceptance lists: "
                             f"{', '.join(clash)}")
        return out

    _name = field_validator("name")(lambda v: _folder_name(v, "scenario name"))

    @field_validator("contexts", mode="before")
    @classmethod
    def _contexts_ok(cls, v: Any) -> Any:
        if v is None:
            return v
        if not isinstance(v, list) or not v:
            raise ValueError("expected a list of prompt lengths, e.g. [512, 2048, 8192]")
        lengths = [_length_text(x) for x in v]
        if len(set(lengths)) != len(lengths):
            raise ValueError("contexts: the prompt lengths must differ")
        return sorted(lengths, key=lambda x: LengthSpec.parse(x).mean)

    @model_validator(mode="before")
    @classmethod
    def _expand_contexts(cls, data: Any) -> Any:
        """Each arm not yet at a context becomes one arm per `contexts` length (before
        its own lists expand: `<name>-ctx<length>-k<k>`)."""
        if not isinstance(data, dict) or not isinstance(data.get("arms"), list):
            return data
        try:
            lengths = cls._contexts_ok(data.get("contexts"))
        except ValueError:
            return data  # the field's own check says why
        if not lengths:
            return data
        arms = [_at_context(a, c) for a in data["arms"] for c in
                (lengths if _context_of(a) is None else [None])]
        return {**data, "arms": arms}

    @model_validator(mode="after")
    def _contexts_fit(self) -> Scenario:
        if not self.contexts:
            return self
        req, kind = self.request, self.workload_kind
        if kind.name not in CONTEXT_KINDS:
            raise ValueError(f"contexts: {kind.a_run} sends its own prompts; contexts "
                             f"vary synthetic prompts of kind {' or '.join(CONTEXT_KINDS)}")
        clash = [k for k in ("prompt_tokens", "prompts", "categories") if getattr(req, k)]
        if clash:
            raise ValueError(f"contexts set each arm's prompt length: leave out "
                             f"request.{', request.'.join(clash)}")
        if self.verify:
            raise ValueError("verify: not with contexts (a verification arm runs one "
                             "schedule; the contexts' grid is in recommended/)")
        return self

    @field_validator("context_mix", mode="before")
    @classmethod
    def _mix_ok(cls, v: Any, info: ValidationInfo) -> Any:
        if v is None:
            return v
        if not isinstance(v, dict) or not v:
            raise ValueError("expected each context's share, e.g. {512: 0.7, 8192: 0.3}")
        contexts = info.data.get("contexts") or []
        mix = {_length_text(k): share for k, share in v.items()}
        stray = [k for k in mix if k not in contexts]
        if stray:
            raise ValueError(f"{', '.join(stray)}: not among contexts "
                             f"({', '.join(contexts) or 'none given'})")
        if any(not isinstance(x, int | float) or x < 0 for x in mix.values()) \
                or not sum(mix.values()):
            raise ValueError("shares must be numbers of 0 or more, not all 0")
        return mix

    def request_for(self, arm: str) -> RequestSettings:
        """The request settings of one arm's users: its context's prompt length."""
        context = next((a.context for a in self.arms if a.name == arm), None)
        if context is None:
            return self.request
        return self.request.model_copy(update={"prompt_tokens": context})

    @field_validator("ladder", mode="before")
    @classmethod
    def _ladder_ok(cls, v: Any) -> Any:
        if isinstance(v, str) and v != AUTO:
            v = parse_ladder(v)
        elif not isinstance(v, list | str):
            raise ValueError(f"expected a list of user counts, or auto, got {v!r}")
        if isinstance(v, list):
            problems = validate_ladder(v)
            if problems:
                raise ValueError("; ".join(problems))
        return v

    @field_validator("processes")
    @classmethod
    def _processes_ok(cls, v: int | None) -> int | None:
        if v is not None and v != -1 and v < 1:
            raise ValueError(f"processes must be 1 or more (or -1 for one per core), got {v}")
        return v

    @model_validator(mode="after")
    def _measure_bounds(self) -> Scenario:
        if self.max_measure_s and self.max_measure_s < self.measure_s:
            raise ValueError(f"max_measure_s ({self.max_measure_s:g}) must be at least "
                             f"measure_s ({self.measure_s:g})")
        return self

    @model_validator(mode="after")
    def _ladder_or_rates(self) -> Scenario:
        key = self.workload_kind.axis.workload_key
        if key and "ladder" in self.model_fields_set:
            raise ValueError(f"{self.workload_kind.a_run} steps `workload.{key}`, not "
                             "`ladder`: leave `ladder` out")
        return self

    @model_validator(mode="after")
    def _search_with_auto(self) -> Scenario:
        if self.ladder == AUTO and self.search is None:
            raise ValueError("ladder: auto needs `search:` with at least max_concurrency "
                             "(the highest C the search may run)")
        if self.search is not None and self.ladder != AUTO:
            raise ValueError("`search:` plans the ladder: set `ladder: auto` (or leave "
                             "`search:` out)")
        return self

    @property
    def searching(self) -> bool:
        """The rungs are the crossover search's (`ladder: auto`)."""
        return self.search is not None

    @property
    def workload_kind(self) -> WorkloadKind:
        return KINDS[self.workload.kind]

    @property
    def levels(self) -> list[float] | list[int]:
        """What the rungs step: the workload's levels (an open workload's rates), else the
        ladder's user or session counts (a search's: its coarse pass until the runner
        sets the rungs planned so far)."""
        key = self.workload_kind.axis.workload_key
        if key:
            return list(getattr(self.workload, key))
        if self.ladder == AUTO:
            return coarse(self.search)
        return list(self.ladder)

    @property
    def nominal_rung_s(self) -> float:
        """A rung's planned length: its warmup and measure window, or a load step's."""
        if self.workload_kind.whole_runs:
            return self.workload.step_s
        if self.workload_kind == TRACE:
            return statistics.fmean(self.trace_rung_s(s) for s in self.levels)
        return self.warmup_s + self.measure_s

    def trace_rung_s(self, speed: float) -> float:
        """A trace replay's rung at `speed`: its warmup, then the window at that speed."""
        return self.warmup_s + self.trace_window.length_s / speed

    @functools.cached_property
    def trace_window(self) -> Trace:
        """A trace workload's window of its trace, read once."""
        return self.workload.replayed()

    @property
    def rung_bound_s(self) -> float:
        """The longest one rung may take (warmup in full, measure window at its cap, the
        cap stretched as far as it may be: `ladder.window_cap`; a load step: its length)."""
        if self.workload_kind.whole_runs:
            return self.workload.step_s
        if self.workload_kind == TRACE:  # the slowest speed's window, fixed in time
            return self.warmup_s + self.trace_window.length_s / min(self.levels)
        return self.warmup_s + STRETCH_LIMIT * self.max_window_s

    @property
    def max_window_s(self) -> float:
        """A measure window's cap, `max_measure_s` (0: four times `measure_s`)."""
        return window_cap_s(self.measure_s, self.max_measure_s or None)

    @model_validator(mode="after")
    def _one_load_mode(self) -> Scenario:
        if self.distributed is not None and self.processes not in (None, 1):
            raise ValueError(
                "give either `processes` (one machine) or `distributed` (master and workers)"
            )
        return self

    @model_validator(mode="after")
    def _tiebreak_needs_repeats(self) -> Scenario:
        if self.tiebreak_repeats and self.repeats < 2:
            raise ValueError(f"tiebreak_repeats ({self.tiebreak_repeats}) breaks ties between "
                             f"repeats: set repeats to 2 or more (it is {self.repeats})")
        return self

    @model_validator(mode="after")
    def _interleave_local(self) -> Scenario:
        if self.interleave and self.distributed is not None:
            raise ValueError("interleave: not with `distributed` (its workers would have to "
                             "rejoin at every rung); run the arms one after the other")
        if self.interleave and self.workload_kind.whole_runs:
            raise ValueError(f"interleave: not with kind: {self.workload.kind} (each step is "
                             "measured from the one before it, in one run)")
        return self

    @property
    def verify_default(self) -> bool:
        """`verify`, or when not given: whether a simulated spec-on arm has a spec-off arm
        to be compared with (in a workload whose crossover gives a schedule)."""
        if self.verify is not None:
            return self.verify
        if self.contexts:
            return False
        roles = {a.arm_role for a in self.arms}
        return (self.workload_kind.gives_schedule and "spec_off" in roles
                and any(a.sim is not None and a.arm_role == "spec_on" for a in self.arms))

    @model_validator(mode="after")
    def _verify_runnable(self) -> Scenario:
        if not self.verify:
            return self
        on = [a for a in self.arms if a.arm_role == "spec_on"]
        if not on or not any(a.arm_role == "spec_off" for a in self.arms):
            raise ValueError("verify: true needs a spec-on and a spec-off arm")
        if on[0].command and not on[0].command.verify_command:
            raise ValueError(f"verify: true with a command arm needs command.verify_command "
                             f"in arm {on[0].name!r}")
        kind = self.workload_kind
        if not kind.gives_schedule:
            raise ValueError(f"verify: {kind.a_run} gives {kind.axis.crossover}, "
                             "not a schedule")
        return self

    def public_dict(self) -> dict[str, Any]:
        """The scenario as plain data for manifest.json (holds no secrets by design).

        A workload that lists its own levels (an open one's `workload.rates`) has no ladder,
        so none is written.
        """
        own = self.workload_kind.axis.workload_key
        return self.model_dump(mode="json", exclude={"ladder"} if own else None)


_MESSAGES = {
    "extra_forbidden": "unknown key; check its spelling and indentation",
    "missing": "required key is missing",
    "int_type": "expected a whole number",
    "int_parsing": "expected a whole number",
    "int_from_float": "expected a whole number",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "string_type": "expected a text value",
    "list_type": "expected a list",
    "model_type": "expected a mapping of keys",
    "model_attributes_type": "expected a mapping of keys",
    "too_short": "must not be empty",
    "string_too_short": "must not be empty",
}
# Pydantic's bound errors -> our wording; the bound comes from the error's context.
_BOUNDS = {
    "greater_than": ("gt", "must be more than"),
    "greater_than_equal": ("ge", "must be at least"),
    "less_than": ("lt", "must be less than"),
    "less_than_equal": ("le", "must be at most"),
}


def _key_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part not in ("function-after", "function-before"):
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def _describe(err: ErrorDetails) -> str:
    kind = err["type"]
    if kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        return "must be one of " + expected.replace("'", "").replace(" or ", ", ")
    if kind == "value_error":
        return str(err.get("ctx", {}).get("error", err["msg"]))
    if kind in _BOUNDS:
        key, words = _BOUNDS[kind]
        bound = err.get("ctx", {}).get(key)
        shown = f"{bound:g}" if isinstance(bound, int | float) else bound
        return f"{words} {shown}, got {err.get('input')!r}"
    base = _MESSAGES.get(kind, err["msg"])
    if kind in _MESSAGES and kind not in ("missing", "extra_forbidden"):
        base += f", got {err.get('input')!r}"
    if kind == "string_type" and isinstance(err.get("input"), bool):
        base += " (YAML reads bare on/off/yes/no as booleans: put the value in quotes)"
    return base


def _duplicate_names(raw: Any) -> list[str]:
    if not isinstance(raw, dict) or not isinstance(raw.get("arms"), list):
        return []
    seen: dict[str, int] = {}
    problems = []
    for i, arm in enumerate(raw["arms"]):
        name = arm.get("name") if isinstance(arm, dict) else None
        if not isinstance(name, str):
            continue
        if name in seen:
            problems.append(
                f"arms[{i}].name: duplicate arm name {name!r} (also arms[{seen[name]}]); "
                "every arm needs its own name"
            )
        else:
            seen[name] = i
    return problems


def parse_scenario(raw: Any, base_dir: Path, source: str = "scenario") -> Scenario:
    """Validate already-parsed YAML data; raises `UserError` listing every problem."""
    problems: list[str] = []
    scenario: Scenario | None = None
    if not isinstance(raw, dict):
        raise UserError(f"{source}: the top level must be a mapping with `name:` and `arms:`")
    try:
        scenario = Scenario.model_validate(raw, context={"base_dir": str(base_dir)})
    except ValidationError as exc:
        problems += [f"{_key_path(e['loc'])}: {_describe(e)}" for e in exc.errors()]
    problems += _duplicate_names(raw)
    if problems:
        listing = "\n  ".join(problems)
        raise UserError(f"{source}: {len(problems)} problem(s):\n  {listing}")
    assert scenario is not None
    return scenario


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario YAML file; raises `UserError` listing every problem."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise UserError(f"scenario file {str(p)!r} not found") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"scenario file {str(p)!r} cannot be read: {exc}") from exc
    try:
        raw = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{p}:{mark.line + 1}:{mark.column + 1}" if mark else str(p)
        raise UserError(f"{where}: YAML syntax error: {exc.problem or exc.context}") from exc
    except yaml.YAMLError as exc:
        raise UserError(f"{p}: YAML syntax error: {exc}") from exc
    return parse_scenario(raw, p.resolve().parent, source=str(p))


def _default_words(f: FieldInfo) -> str:
    """A field's default as the reference shows it."""
    if f.is_required():
        return "required"
    value = f.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        return "its section's defaults"
    if value in (None, ""):
        return "none"
    return f"`{str(value).lower() if isinstance(value, bool) else value}`"


def keys_reference() -> str:
    """A Markdown table per model of the scenario keys outside `settings`' declarations
    (those have their own tables): key, default and meaning, from each field's
    description (docs/settings.md holds it ahead of `settings.reference()`)."""
    windows = {d.name for d in declared(Windows)}
    sections: tuple[tuple[str, type[BaseModel], set[str]], ...] = (
        ("The scenario's top level", Scenario, windows), ("Arms: each of `arms:`", Arm, set()),
        ("Command arms: an arm's `command:`", CommandArm, set()),
        ("An arm's series from Prometheus: its `prometheus:`", PrometheusSource, set()),
        ("Placement: `placement:`", Placement, set()),
        ("Distributed: `distributed:`", Distributed, set()), ("SLO: `slo:`", Slo, set()))
    out: list[str] = []
    for title, model, skip in sections:
        out += [f"## {title}", "", "| key | default | meaning |", "|---|---|---|"]
        out += [f"| `{name}` | {_default_words(f)} | {f.description} |"
                for name, f in model.model_fields.items() if name not in skip]
        out.append("")
    return "\n".join(out)
