"""Output parity from each rung's replies by prompt: identical shares per rung, the
first difference's position, the spec-off arm's own floor, and the flag beyond it."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from specload.report import parity
from specload.report.replies import Reply
from specload.report.run_files import ArmSource
from specload.runfiles.manifest import Manifest
from specload.runfiles.reply_digest import fingerprint

ARMS = [ArmSource("on", "spec_on"), ArmSource("off", "spec_off")]
WORDS = " alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu" * 3


def _reply(text: str) -> Reply:
    chars, digest, blocks = fingerprint(text)
    return Reply(digest, blocks, chars, len(text.split()))


def _altered(text: str, word: int) -> str:
    words = text.split(" ")
    words[word + 1] = "CHANGED"
    return " ".join(words)


def _n(key: tuple[str, int]) -> int:
    return int(key[0].split()[1])


def _per_rep(changed: dict[int, set[int]], prompts: dict[int, range]) -> pd.DataFrame:
    """Rows of (arm, rung C): prompts[C] sent by both arms, the spec-on replies of the
    prompts in changed[C] altered at their 10th word."""
    rows = []
    for c, sent in prompts.items():
        off = {(f"prompt {p}", 64): _reply(f"{p}{WORDS}") for p in sent}
        on = {k: _reply(_altered(f"{_n(k)}{WORDS}", 10)) if _n(k) in changed.get(c, ()) else r
              for k, r in off.items()}
        rows += [{"arm": "on", "rep": 1, "concurrency": c, "replies": on},
                 {"arm": "off", "rep": 1, "concurrency": c, "replies": off}]
    return pd.DataFrame(rows)


def _manifest(temperature: float) -> Manifest:
    return Manifest(scenario={"request": {"temperature": temperature}}, arms=[])


def test_identical_replies_are_all_identical_and_raise_nothing() -> None:
    found = parity.analyse(_per_rep({}, {1: range(10), 4: range(5, 20)}), ARMS,
                           _manifest(0))
    assert found is not None and found.reference == "off"
    (arm,) = found.arms
    assert [(label, got.compared, got.share) for label, got in arm.rungs] == [
        ("C=1", 10, 1.0), ("C=4", 15, 1.0)]
    assert math.isnan(arm.overall.first_diff_tokens)
    assert found.floor.compared == 5 and found.floor.share == 1.0  # prompts 5-9 at both
    assert not arm.beyond_floor and found.warnings() == []
    assert found.lines()[1] == "  C=1: on 100% identical of 10"


def test_changed_replies_are_flagged_with_where_they_part() -> None:
    found = parity.analyse(_per_rep({1: set(range(10)), 4: set(range(30, 40))},
                                    {1: range(30), 4: range(10, 40)}), ARMS, _manifest(0))
    assert found is not None and (found.floor.compared, found.floor.identical) == (20, 20)
    (arm,) = found.arms
    assert [got.identical for _, got in arm.rungs] == [20, 20]
    # the 10th word of 12-character words: token 11 of the reply, ~char 120
    assert arm.overall.first_diff_tokens == pytest.approx(11, abs=1.5)
    assert arm.beyond_floor
    ((who, message),) = found.warnings()
    assert who == "on" and "speculation changes the output" in message
    assert "C=4: on 67% identical of 30, the others from token ~" in "\n".join(found.lines())


def test_a_floor_as_high_as_the_arm_is_not_flagged() -> None:
    """The spec-off arm differs from itself as often as spec-on differs from it: batch
    variance, not speculation."""
    per_rep = _per_rep({1: {0, 1, 2, 3}}, {1: range(8), 4: range(8)})
    off = per_rep[(per_rep["arm"] == "off") & (per_rep["concurrency"] == 4)].index[0]
    per_rep.at[off, "replies"] = {k: _reply(_altered(f"{_n(k)}{WORDS}", 3)) if _n(k) < 4 else r
                                  for k, r in per_rep.at[off, "replies"].items()}
    found = parity.analyse(per_rep, ARMS, _manifest(0))
    assert found is not None and found.floor.identical == 4 and found.floor.compared == 8
    assert not found.arms[0].beyond_floor and found.warnings() == []
    assert found.lines()[-1].startswith("  on: replies differ from off's within the noise")


def test_sampled_replies_are_not_compared() -> None:
    found = parity.analyse(_per_rep({1: {0}}, {1: range(5)}), ARMS, _manifest(0.7))
    assert found is not None and not found.compared and found.warnings() == []
    assert found.lines() == ["replies: not compared (temperature 0.7: sampled replies "
                             "differ between arms by design)"]


def test_no_spec_off_arm_or_no_fingerprints_give_no_parity() -> None:
    per_rep = _per_rep({}, {1: range(3)})
    alone = per_rep[per_rep["arm"] == "off"]  # a run of one spec-off arm: nothing to compare
    assert parity.analyse(alone, [ArmSource("off", "spec_off")], _manifest(0)) is None
    # an arm that measured no rung: a table with no row, the report's columns all there
    found = parity.analyse(alone, ARMS, _manifest(0))
    assert found is not None and found.arms[0].rungs == []
    assert {"arm", "rung", "share", "first_diff_tokens_median"} <= set(found.table())
    assert parity.analyse(per_rep, [ArmSource("on", "spec_on"), ArmSource("off", "other")],
                          None) is None
    assert parity.analyse(per_rep.assign(replies=[{}] * len(per_rep)), ARMS, None) is None
