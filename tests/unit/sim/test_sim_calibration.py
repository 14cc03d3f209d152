"""`sim-curve` reproduces each built-in profile's published numbers (DESIGN.md)."""

from __future__ import annotations

import pytest

from specload.sim.curve import predict
from specload.sim.profile import load_profile

SEED_LADDER = [1, 2, 5, 10, 30, 70, 100, 250]
PAPER_BATCHES = [2, 4, 8, 16, 24, 32, 48, 56, 64]
PAPER_RATIOS = {
    "h100-llama8b-eagle3": [1.81, 1.82, 1.62, 1.48, 1.39, 1.32, 1.38, 1.34, 1.38],
    "h100-llama8b-eagle": [1.40, 1.38, 1.23, 1.02, 0.93, 0.94, 0.88, 0.99, 0.99],
}


def tok_s(profile: str, spec: str, ladder: list[int]) -> dict[int, float]:
    points = predict(load_profile(profile), spec, None, ladder)  # type: ignore[arg-type]
    return {p.users: p.output_tok_s for p in points}


def test_seed_glm_reproduces_the_measurement() -> None:
    on = tok_s("seed-glm", "on", SEED_LADDER)
    off = tok_s("seed-glm", "off", SEED_LADDER)
    assert on[1] == pytest.approx(77.5, rel=0.10)
    assert on[30] == pytest.approx(253.7, rel=0.10)
    assert on[250] == pytest.approx(144.0, rel=0.10)
    assert max(on, key=on.get) == 30  # the peak of the spec-on curve
    for c in SEED_LADDER:
        if c <= 10:
            assert on[c] > off[c], f"spec-on should lead at C={c}"
        else:
            assert on[c] < off[c], f"spec-on should trail at C={c}"


@pytest.mark.parametrize("profile", sorted(PAPER_RATIOS))
def test_eagle_paper_throughput_ratios(profile: str) -> None:
    on = tok_s(profile, "on", PAPER_BATCHES)
    off = tok_s(profile, "off", PAPER_BATCHES)
    got = [on[b] / off[b] for b in PAPER_BATCHES]
    for batch, ratio, want in zip(PAPER_BATCHES, got, PAPER_RATIOS[profile], strict=True):
        assert ratio == pytest.approx(want, abs=0.15), f"batch {batch}: {ratio:.2f} vs {want}"


def test_adaptive_mode_switches_speculation_off_at_high_concurrency() -> None:
    points = predict(load_profile("h100-llama8b-eagle"), "adaptive", None, [2, 64])
    assert points[0].tokens_per_chunk > 1.2  # speculating at C=2
    assert points[1].tokens_per_chunk == pytest.approx(1.0)  # off at C=64
    off64 = tok_s("h100-llama8b-eagle", "off", [64])[64]
    # the k = 0 tier still runs a draft forward per step (vLLM PR #53426)
    k0 = load_profile("h100-llama8b-eagle").speculative.k0_overhead
    assert points[1].output_tok_s == pytest.approx(off64 / (1 + k0), rel=0.02)


def test_curve_is_deterministic_for_a_seed() -> None:
    a = predict(load_profile("h100-llama8b-eagle3"), "on", None, [8], seed=3)
    b = predict(load_profile("h100-llama8b-eagle3"), "on", None, [8], seed=3)
    assert a == b
