"""The verification arm built from the spec-on arm and the recommended schedule."""

from __future__ import annotations

import json
from pathlib import Path

from specload.config.scenario import parse_scenario
from specload.engines.schedule import Tier
from specload.engines.spec_command import SpecSettings
from specload.report.recommend import Schedule
from specload.runner import verify_arm as verify

SCHEDULE = [[1, 15, 3], [16, 65536, 0]]
VLLM = {"method": "eagle3", "model": "d", "num_speculative_tokens": 3,
        "num_speculative_tokens_per_batch_size": SCHEDULE}
PLANNED = Schedule((Tier(15, 3), Tier(None, 0)), SpecSettings("eagle3", "d", 3), "recommended",
                   {"README.md": "# Recommended\n"})


def _scenario(on: dict) -> object:
    return parse_scenario({"name": "s", "arms": [
        {"name": "spec-on", **on}, {"name": "spec-off", "sim": {"spec": "off"}}]}, Path("."))


def test_a_sim_arm_runs_the_schedule() -> None:
    sc = _scenario({"sim": {"profile": "seed-glm", "spec": "on", "k": 3, "seed": 7}})
    arm = verify.verify_arm(sc.arms[0], PLANNED, Path("/run/recommended"))
    assert arm.name == "verify" and arm.arm_role == "verify" and arm.sim is not None
    assert (arm.sim.spec, arm.sim.k, arm.sim.seed, arm.sim.profile) == (
        "schedule", None, 7, "seed-glm")
    assert arm.sim.adaptive_schedule == [(1, 15, 3), (16, 65536, 0)]


def test_a_command_arm_fills_the_placeholders() -> None:
    template = ("vllm serve m --speculative-config '{vllm_speculative_config}' # "
                "{sglang_adaptive_config} {trtllm_config}")
    sc = _scenario({"spec": "on", "command": {
        "start": "vllm serve m", "stop": "pkill-by-pidfile", "base_url": "http://127.0.0.1:1",
        "verify_command": template}})
    arm = verify.verify_arm(sc.arms[0], PLANNED, Path("/run/recommended"))
    assert arm.command is not None and arm.command.verify_command is None
    assert arm.command.stop == "pkill-by-pidfile"
    quoted = arm.command.start.split("'")[1]
    assert json.loads(quoted) == VLLM  # compact JSON, no single quote: shell-safe in '...'
    assert arm.command.start.endswith("# /run/recommended/sglang-adaptive.json "
                                      "/run/recommended/trtllm.yaml")


def test_the_arm_goes_into_the_manifests_scenario_so_resume_finds_it() -> None:
    sc = _scenario({"url": "http://127.0.0.1:9", "spec": "on", "k": 3})
    arm = verify.verify_arm(sc.arms[0], PLANNED, Path("/r"))
    dump = sc.public_dict()
    updated, entry = verify.add_arm(sc, dump, arm, SCHEDULE)
    assert [a.name for a in updated.arms] == ["spec-on", "spec-off", "verify"]
    assert entry.schedule == SCHEDULE and entry.by_hand and entry.role == "verify"
    again = parse_scenario(dump, Path("."))
    assert again.arms[-1].url == "http://127.0.0.1:9" and verify.has_verify_arm(again)


def test_the_schedules_files_are_written_where_the_placeholders_point(tmp_path: Path) -> None:
    folder = verify.write_files(tmp_path, PLANNED)
    assert folder == (tmp_path / "recommended").resolve()
    assert (folder / "README.md").read_text() == "# Recommended\n"
