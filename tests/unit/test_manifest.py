"""The manifest: built from a scenario, its status rules, one model for writer and reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specload.config.scenario import parse_scenario
from specload.errors import UserError
from specload.runfiles.manifest import ArmEntry, Manifest, RepEntry, read_manifest, write_manifest
from specload.runner.manifest_entries import new_manifest, worker_clocks, worker_events

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


def test_a_repeat_records_its_workers_clocks_and_events(tmp_path: Path) -> None:
    prefix = tmp_path / "locust"
    assert worker_clocks(prefix) == [] and worker_events(prefix) == []
    Path(f"{prefix}_clock.csv").write_text(
        "ts,client_id,node,offset_s,rtt_s,exchanges\n"
        "10.0,h-1,n1,3.000100,0.000400,5\n20.0,h-1,n1,3.000300,0.012000,5\n"
        "30.0,h-1,n1,3.000200,0.000600,5\n10.1,h-2,n2,-0.000050,0.000300,5\n")
    Path(f"{prefix}_events.csv").write_text(
        "ts,client_id,node,event,since,detail\n"
        "20.0,h-1,n1,clock_uncertain,20.0,\"clock offset +3000.3 ms uncertain, by 6 ms\"\n")
    one, two = worker_clocks(prefix)
    # the round uncertain by 6 ms is left out, as the report leaves it out
    assert (one.client_id, one.rounds, one.doubtful_rounds) == ("h-1", 2, 1)
    assert (one.offset_s, one.offset_min_s, one.offset_max_s) == (3.0001, 3.0001, 3.0002)
    assert one.uncertainty_max_s == pytest.approx(0.0003)
    assert (two.client_id, two.offset_s) == ("h-2", -0.00005)
    (event,) = worker_events(prefix)
    assert (event.ts, event.event) == (20.0, "clock_uncertain")
    rep = RepEntry(dir="a", clocks=[one, two], worker_events=[event])
    again = RepEntry.model_validate_json(rep.model_dump_json())
    assert again == rep
    assert RepEntry.model_validate({"dir": "a"}).clocks == []  # a manifest from before
