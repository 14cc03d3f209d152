"""Request bodies of the chat and completions users."""

from __future__ import annotations

from specload.loadgen.options import RunOptions
from specload.loadgen.users import ChatStreamUser, CompletionStreamUser
from specload.traffic.prompts import Prompt, request_seed

PROMPT = Prompt(({"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}),
                "chat")


def test_chat_body_defaults() -> None:
    body = ChatStreamUser.payload(PROMPT, "m", RunOptions())
    assert body == {
        "model": "m", "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        "max_tokens": 256, "temperature": 0.0, "seed": request_seed(0, PROMPT),
        "messages": [{"role": "system", "content": "be brief"},
                     {"role": "user", "content": "hi"}],
    }


def test_equal_length_options_and_prompt_max_tokens() -> None:
    opts = RunOptions(max_tokens=64, ignore_eos=True, min_tokens=64, temperature=0.5, seed=3,
                      continuous_usage=False)
    body = CompletionStreamUser.payload(PROMPT, "m", opts)
    assert body["prompt"] == "be brief\n\nhi" and "messages" not in body
    assert body["stream_options"] == {"include_usage": True}
    assert (body["max_tokens"], body["ignore_eos"], body["min_tokens"]) == (64, True, 64)
    assert (body["temperature"], body["seed"]) == (0.5, request_seed(3, PROMPT))
    own = Prompt(PROMPT.messages, "chat", max_tokens=7)
    assert ChatStreamUser.payload(own, "m", opts)["max_tokens"] == 7


def test_each_prompt_gets_its_own_seed_and_each_run_seed_its_own_set() -> None:
    # one seed for every request made llama-server accept the same synthetic drafts in
    # all of them: a whole arm measured one draw of --spec-synth-len, 4.15 for 5.0
    other = Prompt(({"role": "user", "content": "hello"},), "chat")
    seeds = {request_seed(s, p) for s in (0, 1) for p in (PROMPT, other)}
    assert len(seeds) == 4 and all(0 <= s < 2**31 for s in seeds)
    assert request_seed(0, PROMPT) == request_seed(0, Prompt(PROMPT.messages, "code"))
