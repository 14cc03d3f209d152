"""The manifest: built from a scenario, its status rules, one model for writer and reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specload.errors import UserError
from specload.manifest import ArmEntry, Manifest, RepEntry, read_manifest, write_manifest
from specload.runner.manifest import new_manifest
from specload.scenario import parse_scenario

RAW = {
    "name": "t",
    "ladder": [1, 2, 5],
    "repeats": 2,
    "request": {"api_key_env": "MY_KEY"},
    "arms": [{"name": "on", "sim": {"spec": "on", "k": 3}},
             {"name": "off", "sim": {"spec": "off"}}],
}


def _manifest() -> Manifest:
    return new_manifest(parse_scenario(RAW, Path(".")))


def test_entries_built_from_the_scenario() -> None:
    m = _manifest()
    assert m.scenario_name == "t" and m.status == "pending"
    on, off = m.arms
    assert (on.role, on.spec, on.k, on.kind) == ("spec_on", "on", 3, "sim")
    assert off.role == "spec_off"
    assert [r.dir for r in on.reps] == ["on/rep-1", "on/rep-2"]
    assert m.scenario["request"]["api_key_env"] == "MY_KEY"


@pytest.mark.parametrize(("reps", "arm"), [
    (("done", "failed"), "failed"), (("done", "pending"), "pending"),
    (("done", "interrupted"), "interrupted"), (("done", "done"), "done"),
    (("running", "pending"), "running"),
])
def test_arm_status_from_its_repeats(reps: tuple[str, str], arm: str) -> None:
    entry = ArmEntry(name="a", reps=[RepEntry(dir=f"a/{i}", status=s)  # type: ignore[arg-type]
                                     for i, s in enumerate(reps)])
    entry.refresh_status()
    assert entry.status == arm


@pytest.mark.parametrize(("arms", "run"), [
    (("done", "failed"), "failed"), (("done", "done"), "done"),
    (("interrupted", "pending"), "interrupted"), (("done", "pending"), "pending"),
])
def test_run_status_from_the_selected_arms(arms: tuple[str, str], run: str) -> None:
    m = Manifest(scenario={}, arms=[
        ArmEntry(name=f"a{i}", reps=[RepEntry(dir=f"a{i}", status=s)])  # type: ignore[arg-type]
        for i, s in enumerate(arms)] + [ArmEntry(name="other", reps=[
            RepEntry(dir="o", status="failed")])])
    m.refresh_status(["a0", "a1"])
    assert m.status == run


def test_round_trip_is_atomic(tmp_path: Path) -> None:
    m = _manifest()
    write_manifest(tmp_path, m)
    assert read_manifest(tmp_path) == m
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]


def test_older_and_newer_manifests_are_read(tmp_path: Path) -> None:
    # specload 0.1 wrote no profile/base_url for some arms; a newer one may add fields
    (tmp_path / "manifest.json").write_text(json.dumps({
        "scenario": {"name": "x"}, "arms": [{"name": "a", "reps": [{"dir": "a"}],
                                             "clock_offsets": [0.1]}], "future": 1}))
    m = read_manifest(tmp_path)
    assert m.arms[0].reps[0].status == "pending" and m.arms[0].profile is None
    assert m.arms[0].engine is None


def test_arm_engine_is_recorded(tmp_path: Path) -> None:
    m = _manifest()
    m.arms[0].engine = "sglang"
    write_manifest(tmp_path, m)
    assert read_manifest(tmp_path).arms[0].engine == "sglang"


@pytest.mark.parametrize("text", ["", "[]", '{"arms": []}', '{"scenario": {}, "arms": 3}'])
def test_not_a_manifest_is_one_line(tmp_path: Path, text: str) -> None:
    (tmp_path / "manifest.json").write_text(text)
    with pytest.raises(UserError, match="not a specload manifest"):
        read_manifest(tmp_path)
    with pytest.raises(UserError, match="not a sweep folder"):
        read_manifest(tmp_path / "nope")
