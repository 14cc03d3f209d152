"""`workload:` in a scenario: kinds, their keys, one-line errors, and the Locust command."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from specload.config.scenario import Scenario, parse_scenario
from specload.errors import UserError
from specload.runner.locust_proc import LOCUSTFILES, LoadMode, locust_command
from tests.support.trace_files import synthetic, write_mooncake

BASE: dict[str, Any] = {"name": "w", "arms": [{"name": "a", "url": "http://127.0.0.1:1"}]}


def scenario(tmp_path: Path, **extra: Any) -> Scenario:
    return parse_scenario({**BASE, **extra}, tmp_path)


def problems(tmp_path: Path, **extra: Any) -> list[str]:
    with pytest.raises(UserError) as err:
        scenario(tmp_path, **extra)
    return str(err.value).splitlines()[1:]


def test_default_is_closed_loop_users(tmp_path: Path) -> None:
    s = scenario(tmp_path)
    assert s.workload.kind == "users" and s.levels == s.ladder
    cmd = locust_command(s, "URL", tmp_path / "p", s.levels, LoadMode())
    assert cmd[cmd.index("-f") + 1] == str(LOCUSTFILES["users"])
    assert "--think-time" not in cmd and "--rates" not in cmd


def test_sessions_pass_their_keys_to_locust(tmp_path: Path) -> None:
    convs = tmp_path / "c.json"
    convs.write_text(json.dumps([{"conversations": [{"from": "human", "value": "hi"}]}]))
    s = scenario(tmp_path, ladder=[1, 4], workload={
        "kind": "sessions", "conversations": "c.json", "turns": "uniform:2:4",
        "think_time": {"kind": "lognormal", "mean": 6, "sigma": 0.8}})
    cmd = locust_command(s, "URL", tmp_path / "p", s.levels, LoadMode())
    assert cmd[cmd.index("-f") + 1] == str(LOCUSTFILES["sessions"])
    args = dict(itertools.pairwise(cmd))
    assert args["--ladder"] == "1,4" and args["--think-time"] == "lognormal:6:0.8"
    assert args["--conversations"] == str(convs) and args["--turns"] == "uniform:2:4"


def test_open_loop_steps_rates(tmp_path: Path) -> None:
    s = scenario(tmp_path, workload={"kind": "open", "rates": [0.5, 2, 8], "arrivals": "gamma",
                                     "cv": 2, "max_in_flight": 32})
    assert s.levels == [0.5, 2, 8]
    cmd = locust_command(s, "URL", tmp_path / "p", [2, 8], LoadMode())
    args = dict(itertools.pairwise(cmd))
    assert cmd[cmd.index("-f") + 1] == str(LOCUSTFILES["open"])
    assert (args["--rates"], args["--arrivals"], args["--arrival-cv"],
            args["--max-in-flight"]) == ("2,8", "gamma", "2.0", "32")
    assert "--ladder" not in cmd


@pytest.mark.parametrize("workload, expected", [
    ({"kind": "open"}, "workload: kind: open needs `rates`"),
    ({"kind": "open", "rates": [3, 1]}, "workload.rates: rate 1: the rates must increase"),
    ({"kind": "sessions", "think_time": "lognormal:0:1"},
     "workload.think_time: lognormal:0:1: the mean must be more than 0"),
    ({"kind": "sessions", "turns": 0}, "workload.turns: 0: the length must be at least 1"),
    ({"kind": "sessions", "conversations": "none.json"},
     "workload.conversations: conversations file 'none.json' not found"),
    ({"kind": "users", "think_time": 3},
     "workload: `think_time` is for kind: sessions (or open with unit: sessions)"),
    ({"kind": "sessions", "rates": [1]}, "workload: `rates` is for kind: open"),
    ({"kind": "open", "rates": [1], "cv": 2}, "workload: cv needs arrivals: gamma"),
    ({"kind": "open", "rates": [1], "max_in_flight": 0},
     "workload.max_in_flight: must be at least 1, got 0"),
    ({"kind": "crowd"}, "workload.kind: must be one of users, sessions, open"),
    ({"kind": "trace", "speed": [1]}, "workload: kind: trace needs `trace`"),
    ({"kind": "open", "rates": [1], "speed": [1]}, "workload: `speed` is for kind: trace"),
    ({"kind": "trace", "trace": "none.jsonl", "speed": [1]},
     "workload.trace: trace file 'none.jsonl' not found"),
])
def test_bad_workloads_get_one_line_each(tmp_path: Path, workload: dict[str, Any],
                                         expected: str) -> None:
    (line,) = problems(tmp_path, workload=workload)
    assert line.strip().startswith(expected), line


def test_open_loop_rejects_a_ladder(tmp_path: Path) -> None:
    (line,) = problems(tmp_path, ladder=[1, 2], workload={"kind": "open", "rates": [1]})
    assert "an open-loop run steps `workload.rates`, not `ladder`" in line


def test_a_broken_conversations_file_names_its_line(tmp_path: Path) -> None:
    (tmp_path / "c.jsonl").write_text('{"conversations": []}\n{oops\n')
    (line,) = problems(tmp_path, workload={"kind": "sessions", "conversations": "c.jsonl"})
    assert "conversations file 'c.jsonl' line 2: not valid JSON" in line


def test_a_trace_replay_steps_speeds(tmp_path: Path) -> None:
    write_mooncake(tmp_path / "t.jsonl", synthetic(40, rate=4.0))
    s = scenario(tmp_path, warmup_s=2, workload={
        "kind": "trace", "trace": "t.jsonl", "speed": [1, 4], "start_s": 1,
        "duration_s": 8, "block_tokens": 16})
    assert s.levels == [1, 4] and s.trace_window.length_s == 8
    assert s.nominal_rung_s == 2 + (8 + 2) / 2 and s.rung_bound_s == 2 + 8  # the slowest
    args = dict(itertools.pairwise(locust_command(s, "URL", tmp_path / "p", [4], LoadMode())))
    assert args["-f"] == str(LOCUSTFILES["trace"])
    assert (args["--speeds"], args["--trace"], args["--trace-start"], args["--trace-duration"],
            args["--block-tokens"]) == ("4", str(tmp_path / "t.jsonl"), "1.0", "8.0", "16")


def test_a_trace_replay_names_a_bad_line_and_an_empty_window(tmp_path: Path) -> None:
    path = write_mooncake(tmp_path / "t.jsonl", synthetic(5, rate=1.0))
    (line,) = problems(tmp_path, workload={"kind": "trace", "trace": "t.jsonl", "speed": [1],
                                           "start_s": 3600})
    assert "workload: t.jsonl" not in line and "no request in the window from 3600 s" in line
    path.write_text(path.read_text() + '{"timestamp": 9}\n')
    (line,) = problems(tmp_path, workload={"kind": "trace", "trace": "t.jsonl", "speed": [1]})
    assert "workload.trace: trace file 't.jsonl' line 6: not a JSON object" in line
    write_mooncake(path, synthetic(5, rate=1.0))
    (line,) = problems(tmp_path, ladder=[1], workload={"kind": "trace", "trace": "t.jsonl",
                                                       "speed": [1]})
    assert "a trace replay steps `workload.speed`, not `ladder`" in line


@pytest.mark.parametrize("path", sorted(Path("scenarios").glob("*.yaml")), ids=lambda p: p.stem)
def test_manifest_dump_of_every_shipped_scenario_parses_again(path: Path) -> None:
    """`--resume` re-reads the scenario from manifest.json, where every key is written."""
    from specload.config.scenario import load_scenario

    sc = load_scenario(path)
    again = parse_scenario(json.loads(json.dumps(sc.public_dict())), path.parent, source="m")
    assert again.public_dict() == sc.public_dict()
