"""`specload sweep`: run every arm (and repeat) of a scenario through the ladder, then report.

For each arm and repeat in turn: start its server and wait until it is ready, sample
its `/metrics` in a thread, run Locust headless with the ladder shape writing into
`reports/<scenario>/<UTC timestamp>/<arm>[/rep-N]/locust_*`, watch Locust and the
server, print one progress line per finished rung, then stop everything. The manifest
is rewritten after every state change. A failing arm (server unreachable or dead,
Locust failing) is marked failed and the others still run. Ctrl-C (or SIGTERM) stops
Locust and the server, keeps every finished rung and marks the run interrupted;
`--resume RUN_DIR` then runs only the missing rungs. With `verify`, a third arm then
runs the recommended schedule (`runner/verify.py`). At the end the report is built.
"""

from __future__ import annotations

import argparse
import csv
import shlex
import shutil
import signal
import ssl
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from specload import api_key
from specload.errors import UserError
from specload.manifest import (
    MANIFEST,
    ArmEntry,
    Manifest,
    RepEntry,
    read_manifest,
    utc_now,
    write_manifest,
)
from specload.records import (
    CLIENT_STATS_COLUMNS,
    CLIENT_STATS_SUFFIX,
    SERVER_METRICS_SUFFIX,
    SERVER_TRACE_NAME,
)
from specload.runner import probes
from specload.runner.locust_proc import (
    LoadMode,
    LocustProcess,
    locust_command,
    worker_command,
)
from specload.runner.manifest import new_manifest, worker_clocks, worker_events
from specload.runner.metrics_scrape import MetricsSampler
from specload.runner.parts import finished_levels, merge_part
from specload.runner.progress import (
    WorkerEvents,
    arm_failure,
    fmt_s,
    live_lines,
    progress_line,
    rung_figures,
)
from specload.runner.servers import ArmServer, ServerError, server_for
from specload.runner.verify import VERIFY_ARM, add_arm, hand_steps, has_verify_arm, verify_arm
from specload.scenario import Arm, Scenario, load_scenario, parse_scenario

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


def run_rep(sweep: Sweep, arm_entry: ArmEntry, rep: RepEntry) -> None:
    """Run the missing rungs of one repeat; raises RepFailed or KeyboardInterrupt."""
    arm = sweep.arm(arm_entry.name)
    rep_dir = sweep.run_dir / rep.dir
    rep_dir.mkdir(parents=True, exist_ok=True)
    prefix = rep_dir / "locust"
    done = finished_levels(prefix)
    missing = [u for u in sweep.scenario.levels if u not in done]
    if not missing:
        return
    if done:
        run_prefix = _part_prefix(rep_dir)
        run_prefix.parent.mkdir(parents=True)
    else:
        _fresh_start(rep_dir)
        run_prefix = prefix
    label = arm.name if sweep.scenario.repeats == 1 else f"{arm.name} rep {rep.rep}"
    # The trace sits next to this attempt's Locust files: the simulator truncates it.
    server = server_for(arm, run_prefix.parent / SERVER_TRACE_NAME, sweep.api_key,
                        sweep.tls)
    locust: LocustProcess | None = None
    sampler: MetricsSampler | None = None
    try:
        url = _start_server(sweep, server, arm_entry, rep_dir, label)
        sampler = MetricsSampler(
            server.metrics_url, Path(str(prefix) + SERVER_METRICS_SUFFIX), api_key=sweep.api_key,
            tls=sweep.tls).start()
        cmd = locust_command(sweep.scenario, url, run_prefix, missing, sweep.mode)
        suffix = f" (resuming {len(missing)} missing rungs)" if done else ""
        steps = "rates " if sweep.scenario.workload.kind == "open" else "C="
        say(f"[{label}] {url} ready; running {steps}{','.join(f'{m:g}' for m in missing)}"
            f"{suffix}")
        if sweep.mode.workers:
            say(f"[{label}] waiting for {sweep.mode.workers} workers: {worker_command(sweep.mode)}")
        locust = LocustProcess(cmd, rep_dir / "locust.log")
        _watch(sweep, label, locust, server, run_prefix, len(missing))
    finally:
        if locust is not None:
            locust.stop()
        if sampler is not None:
            sampler.stop()
            if sampler.samples_ok == 0:
                say(f"[{label}] note: no metrics from {sampler.url} ({sampler.last_error})")
        server.stop()
        if run_prefix != prefix:
            merge_part(run_prefix, prefix, sweep.scenario.levels)
        rep.clocks, rep.worker_events = worker_clocks(prefix), worker_events(prefix)


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


def run_arm(sweep: Sweep, arm_entry: ArmEntry) -> None:
    for rep in arm_entry.reps:
        if rep.status == "done":
            continue
        rep.status, rep.started, rep.finished, rep.error = "running", utc_now(), None, None
        sweep.save()
        try:
            run_rep(sweep, arm_entry, rep)
        except RepFailed as exc:
            rep.status, rep.error = "failed", str(exc)
            say(f"[{arm_entry.name}] FAILED: {exc}")
        except KeyboardInterrupt:
            rep.status, rep.error = "interrupted", "interrupted by the user"
            raise
        else:
            rep.status = "done"
        finally:
            rep.finished = utc_now()
            sweep.save()


# --- setup ------------------------------------------------------------------------------


def _select_arms(scenario: Scenario, arms: str | None) -> list[str]:
    names = [a.name for a in scenario.arms]
    if not arms:
        return names
    wanted = [a.strip() for a in arms.split(",") if a.strip()]
    unknown = [a for a in wanted if a not in names]
    if unknown:
        raise UserError(f"--arms: unknown arm(s) {', '.join(unknown)}; the scenario has "
                        f"{', '.join(names)}")
    return wanted


def _new_run_dir(out: Path, scenario: Scenario) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    base = out / scenario.name / stamp
    run_dir, n = base, 1
    while run_dir.exists():
        n += 1
        run_dir = base.with_name(f"{stamp}-{n}")
    try:
        run_dir.mkdir(parents=True)
        probe = run_dir / ".write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise UserError(f"cannot write results under {out}: {exc.strerror or exc}") from exc
    return run_dir


def _overrides(scenario: Scenario, args: argparse.Namespace, selected: list[str]) -> Scenario:
    update: dict[str, Any] = {"arms": [a for a in scenario.arms if a.name in selected]}
    if args.repeats is not None:
        if args.repeats < 1:
            raise UserError(f"--repeats must be 1 or more, got {args.repeats}")
        update["repeats"] = args.repeats
    if args.processes is not None:
        if args.processes < 1 and args.processes != -1:
            raise UserError(f"--processes must be 1 or more (or -1), got {args.processes}")
        if scenario.distributed is not None:
            raise UserError("--processes cannot be combined with the scenario's `distributed`")
        update["processes"] = args.processes
    return scenario.model_copy(update=update)


def _api_key(scenario: Scenario) -> str | None:
    """The key every request of the sweep carries (`api_key.resolve`)."""
    name = scenario.request.api_key_env
    key = api_key.resolve(name)
    if name and key is None:
        say(f"warning: request.api_key_env names {name}, which is not set")
    return key


def print_plan(scenario: Scenario, mode: LoadMode, out: Path) -> None:
    per_rep = len(scenario.levels) * (scenario.warmup_s + scenario.measure_s)
    total = per_rep * scenario.repeats * len(scenario.arms)
    steps = "rates (per second)" if scenario.workload.kind == "open" else "ladder"
    say(f"scenario {scenario.name}, workload {scenario.workload.kind}: {steps} "
        f"{','.join(f'{x:g}' for x in scenario.levels)}, "
        f"{scenario.warmup_s:g} s warmup + {scenario.measure_s:g} s measure per rung, "
        f"{scenario.repeats} repeat(s)")
    for arm in scenario.arms:
        server = (f"sim {arm.sim.profile} spec={arm.sim.spec} k={arm.sim.k or 'profile'}"
                  if arm.sim else arm.command.base_url if arm.command else arm.url)
        say(f"  arm {arm.name}: {arm.kind} ({server}), role {arm.arm_role}")
    if scenario.verify_default:
        say(f"  then arm {VERIFY_ARM}: the recommended schedule, through the same ladder")
    load = (f"master + {mode.workers} workers ({worker_command(mode)})" if mode.workers
            else f"{mode.processes or 1} load process(es)")
    say(f"load: {load}")
    say(f"planned load time {fmt_s(total)} (+ server start-up); output under "
        f"{out / scenario.name}/<UTC timestamp>/")
    example = locust_command(scenario, "URL", Path("<arm dir>/locust"), scenario.levels, mode)
    say("locust command per arm: " + shlex.join(example))


def _pair_done(sweep: Sweep) -> bool:
    arms = [a for a in sweep.manifest.arms if a.role in ("spec_on", "spec_off")]
    return {a.role for a in arms} == {"spec_on", "spec_off"} and all(
        a.status == "done" for a in arms)


def run_verify(sweep: Sweep) -> None:
    """Add and run the verification arm once the compared arms are done (see verify.py)."""
    if not sweep.scenario.verify_default or has_verify_arm(sweep.scenario):
        return
    if not _pair_done(sweep):
        say("verify: skipped, the spec-on and spec-off arms did not all finish")
        return
    from specload.report import render  # only now: pandas and plotly load slowly
    from specload.report.engine_settings import vllm_ranges

    try:
        report = render.build(sweep.run_dir)
        render.write(report)
    except UserError as exc:
        say(f"verify: skipped, the report cannot be built ({exc})")
        return
    found = report.verified()
    if found is None:
        summary = report.recommendations[0].summary if report.recommendations else ""
        say(f"verify: no schedule to verify ({summary or 'no spec-on/spec-off pair'})")
        return
    rec, where = found
    ranges = vllm_ranges(rec.tiers or ())
    if not all(isinstance(k, int) for _, _, k in ranges):
        say("verify: the schedule's draft length is unknown (set the arm's `k`)")
        return
    schedule = [[int(v) for v in r] for r in ranges]
    folder = (sweep.run_dir / where).resolve()
    on = next(a for a in sweep.scenario.arms if a.arm_role == "spec_on")
    arm = verify_arm(on, schedule, rec.vllm_config, folder)
    sweep.scenario, entry = add_arm(sweep.scenario, sweep.manifest.scenario, arm, schedule)
    sweep.manifest.arms.append(entry)
    if entry.by_hand:
        sweep.save()
        for line in hand_steps(sweep.run_dir, folder, arm.url):
            say(line)
        return
    sweep.selected.append(VERIFY_ARM)
    say(f"[{VERIFY_ARM}] the recommended schedule ({where}): {schedule}")
    run_arm(sweep, entry)


def _build_report(run_dir: Path) -> int:
    """`specload report RUN_DIR` on the finished (or interrupted) run; 1 if it fails."""
    from specload.report import render  # only now: pandas and plotly load slowly

    try:
        return render.main(argparse.Namespace(run_dir=str(run_dir), processes=None))
    except UserError as exc:
        say(f"report not built: {exc}")
        return 1


@contextmanager
def _interrupts(sweep: Sweep) -> Iterator[None]:
    """First Ctrl-C/SIGTERM interrupts the sweep; later ones wait for the clean-up."""

    def handler(signum: int, frame: Any) -> None:
        sweep.interrupts += 1
        if sweep.interrupts == 1:
            raise KeyboardInterrupt
        print("specload: stopping Locust and servers, please wait", file=sys.stderr)

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _prepare(args: argparse.Namespace) -> tuple[Scenario, Path, Manifest | None]:
    if args.resume:
        run_dir = Path(args.resume)
        manifest = read_manifest(run_dir)
        scenario = parse_scenario(manifest.scenario, run_dir, source=f"{run_dir}/{MANIFEST}")
        if args.repeats is not None:
            raise UserError("--repeats cannot change a run being resumed")
        return scenario, run_dir, manifest
    if not args.scenario:
        raise UserError("give a scenario file, or --resume RUN_DIR")
    return load_scenario(args.scenario), Path(args.out or "reports"), None


def main(args: argparse.Namespace) -> int:
    """Entry point of `specload sweep`; returns the exit status."""
    scenario, where, manifest = _prepare(args)
    selected = _select_arms(scenario, args.arms)
    if manifest is not None and not args.arms:  # an arm set up by hand runs when named
        selected = [n for n in selected if not manifest.arm(n).by_hand]
    if manifest is None:
        scenario = _overrides(scenario, args, selected)
    mode = LoadMode.from_scenario(scenario, args.processes)
    if args.dry_run:
        print_plan(scenario, mode, where)
        return 0
    if manifest is None:
        run_dir = _new_run_dir(where, scenario)
        manifest = new_manifest(scenario)
    else:
        run_dir = where
    req = scenario.request
    if req.insecure:
        say("warning: request.insecure: HTTPS certificates are not verified")
    sweep = Sweep(scenario, run_dir, manifest, mode, selected, _api_key(scenario),
                  probes.tls_context(req.ca_bundle, req.insecure))
    sweep.save()
    say(f"run folder: {run_dir} (planned {fmt_s(sweep.remaining_s())})")
    try:
        with _interrupts(sweep):
            for arm_entry in manifest.arms:
                if arm_entry.name in selected and arm_entry.status != "done":
                    run_arm(sweep, arm_entry)
            if args.arms is None:
                run_verify(sweep)
    except KeyboardInterrupt:
        sweep.save()
        say(f"interrupted: finished rungs kept; resume with: specload sweep --resume {run_dir}")
        return 130
    failed = [a.name for a in manifest.arms if a.status == "failed"]
    if failed:
        say(f"failed arm(s): {', '.join(failed)} (see their locust.log / server.log)")
    report_status = _build_report(run_dir)
    return 1 if failed else report_status
