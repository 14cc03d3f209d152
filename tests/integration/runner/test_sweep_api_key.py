"""One key for every request: a key-protected server keeps its metrics, no file the key.

Two simulated llama.cpp servers require a key (`--api-key-env`: the key is on no command
line) and guard `/metrics` and `/v1/models` as llama-server does. The scenario names no
key variable; the key is in `OPENAI_API_KEY`, as the README says. Readiness, model
discovery, `/metrics` sampling and the users all authorise: no request fails, the
report has the batch size and the acceptance length, and no file of the run holds the
key. Before the runner resolved the key as the users do, `/metrics` answered 401 and
the report had neither.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.support.sweeps import read_csv, run_dir_of

KEY = "sk-test-7d41c2aa90"
PROFILE = "h100-llama8b-eagle3"


@pytest.fixture
def keyed_sims(sim_server, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SIM_TEST_KEY", KEY)  # the simulators' key, from their environment
    args = ["--api-key-env", "SIM_TEST_KEY", "--metrics"]
    return [sim_server(profile=PROFILE, spec=spec, flavor="llamacpp", extra_args=args)
            for spec in ("on", "off")]


def test_every_request_carries_the_key_and_no_file_holds_it(
        tmp_path: Path, keyed_sims, write_scenario, run_sweep) -> None:
    on, off = keyed_sims
    data = {"name": "keyed", "ladder": [1, 4], "warmup_s": 1, "measure_s": 3,
            "min_requests": 0, "request": {"max_tokens": 32, "ignore_eos": True},
            "arms": [{"name": "spec-on", "url": on.url, "spec": "on", "engine": "llamacpp"},
                     {"name": "spec-off", "url": off.url, "spec": "off",
                      "engine": "llamacpp"}]}
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    res = run_sweep(str(write_scenario(data)), "--out", "out", env=env)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    # a status 401, not the digits of a time stamp (the run folder at 18:40:16 is
    # ...T184016Z)
    assert "Unauthorized" not in res.stdout + res.stderr
    assert not re.search(r"(?<!\d)401(?!\d)", res.stdout), res.stdout
    run = tmp_path / run_dir_of(res.stdout)
    rows = read_csv(run / "summary.csv")
    assert {r["failures"] for r in rows} == {"0"}
    assert all(float(r["server_running_mean"]) > 0 for r in rows)
    spec_on = [r for r in rows if r["arm"] == "spec-on"]
    assert all(r["accept_len_source"] == "server" and float(r["accept_len"]) > 1.5
               for r in spec_on), spec_on
    holders = [p for p in run.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert holders == []
