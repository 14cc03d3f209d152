"""The keep-alive close race: a server that closes after every stream costs no request.

llama.cpp's server answers with keep-alive headers and closes the connection right
after each streamed body; a request sent on the pooled connection before the FIN
arrives meets the close before any response byte. Such a request is sent again once on
a new connection and counted in `reconnects`, never as a failure; after two such
closes the host gets a new connection per request, so the race stops. A
`Connection: close` response is honoured without any resend.
"""

from __future__ import annotations

from collections import Counter

import pytest

from specload.loadgen.keepalive import CLOSED_IN_A_ROW

# The FIN trails the body by 20 ms: the next request (no think time) always wins the race.
CLOSING = ("--close-after-stream", "0.02", "--step-ms", "2")


def _finished(run) -> list[dict[str, str]]:
    return [r for r in run.requests() if r["interrupted"] == "0"]


# chat sessions run under their ladder shape (no think time: the next turn races the FIN)
SESSIONS = ["--ladder", "3", "--warmup", "0", "--measure", "3", "--min-requests", "0",
            "--drain", "5", "--think-time", "0"]


@pytest.mark.parametrize(("locustfile", "shape"), [("chat.py", []), ("completions.py", []),
                                                   ("sessions.py", SESSIONS)])
def test_close_after_stream_is_resent_not_failed(fake_stream_server, locust_run,
                                                 locustfile: str, shape: list[str]) -> None:
    url = fake_stream_server(*CLOSING)
    run = locust_run(locustfile, url, users=3, run_time="3s",
                     extra=["--max-tokens", "8", "--model", "fake-model", *shape])
    rows = _finished(run)
    assert len(rows) > 20, run.output[-2000:]
    kinds = Counter(r["error_kind"] for r in rows)
    assert kinds == {"": len(rows)}, (kinds, [r["error"] for r in rows if r["error"]][:3])
    reconnects = sum(int(r["reconnects"]) for r in rows)
    # the first closes of each process teach it; the rest go out on new connections
    assert 1 <= reconnects <= CLOSED_IN_A_ROW + 3, reconnects
    assert {r["reconnects"] for r in rows} <= {"0", "1"}


def test_resent_request_starts_at_the_resend(fake_stream_server, locust_run) -> None:
    url = fake_stream_server(*CLOSING)
    run = locust_run("chat.py", url, users=1, run_time="2s",
                     extra=["--max-tokens", "4", "--model", "fake-model"])
    resent = [r for r in _finished(run) if r["reconnects"] == "1"]
    assert resent, run.output[-2000:]
    plain = [float(r["ttft_ms"]) for r in _finished(run) if r["reconnects"] == "0"]
    # TTFT of a resent request carries no failed round trip: it is as short as the others'
    assert max(float(r["ttft_ms"]) for r in resent) < 3 * max(plain) + 5


def test_connection_close_header_is_honoured(fake_stream_server, locust_run) -> None:
    url = fake_stream_server("--connection-close", "--step-ms", "2")
    run = locust_run("chat.py", url, users=3, run_time="3s",
                     extra=["--max-tokens", "8", "--model", "fake-model"])
    rows = _finished(run)
    assert len(rows) > 20
    assert {(r["error_kind"], r["reconnects"]) for r in rows} == {("", "0")}


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_the_llamacpp_flavour_closes_after_every_stream_and_nothing_fails(
        sim_server, locust_run, tls_files, tls: bool) -> None:
    extra = ["--tls-cert", str(tls_files.cert), "--tls-key", str(tls_files.key)] if tls else []
    sim = sim_server(flavor="llamacpp", extra_args=extra)
    trust = ["--ca-bundle", str(tls_files.ca)] if tls else []
    run = locust_run("chat.py", sim.url, users=3, run_time="4s",
                     extra=["--max-tokens", "8", "--ignore-eos", *trust])
    rows = _finished(run)
    assert len(rows) > 10, run.output[-2000:]
    assert {r["error_kind"] for r in rows} == {""}, [r["error"] for r in rows][:3]
    # The flavour closes 5 ms after a stream's last byte (flavors.close_after_stream_delay_s):
    # a busy client sends its next request after the FIN and never meets the race, so only
    # the bound is certain here (the fake server's 20 ms close makes the race certain above).
    assert sum(int(r["reconnects"]) for r in rows) <= CLOSED_IN_A_ROW + 3
    served = {t["request_id"] for t in sim.read_trace() if t.get("status") == 200}
    assert {r["request_id"] for r in rows} <= served  # one server request per record
