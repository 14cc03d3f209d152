"""`specload sweep`: run every arm (and repeat) of a scenario through the ladder, then report.

Sets the sweep up (the scenario and its overrides, the run folder, the manifest, the
API key, the TLS trust), runs its stages through the one loop (`runner/loop.py`: with
`ladder: auto` the compared arms' crossover search, the planned ladder, tie-break
repeats while the repeats disagree, the verification arm with the recommended
schedule), each pass built as data (`runner/plan.py`) and run by `runner/execute.py`,
and builds the report. The manifest is rewritten after every state change. A failing arm (server
unreachable or dead, Locust failing) is marked failed and the others still run. Ctrl-C
(or SIGTERM) stops Locust and the servers, keeps every finished rung and marks the run
interrupted; `--resume RUN_DIR` then runs only the missing rungs. `--dry-run` prints the plan.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import shlex
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from specload.config import api_key
from specload.config.scenario import Scenario, SimArm, load_scenario, parse_scenario
from specload.errors import UserError
from specload.runfiles.manifest import MANIFEST, Manifest, read_manifest
from specload.runner import health_checks, placement
from specload.runner.attempt import Sweep, say
from specload.runner.locust_proc import (
    LoadMode,
    locust_command,
    worker_command,
)
from specload.runner.loop import Stage, drive
from specload.runner.manifest_entries import new_manifest
from specload.runner.metrics_export import SweepMetrics
from specload.runner.ownership import owning
from specload.runner.progress import (
    fmt_s,
)
from specload.runner.stages.ladder import Ladder
from specload.runner.stages.search import Search
from specload.runner.stages.tiebreak import TieBreak
from specload.runner.stages.verify import Verify
from specload.runner.verify_arm import VERIFY_ARM, has_verify_arm
from specload.traffic.kinds import TRACE

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
    if key is None and name != api_key.DEFAULT_ENV:
        say(f"warning: request.api_key_env names {name}, which is not set")
    return key


def _sim_k(sim: SimArm) -> str:
    """A simulated arm's draft length, or its schedule, for the plan."""
    if sim.spec == "schedule":
        ranges = ", ".join(f"[{lo}, {hi}, {k}]" for lo, hi, k in sim.adaptive_schedule or ())
        return f" k by batch size {ranges or 'from the profile'}"
    return f" k={sim.k or 'profile'}" if sim.spec == "on" else ""


def _trace_words(scenario: Scenario) -> str:
    """A trace replay's rungs: its window, replayed whole at each speed."""
    window = scenario.trace_window
    return (f"{scenario.warmup_s:g} s warmup + the window at each speed (its "
            f"{len(window.requests)} requests over {window.length_s:g} s of the trace, "
            f"{window.rate:.3g}/s at 1x), ")


def print_plan(scenario: Scenario, mode: LoadMode, cpus: placement.CpuPlan, out: Path
               ) -> None:
    per_rep = len(scenario.levels) * scenario.nominal_rung_s
    arms = len(scenario.arms) + int(scenario.verify_default and not has_verify_arm(scenario))
    total = per_rep * scenario.repeats * arms
    steps = scenario.workload_kind.axis.plan_words
    if scenario.searching:
        spec = scenario.search
        steps = (f"crossover search from C={spec.min_concurrency} to "
                 f"C={spec.max_concurrency} (up to {spec.rounds} refinement rounds, "
                 f"{spec.max_rungs} rungs per arm), coarse pass")
    say(f"scenario {scenario.name}, workload {scenario.workload.kind}: {steps} "
        f"{','.join(f'{x:g}' for x in scenario.levels)}, "
        + (f"{scenario.workload.step_s:g} s each (the second half is its steady window), "
           if scenario.workload_kind.whole_runs else _trace_words(scenario)
           if scenario.workload_kind == TRACE else
           f"{scenario.warmup_s:g} s warmup + {scenario.measure_s:g} s measure per rung, ")
        + f"{scenario.repeats} repeat(s)"
        + (f" (up to {scenario.tiebreak_repeats} more while they disagree on the verdict)"
           if scenario.tiebreak_repeats else "")
        + (", the arms interleaved rung by rung" if scenario.interleave else ""))
    for arm in scenario.arms:
        server = (f"sim {arm.sim.profile} spec={arm.sim.spec}{_sim_k(arm.sim)}"
                  if arm.sim else arm.command.base_url if arm.command else str(arm.url))
        if arm.target_acceptance is not None:
            server += f", mean acceptance length {arm.target_acceptance:g}"
        say(f"  arm {arm.name}: {arm.kind} ({server}), role {arm.arm_role}")
    if scenario.verify_default:
        say(f"  then arm {VERIFY_ARM}: the recommended schedule, through the same ladder")
    load = (f"master + {mode.workers} workers ({worker_command(mode)})" if mode.workers
            else f"{mode.processes or 1} load process(es)")
    say(f"load: {load}")
    for line in cpus.lines:
        say(line)
    say(f"planned load time {fmt_s(total)} (+ server start-up); output under "
        f"{out / scenario.name}/<UTC timestamp>/")
    levels = scenario.levels[:1] if scenario.interleave else scenario.levels
    first = scenario.arms[0].name
    example = locust_command(scenario, "URL", Path("<arm dir>/locust"), levels, mode,
                             arm=first)
    each = "per arm and rung" if scenario.interleave else "per arm"
    say(f"locust command {each} ({first}'s): " + shlex.join(example))


def _build_report(run_dir: Path) -> int:
    """`specload report RUN_DIR` on the finished (or interrupted) run; 1 if it fails."""
    from specload.report import render  # only now: pandas loads slowly

    try:
        return render.main(argparse.Namespace(run_dir=str(run_dir), processes=None))
    except UserError as exc:
        say(f"report not built: {exc}")
        return 1


@contextmanager
def _interrupts(sweep: Sweep) -> Iterator[None]:
    """First Ctrl-C/SIGTERM interrupts the sweep; later ones wait for the clean-up. An
    interrupted sweep keeps this handler until the process exits: it is on its way out,
    and a late signal must not kill it with the default handler's KeyboardInterrupt (exit
    status -2 instead of 130) while it saves the manifest or says how to resume."""

    def handler(signum: int, frame: Any) -> None:
        sweep.interrupts += 1
        if sweep.interrupts == 1:
            raise KeyboardInterrupt
        print("specload: stopping Locust and servers, please wait", file=sys.stderr)

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        if not sweep.interrupts:
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
    cpus = placement.plan(scenario, mode.processes)
    if args.dry_run:
        print_plan(scenario, mode, cpus, where)
        return 0
    exporter = _listen(scenario, args)
    if manifest is None:
        run_dir = _new_run_dir(where, scenario)
        manifest = new_manifest(scenario)
    else:
        run_dir = where
    req = scenario.request
    if req.insecure:
        say("warning: request.insecure: HTTPS certificates are not verified")
    sweep = Sweep(scenario, run_dir, manifest, mode, selected, _api_key(scenario),
                  health_checks.tls_context(req.ca_bundle, req.insecure), cpus=cpus,
                  exporter=exporter)
    try:
        with owning(run_dir) as orphans:
            for line in orphans:
                say(line)
            return _run(sweep, args)
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        with contextlib.suppress(OSError):
            sweep.save()
        raise UserError(f"no space left on the device of {run_dir} (writing "
                        f"{exc.filename or 'a run file'}); the finished rungs are kept: free "
                        f"some space, then `specload sweep --resume {run_dir}`") from None


def stages(whole: bool) -> list[Stage]:
    """What a sweep runs, in order: the crossover search (`ladder: auto`), the planned
    ladder of the arms it did not run and, unless `--arms` picked some arms, tie-break
    repeats and the verification arm."""
    search = Search()
    after: list[Stage] = [TieBreak(), Verify()] if whole else []
    return [search, Ladder(search), *after]


def _listen(scenario: Scenario, args: argparse.Namespace) -> SweepMetrics | None:
    """The sweep's /metrics, listening before a run folder is made (`--metrics-port`);
    UserError when it cannot."""
    port, host = getattr(args, "metrics_port", None), getattr(args, "metrics_host", "")
    if port is None:
        return None
    try:
        return SweepMetrics(scenario.name, port, host)
    except OSError as exc:
        raise UserError(f"--metrics-port {port}: cannot listen on {host} "
                        f"({exc.strerror or exc})") from None


def _run(sweep: Sweep, args: argparse.Namespace) -> int:
    """The sweep itself, in a run folder it owns; returns the exit status."""
    run_dir, manifest = sweep.run_dir, sweep.manifest
    sweep.save()
    say(f"run folder: {run_dir} (planned {fmt_s(sweep.remaining_s())})")
    for line in sweep.cpus.lines:
        say(line)
    if sweep.exporter is not None:
        say(f"live figures for Prometheus: {sweep.exporter.start(run_dir).url}")
    try:
        with _interrupts(sweep):
            drive(sweep, stages(whole=args.arms is None))
    except KeyboardInterrupt:
        sweep.save()
        say(f"interrupted: finished rungs kept; resume with: specload sweep --resume {run_dir}")
        return 130
    finally:
        if sweep.exporter is not None:
            sweep.exporter.stop()
    failed = [a.name for a in manifest.arms if a.status == "failed"]
    if failed:
        say(f"failed arm(s): {', '.join(failed)} (see their locust.log / server.log)")
    report_status = _build_report(run_dir)
    return 1 if failed else report_status
