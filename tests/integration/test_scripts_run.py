"""Every script under scripts/ still runs: a rename can no longer break one unseen.

Each Python script answers `--help` with its usage (which imports everything it
imports at the top); the data generators, run for real into a temporary file, write
exactly the data the package ships; each shell script parses (`bash -n`); the load
generator benchmark's floor client (`scripts/loadgen_floor/locustfile.py`, a locustfile,
not a script) streams from the simulator for a few seconds. Their long passes have tests
of their own (the soak, the report benchmark, the setup scripts).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import specload

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
DATA = Path(specload.__file__).resolve().parent / "data"


def _run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=REPO)


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.glob("*.py")))
def test_each_python_script_answers_help(script: str) -> None:
    res = _run(sys.executable, str(SCRIPTS / script), "--help")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"usage: {script}"), res.stdout[:300]


@pytest.mark.parametrize(("script", "data"), [("gen_prompts.py", "prompts.jsonl"),
                                              ("gen_conversations.py", "conversations.jsonl")])
def test_the_data_generators_write_what_the_package_ships(script: str, data: str,
                                                          tmp_path: Path) -> None:
    out = tmp_path / data
    res = _run(sys.executable, str(SCRIPTS / script), "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert out.read_bytes() == (DATA / data).read_bytes()


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.glob("*.sh")))
def test_each_shell_script_parses(script: str) -> None:
    res = _run("bash", "-n", str(SCRIPTS / script))
    assert res.returncode == 0, res.stderr


def test_the_loadgen_floor_streams_and_records(sim_server, locust_run) -> None:
    """`bench_loadgen.py --floor`'s locustfile still runs as Locust users: each request
    streams to its end on a reused connection and leaves a record, its reads as chunks
    and its `--max-tokens` as its tokens."""
    sim = sim_server()
    run = locust_run("../scripts/loadgen_floor/locustfile.py", sim.url, users=4,
                     run_time="4s", extra=["--max-tokens", "16", "--ignore-eos"])
    assert run.returncode == 0, run.output[-3000:]
    done = [r for r in run.requests() if r["interrupted"] == "0"]
    traced = {t["request_id"]: t for t in sim.read_trace()}
    assert len(done) >= 8
    for r in done:
        assert r["error_kind"] == "" and r["output_tokens"] == "16", r
        # the usage chunk, `[DONE]` and the body's end may each come in a read of its own
        assert 1 <= int(r["num_chunks"]) <= len(traced[r["request_id"]]["chunks"]) + 3
    assert run.summary()[("POST", "/v1/chat/completions")][:2] == (len(done), 0)


@pytest.mark.parametrize("client", ["aiohttp", "aiohttp-any"])
def test_the_aiohttp_reference_reads_every_token(client: str, sim_server, tmp_path: Path
                                                 ) -> None:
    """`bench_loadgen.py`'s reference clients, each reading its own way, time every chunk
    of every request it finishes, as the simulator's trace has them: a first chunk and
    one gap per chunk after it."""
    sim = sim_server()
    out = tmp_path / "reference.jsonl"
    res = _run(sys.executable, str(SCRIPTS / "bench_loadgen.py"), "--reference", sim.url,
               "4", "3", "16", str(out), client)
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) >= 4
    traced = {t["request_id"]: t["chunks"] for t in sim.read_trace()}
    for r in rows:
        chunks = traced[r["request_id"]]
        assert sum(n for _, n in chunks) == r["output_len"] == 16
        assert (1 + len(r["itl"]), r["ttft"] > 0) == (len(chunks), True), r


def _prints_both_ways(script: str, args: list[str], head: str, labels: list[str]) -> None:
    """A two-way benchmark prints its head line, then a positive figure for each label."""
    res = _run(sys.executable, str(SCRIPTS / script), *args)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith(head)
    assert [line.split(":")[0] for line in lines[1:]] == labels
    assert all(float(line.split(": ")[1].split()[0].rstrip("x")) > 0 for line in lines[1:])


def test_the_reader_benchmark_reads_both_ways() -> None:
    """`bench_reader.py` streams its blocks both ways and prints their costs and ratio."""
    _prints_both_ways("bench_reader.py", ["--blocks", "2", "--chunks", "50"],
                      "# bench_reader: 2 blocks each way of 50 chunks",
                      ["whole chunks past the parser", "every read through the parser",
                       "ratio (median of the blocks' pairs)"])


def test_the_metrics_parse_benchmark_times_both_ways() -> None:
    """`bench_metrics_parse.py` parses the recorded vLLM /metrics both ways, alike."""
    _prints_both_ways("bench_metrics_parse.py", ["--rounds", "2", "--samples", "2"],
                      "# bench_metrics_parse: 2 rounds each way of 2 samples",
                      ["kept lines only", "every family", "ratio (median of the rounds' pairs)"])
