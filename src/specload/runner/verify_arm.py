"""The verification arm: after the spec-on/spec-off arms, run the recommended schedule.

When the scenario asks for it (`verify`, by default for a simulated spec-on arm) and
every spec-on and spec-off arm finished, the sweep asks the report for the schedule to
verify (`report.render.schedule_to_verify`: the multi-k study's if the run is one, else
the first pair's threshold), writes its recommendation's files and adds an arm `verify`
(role `verify`) to the manifest's scenario too, so `--resume` finds it and a finished
one is never rerun. A `sim:` spec-on arm becomes the same simulator with
`spec: schedule` and that schedule; a `command:` arm runs its `command.verify_command`,
where each registered load switch's placeholder becomes what its writer gives
(`{vllm_speculative_config}` the whole vLLM `--speculative-config` JSON, compact and
without single quotes so it goes inside '...'; `{sglang_adaptive_config}` and
`{trtllm_config}` the absolute paths of `sglang-adaptive.json` and `trtllm.yaml`); a
`url:` arm cannot be restarted, so the sweep prints the files and the
`--resume RUN_DIR --arms verify` to run by hand. The report gives the arm's envelope
efficiency (`report/envelope.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from specload import engines
from specload.config.scenario import Arm, Scenario
from specload.runfiles.manifest import ArmEntry
from specload.runner.manifest_entries import arm_entry

if TYPE_CHECKING:  # the report loads pandas: the runner imports it only when verifying
    from specload.report.recommend import Schedule

VERIFY_ARM = "verify"
VERIFY_ROLE = "verify"


def has_verify_arm(scenario: Scenario) -> bool:
    return any(a.arm_role == VERIFY_ROLE for a in scenario.arms)


def write_files(run_dir: Path, schedule: Schedule) -> Path:
    """Write the schedule's recommendation files (the report rewrites the same at the
    end); returns their folder's absolute path."""
    folder = (run_dir / schedule.folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in schedule.files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def fill_template(template: str, schedule: Schedule, folder: Path) -> str:
    """`command.verify_command` with each load switch's setting in its placeholder."""
    for _, switch in engines.switches():
        if switch.placeholder in template:
            template = template.replace(switch.placeholder,
                                        switch.writer.fill(schedule.tiers, schedule.spec, folder))
    return template


def verify_arm(on: Arm, schedule: Schedule, folder: Path) -> Arm:
    """The verification arm of spec-on arm `on` running `schedule`, its files in `folder`."""
    common: dict[str, Any] = {"name": VERIFY_ARM, "role": VERIFY_ROLE, "spec": "schedule",
                              "engine": on.engine, "metrics_url": on.metrics_url,
                              "prometheus": on.prometheus, "ready_url": on.ready_url}
    if on.sim:
        ranges = [(lo, hi, k) for lo, hi, k in schedule.ranges()]
        sim = on.sim.model_copy(update={"spec": "schedule", "k": None,
                                        "adaptive_schedule": ranges})
        return Arm(sim=sim, **common)
    if on.command:
        template = on.command.verify_command or ""
        command = on.command.model_copy(update={
            "start": fill_template(template, schedule, folder), "verify_command": None})
        return Arm(command=command, **common)
    return Arm(url=on.url, **common)


def add_arm(scenario: Scenario, scenario_dump: dict[str, Any], arm: Arm,
            schedule: list[list[int]]) -> tuple[Scenario, ArmEntry]:
    """The scenario with `arm` added (also to the manifest's copy, for `--resume`), and
    the arm's manifest entry."""
    scenario_dump["arms"] = [*scenario_dump.get("arms", []), arm.model_dump(mode="json")]
    entry = arm_entry(arm, scenario)
    entry.schedule = schedule
    entry.by_hand = arm.kind == "url"
    return scenario.model_copy(update={"arms": [*scenario.arms, arm]}), entry


def hand_steps(run_dir: Path, folder: Path, url: str | None) -> list[str]:
    """What to do by hand for a `url:` pair."""
    files = "; ".join(f"{e.name}: {', '.join(switch.writer.names)}"
                      for e, switch in engines.switches())
    return [f"verify: the spec-on server at {url} is not started by specload: give it the "
            f"recommended setting (files in {folder}: {files}), then run",
            f"  specload sweep --resume {run_dir} --arms {VERIFY_ARM}"]
