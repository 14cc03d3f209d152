"""Output parity end to end: a simulated spec-on server made to change one token of some
replies (`alter_token`) is flagged, with where its replies part; a clean spec-on server
matches the spec-off one on every prompt both sent.

Three arms at temperature 0: `altered` changes the token at `POSITION` of a seeded share
of its replies, `spec-on` changes nothing, `spec-off` is the reference. What must hold:
- every request's record carries its prompt's index and digest, its max_tokens and the
  fingerprint of its reply, never the reply's text (the run did not ask for it);
- the clean arm's replies are identical to spec-off's at every rung, on every prompt the
  two sent there;
- the altered arm's replies differ from spec-off's exactly for the requests its server
  altered (its trace names them), and only from the altered token on: the report's
  median first difference lies in the block of text around `POSITION`;
- the report flags the altered arm, not the clean one, in its console, summary and
  warnings.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specload.report import render
from specload.report.run_files import read_rep
from specload.report.windows import rung_windows
from specload.runfiles.records import REQUESTS_SUFFIX
from tests.support.sweeps import read_csv, read_trace, run_dir_of

pytestmark = [pytest.mark.slow, pytest.mark.long(70)]

POSITION = 20
SHARE = 0.3
LADDER = [1, 6]


@pytest.fixture(scope="module")
def parity_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    from tests.support import sweeps

    folder = tmp_path_factory.mktemp("parity")
    sim = {"profile": "seed-glm", "trace": True}
    scenario = sweeps.write_scenario(folder, {
        "name": "parity", "ladder": LADDER, "warmup_s": 1, "measure_s": 4,
        "min_requests": 12,
        "request": {"max_tokens": 48, "ignore_eos": True, "temperature": 0},
        "arms": [{"name": "altered", "role": "spec_on",
                  "sim": {**sim, "spec": "on", "faults": [f"alter_token:{SHARE}:{POSITION}"]}},
                 {"name": "spec-on", "sim": {**sim, "spec": "on"}},
                 {"name": "spec-off", "sim": {**sim, "spec": "off"}}],
    })
    done = sweeps.run_sweep(folder, str(scenario), "--out", "out", timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return folder / run_dir_of(done.stdout), done.stdout


def _rows(run: Path, arm: str) -> list[dict[str, str]]:
    return read_csv(run / arm / f"locust{REQUESTS_SUFFIX}")


def test_records_keep_the_prompt_and_a_fingerprint_not_the_text(parity_run) -> None:
    run, _ = parity_run
    for arm in ("altered", "spec-on", "spec-off"):
        rows = [r for r in _rows(run, arm) if not r["error_kind"]]
        assert rows and all(r["prompt_index"] and r["max_tokens"] == "48" for r in rows)
        assert all(len(r["prompt_hash"]) == 16 for r in rows)
        assert all(len(r["reply_hash"]) == 16 and r["reply_blocks"] for r in rows)
        assert all(r["reply_text"] == "" for r in rows)


def test_the_clean_arm_matches_and_the_altered_one_parts_where_its_server_altered(
        parity_run) -> None:
    run, stdout = parity_run
    report = render.build(run)
    found = report.parity
    assert found is not None and found.reference == "spec-off" and found.compared
    arms = {a.arm: a for a in found.arms}
    clean, altered = arms["spec-on"], arms["altered"]
    assert [label for label, _ in clean.rungs] == [f"C={c}" for c in LADDER]
    assert all(got.compared >= 5 and got.share == 1.0 for _, got in clean.rungs), clean
    assert not clean.beyond_floor

    # which of the altered arm's compared replies its server altered, by its trace
    faulted = {t["request_id"] for t in read_trace(run / "altered" / "server_trace.jsonl")
               if t.get("fault") == "alter_token"}
    reference = {(r["prompt_hash"], r["max_tokens"]): r["reply_hash"]
                 for r in _rows(run, "spec-off") if not r["error_kind"]}
    data = read_rep(run / "altered" / "locust")
    windows, _ = rung_windows(data.rungs, data.history, data.requests)
    rows = [r for r in _rows(run, "altered") if not r["error_kind"]
            and any(w.start <= float(r["start"]) < w.end for w in windows)
            and (r["prompt_hash"], r["max_tokens"]) in reference]
    assert faulted and rows
    for r in rows:
        same = r["reply_hash"] == reference[(r["prompt_hash"], r["max_tokens"])]
        assert same == (r["request_id"] not in faulted), r["request_id"]
    differ = sum(r["request_id"] in faulted for r in rows)
    assert altered.overall.compared - altered.overall.identical == differ > 0
    # the median first difference: in the 16-character block around the altered token
    assert abs(altered.overall.first_diff_tokens - POSITION) <= 3, altered.overall
    assert altered.beyond_floor

    summary = json.loads((run / "summary.json").read_text())
    kinds = [(w["kind"], w["arm"]) for w in summary["warnings"]]
    assert ("output_parity", "altered") in kinds and ("output_parity", "spec-on") not in kinds
    by_arm = {a["arm"]: a for a in summary["parity"]["arms"]}
    assert by_arm["spec-on"]["overall"]["share"] == 1.0
    assert "replies against spec-off (same prompt, same rung; temperature 0):" in stdout
    assert f"  C={LADDER[0]}: altered " in stdout and "spec-on 100% identical of" in stdout
