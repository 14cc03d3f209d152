"""sim-fit's glue: a run's summary becomes observations, the fitted profile a YAML file."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from specload.errors import UserError
from specload.fit_run import (
    _speedup_ranges,
    fitted_profile,
    mean_observations,
    observations,
    residual_table,
)
from specload.report.render import Report
from specload.report.run_files import ArmSource, RepSource, RunSource
from specload.sim.fit import FitResult, Observations, Residual, Rung, speedup_pairs
from specload.sim.profile import load_profile, parameter_paths


def report_of(tmp_path: Path, rows: list[dict[str, object]], prompts: list[int],
              per_rep: pd.DataFrame | None = None) -> Report:
    arms = []
    for name, role, k in (("spec-on", "spec_on", 3), ("spec-off", "spec_off", None)):
        prefix = tmp_path / name / "locust"
        prefix.parent.mkdir()
        pd.DataFrame({"prompt_tokens": prompts}).to_csv(f"{prefix}_requests.csv", index=False)
        arms.append(ArmSource(name, role, k=k, reps=[RepSource(1, prefix)]))
    arms.append(ArmSource("adaptive", "other", reps=[]))
    return Report(RunSource(tmp_path, arms), pd.DataFrame() if per_rep is None else per_rep,
                  pd.DataFrame(rows), [], [], [])


ROWS = [
    {"arm": "spec-on", "concurrency": 1, "output_tok_s": 80.0, "server_running_mean": 1.0,
     "accept_len_mean": 2.6, "output_tokens_mean": 256.0},
    {"arm": "spec-on", "concurrency": 30, "output_tok_s": 250.0, "server_running_mean": 16.0,
     "accept_len_mean": 2.8, "output_tokens_mean": 256.0},
    {"arm": "spec-off", "concurrency": 1, "output_tok_s": 50.0, "server_running_mean": math.nan,
     "accept_len_mean": math.nan, "output_tokens_mean": 256.0},
    {"arm": "spec-off", "concurrency": 30, "output_tok_s": 0.0, "server_running_mean": 29.0,
     "accept_len_mean": math.nan, "output_tokens_mean": 256.0},
    {"arm": "adaptive", "concurrency": 1, "output_tok_s": 70.0},
]


def test_summary_rows_become_rungs_with_the_runs_workload(tmp_path: Path) -> None:
    obs, notes = observations(report_of(tmp_path, ROWS, [100, 120, 140]))
    assert (obs.prompt_tokens, obs.output_tokens, obs.k) == (120, 256, 3)
    assert [(r.mode, r.users, r.output_tok_s) for r in obs.rungs] == [
        ("on", 1, 80.0), ("on", 30, 250.0), ("off", 1, 50.0)]
    assert obs.rungs[1].running == 16.0 and obs.rungs[1].accept_len == 2.8
    assert obs.rungs[2].running is None and obs.rungs[2].accept_len is None
    assert any("adaptive" in n for n in notes) and any("C=30" in n for n in notes)


def test_workload_overrides_and_missing_prompt_counts(tmp_path: Path) -> None:
    report = report_of(tmp_path, ROWS, [])
    with pytest.raises(UserError, match="--prompt-tokens"):
        observations(report)
    obs, _ = observations(report, prompt_tokens=500, output_tokens=64)
    assert (obs.prompt_tokens, obs.output_tokens) == (500, 64)


def test_fitted_profile_names_an_origin_for_every_parameter(tmp_path: Path) -> None:
    obs, _ = observations(report_of(tmp_path, ROWS, [100]))
    base = load_profile("seed-glm")
    result = FitResult(base, {"overheads.step_s": "fitted"},
                       [Residual("on", 1, 80.0, 81.0)], 10)
    profile = fitted_profile(result, obs, "seed-glm")
    assert set(profile.origins) == set(parameter_paths())
    assert profile.origins["overheads.step_s"] == "fitted"
    assert profile.origins["hardware.tflops"] == "base profile seed-glm"
    assert profile.workload.prompt_tokens == 100


def test_a_command_arm_without_k_fits_the_draft_length_its_command_gives(tmp_path: Path
                                                                         ) -> None:
    report = report_of(tmp_path, ROWS, [100])
    on = report.source.arms[0]
    on.k = None
    on.command = ("llama-server -m m.gguf -np 8 --spec-type ngram-simple "
                  "--spec-draft-n-max 4 --spec-synth-len 4.6")
    obs, _ = observations(report)
    assert obs.k == 4


def test_repeated_runs_are_fitted_by_each_rungs_mean() -> None:
    a = Observations((Rung("on", 1, 50.0, 1.0, 4.5), Rung("off", 1, 30.0),
                      Rung("off", 8, 70.0, 8.0)), 32, 48, 4)
    b = Observations((Rung("on", 1, 60.0, 0.9, 4.7), Rung("off", 1, 34.0)), 32, 48, 4)
    mean = mean_observations([a, b])
    assert mean.rungs == (Rung("on", 1, 55.0, 0.95, pytest.approx(4.6),
                               pytest.approx(math.log(60 / 50) / math.sqrt(2))),
                          Rung("off", 1, 32.0, spread=pytest.approx(math.log(34 / 30)
                                                                    / math.sqrt(2))),
                          Rung("off", 8, 70.0, 8.0))
    assert (mean.prompt_tokens, mean.output_tokens, mean.k) == (32, 48, 4)
    with pytest.raises(UserError, match="differ in prompt or output length"):
        mean_observations([a, Observations(b.rungs, 128, 48, 4)])


def test_a_rungs_repeats_fit_anywhere_between_them(tmp_path: Path) -> None:
    """Repeats within one run: the fit takes the range they span (which one a busy moment
    slowed cannot be told: in one real sweep one of three repeats of a rung ran at 17 tok/s
    and the others at 60 and 62), through `mean_observations` too; a rung measured once
    has none."""
    per_rep = pd.DataFrame({"arm": ["spec-on", "spec-on", "spec-on", "spec-off"],
                            "concurrency": [1, 1, 1, 1], "rep": [1, 2, 3, 1],
                            "output_tok_s": [72.0, 88.0, 17.0, 50.0]})
    obs, _ = observations(report_of(tmp_path, ROWS, [100], per_rep))
    on1, _, off1 = mean_observations([obs]).rungs
    assert (on1.within, on1.spread) == ((17.0, 88.0), None)
    assert off1.within is None and off1.spread is None


def test_each_repeats_speedup_pairs_its_own_arms(tmp_path: Path) -> None:
    """The speedup's range is over the repeats' own ratios (rep 1's spec-on over rep 1's
    spec-off), not the arms' extremes crossed; a concurrency with one repeat of either arm
    has none, and a fit of several runs' means drops them."""
    per_rep = pd.DataFrame({
        "arm": ["spec-on"] * 3 + ["spec-off"] * 3,
        "rep": [1, 2, 1] * 2, "concurrency": [1, 1, 30] * 2,
        "output_tok_s": [60.0, 80.0, 250.0, 50.0, 64.0, 260.0]})
    obs, _ = observations(report_of(tmp_path, ROWS, [100], per_rep))
    assert obs.speedup_within == {1: (1.2, 1.25)}
    assert mean_observations([obs]).speedup_within == {1: (1.2, 1.25)}
    assert mean_observations([obs, obs]).speedup_within == {}
    rates = per_rep.assign(concurrency=16)  # open-loop rungs share their pool's size
    assert _speedup_ranges(rates, {"spec-on": "on", "spec-off": "off"}) == {}


def test_the_residual_table_prints_the_speedup_under_the_arms() -> None:
    result = FitResult(load_profile("seed-glm"), {}, [Residual("on", 1, 80.0, 81.0)], 10,
                       speedups=[Residual(None, 1, 1.6, 1.52)])
    assert residual_table(result).splitlines()[-1].split() == ["speedup", "1", "1.600",
                                                               "1.520", "-5.0%"]


def test_several_spec_on_arms_have_no_one_speedup() -> None:
    obs = Observations((Rung("on", 1, 50.0), Rung("on", 1, 60.0), Rung("off", 1, 30.0),
                        Rung("on", 4, 90.0), Rung("off", 4, 80.0)), 32, 48, 4)
    assert speedup_pairs(obs) == [(4, 3, 4)]
