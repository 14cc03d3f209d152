"""Each request's own acceptance, as the engine's final chunk tells it, against the truth.

Two simulated llama-servers (`--metrics`, speculation on and off) stream as llama-server
does: one event per token, and the request's `timings` (`draft_n`, `draft_n_accepted`)
in its last chunk when it drafted; a simulated vLLM with
`--per-request-spec-decode-metrics detailed` puts `metrics.speculative_decoding`, with
the drafts accepted at each verification step, on its usage chunk; a simulated SGLang
sends `sglext.spec_tokens_details` in a chunk of its own, as the requests ask
(`extra_body: {return_spec_tokens_details: true}`). Checked: every
request of the spec-on arms records the draft and accepted tokens (and, from vLLM, the
verification steps) the simulator's trace has for it; the spec-off arm's requests, which
drafted nothing, leave both empty; at every /metrics sample the counters hold what the
requests released before it recorded (llama-server adds a request's drafts when its slot
is released, SGLang its tokens and verification steps when it finishes); each rung's
acceptance rate from the requests is the counters' to 1% (the rung's requests are those
that ended in it, the counters are interpolated at its edges: some 30 requests a rung
make the two agree), and SGLang's acceptance length, tokens per verification step, the
same; with no mismatch warning; and the report's
table shows the column. From vLLM's per-step lists each request records its steps binned
by number (`accept_by_step`) as the trace has them; the rungs' bins of steps
and accepted drafts give the arm's acceptance length, each rung's acceptance histogram
counts every request that told its drafts, and the report draws both.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specload.runfiles import accept_by_step
from specload.runfiles.records import FETCH_METRIC
from tests.support.sweeps import read_csv, run_dir_of

PROFILE = "h100-llama8b-eagle3"
LADDER = [2, 4, 8]
ACCEPTED, DRAFTED = ("llamacpp:spec_decode_num_accepted_tokens_total",
                     "llamacpp:spec_decode_num_draft_tokens_total")
RELEASE_S = 0.05  # a request's trace ends once its response is written, after the release


@pytest.fixture(scope="module")
def run(module_sim_server, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    from tests.support.sweeps import run_sweep, write_scenario

    on, off = (module_sim_server(profile=PROFILE, spec=spec, flavor="llamacpp",
                                 extra_args=["--metrics"]) for spec in ("on", "off"))
    vllm = module_sim_server(profile=PROFILE, spec="on", flavor="vllm",
                             extra_args=["--per-request-spec-decode-metrics", "detailed"])
    sglang = module_sim_server(profile=PROFILE, spec="on", flavor="sglang")
    folder = tmp_path_factory.mktemp("acceptance")
    data = {"name": "acceptance", "ladder": LADDER, "warmup_s": 1, "measure_s": 6,
            "min_requests": 0, "request": {
                "max_tokens": 64, "ignore_eos": True,
                # SGLang tells a request's speculation when the request asks
                "extra_body": {"return_spec_tokens_details": True}},
            "arms": [{"name": "spec-on", "url": on.url, "spec": "on", "engine": "llamacpp"},
                     {"name": "spec-off", "url": off.url, "spec": "off",
                      "engine": "llamacpp"},
                     {"name": "vllm-on", "url": vllm.url, "spec": "on", "engine": "vllm"},
                     {"name": "sglang-on", "url": sglang.url, "spec": "on",
                      "engine": "sglang"}]}
    res = run_sweep(folder, str(write_scenario(folder, data)), "--out", "out")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    traces = {"spec-on": on.read_trace(), "spec-off": off.read_trace(),
              "vllm-on": vllm.read_trace(), "sglang-on": sglang.read_trace()}
    return folder / run_dir_of(res.stdout), traces


@pytest.mark.slow
def test_every_request_records_what_the_trace_has(run) -> None:
    run_dir, traces = run
    for arm, steps in (("spec-on", False), ("vllm-on", True), ("sglang-on", True)):
        truth = {t["request_id"]: t for t in traces[arm]}
        rows = read_csv(run_dir / arm / "locust_requests.csv")
        assert rows and {r["error_kind"] for r in rows} == {""}
        assert all(r["draft_tokens"] for r in rows)  # an EAGLE-3 profile drafts every step
        for r in rows:
            t = truth[r["request_id"]]
            assert (int(r["draft_tokens"]), int(r["accepted_tokens"])) == (
                t["draft_tokens"], t["accepted_tokens"]), (arm, r["request_id"])
            # llama.cpp does not say how many steps verified them; vLLM does
            assert r["draft_steps"] == (str(t["draft_steps"]) if steps else ""), arm
        assert sum(int(r["accepted_tokens"]) for r in rows) > 0
    off = read_csv(run_dir / "spec-off" / "locust_requests.csv")
    assert off and {(r["draft_tokens"], r["accepted_tokens"]) for r in off} == {("", "")}
    assert {t["draft_tokens"] for t in traces["spec-off"]} == {0}


# each server's counters of finished requests and the record columns they add up (SGLang's
# token counter also counts the one token of each `/health` generation, which no record
# holds)
COUNTED = {"spec-on": ((DRAFTED, "draft_tokens"), (ACCEPTED, "accepted_tokens")),
           "sglang-on": (("sglang:spec_verify_calls_total", "draft_steps"),)}


@pytest.mark.slow
@pytest.mark.parametrize("arm", list(COUNTED))
def test_the_counters_hold_what_the_released_requests_recorded(run, arm: str) -> None:
    """llama-server adds a request's drafts when its slot is released, SGLang its tokens
    and verification steps when it finishes (`observe_one_finished_request`)."""
    run_dir, traces = run
    ends = {t["request_id"]: t["end"] for t in traces[arm]}
    rows = [(ends[r["request_id"]], *(int(r[col]) for _, col in COUNTED[arm]))
            for r in read_csv(run_dir / arm / "locust_requests.csv")]
    samples: dict[float, dict[str, float]] = {}
    for s in read_csv(run_dir / arm / "locust_server_metrics.csv"):
        samples.setdefault(float(s["ts"]), {})[s["metric"]] = float(s["value"])
    assert len(samples) >= 10
    for ts, got in samples.items():
        half = got[FETCH_METRIC] / 2  # the server read its counters inside the fetch
        for i, (name, _) in enumerate(COUNTED[arm], start=1):
            surely = sum(r[i] for r in rows if r[0] <= ts - half)
            maybe = sum(r[i] for r in rows if r[0] <= ts + half + RELEASE_S)
            assert surely <= got[name] <= maybe, (ts, name, surely, got[name], maybe)


@pytest.mark.slow
def test_each_rungs_rate_from_the_requests_is_the_counters(run) -> None:
    run_dir, traces = run
    summary = json.loads((run_dir / "summary.json").read_text())
    # llama.cpp counts drafts and accepted drafts; SGLang counts no drafts, only its
    # verification steps (with the tokens, of finished requests), so its acceptance
    # length is the counters' tokens per step, and the requests' the same ratio of what
    # they recorded (their rate has only SGLang's gauges of recent steps to meet)
    for arm in ("spec-on", "sglang-on"):
        on = [r for r in summary["summary"] if r["arm"] == arm]
        assert [r["concurrency"] for r in on] == LADDER
        for r in on:
            assert r["req_spec_requests"] >= 30, r
            assert r["req_accept_len"] > 1.5, r
            if arm == "spec-on":
                assert r["req_accept_rate"] == pytest.approx(r["accept_rate"], rel=0.01), r
    rows = read_csv(run_dir / "sglang-on" / "locust_requests.csv")
    ends = {t["request_id"]: t["end"] for t in traces["sglang-on"]}
    for rung in read_csv(run_dir / "sglang-on" / "locust_rungs.csv"):
        t0, t1 = float(rung["measure_start"]), float(rung["measure_end"])
        ended = [r for r in rows if t0 <= ends[r["request_id"]] < t1]
        steps = sum(int(r["draft_steps"]) for r in ended)
        own = sum(int(r["output_tokens"]) for r in ended) / steps
        (row,) = [r for r in summary["summary"]
                  if r["arm"] == "sglang-on" and r["concurrency"] == int(rung["users"])]
        assert row["accept_len_mean"] == pytest.approx(own, rel=0.01), (row, own)
    off = [r for r in summary["summary"] if r["arm"] == "spec-off"]
    assert all(r["req_spec_requests"] == 0 for r in off), off
    assert not [w for w in summary["warnings"] if w["kind"] == "acceptance_mismatch"]
    assert "accept rate (requests)" in (run_dir / "report.html").read_text()


@pytest.mark.slow
def test_acceptance_by_step_and_its_histogram(run) -> None:
    run_dir, traces = run
    truth = {t["request_id"]: t for t in traces["vllm-on"]}
    rows = read_csv(run_dir / "vllm-on" / "locust_requests.csv")
    for r in rows:
        t = truth[r["request_id"]]
        assert r["accept_by_step"] == accept_by_step.encode(t["step_accepted"]), r
        bins = accept_by_step.decode(r["accept_by_step"])
        assert sum(s for s, _ in bins) == t["draft_steps"] == len(t["step_accepted"])
        assert sum(a for _, a in bins) == int(r["accepted_tokens"])
    assert {r["accept_by_step"] for r in read_csv(run_dir / "spec-on" /
                                                   "locust_requests.csv")} == {""}
    summary = json.loads((run_dir / "summary.json").read_text())
    binned = [0, 0]  # the vllm-on rungs' steps and accepted drafts, over their bins
    for r in summary["summary"]:
        hist = r["req_accept_len_hist"]
        assert sum(hist.values()) == r["req_spec_requests"], r
        if r["arm"] != "vllm-on":
            assert r["accept_step_steps"] == {}, r
            continue
        steps, accepted = r["accept_step_steps"], r["accept_step_accepted"]
        assert sum(steps.values()) > 0 and steps.keys() == accepted.keys()
        binned[0] += sum(steps.values())
        binned[1] += sum(accepted.values())
    # the rungs' requests are most of the arm's: their acceptance length is the arm's
    every = sum(int(r["accepted_tokens"]) for r in rows) / sum(int(r["draft_steps"])
                                                              for r in rows)
    assert binned[1] / binned[0] == pytest.approx(every, rel=0.03), (binned, every)
    page = (run_dir / "report.html").read_text()
    assert "each rung's requests by their acceptance length" in page
    assert "by the request's verification step" in page
