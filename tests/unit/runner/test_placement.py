"""CPU placement: CPU lists parsed and written as the kernel does, `apart` split, every
CPU checked against the machine, shared sets warned, placeholders filled, and a child
started on its set (read back from /proc)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from specload.config.scenario import parse_scenario
from specload.errors import UserError
from specload.host import cpu_sets
from specload.runner import placement
from specload.runner.processes import spawn_group, stop_process_group


@pytest.mark.parametrize(("text", "cpus", "back"), [
    ("0", {0}, "0"), ("0-3", {0, 1, 2, 3}, "0-3"), ("0,2-3", {0, 2, 3}, "0,2-3"),
    ("3, 1,2", {1, 2, 3}, "1-3"), ("5,0-1,7", {0, 1, 5, 7}, "0-1,5,7")])
def test_cpu_lists_read_and_written_as_the_kernel_does(text: str, cpus: set[int],
                                                       back: str) -> None:
    assert cpu_sets.parse(text) == cpus
    assert cpu_sets.words(cpus) == back


@pytest.mark.parametrize(("text", "said"), [
    ("", "expected a CPU list"), ("a", "expected a CPU list"), ("1-", "expected a CPU list"),
    ("3-1", "runs backwards (write 1-3)")])
def test_bad_cpu_lists_say_why(text: str, said: str) -> None:
    with pytest.raises(ValueError, match=re.escape(said)):
        cpu_sets.parse(text)


@pytest.mark.parametrize(("usable", "load_cpus", "servers", "load"), [
    ({0, 1}, 1, {0}, {1}), ({0, 1, 2, 3}, 1, {0, 1, 2}, {3}), ({0, 1, 2, 3}, 2, {0, 1}, {2, 3}),
    ({0, 1}, 4, {0}, {1}), ({2, 5, 9}, 1, {2, 5}, {9})])
def test_apart_gives_the_load_the_last_cpus_and_the_servers_the_rest(
        usable: set[int], load_cpus: int, servers: set[int], load: set[int]) -> None:
    assert cpu_sets.split_apart(usable, load_cpus) == (servers, load)


def _scenario(placed: Any = None, **command: Any) -> Any:
    raw: dict[str, Any] = {"name": "t", "arms": [
        {"name": "on", "spec": "on", "command": {"start": "exec srv -t {ncpus} --cpus {cpus}",
                                                 "base_url": "http://127.0.0.1:1", **command}},
        {"name": "off", "sim": {"profile": "seed-glm", "spec": "off"}},
        {"name": "far", "url": "http://127.0.0.1:2"}]}
    if placed is not None:
        raw["placement"] = placed
    return parse_scenario(raw, Path("."))


def test_apart_on_two_cpus_keeps_every_local_server_off_the_load_cpu() -> None:
    plan = placement.plan(_scenario("apart"), have=frozenset({0, 1}))
    assert (plan.servers, plan.load) == ({0}, {1})
    scenario = _scenario("apart")
    assert [plan.for_arm(a) for a in scenario.arms] == [{0}, {0}, None]
    assert plan.lines == ["placement: load on CPU 1; on on CPU 0, off on CPU 0"]


def test_apart_with_more_load_processes_gives_the_load_a_cpu_each() -> None:
    plan = placement.plan(_scenario("apart"), processes=2, have=frozenset(range(8)))
    assert (plan.servers, plan.load) == (set(range(6)), {6, 7})


def test_apart_on_one_cpu_says_it_cannot() -> None:
    plan = placement.plan(_scenario("apart"), have=frozenset({3}))
    assert (plan.servers, plan.load) == (None, None)
    assert plan.lines[0] == ("note: placement apart: this process may use only CPU 3, so "
                             "servers and load share it")


def test_a_shared_cpu_is_warned_for_each_server_on_it() -> None:
    plan = placement.plan(_scenario({"servers": "0-1", "load": "1"}, cpus="0"),
                          have=frozenset({0, 1}))
    warnings = [x for x in plan.lines if x.startswith("warning")]
    assert warnings == ["warning: placement: the load and arm off's server share CPU 1: a "
                        "busy server delays the load's timestamps and holds its concurrency "
                        f"down ({placement.GUIDE})"]


def test_a_pinned_server_beside_an_unpinned_load_is_warned() -> None:
    plan = placement.plan(_scenario(cpus="0"), have=frozenset({0, 1}))
    assert any("the load and arm on's server share CPU 0" in x for x in plan.lines)


def test_no_placement_with_local_servers_points_at_apart() -> None:
    plan = placement.plan(_scenario(), have=frozenset({0, 1}))
    assert plan.lines == [f"note: servers started here and the load share every CPU; "
                          f"`placement: apart` keeps them apart ({placement.GUIDE})"]
    assert placement.plan(_scenario(), have=frozenset({0})).lines == []


@pytest.mark.parametrize(("placed", "command", "said"), [
    ({"load": "2"}, {}, "placement.load: CPU 2 is not one this process may use (it may use "
     "0-1)"),
    ({"servers": "0,4-5"}, {}, "placement.servers: CPU 4-5 is not one"),
    (None, {"cpus": "7"}, "arms[0].command.cpus: CPU 7 is not one")])
def test_a_cpu_this_machine_does_not_offer_is_a_one_line_error(placed: Any, command: Any,
                                                               said: str) -> None:
    with pytest.raises(UserError, match=re.escape(said)):
        placement.plan(_scenario(placed, **command), have=frozenset({0, 1}))


@pytest.mark.parametrize(("placed", "said"), [
    ("anywhere", "placement: expected apart or {servers: CPU list, load: CPU list}"),
    ({"apart": True, "load": "1"}, "placement: give apart or CPU lists, not both"),
    ({"load": "x"}, "placement.load: expected a CPU list")])
def test_the_scenario_check_reads_placement(placed: Any, said: str) -> None:
    with pytest.raises(UserError, match=re.escape(said)):
        _scenario(placed)


def test_placeholders_take_the_set_or_every_usable_cpu() -> None:
    line = "exec srv -t {ncpus} --cpus {cpus}"
    assert placement.fill(line, frozenset({0, 2, 3})) == "exec srv -t 3 --cpus 0,2-3"
    assert placement.fill(line, None, frozenset({0, 1})) == "exec srv -t 2 --cpus 0-1"
    assert placement.fill("exec srv '{\"k\": 3}'", frozenset({0})) == "exec srv '{\"k\": 3}'"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two usable CPUs")
def test_a_child_and_every_thread_it_starts_run_on_its_set(tmp_path: Path) -> None:
    cpu = min(os.sched_getaffinity(0))
    code = ("import os, threading, time\n"
            "t = threading.Thread(target=time.sleep, args=(30,)); t.start()\n"
            "print(os.sched_getaffinity(0), flush=True); time.sleep(30)\n")
    log = tmp_path / "child.log"
    proc = spawn_group([sys.executable, "-c", code], log, what=None,
                       cpus=frozenset({cpu}))
    try:
        for _ in range(200):
            if log.read_text().strip():
                break
            subprocess.run(["sleep", "0.05"], check=True)
        tasks = list(Path(f"/proc/{proc.pid}/task").iterdir())
        assert len(tasks) >= 2
        assert {placement.allowed(int(t.name)) for t in tasks} == {frozenset({cpu})}
        assert os.sched_getaffinity(0) != {cpu}  # this process is not moved
    finally:
        stop_process_group(proc, timeout=2)
