"""A rung whose requests outlast its window's cap still sees its users start requests.

Eight closed-loop users of equal 200-token requests on a 20 ms-per-step simulator move
in step: each request takes 4 s, and a window capped at 2 s (`max_measure_s`) opening
after a 1 s warmup would see none of them start (the report's "none sent": no TTFT at
all). The window stretches until a request has ended inside it (`ladder.window_cap`):
the rung gets TTFTs, and its progress line says the window ran past its cap and why.
"""

from __future__ import annotations

import json

from tests.support.sweeps import read_csv, run_dir_of


def test_a_window_stretches_until_its_users_start_requests(tmp_path, write_scenario,
                                                           run_sweep) -> None:
    scenario = write_scenario({
        "name": "long", "ladder": [8], "warmup_s": 1, "measure_s": 1, "max_measure_s": 2,
        "min_requests": 4, "drain_s": 10,
        "request": {"max_tokens": 200, "ignore_eos": True},
        "arms": [{"name": "plain", "sim": {"profile": "bench-20ms", "spec": "off"}}]})
    done = run_sweep(str(scenario), "--out", "out")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    run = tmp_path / run_dir_of(done.stdout)
    (rung,) = read_csv(run / "plain" / "locust_rungs.csv")
    window = float(rung["measure_end"]) - float(rung["measure_start"])
    # the users' first requests end about 3 s into it; 4 x max_measure_s at most
    assert 2.5 < window <= 8.0 + 1.0, window
    assert "window stretched to" in done.stdout and "(max 2s)" in done.stdout
    summary = json.loads((run / "summary.json").read_text())
    (row,) = summary["summary"]
    assert row["requests_started"] >= 8 and row["ttft_p50_ms"] > 0, row
    assert not [w for w in summary["warnings"] if w["kind"] == "none_started"]
