"""Warnings where a speculation setting did not take effect: a fixed-k arm that stopped
speculating mid-ladder, a verification arm that drafted above its bound."""

from __future__ import annotations

import pandas as pd

from specload.report import spec_checks
from specload.report.run_files import ArmSource


def _summary(arm: str, per_step: list[float], batch: list[float] | None = None
             ) -> pd.DataFrame:
    """Tokens per chunk per rung; the server's acceptance counts only the steps that
    drafted, so it stays high where few do (a false lead these checks must not take)."""
    cs = [1, 4, 16, 64][:len(per_step)]
    return pd.DataFrame({"arm": arm, "concurrency": cs, "tokens_per_chunk": per_step,
                         "accept_len": 2.9,
                         "server_running_mean": batch or [float("nan")] * len(cs)})


def test_a_fixed_k_arm_that_stops_speculating_is_flagged_where_it_stopped() -> None:
    on = ArmSource("on", "spec_on", spec="on")
    (found,) = spec_checks.stopped(_summary("on", [2.6, 2.4, 1.0, 1.0]), [on])
    assert (found["kind"], found["arm"], found["concurrency"]) == ("speculation_stopped",
                                                                   "on", 16)
    assert "fell from 2.40 to 1.00" in found["message"]
    assert spec_checks.stopped(_summary("on", [2.6, 2.4, 1.0, 1.0]), [on], ["on"]) == []
    assert "acceptance_rate_threshold" in found["message"]


def test_an_arm_that_speculates_to_the_end_or_never_did_is_not_flagged() -> None:
    on = ArmSource("on", "spec_on", spec="on")
    assert spec_checks.stopped(_summary("on", [2.6, 1.0, 1.0, 1.8]), [on]) == []
    assert spec_checks.stopped(_summary("on", [1.0, 1.0, 1.0]), [on]) == []  # no drafts
    # an engine's own controller may turn speculation off at high load: not a fixed k
    adaptive = ArmSource("on", "other", spec="adaptive")
    assert spec_checks.stopped(_summary("on", [2.6, 2.4, 1.0, 1.0]), [adaptive]) == []


def test_a_verification_arm_drafting_above_its_bound_is_flagged_with_the_cause() -> None:
    verify = ArmSource("verify", "verify", engine="vllm")
    schedule = {"verify": [[1, 15, 3], [16, 65536, 0]]}
    summary = _summary("verify", [2.5, 2.4, 2.2, 1.0], batch=[1.0, 4.0, 15.8, 40.0])
    assert spec_checks.drafting_above_bound(summary, [verify], schedule, {}) == []
    summary = _summary("verify", [2.5, 2.4, 2.2, 2.1], batch=[1.0, 4.0, 15.8, 40.0])
    (found,) = spec_checks.drafting_above_bound(summary, [verify], schedule,
                                                {"verify": "mtp"})
    assert found["concurrency"] == 64
    assert "k = 0 from batch 16): tokens per step at C=64 (2.10)" in found["message"]
    assert "vLLM issue #51510" in found["message"]
    (other,) = spec_checks.drafting_above_bound(summary, [verify], schedule,
                                                {"verify": "eagle3"})
    assert "#51510" not in other["message"]
    # an arm streaming one event per token shows nothing in its chunks
    assert spec_checks.drafting_above_bound(summary, [verify], schedule, {}, ["verify"]) == []
