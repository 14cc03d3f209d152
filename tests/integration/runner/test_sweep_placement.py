"""CPU placement in a sweep: a `command:` arm's server, a simulated arm's server and the
Locust process each run on their set while the sweep runs (read from /proc, every
thread and child of each), `{ncpus}` reaches the start line, the console says where
each runs, and a set shared by a server and the load is warned about."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import psutil
import pytest

from specload.host import cpu_sets
from specload.runner import placement
from specload.runner.ownership import CHILDREN_NAME
from specload.runner.processes import free_port
from tests.support.sweeps import read_csv, wait_for

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2,
                                reason="needs two usable CPUs to place apart")
HAVE = sorted(os.sched_getaffinity(0))
SERVERS, LOAD = frozenset(HAVE[:1]), frozenset(HAVE[-1:])


def _scenario(placed: dict[str, str], port: int) -> dict:
    start = (f"SPECLOAD_TEST_NCPUS={{ncpus}} exec {sys.executable} -m specload.cli sim "
             f"--profile bench-20ms --spec off --port {port}")
    return {"name": "placed", "ladder": [2], "warmup_s": 1, "measure_s": 4,
            "placement": placed, "request": {"max_tokens": 16, "ignore_eos": True},
            "arms": [
                {"name": "cmd", "spec": "off", "command": {
                    "start": start, "base_url": f"http://127.0.0.1:{port}"}},
                {"name": "sim", "sim": {"profile": "bench-20ms", "spec": "on"}}]}


def _tree(pid: int) -> list[psutil.Process]:
    proc = psutil.Process(pid)
    return [proc, *proc.children(recursive=True)]


def _allowed_of_every_thread(pid: int) -> set[frozenset[int]]:
    return {placement.allowed(t.id) for p in _tree(pid) for t in p.threads()}


def test_servers_and_load_run_on_their_cpus_during_the_sweep(write_scenario,
                                                           background_sweep) -> None:
    placed = {"servers": cpu_sets.words(SERVERS), "load": cpu_sets.words(LOAD)}
    sweep = background_sweep(str(write_scenario(_scenario(placed, free_port()))),
                             "--out", "out")
    run_dir = sweep.run_dir()
    seen: dict[str, set[frozenset[int]]] = {}
    ncpus: set[str] = set()

    def children_now() -> bool:
        record = run_dir / CHILDREN_NAME
        try:
            children = json.loads(record.read_text())
        except (OSError, ValueError):
            return False
        for pid, entry in children.items():
            try:
                seen.setdefault(f"{entry['arm']} {entry['what']}", set()).update(
                    _allowed_of_every_thread(int(pid)))
                if entry["what"].startswith("server"):
                    env = psutil.Process(int(pid)).environ()
                    ncpus.add(env.get("SPECLOAD_TEST_NCPUS", ""))
            except (psutil.Error, OSError, ValueError):
                continue
        return {"cmd Locust", "sim Locust"} <= set(seen)

    wait_for(children_now, 120, "both arms' Locust processes")
    assert sweep.wait() == 0, sweep.text()
    assert seen == {"cmd server (start command)": {SERVERS}, "cmd Locust": {LOAD},
                    "sim simulated server": {SERVERS}, "sim Locust": {LOAD}}, seen
    assert ncpus == {"1"}
    assert (f"placement: load on CPU {placed['load']}; cmd on CPU {placed['servers']}, "
            f"sim on CPU {placed['servers']}") in sweep.text()
    assert "warning: placement" not in sweep.text()
    assert [r["arm"] for r in read_csv(run_dir / "summary.csv")] == ["cmd", "sim"]


def test_a_server_sharing_the_load_cpu_is_warned_before_the_sweep(write_scenario,
                                                                 run_sweep) -> None:
    placed = {"servers": cpu_sets.words(HAVE), "load": cpu_sets.words(LOAD)}
    done = run_sweep(str(write_scenario(_scenario(placed, free_port()))), "--dry-run")
    assert done.returncode == 0, done.stderr
    shared = cpu_sets.words(LOAD)
    for arm in ("cmd", "sim"):
        assert (f"warning: placement: the load and arm {arm}'s server share CPU {shared}"
                in done.stdout), done.stdout


def test_a_cpu_the_machine_lacks_is_a_one_line_error(write_scenario, run_sweep,
                                                    tmp_path: Path) -> None:
    missing = max(HAVE) + 1
    done = run_sweep(str(write_scenario(_scenario({"load": str(missing)}, free_port()))),
                     "--out", "out")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        f"specload: error: placement.load: CPU {missing} is not one this process may use (it may "
        f"use {cpu_sets.words(HAVE)})"]
    assert not (tmp_path / "out").exists()
