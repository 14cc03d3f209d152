"""Sample a server's Prometheus `/metrics` every second into `<prefix>_server_metrics.csv`.

A background thread of the runner reads the arm's series once per interval (its
`/metrics`, its replicas', or a Prometheus server's: `metrics_sources.py`), parses the
text with prometheus_client's reference parser, keeps every registered engine's series
(`specload.engines.metrics`, read at each sample, plus latency histograms' `_sum` and
`_count`) and appends long-format rows `ts, metric, value`.
Each row's value combines the series' label sets as its entry says: counters and queue
sizes add up across data-parallel ranks (and replicas), ratio gauges are averaged,
weighted by the same rank's running requests where the engine exposes them. `ts` is the
middle of the fetch (a slow /metrics would otherwise stamp every value early), and each
sample adds a `specload:fetch_seconds` row, the fetch's length: the server read its
values within half of it either side of `ts`. Servers without `/metrics`, or without
some of these series, are fine: nothing is written for what is absent. The sampler also
keeps the generated-tokens counter in memory.
"""

from __future__ import annotations

import bisect
import csv
import http.client
import threading
import time
import urllib.error
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from specload.engines import metrics as engine_metrics
from specload.engines.metrics import Series
from specload.runfiles.records import FETCH_METRIC, SERVER_METRICS_COLUMNS

if TYPE_CHECKING:
    from specload.runner.metrics_sources import Reading


def kept() -> tuple[dict[str, Series], frozenset[str]]:
    """The series kept, by name, and the histograms' `_sum` and `_count` names."""
    parts = frozenset(f"{h}_{part}" for h in engine_metrics.histograms()
                      for part in ("sum", "count"))
    return engine_metrics.by_name(), parts


def wanted(sample_name: str) -> bool:
    """Whether a sample name (as exposed, e.g. `..._total`, `..._sum`) is kept."""
    table, parts = kept()
    return sample_name in table or sample_name in parts


Labels = tuple[tuple[str, str], ...]
JOIN_TIMEOUT_S = 5.0  # a read in progress ends within its own timeout
_SUFFIXES = ("_total", "_sum", "_count", "")


def kept_lines(text: str, wanted: frozenset[str]) -> str:
    """The exposition's lines of kept series only, their families' type lines with them.
    An engine's /metrics is mostly series we do not keep (histogram buckets, process
    figures); the reference parser costs about as much per line whatever it holds, and
    the sampler runs beside the load every second. A sample's name is all before its
    labels or value; a counter's samples may lack the `_total` its kept name has (the
    parser adds it from the family's type line)."""
    families = {w.removesuffix(end) for w in wanted for end in _SUFFIXES}
    kept = []
    for line in text.splitlines():
        if line.startswith("#"):
            words = line.split(None, 3)
            if len(words) > 2 and words[1] in ("TYPE", "HELP") and words[2] in families:
                kept.append(line)
            continue
        end = len(line)
        for mark in "{ ":
            at = line.find(mark)
            if at != -1:
                end = min(end, at)
        if line[:end] in wanted or f"{line[:end]}_total" in wanted:
            kept.append(line)
    return "\n".join(kept) + "\n"


def parse_metrics(text: str) -> dict[str, float]:
    """Kept samples of a Prometheus text exposition, label sets combined per their entry."""
    table, parts = kept()
    text = kept_lines(text, frozenset(table) | parts)
    return combine(text_string_to_metric_families(text), table, parts)


def combine(families: Iterable[Metric], table: dict[str, Series] | None = None,
            parts: frozenset[str] | None = None) -> dict[str, float]:
    """The kept samples of parsed families, label sets combined per their entry (`table`
    and `parts`: `kept()`, read now when not given)."""
    if table is None or parts is None:
        table, parts = kept()
    by_name: dict[str, dict[Labels, float]] = defaultdict(dict)
    for family in families:
        for sample in family.samples:
            if sample.name in table or sample.name in parts:
                labels = tuple(sorted(sample.labels.items()))
                by_name[sample.name][labels] = float(sample.value)
    out: dict[str, float] = {}
    for name, values in by_name.items():
        series = table.get(name)
        if series is not None and series.only:
            values = {ls: v for ls, v in values.items() if set(series.only) <= set(ls)}
            if not values:
                continue
        key = name if series is None else series.key
        if series is None or series.combine == "sum":
            out[key] = sum(values.values())
            continue
        weights = by_name.get(series.weight or "", {})
        w = [weights.get(labels, 0.0) for labels in values]
        if sum(w) > 0:
            out[key] = sum(v * x for v, x in zip(values.values(), w, strict=True)) / sum(w)
        else:
            out[key] = sum(values.values()) / len(values)
    return out


class MetricsSampler:
    """A thread appending one row per kept metric per sample to a CSV file."""

    def __init__(self, reading: Reading, out_path: Path, interval_s: float = 1.0) -> None:
        self.reading = reading
        self.out_path = out_path
        self.interval_s = interval_s
        self.samples_ok = 0
        self.last_error: str | None = None
        self._generated: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="metrics-sampler", daemon=True)

    def sample_once(self) -> int:
        """Take one sample now; returns the number of metric values written (0 on any
        failure, or when the source had nothing new)."""
        try:
            got = self.reading.read()
        except (urllib.error.URLError, OSError, ValueError, KeyError,
                http.client.HTTPException) as exc:
            self.last_error = str(getattr(exc, "reason", exc))
            return 0
        if got is None:
            return 0
        values, ts, took = got
        new_file = not self.out_path.exists() or self.out_path.stat().st_size == 0
        try:
            with self.out_path.open("a", newline="") as fh:
                writer = csv.writer(fh)
                if new_file:
                    writer.writerow(SERVER_METRICS_COLUMNS)
                writer.writerows([f"{ts:.3f}", name, repr(v)] for name, v in values.items())
                writer.writerow([f"{ts:.3f}", FETCH_METRIC, f"{took:.4f}"])
        except OSError as exc:  # a full disk: the runner stops the sweep, this stops here
            self.last_error = f"cannot write {self.out_path}: {exc.strerror or exc}"
            self._stop.set()
            return 0
        generated = [values[n] for n in engine_metrics.names("generated") if n in values]
        if generated:
            self._generated.append((ts, sum(generated)))
        self.samples_ok += 1
        return len(values)

    def generated_tok_s(self, t0: float, t1: float) -> float | None:
        """Server-side generated tokens per second between two epoch times, if known."""
        hist = list(self._generated)
        times = [t for t, _ in hist]
        i, j = bisect.bisect_left(times, t0), bisect.bisect_right(times, t1) - 1
        if i >= j or j >= len(hist):
            return None
        (ta, va), (tb, vb) = hist[i], hist[j]
        return (vb - va) / (tb - ta) if tb > ta else None

    def _run(self) -> None:
        next_t = time.monotonic()
        while not self._stop.is_set():
            self.sample_once()
            next_t += self.interval_s
            self._stop.wait(max(0.0, next_t - time.monotonic()))

    def start(self) -> MetricsSampler:
        self.out_path.parent.mkdir(parents=True, exist_ok=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=JOIN_TIMEOUT_S)
