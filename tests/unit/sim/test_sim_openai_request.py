"""Request validation: what is accepted, what is rejected, and never anything else."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specload.sim.openai_request import ApiError, Limits, parse_request

LIMITS = Limits(model_name="m", max_model_len=4096, max_output_tokens=1024)
CHAT = {"messages": [{"role": "user", "content": "hello"}]}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
FIELDS = ["model", "messages", "prompt", "max_tokens", "max_completion_tokens", "min_tokens",
          "ignore_eos", "stream", "stream_options", "seed", "n", "temperature",
          "chat_template_kwargs", "tools", "tool_choice"]
near_valid = st.fixed_dictionaries({}, optional={f: json_values for f in FIELDS})


@settings(max_examples=400, deadline=None)
@given(body=json_values | near_valid, endpoint=st.sampled_from(["chat", "completions"]))
def test_any_json_is_accepted_or_a_4xx_api_error(body: Any, endpoint: str) -> None:
    try:
        req = parse_request(endpoint, body, LIMITS)  # type: ignore[arg-type]
    except ApiError as err:
        assert 400 <= err.status < 500 and err.message
        assert set(err.body()["error"]) == {"message", "type", "param", "code"}
    else:
        assert 1 <= req.max_tokens <= LIMITS.max_output_tokens
        assert req.prompt_tokens + req.max_tokens <= LIMITS.max_model_len
        assert 0 <= req.min_tokens <= req.max_tokens


def test_defaults_and_options() -> None:
    req = parse_request("chat", {**CHAT, "stream": True,
                                 "stream_options": {"include_usage": True,
                                                    "continuous_usage_stats": True}}, LIMITS)
    assert req.stream and req.include_usage and req.continuous_usage
    assert req.max_tokens == LIMITS.max_output_tokens and not req.ignore_eos
    req = parse_request("chat", {**CHAT, "max_tokens": 5, "max_completion_tokens": 9}, LIMITS)
    assert req.max_tokens == 9  # the newer name wins
    req = parse_request("completions", {"prompt": ["abcdefgh"], "model": "m"}, LIMITS)
    assert req.prompt_tokens == 2


def test_a_request_at_temperature_0_is_greedy_and_only_then() -> None:
    """Greedy replies do not depend on the seed (`generate.py` draws them with seed 0);
    the API's default temperature is 1."""
    assert parse_request("chat", {**CHAT, "temperature": 0, "seed": 7}, LIMITS).greedy
    assert parse_request("chat", {**CHAT, "temperature": 0.0}, LIMITS).greedy
    for sampled in ({}, {"temperature": None}, {"temperature": 0.7}):
        assert not parse_request("chat", {**CHAT, **sampled}, LIMITS).greedy


def test_text_parts_are_joined() -> None:
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": "ab"},
                                                       {"type": "text", "text": "cd"}]}]}
    assert parse_request("chat", body, LIMITS).prompt_text == "abcd"


def test_more_output_than_the_context_leaves_is_cut_or_refused_as_the_engine_does() -> None:
    # 14000 characters are 3500 tokens of the 4096: 596 left for the 1024 asked
    body = {"prompt": "x" * 14000, "max_tokens": 1024}
    req = parse_request("completions", body, replace(LIMITS, cut_to_room=True))
    assert (req.prompt_tokens, req.max_tokens) == (3500, 596)
    with pytest.raises(ApiError) as info:
        parse_request("completions", body, LIMITS)
    assert info.value.status == 400 and info.value.param == "max_tokens"


@pytest.mark.parametrize(("endpoint", "body", "status", "param"), [
    ("chat", {**CHAT, "model": "other"}, 404, "model"),
    ("chat", {**CHAT, "max_tokens": 0}, 400, "max_tokens"),
    ("chat", {**CHAT, "max_tokens": 2000}, 400, "max_tokens"),
    ("chat", {**CHAT, "max_tokens": True}, 400, "max_tokens"),
    ("chat", {**CHAT, "min_tokens": 50, "max_tokens": 10}, 400, "min_tokens"),
    ("chat", {**CHAT, "seed": "1"}, 400, "seed"),
    ("chat", {**CHAT, "temperature": -0.5}, 400, "temperature"),
    ("chat", {**CHAT, "temperature": "0"}, 400, "temperature"),
    ("chat", {**CHAT, "stream": "yes"}, 400, "stream"),
    ("chat", {"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, 400,
     "messages[0].content"),
    ("chat", {**CHAT, "chat_template_kwargs": "think"}, 400, "chat_template_kwargs"),
    ("chat", {**CHAT, "tools": [{"type": "function"}]}, 400, "tools[0]"),
    ("chat", {**CHAT, "tools": [3]}, 400, "tools[0]"),
    ("chat", {**CHAT, "tool_choice": "required"}, 400, "tool_choice"),
    ("chat", {**CHAT, "tool_choice": {"type": "function", "function": {"name": "f"}}}, 400,
     "tool_choice"),
    ("completions", {"prompt": "x" * 20000}, 400, "prompt"),
    ("completions", {"prompt": [-1]}, 400, "prompt"),
])
def test_rejections_name_the_parameter(endpoint: str, body: dict, status: int,
                                       param: str) -> None:
    with pytest.raises(ApiError) as info:
        parse_request(endpoint, body, LIMITS)  # type: ignore[arg-type]
    assert info.value.status == status and info.value.param == param


def test_a_thinking_switch_and_tools_are_read_as_the_engines_read_them() -> None:
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
    other = {"type": "function", "function": {"name": "search"}}
    plain = parse_request("chat", CHAT, LIMITS)
    assert (plain.thinking, plain.tools, plain.tool_call) == (None, (), None)
    req = parse_request("chat", {**CHAT, "chat_template_kwargs": {"enable_thinking": False},
                                 "tools": [tool, other]}, LIMITS)
    assert (req.thinking, req.tools, req.tool_call) == (False, ("get_weather", "search"),
                                                        "get_weather")
    named = {"type": "function", "function": {"name": "search"}}
    assert parse_request("chat", {**CHAT, "tools": [tool, other], "tool_choice": named},
                         LIMITS).tool_call == "search"
    assert parse_request("chat", {**CHAT, "tools": [tool], "tool_choice": "none"},
                         LIMITS).tool_call is None
    assert parse_request("chat", {**CHAT, "chat_template_kwargs": {"thinking": True}},
                         LIMITS).thinking is True

