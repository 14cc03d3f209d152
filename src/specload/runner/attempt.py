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
import errno
import os
import shutil
import ssl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specload.config.scenario import Arm, Scenario
from specload.engines import resolve_engine
from specload.errors import UserError
from specload.host import stdout_pipe
from specload.runfiles.manifest import ArmEntry, Manifest, RepEntry, write_manifest
from specload.runfiles.records import (
    CLIENT_STATS_COLUMNS,
    CLIENT_STATS_SUFFIX,
    SERVER_METRICS_SUFFIX,
    SERVER_TRACE_NAME,
    WRITE_FAILED_EXIT,
)
from specload.runner import context_check, health_checks
from specload.runner.locust_proc import LoadMode, LocustProcess, locust_command, worker_command
from specload.runner.manifest_entries import worker_clocks, worker_events
from specload.runner.metrics_export import SweepMetrics
from specload.runner.metrics_scrape import MetricsSampler
from specload.runner.placement import CpuPlan, usable
from specload.runner.plan import Level, build, missing
from specload.runner.progress import (
    WorkerEvents,
    arm_failure,
    live_lines,
    progress_line,
    rung_figures,
)
from specload.runner.resume_parts import (
    cut_partial_rows,
    drop_rungs_since,
    finished_levels,
    finished_rungs,
    merge_part,
    merge_trace,
)
from specload.runner.servers import ArmServer, ServerError, server_for
from specload.runner.verify_arm import has_verify_arm
from specload.traffic.kinds import TRACE

if TYPE_CHECKING:
    from specload.report.render import Report

POLL_S = 0.5
HEALTH_EVERY_S = 2.0
# Extra time Locust may take beyond the plan (start-up, spawning, final reports).
SLACK_S = 90.0
MIN_FREE_BYTES = 1 << 20


class RepFailed(Exception):
    """One repeat of an arm failed; the message says why."""


class ServerExited(RepFailed):
    """The server the runner started for the repeat exited during a rung."""


def say(msg: str) -> None:
    """One line of the sweep's progress. A reader of it that has gone (`specload sweep
    ... | head`) stops the sweep as Ctrl-C does: finished rungs kept, resumable."""
    try:
        print(msg, flush=True)
    except BrokenPipeError:
        if not stdout_pipe.discard_if_gone():
            raise
        raise KeyboardInterrupt from None


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
    adding: str | None = None  # why the runs under way add rungs ("search round 1")
    cpus: CpuPlan = field(default_factory=lambda: CpuPlan(usable()))  # servers' and load's
    # when the first rung began and how many rungs have ended since, for the pace
    load_started: float | None = None
    rungs_done: int = 0
    report: Report | None = None  # the run analysed since the last pass, once it is
    exporter: SweepMetrics | None = None  # the sweep's /metrics, when it serves one

    @property
    def rung_s(self) -> float:
        """A rung's length: its nominal one, or the pace of the rungs so far where their
        windows ran longer (waiting for `min_requests`, up to `rung_bound_s`)."""
        nominal = self.scenario.nominal_rung_s
        if self.load_started is None or not self.rungs_done:
            return nominal
        return max(nominal, (time.monotonic() - self.load_started) / self.rungs_done)

    def save(self) -> None:
        self.manifest.refresh_status(self.selected)
        write_manifest(self.run_dir, self.manifest)

    def remaining_s(self) -> float:
        """Planned seconds of every rung not finished yet in the selected arms."""
        levels = list(build(self.scenario, self.manifest, self.selected,
                              finished(self)).levels())
        if self._verify_to_come():
            levels += list(self.scenario.levels) * self.scenario.repeats
        if self.scenario.workload_kind == TRACE:  # fixed in time, each speed its own length
            return sum(self.scenario.trace_rung_s(x) for x in levels)
        return len(levels) * self.rung_s

    def _verify_to_come(self) -> bool:
        """The verification arm will run after the compared arms (not by hand)."""
        on = [a for a in self.scenario.arms if a.arm_role == "spec_on"]
        return (self.scenario.verify_default and not has_verify_arm(self.scenario)
                and bool(on) and on[0].url is None)

    def arm(self, name: str) -> Arm:
        return next(a for a in self.scenario.arms if a.name == name)

    def analysed(self, step: str) -> Report | None:
        """The run as far as it went, analysed as `specload report` does (once after
        each pass); None, after saying that `step` cannot go on, when there is nothing
        to analyse."""
        from specload.report.render import build  # only now: pandas loads slowly

        if self.report is None:
            try:
                self.report = build(self.run_dir)
            except UserError as exc:
                say(f"{step}, the run cannot be analysed ({exc})")
        return self.report


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


def out_of_space(folder: Path) -> bool:
    """Whether the file system of `folder` is (nearly) full: a load process that failed
    there may have died writing its files, its log included."""
    try:
        return shutil.disk_usage(folder).free < MIN_FREE_BYTES
    except OSError:
        return False


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


def _rung_in_flight(sweep: Sweep, run_prefix: Path, levels: list[float],
                    at: float | None = None) -> str:
    """The rung of `levels` the run was in at epoch time `at`, or is in now ("C=4"): the
    first finished rung whose window ended after `at`, else the first not finished."""
    done = [x for x, end in finished_rungs(run_prefix) if at is None or end < at]
    level = next((x for x in levels if x not in done), levels[-1])
    return sweep.scenario.workload_kind.axis.rung(level)


def _server_problem(sweep: Sweep, server: ArmServer, run_prefix: Path, levels: list[float],
                    liveness: bool) -> None:
    """Raise if the server's process has exited (checked at every poll) or, when
    `liveness`, it has gone silent for longer than the arm allows."""
    gone = server.process_problem()
    if gone:
        raise ServerExited(f"the server exited during the rung at "
                           f"{_rung_in_flight(sweep, run_prefix, levels)}: {gone}")
    problem = server.problem(last_chunk_time(run_prefix)) if liveness else None
    if problem:
        stalled = "stalled" if problem.startswith(health_checks.SILENT) else "failed"
        since = server.silent_since()
        at = _rung_in_flight(sweep, run_prefix, levels, since)
        dropped = drop_rungs_since(run_prefix, since) if since is not None else []
        rung = sweep.scenario.workload_kind.axis.rung
        again = (f" ({', '.join(map(rung, dropped))}, measured in the silence, is to run "
                 "again)" if dropped else "")
        raise RepFailed(f"server {stalled} at {at}: {problem}{again}")


def _new_rungs(sweep: Sweep, label: str, arm: str, run_prefix: Path,
               rungs: list[dict[str, Any]]) -> None:
    """Each rung completed since the last call: its figures, progress line and export."""
    for line in live_lines(run_prefix)[len(rungs):]:
        rungs.append(rung_figures(run_prefix, line))
        sweep.rungs_done += 1
        if sweep.exporter is not None:
            sweep.exporter.finished_rung(arm, rungs[-1])
        say(progress_line(label, rungs[-1], sweep.scenario.levels,
                          time.monotonic() - sweep.started, sweep.remaining_s(),
                          sweep.scenario.max_window_s,
                          "concurrency" in sweep.scenario.workload_kind.checks,
                          sweep.scenario.workload_kind.whole_runs))


def _watch(
    sweep: Sweep, label: str, locust: LocustProcess, server: ArmServer,
    run_prefix: Path, levels: list[float],
) -> None:
    n_rungs = len(levels)
    bound = n_rungs * sweep.scenario.rung_bound_s + sweep.scenario.drain_s + SLACK_S
    deadline = time.monotonic() + bound
    if sweep.mode.workers:
        deadline += sweep.mode.workers_wait_s
    rungs: list[dict[str, Any]] = []  # each complete rung with its figures
    events = WorkerEvents(run_prefix)
    next_health = time.monotonic() + HEALTH_EVERY_S
    while True:
        code = locust.poll()
        for message in events.new_lines(label):
            say(message)
        _new_rungs(sweep, label, server.arm.name, run_prefix, rungs)
        if code is not None:
            if code != 0 and (code == WRITE_FAILED_EXIT or out_of_space(run_prefix.parent)):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(run_prefix.parent))
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
        health = time.monotonic() >= next_health
        if health:
            next_health = time.monotonic() + HEALTH_EVERY_S
        _server_problem(sweep, server, run_prefix, levels, health)
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
    label = arm.name if sweep.scenario.repeats == 1 else f"{arm.name} rep {rep.rep}"
    if finished_levels(prefix):
        for path in cut_partial_rows(prefix):
            say(f"[{label}] cut off the half-written last row of {path.name} (its writer "
                "was killed)")
        session_dir = _part_prefix(rep_dir).parent
        session_dir.mkdir(parents=True)
    else:
        _fresh_start(rep_dir)
        session_dir = rep_dir
    # The trace is this server's own (the simulator truncates it when it starts).
    server = server_for(arm, session_dir / SERVER_TRACE_NAME, sweep.api_key, sweep.tls,
                        sweep.cpus.for_arm(arm))
    sampler: MetricsSampler | None = None
    try:
        url = _start_server(sweep, server, arm_entry, rep, label)
        sampler = MetricsSampler(server.metrics(sweep.api_key, sweep.tls),
                                 Path(str(prefix) + SERVER_METRICS_SUFFIX)).start()
        yield Serving(label, server, url, prefix, session_dir)
    finally:
        if sampler is not None:
            sampler.stop()
            if sampler.samples_ok == 0:
                say(f"[{label}] note: no metrics from {sampler.reading.what} "
                    f"({sampler.last_error})")
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
        suffix = (f" ({sweep.adding})" if sweep.adding else
                  f" (resuming {len(levels)} missing rungs)" if resumed else "")
        steps = sweep.scenario.workload_kind.axis.run_words
        say(f"[{live.label}] {live.url} ready; running "
            f"{steps}{','.join(f'{m:g}' for m in levels)}{suffix}")
        if sweep.mode.workers:
            say(f"[{live.label}] waiting for {sweep.mode.workers} workers: "
                f"{worker_command(sweep.mode)}")
    cmd = locust_command(sweep.scenario, live.url, run_prefix, levels, sweep.mode,
                         sweep.manifest.prompt_fit, arm=live.server.arm.name)
    exporter, port = sweep.exporter, 0
    if exporter is not None:
        args, port = exporter.locust_args(live.server.arm.name)
        cmd += args
    locust = LocustProcess(cmd, run_prefix.parent / "locust.log", arm=live.label,
                           cpus=sweep.cpus.load)
    if exporter is not None:
        exporter.add(port)
    if sweep.load_started is None:
        sweep.load_started = time.monotonic()
    try:
        _watch(sweep, live.label, locust, live.server, run_prefix, levels)
    finally:
        if exporter is not None:
            exporter.remove(port)
        locust.stop()
        if run_prefix != live.prefix:
            merge_part(run_prefix, live.prefix, sweep.scenario.levels)


def finished(sweep: Sweep) -> dict[str, list[Level]]:
    """The rungs each repeat's folder has finished, by the repeat's folder."""
    return {rep.dir: finished_levels(sweep.run_dir / rep.dir / "locust")
            for arm in sweep.manifest.arms for rep in arm.reps}


def missing_levels(sweep: Sweep, arm_name: str, rep: RepEntry) -> list[Level]:
    """The rungs the repeat has still to run, from its folder (`plan.missing`)."""
    return missing(sweep.scenario, sweep.manifest, arm_name,
                   finished_levels(sweep.run_dir / rep.dir / "locust"))


class Restarts:
    """How many more times an arm's server may be started again after it exited during
    a rung (`command.restart_on_exit`; a simulated or running server: none)."""

    def __init__(self, sweep: Sweep, arm_entry: ArmEntry) -> None:
        self.sweep, self.arm_name = sweep, arm_entry.name
        self.left: int | None = None  # read from the scenario at the first exit

    def take(self, label: str, exited: ServerExited) -> None:
        """Use one restart, saying so; re-raise `exited` when none is left."""
        if self.left is None:
            command = self.sweep.arm(self.arm_name).command
            self.left = command.restart_on_exit if command is not None else 0
        if self.left <= 0:
            raise exited
        self.left -= 1
        say(f"[{label}] {exited}; starting it again to repeat that rung "
            f"({self.left} restart(s) left)")


def _start_server(sweep: Sweep, server: ArmServer, arm_entry: ArmEntry, rep: RepEntry,
                  label: str) -> str:
    """Start (or find) the arm's server and check the model it serves; its base URL."""
    kind = server.arm.kind
    say(f"[{label}] " + (f"checking {server.arm.url} ..." if kind == "url"
                         else f"starting the {kind} server ..."))
    try:
        url = server.start(sweep.run_dir / rep.dir / "server.log")
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
    _check_context(sweep, server, arm_entry, rep, label)
    return url


def _check_context(sweep: Sweep, server: ArmServer, arm_entry: ArmEntry, rep: RepEntry,
                   label: str) -> None:
    """Fit the prompts to the server's context (the sweep's first server) or check that
    what the sweep sends fits it."""
    engine, _ = resolve_engine(server.arm.model_dump(mode="json"), arm_entry.engine)
    first = not any(r.started for a in sweep.manifest.arms for r in a.reps if r is not rep)
    found = context_check.fit_prompts(sweep.scenario, server.arm, engine, server.base_url,
                                      server.models_body(), sweep.api_key, sweep.tls,
                                      sweep.manifest.prompt_fit, first)
    for line in found.lines:
        say(f"[{label}] {line}")
    arm_entry.notes += [n for n in found.notes if n not in arm_entry.notes]
    if found.failed:
        raise RepFailed(found.failed)
    if found.fit is not sweep.manifest.prompt_fit:
        sweep.manifest.prompt_fit = found.fit
        sweep.save()
