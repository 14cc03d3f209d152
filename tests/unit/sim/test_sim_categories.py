"""Acceptance per prompt category: the simulator reads a request's category off the
built-in prompt it was sent and draws that category's rates; the calibrated profile
holds its published table."""

from __future__ import annotations

from pathlib import Path

import pytest

from specload.sim import SimConfigError
from specload.sim.acceptance import AcceptanceSampler, expected_tokens_per_step
from specload.sim.categories import category_of
from specload.sim.profile import load_profile
from specload.sim.virtual import run_closed_loop
from specload.traffic.prompt_sets import load_prompts

# tau at K = 7, temperature 1, of yuhuili/EAGLE3-LLaMA3.1-Instruct-8B, per benchmark (the
# model card of nebius/EAGLE3-Llama-3.3-70B-Instruct): the profile's categories
PUBLISHED = {"chat": 2.77, "code": 3.49, "reasoning": 3.34}


def test_every_built_in_prompt_is_known_by_its_text_as_either_endpoint_sends_it() -> None:
    for prompt in load_prompts(None):
        assert category_of(prompt.text) == prompt.category  # /v1/completions, flattened
        chat = "\x1e".join(m["content"] for m in prompt.messages)  # openai_request's join
        assert category_of(chat) == prompt.category
    assert category_of("a prompt of the user's own") is None


def test_the_calibrated_profile_holds_the_published_table() -> None:
    profile = load_profile("h100-llama8b-eagle3-categories")
    rates = profile.speculative.acceptance_by_category
    assert set(rates) == set(PUBLISHED)
    for category, tau in PUBLISHED.items():
        assert expected_tokens_per_step(rates[category], 7) == pytest.approx(tau, abs=0.15)
    # the rest is the base profile's
    base = load_profile("h100-llama8b-eagle3")
    assert profile.speculative.acceptance == base.speculative.acceptance
    assert profile.hardware == base.hardware and profile.speculative.k == base.speculative.k


def test_a_request_draws_its_categorys_rates() -> None:
    rates = {"code": [0.9, 0.9], "chat": [0.3, 0.3]}
    sampler = AcceptanceSampler([0.6, 0.6], seed=1, by_category=rates)
    for category, table in [("code", rates["code"]), ("chat", rates["chat"]),
                            (None, [0.6, 0.6]), ("summarisation", [0.6, 0.6])]:
        mean = sum(sampler.sample(2, category) for _ in range(20_000)) / 20_000
        assert 1 + mean == pytest.approx(expected_tokens_per_step(table, 2), rel=0.02)


def test_a_profile_extends_another_section_by_section(tmp_path: Path) -> None:
    variant = tmp_path / "variant.yaml"
    variant.write_text("extends: seed-glm\ndescription: seed-glm, k = 2\n"
                       "speculative: {k: 2}\n", encoding="utf-8")
    got, base = load_profile(str(variant)), load_profile("seed-glm")
    assert got.speculative.k == 2 and got.description == "seed-glm, k = 2"
    assert got.speculative.acceptance == base.speculative.acceptance
    assert got.hardware == base.hardware
    (tmp_path / "loop.yaml").write_text("extends: loop.yaml\n", encoding="utf-8")
    with pytest.raises(SimConfigError, match="does not extend this one"):
        load_profile(str(tmp_path / "loop.yaml"))


def test_rates_per_category_must_match_the_positions() -> None:
    data = load_profile("seed-glm").model_dump()
    data["speculative"]["acceptance_by_category"] = {"code": [0.9]}
    with pytest.raises(ValueError, match=r"acceptance_by_category\.code has 1 rates"):
        type(load_profile("seed-glm")).model_validate(data)


def test_a_virtual_mix_gives_each_category_its_own_time() -> None:
    """The closed loop in virtual time, requests taking the categories in turn: a code
    request (accepted more often) ends sooner than a chat one beside it; without
    speculation they take as long."""
    profile = load_profile("h100-llama8b-eagle3-categories")
    mix = ["code", "chat"]
    on = run_closed_loop(profile, "on", None, 8, categories=mix)
    off = run_closed_loop(profile, "off", None, 8, categories=mix)
    assert set(on.e2e_s_by_category) == {"code", "chat"}
    assert on.e2e_s_by_category["code"] < 0.95 * on.e2e_s_by_category["chat"]
    assert off.e2e_s_by_category["code"] == pytest.approx(off.e2e_s_by_category["chat"],
                                                          rel=0.05)
    assert run_closed_loop(profile, "on", None, 8).e2e_s_by_category == {}
