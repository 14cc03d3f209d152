"""What a server lists about its context, read where its engine's `ContextWindow` says,
and a limit on the prompt alone folded into each prompt's budget."""

from __future__ import annotations

import orjson

from specload import engines
from specload.runner.context_check import Listed, listed, listed_context


def test_a_models_entry_and_a_route_of_its_own() -> None:
    vllm = engines.get("vllm").context
    body = orjson.dumps({"data": [{"id": "m", "max_model_len": 1024}]})
    assert listed(body, vllm) == Listed(1024)
    tgi = engines.get("tgi").context
    info = orjson.dumps({"model_id": "m", "max_input_tokens": 1024, "max_total_tokens": 2048})
    assert listed(info, tgi) == Listed(2048, 1024)
    assert listed_context(body, tgi) is None  # not where TGI lists it
    assert listed(b"not json", tgi) is None


def test_the_prompt_alone_limit_lowers_the_room_where_it_binds() -> None:
    # prompt + budget <= 2048 and prompt <= 1024: a 64-token reply leaves 1,024, not 1,984
    assert Listed(2048, 1024).budgets([64, 1500]) == [1024, 1500]
    assert Listed(2048).budgets([64]) == [64]
    assert Listed(2048, 2047).budgets([64]) == [64]  # TGI's default never binds
    assert Listed(2048, 1024).words() == "context of 2048 tokens (1024 for a prompt alone)"
    assert Listed(2048, 2047).words() == "context of 2048 tokens"
