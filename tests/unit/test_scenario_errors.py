"""Broken scenario files through the real CLI: `specload sweep bad.yaml` prints exactly
these lines on stderr and exits with status 2, before any server or Locust starts.

Runs `specload.cli.main` in-process (the console script calls the same function) with
`--dry-run`, so a case that wrongly passed validation would print a plan, not run.
tests/unit/runner/test_scenario_validation.py checks fragments of further messages on
`load_scenario` directly; this table pins the complete text the user sees.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from specload.cli import main

A = "arms:\n  - name: a\n    sim: {spec: 'on'}\n"
ERR = "specload: error: "
ONE = ERR + "bad.yaml: 1 problem(s):\n  "

CASES = [
    # YAML syntax
    ("tab indent", "name: x\n\tladder: [1]\n" + A,
     ERR + "bad.yaml:2:1: YAML syntax error: found character '\\t' that cannot start any token"),
    ("unclosed list", "name: x\nladder: [1, 2\n" + A,
     ERR + "bad.yaml:3:5: YAML syntax error: expected ',' or ']', but got ':'"),
    ("colon in a value", "name: x: y\n" + A,
     ERR + "bad.yaml:1:8: YAML syntax error: mapping values are not allowed here"),
    ("empty file", "", ERR + "bad.yaml: the top level must be a mapping with `name:` and `arms:`"),
    ("top-level list", "- a\n- b\n",
     ERR + "bad.yaml: the top level must be a mapping with `name:` and `arms:`"),
    # unknown keys
    ("unknown top-level key", "name: x\nrepeat: 2\n" + A,
     ONE + "repeat: unknown key; check its spelling and indentation"),
    ("categories the set lacks", "name: x\nrequest: {categories: {poetry: 1}}\n" + A,
     ONE + "request: categories: the prompt set has no poetry prompts (it has chat, code, "
     "extraction, json, multi_turn, rag, reasoning, summarisation, translation)"),
    ("categories of synthetic prompts",
     "name: x\nrequest: {categories: code, prompt_tokens: 64}\n" + A,
     ONE + "request: categories select from the prompt set; synthetic prompts "
     "(prompt_tokens) have none"),
    ("unknown request key", "name: x\nrequest: {max_token: 5}\n" + A,
     ONE + "request.max_token: unknown key; check its spelling and indentation"),
    ("unknown arm key", "name: x\narms:\n  - name: a\n    sim: {spec: 'on'}\n    port: 80\n",
     ONE + "arms[0].port: unknown key; check its spelling and indentation"),
    # wrong types and ranges
    ("name is a number", "name: 5\n" + A, ONE + "name: expected a text value, got 5"),
    ("max_tokens is text", "name: x\nrequest: {max_tokens: lots}\n" + A,
     ONE + "request.max_tokens: expected a whole number, got 'lots'"),
    ("ignore_eos is text", "name: x\nrequest: {ignore_eos: maybe}\n" + A,
     ONE + "request.ignore_eos: expected true or false, got 'maybe'"),
    ("negative warmup", "name: x\nwarmup_s: -1\n" + A,
     ONE + "warmup_s: must be at least 0, got -1"),
    ("zero timeout", "name: x\nrequest: {request_timeout_s: 0}\n" + A,
     ONE + "request.request_timeout_s: must be more than 0, got 0"),
    ("k too large", "name: x\narms:\n  - name: a\n    sim: {spec: 'on', k: 99}\n",
     ONE + "arms[0].sim.k: must be at most 16, got 99"),
    ("arms is a mapping", "name: x\narms: {a: 1}\n", ONE + "arms: expected a list, got {'a': 1}"),
    ("arm is a word", "name: x\narms: [spec-on]\n",
     ONE + "arms[0]: expected a mapping of keys, got 'spec-on'"),
    ("unknown role", "name: x\narms:\n  - name: a\n    url: http://h:1\n    role: baseline\n",
     ONE + "arms[0].role: must be one of spec_on, spec_off, verify, other"),
    ("worker port out of range", "name: x\ndistributed: {workers: 2, master_bind_port: 70000}\n"
     + A, ONE + "distributed.master_bind_port: must be at most 65535, got 70000"),
    ("unknown fault kind",
     "name: x\narms:\n  - name: a\n    sim: {spec: 'on', faults: [boom:0.1]}\n",
     ONE + "arms[0].sim.faults: fault 'boom:0.1' must look like KIND:FRACTION[:PARAM], e.g. "
     "cut:0.1:20, with KIND one of error500, error400, error429, empty, cut, "
     "stall_first_byte, stall_between, malformed, stream_error, alter_token, "
     "0 <= FRACTION <= 1 and PARAM >= 0"),
    # ladders
    ("ladder is a number", "name: x\nladder: 5\n" + A,
     ONE + "ladder: expected a list of user counts, or auto, got 5"),
    ("auto without its search", "name: x\nladder: auto\n" + A,
     ONE + "(top level): ladder: auto needs `search:` with at least max_concurrency (the "
     "highest C the search may run)"),
    ("a search without auto", "name: x\nsearch: {max_concurrency: 64}\n" + A,
     ONE + "(top level): `search:` plans the ladder: set `ladder: auto` (or leave "
     "`search:` out)"),
    ("a search with no top", "name: x\nladder: auto\nsearch: {min_concurrency: 4}\n" + A,
     ONE + "search: max_concurrency is required: the highest C the search may run"),
    ("a search upside down",
     "name: x\nladder: auto\nsearch: {min_concurrency: 64, max_concurrency: 8}\n" + A,
     ONE + "search: max_concurrency (8) must be more than min_concurrency (64)"),
    ("fractional users", "name: x\nladder: [1, 2.5]\n" + A,
     ONE + "ladder: rung 1: user count 2.5 is not a whole number"),
    ("negative users", "name: x\nladder: [-1, 2]\n" + A,
     ONE + "ladder: rung 0: user count -1 must be at least 1"),
    ("decreasing ladder", "name: x\nladder: [10, 5]\n" + A,
     ONE + "ladder: rung 1: the ladder must increase, but 5 follows 10"),
    # URLs
    ("ftp URL", "name: x\narms:\n  - name: a\n    url: ftp://h/x\n",
     ONE + "arms[0].url: 'ftp://h/x' is not an http(s) URL; write it like http://127.0.0.1:8000"),
    ("URL without host", "name: x\narms:\n  - name: a\n    url: 'http://'\n",
     ONE + "arms[0].url: 'http://' is not an http(s) URL; write it like http://127.0.0.1:8000"),
    ("base_url without scheme",
     "name: x\narms:\n  - name: a\n    command: {start: run, base_url: '127.0.0.1:8000'}\n",
     ONE + "arms[0].command.base_url: '127.0.0.1:8000' is not an http(s) URL; write it like "
     "http://127.0.0.1:8000"),
    # files: prompts and profiles
    ("missing prompt file", "name: x\nrequest: {prompts: data/none.jsonl}\n" + A,
     ONE + "request.prompts: prompts file 'data/none.jsonl' not found (looked at "
     "{dir}/data/none.jsonl)"),
    ("prompt file is a folder", "name: x\nrequest: {prompts: adir}\n" + A,
     ONE + "request.prompts: prompts file 'adir' is a folder, not a file (looked at {dir}/adir)"),
    ("prompt file broken JSON", "name: x\nrequest: {prompts: broken.jsonl}\n" + A,
     ONE + "request.prompts: prompts file 'broken.jsonl' line 2: not valid JSON (Expecting "
     "property name enclosed in double quotes)"),
    ("prompt file empty", "name: x\nrequest: {prompts: empty.jsonl}\n" + A,
     ONE + "request.prompts: prompts file 'empty.jsonl': no prompts"),
    ("prompt file wrong shape", "name: x\nrequest: {prompts: shape.json}\n" + A,
     ONE + "request.prompts: prompts file 'shape.json': a ShareGPT file is a JSON array of "
     "conversations"),
    ("prompt file not UTF-8", "name: x\nrequest: {prompts: latin1.jsonl}\n" + A,
     ONE + "request.prompts: prompts file 'latin1.jsonl': not UTF-8 text (invalid "
     "continuation byte at byte 15)"),
    ("missing profile", "name: x\narms:\n  - name: a\n    sim: {spec: 'on', profile: g/b2.yaml}\n",
     ONE + "arms[0].sim.profile: profile file 'g/b2.yaml' not found (looked at {dir}/g/b2.yaml)"),
    ("profile is a folder", "name: x\narms:\n  - name: a\n    sim: {spec: 'on', profile: p.yaml}\n",
     ONE + "arms[0].sim.profile: profile file 'p.yaml' is a folder, not a file (looked at "
     "{dir}/p.yaml)"),
    # the user's own request fields
    ("extra_body overrides stream", "name: x\nrequest: {extra_body: {stream: false}}\n" + A,
     ONE + "request.extra_body: `stream` is specload's own: every request streams"),
    ("extra_body is a list", "name: x\nrequest: {extra_body: [1]}\n" + A,
     ONE + "request.extra_body: must be a mapping of request fields, e.g. "
     "{chat_template_kwargs: {enable_thinking: false}}"),
    # load steps
    ("a step that does not jump", "name: x\nworkload: {kind: steps, steps: [4, 4]}\n" + A,
     ONE + "workload.steps: step 1: 4 users again: a step must change the count"),
    ("steps without steps", "name: x\nworkload: {kind: steps}\n" + A,
     ONE + "workload: kind: steps needs `steps`, the user counts to step through, e.g. "
     "[4, 128, 4]"),
    ("steps interleaved",
     "name: x\ninterleave: true\nworkload: {kind: steps, steps: [4, 16]}\n" + A,
     ONE + "(top level): interleave: not with kind: steps (each step is measured from the "
     "one before it, in one run)"),
    ("two problems at once", "name: x\nladder: [0]\nwarmup_s: soon\n" + A,
     ERR + "bad.yaml: 2 problem(s):\n  ladder: rung 0: user count 0 must be at least 1\n"
     "  warmup_s: expected a number, got 'soon'"),
]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "adir").mkdir()
    (tmp_path / "p.yaml").mkdir()
    (tmp_path / "broken.jsonl").write_text('{"prompt": "ok"}\n{oops\n')
    (tmp_path / "empty.jsonl").write_text("\n  \n")
    (tmp_path / "shape.json").write_text('{"conversations": []}')
    (tmp_path / "latin1.jsonl").write_bytes('{"prompt": "caf\u00e9"}\n'.encode("latin-1"))
    return tmp_path


@pytest.mark.parametrize(("text", "expected"), [(t, e) for _, t, e in CASES],
                         ids=[case for case, _, _ in CASES])
def test_broken_scenario_exact_message(workdir: Path, capsys: pytest.CaptureFixture[str],
                                       text: str, expected: str) -> None:
    (workdir / "bad.yaml").write_text(text)
    assert main(["sweep", "bad.yaml", "--dry-run"]) == 2
    out, err = capsys.readouterr()
    assert err == expected.replace("{dir}", str(workdir)) + "\n"
    assert out == ""


def test_there_are_at_least_twenty_distinct_cases() -> None:
    assert len({case for case, _, _ in CASES}) == len(CASES) >= 20


def test_unreadable_scenario_files(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workdir / "binary.yaml").write_bytes(b"name: \xff\n")
    assert main(["sweep", "binary.yaml"]) == 2
    assert capsys.readouterr().err == (
        ERR + "scenario file 'binary.yaml' cannot be read: 'utf-8' codec can't decode byte "
        "0xff in position 6: invalid start byte\n")
    assert main(["sweep", "nowhere.yaml"]) == 2
    assert capsys.readouterr().err == ERR + "scenario file 'nowhere.yaml' not found\n"
    assert main(["sweep", "--resume", "adir"]) == 2
    assert capsys.readouterr().err == (
        ERR + "adir is not a sweep folder: manifest.json not found\n")
