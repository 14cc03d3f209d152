"""Prompt files by format: one registry every reader of `request.prompts` goes through.

A user brings a prompt file as its set publishes it; `load_prompts` reads it by the
format given (`request.prompt_format`) or, with `auto`, the format its content shows:
- `jsonl`: specload's own lines, `prompt` or `messages` (`traffic/prompts.py`);
- `sharegpt`: a JSON array of `conversations`, the first human turn the prompt (a file
  not named `.jsonl` or `.parquet`, when detected);
- `mt-bench`: FastChat's `llm_judge/data/mt_bench/question.jsonl`, lines of
  `question_id`, `category` and `turns`; `spec-bench`: Spec-Bench's
  `data/spec_bench/question.jsonl`, the same shape (its first 80 lines are MT-Bench's)
  with five more categories. The first turn is the prompt, as vLLM's `spec_bench` and
  `hf` MT-Bench datasets send it;
- `speed-bench`: NVIDIA's SPEED-Bench, prepared from `nvidia/SPEED-Bench`: NeMo-Skills'
  `<config>.jsonl` (`messages`, as vLLM and AIPerf read it), the same with `turns`
  (SGLang's reader), or Model-Optimizer's `test.parquet` (`turns`). Its categories are
  the qualitative split's eleven, or a throughput split's entropy tiers; rows still
  holding the dataset's placeholder text (sources it may not redistribute) are left out.
Every prompt keeps its set's category, so the per-category report reads it as it is.
Errors are one line: the file, the line or row, and the format expected.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from specload.errors import UserError
from specload.traffic.prompts import (
    BUILTIN_NAME,
    Prompt,
    parse_jsonl,
    parse_sharegpt,
    read_text,
)

AUTO = "auto"
# SPEED-Bench's text for rows whose source must be fetched by its prepare scripts
# (Model-Optimizer examples/specdec_bench/specdec_bench/datasets/speed.py)
SPEED_PLACEHOLDER = "FULL BENCHMARK DATA SHOULD BE FETCHED FROM THE SOURCE USING SPECDEC_BENCH"
# Spec-Bench's categories beyond MT-Bench's eight (data/spec_bench/question.jsonl)
SPEC_BENCH_ONLY = frozenset({"translation", "summarization", "qa", "math_reasoning", "rag"})
SPEED_BENCH_TIERS = frozenset({"low_entropy", "mixed", "high_entropy"})


class PromptFile:
    """One prompt file, read once: its text and, for the formats of records, its JSON
    lines or parquet rows, each as (where, object)."""

    def __init__(self, path: str) -> None:
        self.path, self.source = Path(path), path

    @functools.cached_property
    def text(self) -> str:
        return read_text(self.source, "prompt")

    @functools.cached_property
    def records(self) -> list[tuple[str, Any]]:
        if self.path.suffix == ".parquet":
            import pyarrow.parquet as pq

            try:
                rows = pq.read_table(self.path).to_pylist()
            except Exception as exc:  # pyarrow raises several kinds for a broken file
                raise UserError(f"{self.source}: not a readable parquet file ({exc})") from exc
            return [(f"{self.source}: row {i}", row) for i, row in enumerate(rows)]
        out = []
        for lineno, line in enumerate(self.text.splitlines(), start=1):
            if line.strip():
                try:
                    out.append((f"{self.source}:{lineno}", json.loads(line)))
                except json.JSONDecodeError as exc:
                    raise UserError(f"{self.source}:{lineno}: not valid JSON ({exc.msg})") \
                        from exc
        return out


@dataclass(frozen=True, slots=True)
class PromptFormat:
    """One published shape of a prompt file."""

    name: str
    expected: str  # what a line (or the file) looks like, for errors
    parse: Callable[[PromptFile], list[Prompt]]


def _first_turn(obj: Any, where: str, expected: str) -> tuple[str, str] | None:
    """(category, first turn) of a `turns` or `messages` row; None for a placeholder."""
    if not isinstance(obj, dict):
        raise UserError(f"{where}: not {expected}")
    turns = obj.get("turns")
    if turns is None and isinstance(obj.get("messages"), list):
        turns = [m.get("content") for m in obj["messages"]
                 if isinstance(m, dict) and m.get("role") == "user"]
    category = obj.get("category")
    if not isinstance(turns, list) or not turns or not isinstance(turns[0], str) \
            or not turns[0].strip() or not isinstance(category, str) or not category:
        raise UserError(f"{where}: not {expected}")
    return None if turns[0].startswith(SPEED_PLACEHOLDER) else (category, turns[0])


def _turns_parser(expected: str) -> Callable[[PromptFile], list[Prompt]]:
    def parse(file: PromptFile) -> list[Prompt]:
        found = [_first_turn(obj, where, expected) for where, obj in file.records]
        prompts = [Prompt(({"role": "user", "content": text},), category)
                   for category, text in (f for f in found if f is not None)]
        if not prompts:
            left = f" ({len(found)} placeholder rows: run the set's prepare script)" \
                if found else ""
            raise UserError(f"{file.source}: no prompts{left}")
        return prompts
    return parse


def _own(file: PromptFile) -> list[Prompt]:
    return parse_jsonl(file.text, file.source)


def _sharegpt(file: PromptFile) -> list[Prompt]:
    return parse_sharegpt(file.text, file.source)


_TURNS = ('a JSON object with `question_id`, `category` and `turns` (a list of strings), '
          'as in {"question_id": 81, "category": "writing", "turns": ["..."]}')
FORMATS: dict[str, PromptFormat] = {f.name: f for f in (
    PromptFormat("jsonl", "a JSON object with `prompt` or `messages`", _own),
    PromptFormat("sharegpt", "a JSON array of `conversations`", _sharegpt),
    PromptFormat("mt-bench", _TURNS, _turns_parser(_TURNS)),
    PromptFormat("spec-bench", _TURNS, _turns_parser(_TURNS)),
    PromptFormat("speed-bench", "a SPEED-Bench row with `question_id`, `category` and "
                 "`messages` (NeMo-Skills' prepare) or `turns`",
                 _turns_parser("a SPEED-Bench row with `question_id`, `category` and "
                               "`messages` or `turns`")),
)}
NAMES = (AUTO, *FORMATS)


def detect(file: PromptFile) -> str:
    """The format a file shows: parquet is SPEED-Bench's, a JSON-lines file by its first
    record's keys (and its categories), any other file ShareGPT's JSON array."""
    if file.path.suffix == ".parquet":
        return "speed-bench"
    if file.path.suffix != ".jsonl":
        return "sharegpt"
    line = next((t for t in file.text.splitlines() if t.strip()), "")
    try:
        first = json.loads(line) if line else None
    except json.JSONDecodeError:
        return "jsonl"  # its own parser names the line
    if not isinstance(first, dict) or "question_id" not in first:
        return "jsonl"
    if isinstance(first.get("question_id"), str) or "sub_category" in first \
            or first.get("category") in SPEED_BENCH_TIERS:
        return "speed-bench"
    # the records the parser reads next (`PromptFile` keeps them)
    spec_only = any(isinstance(r, dict) and r.get("category") in SPEC_BENCH_ONLY
                    for _, r in file.records)
    return "spec-bench" if spec_only else "mt-bench"


def load_prompts(path: str | None, fmt: str = AUTO) -> list[Prompt]:
    """The built-in set for None/""/"builtin", else the file at `path` in format `fmt`
    (`auto`: as detected), each prompt with its place in the set (`Prompt.index`)."""
    if fmt not in NAMES:
        raise UserError(f"prompt format {fmt!r}: one of {', '.join(NAMES)}")
    if not path or path == BUILTIN_NAME:
        text = resources.files("specload").joinpath("data/prompts.jsonl")
        found = parse_jsonl(text.read_text(encoding="utf-8"), "built-in prompts")
    else:
        file = PromptFile(path)
        if not file.path.is_file():
            read_text(path, "prompt")  # the reason, in one line
        found = FORMATS[detect(file) if fmt == AUTO else fmt].parse(file)
    return [replace(p, index=i) for i, p in enumerate(found)]
