"""The per-process context: request ids, API key header, model choice, prompt share."""

from __future__ import annotations

import os
import socket
import uuid

import locust
import pytest
from locust.argument_parser import get_parser
from locust.env import Environment

from specload.loadgen import plugin
from specload.loadgen.process_state import ModelDiscoveryError, ProcessState, fetch_models
from specload.traffic.prompt_sets import load_prompts
from specload.traffic.prompts import PromptOrder

plugin.install()  # as a locustfile does: specload's arguments and listeners


def make_env(*args: str) -> Environment:
    # Locust's global event hooks, where the context module listens (as in a real run)
    # (no runner: a runner would leave its own listeners on the global hooks)
    return Environment(parsed_options=get_parser().parse_args(list(args)), events=locust.events)


def test_ids_headers_model_and_prompts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECLOAD_TEST_KEY", "k-123")
    env = make_env("--model", "my-model", "--api-key-env", "SPECLOAD_TEST_KEY", "--seed", "7")
    ctx = ProcessState.for_env(env)
    assert ProcessState.for_env(env) is ctx
    assert ctx.client_id == f"{socket.gethostname()}-{os.getpid()}"
    seqs, ids = zip(*(ctx.next_request() for _ in range(100)), strict=True)
    assert seqs == tuple(range(1, 101))
    assert len(set(ids)) == 100 and all(uuid.UUID(i).version == 4 for i in ids)
    assert ctx.request_id_header == "X-Request-Id"
    assert ctx.auth_headers == {"Authorization": "Bearer k-123"}
    assert ctx.model("http://127.0.0.1:9") == "my-model"  # no discovery needed
    # its check against the server's list runs in the background: it must end here, not
    # in whichever test next yields to the hub (it once ran inside test_start_gate's
    # timed wave, which then saw no read)
    assert ctx.model_check is not None
    ctx.model_check.join(timeout=30)
    assert ctx.model_check.dead
    order = PromptOrder(load_prompts(None), seed=7)
    assert [ctx.next_prompt() for _ in range(5)] == [order.next() for _ in range(5)]


def test_no_key_no_header(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert ProcessState.for_env(make_env()).auth_headers == {}


def test_new_test_gets_a_new_context() -> None:
    env = make_env("--model", "m")
    ctx = ProcessState.for_env(env)
    env.events.test_start.fire(environment=env)
    assert ProcessState.for_env(env) is not ctx


@pytest.mark.parametrize(("given", "header"), [("off", ""), ("X-Request-ID", "X-Request-ID"),
                                               ("none", "")])
def test_request_id_header_can_be_renamed_or_dropped(given: str, header: str) -> None:
    env = make_env("--model", "m", "--request-id-header", given)
    assert ProcessState.for_env(env).request_id_header == header


def test_model_discovery_failure_is_one_line() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ModelDiscoveryError, match="GET /v1/models"):
        fetch_models(f"http://127.0.0.1:{port}", {}, timeout=2)
