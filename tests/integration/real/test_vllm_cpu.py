"""The second real engine: vLLM's CPU build through the whole loop, crossover included.

`specload sweep` starts and stops three vLLM servers (`command:` arms; a random-weight
Llama and its one-layer draft built offline by scripts/vllm_model.py; every server
behind an API key given in `VLLM_API_KEY`, the users' in `OPENAI_API_KEY`): the draft
model proposing 4 tokens (vLLM's `draft_model`, named through `$VLLM_MODEL` as a user's
scenario would), no speculation, and then the verification arm, which restarts the
spec-on server with the `--speculative-config` the sweep recommends from its own
crossover. What must hold, judged by vLLM's own counters:
- no failed request on any arm;
- every request's output is its `usage` count, and in each rung the client's token
  arrivals between the first and the last /metrics sample inside the window are the
  delta of `vllm:generation_tokens_total` between them (counted as tokens are made,
  vllm/v1/metrics/loggers.py) to 1%, once the server's read of its counter is allowed
  anywhere inside each sample's fetch (a loaded vLLM answered /metrics in up to 1.8 s)
  and one engine step's tokens (up to K + 1 per request) may be on their way to the
  client at an edge;
- the acceptance length per rung is 1 + accepted / drafts from the
  `vllm:spec_decode_*` counters over the window to 1%, and comes from the server;
- every request of a speculating server tells its drafts (`--per-request-spec-decode-
  metrics detailed`): its steps binned by number add up to its verification steps and
  accepted drafts, and each spec-on rung's acceptance rate from its requests and from
  the counters both lie in the range its requests allow (those wholly inside the window,
  plus any share of those at its edges), with no `acceptance_mismatch` warning;
- the batch column is the window's mean of `vllm:num_requests_running` samples;
- speculation pays alone and stops paying inside the ladder, so the sweep recommends a
  schedule "4 tokens up to batch size B, none above" with the draft's real path; the
  verification server drafts at C = 1 and not once at C = 16, where every engine step
  runs more than B requests (`vllm:spec_decode_num_drafts_total` does not move); near
  the bound some steps still draft (vLLM keys the schedule on each step's scheduled
  requests, issue #49548): that share is printed;
- above the bound the verification server (the draft model held at k = 0) is measured
  against spec-off at the same rungs: the k = 0 tax with its noise band, in summary.json,
  the report and, where it is beyond the noise, the recommendation's README;
- every arm's replies are compared with spec-off's at every rung, on the counts the
  request files give (what they find is printed);
- no file of the run holds the key, and the report still has batch and acceptance.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pytest

from specload.engines.schedule import BATCH_SIZE_CEILING
from specload.report import render
from specload.report.client_metrics import measure
from specload.report.run_files import read_requests
from specload.report.windows import Window
from specload.runfiles import accept_by_step
from specload.runfiles.records import FETCH_METRIC
from tests.support import vllm_server
from tests.support.parity_counts import assert_reported
from tests.support.ratios import ratio_range
from tests.support.sweeps import read_csv, run_dir_of, run_sweep

SWEEP_TIMEOUT_S = 900
pytestmark = [pytest.mark.real, pytest.mark.timeout(SWEEP_TIMEOUT_S + 300)]
# 12 layers of 1024 whose layers after the first add a fifth of a random model's: the
# first layer alone, as the draft, guesses the target's token often enough that 4
# drafted tokens pay at C = 1, and every step past a few requests is paid per token
# checked, so speculation stops paying inside the ladder (docs/real-engines.md, "The
# whole loop through a crossover").
SIZE = vllm_server.ModelSize(layers=12, hidden=1024, draft_layers=1, tail_scale=0.2)
K = 4
LADDER = (1, 4, 16)
MAX_NUM_SEQS = 16
MAX_TOKENS = 24  # short enough for 10 requests per rung at C = 1 in 15 s
# requests a rung's rate is judged from: 11 at C = 1 on an AMX Xeon in float32 (14 tok/s),
# 20 and more on a faster CPU
MIN_RATE_REQUESTS = 10
KEY = "sk-vllm-real-tier-7d21"
ARMS = ("spec-on", "spec-off", "verify")


@pytest.fixture(scope="module")
def pair_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("vllm")
    pair = vllm_server.pair_scenario(folder, SIZE, k=K, ladder=LADDER,
                                     spec_config=vllm_server.draft_config(K), verify=True,
                                     max_num_seqs=MAX_NUM_SEQS, max_tokens=MAX_TOKENS,
                                     warmup_s=3, measure_s=15, key_env="OPENAI_API_KEY")
    done = run_sweep(folder, str(pair.path), timeout=SWEEP_TIMEOUT_S,
                     env={**os.environ, "OPENAI_API_KEY": KEY, "VLLM_MODEL": str(pair.model)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    print(done.stdout[-2500:])
    return folder / run_dir_of(done.stdout)


@pytest.fixture(scope="module")
def per_rep(pair_run: Path) -> pd.DataFrame:
    return render.build(pair_run).per_rep


Series = tuple[np.ndarray, np.ndarray]


def _series(arm_dir: Path) -> dict[str, Series]:
    rows: dict[str, list[tuple[float, float]]] = {}
    for r in read_csv(arm_dir / "locust_server_metrics.csv"):
        rows.setdefault(r["metric"], []).append((float(r["ts"]), float(r["value"])))
    return {name: (np.array([t for t, _ in v]), np.array([x for _, x in v]))
            for name, v in rows.items()}


def _delta(series: Series, t0: float, t1: float) -> float:
    """A counter's increase over [t0, t1], linear between the samples around each end."""
    ts, vs = series
    return float(np.interp(t1, ts, vs) - np.interp(t0, ts, vs))


def _rungs(run: Path, per_rep: pd.DataFrame, arm: str):
    """Each rung of the arm: (its window, its figures, the arm's /metrics series)."""
    series = _series(run / arm)
    by_c = {int(r["concurrency"]): r for _, r in per_rep[per_rep["arm"] == arm].iterrows()}
    for rung in read_csv(run / arm / "locust_rungs.csv"):
        window = (float(rung["measure_start"]), float(rung["measure_end"]))
        yield window, by_c[int(rung["users"])], series


def test_no_request_fails_on_any_arm(pair_run: Path) -> None:
    rows = json.loads((pair_run / "summary.json").read_text())["summary"]
    assert {r["arm"] for r in rows} == set(ARMS)
    assert [(r["arm"], r["concurrency"], r.get("top_failure")) for r in rows
            if r["failures"]] == []


def _inside(series: Series, t0: float, t1: float) -> tuple[int, int]:
    """The indices of the first and the last sample inside [t0, t1]."""
    ts = series[0]
    kept = np.flatnonzero((ts >= t0) & (ts <= t1))
    return int(kept[0]), int(kept[-1])


def test_tokens_are_the_usage_counts_and_the_servers_counter(pair_run: Path,
                                                             per_rep: pd.DataFrame) -> None:
    for arm in ARMS:
        prefix = pair_run / arm / "locust"
        requests = read_requests(prefix)
        done = requests[(requests["error_kind"].fillna("") == "") & ~requests["interrupted"]]
        # ignore_eos: each request is max_tokens long by its usage
        assert set(done["output_tokens"]) == {MAX_TOKENS}, arm
        assert set(done["tokens_source"]) == {"usage"}, arm
        for (t0, t1), row, series in _rungs(pair_run, per_rep, arm):
            generated, fetch = series["vllm:generation_tokens_total"], series[FETCH_METRIC]
            a, b = _inside(generated, t0, t1)
            ta, tb = generated[0][a], generated[0][b]
            server = generated[1][b] - generated[1][a]
            # the client's token arrivals between the two samples' stamps, read as the
            # report reads them; the server read its counter within half of each
            # sample's fetch of the stamp, and counts a step's tokens when the step ends,
            # while its API server may still be sending them: part of the step in flight
            # at each edge may be counted on one side and received on the other; the two
            # parts take away from each other, so the gap is at most one step's tokens,
            # and a step carries up to K + 1 per request of the rung when drafting (CI
            # runs at spec-on C = 4: 16 and 12 tokens, above the window's mean step of 7)
            between = measure(requests, [Window(0, int(row["concurrency"]), ta, tb)]).iloc[0]
            client = between["output_tok_s"] * (tb - ta)
            step_max = int(row["concurrency"]) * (1 if arm == "spec-off" else K + 1)
            slack = between["output_tok_s"] * (fetch[1][a] + fetch[1][b]) / 2 + step_max
            assert abs(client - server) <= 0.01 * server + slack, (
                arm, row["concurrency"], client, server, slack)


def test_acceptance_is_the_counters(pair_run: Path, per_rep: pd.DataFrame) -> None:
    for arm in ("spec-on", "verify"):
        for (t0, t1), row, series in _rungs(pair_run, per_rep, arm):
            drafts = _delta(series["vllm:spec_decode_num_drafts_total"], t0, t1)
            if drafts < 1:  # the verification server drafts nothing above its bound
                assert pd.isna(row["accept_len_mean"]) or row["accept_len_mean"] == 1
                continue
            accepted = _delta(series["vllm:spec_decode_num_accepted_tokens_total"], t0, t1)
            assert row["accept_len_mean"] == pytest.approx(1 + accepted / drafts, rel=0.01), (
                arm, row["concurrency"])
    rows = json.loads((pair_run / "summary.json").read_text())["summary"]
    on = [r for r in rows if r["arm"] == "spec-on"]
    assert {r["accept_len_source"] for r in on} == {"server"}
    assert all(r["accept_len"] > 1.5 for r in on), on


def test_each_request_tells_its_drafts_step_by_step(pair_run: Path,
                                                   per_rep: pd.DataFrame) -> None:
    for arm in ("spec-on", "verify"):
        told = [r for r in read_csv(pair_run / arm / "locust_requests.csv")
                if r["draft_tokens"]]
        assert told, arm
        for r in told:
            bins = accept_by_step.decode(r["accept_by_step"])
            assert sum(n for n, _ in bins) == int(r["draft_steps"]), r
            assert sum(a for _, a in bins) == int(r["accepted_tokens"]), r
    # Each rung's rate from its requests and from the counters both lie where the
    # requests wholly inside the window put it, give or take any share of those that
    # overlap its edges (within a sample and a fetch of them): the requests count whole
    # requests that ended inside, the counters every step between two samples. At C = 1
    # one edge request moved the two 1.3% apart, past a flat 1%.
    rows = read_csv(pair_run / "spec-on" / "locust_requests.csv")
    spans = [(float(r["start"]), float(r["end"]), int(r["draft_tokens"]),
              int(r["accepted_tokens"])) for r in rows if r["draft_tokens"]]
    series = _series(pair_run / "spec-on")
    slack = 1.0 + float(np.max(series[FETCH_METRIC][1]))  # the sampler's period + a fetch
    for (t0, t1), row, _ in _rungs(pair_run, per_rep, "spec-on"):
        whole = [(d, a) for s, e, d, a in spans if s >= t0 + slack and e <= t1 - slack]
        edges = [(d, a) for s, e, d, a in spans if d and e >= t0 - slack and s <= t1 + slack
                 and not (s >= t0 + slack and e <= t1 - slack)]
        low, high = ratio_range(whole, edges)
        assert row["req_spec_requests"] >= MIN_RATE_REQUESTS, row
        for name in ("accept_rate", "req_accept_rate"):
            assert low - 1e-9 <= row[name] <= high + 1e-9, (row["concurrency"], name,
                                                            row[name], low, high)
        print(f"spec-on C={row['concurrency']:g}: acceptance rate {row['req_accept_rate']:.4f} "
              f"(requests), {row['accept_rate']:.4f} (counters), range {low:.4f}-{high:.4f}; "
              f"by step {row['accept_step_steps']} steps, {row['accept_step_accepted']} "
              "accepted")
    warnings = json.loads((pair_run / "summary.json").read_text())["warnings"]
    assert not [w for w in warnings if w["kind"] == "acceptance_mismatch"], warnings


def test_batch_is_the_running_gauge(pair_run: Path, per_rep: pd.DataFrame) -> None:
    for arm in ARMS:
        for (t0, t1), row, series in _rungs(pair_run, per_rep, arm):
            ts, vs = series["vllm:num_requests_running"]
            gauge = vs[(ts >= t0) & (ts <= t1)].mean()
            assert row["server_running_mean"] == pytest.approx(gauge, rel=0.05), (
                arm, row["concurrency"])
            assert 0 < row["server_running_mean"] <= min(row["concurrency"], MAX_NUM_SEQS) * 1.05


class Drafting(NamedTuple):
    """One rung's drafting by the server's counters over its window."""

    share: float  # drafts per request and engine step
    drafts: float
    steps: float
    batch: float  # the window's mean running requests


def _drafting(run: Path, per_rep: pd.DataFrame, arm: str) -> dict[int, Drafting]:
    """Per rung of the arm; vLLM counts one draft per request per step
    (vllm/v1/spec_decode/metrics.py, `SpecDecodingStats.observe_draft`)."""
    out = {}
    for (t0, t1), row, series in _rungs(run, per_rep, arm):
        steps = _delta(series["vllm:iteration_tokens_total_count"], t0, t1)
        drafts = _delta(series["vllm:spec_decode_num_drafts_total"], t0, t1)
        batch = float(row["server_running_mean"])
        out[int(row["concurrency"])] = Drafting(drafts / max(steps * batch, 1), drafts, steps,
                                                batch)
    return out


def test_the_recommended_schedule_drafts_only_up_to_its_bound(pair_run: Path,
                                                              per_rep: pd.DataFrame) -> None:
    summary = json.loads((pair_run / "summary.json").read_text())
    rec = summary["recommendation"]
    tok_s = {(r["arm"], r["concurrency"]): r["output_tok_s"] for r in summary["summary"]}
    print("spec-on / spec-off:", {c: round(tok_s["spec-on", c] / tok_s["spec-off", c], 3)
                                  for c in LADDER}, "C* =", summary["c_star"])
    assert rec["verdict"] == "crosses", rec["summary"]
    bound = rec["bound"]["last_on"]
    config = rec["vllm_speculative_config"]
    # $VLLM_MODEL filled in from the sweep's environment: the path the servers loaded
    assert config["model"] == f"{vllm_server.model(SIZE)}/draft"
    assert config["num_speculative_tokens_per_batch_size"] == [
        [1, bound, K], [bound + 1, BATCH_SIZE_CEILING, 0]]
    on, verify = _drafting(pair_run, per_rep, "spec-on"), _drafting(pair_run, per_rep, "verify")
    print(f"below and above batch size {bound}, per rung:", {"spec-on": on, "verify": verify})
    assert verify[1].share > 0.5, verify  # nearly every step at batch 1 drafts
    assert verify[16].batch > bound + 2, verify  # the rung's batch runs well past the bound
    # where spec-on drafts for nearly every request at every step, the verification server
    # drafts only in the few steps that schedule no more requests than the bound (vLLM
    # keys the schedule on a step's scheduled requests: equal-length requests end
    # together and the batch refills in waves; a CI run drafted 4 times in 49 steps)
    assert on[16].share > 0.5, on
    assert verify[16].share < 0.05, verify
    (verified,) = summary["verify"]
    assert verified["arm"] == "verify" and verified["schedule"][0] == [1, bound, K]
    print("envelope efficiency per rung:",
          [(r["concurrency"], round(r["efficiency"], 3)) for r in verified["rungs"]])


def test_the_k0_tax_above_the_bound_is_measured_against_spec_off(pair_run: Path) -> None:
    """Above its bound the verification server holds the draft model at k = 0: its tok/s
    over spec-off's at those rungs, with the noise band, is in the records and the
    report, and in the recommendation's README where it is beyond the noise."""
    summary = json.loads((pair_run / "summary.json").read_text())
    (verified,) = summary["verify"]
    tax = verified["k0_tax"]
    bound = summary["recommendation"]["bound"]["last_on"]
    assert tax is not None and tax["spec_off"] == "spec-off", verified
    assert tax["from_batch"] == bound + 1
    rungs = {r["concurrency"]: r for r in tax["rungs"]}
    assert 16 in rungs, tax  # its batch runs well past the bound there
    for r in rungs.values():
        assert r["batch"] >= bound + 1 and 0.5 < r["ratio"] < 1.2, r
        assert r["band_lo"] <= r["ratio"] <= r["band_hi"], r
    print("k = 0 tax (verify / spec-off) per rung:",
          {c: (round(r["ratio"], 3), round(r["band_lo"], 3), round(r["band_hi"], 3))
           for c, r in rungs.items()}, "beyond the noise at", tax["beyond_noise_at"])
    assert "with k = 0 (from batch" in (pair_run / "report.html").read_text()
    readme = (pair_run / "recommended" / "README.md").read_text()
    assert ("k = 0 costs up to" in readme) == bool(tax["beyond_noise_at"]), readme


def test_each_arms_replies_are_compared_with_spec_offs(pair_run: Path) -> None:
    """At temperature 0 the draft model's drafts, verified, should leave the replies as
    spec-off's; what the run finds, rung by rung, is printed (docs/real-engines.md)."""
    for line in assert_reported(pair_run, LADDER):
        print(line)


def test_the_key_is_in_no_file_of_the_run(pair_run: Path) -> None:
    holders = [p for p in pair_run.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert holders == []
