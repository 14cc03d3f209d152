"""Open-loop arrivals, headless Locust against a fast fake server.

- The achieved arrival rate in every measure window is within 2% of the target, the
  gaps between the scheduled arrivals pass a KS test for the chosen process (Poisson:
  exponential; gamma with cv 0.5: Erlang of shape 4) and fail it for the other one, and
  so do the gaps between the sends in every window where each send kept to its
  schedule; a send more than `LATE_LIMIT_MS` after it is recorded late, by the client;
  with two load processes as with one. (On a busy machine a load process can wake
  100 ms late: one CI run's 80/s window had 37 such sends, recorded so, and its
  scheduled gaps passed where the sends' did not.)
- Starts held back are recorded as late, never dropped: by the cap when the pool is
  too small for a slow server (also when many of its users free up at once), by the
  client when its load process is starved of CPU (`tests/support/cpu_burner.py`); the
  report says which held the rate down.
(A sweep of open-loop chat sessions is in tests/integration/runner/test_sweep_workloads.py.)
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from specload.report import render
from specload.runfiles.records import LATE_LIMIT_MS
from tests.support import REPO
from tests.support.ks import erlang_cdf, exponential_cdf, ks_pvalue

MEASURE_S = 4.0
# the KS tests' significance: each window has 160 gaps or more, enough to tell the two
# processes apart at this level all but never (tests/support/ks.py), while a true process
# fails it once in a thousand windows
ALPHA = 0.001


def rate_args(rates: str, measure: float, *more: str) -> list[str]:
    return ["--rates", rates, "--warmup", "1", "--measure", str(measure), "--drain", "10",
            "--max-tokens", "4", *more]


def windows(run) -> list[tuple[float, float, float]]:
    text = Path(f"{run.prefix}_rungs.csv").read_text().splitlines()[1:]
    return [(float(c[3]), float(c[4]), float(c[5])) for c in (line.split(",") for line in text)]


@pytest.mark.slow
@pytest.mark.parametrize("kind, rates, cdf, other", [
    ("poisson", (40.0, 80.0), lambda rate: exponential_cdf(1 / rate),
     lambda rate: erlang_cdf(4, 1 / rate)),
    ("gamma", (40.0,), lambda rate: erlang_cdf(4, 1 / rate),
     lambda rate: exponential_cdf(1 / rate)),
])
def test_rate_and_inter_arrival_times(fake_stream_server, locust_run, kind, rates, cdf,
                                      other) -> None:
    url = fake_stream_server("--step-ms", "2")
    # the gamma run is split over two load processes: together they send the one plan
    extra = ["--arrivals", kind, "--arrival-cv", "0.5", "--processes", "2"] \
        if kind == "gamma" else []
    run = locust_run("open.py", url, name=kind, extra=rate_args(
        ",".join(f"{r:g}" for r in rates), MEASURE_S, *extra))
    assert run.returncode == 0, run.output[-3000:]
    rows = run.requests()
    assert all(r["error_kind"] == "" and r["scheduled"] for r in rows)
    assert len({r["client_id"] for r in rows}) == (2 if kind == "gamma" else 1)
    for r in rows:
        late_ms = (float(r["start"]) - float(r["scheduled"])) * 1e3
        assert r["late_by"] in (("client", "cap") if late_ms > LATE_LIMIT_MS else ("",)), (
            r, late_ms)
    for (t0, t1, rate), target in zip(windows(run), rates, strict=True):
        assert rate == target
        mine = [r for r in rows if t0 <= float(r["scheduled"]) < t1]
        sent = sorted(float(r["start"]) for r in rows if t0 <= float(r["start"]) < t1)
        assert len(sent) / (t1 - t0) == pytest.approx(rate, rel=0.02)
        series = {"scheduled": sorted(float(r["scheduled"]) for r in mine)}
        if not any(r["late_by"] for r in mine):  # every send kept to its schedule
            series["sent"] = sent
        for name, times in series.items():
            gaps = [b - a for a, b in itertools.pairwise(times)]
            assert ks_pvalue(gaps, cdf(rate)) > ALPHA, (kind, rate, name)
            assert ks_pvalue(gaps, other(rate)) < ALPHA, (kind, rate, name)


def test_a_small_pool_holds_starts_back_as_late_by_the_cap(fake_stream_server,
                                                           locust_run) -> None:
    url = fake_stream_server("--step-ms", "100")  # 4 tokens in 2 chunks: 200 ms each
    run = locust_run("open.py", url, extra=rate_args("20", 3, "--max-in-flight", "2"))
    assert run.returncode == 0, run.output[-3000:]
    rows = run.requests()
    late = [r for r in rows if r["late_by"] == "cap"]
    assert len(late) > len(rows) / 2 and all(float(r["late_ms"]) > 10 for r in late)
    assert "arrivals of the plan were never sent" in run.output
    report = render.build(run.prefix)
    (row,) = report.summary.itertuples()
    assert row.rate == 20 and row.achieved_rate < 0.7 * 20
    assert row.e2e_sched_mean_ms > 5 * row.e2e_p50_ms  # waiting counts from the schedule
    (held,) = [w for w in report.warnings if w["kind"] == "rate_held"]
    assert "the cap on requests in flight" in held["message"]


@pytest.mark.slow
def test_a_busy_pool_whose_users_finish_together_is_still_the_cap(fake_stream_server,
                                                                  locust_run) -> None:
    """Sixteen users against a server whose steps end them together: each takes the next
    overdue arrival a moment after the others freed up, and it is still the cap's. (Before,
    a third of them were put down to the client; a process short of CPU beside other
    tests still starts a few late of its own.)"""
    url = fake_stream_server("--step-ms", "100")
    run = locust_run("open.py", url, extra=rate_args("160", 2, "--max-in-flight", "16"))
    assert run.returncode == 0, run.output[-3000:]
    rows = run.requests()
    late = [r for r in rows if float(r["late_ms"]) > LATE_LIMIT_MS]
    assert len(late) > len(rows) / 2
    assert len([r for r in late if r["late_by"] != "cap"]) < 0.05 * len(late)


@pytest.mark.slow
def test_a_starved_client_starts_late(fake_stream_server, locust_run) -> None:
    url = fake_stream_server("--step-ms", "2")
    burner = str(REPO / "tests" / "support" / "cpu_burner.py")
    run = locust_run(f"open.py,{burner}", url, extra=rate_args("40", 3, "--max-in-flight",
                                                                "64"))
    assert run.returncode == 0, run.output[-3000:]
    rows = run.requests()
    client = [r for r in rows if r["late_by"] == "client"]
    assert len(client) > len(rows) / 4
    # slowed down, a request may now and then find the whole pool busy, but rarely
    assert len([r for r in rows if r["late_by"] == "cap"]) < len(client) / 10
    assert max(float(r["late_ms"]) for r in client) > 20


