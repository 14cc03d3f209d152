"""The load side's Prometheus exposition, counted from request rows and health rows."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from specload.config.settings import Export
from specload.ladder.rungs import Where
from specload.loadgen import prom_export
from specload.loadgen.inflight import IN_FLIGHT
from specload.loadgen.prom_export import Histogram, LoadExporter
from specload.runfiles.records import RequestRecord, encode_chunks


def test_a_value_on_a_bound_is_in_that_bounds_bucket() -> None:
    hist = Histogram((0.1, 0.5, 1.0))
    hist.observe(np.array([0.05, 0.1, 0.2, 0.5, 3.0]))
    assert hist.buckets() == [("0.1", 2.0), ("0.5", 4.0), ("1", 4.0), ("+Inf", 5.0)]
    assert hist.total == pytest.approx(3.85)


def test_many_rows_integers_parse_at_once_with_each_rows_first() -> None:
    flat, firsts = prom_export._ints(["5 6 7", "", "8", "9 10"])
    assert flat.tolist() == [5, 6, 7, 8, 9, 10]
    assert firsts.tolist() == [0, 3, 4]


class Arrived:
    def __init__(self, tokens: int) -> None:
        self.output_tokens = tokens


class Shape:
    def __init__(self) -> None:
        self.now: Where | None = Where(4, "measure")

    def where(self) -> Where | None:
        return self.now


def _row(tokens: list[int], error_kind: str = "", ttft_ms: float | None = 50.0) -> list[Any]:
    arrivals = [100.05 + 0.02 * i for i in range(len(tokens))]
    gaps, chunk_tokens = encode_chunks(100.0, arrivals, tokens)
    return RequestRecord(
        request_id="r", client_id="c", seq=0, user_id=0, endpoint="chat", category="chat",
        start=100.0, end=arrivals[-1], status=200, ttft_ms=ttft_ms, e2e_ms=90.0,
        tpot_ms=20.0, output_tokens=sum(tokens), prompt_tokens=10, tokens_source="usage",
        num_chunks=len(tokens), finish_reason="length", error_kind=error_kind, error="",
        interrupted=False, chunk_gaps_us=gaps, chunk_tokens=chunk_tokens).row()


def _samples(exporter: LoadExporter) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = exporter.exposition().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def test_rows_and_tokens_count_in_the_rung_in_progress() -> None:
    shape = Shape()
    env = SimpleNamespace(runner=None, shape_class=shape, host="https://me:secret@h:8000")
    exporter = LoadExporter(env, Export(run_label="run1"))  # type: ignore[arg-type]
    arrived = Arrived(7)  # tokens arrived in this process while C = 4 measured
    key = IN_FLIGHT.begin(0.0, arrived)
    exporter.add_rows([_row([1, 3, 3]), _row([2], error_kind="stream_cut", ttft_ms=None)])
    got = _samples(exporter)
    here = {"arm": "https://h:8000", "run": "run1", "rung": "4"}

    def at(name: str, **more: str) -> float:
        return got[name, tuple(sorted({**here, **more}.items()))]

    assert at("specload_output_tokens_total") == 7
    assert at("specload_requests_total", outcome="ok") == 1
    assert at("specload_requests_total", outcome="stream_cut") == 1
    assert at("specload_ttft_seconds_count") == 1
    assert at("specload_ttft_seconds_sum") == pytest.approx(0.05)
    assert at("specload_chunk_tokens_count") == 4  # every chunk of both rows
    assert at("specload_chunk_tokens_sum") == 9
    assert at("specload_chunk_tokens_bucket", le="2") == 2
    assert at("specload_itl_seconds_count") == 2  # the gaps between chunks
    assert at("specload_itl_seconds_sum") == pytest.approx(0.04)
    assert at("specload_rung_phase", phase="measure") == 1
    shape.now = Where(None, "drain")
    arrived.output_tokens += 3
    IN_FLIGHT.end(key)
    got = _samples(exporter)
    assert at("specload_output_tokens_total", rung="drain") == 3
    assert at("specload_output_tokens_total") == 7  # the rung's count stays
    assert "secret" not in exporter.exposition().decode()
