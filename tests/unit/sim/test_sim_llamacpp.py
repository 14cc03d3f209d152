"""llama.cpp's slot stats, `llamacpp:*` text, stream ends and API-key reading (pure parts)."""

from __future__ import annotations

import json

import pytest
from prometheus_client.parser import text_string_to_metric_families

from specload.runner.metrics_scrape import parse_metrics
from specload.sim import auth, metrics, sse
from specload.sim.flavors import FLAVORS
from specload.sim.metrics import RankStats
from specload.sim.slot_stats import SlotStats, SlotTotals

STATS = SlotStats(prompt_cached=16, prompt_processed=4, generated=9, drafts=4,
                  draft_tokens=8, accepted=4, accept_hist=(1, 2, 1), prompt_s=0.02,
                  gen_s=0.16)


def test_timings_follow_server_slot_stats_to_json() -> None:
    t = STATS.timings()
    assert (t["cache_n"], t["prompt_n"], t["predicted_n"]) == (16, 4, 9)
    assert t["prompt_ms"] == pytest.approx(20.0) and t["predicted_ms"] == 160.0
    assert t["prompt_per_token_ms"] == pytest.approx(5.0)
    assert t["predicted_per_token_ms"] == 20.0  # 8 steps: the first token is free
    assert t["predicted_per_second"] == pytest.approx(50.0)
    assert (t["draft_n"], t["draft_n_accepted"]) == (8, 4)


def test_one_token_requests_and_no_drafts() -> None:
    one = SlotStats(0, 3, 1, 0, 0, 0, (), 0.01, 0.0).timings()
    assert one["predicted_ms"] == 0.001  # t_gen_us is clamped to 1 µs
    assert one["predicted_per_second"] == 0.0 and one["predicted_per_token_ms"] == 0.0
    assert "draft_n" not in one and "draft_n_accepted" not in one


def test_totals_add_a_released_request_at_once() -> None:
    totals = SlotTotals()
    totals.add(STATS, tokens=29)
    totals.add(SlotStats(0, 1, 2, 1, 3, 3, (0, 0, 0, 1), 0.0, 0.01), tokens=3)
    assert (totals.predicted, totals.predicted_steps, totals.predicted_us) == (11, 9, 170000)
    assert (totals.drafts, totals.draft_tokens, totals.accepted) == (5, 11, 7)
    assert totals.accepted_per_pos == [3 + 1, 1 + 1, 0 + 1]  # steps accepting > i drafts
    assert totals.tokens_max == 29


def _rank(**fields: object) -> RankStats:
    rank = RankStats(2, 3, 0.5, 100, 200, 0, 3, 10, 30, 15, 2.0, 0.5, 50.0, 40, 1.0, 0.0,
                     0.0, prefix_hits=16, prefill_tokens=1234567, prefill_s=2.5,
                     busy_seqs=80, tokens_max=29)
    rank.slots.add(STATS, 29)
    for name, value in fields.items():
        setattr(rank, name, value)
    return rank


def test_llamacpp_text_as_the_server_prints_it() -> None:
    text = metrics.render(metrics.LLAMACPP, [_rank()], "m")
    assert "llamacpp:prompt_tokens_total 1.23457e+06\n" in text  # C++'s `<< double`
    assert "# TYPE llamacpp:n_tokens_max counter\nllamacpp:n_tokens_max 29\n" in text
    assert "llamacpp:n_busy_slots_per_decode 2\n" in text  # 80 busy slots / 40 decodes
    assert 'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 1\n' in text
    got = {s.name: s.value for fam in text_string_to_metric_families(text)
           for s in fam.samples if not s.labels}
    assert got["llamacpp:tokens_predicted_total"] == 9
    assert got["llamacpp:tokens_predicted_seconds_total"] == 0.16
    assert (got["llamacpp:requests_processing"], got["llamacpp:requests_deferred"]) == (2, 3)
    assert got["llamacpp:spec_decode_num_drafts_total"] == 4


def test_llamacpp_text_sums_data_parallel_ranks_without_labels() -> None:
    text = metrics.render(metrics.LLAMACPP, [_rank(), _rank(running=1)], "m")
    got = {(s.name, tuple(s.labels.items())): s.value
           for fam in text_string_to_metric_families(text) for s in fam.samples}
    assert got[("llamacpp:tokens_predicted_total", ())] == 18
    assert got[("llamacpp:requests_processing", ())] == 3
    assert got[("llamacpp:spec_decode_num_accepted_tokens_per_pos_total",
                (("position", "0"),))] == 6


def test_the_sampler_keeps_the_first_draft_positions_acceptance() -> None:
    kept = parse_metrics(metrics.render(metrics.LLAMACPP, [_rank()], "m"))
    first = 'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"}'
    assert (kept[first], kept["llamacpp:spec_decode_num_drafts_total"]) == (3, 4)


def _events(raw: bytes) -> list[object]:
    return ["[DONE]" if b == b"data: [DONE]" else json.loads(b[6:])
            for b in raw.split(b"\n\n")[:-1]]


@pytest.mark.parametrize("include_usage", [True, False])
def test_llamacpp_completions_end_in_a_finish_chunk_with_usage(include_usage: bool) -> None:
    w = sse.ChunkWriter(FLAVORS["llamacpp"], False, "cmpl-1", 7, "m", 5, include_usage,
                        continuous_usage=False)
    raw = w.step([" a", " b"], 0, None) + w.step([" c"], 2, "stop", final={"timings": {"x": 1}})
    events = _events(raw + w.tail(3, {"timings": {"y": 2}}))
    assert [e["choices"][0]["text"] for e in events[:-1]] == [" a", " b", " c", ""]
    final = events[-2]
    assert final["choices"][0]["finish_reason"] == "stop"
    assert final["usage"] == {"prompt_tokens": 5, "total_tokens": 8, "completion_tokens": 3}
    assert final["timings"] == {"x": 1} and events[-1] == "[DONE]"


@pytest.mark.parametrize(("flavor", "headers", "key"), [
    ("llamacpp", {"Authorization": "Bearer k1"}, "k1"),
    ("llamacpp", {"Authorization": "k1"}, "k1"),
    ("llamacpp", {"X-Api-Key": "k2"}, "k2"),
    ("llamacpp", {"Authorization": "Basic k1", "X-Api-Key": "k2"}, "Basic k1"),
    ("vllm", {"Authorization": "BEARER k1"}, "k1"),
    ("vllm", {"Authorization": "k1"}, None),
    ("vllm", {"X-Api-Key": "k2"}, None),
])
def test_the_key_is_read_as_each_engine_reads_it(flavor: str, headers: dict[str, str],
                                                 key: str | None) -> None:
    rule = FLAVORS[flavor].api_key
    assert rule is not None
    assert auth.presented(rule, headers) == key


def test_guarded_routes_per_engine() -> None:
    llama, vllm = FLAVORS["llamacpp"].api_key, FLAVORS["vllm"].api_key
    assert llama is not None and vllm is not None
    assert [auth.needs_key(llama, "GET", p) for p in ("/health", "/metrics", "/v1/models")] \
        == [False, True, True]
    assert [auth.needs_key(vllm, "GET", p) for p in ("/health", "/metrics", "/v1/models")] \
        == [False, False, True]
    assert not auth.needs_key(llama, "OPTIONS", "/v1/models")
