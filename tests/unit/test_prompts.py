"""Built-in prompt set, JSONL and ShareGPT loaders, and the seeded shared order."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from specload.errors import UserError
from specload.traffic.prompt_sets import load_prompts
from specload.traffic.prompts import (
    CATEGORIES,
    PromptOrder,
    parse_jsonl,
    parse_sharegpt,
)


def test_builtin_set_has_enough_varied_prompts() -> None:
    prompts = load_prompts(None)
    assert len(prompts) >= 200
    assert len({repr(p.messages) for p in prompts}) == len(prompts)
    counts = Counter(p.category for p in prompts)
    assert set(counts) == set(CATEGORIES)
    assert min(counts.values()) >= 30
    lengths = sorted(len(p.text) for p in prompts)
    assert lengths[0] < 100 and lengths[-1] > 2000
    assert any(len(p.messages) > 1 for p in prompts)


def test_jsonl_prompt_messages_and_options(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(
        '{"prompt": "hello", "max_tokens": 32, "category": "code"}\n\n'
        '{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]}\n'
    )
    a, b = load_prompts(str(path))
    assert (a.text, a.max_tokens, a.category) == ("hello", 32, "code")
    assert b.messages[1] == {"role": "user", "content": "u"} and b.category == "custom"
    assert b.text == "s\n\nu"


@pytest.mark.parametrize("line, fragment", [
    ("{oops", "not valid JSON"),
    ("[1]", "must be a JSON object"),
    ('{"prompt": ""}', "needs `prompt`"),
    ('{"prompt": "x", "max_tokens": 0}', "`max_tokens` must be a positive integer"),
    ('{"messages": [{"role": "user"}]}', "messages[0] needs string"),
    ('{"messages": []}', "non-empty list"),
])
def test_jsonl_errors_name_the_line(line: str, fragment: str) -> None:
    with pytest.raises(UserError) as err:
        parse_jsonl('{"prompt": "ok"}\n' + line + "\n", "f.jsonl")
    assert str(err.value).startswith("f.jsonl:2: ")
    assert fragment in str(err.value)


def test_sharegpt(tmp_path: Path) -> None:
    data = [
        {"id": "a", "conversations": [{"from": "human", "value": "Q1"},
                                      {"from": "gpt", "value": "A1"}]},
        {"id": "b", "conversations": [{"from": "gpt", "value": "only bot"}]},
        {"id": "c", "conversations": [{"from": "system", "value": "s"},
                                      {"from": "human", "value": "Q2"}]},
    ]
    path = tmp_path / "sg.json"
    path.write_text(json.dumps(data))
    assert [p.text for p in load_prompts(str(path))] == ["Q1", "Q2"]


@pytest.mark.parametrize("content, fragment", [
    ('[{"conversations": [}', "sg.json:1: not valid JSON"),
    ('{"a": 1}', "JSON array"),
    ('[{"id": 1}]', "entry 0: missing `conversations`"),
    ('[{"conversations": []}, {"conversations": [{"from": "human"}]}]', "entry 1: each turn"),
    ('[{"conversations": [{"from": "gpt", "value": "x"}]}]', "no conversation has a human"),
])
def test_sharegpt_errors(content: str, fragment: str) -> None:
    with pytest.raises(UserError, match=fragment.replace("[", r"\[")):
        parse_sharegpt(content, "sg.json")


def test_missing_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read prompt file"):
        load_prompts(str(tmp_path / "nope.jsonl"))


def test_order_is_seeded_and_shares_partition_the_sequence() -> None:
    prompts = load_prompts(None)
    single = PromptOrder(prompts, seed=3)
    sequence = [single.next() for _ in range(600)]
    again = PromptOrder(prompts, seed=3)
    assert [again.next() for _ in range(600)] == sequence
    assert sequence[:50] != [PromptOrder(prompts, seed=4).next() for _ in range(50)]
    assert set(map(id, sequence[: len(prompts)])) == set(map(id, prompts))  # a permutation
    shares = [PromptOrder(prompts, seed=3, index=i, count=3) for i in range(3)]
    merged = [shares[p % 3].next() for p in range(600)]
    assert merged == sequence


def test_order_rejects_bad_share() -> None:
    with pytest.raises(ValueError):
        PromptOrder(load_prompts(None), seed=0, index=2, count=2)
