"""The context axis on the real llama-server: a spec-on / spec-off pair at two prompt
lengths, 64 and 1,024 tokens (`contexts:`), through one sweep.

`specload sweep` expands each arm per context and starts four servers in turn (Gemma 3
270M, four slots of 2,048 tokens each, n-gram drafts of up to 4 tokens at a synthetic
acceptance length of 3.0). Checked, on every arm at both contexts, against the server's
own counters: the tokens of each rung (`llamacpp:tokens_predicted_total` between two
samples, as the pair test holds them) and the spec-on arms' acceptance length (the
counters' 1 + accepted / drafts over the window); each arm's prompts are its context's
length as the server counted them; the report maps the two contexts. What the speedups
are, and why the crossover does not move on this CPU, is docs/real-engines.md's "The
context axis on a CPU".
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
import yaml

from specload.report import render
from tests.support import llama_metrics as metrics
from tests.support import llama_server
from tests.support.sweeps import read_csv, run_dir_of, run_sweep

SWEEP_TIMEOUT_S = 1200
# counts, no speed: CI runs it beside the slow tier
pytestmark = [pytest.mark.real, pytest.mark.untimed, pytest.mark.timeout(SWEEP_TIMEOUT_S + 120)]
# 1,024 tokens: a longer prompt's prefill (seconds on one core) would stretch the windows
# past the slow tier this module runs beside
CONTEXTS = [64, 1024]
SLOTS, SLOT_CONTEXT, LADDER = 4, 2048, [1, 4]
SYNTH_LEN, DRAFT_N_MAX, MAX_TOKENS = 3.0, 4, 48
# the synthetic prompts' length is learnt from the server's counts as the run goes
# (traffic/shapes.py: a fixed length's prediction converges over the first requests), and
# Gemma's tokenizer reads the built-in texts at varied densities: one run's 1,024-token
# arms counted a median of 931 over their first dozen requests
PROMPT_SLACK = 0.15


@pytest.fixture(scope="module")
def context_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("llamacpp-contexts")
    spec = llama_server.spec_flags(DRAFT_N_MAX, SYNTH_LEN)
    request = {k: v for k, v in llama_server.request(MAX_TOKENS).items()
               if k != "prompt_tokens"}
    # counts, not speed: short windows of a few whole requests each
    scenario = {"name": "llamacpp-contexts", "ladder": LADDER, "warmup_s": 3,
                "measure_s": 6, "min_requests": 3, "max_measure_s": 60, "drain_s": 0,
                "placement": "apart", "contexts": CONTEXTS, "request": request,
                "arms": [llama_server.command_arm("spec-on", SLOTS, spec,
                                                  slot_context=SLOT_CONTEXT),
                         llama_server.command_arm("spec-off", SLOTS,
                                                  slot_context=SLOT_CONTEXT)]}
    path = folder / "llamacpp-contexts.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False), encoding="utf-8")
    done = run_sweep(folder, str(path), timeout=SWEEP_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    print(done.stdout[-2500:])
    return folder / run_dir_of(done.stdout)


@pytest.fixture(scope="module")
def per_rep(context_run: Path):
    return render.build(context_run).per_rep


def _arms(role: str) -> list[str]:
    return [f"{role}-ctx{c}" for c in CONTEXTS]


def test_tokens_match_the_servers_counter_at_every_context(context_run, per_rep) -> None:
    rows = metrics.summary(context_run)["summary"]
    assert all(r["failures"] == 0 for r in rows), [(r["arm"], r["concurrency"]) for r in rows]
    for arm in _arms("spec-on") + _arms("spec-off"):
        metrics.assert_tokens_match_counter(context_run, per_rep, arm)


def test_acceptance_is_the_counters_at_every_context(context_run, per_rep) -> None:
    for arm in _arms("spec-on"):
        metrics.assert_acceptance_is_the_counters(context_run, per_rep, arm)


def test_each_arm_sends_its_contexts_prompts(context_run) -> None:
    for context in CONTEXTS:
        for role in ("spec-on", "spec-off"):
            rows = read_csv(context_run / f"{role}-ctx{context}" / "locust_requests.csv")
            counted = statistics.median(int(r["prompt_tokens"]) for r in rows
                                        if r["prompt_tokens"])
            assert counted == pytest.approx(context, rel=PROMPT_SLACK), (role, context)


def test_the_report_maps_both_contexts(context_run) -> None:
    found = json.loads((context_run / "summary.json").read_text())["context_map"]
    assert found["contexts"] == [str(c) for c in CONTEXTS]
    assert found["concurrency"] == LADDER
    print("llama-server speedup by context:", dict(zip(found["contexts"], found["speedup"],
                                                        strict=True)), found["sentence"])
