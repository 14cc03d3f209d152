"""One sweep against a simulated server injecting every fault kind, with --processes 2.

The sweep runs to the end; each failure is in the request records under its
`error_kind` and in the report's per-rung `failures_by_kind`, which equal the records'
counts for requests started in the measure window; every request the server saw (its
trace) is in the records exactly once although load came from two worker processes and
the run ended on the shape's last tick; and no API key from the environment appears in
any file written (CSVs, manifest, HTML, logs, server log and trace) or in the output.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from specload.sim.faults import CLIENT_ERROR_KINDS
from tests.support.sweeps import read_csv, read_manifest, read_trace, run_dir_of

PROFILE = "h100-llama8b-eagle3"

CUSTOM_KEY = "sk-specload-secret-custom-7d1c0b"
OPENAI_KEY = "sk-specload-secret-openai-42af9e"
# stalls well past the users' request timeout, itself well past a chunk gap on a busy
# machine (at 0.5 s, with a 250-user soak beside it, a plain request once timed out)
FAULTS = ["error500:0.05", "error429:0.05:7", "cut:0.05:3", "stall_first_byte:0.05:3",
          "stall_between:0.05:3", "malformed:0.05", "stream_error:0.05"]
KIND_OF_FAULT = {f.split(":")[0]: CLIENT_ERROR_KINDS[f.split(":")[0]] for f in FAULTS}


@pytest.mark.slow
def test_every_fault_kind_counted_nothing_lost_no_key_leaked(
    tmp_path: Path, monkeypatch, write_scenario, run_sweep
) -> None:
    monkeypatch.setenv("SPECLOAD_REL_KEY", CUSTOM_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    scenario = write_scenario({
        "name": "faults", "ladder": [2, 4], "warmup_s": 1, "measure_s": 4, "processes": 2,
        "request": {"max_tokens": 16, "ignore_eos": True, "request_timeout_s": 1.2,
                    "api_key_env": "SPECLOAD_REL_KEY"},
        "arms": [{"name": "faulty", "sim": {"profile": PROFILE, "spec": "on",
                                            "trace": True, "faults": FAULTS}}],
    })
    res = run_sweep(str(scenario), "--out", "out")
    assert res.returncode == 0, res.stdout + res.stderr
    run_dir = tmp_path / run_dir_of(res.stdout)
    arm = run_dir / "faulty"
    assert read_manifest(run_dir)["status"] == "done"
    rows = read_csv(arm / "locust_requests.csv")
    trace = read_trace(arm / "server_trace.jsonl")

    # nothing lost, nothing twice: server trace and client records hold the same requests
    ids = Counter(r["request_id"] for r in rows)
    assert max(ids.values()) == 1 and len({r["client_id"] for r in rows}) == 2
    assert set(ids) == {t["request_id"] for t in trace}
    assert len(trace) >= 100

    # each fault the server injected became a failure of the matching kind
    by_id = {r["request_id"]: r for r in rows}
    for t in trace:
        row = by_id[t["request_id"]]
        if row["interrupted"] == "0":
            assert row["error_kind"] == KIND_OF_FAULT.get(t["fault"], ""), (t, row)
            if t["fault"] in ("error500", "error429"):
                assert int(row["status"]) == t["status"] == int(t["fault"][5:])
    assert set(KIND_OF_FAULT.values()) <= {r["error_kind"] for r in rows}

    # the report groups them by kind, per rung, exactly as the records say
    summary = json.loads((run_dir / "summary.json").read_text())["summary"]
    steps = read_csv(arm / "locust_rungs.csv")
    assert [s["concurrency"] for s in summary] == [2, 4]
    for row, step in zip(summary, steps, strict=True):
        t0, t1 = float(step["measure_start"]), float(step["measure_end"])
        expected = Counter(r["error_kind"] for r in rows if t0 <= float(r["start"]) < t1
                           and r["error_kind"] not in ("", "interrupted"))
        assert row["failures_by_kind"] == dict(expected)
        assert row["failures"] == sum(expected.values()) > 0
    html = (run_dir / "report.html").read_text()
    assert all(kind in html for kind in KIND_OF_FAULT.values())

    # the keys are nowhere: output, run folder (incl. server log and trace), scenario folder
    assert CUSTOM_KEY not in res.stdout + res.stderr and OPENAI_KEY not in res.stdout
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {"server.log", "locust.log", "manifest.json", "report.html", "server_trace.jsonl",
            "locust_requests.csv", "locust_failures.csv"} <= {p.name for p in written}
    for path in written:
        data = path.read_bytes()
        assert CUSTOM_KEY.encode() not in data and OPENAI_KEY.encode() not in data, path
        assert b"sk-specload-secret" not in data, path
