"""sim-fit's math: a profile fitted to a sweep of a hidden profile recovers its curve."""

from __future__ import annotations

import math
from functools import partial

import pytest
import yaml

from specload.host.pools import map_jobs
from specload.sim import SimConfigError
from specload.sim.acceptance import expected_tokens_per_step
from specload.sim.curve import predict
from specload.sim.fit import (
    Observations,
    Rung,
    default_free,
    fit,
    fit_error,
    log_miss,
    nelder_mead,
    running_cap,
    scale_acceptance,
)
from specload.sim.profile import Profile, load_profile, to_yaml
from specload.sim.virtual import run_closed_loop

LADDER = [1, 4, 16, 48]
CHECK = [2, 8, 32]  # rungs the fit never saw
PROMPT, OUTPUT = 128, 48


def hidden_profile() -> Profile:
    """The base profile with its host, bandwidth and drafter numbers moved."""
    data = load_profile("h100-llama8b-eagle3").model_dump()
    data["hardware"]["eta_mem"] *= 0.8
    data["overheads"]["step_s"] *= 2.5
    data["overheads"]["per_seq_s"] *= 0.4
    data["speculative"]["draft_step_s"] *= 1.6
    data["speculative"]["draft_per_seq_s"] *= 2.0
    data["speculative"]["cpu_per_seq_s"] *= 1.5
    data["speculative"]["acceptance"] = [round(a * 0.9, 4) for a in
                                         data["speculative"]["acceptance"]]
    return Profile.model_validate(data)


def sweep(profile: Profile, ladder: list[int]) -> dict[str, list[float]]:
    return {mode: [p.output_tok_s for p in predict(profile, mode, None, ladder,  # type: ignore[arg-type]
                                                   prompt_tokens=PROMPT,
                                                   output_tokens=OUTPUT)]
            for mode in ("on", "off")}


@pytest.mark.slow  # 150 virtual-time sweeps: about 20 s
def test_fit_recovers_a_hidden_profiles_curve_within_5_percent() -> None:
    hidden = hidden_profile()
    k = hidden.speculative.k
    accept = expected_tokens_per_step(hidden.speculative.acceptance, k)
    measured = sweep(hidden, LADDER)
    rungs = tuple(Rung(mode, c, tok_s, accept_len=accept if mode == "on" else None)  # type: ignore[arg-type]
                  for mode in ("on", "off") for c, tok_s in zip(LADDER, measured[mode],
                                                                 strict=True))
    result = fit(load_profile("h100-llama8b-eagle3"), Observations(rungs, PROMPT, OUTPUT),
                 max_evals=150)
    assert max(abs(r.rel) for r in result.residuals) < 0.05, result.residuals
    got, want = sweep(result.profile, CHECK), sweep(hidden, CHECK)
    for mode in ("on", "off"):
        for c, g, w in zip(CHECK, got[mode], want[mode], strict=True):
            assert g == pytest.approx(w, rel=0.05), (mode, c)
    assert result.origins["speculative.acceptance"].startswith("measured")
    assert result.origins["overheads.step_s"] == "fitted"
    fitted_accept = expected_tokens_per_step(result.profile.speculative.acceptance, k)
    assert fitted_accept == pytest.approx(accept, abs=0.01)


def test_a_rung_whose_repeats_disagree_counts_for_less() -> None:
    """One rung measured far off (a busy moment in one repeat) pulls an unweighted fit off
    the rungs whose repeats agree; weighted by the repeats' spread it hardly moves them."""
    base = load_profile("cpu2-gemma3-270m-ngram")
    true = sweep(base, [1, 4, 16])["off"]
    measured = [true[0], true[1], true[2] * 0.7]

    def clean_error(spreads: list[float | None]) -> float:
        rungs = tuple(Rung("off", c, tok_s, spread=s) for c, tok_s, s in
                      zip([1, 4, 16], measured, spreads, strict=True))
        result = fit(base, Observations(rungs, PROMPT, OUTPUT), ["overheads.step_s"],
                     max_evals=30)
        return max(abs(r.rel) for r in result.residuals[:2])

    unweighted, weighted = clean_error([None] * 3), clean_error([0.01, 0.01, 0.4])
    assert weighted < 0.03 < unweighted, (weighted, unweighted)


def test_a_cost_the_base_lacks_is_found_where_requests_waited() -> None:
    """A server whose steps slow while requests wait past its slots (llama-server's): the
    base profile has no such cost, the fit frees it because the top rung ran fewer than C,
    and its coarse scan finds it from zero."""
    base = load_profile("cpu2-gemma3-270m-ngram")
    data = base.model_dump()
    data["unexplained"]["waiting_share"] = 0.02
    hidden = Profile.model_validate(data)
    ladder = [4, 8, 16]
    measured = sweep(hidden, ladder)["off"]
    rungs = tuple(Rung("off", c, tok_s, running=min(c, 8.0))
                  for c, tok_s in zip(ladder, measured, strict=True))
    obs = Observations(rungs, PROMPT, OUTPUT)
    assert "unexplained.waiting_share" in default_free(base, obs)
    result = fit(base, obs, ["unexplained.waiting_share"], max_evals=25)
    assert max(abs(r.rel) for r in result.residuals) < 0.02, result.residuals
    assert result.profile.unexplained.waiting_share == pytest.approx(0.02, rel=0.2)


@pytest.mark.parametrize("tiles", [4, 0])
def test_the_fit_keeps_tiled_kernels_only_where_the_sweep_shows_them(tiles: int) -> None:
    """A sweep of a server whose C = 2 costs two of C = 1 (tiled kernels on a
    memory-bound CPU) keeps the tiles; one that scales as a plain roofline drops them."""
    base = load_profile("cpu2-gemma3-270m-ngram")
    hidden = base.model_copy(update={"hardware": base.hardware.model_copy(
        update={"compute_tile_tokens": tiles})})
    ladder = [1, 2, 4, 8]
    measured = sweep(hidden, ladder)["off"]
    rungs = tuple(Rung("off", c, tok_s) for c, tok_s in zip(ladder, measured, strict=True))
    result = fit(base, Observations(rungs, PROMPT, OUTPUT), ["overheads.step_s"],
                 max_evals=20)
    assert result.profile.hardware.compute_tile_tokens == tiles
    assert any(n.startswith("kernels taking tokens in tiles of 4: "
                            + ("kept" if tiles else "dropped")) for n in result.notes)


def test_the_twins_speedup_is_set_beside_the_sweeps() -> None:
    """Each concurrency both arms measured gets the twin's speedup beside the sweep's (its
    arms' fitted tok/s); one whose spec-off rung was not measured has none."""
    rungs = (Rung("on", 1, 40.0), Rung("off", 1, 30.0), Rung("on", 4, 80.0))
    obs = Observations(rungs, 32, 48, 4)
    result = fit(load_profile("cpu2-gemma3-270m-ngram"), obs, ["overheads.step_s"],
                 max_evals=10)
    on, off = result.residuals[0].predicted, result.residuals[1].predicted
    assert [(r.mode, r.users, r.observed) for r in result.speedups] == [(None, 1, 40 / 30)]
    assert result.speedups[0].predicted == pytest.approx(on / off)


def test_acceptance_is_scaled_to_the_measured_length() -> None:
    rates = [0.8, 0.7, 0.6]
    scaled = scale_acceptance(rates, 2, 2.0)
    assert expected_tokens_per_step(scaled, 2) == pytest.approx(2.0, abs=1e-3)
    assert scaled[0] / scaled[1] == pytest.approx(rates[0] / rates[1], rel=1e-3)
    with pytest.raises(SimConfigError, match="impossible"):
        scale_acceptance(rates, 2, 3.5)


def test_a_run_drafting_more_tokens_than_the_base_profile_knows_is_fitted() -> None:
    # a k = 8 run on the k = 4 CPU base profile once failed ("must be 1..4")
    base = load_profile("cpu2-gemma3-270m-ngram")
    scaled = scale_acceptance(base.speculative.acceptance, 8, 5.0)
    assert len(scaled) == 8 and expected_tokens_per_step(scaled, 8) == pytest.approx(5.0,
                                                                                     abs=1e-3)
    rungs = (Rung("on", 1, 40.0, accept_len=5.0), Rung("off", 1, 33.0))
    result = fit(base, Observations(rungs, 32, 48, 8), max_evals=20)
    assert result.profile.speculative.k == 8
    assert result.origins["speculative.k"] == "measured (the run's draft length)"


def test_running_cap_needs_a_flat_count_below_c() -> None:
    capped = [Rung("on", 10, 1.0, running=9.8), Rung("on", 30, 1.0, running=16.0),
              Rung("on", 100, 1.0, running=16.2)]
    assert running_cap(capped) == 16
    growing = [Rung("off", 30, 1.0, running=29.5), Rung("off", 100, 1.0, running=43.0)]
    assert running_cap(growing) is None
    assert running_cap([Rung("off", 30, 1.0)]) is None


def test_nelder_mead_finds_a_quadratics_minimum() -> None:
    x, fx, evals = nelder_mead(lambda v: (v[0] - 0.3) ** 2 + (v[1] + 0.2) ** 2 + 1.0,
                               [0.0, 0.0], 0.1, 500, tol=1e-12)
    assert x == pytest.approx([0.3, -0.2], abs=1e-4) and fx == pytest.approx(1.0)
    assert evals <= 500


def test_unknown_free_parameter_is_an_error() -> None:
    obs = Observations((Rung("off", 1, 100.0),), PROMPT, OUTPUT)
    with pytest.raises(SimConfigError, match=r"cannot fit model\.name"):
        fit(load_profile("h100-llama8b-eagle3"), obs, ["model.name"])


def test_yaml_round_trip_keeps_values_and_origins() -> None:
    p = load_profile("seed-glm")
    p = p.model_copy(update={"origins": {"overheads.step_s": "fitted",
                                         "hardware.mem_bandwidth_gbs": "datasheet"}})
    text = to_yaml(p, ["a header"])
    assert text.startswith("# a header\n")
    assert "  step_s: " in text and "# fitted" in text
    assert Profile.model_validate(yaml.safe_load(text)) == p
    with pytest.raises(ValueError, match="unknown parameters"):
        Profile.model_validate({**yaml.safe_load(text), "origins": {"overheads.nope": "x"}})


def test_a_compute_bound_base_frees_its_flop_rate() -> None:
    """On a CPU a verify step computes longer than it reads: the FLOP rate and its ramp
    are what the data shows; a GPU profile's stay put."""
    obs = Observations((Rung("on", 1, 50.0), Rung("off", 1, 30.0)), 32, 48, k=4)
    assert {"hardware.eta_compute", "hardware.compute_ramp_tokens"} <= set(
        default_free(load_profile("cpu2-gemma3-270m-ngram"), obs))
    assert "hardware.eta_compute" not in default_free(load_profile("h100-llama8b-eagle3"), obs)


def test_the_fit_error_leans_towards_the_worst_rung() -> None:
    """A twin is judged by its worst rung: one rung 10% off and nine 2% off lose to all
    ten 5% off, which least squares (the norm 2) would not prefer."""
    observed, weights = [100.0] * 10, [1.0] * 10
    spike, flat = [110.0] + [102.0] * 9, [105.0] * 10
    assert fit_error(flat, observed, weights) < fit_error(spike, observed, weights)

    def squares(predicted: list[float]) -> float:
        return sum(math.log(p / o) ** 2 for p, o in zip(predicted, observed, strict=True))

    assert squares(spike) < squares(flat)
    # in the units of a mean squared log error: one rung off by e, alone, gives e^2
    assert fit_error([110.0], [100.0], [1.0]) == pytest.approx(math.log(1.1) ** 2)


def test_a_rung_measured_as_a_range_counts_only_what_falls_outside_it() -> None:
    assert log_miss(95.0, 80.0, (70.0, 100.0)) == 0.0
    assert log_miss(110.0, 80.0, (70.0, 100.0)) == pytest.approx(math.log(1.1))
    assert log_miss(63.0, 80.0, (70.0, 100.0)) == pytest.approx(math.log(70 / 63))
    assert fit_error([95.0, 110.0], [80.0, 100.0], [1.0, 1.0], [(70.0, 100.0), None]
                     ) == pytest.approx((math.log(1.1) ** 4 / 2) ** 0.5)


def test_the_tiled_and_untiled_fits_give_the_same_answer_in_two_processes() -> None:
    # the CPU base takes tokens in tiles, so `fit` runs two independent fits
    base = load_profile("cpu2-gemma3-270m-ngram")
    assert base.hardware.compute_tile_tokens
    rungs = (Rung("on", 1, 40.0, accept_len=4.0), Rung("off", 1, 33.0),
             Rung("on", 8, 90.0, accept_len=4.0), Rung("off", 8, 120.0))
    obs = Observations(rungs, 32, 48)
    alone = fit(base, obs, max_evals=12)
    shared = fit(base, obs, max_evals=12, map_jobs=partial(map_jobs, processes=2))
    assert shared.profile == alone.profile and shared.residuals == alone.residuals
    assert shared.notes == alone.notes and shared.evaluations == alone.evaluations


def test_the_fit_keeps_the_twins_speedup_inside_the_repeats_range() -> None:
    """Each arm measured as a wide range leaves the speedup the play of both: fitted to
    the arms alone the twin stays at the base profile, whose speedup is outside what the
    repeats measured; charged for the speedups' ranges too, it lands inside them."""
    base = load_profile("cpu2-gemma3-270m-ngram")
    data = base.model_dump()
    data["speculative"]["cpu_per_seq_s"] = 3 * base.speculative.cpu_per_seq_s + 2e-3
    hidden = Profile.model_validate(data)
    ladder = [1, 2, 4]
    measured, plain = sweep(hidden, ladder), sweep(base, ladder)
    rungs = tuple(Rung(mode, c, tok_s, within=(tok_s * 0.88, tok_s * 1.12))  # type: ignore[arg-type]
                  for mode in ("on", "off")
                  for c, tok_s in zip(ladder, measured[mode], strict=True))
    truth = {c: on / off for c, on, off in zip(ladder, measured["on"], measured["off"],
                                               strict=True)}
    ranges = {c: (s * 0.99, s * 1.01) for c, s in truth.items()}
    assert any(not lo <= on / off <= hi for (lo, hi), on, off in zip(
        ranges.values(), plain["on"], plain["off"], strict=True)), "the test needs play"
    free = ["speculative.cpu_per_seq_s"]
    alone = fit(base, Observations(rungs, PROMPT, OUTPUT), free, max_evals=16)
    paired = fit(base, Observations(rungs, PROMPT, OUTPUT, speedup_within=ranges), free,
                 max_evals=16)
    for result in (alone, paired):
        assert all(r.within[0] * 0.99 <= x.predicted <= r.within[1] * 1.01  # type: ignore[index]
                   for r, x in zip(rungs, result.residuals, strict=True)), result.residuals
    outside = [s.users for s in alone.speedups
               if not ranges[s.users][0] <= s.predicted <= ranges[s.users][1]]
    assert outside, alone.speedups
    assert all(ranges[s.users][0] * 0.98 <= s.predicted <= ranges[s.users][1] * 1.02
               for s in paired.speedups), paired.speedups


def test_the_twin_yields_each_rungs_acceptance_where_it_moves_with_the_batch() -> None:
    """An engine whose drafts are accepted further at a batch of two (llama-server's
    n-gram drafts at C = 2): the twin takes each rung's measured acceptance length at the
    batch its server ran, corrected for the steps of a rung that verify fewer requests,
    so its closed loop yields every rung's length and tok/s, not the run's mean."""
    base = load_profile("cpu2-gemma3-270m-ngram")
    k, rates = base.speculative.k, base.speculative.acceptance
    data = base.model_dump()
    data["speculative"]["acceptance_by_batch"] = {
        b: scale_acceptance(rates, k, length) for b, length in {1: 4.0, 2: 4.7, 4: 3.6}.items()}
    hidden = Profile.model_validate(data)
    ladder = [1, 2, 4, 8]
    rungs = []
    for mode in ("on", "off"):
        for c in ladder:
            point = run_closed_loop(hidden, mode, k if mode == "on" else None, c,  # type: ignore[arg-type]
                                    prompt_tokens=32, output_tokens=48)
            rungs.append(Rung(mode, c, point.output_tok_s, running=point.mean_batch,  # type: ignore[arg-type]
                              accept_len=point.accept_len if mode == "on" else None))
    result = fit(base, Observations(tuple(rungs), 32, 48, k), [], max_evals=1)
    assert {1, 2, 4} <= set(result.profile.speculative.acceptance_by_batch)
    assert result.origins["speculative.acceptance_by_batch"].startswith("measured")
    for rung in rungs[:len(ladder)]:
        twin = run_closed_loop(result.profile, "on", k, rung.users, prompt_tokens=32,
                               output_tokens=48)
        assert twin.accept_len == pytest.approx(rung.accept_len, rel=0.02), rung
        assert twin.output_tok_s == pytest.approx(rung.output_tok_s, rel=0.03), rung
