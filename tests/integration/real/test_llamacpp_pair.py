"""The real engine in the loop: llama.cpp's llama-server, spec on and off, through a sweep.

`specload sweep` starts and stops a spec-on and a spec-off `llama-server` (`command:`
arms, Gemma 3 270M from the registry, n-gram drafts with synthetic acceptance) and runs
ladder 1/2/4/8 twice (two repeats), the arms interleaved rung by rung: on two shared
cores the machine's speed drifts by up to 15% over minutes, more than speculation moves
the speedup between two rungs. The ladder ends at the 8 slots: each rung's window holds
whole requests, and on the one CPU a placed server has, a window past the slots lasted
half a minute and more (the fault tests run past their server's slots). What must hold,
judged by the server's own counters, in each repeat:
- no failed request at any rung (the keep-alive close race is resent, not failed);
- at every rung, the tokens of the requests that finished between two `/metrics`
  samples equal the delta of `llamacpp:tokens_predicted_total` (flushed once per request
  when its slot is released, `metrics_on_prediction` in tools/server/server-context.cpp),
  to 1% once the requests that ended within one decode step of a sample, plus half its
  fetch, are allowed on either side (llama-server answers `/metrics` between steps, and
  past the slots one answer came seconds late); the
  client's tok/s (token arrivals) is within 3% of that completed-request figure, plus
  the tokens of the requests in flight at the window's edges;
- the acceptance length equals the counters' 1 + accepted / drafts over the window to
  1%; the first draft position, which every draft has, is accepted at the synthetic
  rate to 3% (`llamacpp:spec_decode_num_accepted_tokens_per_pos_total`, position 0);
  the whole arm's length is at most what the rates give drafts of the mean length the
  counters show (the n-gram drafter's drafts are shorter at times);
- every spec-on request records its own draft and accepted tokens from its last chunk's
  `timings` (none on the spec-off server): at every `/metrics` sample the counters hold
  what the requests that had ended recorded, give or take those ending within the
  fetch; a rung's acceptance rate from its requests and the counters' both lie where
  the requests that ended inside its window put it, give or take any share of those
  that ended within a sample of its edges (a window of 8 requests at C = 1 cannot hold
  the two to 1%: one request's share at an edge moved them 2.7% apart once);
- the batch column is the mean of llama-server's `requests_processing` samples in the
  window, and at each sample that gauge lies between the requests the client saw
  streaming (past their first token, before their last) and those it had sent and not
  seen end, both capped at the slots; the client had min(C, slots) in flight to 3%
  (a request waits for a slot only before its first token: below C, for the next step
  boundary; past the slots, while a freed group of slots fills over several passes);
- the repeats agree on the verdict: more of them cross between the same two rungs than
  anywhere else, at least two, and speculation loses at C = 8 (where it crosses
  moves between sweeps); two that disagree bring a third;
- `specload sim-fit` from the CPU base profile is the sweep's digital twin: every rung
  within 10% of what the repeats measured there, and `sim-curve` on it
  crosses once, between the same two rungs as the sweep.
- the report compares the arms' replies at every rung on the request files' own counts
  (synthetic acceptance takes drafts the target would not have chosen: what it finds is
  printed);
Both servers require an API key (`--api-key` through LLAMA_API_KEY, the key in
OPENAI_API_KEY): every figure above comes through it, the pair keeps its batch size and
acceptance, and no file of the run holds the key.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from specload.report import render
from specload.report.crossover import find_crossover
from specload.runfiles.records import FETCH_METRIC
from tests.support import llama_metrics as metrics
from tests.support import llama_server
from tests.support.parity_counts import assert_reported
from tests.support.ratios import ratio_range
from tests.support.sweeps import read_csv, run_dir_of, run_sweep

EDGE_S = metrics.EDGE_S
SWEEP_TIMEOUT_S = 1200
# the module's sweep runs longer than the default per-test timeout (its fixture's time
# counts against the first test)
pytestmark = [pytest.mark.real, pytest.mark.timeout(SWEEP_TIMEOUT_S + 300)]
# the issue's own bounds: every rung within 10% of what its repeats measured, and the
# crossing between the sweep's two rungs. Fitted with one acceptance for every rung, six
# stored sweeps' twins missed by up to 10.3% and one crossed a rung early: the server's
# acceptance length moves with the batch (6-10% above the arm's mean at C = 2 in all
# six), which `sim-fit` now takes per batch; the same six then missed by 1.3-6.0% and
# the five at lengths up to 5.6 crossed inside their sweeps' brackets
TWIN_RESIDUAL_PCT = 10.0
REPEATS = 2
TIEBREAK = 1  # one more repeat when the two disagree on the verdict
# 8 drafted tokens accepted to a mean length of 5.6: on two cores speculation then pays
# at low C and loses past the slots at the latest, where the plain server's batch reads the
# weights once per four tokens and a verify step of 72 tokens is compute-bound. The length
# scales every rung's speedup by about the same factor; 5.6 puts the crossing between
# C = 2 and 4, where the speedup falls fastest, with room on both sides for the repeats'
# noise. At 5.2 C = 2 sat near 1 in CI (1.08, 0.87, 1.10 in one cold CI's three repeats)
# and four of the last five cold CIs ran the third repeat. At 5.6, on a quiet machine,
# where the pair's speedups run 10-20% above a cold CI's, one sweep's repeats measured
# C = 2 at 1.32 / 1.33 and C = 4 at 0.82 / 0.96 (at 6.25: 1.37 / 1.47, 0.98 / 0.94)
SYNTH_LEN = 5.6
DRAFT_N_MAX = 8
# every window holds one full batch of requests started in it: the slots' requests end
# together from C = 8 on, so each request more past a batch costs another batch's time
MIN_REQUESTS = 8
# every check held on one sweep's windows cut from 15 s to 10 s and to 8 s; at 6 s the
# repeats disagreed on the verdict (MIN_REQUESTS still stretches the C = 1 windows to
# 14-22 s and the C = 8 ones to 18-27 s)
MEASURE_S = 10
LADDER = (1, 2, 4, 8)


def _sweep(folder: Path, scenario: Path, env: dict[str, str] | None = None) -> Path:
    done = run_sweep(folder, str(scenario), timeout=SWEEP_TIMEOUT_S, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return folder / run_dir_of(done.stdout)


KEY = "sk-real-tier-0f3c9a"


@pytest.fixture(scope="module")
def pair_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[llama_server.Pair, Path]:
    folder = tmp_path_factory.mktemp("llamacpp")
    # both servers require the key; the scenario names none, so the users and the runner
    # both fall back to OPENAI_API_KEY
    pair = llama_server.pair_scenario(folder, synth_len=SYNTH_LEN, draft_n_max=DRAFT_N_MAX,
                                      ladder=LADDER, repeats=REPEATS, tiebreak=TIEBREAK,
                                      interleave=True,
                                      min_requests=MIN_REQUESTS, measure_s=MEASURE_S,
                                      key_env="OPENAI_API_KEY")
    return pair, _sweep(folder, pair.path, env={**os.environ, "OPENAI_API_KEY": KEY})


@pytest.fixture(scope="module")
def per_rep(pair_run) -> pd.DataFrame:
    """Each repeat's figures per arm and rung, as the report computes them."""
    return render.build(pair_run[1]).per_rep


def test_no_request_fails_at_any_rung(pair_run) -> None:
    rows = metrics.summary(pair_run[1])["summary"]
    assert {(r["arm"], r["failures"]) for r in rows} == {
        (r["arm"], 0) for r in rows}, [(r["arm"], r["concurrency"], r.get("top_failure"))
                                       for r in rows if r["failures"]]


def test_tokens_per_rung_match_the_servers_counter(pair_run, per_rep) -> None:
    for arm in ("spec-on", "spec-off"):
        metrics.assert_tokens_match_counter(pair_run[1], per_rep, arm)


def test_acceptance_is_the_counters_and_the_synthetic_target(pair_run, per_rep) -> None:
    pair, run = pair_run
    drafts = first = 0.0
    metrics.assert_acceptance_is_the_counters(run, per_rep, "spec-on")
    for rep_dir, _, _ in metrics.reps(run, per_rep, "spec-on"):
        samples = metrics.samples(rep_dir)
        n_drafts = metrics.increase(samples, metrics.DRAFTS)
        drafts += n_drafts
        first += metrics.increase(samples, metrics.FIRST_ACCEPTED)
        # the n-gram drafter does not always find 8 tokens, nor does a request near its
        # end have them: the rates give drafts of the mean length at most this (the
        # length is concave in the draft's size)
        whole = 1 + metrics.increase(samples, metrics.ACCEPTED) / n_drafts
        drafted = metrics.increase(samples, metrics.DRAFT_TOKENS) / n_drafts
        bound = llama_server.synth_mean_length_of_drafts(pair.draft_n_max, pair.synth_len,
                                                         drafted)
        assert whole <= bound * 1.03, (rep_dir.name, whole, bound)
    # every draft has a first token, accepted at the synthetic rate whatever the draft's
    # length: over both repeats' drafts (a few thousand), to 3%
    rate = llama_server.synth_rate(pair.draft_n_max, pair.synth_len)
    assert first / drafts == pytest.approx(rate, rel=0.03), (first, drafts, rate)
    summary = metrics.summary(run)
    assert {r["accept_len_source"] for r in summary["summary"] if r["arm"] == "spec-on"} == {
        "server"}
    assert summary["per_token_arms"] == ["spec-on", "spec-off"]


def test_each_requests_own_acceptance_is_what_the_counters_add(pair_run, per_rep) -> None:
    run = pair_run[1]
    for rep_dir, rungs, by_c in metrics.reps(run, per_rep, "spec-on"):
        rows = [r for r in read_csv(rep_dir / "locust_requests.csv") if r["error_kind"] == ""]
        # every request drafted and said so in its last chunk's `timings`
        assert all(r["draft_tokens"] for r in rows), rep_dir
        told = [(float(r["end"]), int(r["draft_tokens"]), int(r["accepted_tokens"]))
                for r in rows]
        samples = metrics.samples(rep_dir)
        fetch = dict(samples[FETCH_METRIC])
        for name, i in ((metrics.DRAFT_TOKENS, 1),
                        (metrics.ACCEPTED, 2)):
            for t, value in samples[name]:
                # a slot's stats reach the counters when it is released, as its last
                # chunk leaves; the server read them somewhere inside the fetch
                near = EDGE_S + fetch[t] / 2
                surely = sum(r[i] for r in told if r[0] <= t - near)
                maybe = sum(r[i] for r in told if r[0] <= t + near)
                assert surely <= value <= maybe, (rep_dir.name, name, t, surely, value, maybe)
        # and over a rung's window the counters' rate and the requests' both lie where the
        # requests that ended inside it put them, give or take any share of those that
        # ended within a sample of its edges (the counters move once per request: read
        # between two samples, an edge takes in part of a request's drafts)
        ts = [t for t, _ in samples[metrics.DRAFT_TOKENS]]
        for rung in rungs:
            row = by_c[int(rung["users"])]
            zones = [_between_samples(ts, float(rung[edge]), fetch)
                     for edge in ("measure_start", "measure_end")]
            whole = [(d, a) for end, d, a in told if zones[0][1] < end < zones[1][0]]
            edges = [(d, a) for end, d, a in told
                     if d and any(lo <= end <= hi for lo, hi in zones)]
            low, high = ratio_range(whole, edges)
            for name in ("accept_rate", "req_accept_rate"):
                assert low - 1e-9 <= row[name] <= high + 1e-9, (
                    rep_dir.name, rung["users"], name, row[name], low, high)
    for rep_dir, _, _ in metrics.reps(run, per_rep, "spec-off"):
        assert not [r for r in read_csv(rep_dir / "locust_requests.csv")
                    if r["draft_tokens"] or r["accepted_tokens"]], rep_dir


def _between_samples(ts: list[float], t: float, fetch: dict[float, float]
                     ) -> tuple[float, float]:
    """From the sample before `t` to the one after, each widened by where inside its fetch
    the server may have read its counters."""
    before = max((s for s in ts if s <= t), default=t)
    after = min((s for s in ts if s >= t), default=t)
    return (before - EDGE_S - fetch.get(before, 0.0) / 2,
            after + EDGE_S + fetch.get(after, 0.0) / 2)


def _in_slots(spans: list[tuple[float, float, float]], t: float, near: float, slots: int
              ) -> tuple[int, int]:
    """How many requests were surely in a slot at `t` (past their first token and before
    their last, `near` s away from either) and how many could have been (sent and not
    yet finished within `near` s of `t`), both at most `slots`. A client's times lag the
    server's, so both bounds hold with it."""
    sure = sum(first + near <= t <= last - near for _, first, last in spans)
    could = sum(start - near <= t <= last + near for start, _, last in spans)
    return min(sure, slots), min(could, slots)


def test_batch_is_the_servers_gauge_and_the_offered_load(pair_run, per_rep) -> None:
    pair, run = pair_run
    for arm in ("spec-on", "spec-off"):
        for rep_dir, rungs, by_c in metrics.reps(run, per_rep, arm):
            samples = metrics.samples(rep_dir)
            gauge, fetch = samples["llamacpp:requests_processing"], dict(samples[FETCH_METRIC])
            spans = [(float(r["start"]), float(r["start"]) + float(r["ttft_ms"]) / 1e3,
                      float(r["start"]) + float(r["e2e_ms"]) / 1e3)
                     for r in read_csv(rep_dir / "locust_requests.csv") if r["e2e_ms"]]
            for rung in rungs:
                row = by_c[int(rung["users"])]
                where = (str(rep_dir.relative_to(run)), row["concurrency"])
                t0, t1 = float(rung["measure_start"]), float(rung["measure_end"])
                inside = [(t, v) for t, v in gauge if t0 <= t <= t1]
                # the batch column is the mean of the gauge's samples in the window
                assert row["server_running_mean"] == pytest.approx(
                    np.mean([v for _, v in inside]), abs=0.01), where
                # llama-server read the gauge somewhere inside the fetch, between two steps
                step = row["tpot_p50_ms"] * metrics.accept_len(row) / 1e3
                bounds = np.array([_in_slots(spans, t, EDGE_S + step + fetch[t] / 2,
                                             pair.slots) for t, _ in inside])
                sure, could = bounds.mean(axis=0)
                mean = row["server_running_mean"]
                # at each sample the server ran every request the client saw streaming
                # and none it had not sent: a request waits for a slot only before its
                # first token (llama-server hands it one between steps, and past the
                # slots a freed group of slots fills over several passes)
                assert sure <= mean <= could, (*where, sure, mean, could)
                # and the client kept the offered load in flight (between two of a
                # user's requests it only records the one and sends the next)
                assert could >= 0.97 * min(row["concurrency"], pair.slots), (*where, could)


def _crosses_between(curve: list[dict], low: int, high: int) -> bool:
    """Speculation pays at C = `low` and at no rung from `high` on."""
    by_c = {r["concurrency"]: r["speedup"] for r in curve}
    return by_c[low] > 1 and all(s < 1 for c, s in by_c.items() if c >= high)


def test_the_repeats_agree_on_the_verdict(pair_run, per_rep) -> None:
    """More repeats cross between the same two rungs than anywhere else, at least two, and
    speculation loses at the top rung. Where the crossing falls moves between sweeps on
    this machine (between C = 1 and 2 in some, 4 and 8 in others, C = 4 near 1 in many;
    in one CI run one repeat's spec-off C = 4 ran a quarter slower than the other's). A
    repeat that disagrees brings a third (`tiebreak_repeats: 1`), and only then."""
    run = pair_run[1]
    pair = metrics.summary(run)["pairs"][0]
    per_rep_verdicts = pair["c_star_per_rep"]
    first_two = [(c["verdict"], c["below"], c["above"]) for c in per_rep_verdicts[:REPEATS]]
    assert len(per_rep_verdicts) == (REPEATS if first_two[0] == first_two[1]
                                     else REPEATS + TIEBREAK), per_rep_verdicts
    agreed = pair["repeats_agree"]
    assert agreed["settled"] and agreed["repeats"] >= 2, per_rep_verdicts
    assert agreed["verdict"] == "crosses" and 1 <= agreed["below"] < agreed["above"], (
        per_rep_verdicts)
    assert agreed["above"] <= LADDER[-1], per_rep_verdicts
    for rep, crossover in enumerate(per_rep_verdicts, 1):
        if (crossover["below"], crossover["above"]) != (agreed["below"], agreed["above"]):
            continue
        on = per_rep[(per_rep["arm"] == "spec-on") & (per_rep["rep"] == rep)]
        off = per_rep[(per_rep["arm"] == "spec-off") & (per_rep["rep"] == rep)]
        curve = [{"concurrency": int(a.concurrency), "speedup": a.output_tok_s / b.output_tok_s}
                 for a, b in zip(on.itertuples(), off.itertuples(), strict=True)]
        assert _crosses_between(curve, agreed["below"], agreed["above"]), (rep, curve)


def _sim_curve(profile: Path, spec: str, ladder: list[int]) -> list[float]:
    done = subprocess.run([sys.executable, "-m", "specload.cli", "sim-curve", "--profile",
                           str(profile), "--spec", spec, "--ladder", ",".join(map(str, ladder)),
                           "--json"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return [p["output_tok_s"] for p in json.loads(done.stdout)]


FIT_ROW = re.compile(r"^\s*(spec-\w+)\s+(\d+)\s+[\d.]+\s+([\d.]+)\s+[+-]\d+\.\d%$", re.M)


def test_sim_fit_makes_a_digital_twin_of_the_pair(pair_run, per_rep, tmp_path: Path) -> None:
    """`specload sim-fit` from the CPU base profile on the sweep (each rung fitted to the
    range its repeats measured, each concurrency's speedup to the range of the repeats'
    own speedups, each spec-on rung at the acceptance length its server counted)
    reproduces every rung to 10% of that range, and its own curves cross once, between
    the sweep's two rungs. A rung of one arm moves between repeats (spec-on C = 4
    measured 46.9 and 50.9 tok/s in one run, 41.2 on average in another): the twin is
    judged against the measured range, not its midpoint alone."""
    run = pair_run[1]
    twin = tmp_path / "twin.yaml"
    done = subprocess.run([sys.executable, "-m", "specload.cli", "sim-fit", str(run),
                           "--base", "cpu2-gemma3-270m-ngram", "--out", str(twin)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    fitted = {(arm, int(c)): float(tok_s) for arm, c, tok_s in FIT_ROW.findall(done.stdout)}
    assert len(fitted) == 2 * len(LADDER), done.stdout
    for (arm, c), tok_s in fitted.items():
        measured = per_rep[(per_rep["arm"] == arm) & (per_rep["concurrency"] == c)]
        low, high = measured["output_tok_s"].min(), measured["output_tok_s"].max()
        assert low * (1 - TWIN_RESIDUAL_PCT / 100) <= tok_s <= high * (
            1 + TWIN_RESIDUAL_PCT / 100), (arm, c, tok_s, low, high, done.stdout)
    ladder = [int(r["concurrency"]) for r in metrics.summary(run)["pairs"][0]["speedup"]]
    on, off = _sim_curve(twin, "on", ladder), _sim_curve(twin, "off", ladder)
    curve = [{"concurrency": c, "speedup": a / b}
             for c, a, b in zip(ladder, on, off, strict=True)]
    # the twin is one deterministic curve: its rungs carry no noise band
    speedup = [r["speedup"] for r in curve]
    twin_verdict = find_crossover(ladder, speedup, speedup, speedup)
    sweep = metrics.summary(run)["pairs"][0]["crossover"]
    assert twin_verdict.verdict == "crosses" and (
        sweep["below"] <= twin_verdict.below < twin_verdict.above <= sweep["above"]
    ), (curve, sweep, done.stdout)
    assert _crosses_between(curve, twin_verdict.below, twin_verdict.above), curve


def test_the_replies_are_compared_and_synthetic_acceptance_shows(pair_run) -> None:
    """`--spec-synth-len` accepts drafts at random, not by match with the target
    (`server_sample_and_accept_synth`, tools/server/server-context.cpp): a benchmarking
    mode whose replies are not the target's. The report compares them with spec-off's
    rung by rung on the files' own counts; what it finds is printed."""
    for line in assert_reported(pair_run[1], LADDER):
        print(line)


def test_the_key_protected_pair_keeps_its_metrics_and_the_key_stays_out(pair_run) -> None:
    run = pair_run[1]
    rows = metrics.summary(run)["summary"]
    assert all(r["server_running_mean"] > 0 for r in rows)
    assert all(r["accept_len"] > 1.5 for r in rows if r["arm"] == "spec-on")
    holders = [p for p in run.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert holders == []
