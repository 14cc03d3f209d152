"""A sweep watched by a real Prometheus, against two simulated replicas behind a real
HAProxy: the sweep's own /metrics, the Grafana dashboard's queries, and an arm's engine
series read from its replicas' /metrics or from Prometheus.

One sweep, two arms on the same router (`tests/data/haproxy-replicas.cfg`): `replicas`
reads both replicas' /metrics, `via-prometheus` reads the same series from Prometheus's
HTTP API. Prometheus scrapes the sweep's endpoint and both replicas once a second.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from specload.runner.processes import free_port
from specload.traffic.prompt_sets import load_prompts
from tests.support.haproxy import haproxy_front
from tests.support.prometheus import Prometheus, prometheus_server
from tests.support.sims import sim_factory
from tests.support.sweeps import BackgroundSweep, read_csv, read_trace, write_scenario

pytestmark = [pytest.mark.slow, pytest.mark.long(75)]

KEY_ENV = "SPECLOAD_OBSERVE_TEST_KEY"
ARMS = ("replicas", "via-prometheus")
DASHBOARD = Path(__file__).resolve().parents[3] / "deploy" / "grafana" / "specload.json"


class Observed:
    """What the module's one sweep left: its run folder, the replicas' traces, every
    exposition of the sweep's endpoint read while it ran, and Prometheus."""

    def __init__(self, run: Path, traces: list[Path], expositions: list[str],
                 prometheus: Prometheus, key: str, out: str) -> None:
        self.run, self.traces, self.expositions = run, traces, expositions
        self.prometheus, self.key, self.out = prometheus, key, out

    def rungs(self, arm: str) -> list[dict[str, str]]:
        return read_csv(self.run / arm / "locust_rungs.csv")

    def summary(self, arm: str, users: str) -> dict[str, str]:
        return next(r for r in read_csv(self.run / "summary.csv")
                    if r["arm"] == arm and float(r["concurrency"]) == float(users))


def _scrape_while(url: str, done: threading.Event, texts: list[str]) -> None:
    while not done.is_set():
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                texts.append(resp.read().decode())
        except OSError:
            pass
        done.wait(1.0)


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("observe")
    key = "sk-observe-" + secrets.token_hex(12)
    os.environ[KEY_ENV] = key  # the replicas read it from their environment
    try:
        with sim_factory(folder) as sims:
            replicas = [sims(profile="bench-20ms", spec="on", seed=i,
                             extra_args=("--api-key-env", KEY_ENV)) for i in range(2)]
            hosts = [r.url.removeprefix("http://") for r in replicas]
            sweep_port = free_port()
            jobs = {"specload": [f"127.0.0.1:{sweep_port}"], "engines": hosts}
            with haproxy_front(folder, hosts) as front, \
                    prometheus_server(folder / "prometheus", jobs) as prometheus:
                yield _sweep(folder, front, replicas, sweep_port, prometheus, key)
    finally:
        os.environ.pop(KEY_ENV, None)


def _sweep(folder: Path, front: str, replicas: list[Any], port: int,
           prometheus: Prometheus, key: str) -> Observed:
    deadline = time.monotonic() + 30
    while [h for h in prometheus.targets_up().values() if h == "up"] != ["up", "up"]:
        assert time.monotonic() < deadline, prometheus.targets_up()  # the two replicas
        time.sleep(0.5)
    metrics = [f"{r.url}/metrics" for r in replicas]
    scenario = write_scenario(folder, {
        "name": "observe", "ladder": [4, 12], "warmup_s": 3, "measure_s": 12,
        "min_requests": 5,
        "request": {"output_tokens": "uniform:32:96", "ignore_eos": True,
                    "temperature": 0, "api_key_env": KEY_ENV},
        "arms": [
            {"name": "replicas", "url": front, "spec": "on", "engine": "vllm",
             "metrics_url": metrics},
            {"name": "via-prometheus", "url": front, "spec": "off", "engine": "vllm",
             "prometheus": {"url": prometheus.url, "selector": 'job="engines"'}},
        ]})
    texts: list[str] = []
    done = threading.Event()
    scraper = threading.Thread(target=_scrape_while, args=(
        f"http://127.0.0.1:{port}/metrics", done, texts), daemon=True)
    scraper.start()
    sweep = BackgroundSweep([str(scenario), "--metrics-port", str(port)], folder)
    try:
        code = sweep.wait(timeout=240)
    finally:
        done.set()
        scraper.join()
    out = sweep.text()
    assert code == 0, out
    traces = [r.trace_path for r in replicas]
    return Observed(sweep.run_dir(), traces, texts, prometheus, key, out)


def _window(rung: dict[str, str]) -> tuple[float, float, str]:
    start, end = float(rung["measure_start"]), float(rung["measure_end"])
    return start, end, f"{round((end - start) * 1000)}ms"


def test_the_sweep_says_where_its_figures_are_served(observed: Observed):
    assert "live figures for Prometheus: http://127.0.0.1:" in observed.out
    assert observed.expositions, "the sweep's endpoint never answered"


def test_each_rungs_tok_s_from_promql_agrees_with_the_summary(observed: Observed):
    """rate() of the live token counter over a rung's measure window within 2% of
    summary.csv's output tok/s (the same rung, the same arm)."""
    rows = []
    for arm in ARMS:
        for rung in observed.rungs(arm):
            _, end, width = _window(rung)
            promql = observed.prometheus.value(
                f'sum(rate(specload_output_tokens_total{{arm="{arm}",'
                f'rung="{rung["users"]}"}}[{width}] @ {end:.3f}))', at=end + 5)
            summary = float(observed.summary(arm, rung["users"])["output_tok_s"])
            rows.append((arm, rung["users"], promql, summary))
    assert len(rows) == 4
    for arm, users, promql, summary in rows:
        assert promql == pytest.approx(summary, rel=0.02), (arm, users, rows)


def test_tokens_are_exact_against_the_two_replicas_traces(observed: Observed):
    """Every request went to one replica or the other, round-robin, and its tokens are
    the ones that replica generated for it."""
    served = [{t["request_id"]: t for t in read_trace(path)} for path in observed.traces]
    assert min(len(s) for s in served) > 0.4 * sum(len(s) for s in served)
    for arm in ARMS:
        rows = read_csv(observed.run / arm / "locust_requests.csv")
        assert rows
        for row in rows:
            where = [s[row["request_id"]] for s in served if row["request_id"] in s]
            assert len(where) == 1, row["request_id"]
            generated = sum(n for _, n in where[0]["chunks"])
            assert int(row["output_tokens"]) == generated


def _running_mean(traces: list[Path], rung: dict[str, str]) -> float:
    """Requests running on the replicas together, averaged over the rung's window."""
    start, end, _ = _window(rung)
    busy = sum(max(0.0, min(end, t["end"]) - max(start, t["arrival"]))
               for path in traces for t in read_trace(path))
    return busy / (end - start)


def _increase(prometheus: Prometheus, counter: str, rung: dict[str, str]) -> float:
    """A counter's increase over the rung's window on both replicas, each read between
    its own scrapes at the window's edges (as the report reads an arm's counters)."""
    start, end, _ = _window(rung)
    series = prometheus.query(f'{counter}{{job="engines"}}[{int(end - start) + 4}s]',
                              at=end + 2)
    assert len(series) == 2, series  # one per replica
    total = 0.0
    for one in series:
        t, v = np.array(one["values"], dtype=float).T
        before, after = np.interp([start, end], t, v)
        total += after - before
    return total


def _replica_truth(prometheus: Prometheus, rung: dict[str, str]) -> dict[str, float]:
    """The replicas' own series over a rung's window, as Prometheus scraped them."""
    _, end, width = _window(rung)
    accepted = _increase(prometheus, "vllm:spec_decode_num_accepted_tokens_total", rung)
    drafted = _increase(prometheus, "vllm:spec_decode_num_draft_tokens_total", rung)
    running = prometheus.value(
        f'sum(avg_over_time(vllm:num_requests_running{{job="engines"}}[{width}]))', at=end)
    return {"accept_rate": accepted / drafted, "running": running}


@pytest.mark.parametrize("arm", ARMS)
def test_an_arm_over_two_replicas_has_their_batch_size_and_acceptance(
        observed: Observed, arm: str):
    """Both readings of the arm (its replicas' /metrics, or Prometheus's API): the batch
    size is the replicas' sum and the acceptance rate their counters', within 1%. The
    counters' truth is Prometheus's record of each replica, over the same window."""
    for rung in observed.rungs(arm):
        truth = _replica_truth(observed.prometheus, rung)
        row = observed.summary(arm, rung["users"])
        assert float(row["accept_rate"]) == pytest.approx(truth["accept_rate"], rel=0.01)
        # The batch size: the time average of both replicas' running requests, exact
        # from their traces. The arm samples the gauge once a second, as Prometheus
        # does at other instants, a dozen samples a window: at C = 4 one request ending
        # on a replica while its successor starts on the other moves a sample by a
        # quarter, and such means came 8-11% off the exact one (replies of one length,
        # ending in step, read 10% low). Both stay far from one replica's share (half),
        # which an arm that did not add its replicas would show.
        exact = _running_mean(observed.traces, rung)
        assert float(row["server_running_mean"]) == pytest.approx(exact, rel=0.15)
        assert truth["running"] == pytest.approx(exact, rel=0.15)


def _substituted(expr: str, run: str) -> str:
    for name, value in (("$run", run), ("$on", "replicas"), ("$off", "via-prometheus"),
                        ("$engine_job", "engines"), ("$__rate_interval", "10s")):
        expr = expr.replace(name, value)
    return expr


def test_every_dashboard_query_answers(observed: Observed):
    """Each panel's PromQL, over the sweep's time, gives a non-empty result."""
    dashboard = json.loads(DASHBOARD.read_text())
    queries = [(p["title"], t["expr"]) for p in dashboard["panels"]
               for t in p.get("targets", [])]
    assert len(queries) >= 15
    starts = [float(r["warmup_start"]) for arm in ARMS for r in observed.rungs(arm)]
    ends = [float(r["measure_end"]) for arm in ARMS for r in observed.rungs(arm)]
    empty = []
    for title, expr in queries:
        data = observed.prometheus.api(
            "query_range", query=_substituted(expr, observed.run.name),
            start=f"{min(starts):.3f}", end=f"{max(ends) + 10:.3f}", step="1")
        if not any(series["values"] for series in data["result"]):
            empty.append((title, expr))
    assert not empty


def test_nothing_exported_carries_the_api_key_or_prompt_text(observed: Observed):
    texts = "\n".join(observed.expositions)
    assert "specload_output_tokens_total" in texts
    assert observed.key not in texts
    labels = observed.prometheus.api("labels")
    values = [v for name in labels for v in observed.prometheus.api(f"label/{name}/values")]
    assert not [v for v in values if observed.key in v]
    pieces = {re.sub(r"\s+", " ", p.text)[:40] for p in load_prompts(None) if len(p.text) > 40}
    assert not [p for p in pieces if p in texts or any(p in v for v in values)]
    files = [p for p in observed.run.rglob("*") if p.is_file()]
    assert not [p for p in files if observed.key.encode() in p.read_bytes()]
