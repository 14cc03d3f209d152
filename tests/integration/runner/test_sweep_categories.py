"""C* per prompt category against the simulator's own truth.

A seed-glm variant whose drafter accepts code requests to a mean length of 4.0 (its
most at k = 3) and chat requests to 2.5 (`acceptance_by_category`, the simulator
reading each request's category off its built-in prompt) serves a half-code, half-chat
mix (`request.categories`), spec-on against spec-off. The simulator's closed loop in
virtual time, run with the same mix (`run_closed_loop(categories=...)`), gives each
category's speedup in that mix and so its crossover, about 19 for chat and 37 for code
(each category alone crosses further apart: in a mix the categories share the spec-on
server's queue). The report's C* per category must lie within ±15% of the mix's, its
acceptance per category (from each request's own counts) within 5% of the profile's,
each category's C* outside the other's 95% interval, and its verdict say that the
categories disagree, naming the mix the recommendation assumed, exactly when those
intervals do not overlap.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from specload.report.crossover import find_crossover
from specload.sim.profile import Profile, load_profile, with_acceptance_length
from specload.sim.virtual import run_closed_loop
from tests.support.sweeps import run_dir_of, run_sweep, write_scenario

pytestmark = [pytest.mark.slow, pytest.mark.long(250)]
LENGTHS = {"chat": 2.5, "code": 4.0}
# 64: a rung where code is surely behind. Its speedup's band at 32 and 48 holds 1 on a
# busy machine (two standard errors of a pace that queueing spreads), and with no rung
# clearly off above them two CI runs found code's C* inconclusive.
LADDER = [12, 16, 24, 32, 48, 64]
REPLY = 64


def _rates(length: float) -> list[float]:
    """seed-glm's rates scaled to a mean length, each below 1 (as a profile takes them)."""
    scaled = with_acceptance_length(load_profile("seed-glm"), length).speculative.acceptance
    return [min(r, 0.999) for r in scaled]


def _truth(profile: Profile, prompt_tokens: int) -> dict[str, float]:
    """Each category's crossover in the half-and-half mix, in virtual time."""
    shape = {"prompt_tokens": prompt_tokens, "output_tokens": REPLY,
             "categories": ["code", "chat"]}
    on = [run_closed_loop(profile, "on", None, c, **shape) for c in LADDER]
    off = [run_closed_loop(profile, "off", None, c, **shape) for c in LADDER]
    out = {}
    for category in LENGTHS:
        speedup = [b.e2e_s_by_category[category] / a.e2e_s_by_category[category]
                   for a, b in zip(on, off, strict=True)]
        found = find_crossover(LADDER, speedup, speedup, speedup)
        assert found.c_star is not None, (category, speedup)
        out[category] = found.c_star
    return out


def test_c_star_per_category_is_each_categorys_own(tmp_path: Path) -> None:
    rates = {c: _rates(length) for c, length in LENGTHS.items()}
    profile = tmp_path / "by-category.yaml"
    profile.write_text(yaml.safe_dump({"extends": "seed-glm", "speculative": {
        "acceptance_by_category": rates}}), encoding="utf-8")
    sim = {"profile": str(profile)}
    scenario = write_scenario(tmp_path, {
        "name": "categories", "ladder": LADDER, "warmup_s": 3, "measure_s": 16,
        "min_requests": 20, "drain_s": 5, "verify": False,
        "request": {"max_tokens": REPLY, "ignore_eos": True,
                    "categories": {"code": 0.5, "chat": 0.5}},
        "arms": [{"name": "spec-on", "sim": sim | {
                     "spec": "on", "per_request_spec_decode_metrics": "summary"}},
                 {"name": "spec-off", "sim": sim | {"spec": "off"}}]})
    done = run_sweep(tmp_path, str(scenario), "--out", "out", timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run = tmp_path / run_dir_of(done.stdout)
    (found,) = json.loads((run / "summary.json").read_text())["categories"]
    assert set(found["c_star"]) == set(LENGTHS), found["c_star"]
    assert found["mix"] == pytest.approx({"code": 0.5, "chat": 0.5}, abs=0.1)
    requests = pd.read_csv(run / "spec-on" / "locust_requests.csv")
    truths = _truth(load_profile(str(profile)), round(requests["prompt_tokens"].mean()))
    assert truths["code"] / truths["chat"] > 1.9, truths  # the 2x apart
    for category, truth in truths.items():
        c_star = found["c_star"][category]["c_star"]
        assert c_star == pytest.approx(truth, rel=0.15), (category, c_star, truth,
                                                          found["rungs"])
        # the category's own acceptance, from its requests, is what its rates give
        accept = [r["accept_len"] for r in found["rungs"] if r["category"] == category]
        assert sum(accept) / len(accept) == pytest.approx(LENGTHS[category], rel=0.05)
    # each category's C* lies outside the other's interval; the verdict calls it a
    # disagreement once the intervals do not overlap at all (single repeats of 16 s
    # windows: 95% intervals of about ±25%, 16.5-27 and 28.1-48 in one run)
    spans, c_star = found["c_star_interval"], found["c_star"]
    assert spans["code"]["lo"] > c_star["chat"]["c_star"], spans
    assert spans["chat"]["hi"] < c_star["code"]["c_star"], spans
    assert found["disagree"] == (spans["chat"]["hi"] < spans["code"]["lo"]), spans
    said = "categories disagree: code pays up to C = " in done.stdout
    assert said == found["disagree"], done.stdout[-2000:]
    assert said == ("the recommendation holds for this run's mix (" in done.stdout)
