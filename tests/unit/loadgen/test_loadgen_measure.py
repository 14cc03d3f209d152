"""Per-request metric arithmetic: TTFT, E2E, TPOT, token sources, ITLs."""

from __future__ import annotations

import pytest

from specload.loadgen.chunk_json import Chunk
from specload.loadgen.measure import (
    StreamTally,
    chunk_itls,
    token_itls,
    tokens_per_chunk,
    tpot_ms,
)


def content(cum: int | None = None) -> Chunk:
    return Chunk(has_content=True, completion_tokens=cum)


def test_speculative_stream_with_continuous_and_final_usage() -> None:
    t = StreamTally(t0=10.0)
    t.add(10.001, Chunk(completion_tokens=0, prompt_tokens=12))  # role chunk: not a token
    t.add(10.050, content(1))
    t.add(10.060, content(4))
    t.add(10.070, content(6))
    t.add(10.071, Chunk(finish_reason="length", completion_tokens=6))
    t.add(10.072, Chunk(usage_only=True, completion_tokens=6, prompt_tokens=12))
    m = t.result()
    assert m.ttft_ms == pytest.approx(50.0)
    assert m.e2e_ms == pytest.approx(70.0)
    assert m.tpot_ms == pytest.approx(20.0 / 5)
    assert (m.output_tokens, m.tokens_source, m.prompt_tokens) == (6, "usage", 12)
    assert m.chunk_tokens == [1, 3, 2]
    assert m.finish_reason == "length"


def test_continuous_usage_without_final_chunk() -> None:
    t = StreamTally(t0=0.0)
    for i, cum in enumerate((2, 5, 7), start=1):
        t.add(i * 0.01, content(cum))
    m = t.result()
    assert (m.output_tokens, m.tokens_source, m.chunk_tokens) == (7, "continuous_usage", [2, 3, 2])


def test_a_token_on_an_empty_finish_chunk_is_credited_when_it_arrives() -> None:
    # vLLM: the last step produced only EOS, sent as content "" with its usage
    t = StreamTally(t0=0.0)
    t.add(0.01, content(1))
    t.add(0.02, content(2))
    t.add(0.03, Chunk(finish_reason="stop", completion_tokens=3))
    m = t.result()
    assert (m.output_tokens, m.chunk_tokens, m.arrivals) == (3, [1, 1, 1], [0.01, 0.02, 0.03])
    assert m.e2e_ms == pytest.approx(30.0) and m.ttft_ms == pytest.approx(10.0)


def test_tokens_only_the_final_usage_counts_go_to_the_finish_chunk() -> None:
    t = StreamTally(t0=0.0)
    t.add(0.01, content(1))
    t.add(0.02, content(2))
    t.add(0.03, Chunk(finish_reason="stop"))
    t.add(0.04, Chunk(usage_only=True, completion_tokens=3))
    m = t.result()
    assert (m.chunk_tokens, m.arrivals) == ([1, 1, 1], [0.01, 0.02, 0.03])


def test_per_chunk_usage_that_stays_at_zero_is_not_believed() -> None:
    # Ollama's /v1/completions: every chunk carries an all-zero usage object
    t = StreamTally(t0=0.0)
    for i in range(3):
        t.add(0.1 * (i + 1), content(0))
    t.add(0.4, Chunk(usage_only=True, completion_tokens=3))
    m = t.result()
    assert (m.output_tokens, m.tokens_source, m.chunk_tokens) == (3, "usage", None)
    assert len(m.arrivals) == 3


def test_chunk_counting_when_server_reports_nothing() -> None:
    t = StreamTally(t0=0.0)
    for i in range(4):
        t.add(0.1 * (i + 1), content())
    m = t.result()
    assert (m.output_tokens, m.tokens_source, m.chunk_tokens) == (4, "chunks", None)
    assert m.tpot_ms == pytest.approx(100.0)


def test_missing_per_chunk_usage_anywhere_drops_chunk_tokens() -> None:
    t = StreamTally(t0=0.0)
    t.add(0.1, content(1))
    t.add(0.2, content(None))
    t.add(0.3, Chunk(usage_only=True, completion_tokens=5))
    m = t.result()
    assert (m.output_tokens, m.chunk_tokens) == (5, None)


def test_no_content_means_no_latencies() -> None:
    m = StreamTally(t0=0.0).result()
    assert (m.ttft_ms, m.e2e_ms, m.tpot_ms, m.output_tokens) == (None, None, None, 0)


def test_single_token_has_no_tpot() -> None:
    t = StreamTally(t0=0.0)
    t.add(0.2, content(1))
    m = t.result()
    assert m.ttft_ms == m.e2e_ms == pytest.approx(200.0)
    assert m.tpot_ms is None


def test_tpot_formula() -> None:
    assert tpot_ms(100.0, 1100.0, 101) == pytest.approx(10.0)
    assert tpot_ms(100.0, 100.0, 1) is None
    assert tpot_ms(None, 5.0, 10) is None


def test_itls() -> None:
    arrivals = [0.0, 0.010, 0.040, 0.045]
    assert chunk_itls(arrivals) == pytest.approx([0.010, 0.030, 0.005])
    assert token_itls(arrivals, [1, 2, 3, 0]) == pytest.approx([0.005, 0.010])
    assert chunk_itls([1.0]) == []
    with pytest.raises(ValueError):
        token_itls(arrivals, [1, 2])
    assert tokens_per_chunk(12, 4) == 3.0
    assert tokens_per_chunk(0, 0) is None


def test_the_generated_text_keeps_every_kind_in_order_and_the_reply_only_content() -> None:
    t = StreamTally(t0=0.0, keep_text=True)
    t.add(0.1, Chunk(has_content=True, other="think "))
    t.add(0.2, Chunk(has_content=True, text="Hello", other=""))
    t.add(0.3, Chunk(has_content=True, other='f{"x": 1}'))
    assert t.result().generated == 'think Hellof{"x": 1}'
    assert t.reply() == "Hello"
