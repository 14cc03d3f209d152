"""The shipped quickstart scenario, end to end: sweep, files, report, and its verdict."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_quickstart_sweep_and_report(tmp_path: Path, run_sweep, tools) -> None:
    t0 = time.monotonic()
    res = run_sweep(str(REPO / "scenarios" / "quickstart.yaml"), "--out", "out", timeout=480)
    print(f"quickstart sweep + report took {time.monotonic() - t0:.0f} s")
    assert res.returncode == 0, res.stdout + res.stderr
    run_dir = tmp_path / tools.run_dir_of(res.stdout)
    manifest = tools.read_manifest(run_dir)
    assert manifest["status"] == "done"
    assert {a["role"] for a in manifest["arms"]} == {"spec_on", "spec_off"}
    for name in ("report.html", "summary.csv", "summary.json"):
        assert (run_dir / name).stat().st_size > 0
    rates = {}
    for arm in ("spec-on", "spec-off"):
        steps = tools.read_csv(run_dir / arm / "locust_steps.csv")
        assert [int(s["users"]) for s in steps] == manifest["scenario"]["ladder"]
        rates[arm] = {int(s["users"]): tools.counter_rate(run_dir / arm, s,
                                                          "vllm:generation_tokens_total")
                      for s in steps}
    low, high = min(rates["spec-on"]), max(rates["spec-on"])
    # speculation pays off at low concurrency and costs throughput at high concurrency
    assert rates["spec-on"][low] > 1.1 * rates["spec-off"][low], rates
    assert rates["spec-on"][high] < rates["spec-off"][high], rates
