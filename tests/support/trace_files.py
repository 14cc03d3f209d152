"""Trace files as the published traces lay them out, written by the tests.

Mooncake's JSON lines (kvcache-ai/Mooncake FAST25-release/traces/*.jsonl: `timestamp`
in ms, `input_length`, `output_length`, `hash_ids` of 512-token blocks, ceil(input /
512) of them) and Azure's CSV (Azure/AzurePublicDataset AzureLLMInferenceTrace_*.csv:
`TIMESTAMP,ContextTokens,GeneratedTokens`, the 2023 files' times with seven fractional
digits and no zone). `synthetic` draws a small trace of Poisson arrivals whose requests
belong to a few conversations, each conversation's prompts sharing its first blocks.
"""

from __future__ import annotations

import csv
import json
import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

AZURE_T0 = datetime(2023, 11, 16, 18, 15, 46, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Row:
    t_ms: int
    input_length: int
    output_length: int
    hash_ids: tuple[int, ...]


def synthetic(n: int, rate: float, seed: int = 0, input_tokens: tuple[int, int] = (40, 200),
              output_tokens: tuple[int, int] = (4, 8), block: int = 16,
              conversations: int = 10) -> list[Row]:
    """`n` requests arriving as a Poisson process of `rate` per second."""
    rng = random.Random(seed)
    t, rows = 0.0, []
    for _ in range(n):
        n_in = rng.randint(*input_tokens)
        conv = rng.randrange(conversations)
        blocks = math.ceil(n_in / block)
        rows.append(Row(round(t * 1e3), n_in, rng.randint(*output_tokens),
                        tuple(conv * 1000 + b for b in range(blocks))))
        t += rng.expovariate(rate)
    return rows


def write_mooncake(path: Path, rows: list[Row]) -> Path:
    with path.open("w") as fh:
        for r in rows:
            fh.write(json.dumps({"timestamp": r.t_ms, "input_length": r.input_length,
                                 "output_length": r.output_length,
                                 "hash_ids": list(r.hash_ids)}) + "\n")
    return path


def azure_time(t_ms: float) -> str:
    """`2023-11-16 18:15:46.6805900`: seven fractional digits, as the 2023 files."""
    when = AZURE_T0 + timedelta(milliseconds=t_ms)
    return when.strftime("%Y-%m-%d %H:%M:%S.%f") + "0"


def write_azure(path: Path, rows: list[Row]) -> Path:
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["TIMESTAMP", "ContextTokens", "GeneratedTokens"])
        for r in rows:
            out.writerow([azure_time(r.t_ms), r.input_length, r.output_length])
    return path
