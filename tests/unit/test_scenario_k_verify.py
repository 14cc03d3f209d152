"""Scenario keys of the verification arm and the multi-k study: k lists, verify,
command.verify_command and sim.adaptive_schedule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specload.config.scenario import parse_scenario
from specload.errors import UserError

OFF = {"name": "spec-off", "sim": {"profile": "h100-llama8b-eagle3", "spec": "off"}}


def _scenario(*arms: dict[str, Any], **top: Any) -> Any:
    return parse_scenario({"name": "s", "arms": list(arms), **top}, Path("."))


def _problems(*arms: dict[str, Any], **top: Any) -> str:
    with pytest.raises(UserError) as info:
        _scenario(*arms, **top)
    return str(info.value)


def test_a_k_list_becomes_one_arm_per_k() -> None:
    sc = _scenario({"name": "spec-on", "k": [1, 3],
                    "sim": {"profile": "h100-llama8b-eagle3", "spec": "on"}}, OFF)
    assert [(a.name, a.draft_k, a.sim and a.sim.k, a.arm_role) for a in sc.arms] == [
        ("spec-on-k1", 1, 1, "spec_on"), ("spec-on-k3", 3, 3, "spec_on"),
        ("spec-off", None, None, "spec_off")]
    # the manifest keeps the expanded scenario, which parses again unchanged
    assert parse_scenario(sc.public_dict(), Path(".")) == sc


def test_a_command_arm_fills_k_into_its_start_line() -> None:
    sc = _scenario({"name": "vllm", "spec": "on", "k": [2, 4], "command": {
        "start": "vllm serve m --speculative-config '{\"num_speculative_tokens\": {k}}'",
        "base_url": "http://127.0.0.1:8000"}}, OFF)
    assert [a.command.start for a in sc.arms[:2] if a.command] == [
        "vllm serve m --speculative-config '{\"num_speculative_tokens\": 2}'",
        "vllm serve m --speculative-config '{\"num_speculative_tokens\": 4}'"]
    assert [a.draft_k for a in sc.arms[:2]] == [2, 4]


@pytest.mark.parametrize(("arm", "why"), [
    ({"name": "a", "k": [1, 1], "sim": {"spec": "on"}}, "distinct draft lengths"),
    ({"name": "a", "k": [2], "url": "http://127.0.0.1:1"}, "needs a sim or command arm"),
    ({"name": "a", "k": [2], "command": {"start": "x", "base_url": "http://127.0.0.1:1"}},
     "needs {k} in command.start"),
    ({"name": "a", "k": [2], "sim": {"spec": "off"}}, "sim.spec: on and no sim.k"),
    ({"name": "a", "k": [0, 2], "sim": {"spec": "on"}}, "must be at least 1"),
])
def test_k_lists_that_cannot_run(arm: dict[str, Any], why: str) -> None:
    assert why in _problems(arm, OFF)


def test_expanded_names_must_not_clash() -> None:
    text = _problems({"name": "on", "k": [2], "sim": {"spec": "on"}},
                     {"name": "on-k2", "sim": {"spec": "on"}}, OFF)
    assert "clash after expanding k or acceptance lists: on-k2" in text


def test_verify_defaults_to_simulated_pairs_only() -> None:
    sim = _scenario({"name": "spec-on", "sim": {"spec": "on"}}, OFF)
    assert sim.verify_default
    url = _scenario({"name": "spec-on", "url": "http://127.0.0.1:1", "spec": "on"},
                    {"name": "spec-off", "url": "http://127.0.0.1:2", "spec": "off"})
    assert not url.verify_default
    assert not _scenario({"name": "spec-on", "sim": {"spec": "on"}}, OFF,
                         verify=False).verify_default
    # nothing to compare with, or an open workload (rate*, no schedule): no third arm
    assert not _scenario({"name": "spec-on", "sim": {"spec": "on"}}).verify_default
    assert not _scenario({"name": "spec-on", "sim": {"spec": "on"}}, OFF,
                         workload={"kind": "open", "rates": [1]}).verify_default


def test_verify_needs_a_pair_and_a_command_template() -> None:
    assert "needs a spec-on and a spec-off arm" in _problems(OFF, verify=True)
    command = {"name": "spec-on", "spec": "on", "command": {
        "start": "serve", "base_url": "http://127.0.0.1:8000"}}
    assert "needs command.verify_command" in _problems(command, OFF, verify=True)
    command["command"]["verify_command"] = "serve --speculative-config"  # type: ignore[index]
    assert "uses none of {vllm_speculative_config}" in _problems(command, OFF)


def test_adaptive_schedule_is_checked_and_passed_to_the_simulator() -> None:
    arm = {"name": "ad", "sim": {"spec": "schedule",
                                 "adaptive_schedule": [[1, 8, 3], [9, 100000, 0]]}}
    sc = _scenario(arm, OFF)
    assert sc.arms[0].sim is not None
    args = sc.arms[0].sim.extra_args()
    assert args[args.index("--adaptive-schedule") + 1] == "[[1, 8, 3], [9, 100000, 0]]"
    arm["sim"]["adaptive_schedule"] = [[1, 8, 3], [10, 100000, 0]]  # type: ignore[index]
    assert "not followed by a range from 9" in _problems(arm, OFF)
    assert "needs spec: schedule" in _problems(
        {"name": "on", "sim": {"spec": "on", "adaptive_schedule": [[1, 9, 1]]}}, OFF)
