"""Prompt files as the speculation sets publish them: MT-Bench's and Spec-Bench's
question.jsonl, SPEED-Bench's prepared splits (JSON lines or parquet), each read by its
format, given or detected, with a one-line error naming the format a file did not fit."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from specload.errors import UserError
from specload.traffic.prompt_sets import SPEED_PLACEHOLDER, PromptFile, detect, load_prompts

# FastChat's llm_judge/data/mt_bench/question.jsonl (two turns, an optional reference)
MT_BENCH = [
    {"question_id": 81, "category": "writing", "turns": [
        "Compose an engaging travel blog post about a recent trip to Hawaii.",
        "Rewrite your previous response. Start every sentence with the letter A."]},
    {"question_id": 111, "category": "math", "turns": [
        "The vertices of a triangle are at points (0, 0), (-1, 1), and (3, 3). Area?",
        "What's area of the circle circumscribing the triangle?"], "reference": ["3", "5pi"]},
]
# Spec-Bench's data/spec_bench/question.jsonl: MT-Bench's lines, then five more categories
SPEC_BENCH = [*MT_BENCH,
              {"question_id": 161, "category": "translation", "turns": [
                  "Translate German to English: Pfandhäuser boomen in Singapur"],
               "reference": ["Pawnbrokers shine in Singapore"]},
              {"question_id": 321, "category": "qa",
               "turns": ["Who played anna in once upon a time?"]}]
# SPEED-Bench as NeMo-Skills' prepare.py writes a split (`turns` become `messages`)
QID = "0123456789abcdef0123456789abcdef"
SPEED = [{"question_id": QID, "category": "coding", "sub_category": None,
          "messages": [{"role": "user", "content": "Implement binary search."}],
          "source": "https://example.org", "src_id": "1", "difficulty": None,
          "multiturn": False},
         {"question_id": QID[::-1], "category": "writing", "sub_category": None,
          "messages": [{"role": "user", "content": SPEED_PLACEHOLDER}], "source": "x",
          "src_id": "2", "difficulty": None, "multiturn": False},
         {"question_id": "f" * 32, "category": "rag", "sub_category": None,
          "messages": [{"role": "user", "content": "Answer from the passages: ..."}],
          "source": "x", "src_id": "3", "difficulty": None, "multiturn": False}]


def _lines(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(("rows", "name"), [(MT_BENCH, "mt-bench"),
                                            (SPEC_BENCH, "spec-bench"),
                                            (SPEED, "speed-bench")])
def test_each_set_is_detected_and_keeps_its_categories(tmp_path: Path, rows: list[dict],
                                                        name: str) -> None:
    path = _lines(tmp_path / "question.jsonl", rows)
    assert detect(PromptFile(str(path))) == name
    got = load_prompts(str(path))
    kept = [r for r in rows if "messages" not in r
            or r["messages"][0]["content"] != SPEED_PLACEHOLDER]
    assert [p.category for p in got] == [r["category"] for r in kept]
    assert [p.index for p in got] == list(range(len(kept)))
    first = [r["turns"][0] if "turns" in r else r["messages"][0]["content"] for r in kept]
    assert [p.messages for p in got] == [({"role": "user", "content": t},) for t in first]
    assert load_prompts(str(path), name) == got  # the same, given


def test_speed_bench_as_model_optimizer_prepares_it_in_parquet(tmp_path: Path) -> None:
    rows = [{**{k: v for k, v in r.items() if k != "messages"},
             "turns": [m["content"] for m in r["messages"]]} for r in SPEED]
    path = tmp_path / "test.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    got = load_prompts(str(path))
    assert [(p.category, p.text) for p in got] == [
        ("coding", "Implement binary search."), ("rag", "Answer from the passages: ...")]


def test_a_split_of_placeholders_says_to_prepare_it(tmp_path: Path) -> None:
    path = _lines(tmp_path / "throughput_1k.jsonl", [SPEED[1]])
    with pytest.raises(UserError, match=r"no prompts \(1 placeholder rows: run the set's "
                                        r"prepare script\)"):
        load_prompts(str(path))


def test_a_file_of_another_format_names_the_one_expected(tmp_path: Path) -> None:
    own = _lines(tmp_path / "mine.jsonl", [{"prompt": "hello", "category": "chat"}])
    assert [p.text for p in load_prompts(str(own))] == ["hello"]
    with pytest.raises(UserError) as info:
        load_prompts(str(own), "spec-bench")
    assert str(info.value) == (
        f"{own}:1: not a JSON object with `question_id`, `category` and `turns` (a list of "
        'strings), as in {"question_id": 81, "category": "writing", "turns": ["..."]}')
    broken = _lines(tmp_path / "q.jsonl", [MT_BENCH[0], {"question_id": 82, "turns": []}])
    with pytest.raises(UserError, match=r"q\.jsonl:2: not a JSON object with `question_id`"):
        load_prompts(str(broken))
    with pytest.raises(UserError, match="prompt format 'alpaca': one of auto, jsonl"):
        load_prompts(str(own), "alpaca")
