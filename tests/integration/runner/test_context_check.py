"""Prompts checked against the server's context before the first rung, on simulated
vLLM and llama.cpp servers with a short context: what the user is told, what is sent."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import orjson
import pytest

from specload import engines
from specload.runner.context_check import listed_context, listing, remote_counter
from specload.runner.health_checks import probe
from specload.traffic.prompt_sets import load_prompts
from tests.support import context_probe
from tests.support.sims import sim_in_thread
from tests.support.sweeps import read_manifest, read_trace, run_dir_of

CONTEXT = 300
MAX_TOKENS = 64


def scenario(flavor: str, policy: str) -> dict:
    return {
        "name": f"context-{flavor}-{policy}", "ladder": [3], "warmup_s": 0.5,
        "measure_s": 3, "min_requests": 6,
        "request": {"max_tokens": MAX_TOKENS, "ignore_eos": True, "over_context": policy},
        "arms": [{"name": "spec-on", "sim": {"profile": "seed-glm", "spec": "on",
                                             "flavor": flavor, "max_model_len": CONTEXT}}],
    }


@pytest.mark.parametrize(("flavor", "engine"), [("vllm", "vllm"), ("sglang", "sglang"),
                                               ("llamacpp", "llamacpp"), ("tgi", "tgi")])
def test_the_flavours_list_the_context_and_count_as_their_requests_do(flavor: str,
                                                                      engine: str) -> None:
    window = engines.get(engine).context
    prompts = load_prompts(None)[::45]
    with sim_in_thread("--profile", "seed-glm", "--flavor", flavor,
                       "--max-model-len", "2000") as url:
        body = probe(url + "/v1/models", 5).body
        assert listed_context(listing(url, window, body, None, None), window) == 2000
        count = remote_counter(url + window.count_route, None, None, None,
                               window.count_field)
        for p in prompts:
            req = {"messages": list(p.messages), "max_tokens": 1}
            answer = orjson.loads(_post(url + "/v1/chat/completions", req))
            assert count(p) == answer["usage"]["prompt_tokens"]


def _post(url: str, body: dict) -> bytes:
    req = urllib.request.Request(url, data=orjson.dumps(body), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.read()


# processes 2: a master and two workers it starts; TGI lists its context on /info and
# counts by /chat_tokenize
@pytest.mark.parametrize(("flavor", "processes"), [("vllm", 1), ("vllm", 2), ("tgi", 1)])
def test_prompts_too_long_are_left_out_of_every_request(tmp_path: Path, write_scenario,
                                                        run_sweep, flavor: str,
                                                        processes: int) -> None:
    data = {**scenario(flavor, "skip"), "processes": processes}
    res = run_sweep(str(write_scenario(data)), "--out", "out")
    assert res.returncode == 0, res.stdout + res.stderr
    said = [line for line in res.stdout.splitlines() if "exceed the server's context" in line]
    assert said and f"of {len(load_prompts(None))} prompts exceed the server's context of " \
        f"{CONTEXT} tokens with max_tokens {MAX_TOKENS}" in said[0] \
        and "left out on every arm" in said[0]
    run = tmp_path / run_dir_of(res.stdout)
    fit = read_manifest(run)["prompt_fit"]
    assert fit["context"] == CONTEXT and fit["skip"] == fit["over"] and fit["skip"]
    trace = read_trace(run / "spec-on" / "server_trace.jsonl")
    assert trace and all(r["status"] == 200 for r in trace)
    assert max(r["prompt_tokens"] for r in trace) <= CONTEXT - MAX_TOKENS


def test_trimmed_prompts_fill_the_room_and_get_their_whole_output(
        tmp_path: Path, write_scenario, run_sweep) -> None:
    res = run_sweep(str(write_scenario(scenario("llamacpp", "trim"))), "--out", "out")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "shortened to fit" in res.stdout
    run = tmp_path / run_dir_of(res.stdout)
    fit = read_manifest(run)["prompt_fit"]
    assert fit["cut"]
    # only the last message is shortened: a chat whose earlier turns alone fill the
    # room is left out instead, and said so
    prompts = load_prompts(None)
    assert all(len(prompts[i].messages) > 2 for i in fit["skip"])
    if fit["skip"]:
        assert "left out (too little of them would be left) on every arm" in res.stdout
    trace = read_trace(run / "spec-on" / "server_trace.jsonl")
    room = CONTEXT - MAX_TOKENS
    assert all(r["status"] == 200 and r["output_tokens"] == MAX_TOKENS for r in trace)
    assert max(r["prompt_tokens"] for r in trace) <= room


@pytest.mark.parametrize(("flavor", "engine"), [("vllm", "vllm"), ("llamacpp", "llamacpp")])
def test_the_flavours_meet_a_context_as_the_real_engines_do(flavor: str, engine: str) -> None:
    """The real tier runs the same probe against real vLLM and llama-server."""
    with sim_in_thread("--profile", "seed-glm", "--flavor", flavor,
                       "--max-model-len", str(CONTEXT)) as url:
        seen = context_probe.check_engine(url, engine, CONTEXT)
    assert seen["one_over"] == CONTEXT - context_probe.MAX_TOKENS + 1


@pytest.mark.slow  # three sweeps: out of the default tier's heaviest module
def test_prompts_are_not_changed_after_an_arm_ran_them_all(tmp_path: Path, write_scenario,
                                                           run_sweep) -> None:
    """The first arm's server (Ollama's flavour) cannot be checked: it ran every prompt,
    so the second one's shorter context is warned about, not fitted to."""
    data = scenario("vllm", "skip")
    unchecked = {"name": "ollama", "spec": "off",
                 "sim": {"profile": "seed-glm", "spec": "off", "flavor": "ollama"}}
    data["arms"] = [unchecked, *data["arms"]]
    res = run_sweep(str(write_scenario(data)), "--out", "out")
    said = [line for line in res.stdout.splitlines() if line.startswith("[spec-on] warning:")]
    assert len(said) == 1 and "exceed this server's context of 300 tokens" in said[0] and \
        "the prompts are not changed mid-sweep" in said[0], res.stdout
    run = tmp_path / run_dir_of(res.stdout)
    assert read_manifest(run)["prompt_fit"] is None
    statuses = {r["status"] for r in read_trace(run / "spec-on" / "server_trace.jsonl")}
    assert statuses == {200, 400}  # what was sent is what the first arm sent
