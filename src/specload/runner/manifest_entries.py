"""A new sweep's manifest, built from its scenario (the model is `specload.runfiles.manifest`).

The manifest records the validated scenario (no secrets: API keys are referenced by
environment variable name only), versions, the machine, and per arm its kind, spec
mode, role (`spec_on`/`spec_off`/`other`, which the report uses to pair arms), ladder,
windows and one entry per repeat with its folder, status and times. After a repeat of a
distributed run, its entry also gets each worker process's clock offset and what the
master noticed about the workers, summarised from the repeat's files.
"""

from __future__ import annotations

import csv
import socket
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from specload import __version__
from specload.config.scenario import Arm, Scenario
from specload.runfiles.clock_sync import Measurement, usable
from specload.runfiles.manifest import (
    ArmEntry,
    Manifest,
    RepEntry,
    WorkerClock,
    WorkerEvent,
    utc_now,
)
from specload.runfiles.records import CLOCK_SUFFIX, EVENTS_SUFFIX


def _locust_version() -> str:
    try:
        return version("locust")
    except PackageNotFoundError:
        return "unknown"


def rep_dir(arm: str, rep: int, repeats: int) -> str:
    """Folder of one repeat relative to the run folder."""
    return arm if repeats == 1 else f"{arm}/rep-{rep}"


def arm_entry(arm: Arm, scenario: Scenario) -> ArmEntry:
    return ArmEntry(
        name=arm.name, kind=arm.kind, spec=arm.spec_mode, role=arm.arm_role, k=arm.draft_k,
        acceptance=arm.target_acceptance, context=arm.context,
        profile=arm.sim.profile if arm.sim else None,
        base_url=arm.url or (arm.command.base_url if arm.command else None),
        reps=[RepEntry(rep=r, dir=rep_dir(arm.name, r, scenario.repeats))
              for r in range(1, scenario.repeats + 1)],
        ladder=list(scenario.levels if scenario.searching else scenario.ladder),
        warmup_s=scenario.warmup_s,
        measure_s=scenario.measure_s, engine=arm.engine,
    )


def new_manifest(scenario: Scenario) -> Manifest:
    return Manifest(
        scenario=scenario.public_dict(), scenario_name=scenario.name, created=utc_now(),
        specload_version=__version__, locust_version=_locust_version(),
        host=socket.gethostname(), arms=[arm_entry(a, scenario) for a in scenario.arms],
    )


def _csv_rows(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            return list(csv.DictReader(fh))
    except FileNotFoundError:
        return []


def worker_clocks(prefix: Path) -> list[WorkerClock]:
    """Each worker process's clock over a repeat, from `<prefix>_clock.csv`: its usable
    rounds (`clocks.usable`) summarised, and how many doubtful ones were left out."""
    rounds: dict[str, list[Measurement]] = {}
    for row in _csv_rows(Path(f"{prefix}{CLOCK_SUFFIX}")):
        rounds.setdefault(row["client_id"], []).append(Measurement(
            float(row["ts"]), float(row["offset_s"]), float(row["rtt_s"]),
            int(row["exchanges"])))
    out = []
    for client, found in rounds.items():
        used = usable(found)
        offsets = sorted(m.offset_s for m in used)
        out.append(WorkerClock(
            client_id=client, offset_s=offsets[(len(offsets) - 1) // 2],
            offset_min_s=offsets[0], offset_max_s=offsets[-1],
            uncertainty_max_s=max(m.uncertainty_s for m in used), rounds=len(used),
            doubtful_rounds=len(found) - len(used)))
    return out


def worker_events(prefix: Path) -> list[WorkerEvent]:
    """What the master noticed about its workers during a repeat (`<prefix>_events.csv`)."""
    return [WorkerEvent(ts=float(r["ts"]), client_id=r["client_id"], event=r["event"],
                        detail=r["detail"])
            for r in _csv_rows(Path(f"{prefix}{EVENTS_SUFFIX}"))]
