"""One repeat of one arm: its server up with its /metrics sampled, and its Locust runs.

`serving` starts the arm's server (or finds a `url:` one), checks the model it lists and
samples its `/metrics` in a thread until the repeat ends; `run_levels` runs Locust
headless through some rungs against it, writing into the repeat's folder (or, for a
resumed repeat or an interleaved sweep's later rungs, a part folder whose rows are then
appended to the repeat's own files), and watches Locust and the server, printing one
progress line per finished rung. `Sweep` is the state every part of a sweep shares:
the scenario, the run folder, the manifest and the clock.
"""

from __future__ import annotations

import csv
import shutil
import ssl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specload.manifest import ArmEntry, Manifest, RepEntry, write_manifest
from specload.records import (
    CLIENT_STATS_COLUMNS,
    CLIENT_STATS_SUFFIX,
    SERVER_METRICS_SUFFIX,
    SERVER_TRACE_NAME,
)
from specload.runner.locust_proc import LoadMode, LocustProcess, locust_command, worker_command
from specload.runner.manifest import worker_clocks, worker_events
from specload.runner.metrics_scrape import MetricsSampler
from specload.runner.progress import (
    WorkerEvents,
    arm_failure,
    live_lines,
    progress_line,
    rung_figures,
)
from specload.runner.resume_parts import finished_levels, merge_part, merge_trace
from specload.runner.servers import ArmServer, ServerError, server_for
from specload.runner.verify import has_verify_arm
from specload.scenario import Arm, Scenario

POLL_S = 0.5
HEALTH_EVERY_S = 2.0
# Extra time Locust may take beyond the plan (start-up, spawning, final reports).
SLACK_S = 90.0


class RepFailed(Exception):
    """One repeat of an arm failed; the message says why."""


def say(msg: str) -> None:
    print(msg, flush=True)


@dataclass
class Sweep:
    """State of one sweep: its scenario, run folder, manifest and clock."""

    scenario: Scenario
    run_dir: Path
    manifest: Manifest
    mode: LoadMode
    selected: list[str]
    api_key: str | None = None
    tls: ssl.SSLContext | None = None  # the users' TLS trust, for the runner's probes
    started: float = field(default_factory=time.monotonic)
    interrupts: int = 0

    @property
    def rung_s(self) -> float:
        """A rung's nominal length (its windows may run longer, up to `rung_bound_s`)."""
        return self.scenario.warmup_s + self.scenario.measure_s

    def save(self) -> None:
        self.manifest.refresh_status(self.selected)
        write_manifest(self.run_dir, self.manifest)

    def remaining_s(self) -> float:
        """Planned seconds of every rung not finished yet in the selected arms."""
        total = 0
        for arm in self.manifest.arms:
            if arm.name not in self.selected:
                continue
            for rep in arm.reps:
                if rep.status != "done":
                    done = len(finished_levels(self.run_dir / rep.dir / "locust"))
                    total += len(self.scenario.levels) - done
        if self._verify_to_come():
            total += len(self.scenario.levels) * self.scenario.repeats
        return total * self.rung_s

    def _verify_to_come(self) -> bool:
        """The verification arm will run after the compared arms (not by hand)."""
        on = [a for a in self.scenario.arms if a.arm_role == "spec_on"]
        return (self.scenario.verify_default and not has_verify_arm(self.scenario)
                and bool(on) and on[0].url is None)

    def arm(self, name: str) -> Arm:
        return next(a for a in self.scenario.arms if a.name == name)


# --- one repeat -------------------------------------------------------------------------


def _fresh_start(rep_dir: Path) -> None:
    """Move leftovers of an attempt that finished no rung out of the way."""
    leftovers = [p for p in [*rep_dir.glob("locust*"), rep_dir / SERVER_TRACE_NAME] if p.is_file()]
    if not leftovers:
        return
    n = 1
    while (rep_dir / f"aborted-{n}").exists():
        n += 1
    dest = rep_dir / f"aborted-{n}"
    dest.mkdir()
    for p in leftovers:
        shutil.move(str(p), dest / p.name)


def last_chunk_time(prefix: Path) -> float | None:
    """When the load processes last reported receiving a chunk (client stats), if ever."""
    path = Path(f"{prefix}{CLIENT_STATS_SUFFIX}")
    try:
        with path.open("rb") as fh:
            fh.seek(max(0, path.stat().st_size - 16384))
            tail = fh.read().decode(errors="replace").splitlines()[1:]
    except OSError:
        return None
    chunks_col = CLIENT_STATS_COLUMNS.index("chunks")
    last = None
    for row in csv.reader(tail):
        if len(row) > chunks_col and row[chunks_col].isdigit() and int(row[chunks_col]):
            last = float(row[0])
    return last


def _part_prefix(rep_dir: Path) -> Path:
    n = 2
    while (rep_dir / f"part-{n}").exists():
        n += 1
    return rep_dir / f"part-{n}" / "locust"


def _watch(
    sweep: Sweep, label: str, locust: LocustProcess, server: ArmServer,
    run_prefix: Path, n_rungs: int,
) -> None:
    bound = n_rungs * sweep.scenario.rung_bound_s + sweep.scenario.drain_s + SLACK_S
    deadline = time.monotonic() + bound
    if sweep.mode.workers:
        deadline += sweep.mode.workers_wait_s
    rungs: list[dict[str, Any]] = []  # each complete rung with its figures
    events = WorkerEvents(run_prefix)
    next_health = time.monotonic() + HEALTH_EVERY_S
    while True:
        code = locust.poll()
        for line in events.new_lines(label):
            say(line)
        for line in live_lines(run_prefix)[len(rungs):]:
            rungs.append(rung_figures(run_prefix, line))
            say(progress_line(label, rungs[-1], sweep.scenario.levels,
                              time.monotonic() - sweep.started, sweep.remaining_s()))
        if code is not None:
            if code != 0:
                raise RepFailed(f"locust exited with status {code} (log: {locust.log_path})")
            done = len(finished_levels(run_prefix))
            if done < n_rungs:
                raise RepFailed(f"locust finished after {done} of {n_rungs} rungs "
                                f"(log: {locust.log_path})")
            why = arm_failure(rungs, run_prefix)
            if why:
                raise RepFailed(why)
            return
        if time.monotonic() >= next_health:
            next_health = time.monotonic() + HEALTH_EVERY_S
            problem = server.problem(last_chunk_time(run_prefix))
            if problem:
                raise RepFailed(f"server failed during the run: {problem}")
        if time.monotonic() > deadline:
            raise RepFailed(f"locust still running {bound:.0f} s after it started, the "
                            "longest the plan allows")
        time.sleep(POLL_S)


@dataclass
class Serving:
    """One repeat of an arm with its server up and its /metrics sampled."""

    label: str
    server: ArmServer
    url: str
    prefix: Path  # the repeat's own Locust files
    session_dir: Path  # the repeat's folder, or a resumed repeat's part folder
    runs: int = 0  # Locust runs so far: the first writes into session_dir, later ones parts


@contextmanager
def serving(sweep: Sweep, arm_entry: ArmEntry, rep: RepEntry) -> Iterator[Serving]:
    """Start the repeat's server and its /metrics sampler; stop both on leaving, and fold
    a resumed repeat's trace into the repeat's own. Raises RepFailed."""
    arm = sweep.arm(arm_entry.name)
    rep_dir = sweep.run_dir / rep.dir
    rep_dir.mkdir(parents=True, exist_ok=True)
    prefix = rep_dir / "locust"
    if finished_levels(prefix):
        session_dir = _part_prefix(rep_dir).parent
        session_dir.mkdir(parents=True)
    else:
        _fresh_start(rep_dir)
        session_dir = rep_dir
    label = arm.name if sweep.scenario.repeats == 1 else f"{arm.name} rep {rep.rep}"
    # The trace is this server's own (the simulator truncates it when it starts).
    server = server_for(arm, session_dir / SERVER_TRACE_NAME, sweep.api_key, sweep.tls)
    sampler: MetricsSampler | None = None
    try:
        url = _start_server(sweep, server, arm_entry, rep_dir, label)
        sampler = MetricsSampler(
            server.metrics_url, Path(str(prefix) + SERVER_METRICS_SUFFIX), api_key=sweep.api_key,
            tls=sweep.tls).start()
        yield Serving(label, server, url, prefix, session_dir)
    finally:
        if sampler is not None:
            sampler.stop()
            if sampler.samples_ok == 0:
                say(f"[{label}] note: no metrics from {sampler.url} ({sampler.last_error})")
        server.stop()
        if session_dir != rep_dir:
            merge_trace(session_dir, rep_dir)
        rep.clocks, rep.worker_events = worker_clocks(prefix), worker_events(prefix)


def run_levels(sweep: Sweep, live: Serving, levels: list[float], announce: bool = True
               ) -> None:
    """One Locust run of `levels` against the live server, its files folded into the
    repeat's own when it ran in a part folder. Raises RepFailed or KeyboardInterrupt."""
    rep_dir = live.prefix.parent
    run_prefix = live.session_dir / "locust" if not live.runs else _part_prefix(rep_dir)
    run_prefix.parent.mkdir(parents=True, exist_ok=True)
    live.runs += 1
    if announce:
        resumed = live.prefix != run_prefix
        suffix = f" (resuming {len(levels)} missing rungs)" if resumed else ""
        steps = sweep.scenario.workload_kind.axis.run_words
        say(f"[{live.label}] {live.url} ready; running "
            f"{steps}{','.join(f'{m:g}' for m in levels)}{suffix}")
        if sweep.mode.workers:
            say(f"[{live.label}] waiting for {sweep.mode.workers} workers: "
                f"{worker_command(sweep.mode)}")
    cmd = locust_command(sweep.scenario, live.url, run_prefix, levels, sweep.mode)
    locust = LocustProcess(cmd, run_prefix.parent / "locust.log")
    try:
        _watch(sweep, live.label, locust, live.server, run_prefix, len(levels))
    finally:
        locust.stop()
        if run_prefix != live.prefix:
            merge_part(run_prefix, live.prefix, sweep.scenario.levels)


def missing_levels(sweep: Sweep, rep: RepEntry) -> list[float]:
    done = finished_levels(sweep.run_dir / rep.dir / "locust")
    return [u for u in sweep.scenario.levels if u not in done]


def run_rep(sweep: Sweep, arm_entry: ArmEntry, rep: RepEntry) -> None:
    """Run the missing rungs of one repeat; raises RepFailed or KeyboardInterrupt."""
    missing = missing_levels(sweep, rep)
    if missing:
        with serving(sweep, arm_entry, rep) as live:
            run_levels(sweep, live, missing)


def _start_server(sweep: Sweep, server: ArmServer, arm_entry: ArmEntry, rep_dir: Path,
                  label: str) -> str:
    """Start (or find) the arm's server and check the model it serves; its base URL."""
    kind = server.arm.kind
    say(f"[{label}] " + (f"checking {server.arm.url} ..." if kind == "url"
                         else f"starting the {kind} server ..."))
    try:
        url = server.start(rep_dir / "server.log")
    except ServerError as exc:
        raise RepFailed(str(exc)) from exc
    arm_entry.base_url = url
    if arm_entry.k is None:
        arm_entry.k = getattr(server, "draft_k", None)
    model = sweep.scenario.request.model
    listed = server.models()
    if model and listed is not None and model not in listed:
        note = (f"the server does not list model {model!r} (it lists "
                f"{', '.join(listed) or 'none'}); it may serve another model or reject "
                "the requests")
        say(f"[{label}] warning: {note}")
        if note not in arm_entry.notes:
            arm_entry.notes.append(note)
    return url
