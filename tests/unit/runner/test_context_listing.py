"""What a server lists about its context, read where its engine's `ContextWindow` says,
and a limit on the prompt alone folded into each prompt's budget."""

from __future__ import annotations

import orjson

from specload import engines
from specload.config.scenario import load_scenario
from specload.runner.context_check import Listed, context_fits, listed, listed_context


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


def test_an_arms_context_that_cannot_fit_the_server_fails_it_in_one_line(tmp_path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("name: x\ncontexts: [512, 8000, 'lognormal:900:1']\n"
                    "request: {max_tokens: 256}\narms:\n  - name: a\n    url: http://h:1\n")
    scenario = load_scenario(path)
    assert context_fits(scenario, "512", Listed(8192), None).failed is None
    failed = context_fits(scenario, "8000", Listed(8192), None).failed
    assert failed == ("context 8000: prompts of 8000 tokens and replies of 256 do not fit "
                      "the server's context of 8192 tokens")
    unbounded = context_fits(scenario, "lognormal:900:1", Listed(8192), None)
    assert unbounded.failed is None and unbounded.lines[0].startswith("warning: ")
