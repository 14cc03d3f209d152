"""Trace files by format: one registry every reader of `workload.trace` goes through.

A trace is a team's own traffic as its serving stack logged it: when each request
arrived, how long its prompt was and how long its reply. `load_trace` reads it by the
format given (`workload.trace_format`) or, with `auto`, by the file's name and first line:
- `mooncake`: the Mooncake traces' JSON lines (kvcache-ai/Mooncake `FAST25-release/
  traces/`, the shape vLLM's, SGLang's and AIPerf's trace replay read): `timestamp` in
  milliseconds, `input_length` and `output_length` in tokens, and `hash_ids`, one id
  per `block_tokens`-token block of the prompt, equal ids meaning equal prefix blocks;
- `azure`: the Azure LLM inference traces (Azure/AzurePublicDataset,
  `AzureLLMInferenceTrace_{code,conv}.csv`): a CSV with the header
  `TIMESTAMP,ContextTokens,GeneratedTokens`, each timestamp a date and time such as
  `2023-11-16 18:15:46.6805900` (the 2024 files' `2024-05-12 00:00:00.001163+00:00`;
  or seconds, as a number). No prefix is shared.
A `Trace` holds the requests in arrival order, their times in seconds from its first
arrival; `window` cuts the stretch a run replays (`start_s`, `duration_s`). Errors are
one line: the file, the line number, what it holds and the format expected. Pure but
for reading the file.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from specload.errors import UserError

AUTO = "auto"
# Mooncake's hash ids name 512-token blocks (its traces' README; AIPerf's and SGLang's
# replays build prompts of blocks of this size)
MOONCAKE_BLOCK_TOKENS = 512


class TraceError(UserError):
    """A trace that cannot be read; the message names the file and the line."""


@dataclass(frozen=True, slots=True)
class TraceRequest:
    """One request of a trace: when it came, its prompt and reply lengths, its blocks."""

    t_s: float  # seconds from the trace's first arrival (of the window, once cut)
    input_tokens: int
    output_tokens: int
    blocks: tuple[int, ...] = ()  # the prompt's prefix blocks; equal ids, equal text

    def as_row(self) -> list[Any]:
        return [self.t_s, self.input_tokens, self.output_tokens, list(self.blocks)]

    @classmethod
    def from_row(cls, row: list[Any]) -> TraceRequest:
        t, n_in, n_out, blocks = row
        return cls(float(t), int(n_in), int(n_out), tuple(int(b) for b in blocks))


@dataclass(frozen=True, slots=True)
class Trace:
    """A trace's requests in arrival order, the first at 0 s, and how long it lasts:
    its span plus one mean gap, so that `len(requests) / length_s` is its rate."""

    source: str
    format: str
    requests: tuple[TraceRequest, ...]
    length_s: float

    @property
    def rate(self) -> float:
        """Arrivals per second at the trace's own speed."""
        return len(self.requests) / self.length_s if self.length_s > 0 else math.nan

    def window(self, start_s: float = 0.0, duration_s: float | None = None) -> Trace:
        """The requests in [start_s, start_s + duration_s) (default: to the end), their
        times from `start_s`; raises `TraceError` when none falls in it."""
        end = self.length_s if duration_s is None else start_s + duration_s
        inside = tuple(TraceRequest(r.t_s - start_s, r.input_tokens, r.output_tokens,
                                    r.blocks)
                       for r in self.requests if start_s <= r.t_s < end)
        if not inside:
            raise TraceError(f"{self.source}: no request in the window from {start_s:g} s "
                             f"to {end:g} s (the trace lasts {self.length_s:.1f} s)")
        return Trace(self.source, self.format, inside, end - start_s)


def _lines(text: str) -> Iterator[tuple[int, str]]:
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield lineno, line


def _count(value: Any, name: str, where: str, expected: str, least: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value) or value != int(value) or value < least:
        shown = int(value) if isinstance(value, float) and value.is_integer() else value
        raise TraceError(f"{where}: {name} {shown!r} is not a whole number of at least "
                         f"{least} ({expected})")
    return int(value)


_MOONCAKE = ('a JSON object with `timestamp` (ms), `input_length`, `output_length` and '
             '`hash_ids`, as in {"timestamp": 0, "input_length": 700, "output_length": 40, '
             '"hash_ids": [0, 1]}')


def _mooncake(source: str, text: str) -> list[tuple[float, TraceRequest]]:
    out = []
    for lineno, line in _lines(text):
        where = f"{source}:{lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TraceError(f"{where}: not valid JSON ({exc.msg}); expected {_MOONCAKE}") \
                from exc
        if not isinstance(obj, dict) or "timestamp" not in obj or "input_length" not in obj \
                or "output_length" not in obj:
            raise TraceError(f"{where}: not {_MOONCAKE}")
        t = obj["timestamp"]
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) \
                or t < 0:
            raise TraceError(f"{where}: timestamp {t!r} is not milliseconds ({_MOONCAKE})")
        blocks = obj.get("hash_ids", [])
        if not isinstance(blocks, list):
            raise TraceError(f"{where}: hash_ids {blocks!r} is not a list ({_MOONCAKE})")
        out.append((t / 1e3, TraceRequest(
            0.0, _count(obj["input_length"], "input_length", where, _MOONCAKE, 1),
            _count(obj["output_length"], "output_length", where, _MOONCAKE, 1),
            tuple(_count(b, "a hash id", where, _MOONCAKE) for b in blocks))))
    return out


AZURE_HEADER = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
_AZURE = "a CSV row of TIMESTAMP, ContextTokens and GeneratedTokens under that header"


def _azure_time(value: str, where: str) -> float:
    """A TIMESTAMP in seconds: a number as it is, a date and time since the epoch."""
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        raise TraceError(f"{where}: TIMESTAMP {value!r} is not a date and time such as "
                         f"2023-11-16 18:15:46.6805900 ({_AZURE})") from None
    # the 2023 files' times carry no zone, the 2024 files' +00:00: both are UTC
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def _azure(source: str, text: str) -> list[tuple[float, TraceRequest]]:
    rows = csv.reader(io.StringIO(text))
    header = [h.strip() for h in next(rows, [])]
    missing = [h for h in AZURE_HEADER if h not in header]
    if missing:
        raise TraceError(f"{source}:1: the header lacks {', '.join(missing)}; expected "
                         f"{','.join(AZURE_HEADER)}")
    at = [header.index(h) for h in AZURE_HEADER]
    out = []
    for row in rows:
        where = f"{source}:{rows.line_num}"
        if not any(cell.strip() for cell in row):
            continue
        if len(row) < len(header):
            raise TraceError(f"{where}: {len(row)} fields, not {len(header)} ({_AZURE})")
        t, n_in, n_out = (row[i].strip() for i in at)
        counts = []
        for name, value in (("ContextTokens", n_in), ("GeneratedTokens", n_out)):
            try:
                counts.append(_count(float(value), name, where, _AZURE, 1))
            except ValueError:
                raise TraceError(f"{where}: {name} {value!r} is not a number ({_AZURE})") \
                    from None
        out.append((_azure_time(t, where), TraceRequest(0.0, counts[0], counts[1])))
    return out


@dataclass(frozen=True, slots=True)
class TraceFormat:
    """One published shape of a trace file."""

    name: str
    parse: Callable[[str, str], list[tuple[float, TraceRequest]]]  # (time, request)s


FORMATS: dict[str, TraceFormat] = {f.name: f for f in (
    TraceFormat("mooncake", _mooncake),
    TraceFormat("azure", _azure),
)}
NAMES = (AUTO, *FORMATS)


def detect(path: Path, text: str) -> str:
    """The format a file shows: a `.csv` or a first line naming TIMESTAMP is Azure's,
    anything else Mooncake's JSON lines."""
    first = next((line for _, line in _lines(text)), "")
    return "azure" if path.suffix == ".csv" or first.startswith("TIMESTAMP") else "mooncake"


def load_trace(path: str, fmt: str = AUTO) -> Trace:
    """The trace at `path` in format `fmt` (`auto`: as detected), its times from 0. A file
    is parsed once while it stays as it is (the scenario's checks, the runner's plan line
    and context check and the load shape all ask for it); a changed one is read again."""
    if fmt not in NAMES:
        raise TraceError(f"trace format {fmt!r}: one of {', '.join(NAMES)}")
    try:
        st = Path(path).stat()
    except OSError as exc:
        raise TraceError(f"trace file {path}: {exc.strerror or exc}") from None
    return _parsed(path, fmt, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=8)
def _parsed(path: str, fmt: str, _mtime_ns: int, _size: int) -> Trace:
    """`load_trace`'s work, for one version of the file (its time and size in the key)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise TraceError(f"trace file {path}: {reason}") from None
    name = detect(file, text) if fmt == AUTO else fmt
    found = FORMATS[name].parse(path, text)
    if not found:
        raise TraceError(f"{path}: no requests in the trace")
    found.sort(key=lambda item: item[0])  # stable: equal times keep the file's order
    first = found[0][0]
    requests = tuple(TraceRequest(t - first, r.input_tokens, r.output_tokens, r.blocks)
                     for t, r in found)
    span = requests[-1].t_s
    gap = span / (len(requests) - 1) if span > 0 else 1.0
    return Trace(path, name, requests, span + gap)
