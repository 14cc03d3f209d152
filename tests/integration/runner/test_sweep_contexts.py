"""A sweep over two contexts on simulated servers: each arm sends its own prompt length,
pairs form per context, and the report maps the speedup over context x C.

Checked: every request each arm's server received (its trace) carried that arm's
context (the chat template adds a few tokens); summary.json pairs only arms of one
context; each context's speedup at each rung is the simulator's own (`sim-curve`'s
steady state for that prompt length) within what short windows on two busy cores hold;
the context map, its sentence, the heat map and `recommended/context-grid/` are there,
and vLLM's file is the batch-size schedule (no release takes the grid yet).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specload.engines import vllm
from specload.report import context_grid
from specload.sim.profile import load_profile
from specload.sim.virtual import run_closed_loop
from specload.traffic.shapes import LengthSpec
from tests.support.sweeps import run_dir_of, run_sweep, write_scenario

pytestmark = [pytest.mark.slow, pytest.mark.long(120)]
# replies of varied length: replies of one length march in lockstep, and where a wave's
# prefills fall in a short window would move its tok/s (measurement.md, the acceptance map)
PROFILE, CONTEXTS, LADDER, REPLY = "h100-llama8b-eagle3", [256, 4096], [4, 16], "uniform:32:96"
TEMPLATE_TOKENS = 16  # what the simulator's chat template adds to a prompt
SPEEDUP_SLACK = 0.12  # 5 s windows of a few dozen requests on two busy cores


def _truth(context: int, c: int) -> float:
    profile = load_profile(PROFILE)
    on, off = (run_closed_loop(profile, mode, None, c, prompt_tokens=context,
                               output_tokens=LengthSpec.parse(REPLY).sample).output_tok_s
               for mode in ("on", "off"))
    return on / off


def test_each_context_runs_its_own_pair_and_the_report_maps_them(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path, {
        "name": "contexts", "ladder": LADDER, "warmup_s": 2, "measure_s": 5,
        "min_requests": 8, "drain_s": 2, "contexts": CONTEXTS,
        "request": {"output_tokens": REPLY, "ignore_eos": True, "temperature": 0},
        "arms": [{"name": "on", "sim": {"profile": PROFILE, "spec": "on"}},
                 {"name": "off", "sim": {"profile": PROFILE, "spec": "off"}}]})
    done = run_sweep(tmp_path, str(scenario), "--out", "out", timeout=400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run = tmp_path / run_dir_of(done.stdout)
    for arm in ("on", "off"):
        for ctx in CONTEXTS:
            lines = (run / f"{arm}-ctx{ctx}" / "server_trace.jsonl").read_text().splitlines()
            sent = {json.loads(line)["prompt_tokens"] for line in lines}
            assert sent and all(ctx <= n <= ctx + TEMPLATE_TOKENS for n in sent), (arm, sent)
    found = json.loads((run / "summary.json").read_text())
    assert {(p["spec_on"], p["spec_off"]) for p in found["pairs"]} == {
        (f"on-ctx{c}", f"off-ctx{c}") for c in CONTEXTS}
    cmap = found["context_map"]
    assert cmap["contexts"] == [str(c) for c in CONTEXTS]
    assert cmap["concurrency"] == LADDER and cmap["sentence"].startswith("speculation pays")
    for ctx, row in zip(CONTEXTS, cmap["speedup"], strict=True):
        for c, got in zip(LADDER, row, strict=True):
            assert got == pytest.approx(_truth(ctx, c), rel=SPEEDUP_SLACK), (ctx, c, got)
    grid = run / "recommended" / context_grid.GRID_FOLDER
    assert sorted(p.name for p in grid.iterdir()) == sorted(context_grid.FILES)
    config = json.loads((grid / vllm.VLLM_FILE).read_text())
    assert "speculative_token_schedule" not in config
    cells = json.loads((grid / context_grid.GRID_FILE).read_text())["cells"]
    assert {c[2] for c in cells} == {0, 1024}  # split at sqrt(256 x 4096)
    page = (run / "report.html").read_text()
    assert "Speedup by context length and C" in page
    assert "by context length: speculation pays" in done.stdout
