"""The Tokens tab in headless Chromium during a real ladder run, in one process and with two.

The web UI runs a two-rung ladder against the simulator (`--autostart`) while a browser
shows the tab: every chart draws data, each chart's points are the ones `/specload/live`
serves, Locust's table under the charts shows the complete rungs, and the page logs no
error. When the run is over, the tab's rungs are the report's rows to the bit, and Locust
did not warn that the spawn rate was too high. The web UI's `/metrics` then counts every
output token and every request of the run's rows (a master: from its workers' health rows).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from specload.report import render
from specload.report.rung_columns import View, names
from specload.report.table import text
from specload.runner.processes import free_port
from tests.support import REPO
from tests.support.browser import Browser
from tests.support.locust_runs import master_port_args
from tests.support.sweeps import read_csv

pytestmark = pytest.mark.slow

# Where each chart's traces come from in /specload/live, in the order the tab draws them.
TRACES = {
    "output": [("series", "output_tok_s")],
    "per-user": [("series", "decode_tok_s_per_user"), ("series", "request_tok_s_p50")],
    "chunk": [("series", "tokens_per_chunk")],
    "ttft": [("series", "ttft_p50_ms"), ("series", "ttft_p99_ms")],
    "concurrency": [("users", "users"), ("client", "in_flight"),
                    ("series", "achieved_concurrency")],
    "load": [("client", "cpu_max"), ("client", "lag_p99_max_ms")],
}
# The charts' points and, fetched right after, what the server says (one evaluation).
CHARTS_AND_LIVE = """(async () => {
  const charts = {};
  for (const div of document.querySelectorAll('#specload-tokens .js-plotly-plot')) {
    charts[div.id.replace('specload-chart-', '')] = div.data.map((t) => ({x: t.x, y: t.y}));
  }
  const live = await (await fetch('./specload/live', {cache: 'no-store'})).json();
  return {charts, live};
})()"""
PAYLOAD = "({rungs: [], ...(window.specloadTokens || {}).payload})"  # the last one drawn
TABLE_ROWS = """[...document.querySelectorAll('table tbody tr')].map(
  (tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent))"""


def _metrics(url: str) -> dict[str, float]:
    """The exposition's samples summed by name (every rung's and outcome's)."""
    with urllib.request.urlopen(url, timeout=10) as resp:
        text = resp.read().decode()
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            totals[sample.name] = totals.get(sample.name, 0.0) + sample.value
    return totals


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())


def _check_charts(charts: dict[str, list[dict[str, list[Any]]]], live: dict[str, Any]) -> None:
    assert sorted(charts) == sorted(TRACES)
    for chart, sources in TRACES.items():
        assert len(charts[chart]) == len(sources), chart
        for drawn, (group, key) in zip(charts[chart], sources, strict=True):
            served = dict(zip(live[group]["t"], live[group][key], strict=True))
            points = [(x, y) for x, y in zip(drawn["x"], drawn["y"], strict=True)
                      if y is not None]
            assert points, f"{chart}: {key} draws nothing"
            if group == "users":  # its last point moves with the clock: the count must not
                assert points[-1][1] == live[group][key][-1]
                continue
            # a point still being filled (this second's samples) may have moved since
            settled = [(x, y) for x, y in points if x in served and (
                group == "series" or x < live[group]["t"][-1])]
            assert settled, f"{chart}: {key}"
            assert all(served[x] == y for x, y in settled), (chart, key, settled[-3:])
            if group == "series":  # the latest drawn value is the served one
                assert served[points[-1][0]] == points[-1][1]


# One process: the jump to 110 users is above the 100 users/s per process at which Locust
# warns. Two: a lighter load, as a worker that misses heartbeats on a busy machine makes
# Locust restart the spawn without it (runners.py, "self-healed"), and then warn.
@pytest.mark.parametrize(("processes", "ladder"), [(1, "4,110"), (2, "4,40")])
def test_tokens_tab_in_a_browser(sim_server: Any, tmp_path: Path, processes: int,
                                 ladder: str) -> None:
    sim = sim_server(profile="h100-llama8b-eagle3", spec="on", trace=False)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    prefix = tmp_path / "run" / "locust"
    log = tmp_path / "locust.log"
    mode = ["--processes", "2", *master_port_args()] if processes == 2 else []
    proc = subprocess.Popen(
        [sys.executable, "-m", "locust", "-f", str(REPO / "locustfiles" / "ladder.py"),
         "--host", sim.url, "--web-port", str(port), "--autostart", "--autoquit", "60",
         "--csv", str(prefix), "--ladder", ladder, "--warmup", "2", "--measure", "4",
         "--min-requests", "5", "--max-tokens", "32", "--ignore-eos", *mode],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=log.open("w"))
    try:
        with Browser(tmp_path) as browser:
            _wait_until_answers(base + "/specload/live", proc, log)
            browser.navigate(base + "/?tab=tokens")
            browser.wait_for(f"{PAYLOAD}.rungs.length > 0 "
                             "&& document.querySelectorAll('table tbody tr').length > 0",
                             60, "the first rung in the tab")
            got = browser.evaluate(CHARTS_AND_LIVE)
            _check_charts(got["charts"], got["live"])
            rows = browser.evaluate(TABLE_ROWS)
            first = got["live"]["rungs"][0]
            assert rows[0] == [text(float("inf") if first[k] == "inf" else first[k])
                               for k in names(View.LIVE)]
            browser.screenshot(tmp_path / "tokens-tab.png")
            assert browser.errors == []
            browser.wait_for(f"{PAYLOAD}.state === 'stopped' && {PAYLOAD}.rungs.length === 2",
                             90, "the end of the run")
            assert browser.errors == []
        live = _get(base + "/specload/live")
        exposition = _metrics(base + "/metrics")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    rows = read_csv(Path(f"{prefix}_requests.csv"))
    assert exposition["specload_output_tokens_total"] == sum(int(r["output_tokens"])
                                                            for r in rows)
    assert exposition["specload_requests_total"] == len(rows)
    assert exposition["specload_ttft_seconds_count"] == sum(1 for r in rows if r["ttft_ms"])
    report = render.build(prefix).per_rep
    assert [r["concurrency"] for r in live["rungs"]] == report["concurrency"].tolist()
    # One process: the report's numbers to the bit. Several: the tab puts each worker's
    # rows on the master's clock with its latest offset, the report interpolates between
    # rounds; an offset is known to +-RTT/2 (ms on a loaded machine), so a few chunks
    # within that of a window edge may fall on the other side (seen: 0.08% of tok/s), and
    # so may a request ending there: the counts and per-request figures, one request's
    # share (seen: 119 requests against 120, the decode rate and TPOT p50 0.55% apart).
    for rung, (_, expected) in zip(live["rungs"], report.iterrows(), strict=True):
        rel = 0 if processes == 1 else max(5e-3, 1.5 / expected["requests"])
        assert {k: rung[k] for k in names(View.LIVE)} == {
            k: "inf" if expected[k] == float("inf") else pytest.approx(expected[k], rel=rel)
            for k in names(View.LIVE)}
    # (until the SIGTERM above: Locust 2.47 may then close its CSV files under the greenlet
    # that writes them, an error of its own)
    output = log.read_text().split("Got SIGTERM signal")[0]
    assert "spawn rate is very high" not in output
    assert "Traceback" not in output, output[-3000:]


def test_a_page_opened_before_autostart_shows_the_run(sim_server: Any, tmp_path: Path) -> None:
    """A master waiting for its worker before --autostart is READY: Locust's page then shows
    the start form and would go on showing it through the run (it stops polling the state
    while READY); the tab's script reloads it once the run is under way."""
    sim = sim_server(profile="h100-llama8b-eagle3", spec="on", trace=False)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    master_port = str(free_port())
    locustfile = str(REPO / "locustfiles" / "ladder.py")
    log = tmp_path / "master.log"
    master = subprocess.Popen(
        [sys.executable, "-m", "locust", "-f", locustfile, "--master", "--expect-workers", "1",
         "--master-bind-host", "127.0.0.1", "--master-bind-port", master_port,
         "--host", sim.url, "--web-port", str(port), "--autostart", "--autoquit", "30",
         "--csv", str(tmp_path / "run" / "locust"), "--ladder", "4", "--warmup", "1",
         "--measure", "2", "--min-requests", "5", "--max-tokens", "32", "--ignore-eos"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=log.open("w"))
    worker = None
    try:
        with Browser(tmp_path) as browser:
            _wait_until_answers(base + "/specload/live", master, log)
            browser.navigate(base + "/?tab=tokens")
            browser.wait_for("document.body.innerText.includes('Start new load test')", 30,
                             "Locust's start form")
            assert browser.evaluate("document.querySelector('[role=\"tablist\"]')") is None
            worker = subprocess.Popen(
                [sys.executable, "-m", "locust", "-f", locustfile, "--worker",
                 "--master-host", "127.0.0.1", "--master-port", master_port],
                cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            browser.wait_for(f"{PAYLOAD}.rungs.length > 0", 60, "the rung in the tab")
            assert browser.errors == []
    finally:
        for proc in (worker, master):
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=30)


def _wait_until_answers(url: str, proc: subprocess.Popen, log: Path) -> None:
    """Until `url` answers (30 s at most), while the web UI's process `proc` lives."""
    deadline = time.monotonic() + 30
    while True:
        try:
            _get(url)
            return
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.3)
