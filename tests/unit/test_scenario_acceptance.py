"""`acceptance:` lists: one spec-on arm per mean acceptance length, each engine's
benchmarking knob filled in its start command."""

from __future__ import annotations

from pathlib import Path

import pytest

from specload import engines
from specload.config.scenario import parse_scenario
from specload.config.settings import Simulator
from specload.config.settings import to_args as settings_args
from specload.errors import UserError
from specload.runner.manifest_entries import new_manifest

OFF = {"name": "off", "sim": {"profile": "seed-glm", "spec": "off"}}
# What each engine's start command must carry at a mean acceptance length of 2.5 (the
# engines' own words: docs/measurement.md, "The acceptance map")
KNOBS = {
    "vllm": '"rejection_sample_method": "synthetic", "synthetic_acceptance_length": 2.5',
    "sglang": "SGLANG_SIMULATE_ACC_LEN=2.5 SGLANG_SIMULATE_ACC_METHOD=match-expected",
    "llamacpp": "--spec-synth-len 2.5",
    "trtllm": "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.5",  # drafts: the length less 1
}


def _scenario(*arms: dict) -> object:
    return parse_scenario({"name": "map", "verify": False, "arms": [*arms, OFF]}, Path("."))


def test_every_engine_with_a_benchmarking_mode_has_its_knob_here() -> None:
    assert sorted(e.id for e in engines.REGISTRY.values() if e.synthetic) == sorted(KNOBS)


@pytest.mark.parametrize("engine", sorted(KNOBS))
def test_an_acceptance_list_fills_each_engines_knob(engine: str) -> None:
    knob = engines.REGISTRY[engine].synthetic.knob
    scenario = _scenario({"name": "on", "spec": "on", "engine": engine, "acceptance": [2.5, 3],
                          "command": {"start": f"serve {knob}",
                                      "base_url": "http://127.0.0.1:8000"}})
    on = [a for a in scenario.arms if a.arm_role == "spec_on"]
    assert [a.name for a in on] == ["on-a2.5", "on-a3"]
    assert on[0].command.start == f"serve {KNOBS[engine]}"
    assert [a.target_acceptance for a in on] == [2.5, 3.0]
    entries = new_manifest(scenario).arms
    assert [e.acceptance for e in entries] == [2.5, 3.0, None]


def test_a_sim_arm_gets_its_acceptance_length_and_a_resumed_run_the_same_arms() -> None:
    scenario = _scenario({"name": "on", "acceptance": [2.0, 4.0],
                          "sim": {"profile": "seed-glm", "spec": "on"}})
    on = scenario.arms[:2]
    assert [a.sim.acceptance_length for a in on] == [2.0, 4.0]
    assert "--acceptance-length" in settings_args(on[0].sim.settings(), Simulator)
    again = parse_scenario(scenario.public_dict(), Path("."))
    assert [a.name for a in again.arms] == ["on-a2", "on-a4", "off"]


@pytest.mark.parametrize(("arm", "words"), [
    ({"name": "on", "acceptance": [2.0], "url": "http://127.0.0.1:8000"},
     "an acceptance list needs a sim or command arm"),
    ({"name": "on", "spec": "on", "acceptance": [2.0],
      "command": {"start": "serve", "base_url": "http://127.0.0.1:8000"}},
     "an acceptance list on a command arm needs {acceptance} (or {accepted_drafts}) in "
     "command.start"),
    ({"name": "on", "acceptance": [2.0], "k": [1, 2],
      "sim": {"profile": "seed-glm", "spec": "on"}},
     "a k list and an acceptance list: give one of them"),
    ({"name": "on", "acceptance": [2.0, 2.0], "sim": {"profile": "seed-glm", "spec": "on"}},
     "an acceptance list needs distinct mean acceptance lengths")])
def test_acceptance_lists_that_cannot_run_are_refused(arm: dict, words: str) -> None:
    with pytest.raises(UserError, match=None) as err:
        _scenario(arm)
    assert words in str(err.value)
