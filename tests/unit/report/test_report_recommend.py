"""The recommended engine settings for each crossover verdict."""

from __future__ import annotations

import json

from specload.report import recommend as rec
from specload.report.crossover import ALWAYS, CROSSES, NEVER, UNKNOWN, Crossover


def test_crossing_gives_vllm_per_batch_size_schedule() -> None:
    got = rec.recommend(Crossover(CROSSES, 17.6, 10, 30), k=3)
    cfg = got["vllm_speculative_config"]
    assert cfg["num_speculative_tokens_per_batch_size"] == [[1, 17, 3],
                                                            [18, rec.BATCH_SIZE_CEILING, 0]]
    assert json.loads(got["vllm"].split("model): ", 1)[1]) == cfg
    assert "1-17" in got["sglang"] and "max_concurrency=17" in got["tensorrt_llm"]


def test_c_star_below_two_still_speculates_for_a_single_request() -> None:
    got = rec.recommend(Crossover(CROSSES, 1.4, 1, 2), k=5)
    assert got["vllm_speculative_config"]["num_speculative_tokens_per_batch_size"][0] == [1, 1, 5]


def test_unknown_k_is_a_visible_placeholder() -> None:
    got = rec.recommend(Crossover(CROSSES, 8.0, 5, 10), k=None)
    assert got["vllm_speculative_config"]["num_speculative_tokens_per_batch_size"][0] == [
        1, 8, rec.K_PLACEHOLDER]
    assert rec.K_PLACEHOLDER in got["summary"]


def test_always_never_unknown() -> None:
    always = rec.recommend(Crossover(ALWAYS, below=250), k=3)
    assert always["verdict"] == ALWAYS and "250" in always["summary"]
    assert "num_speculative_tokens_per_batch_size" not in always["vllm_speculative_config"]
    never = rec.recommend(Crossover(NEVER, above=1), k=3)
    assert never["vllm_speculative_config"] is None and "turn it off" in never["summary"]
    assert rec.recommend(Crossover(UNKNOWN), k=3)["vllm"] == ""
