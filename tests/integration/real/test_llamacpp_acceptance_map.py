"""A two-point acceptance map on the real llama-server: the knob each arm was set to is
the acceptance its server reports, at every rung.

One spec-on arm with `acceptance: [3.8, 4.0]` and `--spec-synth-len {acceptance}` in its
start command (llama.cpp's benchmarking mode, PR #27711) runs as two servers, against a
plain server, at C = 1 and 4 (`specload sweep` starts and stops all three). The draft
length is 3 (`--spec-draft-n-max 3`) and replies are 256 tokens: a request's last
drafts are cut to the tokens it has left (`get_n_draft_max` in
tools/server/server-context.cpp), which shortens a draft's accepted run, and over 256
tokens that costs about 0.5%. The lengths are near the draft's maximum (4.0 accepts
every drafted token: `common_speculative_synth_rates_resolve` in common/speculative.cpp
gives p = 1) because a window's acceptance is a mean over a few hundred drafts: at 3.8
one draft's accepted count has a standard deviation of 0.66, and a reply of 256 tokens
is about 65 drafts; each window lasts until 6 requests that started in it have ended
(`min_requests`), about 390 drafts, so the mean's standard error is 0.66 / sqrt(390), 0.9%
of 3.8, and 3% is more than three of them however much CPU the servers get (CI runs this
beside the slow tier: counts, no speed; a plain 15 s window at C = 1 held 197 drafts
there); at 3.0 the deviation would be 1.6 and need about nine times the drafts.

Checked: each spec-on rung's acceptance length (the server's counters, `accept_len`)
within 3% of the length its arm was set to, no `acceptance_off_target` warning, and the
map in summary.json on both lengths at both rungs, its break-even read on the lengths
the servers reported.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from specload.engines import ACCEPTANCE
from tests.support import llama_server
from tests.support.sweeps import run_dir_of, run_sweep

SWEEP_TIMEOUT_S = 900
# counts, no speed: CI runs it beside the slow tier
pytestmark = [pytest.mark.real, pytest.mark.untimed, pytest.mark.timeout(SWEEP_TIMEOUT_S + 120)]
LENGTHS = [3.8, 4.0]
DRAFT_N_MAX = 3
LADDER = [1, 4]
TARGET_PCT = 3.0
MIN_REQUESTS = 6  # about 390 drafts a window: 3% is more than three standard errors
MAX_MEASURE_S = 120  # room for 6 requests when the slow tier beside it leaves little CPU


@pytest.fixture(scope="module")
def map_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("llamacpp-map")
    on = llama_server.command_arm("spec-on", 4, llama_server.spec_flags(DRAFT_N_MAX,
                                                                         ACCEPTANCE))
    scenario = {"name": "llamacpp-map", "ladder": LADDER, "warmup_s": 3, "measure_s": 15,
                "min_requests": MIN_REQUESTS, "max_measure_s": MAX_MEASURE_S, "drain_s": 0,
                "verify": False,
                "request": llama_server.request(max_tokens=256),
                "arms": [on | {"acceptance": LENGTHS},
                         llama_server.command_arm("spec-off", 4)]}
    path = folder / "llamacpp-map.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False), encoding="utf-8")
    done = run_sweep(folder, str(path), timeout=SWEEP_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return folder / run_dir_of(done.stdout)


def _summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


def test_each_arm_reports_the_acceptance_it_was_set_to(map_run: Path) -> None:
    summary = _summary(map_run)
    rows = {(r["arm"], r["concurrency"]): r for r in summary["summary"]}
    for length in LENGTHS:
        arm = f"spec-on-a{length:g}"
        for c in LADDER:
            row = rows[(arm, c)]
            assert row["failures"] == 0 and row["accept_len_source"] == "server", row
            assert row["accept_len"] == pytest.approx(length, rel=TARGET_PCT / 100), (arm, c)
    assert not [w for w in summary["warnings"] if w["kind"] == "acceptance_off_target"]
    manifest = json.loads((map_run / "manifest.json").read_text())
    assert {a["name"]: a["acceptance"] for a in manifest["arms"]} == {
        "spec-on-a3.8": 3.8, "spec-on-a4": 4.0, "spec-off": None}


def test_the_map_is_read_on_the_servers_lengths(map_run: Path) -> None:
    summary = _summary(map_run)
    amap = summary["acceptance_map"]
    assert amap["lengths"] == LENGTHS and amap["concurrency"] == [float(c) for c in LADDER]
    assert all(x is not None for row in amap["reported"] for x in row), amap
    assert len(amap["break_even"]) == len(LADDER)
    for j, point in enumerate(amap["break_even"]):  # on the reported lengths, not the set
        reported = [row[j] for row in amap["reported"]]
        expected = {"below": [min(reported)], "above": [max(reported)]}.get(point["bound"])
        if expected:
            assert [point["length"]] == pytest.approx(expected), (point, reported)
        else:
            assert min(reported) <= point["length"] <= max(reported), (point, reported)
    assert all(s > 0 for row in amap["speedup"] for s in row), amap
