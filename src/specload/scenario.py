"""YAML scenario -> validated `Scenario`, with every problem reported at once.

A scenario names a ladder, its warmup and measure windows, the request settings the
Locust users send, how many load processes (or remote workers) drive the load, and a
list of arms. An arm is one server under test: a built-in simulated server
(`sim: {profile, spec, k}`), a server started and stopped by shell commands
(`command: {start, stop, base_url, ready_url, ready_timeout_s}`) or an already-running
base URL (`url:`); an arm may name its `engine:` (which the report's recommendation
follows), and `slo: {ttft_p99_ms, tpot_p99_ms}` makes the report recommend on goodput
within those latencies. `workload:` says what the clients do (docs/workloads.md):
`users` (closed loop, the default), `sessions` (multi-turn chat with think time, the
ladder counts sessions) or `open` (arrivals at the `rates` of a rate ladder).
`load_scenario` collects YAML syntax errors, unknown keys, wrong types, ladder
mistakes, duplicate arm names, bad URLs, missing files and prompt or conversation
files that do not parse into a single `UserError`, one line per problem, each prefixed with
its key path (`arms[1].sim.spec`).
Relative file paths (prompts, profile YAML) are resolved against the scenario's folder.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from specload.arrival_plan import DEFAULT_MAX_IN_FLIGHT, validate_rates
from specload.conversations import load_conversations
from specload.engines import Engine
from specload.errors import UserError
from specload.ladder import DEFAULT_LADDER, parse_ladder, validate_ladder
from specload.prompts import load_prompts
from specload.sim import SimConfigError
from specload.sim.faults import DEFAULT_PARAMS as FAULT_KINDS
from specload.sim.faults import parse_fault
from specload.sim.profile import builtin_names, schedule_problems
from specload.workload import Distribution, LengthError, LengthSpec, ThinkTime

BUILTIN_PROFILES = tuple(builtin_names())
SPEC_MODES = ("on", "off", "adaptive")
ARM_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

Spec = Literal["on", "off", "adaptive"]
Flavor = Literal["vllm", "sglang", "llamacpp", "llama-cpp-python", "tgi", "ollama"]
Role = Literal["spec_on", "spec_off", "verify", "other"]
# The placeholders of `command.verify_command` (filled by runner/verify.py) and of a
# command arm's start line in a multi-k study.
VERIFY_PLACEHOLDERS = ("{vllm_speculative_config}", "{sglang_adaptive_config}",
                       "{trtllm_config}")
K_PLACEHOLDER = "{k}"


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


def _distribution(v: Any, spec: type[Distribution]) -> str | None:
    """A distribution key (text, number or mapping) as its canonical text."""
    if v is None:
        return None
    if isinstance(v, bool):
        raise ValueError(f"expected a {spec.WHAT}, got {v!r}")
    if isinstance(v, dict):
        v = _length_from_mapping(v)
    try:
        return spec.parse(v).text()
    except LengthError as exc:
        raise ValueError(str(exc)) from None


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


class RequestSettings(_Strict):
    """What every simulated user sends; maps 1:1 onto the users' Locust options."""

    model: str | None = None
    max_tokens: int = Field(256, ge=1)
    min_tokens: int | None = Field(None, ge=0)
    ignore_eos: bool = False
    temperature: float = Field(0.0, ge=0.0)
    prompts: str | None = None
    seed: int = 0
    api_key_env: str | None = None  # the variable holding the key; None: api_key.DEFAULT_ENV
    request_timeout_s: float | None = Field(None, gt=0)
    failure_backoff_s: float | None = Field(None, ge=0)  # cap of the backoff; 0 turns it off
    request_id_header: str | None = None  # header name, or "off"
    ca_bundle: str | None = None  # HTTPS: CA certificates to trust
    insecure: bool = False  # HTTPS: do not verify certificates
    continuous_usage: bool = True  # ask for usage on every chunk (continuous_usage_stats)
    # synthetic workloads: lengths fixed or drawn per request (`LengthSpec` text, a whole
    # number, or a mapping like {kind: normal, mean: 1024, sd: 128})
    prompt_tokens: str | None = None
    output_tokens: str | None = None
    shared_prefix_tokens: int = Field(0, ge=0)

    _length = field_validator("prompt_tokens", "output_tokens", mode="before")(
        lambda v: _distribution(v, LengthSpec))

    @field_validator("ca_bundle")
    @classmethod
    def _ca_bundle_exists(cls, v: str | None, info: ValidationInfo) -> str | None:
        return None if v is None else _resolve_file(v, info, "ca_bundle")

    @field_validator("prompts")
    @classmethod
    def _prompts_exist(cls, v: str | None, info: ValidationInfo) -> str | None:
        return None if v is None else _checked_file(v, info, "prompts", load_prompts)

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v):
            raise ValueError(
                f"{v!r} is not an environment variable name; give the NAME of the variable "
                "holding the key, never the key itself"
            )
        return v

    @model_validator(mode="after")
    def _min_below_max(self) -> RequestSettings:
        if self.min_tokens is not None and self.min_tokens > self.max_tokens:
            raise ValueError(
                f"min_tokens ({self.min_tokens}) is larger than max_tokens ({self.max_tokens})"
            )
        return self


class SimArm(_Strict):
    """A built-in simulated server started by the runner."""

    profile: str = "seed-glm"
    spec: Spec
    k: int | None = Field(None, ge=1, le=16)
    seed: int = 0
    faults: list[str] = Field(default_factory=list)
    trace: bool = True  # ground truth for every sim arm: server_trace.jsonl
    flavor: Flavor = "vllm"
    data_parallel: int = Field(1, ge=1, le=64)
    slots: int | None = Field(None, ge=1)
    interrupt: bool | None = None
    reasoning_tokens: int = Field(0, ge=0)
    prefix_caching: bool | None = None  # None: the profile's (on)
    tls_cert: str | None = None
    tls_key: str | None = None
    # spec: adaptive: k per batch size, vLLM form [[lo, hi, k], ...] (default: the profile's)
    adaptive_schedule: list[tuple[int, int, int]] | None = None

    @field_validator("adaptive_schedule")
    @classmethod
    def _schedule_ok(cls, v: list[tuple[int, int, int]] | None
                     ) -> list[tuple[int, int, int]] | None:
        problems = schedule_problems(v) if v is not None else []
        if problems:
            raise ValueError("; ".join(problems))
        return v

    @field_validator("tls_cert", "tls_key")
    @classmethod
    def _tls_files(cls, v: str | None, info: ValidationInfo) -> str | None:
        return None if v is None else _resolve_file(v, info, info.field_name or "tls")

    @model_validator(mode="after")
    def _tls_pair(self) -> SimArm:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("tls_cert and tls_key go together")
        if self.adaptive_schedule is not None and self.spec != "adaptive":
            raise ValueError("adaptive_schedule needs spec: adaptive")
        return self

    def extra_args(self) -> list[str]:
        """`specload sim` options beyond profile, spec, k, seed, faults and trace."""
        args = ["--flavor", self.flavor, "--data-parallel", str(self.data_parallel),
                "--reasoning-tokens", str(self.reasoning_tokens)]
        if self.slots is not None:
            args += ["--slots", str(self.slots)]
        if self.interrupt is not None:
            args.append("--interrupt" if self.interrupt else "--no-interrupt")
        if self.prefix_caching is not None:
            args.append("--prefix-caching" if self.prefix_caching else "--no-prefix-caching")
        if self.tls_cert and self.tls_key:
            args += ["--tls-cert", self.tls_cert, "--tls-key", self.tls_key]
        if self.adaptive_schedule is not None:
            args += ["--adaptive-schedule", json.dumps(self.adaptive_schedule)]
        return args

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
    def _faults_shape(cls, v: list[str]) -> list[str]:
        for f in v:
            try:
                parse_fault(f)
            except SimConfigError:
                raise ValueError(
                    f"fault {f!r} must look like KIND:FRACTION[:PARAM], e.g. cut:0.1:20, with "
                    f"KIND one of {', '.join(FAULT_KINDS)}, 0 <= FRACTION <= 1 and PARAM >= 0"
                ) from None
        return v


class CommandArm(_Strict):
    """A server the runner starts and stops with shell commands."""

    start: str = Field(min_length=1)
    stop: str | None = None
    base_url: str
    ready_url: str | None = None
    ready_timeout_s: float = Field(600.0, gt=0)
    stop_timeout_s: float = Field(60.0, gt=0)
    # the start line of the verification arm: `start` with the recommended settings in
    # the VERIFY_PLACEHOLDERS (docs/measurement.md: the verification arm)
    verify_command: str | None = None

    @field_validator("verify_command")
    @classmethod
    def _verify_placeholders(cls, v: str | None) -> str | None:
        if v is not None and not any(p in v for p in VERIFY_PLACEHOLDERS):
            raise ValueError(f"verify_command uses none of {', '.join(VERIFY_PLACEHOLDERS)}: "
                             "it would start the server without the recommended setting")
        return v

    _urls = field_validator("base_url", "ready_url")(
        lambda v: None if v is None else _check_url(v)
    )


class Arm(_Strict):
    """One server under test; exactly one of `sim`, `command`, `url`."""

    name: str
    sim: SimArm | None = None
    command: CommandArm | None = None
    url: str | None = None
    spec: Spec | None = None
    # a list runs one arm per draft length (`<name>-k<k>`, Scenario._expand_k)
    k: Annotated[int, Field(ge=0)] | list[Annotated[int, Field(ge=1, le=16)]] | None = None
    role: Role | None = None
    engine: Engine | None = None
    metrics_url: str | None = None
    ready_url: str | None = None

    _spec_word = field_validator("spec", mode="before")(_yaml_bool_to_spec)
    _urls = field_validator("url", "metrics_url", "ready_url")(
        lambda v: None if v is None else _check_url(v)
    )

    _name = field_validator("name")(lambda v: _folder_name(v, "arm name"))

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

    @property
    def arm_role(self) -> str:
        if self.role:
            return self.role
        return {"on": "spec_on", "off": "spec_off"}.get(self.spec_mode or "", "other")


class Slo(_Strict):
    """Latency objectives a rung must meet for its throughput to count as goodput."""

    ttft_p99_ms: float | None = Field(None, gt=0)
    tpot_p99_ms: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _at_least_one(self) -> Slo:
        if self.ttft_p99_ms is None and self.tpot_p99_ms is None:
            raise ValueError("give ttft_p99_ms, tpot_p99_ms or both (milliseconds)")
        return self


class Distributed(_Strict):
    """Locust master/worker mode: the runner starts a master, workers connect to it."""

    workers: int = Field(ge=1)
    master_bind_host: str = "127.0.0.1"
    master_bind_port: int = Field(5557, ge=1, le=65535)
    workers_wait_s: int = Field(300, ge=1)


WorkloadKind = Literal["users", "sessions", "open"]
_SESSION_KEYS = ("conversations", "turns", "think_time")
_OPEN_KEYS = ("rates", "arrivals", "cv", "max_in_flight", "unit")


class Workload(_Strict):
    """What the clients do: closed-loop users, chat sessions, or open-loop arrivals.

    Unset keys take the load generator's defaults (think time lognormal, mean 5 s;
    every turn of a conversation; Poisson arrivals; at most 256 in flight).
    """

    kind: WorkloadKind = "users"
    # sessions (and open-loop sessions): the conversations, turns and think time
    conversations: str | None = None  # a ShareGPT .json/.jsonl file or "builtin"
    turns: str | None = None  # at most this many turns per session (a length spec)
    think_time: str | None = None  # seconds after each reply (a distribution spec)
    # open: the rate ladder and its arrival process
    rates: list[float] | None = None
    arrivals: Literal["poisson", "gamma"] | None = None
    cv: float | None = Field(None, gt=0)
    max_in_flight: int | None = Field(None, ge=1)
    unit: Literal["requests", "sessions"] | None = None

    _turns = field_validator("turns", mode="before")(lambda v: _distribution(v, LengthSpec))
    _think = field_validator("think_time", mode="before")(lambda v: _distribution(v, ThinkTime))

    @field_validator("conversations")
    @classmethod
    def _conversations_exist(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is None or v == "builtin":
            return v
        return _checked_file(v, info, "conversations", load_conversations)

    @field_validator("rates")
    @classmethod
    def _rates_ok(cls, v: list[float] | None) -> list[float] | None:
        problems = validate_rates(v) if v is not None else []
        if problems:
            raise ValueError("; ".join(problems))
        return v

    @model_validator(mode="after")
    def _keys_fit_kind(self) -> Workload:
        # a key counts as given when it holds a value: a manifest's dump writes every key
        given = {k for k in self.model_fields_set if getattr(self, k) is not None}
        sessions = self.holds_sessions
        stray = [f"`{k}` is for kind: sessions (or open with unit: sessions)"
                 for k in _SESSION_KEYS if k in given and not sessions]
        stray += [f"`{k}` is for kind: open" for k in _OPEN_KEYS
                  if k in given and self.kind != "open"]
        if stray:
            raise ValueError("; ".join(stray))
        if self.kind == "open" and not self.rates:
            raise ValueError("kind: open needs `rates`, the arrival rates per second, "
                             "e.g. [1, 2, 5]")
        if self.cv is not None and self.cv != 1.0 and self.arrivals != "gamma":
            raise ValueError("cv needs arrivals: gamma (Poisson arrivals have cv 1)")
        return self

    @property
    def holds_sessions(self) -> bool:
        return self.kind == "sessions" or (self.kind == "open" and self.unit == "sessions")

    @property
    def pool(self) -> int:
        return self.max_in_flight or DEFAULT_MAX_IN_FLIGHT


class Scenario(_Strict):
    """A validated scenario file."""

    name: str
    description: str = ""
    ladder: list[int] = Field(default_factory=lambda: list(DEFAULT_LADDER))
    warmup_s: float = Field(10.0, ge=0)  # at most: ends when the closed loop turned over
    measure_s: float = Field(30.0, gt=0)  # at least
    min_requests: int = Field(10, ge=0)  # completed requests that started in the window
    max_measure_s: float | None = Field(None, gt=0)  # at most (default 4 x measure_s)
    drain_s: float = Field(120.0, ge=0)  # after the last rung: let requests finish
    repeats: int = Field(1, ge=1, le=100)
    # run the arms rung by rung (C = 1 on every arm, then C = 2, ...), every arm's server
    # up for the whole repeat: a machine whose speed drifts over minutes moves both arms
    # of a rung together
    interleave: bool = False
    processes: int | None = None
    distributed: Distributed | None = None
    request: RequestSettings = Field(default_factory=RequestSettings)
    workload: Workload = Field(default_factory=Workload)
    slo: Slo | None = None
    # run a third arm with the recommended schedule after the spec-on/spec-off pair;
    # default: yes when the spec-on arm is simulated (`verify_default`)
    verify: bool | None = None
    arms: Annotated[list[Arm], Field(min_length=1)]

    @field_validator("arms")
    @classmethod
    def _expand_k(cls, arms: list[Arm]) -> list[Arm]:
        """An arm with a k list becomes one arm per k; names must stay unique."""
        out = [x for a in arms for x in
               ([a.with_k(k) for k in a.k] if isinstance(a.k, list) else [a])]
        seen = [a.name for a in out]
        clash = sorted({n for n in seen if seen.count(n) > 1})
        if clash:
            raise ValueError(f"arm names clash after expanding k lists: {', '.join(clash)}")
        return out

    _name = field_validator("name")(lambda v: _folder_name(v, "scenario name"))

    @field_validator("ladder", mode="before")
    @classmethod
    def _ladder_ok(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = parse_ladder(v)
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
        if self.max_measure_s is not None and self.max_measure_s < self.measure_s:
            raise ValueError(f"max_measure_s ({self.max_measure_s:g}) must be at least "
                             f"measure_s ({self.measure_s:g})")
        return self

    @model_validator(mode="after")
    def _ladder_or_rates(self) -> Scenario:
        if self.workload.kind == "open" and "ladder" in self.model_fields_set:
            raise ValueError("an open workload steps `workload.rates`, not `ladder`: "
                             "leave `ladder` out")
        return self

    @property
    def levels(self) -> list[float] | list[int]:
        """What the rungs step: arrival rates (open workloads), else user counts."""
        if self.workload.kind == "open" and self.workload.rates:
            return list(self.workload.rates)
        return list(self.ladder)

    @property
    def rung_bound_s(self) -> float:
        """The longest one rung may take (warmup in full, measure window at its cap)."""
        return self.warmup_s + (self.max_measure_s or 4 * self.measure_s)

    @model_validator(mode="after")
    def _one_load_mode(self) -> Scenario:
        if self.distributed is not None and self.processes not in (None, 1):
            raise ValueError(
                "give either `processes` (one machine) or `distributed` (master and workers)"
            )
        return self

    @model_validator(mode="after")
    def _interleave_local(self) -> Scenario:
        if self.interleave and self.distributed is not None:
            raise ValueError("interleave: not with `distributed` (its workers would have to "
                             "rejoin at every rung); run the arms one after the other")
        return self

    @property
    def verify_default(self) -> bool:
        """`verify`, or when not given: whether a simulated spec-on arm has a spec-off arm
        to be compared with (on a users or sessions ladder)."""
        if self.verify is not None:
            return self.verify
        roles = {a.arm_role for a in self.arms}
        return (self.workload.kind != "open" and "spec_off" in roles
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
        if self.workload.kind == "open":
            raise ValueError("verify: an open workload gives rate*, not a schedule")
        return self

    def public_dict(self) -> dict[str, Any]:
        """The scenario as plain data for manifest.json (holds no secrets by design).

        An open workload has no ladder (its rungs are `workload.rates`), so none is written.
        """
        return self.model_dump(mode="json",
                               exclude={"ladder"} if self.workload.kind == "open" else None)


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


def _describe(err: dict[str, Any]) -> str:
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
