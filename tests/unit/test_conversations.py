"""Multi-turn conversations: the built-in set, ShareGPT files, and the session deck."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from specload.errors import UserError
from specload.traffic.conversations import SessionDeck, load_conversations
from specload.traffic.prompts import CATEGORIES
from specload.traffic.shapes import LengthSpec, ThinkTime
from tests.support.ks import ks_pvalue, lognormal_cdf


def test_builtin_set_is_multi_turn_in_every_category() -> None:
    convs = load_conversations("builtin")
    assert len(convs) >= 100 and load_conversations(None) == convs
    assert len(set(Counter(c.category for c in convs))) >= 5  # the prompt set's first five
    assert set(Counter(c.category for c in convs)) <= set(CATEGORIES)
    assert min(len(c.turns) for c in convs) >= 3
    assert any(c.system for c in convs) and any(not c.system for c in convs)


def test_sharegpt_json_and_jsonl_keep_the_human_turns(tmp_path: Path) -> None:
    entry = {"conversations": [
        {"from": "system", "value": "be brief"}, {"from": "human", "value": "hi"},
        {"from": "gpt", "value": "hello"}, {"from": "human", "value": "and then?"},
        {"from": "tool", "value": "ignored"}]}
    empty = {"conversations": [{"from": "gpt", "value": "only a reply"}]}
    (tmp_path / "a.json").write_text(json.dumps([entry, empty]))
    (tmp_path / "a.jsonl").write_text(json.dumps(entry) + "\n\n" + json.dumps(empty) + "\n")
    for name in ("a.json", "a.jsonl"):
        (conv,) = load_conversations(str(tmp_path / name))
        assert conv.turns == ("hi", "and then?") and conv.system == "be brief"
        assert conv.opening() == [{"role": "system", "content": "be brief"}]
        assert conv.category == "sharegpt"


@pytest.mark.parametrize("name, text, fragment", [
    ("x.json", "{}", "a JSON array of conversations"),
    ("x.json", "[{}]", "x.json: entry 0: missing `conversations` list"),
    ("x.jsonl", '{"conversations": [{"from": "human"}]}', "x.jsonl:1: each turn needs"),
    ("x.jsonl", "{oops", "x.jsonl:1: not valid JSON"),
    ("x.json", '[{"conversations": [{"from": "gpt", "value": "a"}]}]', "no conversation has"),
])
def test_bad_files_name_the_file_and_entry(tmp_path: Path, name: str, text: str,
                                           fragment: str) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(UserError, match=fragment.replace("[", r"\[")):
        load_conversations(str(tmp_path / name))


def test_deck_shares_the_order_limits_turns_and_draws_think_times() -> None:
    convs = load_conversations(None)
    think = ThinkTime.parse("lognormal:2:0.6")
    one = SessionDeck(convs, 7, think, LengthSpec.parse("uniform:1:2"))
    dealt = [one.deal() for _ in range(40)]
    assert all(1 <= n <= min(2, len(c.turns)) for c, n in dealt)
    halves = [SessionDeck(convs, 7, think, None, i, 2) for i in range(2)]
    merged = [halves[i % 2].deal()[0] for i in range(40)]
    assert merged == [c for c, _ in dealt]  # two processes deal the one sequence
    full = SessionDeck(convs, 7, think).deal()
    assert full[1] == len(full[0].turns)
    pauses = [one.pause() for _ in range(400)]
    assert ks_pvalue(pauses, lognormal_cdf(2, 0.6)) > 0.01
    assert all(one.first_pause() >= 0 for _ in range(50))


def test_think_times_and_lengths_parse_with_their_floors() -> None:
    rng = random.Random(0)
    assert ThinkTime.parse("0").sample(rng) == 0.0
    assert ThinkTime.parse("exponential:3").text() == "exponential:3"
    assert min(ThinkTime.parse("normal:0.1:1").sample(rng) for _ in range(100)) == 0.0
    with pytest.raises(ValueError, match="the think time must be at least 0"):
        ThinkTime.parse("-1")
    with pytest.raises(ValueError, match="the mean must be more than 0"):
        ThinkTime.parse("exponential:0")
    with pytest.raises(ValueError, match="the length must be at least 1"):
        LengthSpec.parse("0")
