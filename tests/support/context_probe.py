"""The runner's context check held to what a real engine does with a request.

`check_engine` reads the context and counts prompts exactly as `runner/context_check.py`
does (the engine registry's `ContextWindow`), then asks the engine itself: each count
must be the prompt tokens its usage bills; a long prompt trimmed to the room the check
computes (context less output) must get its whole output; one token more than that
room must get its output cut to the context's end (both engines answer 200 then); the
long prompt as it was must be refused with a 400.
"""

from __future__ import annotations

import urllib.error
import urllib.request

import orjson

from specload import engines
from specload.runner.context_check import listed_context, listing, remote_counter
from specload.runner.health_checks import listed_models, probe
from specload.traffic import prompt_fit
from specload.traffic.prompt_sets import load_prompts
from specload.traffic.prompts import Prompt

MAX_TOKENS = 24


def chat(url: str, model: str, prompt: Prompt, max_tokens: int) -> tuple[int, dict]:
    """(HTTP status, answer) of a non-streamed chat request that ignores EOS."""
    body = {"model": model, "messages": list(prompt.messages), "max_tokens": max_tokens,
            "ignore_eos": True, "temperature": 0}
    req = urllib.request.Request(url + "/v1/chat/completions", data=orjson.dumps(body),
                                 method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=300) as resp:
            return resp.status, orjson.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, orjson.loads(exc.read() or b"{}")


def _one_per_category(prompts: list[Prompt], most_bytes: int) -> list[Prompt]:
    """Each category's first prompt of at most `most_bytes` UTF-8 bytes (a token is at
    least one byte, so it fits the context whatever the tokenizer)."""
    first: dict[str, Prompt] = {}
    for p in prompts:
        if len(p.text.encode()) <= most_bytes:
            first.setdefault(p.category, p)
    return list(first.values())


def check_engine(url: str, engine: str, context: int) -> dict[str, int]:
    """Assert the check's facts against the engine at `url`; what it saw, for the log."""
    window = engines.get(engine).context
    body = probe(url + "/v1/models", 10).body
    listed = listing(url, window, body, None, None)
    assert listed_context(listed, window) == context, (listed or b"")[:500]
    model = listed_models(body)[0]
    count = remote_counter(url + window.count_route, model, None, None, window.count_field)
    prompts = load_prompts(None)
    for p in _one_per_category(prompts, context // 2):
        status, answer = chat(url, model, p, 1)
        assert status == 200, answer
        assert count(p) == answer["usage"]["prompt_tokens"], p.category

    room = context - MAX_TOKENS
    text = " ".join(p.text for p in prompts)[: 12 * context]
    long = Prompt(({"role": "user", "content": text},), "long")
    template = count(Prompt(({"role": "user", "content": ""},), "probe"))
    fit = prompt_fit.plan([long], [MAX_TOKENS], context, count, template, "trim")
    assert fit.over == (0,) and 0 in fit.cut, fit
    trimmed = prompt_fit.shortened(long, fit.cut[0])
    status, answer = chat(url, model, trimmed, MAX_TOKENS)
    assert status == 200, answer
    assert answer["usage"]["prompt_tokens"] <= room
    assert answer["usage"]["completion_tokens"] == MAX_TOKENS, answer["usage"]

    chars = fit.cut[0]
    while count(over := prompt_fit.shortened(long, chars)) <= room:
        chars += 1
    status, answer = chat(url, model, over, MAX_TOKENS)
    assert status == 200, answer  # the output is cut to the context's end instead
    usage = answer["usage"]
    assert usage["completion_tokens"] == context - usage["prompt_tokens"] < MAX_TOKENS, usage

    status, answer = chat(url, model, long, MAX_TOKENS)
    assert status == 400, answer
    return {"context": context, "room": room, "trimmed_prompt": count(trimmed),
            "one_over": count(over), "long": count(long)}
