"""Discovery of run files: sweep folders, folders without manifest, Locust prefixes."""

from __future__ import annotations

from pathlib import Path

import pytest

from specload.errors import UserError
from specload.report import run_files
from specload.runfiles import records
from tests.support import run_files as make


def _one(prefix: Path) -> Path:
    return make.write_prefix(prefix, [make.request(1.0, [2.0], [1])])


def test_manifest_names_arms_roles_k_and_missing_reps(tmp_path: Path) -> None:
    _one(tmp_path / "fast" / "rep-1" / "locust")
    _one(tmp_path / "base" / "locust")
    make.write_manifest(tmp_path, [make.arm_entry("fast", "spec_on", reps=2, k=4),
                                   make.arm_entry("base", "spec_off", k=None)])
    run = run_files.discover(tmp_path)
    assert [(a.name, a.role, a.k, [r.rep for r in a.reps]) for a in run.arms] == [
        ("fast", "spec_on", 4, [1]), ("base", "spec_off", None, [1])]
    assert run.out_dir == tmp_path and run.manifest is not None
    assert len(run.notes) == 1 and "fast rep 2" in run.notes[0]


def test_manifest_tells_how_each_arm_was_served(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        _one(tmp_path / name / "locust")
    entries = [make.arm_entry("a", "spec_on"), make.arm_entry("b", "spec_off"),
               {**make.arm_entry("c", "other"), "engine": "tgi"}]
    make.write_manifest(tmp_path, entries, planned=[
        {"name": "a", "command": {"start": "trtllm-serve m --config x.yaml"}},
        {"name": "b", "sim": {"spec": "off"}}, {"name": "c", "url": "http://h:1"}])
    got = {a.name: (a.engine, a.engine_source, a.command) for a in
           run_files.discover(tmp_path).arms}
    assert got == {"a": ("trtllm", "command", "trtllm-serve m --config x.yaml"),
                   "b": ("vllm", "sim default", None), "c": ("tgi", "scenario", None)}


def test_folder_without_manifest_groups_rep_folders(tmp_path: Path) -> None:
    for rel in ("spec-on/rep-1/locust", "spec-on/rep-2/locust", "spec-off/locust"):
        _one(tmp_path / rel)
    run = run_files.discover(tmp_path)
    got = {a.name: (a.role, sorted(r.rep for r in a.reps)) for a in run.arms}
    assert got == {"spec-on": ("spec_on", [1, 2]), "spec-off": ("spec_off", [1])}


def test_single_prefix_and_requests_file_path(tmp_path: Path) -> None:
    prefix = _one(tmp_path / "webui")
    for given in (prefix, f"{prefix}_requests.csv"):
        run = run_files.discover(given)
        assert run.out_dir == tmp_path
        assert [(a.name, a.reps[0].prefix) for a in run.arms] == [("webui", prefix)]


@pytest.mark.parametrize("role,name", [("spec_on", "eagle3-on"), ("spec_off", "spec_off"),
                                       ("spec_off", "baseline"), ("other", "arm-a")])
def test_role_from_name(role: str, name: str) -> None:
    assert run_files.role_from_name(name) == role


def test_missing_and_empty_paths_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such folder"):
        run_files.discover(tmp_path / "nope" / "deeper")
    with pytest.raises(UserError, match="empty run folder"):
        run_files.discover(tmp_path)
    with pytest.raises(UserError, match="no run data"):
        run_files.discover(tmp_path / "prefix")


def test_requests_file_without_needed_columns(tmp_path: Path) -> None:
    (tmp_path / "x_requests.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(UserError, match="lacks the column"):
        run_files.read_requests(tmp_path / "x")


def test_zero_byte_requests_file_counts_as_missing(tmp_path: Path) -> None:
    _one(tmp_path / "on" / "locust")
    (tmp_path / "off").mkdir()
    (tmp_path / "off" / "locust_requests.csv").write_text("", encoding="utf-8")
    make.write_manifest(tmp_path, [make.arm_entry("on", "spec_on"),
                                   make.arm_entry("off", "spec_off")])
    run = run_files.discover(tmp_path)
    assert [a.name for a in run.arms] == ["on"]
    assert "arm off rep 1 has no request records" in run.notes[0]


def test_scenario_folder_reports_its_latest_run(tmp_path: Path) -> None:
    for stamp in ("20260101T000000Z", "20260102T000000Z"):
        run = tmp_path / stamp
        _one(run / "on" / "locust")
        make.write_manifest(run, [make.arm_entry("on", "spec_on")])
    assert run_files.discover(tmp_path).out_dir == tmp_path / "20260102T000000Z"


def test_every_record_column_is_read_or_named_unread() -> None:
    """A field added to the request record is read by its type, with no list to extend."""
    read = (*run_files._FLOAT_COLS, *run_files._INT_COLS, *run_files._STR_COLS,
            *run_files._CATEGORY_COLS)
    assert sorted((*read, *run_files._UNREAD)) == sorted(records.REQUEST_COLUMNS)
    assert {"draft_tokens", "prompt_tokens"} <= set(run_files._FLOAT_COLS)  # may be missing
    assert {"status", "interrupted"} <= set(run_files._INT_COLS)
