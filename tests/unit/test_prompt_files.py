"""Prompt files that are broken, the wrong shape, empty or enormous: a one-line `UserError`
naming the file (and line), or the prompts intact; never another exception.

Complements tests/unit/test_prompts.py (per-field JSONL and ShareGPT
errors) with whole-file cases and a fuzz test of both parsers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specload.errors import UserError
from specload.traffic.prompt_sets import load_prompts
from specload.traffic.prompts import parse_jsonl, parse_sharegpt

BIG = 8 * 1024 * 1024


@pytest.mark.parametrize(("name", "content", "message"), [
    ("empty.jsonl", "", "{path}: no prompts"),
    ("blank.jsonl", "\n \n\t\n", "{path}: no prompts"),
    ("empty.json", "", "{path}:1: not valid JSON (Expecting value)"),
    ("truncated.json", '[{"conversations": [{"from": "human", "value": "hi"}',
     "{path}:1: not valid JSON (Expecting ',' delimiter)"),
    ("object.json", '{"conversations": []}',
     "{path}: a ShareGPT file is a JSON array of conversations"),
    ("strings.json", '["hello", "world"]', "{path}: entry 0: missing `conversations` list"),
    ("list-line.jsonl", '{"prompt": "ok"}\n["a", "b"]\n',
     "{path}:2: each line must be a JSON object"),
    ("number-line.jsonl", "42\n", "{path}:1: each line must be a JSON object"),
    ("csv.jsonl", "prompt,max_tokens\nhello,5\n",
     "{path}:1: not valid JSON (Expecting value)"),
    ("sharegpt-as.jsonl", '[{"conversations": []}]\n',
     "{path}:1: each line must be a JSON object"),
])
def test_broken_or_empty_files(tmp_path: Path, name: str, content: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(UserError) as err:
        load_prompts(str(path))
    assert str(err.value) == message.format(path=path)


def test_enormous_valid_line_is_kept_whole(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    text = "word " * (BIG // 5)
    path.write_text(json.dumps({"prompt": "short"}) + "\n" + json.dumps({"prompt": text}) + "\n")
    prompts = load_prompts(str(path))
    assert [len(p.text) for p in prompts] == [5, len(text)]


def test_enormous_broken_line_gives_a_short_message(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_text('{"prompt": "ok"}\n{"prompt": "' + "x" * BIG + "\n")
    with pytest.raises(UserError) as err:
        load_prompts(str(path))
    assert str(err.value) == f"{path}:2: not valid JSON (Unterminated string starting at)"


def test_file_that_is_not_utf8_is_a_user_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes('{"prompt": "caf\u00e9"}\n'.encode("latin-1"))
    why = r"latin1\.jsonl: not UTF-8 text \(invalid continuation byte at byte 15\)"
    with pytest.raises(UserError, match=why):
        load_prompts(str(path))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300) | st.sampled_from(['{"prompt": "x"}', '[{"conversations": 1}]',
                                                 '{"messages": [{}]}', '[{"conversations": '
                                                 '[{"from": "human", "value": 1}]}]']))
def test_parsers_never_raise_anything_but_user_error(content: str) -> None:
    for parse in (parse_jsonl, parse_sharegpt):
        try:
            prompts = parse(content, "fuzz")
        except UserError as exc:
            assert str(exc).startswith("fuzz") and "\n" not in str(exc)
        else:
            assert prompts and all(p.messages for p in prompts)
