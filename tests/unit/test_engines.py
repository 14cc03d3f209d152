"""The engine registry: which engine serves an arm, what each can switch, and the
simulator held to it (its flavours imitate registered engines, its /metrics names are
the registered series, its per-request speculation fields the registered ones)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from specload import engines
from specload.engines import engine_from_command, resolve_engine
from specload.engines import metrics as engine_metrics
from specload.runner.metrics_scrape import parse_metrics
from specload.sim import metrics
from specload.sim.flavors import FLAVORS
from specload.sim.generate import FinalFields
from specload.sim.metrics import RankStats
from specload.sim.slot_stats import SlotStats

# What a sim flavour's /metrics does not model of its engine's registered series.
NOT_SIMULATED: dict[str, set[str]] = {}
DRAFTED = SlotStats(prompt_cached=0, prompt_processed=4, generated=9, drafts=4,
                    draft_tokens=8, accepted=4, accept_hist=(1, 2, 1), prompt_s=0.02,
                    gen_s=0.16)


@pytest.mark.parametrize(("command", "engine"), [
    ("vllm serve meta-llama/Llama-3.1-8B-Instruct --port 8000", "vllm"),
    ("python -m vllm.entrypoints.openai.api_server --model m", "vllm"),
    ("docker run --gpus all lmsysorg/sglang:latest python3 -m sglang.launch_server "
     "--model-path m", "sglang"),
    ("trtllm-serve meta-llama/Llama-3.1-8B-Instruct --config spec.yaml", "trtllm"),
    ("./llama-server -m model.gguf -md draft.gguf --port 8080", "llamacpp"),
    ("python -m llama_cpp.server --model m.gguf", "llamacpp"),
    ("ollama serve", "ollama"),
    ("text-generation-launcher --model-id m --speculate 3", "tgi"),
    ("./my-server --port 9000", None), ("", None), (None, None),
])
def test_engine_from_command(command: str | None, engine: str | None) -> None:
    assert engine_from_command(command) == engine


def test_resolution_order() -> None:
    vllm_cmd = {"command": {"start": "vllm serve m"}}
    assert resolve_engine(vllm_cmd, recorded="sglang") == ("sglang", "scenario")
    assert resolve_engine({**vllm_cmd, "engine": "trtllm"}) == ("trtllm", "scenario")
    assert resolve_engine(vllm_cmd) == ("vllm", "command")
    assert resolve_engine({"sim": {"spec": "on"}}) == ("vllm", "sim default")
    assert resolve_engine({"sim": {"spec": "on", "flavor": "llamacpp"}}) == (
        "llamacpp", "sim flavor")
    assert resolve_engine({"sim": {"flavor": "llama-cpp-python"}}) == (
        "llamacpp", "sim flavor")  # as its command, `llama_cpp.server`, says
    assert resolve_engine({"sim": {"flavor": "weird"}}) == ("other", "sim flavor")
    assert resolve_engine({"url": "http://h:1"}) == (None, "unknown")
    assert resolve_engine(None) == (None, "unknown")


def test_only_vllm_sglang_and_trtllm_switch_speculation_by_load() -> None:
    assert {e.id for e, _ in engines.switches()} == {"vllm", "sglang", "trtllm"}
    assert [engines.load_aware(e) for e in (None, "other", "vllm", "tgi", "unregistered")] \
        == [True, True, True, False, False]


def test_every_sim_flavour_imitates_one_registered_engine() -> None:
    named = engines.sim_flavors()
    assert sorted(named) == sorted(FLAVORS) and len(set(named)) == len(named)
    for entry in engines.REGISTRY.values():
        for flavor in entry.sim_flavors:
            assert FLAVORS[flavor].per_token_chunks == entry.per_token_events, flavor


def test_a_flavour_that_counts_tokens_lists_and_counts_where_its_engine_does() -> None:
    checked = 0
    for entry in engines.REGISTRY.values():
        for flavor in (FLAVORS[f] for f in entry.sim_flavors if FLAVORS[f].token_count):
            assert entry.context is not None, flavor.name
            assert flavor.context_key == entry.context.listed, flavor.name
            assert flavor.info == (entry.context.listed_route == "/info"), flavor.name
            assert flavor.token_count[0] == entry.context.count_route, flavor.name
            checked += 1
    assert checked == 4  # vllm, sglang, llamacpp and tgi


def _rank() -> RankStats:
    rank = RankStats(3, 1, 0.5, 100, 200, 1, 3, 10, 30, 15, 2.5, 0.5, 50.0, 40, 1.0, 0.0,
                     0.0, prefix_queries=64, prefix_hits=16, cache_hit_rate=0.25,
                     accepted_per_pos=[9, 6], spec_positions=3)
    rank.slots.add(DRAFTED, 13)
    return rank


@pytest.mark.parametrize("flavor", [f for f in FLAVORS if FLAVORS[f].metrics is not None])
def test_the_sims_metric_names_are_its_engines_registered_series(flavor: str) -> None:
    exposition = FLAVORS[flavor].metrics
    assert exposition is not None
    (entry,) = [e for e in engines.REGISTRY.values() if flavor in e.sim_flavors]
    kept = parse_metrics(metrics.render(exposition, [_rank(), _rank()], "m"))
    own = {s.key: s.meaning for s in entry.series}
    parts = {f"{h}_{p}" for h in entry.histograms for p in ("sum", "count")}
    # what the sampler keeps of the sim's text is its own engine's, never another's
    assert set(kept) <= set(own) | parts, set(kept) - set(own) - parts
    # and gives every meaning the engine's series have, but what the sim does not model
    missing = set(own.values()) - {own[k] for k in kept if k in own}
    assert missing == NOT_SIMULATED.get(entry.id, set())


def _final_fields(flavor: str) -> dict:
    """What the flavour's usage chunk, or its chunk of its own, carries of a request that
    drafted (and asked, where the engine wants it asked)."""
    k = len(DRAFTED.accept_hist) - 1
    final = FinalFields(FLAVORS[flavor], k if FLAVORS[flavor].spec_decode_metrics else None)
    stream = SimpleNamespace(slot_stats=lambda: DRAFTED)
    return (final.of(stream, True) or {}) | (final.own(stream, True, k) or {})


def test_registered_speculation_fields_are_what_the_sim_returns() -> None:
    for entry in engines.REGISTRY.values():
        spec = entry.speculation
        sending = [f for f in entry.sim_flavors if _final_fields(f)]
        if spec is None:  # none known: none made up
            assert not sending, entry.id
            continue
        # llama-cpp-python serves llama.cpp's models without llama-server's timings
        assert sending, entry.id
        for flavor in sending:
            section = _final_fields(flavor)
            for key in spec.section:
                section = section[key]
            assert (section[spec.drafted], section[spec.accepted]) == (
                DRAFTED.draft_tokens, DRAFTED.accepted), (entry.id, flavor)
            if spec.steps:
                assert section[spec.steps] == DRAFTED.drafts, (entry.id, flavor)
    assert {e.id for e in engines.REGISTRY.values() if e.speculation} == {"vllm", "llamacpp",
                                                                           "sglang"}
    assert len(engines.request_speculation()) == 3


def test_a_registered_engine_goes_before_other(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engines, "REGISTRY", dict(engines.REGISTRY))
    engines.register(engines.Engine("new", "New", series=(
        engines.Series("new:running", "running"),)))
    assert engines.ids()[-2:] == ("new", "other")
    assert engine_metrics.names_of("running", "new") == ("new:running",)
    assert "new:running" in engine_metrics.names("running")
    with pytest.raises(ValueError, match="registered already"):
        engines.register(engines.Engine("new", "New again"))
