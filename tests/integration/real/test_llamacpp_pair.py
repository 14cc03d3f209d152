"""The real engine in the loop: llama.cpp's llama-server, spec on and off, through a sweep.

`specload sweep` starts and stops a spec-on and a spec-off `llama-server` (`command:`
arms, Gemma 3 270M from the registry, n-gram drafts with synthetic acceptance) and runs
ladder 1/2/4/8/16. What must hold, judged by the server's own counters:
- no failed request at any rung (the keep-alive close race is resent, not failed);
- up to C = slots, the tokens of the requests that finished between two `/metrics`
  samples equal the
  delta of `llamacpp:tokens_predicted_total` (flushed once per request when its slot is
  released, `metrics_on_prediction` in tools/server/server-context.cpp), to 1% once the
  requests that ended within one decode step of a sample are allowed on either side
  (llama-server answers `/metrics` between steps); above the slots the client's ends
  lagged the counter by more (3 requests at C = 16 once), not yet explained; the
  client's tok/s (token arrivals) is within 3% of that completed-request figure, plus
  the tokens of the requests in flight at the window's edges;
- the report's acceptance length equals the counters' 1 + accepted / drafts over the
  window to 1%, and the whole arm's the synthetic target to 3%;
- the batch column is min(C, slots) to 5%, less the slot time a new request waits for
  the next step boundary (up to one step per request, while none queues) and one sample
  of the 1 s gauge;
- both sweeps find speculation paying at C = 1 and 2 (above that, sweeps on two shared
  cores differ by more than the report's noise band, so the verdict is not compared);
- `specload sim-fit` from the CPU base profile on both sweeps is their digital twin.
A key-protected pair (`--api-key` through LLAMA_API_KEY, the key in OPENAI_API_KEY)
keeps its batch size and acceptance, and no file of the run holds the key.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import llama_server
from tests.support.sweeps import read_csv, run_dir_of, run_sweep

pytestmark = pytest.mark.real

EDGE_S = 0.05  # a request ending this close to a sample may fall on either side of it
SWEEP_TIMEOUT_S = 900
TWIN_RESIDUAL_PCT = 15.0


def _sweep(folder: Path, scenario: Path, env: dict[str, str] | None = None) -> Path:
    done = run_sweep(folder, str(scenario), timeout=SWEEP_TIMEOUT_S, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return folder / run_dir_of(done.stdout)


@pytest.fixture(scope="module")
def pair_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[llama_server.Pair, list[Path]]:
    folder = tmp_path_factory.mktemp("llamacpp")
    pair = llama_server.pair_scenario(folder)
    return pair, [_sweep(folder, pair.path), _sweep(folder, pair.path)]


def _summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


def _samples(arm_dir: Path) -> dict[str, list[tuple[float, float]]]:
    out: dict[str, list[tuple[float, float]]] = {}
    for r in read_csv(arm_dir / "locust_server_metrics.csv"):
        out.setdefault(r["metric"], []).append((float(r["ts"]), float(r["value"])))
    return out


def _inside(points: list[tuple[float, float]], t0: float, t1: float
            ) -> tuple[tuple[float, float], tuple[float, float]]:
    kept = [p for p in points if t0 <= p[0] <= t1]
    return kept[0], kept[-1]


def _rungs(run: Path, arm: str) -> list[dict[str, str]]:
    return read_csv(run / arm / "locust_rungs.csv")


def test_no_request_fails_at_any_rung(pair_runs) -> None:
    _, runs = pair_runs
    for run in runs:
        rows = _summary(run)["summary"]
        assert {(r["arm"], r["failures"]) for r in rows} == {
            (r["arm"], 0) for r in rows}, [(r["arm"], r["concurrency"], r.get("top_failure"))
                                           for r in rows if r["failures"]]


def test_tokens_per_rung_match_the_servers_counter(pair_runs) -> None:
    pair, runs = pair_runs
    run = runs[0]
    by_rung = {(r["arm"], r["concurrency"]): r for r in _summary(run)["summary"]}
    for arm in ("spec-on", "spec-off"):
        counter = _samples(run / arm)["llamacpp:tokens_predicted_total"]
        requests = [r for r in read_csv(run / arm / "locust_requests.csv")
                    if r["error_kind"] == "" and r["interrupted"] == "0"]
        for rung in _rungs(run, arm):
            row = by_rung[(arm, int(rung["users"]))]
            if row["concurrency"] > pair.slots:
                continue  # see the module docstring: requests queue, the client lags
            (ta, va), (tb, vb) = _inside(counter, float(rung["measure_start"]),
                                         float(rung["measure_end"]))
            # llama-server answers /metrics between decode steps: a sample's reading may
            # be up to one step away from its time stamp
            near = max(EDGE_S, row["tpot_p50_ms"] * (row["accept_len"] or 1.0) / 1e3)
            ends = [(float(r["end"]), int(r["output_tokens"])) for r in requests]
            sure = sum(n for t, n in ends if ta + near < t <= tb - near)
            edge = sum(n for t, n in ends if abs(t - ta) <= near or abs(t - tb) <= near)
            delta = vb - va
            where = f"{arm} C={rung['users']}"
            assert sure * 0.99 <= delta <= (sure + edge) * 1.01, (where, delta, sure, edge)
            # token arrivals and completions differ by the requests in flight at the edges
            spans = [(float(r["start"]), float(r["end"]), int(r["output_tokens"]))
                     for r in requests]
            straddle = sum(n for s, e, n in spans if s < ta < e or s < tb < e)
            client = row["output_tok_s"] * (tb - ta)
            assert abs(client - delta) <= 0.03 * delta + straddle, (where, client, delta)


def test_acceptance_is_the_counters_and_the_synthetic_target(pair_runs) -> None:
    pair, runs = pair_runs
    run = runs[0]
    samples = _samples(run / "spec-on")
    drafts = samples["llamacpp:spec_decode_num_drafts_total"]
    accepted = samples["llamacpp:spec_decode_num_accepted_tokens_total"]
    by_c = {r["concurrency"]: r for r in _summary(run)["summary"] if r["arm"] == "spec-on"}
    for rung in _rungs(run, "spec-on"):
        t0, t1 = float(rung["measure_start"]), float(rung["measure_end"])
        (_, d0), (_, d1) = _inside(drafts, t0, t1)
        (_, a0), (_, a1) = _inside(accepted, t0, t1)
        row = by_c[int(rung["users"])]
        assert row["accept_len_source"] == "server"
        assert row["accept_len"] == pytest.approx(1 + (a1 - a0) / (d1 - d0), rel=0.01)
        assert row["tokens_per_chunk"] == pytest.approx(1.0, abs=0.01)  # one event per token
    # drafts are accepted at random: a rung's few dozen drafts scatter, the whole arm's not
    whole = 1 + (accepted[-1][1] - accepted[0][1]) / (drafts[-1][1] - drafts[0][1])
    assert whole == pytest.approx(pair.synth_len, rel=0.03)
    assert _summary(run)["per_token_arms"] == ["spec-on", "spec-off"]


def test_batch_is_the_offered_load_up_to_the_slots(pair_runs) -> None:
    pair, runs = pair_runs
    run = runs[0]
    for row in _summary(run)["summary"]:
        expected = min(row["concurrency"], pair.slots)
        rung = next(r for r in _rungs(run, row["arm"]) if int(r["users"]) == row["concurrency"])
        gauge = _samples(run / row["arm"])["llamacpp:requests_processing"]
        n = sum(float(rung["measure_start"]) <= t <= float(rung["measure_end"]) for t, _ in gauge)
        # llama-server hands a new request to a slot between decode steps, so while no
        # request queues (C <= slots: each user's next request arrives after its slot was
        # released) a slot idles up to one step per request (a verify step is long on a
        # CPU); and the gauge is sampled once a second: one sample caught between
        # requests moves the mean by 1/n
        step_ms = row["tpot_p50_ms"] * (row["accept_len"] or 1.0)
        queued = row["concurrency"] > pair.slots
        idle = 0.0 if queued else expected * step_ms / row["e2e_p50_ms"]
        low = expected - (0.05 * expected + idle + 1 / n)
        assert low <= row["server_running_mean"] <= expected * 1.05, (
            row["arm"], row["concurrency"], row["server_running_mean"], low)


def test_both_sweeps_find_speculation_paying_at_low_load(pair_runs) -> None:
    # Above C = 2 the speedup on two shared cores moves more between sweeps than the
    # report's noise band (C = 8: 0.93 in one sweep, 1.58 in the next), so only the
    # low-load rungs, where every sweep measured 1.26 or more, are held to agree.
    _, runs = pair_runs
    for run in runs:
        pair = _summary(run)["pairs"][0]
        assert [r["decision"] for r in pair["speedup"][:2]] == ["on", "on"], pair["speedup"]


def test_sim_fit_makes_a_digital_twin_of_the_pair(pair_runs, tmp_path: Path) -> None:
    """`specload sim-fit` from the CPU base profile on both sweeps (each rung's mean)
    reproduces every rung. Measured here: within 6% of the mean where single sweeps
    differed by up to 12% at a rung; the bound is that model error plus the noise of a
    two-sweep mean on two shared cores."""
    _, runs = pair_runs
    twin = tmp_path / "twin.yaml"
    done = subprocess.run([sys.executable, "-m", "specload.cli", "sim-fit", *map(str, runs),
                           "--base", "cpu2-gemma3-270m-ngram", "--out", str(twin)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    residuals = [float(m) for m in re.findall(r"([+-]\d+\.\d)%$", done.stdout, re.M)]
    assert len(residuals) == 10 and max(map(abs, residuals)) <= TWIN_RESIDUAL_PCT, done.stdout
    assert "2 runs: each rung's mean is fitted" in done.stdout


def test_a_key_protected_server_keeps_its_metrics_and_the_key_stays_out(tmp_path: Path
                                                                        ) -> None:
    key = "sk-real-tier-0f3c9a"
    pair = llama_server.pair_scenario(tmp_path, name="llamacpp-key", ladder=(1, 4),
                                      key_env="OPENAI_API_KEY", measure_s=6)
    # the scenario names no key: the users and the runner both fall back to OPENAI_API_KEY
    run = _sweep(tmp_path, pair.path, env={**os.environ, "OPENAI_API_KEY": key})
    rows = _summary(run)["summary"]
    assert all(r["failures"] == 0 for r in rows)
    assert all(r["server_running_mean"] > 0 for r in rows)
    assert all(r["accept_len"] > 1.5 for r in rows if r["arm"] == "spec-on")
    holders = [p for p in run.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
    assert holders == []
