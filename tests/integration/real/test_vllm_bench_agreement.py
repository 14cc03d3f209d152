"""specload and vLLM's own benchmark client agree, side by side on the same real server,
server and loads kept apart.

One vLLM CPU server (no speculation, prefix caching off, 8 sequences) runs on CPUs of
its own, its OpenMP threads bound to them. vLLM's `vllm bench serve` client and a
specload sweep share the other CPU and run at the same time, each at C = 4 with the same
request shape (chat, prompts of about 120 tokens from one file, each with its own output
length, 64 to 192 tokens with `ignore_eos`): the server's 8 sequences are theirs, and
continuous batching gives every sequence one token a step, so each client should see
half the server's tokens and the same TTFT and TPOT. The lengths differ so that requests
end, and their successors arrive, spread out: with one length for all, each client's
four requests stay in step from their start, and a client whose four arrive together
waits for four prefills in one step, the other for one.
Taking turns instead measures the server's drift as much as the clients (a shared
machine's server moves its pace between runs by more than 5%); side by side both see the
same server at every instant. Both are read on specload's steady measure window:
specload's own figures, and the client's from its saved per-request record (the chunks
that arrived in the window; the requests sent in it). What must hold: specload held C to
5%; output tok/s within 5%; TTFT and TPOT p50 within 10%.
"""

from __future__ import annotations

import json
import random
import statistics
import urllib.request
from pathlib import Path

import pytest

from specload.host import cpu_sets
from specload.runner import placement
from specload.runner.metrics_scrape import parse_metrics
from tests.support import vllm_bench, vllm_server
from tests.support.sweeps import read_csv, run_dir_of, run_sweep, wait_for, write_scenario

pytestmark = pytest.mark.real
PROMPTS = Path(__file__).resolve().parents[3] / "src" / "specload" / "data" / "prompts.jsonl"
SIZE = vllm_server.ModelSize(layers=4, hidden=256)
C = 4
OUTPUT_LENS = (64, 192)  # each prompt's own, drawn (seeded) between these; mean 128
PROMPT_WORDS = 80  # about 120 of the tier's tokens, chat template included
# enough for the client to outlast specload's start, warm-up and window at the fastest
# pace this server has run (about 3 of its requests a second while sharing the server)
BENCH_PROMPTS = 200
WARMUP_S, MEASURE_S = 5, 20


def _prompts(path: Path, n: int) -> Path:
    """`n` prompts of PROMPT_WORDS words drawn (seeded) from specload's own prompt set,
    each with its output length under both clients' keys (specload's `max_tokens`, the
    vLLM client's `output_tokens`)."""
    words = [w for line in PROMPTS.read_text().splitlines() for w in line.split()
             if w.isalpha()]
    rng = random.Random(0)
    lines = []
    for _ in range(n):
        out = rng.randint(*OUTPUT_LENS)
        lines.append(json.dumps({"prompt": " ".join(rng.choices(words, k=PROMPT_WORDS)),
                                 "max_tokens": out, "output_tokens": out}) + "\n")
    path.write_text("".join(lines))
    return path


def _running(url: str) -> float:
    """The server's `vllm:num_requests_running` gauge, read as the sampler reads it."""
    with urllib.request.urlopen(url + "/metrics", timeout=5) as answer:
        return parse_metrics(answer.read().decode()).get("vllm:num_requests_running", 0.0)


def _await_load(url: str, bench: vllm_bench.Run) -> None:
    """Returns once the client holds its C on the server."""
    def held() -> bool:
        if bench.proc.poll() is not None:
            pytest.fail(f"vLLM's client ended before it held {C} requests on the server")
        return _running(url) >= C

    wait_for(held, 180, f"vLLM's client to hold {C} requests on the server")


def _specload(url: str, load: frozenset[int], prompts: Path, folder: Path
              ) -> tuple[dict[str, str], dict[str, str]]:
    """One sweep of one rung at C; its summary row and its window's row."""
    scenario = write_scenario(folder, {
        "name": "agree", "ladder": [C], "warmup_s": WARMUP_S, "measure_s": MEASURE_S,
        "placement": {"load": cpu_sets.words(load)},
        "request": {"ignore_eos": True, "temperature": 0,
                    "prompts": str(prompts), "request_timeout_s": 120},
        "arms": [{"name": "plain", "spec": "off", "engine": "vllm", "url": url}]})
    done = run_sweep(folder, str(scenario), "--out", str(folder / "reports"), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    run = run_dir_of(done.stdout)
    (row,) = read_csv(run / "summary.csv")
    (window,) = read_csv(run / "plain" / "locust_rungs.csv")
    return row, window


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, float]]:
    have = placement.usable()
    if len(have) < 2:
        pytest.skip("one usable CPU: nothing to keep the server and the loads apart on")
    servers, load = cpu_sets.split_apart(have, 1)
    folder = tmp_path_factory.mktemp("vllm-agree")
    prompts = _prompts(folder / "prompts.jsonl", BENCH_PROMPTS)
    with vllm_server.running(folder / "server.log", SIZE, max_num_seqs=2 * C, cpus=servers,
                             prefix_caching=False) as url, \
            vllm_bench.running(url, vllm_server.model(SIZE), prompts, folder / "bench.json",
                               concurrency=C, prompts=BENCH_PROMPTS, output_len=-1,
                               seed=0, cpus=load) as bench:
        _await_load(url, bench)
        ours, window = _specload(url, load, prompts, folder)
        theirs = bench.requests(timeout_s=600)
    start, end = float(window["measure_start"]), float(window["measure_end"])
    assert min(r.start for r in theirs) < start and max(r.chunks[-1] for r in theirs) > end, \
        "vLLM's client ended before specload's window did: send it more prompts"
    sent = vllm_bench.requests_from(theirs, start, end)
    figures = {
        "specload": {k: float(ours[k]) for k in ("output_tok_s", "ttft_p50_ms", "tpot_p50_ms",
                                                 "achieved_concurrency", "requests")},
        "vllm": {"output_tok_s": vllm_bench.tokens_between(theirs, start, end) / (end - start),
                 "ttft_p50_ms": statistics.median(r.ttft_ms for r in sent),
                 "tpot_p50_ms": statistics.median(r.tpot_ms for r in sent),
                 "requests": len(sent)}}
    print({who: {k: round(v, 2) for k, v in f.items()} for who, f in figures.items()})
    return figures


def test_specload_holds_its_concurrency_beside_the_server(measured) -> None:
    assert measured["specload"]["achieved_concurrency"] >= 0.95 * C, measured


@pytest.mark.parametrize(("key", "within"), [
    ("output_tok_s", 0.05), ("ttft_p50_ms", 0.10), ("tpot_p50_ms", 0.10)])
def test_specload_agrees_with_vllms_client(measured, key: str, within: float) -> None:
    ours, theirs = measured["specload"][key], measured["vllm"][key]
    assert abs(ours / theirs - 1) <= within, (key, measured)
