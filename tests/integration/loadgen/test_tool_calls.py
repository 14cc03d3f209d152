"""Agentic replies: every flavour streams tool calls in its engine's shape, and every token
of them is counted.

A request body's own fields (`--extra-body`: `tools`, a thinking switch) reach the
server, which answers by calling the tool in its engine's wire shape
(`sim/tool_calls.py`). The load generator must count those chunks as it counts content:
each request's chunk tokens add up to its `usage` exactly where the flavour sends usage
(one token per chunk otherwise), and match the server's own trace. A reader that counts
only `delta.content` records no chunk at all for such a reply.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specload.sim.flavors import FLAVORS

TOOLS = [{"type": "function", "function": {"name": "get_weather",
                                           "parameters": {"type": "object"}}}]
BODY = {"tools": TOOLS, "chat_template_kwargs": {"enable_thinking": False}}


# llama.cpp (one token per chunk, no per-chunk usage) in the default tier: the reader that
# counts only `content` records no chunk of its replies; the other flavours in the slow tier
@pytest.mark.parametrize("flavor", [pytest.param(f, marks=() if f == "llamacpp" else
                                                 pytest.mark.slow) for f in sorted(FLAVORS)])
def test_tool_call_replies_are_counted_token_for_token(sim_server, locust_run, flavor: str
                                                       ) -> None:
    # llama-cpp-python would end a running stream when another request waits
    quiet = ["--no-interrupt"] if flavor == "llama-cpp-python" else []
    sim = sim_server(flavor=flavor, profile="bench-20ms",
                     extra_args=["--reasoning-tokens", "3", *quiet])
    run = locust_run("chat.py", sim.url, users=3, run_time="3s",
                     extra=["--max-tokens", "12", "--ignore-eos", "--extra-body",
                            json.dumps(BODY)])
    assert run.returncode == 0, run.output[-3000:]
    rows = [r for r in run.requests() if r["interrupted"] != "1"]
    assert rows and all(r["error_kind"] == "" for r in rows), rows[:2]
    traced = {t["request_id"]: t for t in sim.read_trace()}
    calls = FLAVORS[flavor].tool_calls is not None
    for r in rows:
        t = traced[r["request_id"]]
        # what the body asked for reached the server
        assert (t["tools"], t["thinking"]) == (["get_weather"], False), t
        assert t["tool_call"] == ("get_weather" if calls else None), t
        assert int(r["output_tokens"]) == t["output_tokens"] == 12
        assert int(r["num_chunks"]) == len(t["chunks"]), (r, t["chunks"])
        if r["chunk_tokens"]:  # per-chunk usage: each chunk's tokens, adding up
            assert [int(x) for x in r["chunk_tokens"].split()] == [n for _, n in t["chunks"]]
        else:  # one token per chunk, or a call sent whole with the final usage
            assert r["tokens_source"] in ("usage", "chunks"), r
            assert sum(n for _, n in t["chunks"]) == 12


def test_a_request_that_overrides_specloads_own_fields_is_refused(locust_run,
                                                                   tmp_path: Path) -> None:
    run = locust_run("chat.py", "http://127.0.0.1:9", users=1, run_time="1s",
                     extra=["--extra-body", '{"stream": false}'])
    assert run.returncode != 0
    assert "--extra-body: `stream` is specload's own: every request streams" in run.output
