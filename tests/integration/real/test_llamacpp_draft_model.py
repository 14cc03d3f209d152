"""The real llama-server with a draft model (`--spec-type draft-simple`), by its own counters.

The tier's pair drafts from n-grams of the context; this one drafts with a second model,
the other drafter llama-server offers (#28: the draft type is a parameter of the tier's
scenarios). The draft is `scripts/llamacpp_draft.py`'s: Gemma 3's tokenizer, one layer
64 wide, random weights, written once into the cache. Its guesses are worthless and need
not be better: `--spec-synth-len` accepts drafts at random to the set mean length, and
what drafting costs (a forward of the draft per drafted token, batched over the slots)
is real. `specload sweep` starts and stops the server (a `command:` arm) and runs it at
C = 1 and 8; the speedup against a plain server is the docs' (docs/real-engines.md),
what must hold here is the server's own account:
- no failed request at any rung;
- each rung's acceptance length is the counters' 1 + accepted / drafts to 1%, and the
  first draft position is accepted at the synthetic rate (to four standard errors of
  the repeat's few hundred drafts);
- every spec-on request records its draft and accepted tokens from its last chunk's
  `timings`, and they add up to the counters' totals over the repeat.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from specload.report import render
from tests.support import llama_metrics as metrics
from tests.support import llama_server
from tests.support.sweeps import read_csv, run_dir_of, run_sweep, write_scenario

SWEEP_TIMEOUT_S = 600
# counts, no speed: CI runs it beside the slow tier
pytestmark = [pytest.mark.real, pytest.mark.untimed, pytest.mark.timeout(SWEEP_TIMEOUT_S + 120)]
SLOTS = 8
DRAFT_N_MAX = 8
SYNTH_LEN = 5.6
LADDER = (1, 8)
MAX_TOKENS = 48


@pytest.fixture(scope="module")
def draft_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("llamacpp-draft")
    spec = llama_server.spec_flags(DRAFT_N_MAX, SYNTH_LEN, "draft-model")
    # Beside the slow tier, at nice 19: one thread (two wait for each other at every
    # layer, so one busy core stalled both), and a window lasts until a batch of the
    # requests that started in it completed (a 10 s window at C = 8 ended before any did)
    scenario = {"name": "llamacpp-draft", "ladder": list(LADDER), "warmup_s": 3,
                "measure_s": 10, "min_requests": SLOTS, "max_measure_s": 60, "drain_s": 0,
                "request": llama_server.request(max_tokens=MAX_TOKENS),
                "arms": [llama_server.command_arm("spec-on", SLOTS, spec, threads=1)]}
    done = run_sweep(folder, str(write_scenario(folder, scenario)), timeout=SWEEP_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return folder / run_dir_of(done.stdout)


@pytest.fixture(scope="module")
def per_rep(draft_run: Path) -> pd.DataFrame:
    return render.build(draft_run).per_rep


def test_no_request_fails_at_any_rung(draft_run: Path) -> None:
    rows = metrics.summary(draft_run)["summary"]
    assert sorted(r["concurrency"] for r in rows) == list(LADDER)
    assert all(r["failures"] == 0 and r["requests"] > 0 for r in rows), rows


def test_acceptance_is_the_counters_and_the_synthetic_rate(draft_run: Path,
                                                           per_rep: pd.DataFrame) -> None:
    for rep_dir, rungs, by_c in metrics.reps(draft_run, per_rep, "spec-on"):
        seen = metrics.samples(rep_dir)
        for rung in rungs:
            t0, t1 = float(rung["measure_start"]), float(rung["measure_end"])
            drafts, accepted = (metrics.at(seen[name], t1) - metrics.at(seen[name], t0)
                                for name in (metrics.DRAFTS, metrics.ACCEPTED))
            row = by_c[int(rung["users"])]
            assert row["accept_len_mean"] == pytest.approx(1 + accepted / drafts, rel=0.01)
        # every draft has a first token, accepted at the synthetic rate p: a binomial
        # count over the repeat's few hundred drafts, held to four standard errors
        drafts = metrics.increase(seen, metrics.DRAFTS)
        first = metrics.increase(seen, metrics.FIRST_ACCEPTED)
        p = llama_server.synth_rate(DRAFT_N_MAX, SYNTH_LEN)
        assert abs(first / drafts - p) <= 4 * math.sqrt(p * (1 - p) / drafts), (
            first, drafts, p)


def test_each_requests_timings_add_up_to_the_counters(draft_run: Path,
                                                      per_rep: pd.DataFrame) -> None:
    for rep_dir, _, _ in metrics.reps(draft_run, per_rep, "spec-on"):
        every = read_csv(rep_dir / "locust_requests.csv")
        rows = [r for r in every if r["error_kind"] == ""]
        assert rows and all(r["draft_tokens"] for r in rows), rep_dir
        # with no drain, the run's end stops the users mid-request: the server releases
        # those slots, and adds their drafts (which no record tells), when it sees the
        # connections go, so only samples from before the stop are held to the records
        stopped = min((float(r["end"]) for r in every if r["interrupted"] == "1"),
                      default=math.inf)
        seen = metrics.samples(rep_dir)
        for name, column in ((metrics.DRAFT_TOKENS, "draft_tokens"),
                             (metrics.ACCEPTED, "accepted_tokens")):
            last, value = [(t, v) for t, v in seen[name] if t < stopped][-1]
            # the counters move when a request's slot is released, as its last chunk
            # leaves: every request that ended before the sample is in it
            # (the server started with the repeat, its counters at 0)
            ended = sum(int(r[column]) for r in rows if float(r["end"]) < last - 0.05)
            told = sum(int(r[column]) for r in rows if float(r["end"]) < last + 0.05)
            assert ended <= value <= told, (name, ended, value, told)
