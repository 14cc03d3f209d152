"""Every fault the simulator injects becomes the right Locust failure and record row."""

from __future__ import annotations

import socket
from collections import Counter
from pathlib import Path

import pytest

FAULTS = ("error500:0.08", "error400:0.08", "error429:0.08", "cut:0.08:5",
          "stall_first_byte:0.08:3", "stall_between:0.08:3", "malformed:0.08",
          "stream_error:0.08", "empty:0.08")
EXPECTED = {
    "error500": ("http_error", "HTTP 500: simulated server error (fault)"),
    "error400": ("http_error", "HTTP 400: simulated bad request (fault)"),
    "empty": ("empty_stream", "stream ended without a token"),
    "error429": ("http_error", "HTTP 429: "),
    "cut": ("stream_cut", "stream cut before [DONE]"),
    "stall_first_byte": ("timeout_first_byte", "timeout before"),
    "stall_between": ("timeout_between_chunks", "timeout between chunks"),
    "malformed": ("malformed_chunk", "malformed chunk: "),
    "stream_error": ("stream_error", "error in stream: "),
}


@pytest.mark.slow
def test_each_fault_kind_is_reported(sim_server, locust_run):
    sim = sim_server(faults=FAULTS)
    run = locust_run("chat.py", sim.url, users=10, run_time="10s",
                     extra=["--max-tokens", "32", "--ignore-eos", "--request-timeout", "1",
                            "--failure-backoff", "0"])
    rows = {r["request_id"]: r for r in run.requests()}
    seen: Counter[str] = Counter()
    for t in sim.read_trace():
        row = rows[t["request_id"]]
        if row["interrupted"] == "1":
            continue
        fault = t["fault"]
        if fault is None:
            assert row["error_kind"] == "", row
            continue
        kind, message = EXPECTED[fault]
        assert (row["error_kind"], fault) == (kind, fault)
        assert row["error"].startswith(message), row["error"]
        if kind == "http_error":
            assert int(row["status"]) == t["status"]
        else:
            assert int(row["status"]) == (0 if kind == "timeout_first_byte" else 200)
        sent = [n for _, n in t["chunks"]]
        if fault in ("cut", "stream_error"):  # what arrived is kept
            assert (row["chunk_tokens"], row["output_tokens"]) == (
                " ".join(map(str, sent)), str(sum(sent))), (fault, row)
        if fault in ("stall_between", "malformed"):  # the server goes on after we gave up
            got = [int(x) for x in row["chunk_tokens"].split()]
            assert got and got == sent[: len(got)], (row, sent)
        seen[fault] += 1
    assert set(seen) == set(EXPECTED), seen

    failures = Counter()
    for line in run.output.split("Error report")[-1].splitlines():
        if "POST /v1/chat/completions: " in line:
            count, text = line.split(None, 1)
            failures[text.split(": ", 1)[1].split(":")[0].strip()] += int(count)
    # a handful of grouped messages, no tracebacks
    assert 9 <= len(failures) <= 11, failures
    assert "Traceback" not in run.output


def test_completions_endpoint(fake_stream_server, locust_run, tmp_path: Path):
    url = fake_stream_server("--trace", str(tmp_path / "trace.jsonl"))
    run = locust_run("completions.py", url, users=3, run_time="3s",
                     extra=["--max-tokens", "10", "--model", "fake-model"])
    assert run.returncode == 0, run.output[-2000:]
    done = [r for r in run.requests() if r["interrupted"] == "0"]
    assert done and all(r["endpoint"] == "completions" for r in done)
    assert {(r["output_tokens"], r["chunk_tokens"]) for r in done} == {("10", "1 3 2 1 3")}
    assert ("POST", "/v1/completions") in run.summary()


def test_without_usage_tokens_are_counted_as_chunks(fake_stream_server, locust_run):
    url = fake_stream_server("--no-usage")
    run = locust_run("chat.py", url, users=2, run_time="2s",
                     extra=["--max-tokens", "6", "--no-continuous-usage"])
    done = [r for r in run.requests() if r["interrupted"] == "0"]
    assert done, (run.requests(), run.output[-3000:])
    assert {(r["tokens_source"], r["output_tokens"], r["chunk_tokens"]) for r in done} == {
        ("chunks", "3", "")}
    assert "counting tokens as content chunks" in run.output


def test_bad_prompt_file_stops_the_run_with_one_line(fake_stream_server, locust_run,
                                                     tmp_path: Path):
    url = fake_stream_server()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "ok"}\n{"prompt": 3}\n')
    run = locust_run("chat.py", url, users=1, run_time="5s", extra=["--prompts", str(bad)])
    assert run.returncode == 2
    assert f"{bad}:2: needs `prompt`" in run.output
    assert "Traceback" not in run.output


def test_a_body_held_open_after_done_does_not_hold_the_user(fake_stream_server, locust_run):
    """[DONE] ends the request: the user neither waits for the timeout nor fails."""
    url = fake_stream_server("--hold-after-done", "60")
    run = locust_run("chat.py", url, users=2, run_time="4s",
                     extra=["--max-tokens", "6", "--request-timeout", "30"])
    done = [r for r in run.requests() if r["interrupted"] == "0"]
    assert len(done) >= 4, run.output[-2000:]
    assert all(r["error_kind"] == "" and r["output_tokens"] == "6" for r in done)
    assert max(float(r["end"]) - float(r["start"]) for r in done) < 2.0


def test_records_off(fake_stream_server, locust_run):
    url = fake_stream_server()
    # 4 s: long enough for requests to complete on a busy machine too
    run = locust_run("chat.py", url, users=2, run_time="4s", extra=["--no-records"])
    assert run.returncode == 0
    assert not Path(f"{run.prefix}_requests.csv").exists()
    assert run.summary()[("POST", "/v1/chat/completions")][0] > 0


def test_unreachable_server_fails_model_discovery_cleanly(locust_run):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = locust_run("chat.py", f"http://127.0.0.1:{port}", users=2, run_time="2s")
    reqs, fails, _ = run.summary()[("GET", "/v1/models")]
    assert reqs == fails >= 2
    assert "Traceback" not in run.output
    assert run.requests() == []


def test_a_dead_server_gets_a_bounded_request_rate(locust_run):
    """Backoff after failures: 0.1 s doubling to 2 s, not thousands of requests a second."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = locust_run("chat.py", f"http://127.0.0.1:{port}", users=2, run_time="4s",
                     extra=["--model", "m"])
    rows = [r for r in run.requests() if r["interrupted"] == "0"]
    assert 2 <= len(rows) <= 2 * 7, len(rows)  # waits 0, .1, .2, .4, .8, 1.6, 2 s
    waits = sorted(float(r["backoff_ms"]) for r in rows)
    assert waits[0] == 0.0 and waits[-1] >= 700.0, waits


def test_interrupted_streams_are_failures_not_short_successes(sim_server, locust_run):
    """llama-cpp-python ends a running stream with [DONE] when another request waits."""
    sim = sim_server(flavor="llama-cpp-python", trace=False)
    run = locust_run("chat.py", sim.url, users=2, run_time="3s",
                     extra=["--max-tokens", "64", "--failure-backoff", "0"])
    rows = [r for r in run.requests() if r["interrupted"] == "0"]
    kinds = Counter(r["error_kind"] for r in rows)
    assert kinds["no_finish_reason"] >= len(rows) // 2, kinds
    assert all(int(r["output_tokens"]) < 64 for r in rows if r["error_kind"])
    assert "stream ended without a finish_reason" in run.output


def test_connection_refused_with_explicit_model(locust_run):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = locust_run("chat.py", f"http://127.0.0.1:{port}", users=1, run_time="2s",
                     extra=["--model", "m"])
    rows = [r for r in run.requests() if r["interrupted"] == "0"]
    assert rows and {r["error_kind"] for r in rows} == {"connection"}
    assert {r["status"] for r in rows} == {"0"}
    assert "Traceback" not in run.output


def test_api_key_is_sent_as_bearer_and_never_written(fake_stream_server, locust_run,
                                                      tmp_path: Path):
    secret = "sk-test-4f1d9c0b7e"
    url = fake_stream_server("--api-key-env", "SERVER_KEY", env={"SERVER_KEY": secret})
    ok = locust_run("chat.py", url, users=2, run_time="4s", name="ok",
                    extra=["--api-key-env", "MY_KEY"], env={"MY_KEY": secret})
    assert ("GET", "/v1/models") not in ok.summary()  # discovery succeeded
    done = [r for r in ok.requests() if r["interrupted"] == "0"]
    assert done and {r["error_kind"] for r in done} == {""}
    no_key = locust_run("chat.py", url, users=1, run_time="1s", name="nokey",
                        extra=["--model", "fake-model", "--api-key-env", "UNSET_KEY_VAR"])
    rows = [r for r in no_key.requests() if r["interrupted"] == "0"]
    assert rows and {(r["error_kind"], r["status"]) for r in rows} == {("http_error", "401")}
    assert {r["error"] for r in rows} == {"HTTP 401: invalid API key"}
    for text in (ok.output, no_key.output):
        assert secret not in text
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path
