"""`--adaptive-schedule`: parsing, its checks, and what the adaptive mode then runs."""

from __future__ import annotations

import argparse

import pytest

from specload.cli import main
from specload.sim import SimConfigError
from specload.sim.profile import (
    SCHEDULE_CEILING,
    engine_profile,
    load_profile,
    parse_schedule,
    with_schedule,
)
from specload.sim.virtual import run_closed_loop


@pytest.mark.parametrize("text", ["1-15:3,16-:0", " 1-15:3, 16-:0 ",
                                  "[[1, 15, 3], [16, 100000, 0]]"])
def test_both_spellings_give_vllm_ranges(text: str) -> None:
    assert parse_schedule(text) == [(1, 15, 3), (16, SCHEDULE_CEILING, 0)]


@pytest.mark.parametrize(("text", "why"), [
    ("2-15:3,16-:0", "start at batch size 1"),
    ("1-15:3,17-:0", "not followed by a range from 16"),
    ("1-15:3,10-:0", "not followed by a range from 16"),
    ("1-15", "write it like"),
    ("1-x:3", "write it like"),
    ("[[1, 15]]", "needs 3 numbers"),
    ("", "empty"),
    ("1-15:-1,16-:0", "k >= 0"),
])
def test_bad_schedules_say_why(text: str, why: str) -> None:
    with pytest.raises(SimConfigError, match=why):
        parse_schedule(text)


def test_a_k_beyond_the_acceptance_rates_is_refused() -> None:
    profile = load_profile("seed-glm")  # five acceptance rates
    with pytest.raises(SimConfigError, match="adaptive schedule"):
        with_schedule(profile, [(1, 15, 6), (16, SCHEDULE_CEILING, 0)])


def test_the_option_overrides_the_profile_only_in_adaptive_mode() -> None:
    args = argparse.Namespace(profile="seed-glm", spec="schedule",
                              adaptive_schedule="1-7:2,8-:0")
    assert engine_profile(args).speculative.adaptive == [(1, 7, 2), (8, SCHEDULE_CEILING, 0)]
    args.adaptive_schedule = None
    assert engine_profile(args) == load_profile("seed-glm")
    args.spec, args.adaptive_schedule = "on", "1-:2"
    with pytest.raises(SimConfigError, match="--spec schedule"):
        engine_profile(args)


def test_a_one_tier_schedule_runs_like_spec_on_and_k0_pays_the_sync_forward() -> None:
    # h100-llama8b-eagle3 has no separate running cap for speculation, so an adaptive
    # server that always drafts k = 2 is the spec-on server, step for step.
    profile = load_profile("h100-llama8b-eagle3")
    on = run_closed_loop(profile, "on", 2, 8, prompt_tokens=128, output_tokens=32)
    always = run_closed_loop(with_schedule(profile, [(1, SCHEDULE_CEILING, 2)]), "schedule",
                             None, 8, prompt_tokens=128, output_tokens=32)
    assert always.output_tok_s == pytest.approx(on.output_tok_s)
    off = run_closed_loop(profile, "off", None, 8, prompt_tokens=128, output_tokens=32)
    never = run_closed_loop(with_schedule(profile, [(1, SCHEDULE_CEILING, 0)]), "schedule",
                            None, 8, prompt_tokens=128, output_tokens=32)
    # the drafter's sync forward: k0_overhead (7.5%) of every decode step
    ratio = never.output_tok_s / off.output_tok_s
    assert 1 / 1.085 < ratio < 1 / 1.065, ratio


def test_sim_curve_takes_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sim-curve", "--profile", "seed-glm", "--spec", "schedule", "--ladder", "1",
                 "--adaptive-schedule", "1-:0", "--max-tokens", "16", "--json"])
    assert code == 0
    assert '"tokens_per_chunk": 1.0' in capsys.readouterr().out
    assert main(["sim-curve", "--profile", "seed-glm", "--spec", "on", "--ladder", "1",
                 "--adaptive-schedule", "1-:0"]) == 2
