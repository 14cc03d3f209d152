"""A new sweep's manifest, built from its scenario (the model is `specload.manifest`).

The manifest records the validated scenario (no secrets: API keys are referenced by
environment variable name only), versions, the machine, and per arm its kind, spec
mode, role (`spec_on`/`spec_off`/`other`, which the report uses to pair arms), ladder,
windows and one entry per repeat with its folder, status and times.
"""

from __future__ import annotations

import socket
from importlib.metadata import PackageNotFoundError, version

from specload import __version__
from specload.manifest import ArmEntry, Manifest, RepEntry, utc_now
from specload.scenario import Arm, Scenario


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
        profile=arm.sim.profile if arm.sim else None,
        base_url=arm.url or (arm.command.base_url if arm.command else None),
        reps=[RepEntry(rep=r, dir=rep_dir(arm.name, r, scenario.repeats))
              for r in range(1, scenario.repeats + 1)],
        ladder=list(scenario.ladder), warmup_s=scenario.warmup_s,
        measure_s=scenario.measure_s, engine=arm.engine,
    )


def new_manifest(scenario: Scenario) -> Manifest:
    return Manifest(
        scenario=scenario.public_dict(), scenario_name=scenario.name, created=utc_now(),
        specload_version=__version__, locust_version=_locust_version(),
        host=socket.gethostname(), arms=[arm_entry(a, scenario) for a in scenario.arms],
    )
