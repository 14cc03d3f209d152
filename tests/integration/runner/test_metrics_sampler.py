"""The /metrics sampler against a small Prometheus endpoint on loopback."""

from __future__ import annotations

import csv
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from specload.runner.metrics_scrape import MetricsSampler
from specload.runner.metrics_sources import Expositions


class Counter:
    def __init__(self, running: int = 7, accept_length: float | None = None) -> None:
        self.t0 = time.time()
        self.running, self.accept_length = running, accept_length

    def text(self) -> str:
        tokens = 100.0 * (time.time() - self.t0)  # 100 generated tokens per second
        text = (
            "# TYPE vllm:generation_tokens_total counter\n"
            f'vllm:generation_tokens_total{{model_name="m"}} {tokens}\n'
            "# TYPE vllm:num_requests_running gauge\n"
            f'vllm:num_requests_running{{model_name="m"}} {self.running}\n'
        )
        if self.accept_length is not None:  # SGLang's ratio gauge, weighted by running
            text += ("# TYPE sglang:spec_accept_length gauge\n"
                     f'sglang:spec_accept_length{{model_name="m"}} {self.accept_length}\n'
                     "# TYPE sglang:num_running_reqs gauge\n"
                     f'sglang:num_running_reqs{{model_name="m"}} {self.running}\n')
        return text


def serve(counter: Counter) -> tuple[str, ThreadingHTTPServer]:

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != "/metrics":
                self.send_error(404)
                return
            body = counter.text().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return f"http://127.0.0.1:{server.server_address[1]}", server


@pytest.fixture
def metrics_server():
    url, server = serve(Counter())
    yield url
    server.shutdown()
    server.server_close()


def reading(*urls: str) -> Expositions:
    return Expositions(urls, 2.0, None, None)


def test_sampler_appends_long_rows_and_estimates_rate(metrics_server: str, tmp_path: Path):
    out = tmp_path / "p_server_metrics.csv"
    sampler = MetricsSampler(reading(f"{metrics_server}/metrics"), out, interval_s=0.2).start()
    t0 = time.time()
    time.sleep(1.3)
    sampler.stop()
    with out.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert set(rows[0]) == {"ts", "metric", "value"}
    names = {r["metric"] for r in rows}
    assert names == {"vllm:generation_tokens_total", "vllm:num_requests_running",
                     "specload:fetch_seconds"}
    fetches = [r for r in rows if r["metric"] == "specload:fetch_seconds"]
    stamps = [r["ts"] for r in rows if r["metric"] == "vllm:num_requests_running"]
    assert [r["ts"] for r in fetches] == stamps  # one per sample, at its time
    assert all(0 < float(r["value"]) < 1 for r in fetches)  # loopback
    running = [float(r["value"]) for r in rows if r["metric"] == "vllm:num_requests_running"]
    assert len(running) >= 4 and set(running) == {7.0}
    rate = sampler.generated_tok_s(t0, time.time())
    assert rate == pytest.approx(100.0, rel=0.2)


def test_sampler_without_metrics_endpoint_writes_nothing(metrics_server: str, tmp_path: Path):
    out = tmp_path / "p_server_metrics.csv"
    sampler = MetricsSampler(reading(f"{metrics_server}/nope"), out, interval_s=0.1)
    assert sampler.sample_once() == 0
    assert sampler.samples_ok == 0 and "Not Found" in (sampler.last_error or "")
    assert not out.exists()
    assert sampler.generated_tok_s(0, time.time()) is None


def test_replicas_add_up_and_their_ratio_gauges_are_weighted(tmp_path: Path):
    """Two replicas' /metrics as one arm: counters and running requests summed, the
    acceptance length averaged by each replica's running requests."""
    servers = [serve(Counter(running=3, accept_length=2.0)),
               serve(Counter(running=1, accept_length=3.0))]
    try:
        sampler = MetricsSampler(reading(*(f"{u}/metrics" for u, _ in servers)),
                                 tmp_path / "p_server_metrics.csv")
        t0 = time.time()
        assert sampler.sample_once()
        time.sleep(1.0)
        assert sampler.sample_once()
        rows = list(csv.DictReader((tmp_path / "p_server_metrics.csv").open(newline="")))
        last = {r["metric"]: float(r["value"]) for r in rows}
        assert last["vllm:num_requests_running"] == 4
        assert last["sglang:spec_accept_length"] == pytest.approx((3 * 2.0 + 1 * 3.0) / 4)
        assert sampler.generated_tok_s(t0, time.time()) == pytest.approx(200.0, rel=0.1)
    finally:
        for _, server in servers:
            server.shutdown()
            server.server_close()
