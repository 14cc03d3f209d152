"""The recommendation: bounds in batch size, per-engine settings, and honest verdict words."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import pandas as pd
import pytest

from specload.engines.schedule import BATCH_SIZE_CEILING, K_PLACEHOLDER, Tier
from specload.engines.spec_command import parse_command
from specload.engines.vllm import VLLM_FILE
from specload.report import crossover as cx
from specload.report import recommend as rec
from specload.report import recommend_text as rt
from specload.report.run_files import ArmSource
from specload.report.slo import SloTarget

CS = (1, 10, 30, 100)
VLLM_CMD = ("vllm serve m --speculative-config '{\"method\": \"eagle3\", \"model\": \"d\", "
            "\"num_speculative_tokens\": 3}'")


def _pair(speedups: Sequence[float], batches: Sequence[float] | None = None,
          cs: Sequence[int] = CS, k: int | None = 3, slo: SloTarget | None = None,
          ttft_on: Sequence[float] | None = None,
          batches_off: Sequence[float] | None = None) -> cx.PairResult:
    rows = []
    for i, (c, s) in enumerate(zip(cs, speedups, strict=True)):
        rows.append({"arm": "on", "concurrency": c, "output_tok_s": 100.0 * c * s,
                     "server_running_mean": batches[i] if batches else float("nan"),
                     "ttft_p99_ms": ttft_on[i] if ttft_on else 100.0})
        rows.append({"arm": "off", "concurrency": c, "output_tok_s": 100.0 * c,
                     "server_running_mean": (batches_off[i] if batches_off else float(c))
                     if batches else float("nan"),
                     "ttft_p99_ms": 100.0})
    summary = pd.DataFrame(rows)
    per_rep = summary[["arm", "concurrency", "output_tok_s"]].assign(rep=1)
    return cx.analyse_pair(ArmSource("on", "spec_on", k=k), ArmSource("off", "spec_off"),
                           summary, per_rep, slo)


def _recommend(pair: cx.PairResult, engine: str | None = None,
               command: str | None = VLLM_CMD) -> rt.Recommendation:
    decision = rec.recommend(pair, rec.ArmSetup(engine, "command", parse_command(command)))
    return rt.recommendation(decision, "on vs off")


def test_bound_is_a_batch_size_mapped_through_the_spec_on_server() -> None:
    got = _recommend(_pair([1.5, 1.2, 0.8, 0.6], batches=[1, 10, 25, 30]))
    c_star = math.sqrt(10 * 30)  # halfway between 10 and 30 in log C
    bound = got.decision.bound
    assert bound is not None and bound.concurrency == pytest.approx(c_star)
    # log-log interpolation: sqrt(10 * 25) running requests, not capped at C* (>= 0.9 C*)
    assert bound.batch == pytest.approx(math.sqrt(10 * 25)) and bound.last_on == 15
    assert bound.through == "spec-on" and bound.spec_on_batch is None
    assert got.decision.tiers == (Tier(15, 3), Tier(None, 0))
    vllm_config = got.decision.settings.get("vllm")
    assert vllm_config == {"method": "eagle3", "model": "d", "num_speculative_tokens": 3,
                           "num_speculative_tokens_per_batch_size": [
                               [1, 15, 3], [16, BATCH_SIZE_CEILING, 0]]}
    assert "batch size 15.8" in got.summary and "up to batch size 15" in got.summary
    assert set(got.files) == set(rec.engine_files())
    assert bound.capped == 30  # 25 running requests of 30 at C = 30: queueing starts
    assert any("at most about 30 requests" in n for n in got.notes)


def test_a_spec_on_server_capped_at_c_star_maps_through_the_spec_off_server() -> None:
    """The switching server admits with its plain cap, as the spec-off arm did (the
    verification arm measured this on the quickstart)."""
    got = _recommend(_pair([1.5, 1.2, 0.8, 0.6], batches=[1, 9, 20, 20]))
    c_star = math.sqrt(10 * 30)
    bound = got.decision.bound
    assert bound is not None and bound.through == "spec-off"
    assert bound.batch == pytest.approx(c_star) and bound.last_on == 17
    assert bound.spec_on_batch == pytest.approx(math.sqrt(9 * 20))
    assert got.decision.tiers == (Tier(17, 3), Tier(None, 0))
    assert any("the bound is the spec-off server's batch size at C*" in n for n in got.notes)


def test_without_the_gauge_the_bound_stays_in_concurrency_and_says_so() -> None:
    got = _recommend(_pair([1.5, 1.2, 0.8, 0.6]))
    bound = got.decision.bound
    assert bound is not None and bound.batch is None and bound.last_on == 17
    assert bound.axis == "concurrency" and "no running-requests gauge" in got.summary


def test_a_bound_at_or_above_the_running_cap_is_kept_below_it() -> None:
    # both servers capped at 16 (the same max_num_seqs): the spec-off batch cannot help
    got = _recommend(_pair([1.5, 1.3, 1.1, 0.8], batches=[1, 10, 16, 16],
                           batches_off=[1, 10, 16, 16]))
    bound = got.decision.bound
    assert bound is not None and bound.batch == pytest.approx(16)
    assert bound.last_on == 15 and bound.capped == 16


@pytest.mark.parametrize("engine", ["llamacpp", "ollama", "tgi"])
def test_engines_without_load_control_get_the_deployment_alternative(engine: str) -> None:
    got = _recommend(_pair([1.5, 1.2, 0.8, 0.6], batches=[1, 9, 20, 20]), engine,
                     "llama-server -m t.gguf -md d.gguf")
    assert not got.decision.load_aware and got.decision.tiers is None
    assert list(got.files) == [rec.README_FILE]
    (line,) = got.lines
    assert "no setting that turns speculation off by load" in line
    assert "two deployments" in line and "route by load" in line
    assert "running requests are below 18" in line
    assert "--speculative" not in got.files[rec.README_FILE]


@pytest.mark.parametrize(("engine", "starts"), [
    ("vllm", ["vLLM"]), ("sglang", ["SGLang"]), ("trtllm", ["TensorRT-LLM"]),
    (None, ["vLLM", "SGLang", "TensorRT-LLM"])])
def test_load_aware_engines_lead_with_their_own_setting(engine: str | None,
                                                        starts: list[str]) -> None:
    got = _recommend(_pair([1.5, 1.2, 0.8, 0.6], batches=[1, 9, 20, 20]), engine)
    assert [line.split(" ")[0] for line in got.lines] == starts
    assert set(got.files) == set(rec.engine_files())  # every engine's file is written


def test_the_issue_curve_never_reads_every_concurrency() -> None:
    got = _recommend(_pair([1.6, 1.2, 0.97, 0.99, 1.01], cs=(1, 5, 10, 30, 100)))
    assert got.decision.verdict == cx.CROSSES
    words = got.summary.lower()
    assert "every concurrency" not in words and "always" not in words and "never" not in words
    assert "within the noise band (±2%) at c = 30, 100" in words


def test_always_and_never() -> None:
    always = _recommend(_pair([1.8, 1.5, 1.3, 1.1], batches=[1, 10, 30, 95]))
    assert always.decision.verdict == cx.ALWAYS and "keep it on" in always.summary
    assert "batch size 95.0" in always.summary and always.decision.tiers is None
    assert VLLM_FILE not in always.files
    never = _recommend(_pair([0.9, 0.8, 0.7, 0.6]))
    assert never.decision.verdict == cx.NEVER and "turn it off" in never.summary
    assert "Serve without speculation" in never.lines[0]


def test_unknown_k_and_method_are_placeholders() -> None:
    got = _recommend(_pair([1.5, 1.2, 0.8, 0.6], k=None), command=None)
    vllm_config = got.decision.settings.get("vllm")
    assert vllm_config is not None
    assert vllm_config["num_speculative_tokens_per_batch_size"][0] == [1, 17, K_PLACEHOLDER]
    assert any(K_PLACEHOLDER in note for note in got.notes)
    assert any("with your draft model" in note for note in got.notes)
    known = _recommend(_pair([1.5, 1.2, 0.8, 0.6]))
    assert not any("Replace" in note for note in known.notes)


def test_slo_goodput_decides_when_given() -> None:
    slo = SloTarget(ttft_p99_ms=500)
    pair = _pair([1.5, 1.3, 1.2, 1.1], slo=slo, ttft_on=[100, 200, 900, 2000])
    got = rt.recommendation(rec.recommend(
        pair, rec.ArmSetup("vllm", "command", parse_command(VLLM_CMD)), slo), "on vs off")
    assert got.basis == "SLO goodput (TTFT p99 ≤ 500 ms)"
    assert got.summary.startswith("On SLO goodput (TTFT p99 ≤ 500 ms): Speculation pays off "
                                  "up to C* = 10")
    bound = got.decision.bound
    assert bound is not None and bound.last_on == 10


def test_as_dict_is_json_with_folder_paths() -> None:
    got = _recommend(_pair([1.5, 1.2, 0.8, 0.6], batches=[1, 9, 20, 20]))
    data = json.loads(json.dumps(got.as_dict("recommended/a-vs-b")))
    assert data["schedule"] == [[1, 17, 3], [18, None, 0]]
    assert "recommended/a-vs-b/trtllm.yaml" in data["files"]
    assert data["bound"]["first_off"] == 18 and data["bound"]["axis"] == "batch size"
    assert data["bound"]["batch_of"] == "spec-off"


def test_sim_arms_take_method_and_k_from_their_profile() -> None:
    arm = ArmSource("on", "spec_on", kind="sim", profile="seed-glm", engine="vllm",
                    engine_source="sim default")
    setup = rec.arm_setup(arm)
    assert (setup.engine, setup.spec.method, setup.spec.k) == ("vllm", "eagle3", 3)
    arm.k = 5
    assert rec.arm_setup(arm).spec.k == 5
    arm.profile = "no-such-profile"
    assert rec.arm_setup(arm).spec.method is None


@pytest.mark.parametrize(("engine", "gauge"), [
    ("llamacpp", "(llamacpp:requests_processing)"), ("tgi", "(tgi_batch_current_size)"),
    (None, "(vllm:num_requests_running / sglang:num_running_reqs / tgi_batch_current_size / "
           "llamacpp:requests_processing)")])
def test_the_batch_size_note_names_the_engines_own_gauge(engine: str | None, gauge: str
                                                         ) -> None:
    # a llama.cpp recommendation once named vLLM's and SGLang's gauges only
    got = _recommend(_pair([1.5, 1.2, 0.8, 0.6], batches=[1, 9, 20, 20]), engine)
    (note,) = [n for n in got.notes if n.startswith("Batch sizes are")]
    assert gauge in note


def test_a_batch_that_keeps_its_share_of_c_is_no_cap() -> None:
    """A real vLLM with 16 slots ran 87%, 87%, 85% and 86% of C at C = 2 to 16 (its users
    spend part of each turn outside the engine): the report called that a cap of 14."""
    got = _recommend(_pair([1.38, 1.14, 0.85, 0.73, 0.62], cs=(1, 2, 4, 8, 16),
                           batches=[0.8, 1.73, 3.47, 6.8, 13.8],
                           batches_off=[0.93, 1.8, 3.4, 6.93, 13.8]))
    bound = got.decision.bound
    assert bound is not None and bound.last_on == 2 and bound.capped is None
    assert not any("at most about" in n for n in got.notes)


def test_a_k0_tax_beyond_the_noise_goes_into_the_readme_of_the_verified_schedule() -> None:
    got = _recommend(_pair([1.6, 1.2, 0.8, 0.7], batches=[1, 10, 30, 95]), "vllm")
    before = got.files["README.md"]
    assert "# Recommended speculation setting: on vs off" in before
    rt.with_k0_tax(got, [])
    assert got.files["README.md"] == before
    line = "verify: ... k = 0 costs up to 8% beyond the noise ... routed by load"
    rt.with_k0_tax(got, [line])
    assert got.lines[-1] == line
    assert f"- {line}" in got.files["README.md"]
    assert got.files["README.md"].startswith(before.split("Notes:")[0].rstrip())
