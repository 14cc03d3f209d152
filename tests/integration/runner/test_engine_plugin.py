"""An engine from a package outside specload, found through the `specload.engines` entry
point group in every process.

The test writes a package of its own outside `src/` (the module `acme_engine` of
docs/contributing.md's recipe, as written there: an `Engine` whose responses tell each
request's drafts under a key no built-in engine uses; and its distribution metadata with
the entry point) and puts it on `PYTHONPATH`, as an installed package would be.
`specload engines` lists it with where it came from; a sweep (its own process, and the
Locust process it starts) takes `engine: acme`, and the per-request fields the made-up
server sends are in the records: the load processes read the plug-in's fields, which
`register()` in one process could never reach.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specload.engines import ENTRY_POINTS
from tests.support.sweeps import read_csv, run_dir_of, run_sweep, write_scenario

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "contributing.md"


def _recipe() -> str:
    """The plug-in module of docs/contributing.md's new-engine recipe, as written there."""
    section = GUIDE.read_text().split("## A new engine", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


STATS = {"proposed": 12, "kept": 9}


@pytest.fixture
def plugin_env(tmp_path: Path) -> dict[str, str]:
    """An environment whose Python finds the `acme-engine` distribution and its entry point."""
    site = tmp_path / "site"
    (site / "acme_engine-0.1.dist-info").mkdir(parents=True)
    (site / "acme_engine.py").write_text(_recipe())
    (site / "acme_engine-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: acme-engine\nVersion: 0.1\n")
    (site / "acme_engine-0.1.dist-info" / "entry_points.txt").write_text(
        f"[{ENTRY_POINTS}]\nacme = acme_engine:ENGINE\n")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


def test_the_engine_is_listed_with_its_package(plugin_env: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, "-m", "specload.cli", "engines"], env=plugin_env,
                          capture_output=True, text=True, timeout=60, check=True)
    acme = next(line for line in done.stdout.splitlines() if line.startswith("acme "))
    assert "Acme Serve" in acme and "acme-engine (acme_engine:ENGINE)" in acme, done.stdout
    assert "acme_stats.{proposed, kept}" in acme, done.stdout
    assert done.stdout.splitlines()[-1].startswith("other "), done.stdout  # still last
    bare = subprocess.run([sys.executable, "-m", "specload.cli", "engines"],
                          capture_output=True, text=True, timeout=60, check=True)
    assert "acme" not in bare.stdout


def test_its_per_request_fields_reach_the_records(plugin_env: dict[str, str], tmp_path: Path,
                                                   fake_stream_server) -> None:
    url = fake_stream_server("--final-fields", json.dumps({"acme_stats": STATS}))
    scenario = write_scenario(tmp_path, {
        "name": "plugin", "ladder": [2], "warmup_s": 1, "measure_s": 2,
        "request": {"max_tokens": 8, "ignore_eos": True},
        "arms": [{"name": "acme", "spec": "on", "engine": "acme", "url": url}]})
    done = run_sweep(tmp_path, str(scenario), "--out", str(tmp_path / "out"), env=plugin_env)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [r for r in read_csv(run_dir_of(done.stdout) / "acme" / "locust_requests.csv")
            if r["status"] == "200"]
    assert rows
    assert {(r["draft_tokens"], r["accepted_tokens"]) for r in rows} == {
        (str(STATS["proposed"]), str(STATS["kept"]))}


def test_a_broken_plugin_is_one_warning_and_the_rest_works(plugin_env: dict[str, str],
                                                           tmp_path: Path) -> None:
    site = Path(plugin_env["PYTHONPATH"].split(os.pathsep)[0])
    (site / "acme_engine.py").write_text("raise ImportError('no acme here')\n")
    done = subprocess.run([sys.executable, "-m", "specload.cli", "engines"], env=plugin_env,
                          capture_output=True, text=True, timeout=60, check=True)
    assert done.stderr.strip() == (
        "specload: warning: engine 'acme' from acme-engine (acme_engine:ENGINE) skipped: "
        "ImportError: no acme here")
    assert "vllm " in done.stdout and "acme" not in done.stdout
