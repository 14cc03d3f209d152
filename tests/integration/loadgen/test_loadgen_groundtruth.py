"""Headless Locust against the simulator: client measurements match its `--trace`.

Checks, for one process and for `--processes 2`: every request the server saw is in
`_requests.csv` exactly once and every record is a request the server saw (request ids
are UUIDs, matched to the trace; this includes the requests interrupted at the end of
the run), TTFT p50 within 2 ms of the simulator's, output tokens and tokens per chunk
exact, Locust's stats consistent with the rows, and the API key nowhere in the output
or the files.
"""

from __future__ import annotations

import statistics
import uuid
from pathlib import Path

import pytest

SECRET = "sk-specload-test-secret-0123456789"
USERS = 10


def check_against_trace(rows: list[dict[str, str]], trace: list[dict],
                        ttft_limit_ms: float = 2.0) -> None:
    ids = [r["request_id"] for r in rows]
    assert len(ids) == len(set(ids))  # nothing twice
    assert all(uuid.UUID(i).version == 4 for i in ids)
    traced = {t["request_id"]: t for t in trace}
    # nothing lost: every request the server saw is recorded, and a recorded request the
    # server never saw can only be one the end of the run interrupted before it got there
    unseen = set(ids) - set(traced)
    assert set(traced) <= set(ids)
    assert all(r["interrupted"] == "1" for r in rows if r["request_id"] in unseen), unseen
    ttft_client, ttft_sim = [], []
    for r in rows:
        t = traced.get(r["request_id"])
        if r["interrupted"] == "1":
            assert r["error_kind"] == "interrupted"
            if t is not None:
                assert int(r["num_chunks"]) <= len(t["chunks"])
            continue
        assert t is not None, r["request_id"]
        assert r["error_kind"] == "" and r["status"] == "200"
        assert int(r["output_tokens"]) == t["output_tokens"]
        assert r["tokens_source"] == "usage"
        assert [int(x) for x in r["chunk_tokens"].split()] == [n for _, n in t["chunks"]]
        assert int(r["prompt_tokens"]) == t["prompt_tokens"]
        assert r["finish_reason"] == t["finish_reason"]
        ttft_client.append(float(r["ttft_ms"]))
        ttft_sim.append((t["first_token"] - t["arrival"]) * 1e3)
    assert len(ttft_client) >= 50
    p50_client, p50_sim = statistics.median(ttft_client), statistics.median(ttft_sim)
    print(f"TTFT p50 client {p50_client:.2f} ms, sim {p50_sim:.2f} ms, n={len(ttft_client)}")
    assert abs(p50_client - p50_sim) < ttft_limit_ms, (p50_client, p50_sim)


def check_locust_stats(run, rows: list[dict[str, str]]) -> None:
    summary = run.summary()
    done = [r for r in rows if r["interrupted"] == "0"]
    reqs, fails, avg_ms = summary[("POST", "/v1/chat/completions")]
    assert (reqs, fails) == (len(done), 0)
    assert avg_ms == pytest.approx(statistics.mean(float(r["e2e_ms"]) for r in done), abs=1)
    ttft_reqs, _, ttft_avg = summary[("TTFT", "/v1/chat/completions")]
    assert ttft_reqs == len(done)
    assert ttft_avg == pytest.approx(statistics.mean(float(r["ttft_ms"]) for r in done), abs=1)
    assert summary[("", "Aggregated")][:2] == (len(done), 0)  # TTFT samples not added


def assert_no_secret(run, tmp_path: Path) -> None:
    assert SECRET not in run.output
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path


@pytest.mark.slow
# TTFT within 2 ms needs the machine's two cores not to be busy: in one cold CI on a
# slower machine both of two tries ran beside CPU-bound modules (the fleet benchmark was
# rerun at the same time) and missed by 6.2 and 2.5 ms; a third try runs later
@pytest.mark.timing
@pytest.mark.flaky(reruns=2)
@pytest.mark.parametrize("processes", [1, 2])
def test_requests_match_sim_trace(sim_server, locust_run, tmp_path: Path, processes: int):
    sim = sim_server()
    extra = ["--max-tokens", "128", "--ignore-eos", "--seed", "5"]
    if processes > 1:
        extra += ["--processes", str(processes)]
    run = locust_run("chat.py", sim.url, users=USERS, run_time="12s", extra=extra,
                     env={"OPENAI_API_KEY": SECRET})
    assert run.returncode == 0, run.output[-3000:]
    rows = run.requests()
    assert len({r["client_id"] for r in rows}) == processes
    interrupted = [r for r in rows if r["interrupted"] == "1"]
    assert 1 <= len(interrupted) <= USERS
    check_against_trace(rows, sim.read_trace())
    check_locust_stats(run, rows)
    assert_no_secret(run, tmp_path)
