"""`manifest.json` of a sweep run folder: what was planned, what ran, and how it ended.

The manifest records the validated scenario (no secrets: API keys are referenced by
environment variable name only), versions, the machine, and per arm its kind, spec
mode, role (`spec_on`/`spec_off`/`other`, which the report uses to pair arms), ladder,
windows and one entry per repeat with its folder, status and times. It is rewritten
atomically (temporary file + rename) after every state change, so an interrupted
sweep always leaves a readable manifest for `--resume` and for the report.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from specload import __version__
from specload.errors import UserError
from specload.scenario import Arm, Scenario

MANIFEST = "manifest.json"


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _locust_version() -> str:
    try:
        return version("locust")
    except PackageNotFoundError:
        return "unknown"


def rep_dir(arm: str, rep: int, repeats: int) -> str:
    """Folder of one repeat relative to the run folder."""
    return arm if repeats == 1 else f"{arm}/rep-{rep}"


def arm_entry(arm: Arm, scenario: Scenario) -> dict[str, Any]:
    return {
        "name": arm.name,
        "kind": arm.kind,
        "spec": arm.spec_mode,
        "role": arm.arm_role,
        "k": arm.draft_k,
        "profile": arm.sim.profile if arm.sim else None,
        "base_url": arm.url or (arm.command.base_url if arm.command else None),
        "status": "pending",
        "reps": [
            {"rep": r, "dir": rep_dir(arm.name, r, scenario.repeats), "status": "pending",
             "started": None, "finished": None, "error": None}
            for r in range(1, scenario.repeats + 1)
        ],
        "ladder": list(scenario.ladder),
        "warmup_s": scenario.warmup_s,
        "measure_s": scenario.measure_s,
    }


def new_manifest(scenario: Scenario) -> dict[str, Any]:
    return {
        "scenario": scenario.public_dict(),
        "scenario_name": scenario.name,
        "created": utc_now(),
        "specload_version": __version__,
        "locust_version": _locust_version(),
        "host": socket.gethostname(),
        "arms": [arm_entry(a, scenario) for a in scenario.arms],
        "status": "pending",
    }


def write_manifest(run_dir: Path, manifest: dict[str, Any]) -> None:
    """Write atomically: readers see the old or the new manifest, never half of one."""
    fd, tmp = tempfile.mkstemp(prefix=".manifest-", suffix=".json", dir=run_dir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(manifest, fh, indent=2)
            fh.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, run_dir / MANIFEST)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_manifest(run_dir: Path) -> dict[str, Any]:
    path = run_dir / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise UserError(f"{run_dir} is not a sweep folder: {MANIFEST} not found") from exc
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"{path} cannot be read: {exc}") from exc
    if not isinstance(data, dict) or "scenario" not in data or "arms" not in data:
        raise UserError(f"{path} is not a specload manifest (no scenario/arms)")
    return data


def arm_status(reps: list[dict[str, Any]]) -> str:
    """An arm's status from its repeats' statuses."""
    states = {r["status"] for r in reps}
    for s in ("interrupted", "failed", "running"):
        if s in states:
            return s
    return "done" if states == {"done"} else "pending"


def run_status(arms: list[dict[str, Any]]) -> str:
    states = {a["status"] for a in arms}
    if "interrupted" in states:
        return "interrupted"
    if states == {"done"}:
        return "done"
    if "failed" in states and states <= {"done", "failed"}:
        return "failed"
    return "running" if "running" in states else "pending"
