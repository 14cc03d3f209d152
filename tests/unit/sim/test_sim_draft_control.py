"""The simulator's draft controls: the engines' own adaptive controllers step by step."""

from __future__ import annotations

import pytest

from specload.sim import SimConfigError
from specload.sim.core import EngineCore
from specload.sim.curve import predict
from specload.sim.ema_tiers import EmaTierControl, TierState
from specload.sim.profile import SGLANG_TIERS, EmaTier, Profile, load_profile
from specload.sim.scheduler import BatchFormer, Seq

PROFILE = "h100-llama8b-eagle3"


def _core(mode: str, adaptive: str | None, k: int | None = None, profile: Profile | None = None,
          seqs: int = 1) -> EngineCore:
    core = EngineCore(profile or load_profile(PROFILE), mode, k, 0,  # type: ignore[arg-type]
                      adaptive=adaptive)
    for i in range(seqs):
        core.add(Seq(key=i, prompt_tokens=64, target_tokens=100_000))
    return core


def test_an_ema_tier_steps_down_and_up_past_its_hysteresis() -> None:
    low = TierState(SGLANG_TIERS[1], steps=7, ema=4.0)
    low.decide()  # 4.0 <= 5 - 0.5 - 0.25: one down, and 4.0 > 3 - 0.5 - 0.25 stops it
    assert low.steps == 5
    high = TierState(SGLANG_TIERS[1], steps=3, ema=2.6)
    high.decide()  # 2.6 > 3 - 0.5: one up; not above 5 - 0.5
    assert high.steps == 5
    lowest = TierState(SGLANG_TIERS[1], steps=5, ema=0.1)
    lowest.decide()
    assert lowest.steps == 1
    off = TierState(SGLANG_TIERS[8], steps=0, ema=-1.0)
    off.decide()  # from 0 it probes the next candidate, its average reset
    assert (off.steps, off.ema) == (1, 0.0)
    never = TierState(EmaTier(candidate_steps=[0]), steps=0, ema=-1.0)
    never.decide()
    assert never.steps == 0


def test_ema_tiers_pick_the_tier_by_batch_size_and_wait_out_the_warmup() -> None:
    profile = load_profile(PROFILE)
    core = _core("adaptive", "ema_tiers", k=3, profile=profile)
    control = core.control
    assert isinstance(control, EmaTierControl) and control.max_k == 7
    # SGLang's defaults: a tier starts at the server's step count if it is a candidate,
    # else at its middle candidate
    assert [control.state(b).steps for b in (1, 7, 8, 31, 32, 63, 64, 500)] == [
        3, 3, 3, 3, 1, 1, 0, 0]
    tier = control.state(1)
    tier.ema = 6.5  # as if every draft had been accepted
    for _ in range(profile.speculative.ema_tiers.warmup_batches):
        assert control.draft_k(1) == 3
    for _ in range(profile.speculative.ema_tiers.update_interval - 1):
        assert control.draft_k(1) == 3
    assert control.draft_k(1) == 7  # the first decision: up to the last candidate


def test_the_ema_controller_follows_acceptance_down() -> None:
    base = load_profile(PROFILE)
    poor = base.speculative.model_copy(update={"acceptance": [0.2] * 7})
    profile = base.model_copy(update={"speculative": poor})
    core = _core("adaptive", "ema_tiers", k=7, profile=profile)
    ks = []
    for _ in range(200):
        res = core.step()
        assert res is not None
        ks.append(res.k)
    assert ks[1] == 7 and ks[-1] == 1, ks  # mean accepted ~0.25: it walks down to 1


def test_the_verify_budget_verifies_everything_when_verifying_is_nearly_free() -> None:
    core = _core("adaptive", "verify_budget", k=5)
    core.step()  # the prefill
    res = core.step()
    assert res is not None and res.k == 5
    (seq,) = core.former.running
    assert seq.drafts == 1 and seq.draft_tokens == 5  # one request: every draft verified


def test_the_verify_budget_trims_where_verifying_costs_and_prices_the_best_budget() -> None:
    core = _core("adaptive", "verify_budget", k=7, seqs=256)
    while core.former.waiting or any(not s.decoding for s in core.former.running):
        core.step()
    batch = core.former.schedule(core.control.draft_k)
    drafted = batch.shape.drafts
    core.control.verify(batch)
    kept = [s.sched_k for s in batch.decode]
    assert batch.shape.k == 7 and batch.shape.varlen  # the drafter drafted all 7
    assert drafted == 7 * len(kept) and 0 < sum(kept) < drafted, kept
    assert max(kept) - min(kept) <= 1  # equal survival: the budget spreads evenly
    # no uniform draft length earns more tokens per second than the chosen budget
    cost = core.cost_model.cost
    survival = core.sampler.survival(7, None, len(kept))

    def rate(ks: list[int]) -> float:
        BatchFormer.verify_only(batch, ks)
        return (len(ks) + sum(sum(survival[:k]) for k in ks)) / cost(batch.shape).total

    chosen = rate(kept)
    assert all(chosen >= rate([k] * len(kept)) * 0.999 for k in range(8))


def test_adaptive_needs_an_engine_with_a_controller() -> None:
    with pytest.raises(SimConfigError, match="own controller"):
        _core("adaptive", None)
    with pytest.raises(SimConfigError, match="llamacpp flavor's engine has no adaptive"):
        predict(load_profile(PROFILE), "adaptive", None, [1], flavor="llamacpp")
    base = load_profile(PROFILE)
    three = base.speculative.model_copy(update={"acceptance": [0.8] * 3})
    with pytest.raises(SimConfigError, match="drafts up to 7 tokens"):
        _core("adaptive", "ema_tiers", profile=base.model_copy(update={"speculative": three}))
