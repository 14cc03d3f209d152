"""A new engine is one registry entry and one simulator flavour, and nothing else.

The test adds both at run time: `newengine`, which switches speculation by batch size in
a syntax of its own (its writer, its file, its `{newengine_schedule}` placeholder, one
caveat) and exposes two /metrics series, and the sim flavour that imitates it. Then its
scenario validates, a sweep in this process samples its series from two simulators
serving the flavour (from threads of this process: a child would not see the flavour),
and the report writes its recommendation: its file, its line, its caveat.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from specload import engines
from specload.cli import build_parser
from specload.config.scenario import parse_scenario
from specload.engines import schedule as es
from specload.engines.spec_command import SpecSettings
from specload.errors import UserError
from specload.runner import sweep
from specload.sim import metrics
from specload.sim.flavors import FLAVORS
from specload.sim.metrics import RankStats
from tests.support.sims import sim_in_thread
from tests.support.sweeps import read_csv, read_manifest, run_dir_of, write_scenario

NAME = "newengine"
FILE = "newengine-schedule.json"
RUNNING, GENERATED = "newengine:running_requests", "newengine:generated_tokens"


class _Writer(es.Writer):
    """A made-up syntax: the schedule's [first, last, k] ranges in a JSON file."""

    names = (FILE,)

    def setting(self, tiers: Sequence[es.Tier], spec: SpecSettings) -> dict[str, Any]:
        return {"draft_tokens": es.ranges(tiers)}

    def files(self, tiers: Sequence[es.Tier], spec: SpecSettings, folder: str
              ) -> dict[str, str]:
        return {FILE: es.as_json(self.setting(tiers, spec))}

    def apply(self, tiers: Sequence[es.Tier], spec: SpecSettings, folder: str) -> str:
        return f"--draft-schedule {folder}/{FILE}"

    def uses(self, folder: str) -> dict[str, str]:
        return {FILE: f"`newengine serve --draft-schedule {folder}/{FILE}`"}


ENGINE = engines.Engine(
    NAME, "NewEngine", re.compile(r"\bnewengine\s+serve\b"), sim_flavors=(NAME,),
    series=(engines.Series(RUNNING, "running"),
            engines.Series(f"{GENERATED}_total", "generated")),
    switch=engines.LoadSwitch(_Writer(), "{newengine_schedule}",
                              caveats=("made up for a test.",)))


def _metrics(ranks: Sequence[RankStats], model: str) -> list[str]:
    lines: list[str] = []
    labels = [f'rank="{i}"' for i in range(len(ranks))]
    metrics.family(lines, (RUNNING, "gauge", "Running requests.", lambda r: r.running),
                   ranks, labels)
    metrics.family(lines, (GENERATED, "counter", "Generated tokens.",
                           lambda r: r.generation_tokens), ranks, labels)
    return lines


FLAVOR = dataclasses.replace(FLAVORS["vllm"], name=NAME, metrics=metrics.Exposition(_metrics),
                             api_key=None)
COMMAND = {"start": "newengine serve m", "base_url": "http://127.0.0.1:1",
           "verify_command": "newengine serve m --draft-schedule {newengine_schedule}"}


def _scenario(tmp_path: Path) -> Any:
    return parse_scenario({"name": "n", "arms": [
        {"name": "spec-on", "spec": "on", "engine": NAME, "command": COMMAND},
        {"name": "spec-off", "sim": {"spec": "off", "flavor": NAME}}]}, tmp_path)


@pytest.fixture
def new_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engines, "REGISTRY", dict(engines.REGISTRY))
    monkeypatch.setattr(engines, "ORIGIN", dict(engines.ORIGIN))
    engines.register(ENGINE)  # the one registry entry
    monkeypatch.setitem(FLAVORS, NAME, FLAVOR)  # the one simulator flavour


def test_without_its_entry_the_engine_is_unknown(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"arms\[0\]\.engine: must be one of vllm, "):
        _scenario(tmp_path)


def test_a_new_engine_is_one_entry_and_one_flavour(new_engine: None, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    arms = _scenario(tmp_path).arms
    assert [a.engine for a in arms] == [NAME, None]
    assert engines.resolve_engine({"command": COMMAND}) == (NAME, "command")
    assert engines.resolve_engine({"sim": {"flavor": NAME}}) == (NAME, "sim flavor")

    # spec-on leads at C = 1 (1.5 tokens a step) and, running one request at a time,
    # falls behind at C = 2: a threshold at batch size 1
    bench = ("--profile", "bench-20ms", "--flavor", NAME)
    with sim_in_thread(*bench, "--spec", "on", "--slots", "1") as on, \
            sim_in_thread(*bench, "--spec", "off") as off:
        # 3 s windows: the bound's batch sizes are the gauge's samples inside them (one a
        # second, from threads of this process); in 2 s windows one rung in 12 had none
        data = {"name": "new-engine", "ladder": [1, 2], "warmup_s": 1, "measure_s": 3,
                "min_requests": 3, "verify": True,
                "request": {"max_tokens": 16, "ignore_eos": True},
                "arms": [{"name": "spec-on", "url": on, "spec": "on", "k": 1},
                         {"name": "spec-off", "url": off, "spec": "off"}]}
        data["arms"] = [{**a, "engine": NAME} for a in data["arms"]]
        args = build_parser().parse_args(
            ["sweep", str(write_scenario(tmp_path, data)), "--out", str(tmp_path / "out")])
        status = sweep.main(args)
    out = capsys.readouterr().out
    assert status == 0, out
    run_dir = run_dir_of(out)

    sampled = read_csv(run_dir / "spec-on" / "locust_server_metrics.csv")
    assert {RUNNING, f"{GENERATED}_total"} <= {r["metric"] for r in sampled}
    assert max(float(r["value"]) for r in sampled if r["metric"] == RUNNING) == 1

    rec = json.loads((run_dir / "summary.json").read_text())["recommendation"]
    assert (rec["verdict"], rec["engine"], rec["schedule"]) == (
        "crosses", NAME, [[1, 1, 1], [2, None, 0]]), out
    folder = run_dir / "recommended"
    assert json.loads((folder / FILE).read_text()) == {
        "draft_tokens": [[1, 1, 1], [2, es.BATCH_SIZE_CEILING, 0]]}
    readme = (folder / "README.md").read_text()
    assert "Engine: NewEngine (scenario)." in readme
    assert "- NewEngine --draft-schedule recommended/newengine-schedule.json" in readme
    assert "- NewEngine: made up for a test." in readme
    # the bound's batch sizes are its own gauge's (the message says how the bound was
    # read and what the gauge gave at each rung)
    gauges = [(r["arm"], r["concurrency"], r.get("server_running_mean"))
              for r in json.loads((run_dir / "summary.json").read_text())["summary"]]
    assert f"({RUNNING})" in readme, (rec.get("bound"), gauges, readme)
    verify = read_manifest(run_dir)["arms"][-1]
    assert (verify["name"], verify["by_hand"]) == ("verify", True)
    assert f"NewEngine: {FILE}" in out  # what to give the server by hand
