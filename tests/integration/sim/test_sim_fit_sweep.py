"""`specload sim-fit` on a real sweep of the simulator serving a hidden profile.

The unit test (tests/unit/sim/test_sim_fit.py) recovers a hidden profile from noise-free
virtual-time curves within 5%; this one runs the whole path a user runs: a sweep of
two simulated arms, the report package reading it, the fit, the YAML written and read
back. Measured windows are short and carry a few percent of noise, so the fitted curve
must land within 8% of the hidden one.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from specload.sim.curve import predict
from specload.sim.profile import load_profile, to_yaml
from tests.support.sweeps import run_dir_of

BASE = "h100-llama8b-eagle3"
LADDER = [1, 4, 16]
MAX_TOKENS = 64


@pytest.mark.slow
def test_sim_fit_stands_in_for_the_swept_server(tmp_path: Path, write_scenario,
                                               run_sweep) -> None:
    data = load_profile(BASE).model_dump()
    data["hardware"]["eta_mem"] *= 0.8
    data["overheads"]["step_s"] *= 2
    data["speculative"]["draft_step_s"] *= 1.5
    hidden = tmp_path / "hidden.yaml"
    hidden.write_text(to_yaml(load_profile(BASE).model_validate(data)))
    scenario = write_scenario({
        "name": "fit", "ladder": LADDER, "warmup_s": 1.5, "measure_s": 4,
        "request": {"max_tokens": MAX_TOKENS, "ignore_eos": True, "temperature": 0},
        "arms": [{"name": "spec-on", "sim": {"profile": str(hidden), "spec": "on"}},
                 {"name": "spec-off", "sim": {"profile": str(hidden), "spec": "off"}}],
    })
    res = run_sweep(str(scenario), "--out", "out", timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    fitted = tmp_path / "fitted.yaml"
    fit = subprocess.run(
        [sys.executable, "-m", "specload.cli", "sim-fit", str(tmp_path / run_dir_of(res.stdout)),
         "--out", str(fitted), "--base", BASE, "--max-evals", "150"],
        capture_output=True, text=True, timeout=600, check=False)
    assert fit.returncode == 0, fit.stdout + fit.stderr
    assert "residual per rung" in fit.stdout and f"--profile {fitted}" in fit.stdout
    origins = yaml.safe_load(fitted.read_text())["origins"]
    assert origins["overheads.step_s"] == "fitted"
    assert origins["speculative.acceptance"].startswith("measured")
    profile = load_profile(str(fitted))
    prompt = profile.workload.prompt_tokens
    for mode in ("on", "off"):
        got = predict(profile, mode, None, LADDER, prompt_tokens=prompt,  # type: ignore[arg-type]
                      output_tokens=MAX_TOKENS)
        want = predict(load_profile(str(hidden)), mode, None, LADDER,  # type: ignore[arg-type]
                       prompt_tokens=prompt, output_tokens=MAX_TOKENS)
        for g, w in zip(got, want, strict=True):
            assert g.output_tok_s == pytest.approx(w.output_tok_s, rel=0.08), (mode, g.users)
