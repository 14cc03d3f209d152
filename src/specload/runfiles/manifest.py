"""`manifest.json` of a sweep's run folder: one typed model for its writer and its readers.

The runner writes the manifest (what was planned, what ran, how each repeat ended) and
rewrites it atomically after every state change; `--resume` and the report read it.
Both sides use these models, as `runfiles/records.py` does for the request rows, so a field
cannot be spelled one way by the writer and another by the reader. Readers accept
unknown fields (a newer specload may add some) and manifests of older versions, whose
arms may lack the newer fields. The manifest never holds secrets: API keys are named
by their environment variable only.
"""

from __future__ import annotations

import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from specload.errors import UserError

MANIFEST = "manifest.json"

Status = Literal["pending", "running", "done", "failed", "interrupted"]


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Entry(BaseModel):
    model_config = ConfigDict(extra="allow")


class WorkerClock(_Entry):
    """One worker process's clock against the master's during a repeat (seconds; offset =
    worker clock minus master clock, from the rounds in `<prefix>_clock.csv` that the
    report uses: the sure ones, if any)."""

    client_id: str
    offset_s: float  # the median round's
    offset_min_s: float
    offset_max_s: float
    uncertainty_max_s: float  # the worst round's round trip / 2
    rounds: int
    doubtful_rounds: int = 0  # uncertain rounds left out (a busy moment each)


class WorkerEvent(_Entry):
    """Something the master noticed about a worker (`records.EVENT_KINDS`), at `ts`
    (epoch s, master's clock)."""

    ts: float
    client_id: str
    event: str
    detail: str = ""


class RepEntry(_Entry):
    """One repeat of one arm: its folder (relative to the run folder) and how it ended,
    and, in distributed runs, its workers' clocks and what happened to them."""

    rep: int = 1
    dir: str
    status: Status = "pending"
    started: str | None = None
    finished: str | None = None
    error: str | None = None
    clocks: list[WorkerClock] = Field(default_factory=list)
    worker_events: list[WorkerEvent] = Field(default_factory=list)


class ArmEntry(_Entry):
    """One arm: how it is served, its role in the comparison, and its repeats."""

    name: str
    kind: str | None = None  # "sim", "command" or "url"
    spec: str | None = None  # "on", "off", "schedule" or "adaptive" (the engine's own)
    role: str | None = None  # "spec_on", "spec_off" or "other"
    k: int | None = None
    acceptance: float | None = None  # the mean acceptance length its server is set to
    context: str | None = None  # the prompt length its requests are sent with (`contexts`)
    engine: str | None = None  # the scenario's `engine:` ("vllm", "sglang", ...), if given
    profile: str | None = None
    base_url: str | None = None
    status: Status = "pending"
    reps: list[RepEntry] = Field(default_factory=list)
    ladder: list[int | float] = Field(default_factory=list)  # users, or an open load's rates
    warmup_s: float | None = None
    measure_s: float | None = None
    notes: list[str] = Field(default_factory=list)  # what the runner noticed (model, ...)
    # the verification arm: the vLLM-form [[start, end, k], ...] schedule it runs, and
    # whether it waits for the user to set the server up (a url arm; `--arms` runs it)
    schedule: list[list[int]] | None = None
    by_hand: bool = False

    def refresh_status(self) -> None:
        """The arm's status from its repeats' statuses."""
        states = {r.status for r in self.reps}
        found = next((s for s in ("interrupted", "failed", "running") if s in states), None)
        self.status = found or ("done" if states == {"done"} else "pending")


class PromptFitEntry(_Entry):
    """The prompt set fitted to the context of the sweep's first server, for every arm
    (`prompt_fit.Fit`, by `request.over_context`); indices into the set."""

    arm: str  # whose server's context it was
    context: int
    policy: str
    prompts: int  # in the set
    over: list[int] = Field(default_factory=list)
    skip: list[int] = Field(default_factory=list)
    cut: dict[int, int] = Field(default_factory=dict)
    counted: int = 0
    longest: int = 0


class SearchRound(_Entry):
    """One pass of the crossover search: the rungs it adds to its arms, and why."""

    levels: list[int]
    reasons: list[str] = Field(default_factory=list)
    spent_s: float = 0.0  # the pass's wall time, once it has run


class SearchEntry(_Entry):
    """The crossover search of a `ladder: auto` run (`specload.ladder.search`): its arms, its
    passes (the coarse one first) and why it stopped."""

    arms: list[str]
    rounds: list[SearchRound]
    stop: str | None = None

    def planned(self) -> list[int]:
        """Every rung the passes run on each arm, a rung measured twice twice, in order."""
        return sorted(x for r in self.rounds for x in r.levels)


class Manifest(_Entry):
    """The whole manifest."""

    scenario: dict[str, Any]
    scenario_name: str | None = None
    created: str | None = None
    specload_version: str | None = None
    locust_version: str | None = None
    host: str | None = None
    arms: list[ArmEntry]
    status: Status = "pending"
    prompt_fit: PromptFitEntry | None = None
    search: SearchEntry | None = None  # a `ladder: auto` run's crossover search

    def arm(self, name: str) -> ArmEntry:
        return next(a for a in self.arms if a.name == name)

    def refresh_status(self, selected: list[str]) -> None:
        """Arm statuses from their repeats, the run's from the selected arms'."""
        for arm in self.arms:
            arm.refresh_status()
        states = {a.status for a in self.arms if a.name in selected}
        if "interrupted" in states:
            self.status = "interrupted"
        elif states == {"done"}:
            self.status = "done"
        elif "failed" in states and states <= {"done", "failed"}:
            self.status = "failed"
        else:
            self.status = "running" if "running" in states else "pending"


def write_manifest(run_dir: Path, manifest: Manifest) -> None:
    """Write atomically: readers see the old or the new manifest, never half of one."""
    fd, tmp = tempfile.mkstemp(prefix=".manifest-", suffix=".json", dir=run_dir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(manifest.model_dump_json(indent=2, exclude_none=False))
            fh.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, run_dir / MANIFEST)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_manifest(run_dir: Path) -> Manifest:
    """The run folder's manifest; UserError with a one-line reason if it is not one."""
    path = run_dir / MANIFEST
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise UserError(f"{run_dir} is not a sweep folder: {MANIFEST} not found") from exc
    except OSError as exc:
        raise UserError(f"{path} cannot be read: {exc.strerror or exc}") from exc
    try:
        return Manifest.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise UserError(f"{path} is not a specload manifest ({where}: {first['msg']})") from None
