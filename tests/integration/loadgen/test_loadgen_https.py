"""HTTPS: certificates verified by default, timestamps as exact as over plain HTTP.

The simulator serves TLS with a throwaway CA's certificate (trustme). Trusting that CA
with `--ca-bundle`, every request succeeds and matches the trace (tokens exact, TTFT
p50 within 1 ms: the reader takes the kernel's stamps under TLS too); without it the
handshake fails, recorded as `tls` with the reason; `--insecure` turns checking off.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.loadgen.test_loadgen_groundtruth import check_against_trace


def _sim(sim_server, tls_files) -> object:
    return sim_server(extra_args=["--tls-cert", str(tls_files.cert),
                                  "--tls-key", str(tls_files.key)])


@pytest.mark.timing
@pytest.mark.flaky(reruns=1)  # TTFT within 1 ms needs the machine's two cores not to be busy
def test_https_with_the_servers_ca_matches_the_trace(sim_server, locust_run, tls_files,
                                                     tmp_path: Path) -> None:
    sim = _sim(sim_server, tls_files)
    assert sim.url.startswith("https://127.0.0.1:")
    run = locust_run("chat.py", sim.url, users=6, run_time="6s",
                     extra=["--max-tokens", "64", "--ignore-eos", "--ca-bundle",
                            str(tls_files.ca)])
    assert run.returncode == 0, run.output[-3000:]
    rows = run.requests()
    check_against_trace(rows, sim.read_trace(), ttft_limit_ms=1.0)


def test_https_without_trusting_the_ca_fails_with_the_reason(sim_server, locust_run,
                                                              tls_files) -> None:
    sim = _sim(sim_server, tls_files)
    run = locust_run("chat.py", sim.url, users=2, run_time="2s", extra=["--model", "m"])
    rows = [r for r in run.requests() if r["interrupted"] == "0"]
    assert rows and {r["error_kind"] for r in rows} == {"tls"}
    assert all("certificate verify failed" in r["error"] for r in rows), rows[0]["error"]
    insecure = locust_run("chat.py", sim.url, users=2, run_time="2s", name="insecure",
                          extra=["--insecure", "--max-tokens", "8"])
    done = [r for r in insecure.requests() if r["interrupted"] == "0"]
    assert done and {r["error_kind"] for r in done} == {""}


def test_https_to_a_plain_http_server_says_so(sim_server, locust_run) -> None:
    sim = sim_server(trace=False)
    url = sim.url.replace("http://", "https://")
    run = locust_run("chat.py", url, users=1, run_time="2s", extra=["--model", "m"])
    rows = [r for r in run.requests() if r["interrupted"] == "0"]
    assert rows and {r["error_kind"] for r in rows} == {"tls"}, rows[:1]
    assert "TLS handshake failed" in rows[0]["error"]
