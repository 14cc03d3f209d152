"""The traffic mix by prompt category: parsing, errors, and the prompts laid out so that
a seeded order sends each category at its share."""

from __future__ import annotations

from collections import Counter

import pytest

from specload.errors import UserError
from specload.traffic.category_mix import CategoryMix
from specload.traffic.prompt_sets import load_prompts
from specload.traffic.prompts import PromptOrder


@pytest.mark.parametrize("given", ["code:0.5,chat:0.5", "code:1, chat:1", {"code": 2, "chat": 2}])
def test_weights_are_normalised_whatever_the_spelling(given) -> None:
    mix = CategoryMix.parse(given)
    assert mix.shares == (("code", 0.5), ("chat", 0.5))
    assert CategoryMix.parse(mix.text()) == mix and mix.words() == "code 50%, chat 50%"


def test_a_bare_category_weighs_one() -> None:
    assert CategoryMix.parse("code").shares == (("code", 1.0),)


@pytest.mark.parametrize(("given", "why"), [
    ("", "expected CATEGORY:WEIGHT"), ("code:0", "each weight must be more than 0"),
    ("code:x", "each weight must be more than 0"), ({"code": True}, "more than 0"),
    ("code:1,code:2", "named twice")])
def test_bad_mixes_say_why(given, why: str) -> None:
    with pytest.raises(UserError, match=why):
        CategoryMix.parse(given)


def test_the_seeded_order_sends_each_category_at_its_share() -> None:
    prompts = load_prompts(None)
    dealt = CategoryMix.parse({"code": 0.8, "chat": 0.2}).deal(prompts)
    assert {p.category for p in dealt} == {"code", "chat"}
    assert {p.text for p in dealt if p.category == "code"} == {
        p.text for p in prompts if p.category == "code"}  # every code prompt is used
    order = PromptOrder(dealt, seed=7)
    sent = Counter(order.next().category for _ in range(len(dealt)))
    assert sent["code"] / len(dealt) == pytest.approx(0.8, abs=0.01)


def test_a_category_the_set_lacks_is_named() -> None:
    with pytest.raises(UserError, match=r"no poetry prompts \(it has chat, code"):
        CategoryMix.parse("poetry:1").deal(load_prompts(None))
