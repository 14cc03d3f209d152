"""Each engine flavour's stream shape, usage chunk and /metrics text."""

from __future__ import annotations

import json
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from specload.sim import metrics, sse
from specload.sim.flavors import FLAVORS, Flavor
from specload.sim.metrics import TTFT_BUCKETS, Histogram, RankStats

STEPS = [[" a", " b"], [" c"], [" d", " e", " f"]]  # three engine steps, 6 tokens


def _events(raw: bytes) -> list[Any]:
    assert raw.endswith(b"\n\n")
    out = []
    for block in raw.split(b"\n\n")[:-1]:
        assert block.startswith(b"data: ")
        payload = block[6:]
        out.append("[DONE]" if payload == b"[DONE]" else json.loads(payload))
    return out


def _stream(flavor: Flavor, chat: bool = True, reasoning: int = 0,
            finish: str = "length") -> list[Any]:
    w = sse.ChunkWriter(flavor, chat, "chatcmpl-r1", 7, 'model "q"', 12, include_usage=True,
                        continuous_usage=True)
    raw, sent = b"", 0
    for i, words in enumerate(STEPS):
        last = i == len(STEPS) - 1
        raw += w.step(words, sent, finish if last else None, reasoning - sent)
        sent += len(words)
    return _events(raw + w.tail(sent))


def _content(ev: dict[str, Any]) -> str:
    choice = ev["choices"][0] if ev["choices"] else {}
    delta = choice.get("delta", {})
    return (delta.get("content") or "") + "".join(
        v for k, v in delta.items() if k.startswith("reasoning") and v)


@pytest.mark.parametrize("name", list(FLAVORS))
def test_every_flavour_streams_the_same_tokens_in_its_own_shape(name: str) -> None:
    flavor = FLAVORS[name]
    events = _stream(flavor)
    assert events[-1] == "[DONE]"
    chunks = [e for e in events[:-1] if e["choices"]]
    usage_chunks = [e for e in events[:-1] if not e["choices"]]
    assert "".join(_content(e) for e in chunks) == " a b c d e f"
    finishes = [e["choices"][0]["finish_reason"] for e in chunks]
    assert finishes.count("length") == 1
    last = chunks[-1]
    if flavor.finish_separate:
        assert _content(last) == "" and last["choices"][0]["finish_reason"] == "length"
    else:
        assert _content(last) != ""
    content_chunks = [e for e in chunks if _content(e)]
    expected = 6 if flavor.per_token_chunks else 3
    assert len(content_chunks) == expected
    deltas = [e["choices"][0]["delta"] for e in chunks]
    if flavor.role == "every":
        assert all(d.get("role") == "assistant" for d in deltas if _content_of(d))
    elif flavor.role == "first":
        assert deltas[0].get("role") == "assistant" and _content_of(deltas[0])
        assert not any("role" in d for d in deltas[1:])
    else:
        assert "role" in deltas[0] and not _content_of(deltas[0])
    if flavor.usage == "never":
        assert usage_chunks == []
    else:
        (u,) = usage_chunks
        assert u["usage"] == {"prompt_tokens": 12, "total_tokens": 18, "completion_tokens": 6}
        assert u["choices"] == []
    per_chunk = [e.get("usage") for e in content_chunks]
    if flavor.usage == "continuous":
        assert [u["completion_tokens"] for u in per_chunk] == [2, 3, 6]
    else:
        assert all(u is None for u in per_chunk)


def _content_of(delta: dict[str, Any]) -> bool:
    return bool(delta.get("content")) or any(
        v for k, v in delta.items() if k.startswith("reasoning"))


def test_vllm_strips_the_eos_token_text_but_counts_it() -> None:
    events = _stream(FLAVORS["vllm"], finish="stop")
    last = [e for e in events if e != "[DONE]" and e["choices"]][-1]
    # vLLM 0.32.0's finish choice also carries stop_reason and token_ids (null)
    assert last["choices"][0] == {"index": 0, "delta": {"content": " d e"}, "logprobs": None,
                                  "finish_reason": "stop", "stop_reason": None,
                                  "token_ids": None}
    assert last["usage"]["completion_tokens"] == 6


@pytest.mark.parametrize(("name", "key"), [("vllm", "reasoning"), ("sglang", "reasoning_content"),
                                           ("ollama", "reasoning"), ("tgi", None)])
def test_reasoning_tokens_go_to_the_flavours_field(name: str, key: str | None) -> None:
    events = [e for e in _stream(FLAVORS[name], reasoning=3) if e != "[DONE]" and e["choices"]]
    deltas = [e["choices"][0]["delta"] for e in events]
    if key is None:
        assert not any(k.startswith("reasoning") for d in deltas for k in d)
        return
    reasoning = "".join(d.get(key) or "" for d in deltas)
    content = "".join(d.get("content") or "" for d in deltas)
    assert (reasoning, content) == (" a b c", " d e f")


def test_ollama_completions_carry_zero_usage_on_every_chunk() -> None:
    events = _stream(FLAVORS["ollama"], chat=False)
    text = [e for e in events if e != "[DONE]" and e["choices"]]
    assert all(e["usage"]["completion_tokens"] == 0 for e in text)
    assert text[-1]["choices"][0]["finish_reason"] == "length"
    assert events[-2]["usage"]["completion_tokens"] == 6


def test_tgi_usage_chunk_drops_the_null_usage_field() -> None:
    events = _stream(FLAVORS["tgi"])
    assert all(e["usage"] is None for e in events[:-2])
    assert events[-2]["usage"]["total_tokens"] == 18


def _rank(running: int, accept_len: float) -> RankStats:
    h = Histogram(TTFT_BUCKETS)
    h.observe(0.2)
    return RankStats(running, 1, 0.5, 100, 200, 0, 3, 10, 30, 15, accept_len, 0.5, 50.0, 40,
                     1.0, 0.0, 0.0, ttft=h)


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def test_vllm_metrics_label_each_data_parallel_rank() -> None:
    got = _samples(metrics.render(metrics.VLLM, [_rank(3, 2.8), _rank(5, 2.6)], 'm"x'))
    for rank, running in (("0", 3), ("1", 5)):
        labels = (("engine", rank), ("model_name", 'm"x'))
        assert got[("vllm:num_requests_running", labels)] == running
        assert got[("vllm:generation_tokens_total", labels)] == 200
        assert got[("vllm:time_to_first_token_seconds_count", labels)] == 1


def test_sglang_metrics_have_dp_rank_gauges_and_tokenizer_counters() -> None:
    """Tokens and verification steps are the finished requests', summed over ranks."""
    ranks = [_rank(3, 2.8), _rank(5, 2.6)]
    for rank, (tokens, steps) in zip(ranks, ((150, 60), (90, 40)), strict=True):
        rank.slots.predicted, rank.slots.drafts, rank.slots.prompt = tokens, steps, 2 * tokens
    got = _samples(metrics.render(metrics.SGLANG, ranks, "m"))
    lengths = {dict(k[1])["dp_rank"]: v for k, v in got.items()
               if k[0] == "sglang:spec_accept_length"}
    assert lengths == {"0": 2.8, "1": 2.6}
    for name, total in (("sglang:generation_tokens_total", 240),
                        ("sglang:spec_verify_calls_total", 100),
                        ("sglang:prompt_tokens_total", 480)):
        assert [v for k, v in got.items() if k[0] == name] == [total]
    single = _samples(metrics.render(metrics.SGLANG, [_rank(3, 2.8)], "m"))
    assert not any("dp_rank" in dict(k[1]) for k in single)


def test_tgi_metrics_names_as_declared() -> None:
    got = _samples(metrics.render(metrics.TGI, [_rank(3, 2.8), _rank(5, 2.6)], "m"))
    assert got[("tgi_batch_current_size", ())] == 8
    assert got[("tgi_request_success_total", ())] == 6  # the parser adds the suffix
    assert ("tgi_request_generated_tokens_count", ()) in got
