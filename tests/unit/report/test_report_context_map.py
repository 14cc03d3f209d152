"""The answer over two axes: C* per context, the speedup map and its sentence."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from specload.engines import vllm
from specload.engines.spec_command import SpecSettings
from specload.report import context_grid, figures
from specload.report import context_map as cm
from specload.report.crossover import analyse_pair, pair_arms
from specload.report.recommend import ArmSetup, recommend
from specload.report.run_files import ArmSource

OFF = {8: 800.0, 32: 2000.0, 128: 4000.0}
ON = {"512": {8: 1200.0, 32: 1800.0, 128: 3000.0},   # crosses between 8 and 32
      "4096": {8: 1300.0, 32: 2600.0, 128: 3600.0},  # crosses between 32 and 128
      "16384": {8: 1400.0, 32: 2800.0, 128: 5000.0}}  # pays everywhere


def _run() -> tuple[list[ArmSource], pd.DataFrame]:
    rows, arms = [], []
    for ctx, tok in ON.items():
        arms += [ArmSource(f"on-ctx{ctx}", "spec_on", context=ctx),
                 ArmSource(f"off-ctx{ctx}", "spec_off", context=ctx)]
        rows += [(f"on-ctx{ctx}", 1, c, v) for c, v in tok.items()]
        rows += [(f"off-ctx{ctx}", 1, c, v) for c, v in OFF.items()]
    return arms, pd.DataFrame(rows, columns=["arm", "rep", "concurrency", "output_tok_s"])


def _map() -> cm.ContextMap:
    arms, per_rep = _run()
    summary = per_rep.drop(columns="rep")
    pairs = [analyse_pair(on, off, summary, per_rep) for on, off in pair_arms(arms)]
    got = cm.analyse_contexts(arms, pairs)
    assert got is not None
    return got


def test_arms_at_several_contexts_pair_only_at_the_same_context() -> None:
    arms, _ = _run()
    assert [(a.name, b.name) for a, b in pair_arms(arms)] == [
        ("on-ctx512", "off-ctx512"), ("on-ctx4096", "off-ctx4096"),
        ("on-ctx16384", "off-ctx16384")]


def test_c_star_rises_with_context_and_the_sentence_says_where_it_pays() -> None:
    got = _map()
    assert [r.context for r in got.rows] == ["512", "4096", "16384"]
    c_stars = [r.pair.crossover.c_star for r in got.rows]
    assert 8 < c_stars[0] < 32 < c_stars[1] < 128 and c_stars[2] is None
    assert got.rises() is True
    sentence = got.sentence()
    assert sentence.startswith(f"speculation pays up to C = {c_stars[0]:.3g}")
    assert "at 512-token contexts, " in sentence and "at 4k-token contexts" in sentence
    assert sentence.endswith(", and at every C measured from 16k")
    assert got.speedup.loc["512", 8.0] == pytest.approx(1.5)
    assert got.as_dict()["contexts"] == ["512", "4096", "16384"]


def test_the_map_is_drawn_with_its_contour_and_c_stars() -> None:
    fig = figures.context_map([_map()])
    kinds = [t["type"] for t in fig.data]
    assert kinds == ["heatmap", "contour", "scatter"]
    assert fig.data[1]["contours"]["start"] == 1.0
    assert len(fig.data[2]["x"]) == 2  # the two contexts that cross


@pytest.mark.parametrize(("tokens", "words"), [(512, "512"), (2048, "2k"), (8192, "8k"),
                                               (32000, "32k"), (1500, "1.5k")])
def test_context_lengths_read_as_people_say_them(tokens: int, words: str) -> None:
    assert cm.tokens_words(tokens) == words


def test_no_map_from_one_context() -> None:
    arms, per_rep = _run()
    arms = arms[:2]
    summary = per_rep.drop(columns="rep")
    pairs = [analyse_pair(arms[0], arms[1], summary, per_rep)]
    assert cm.analyse_contexts(arms, pairs) is None


def _grid(mix: dict[str, float] | None = None, version: str | None = None
          ) -> dict[str, str]:
    got = _map()
    decisions = {r.context: recommend(r.pair, ArmSetup("vllm", "scenario",
                                                       SpecSettings(method="eagle3", k=3)))
                 for r in got.rows}
    return context_grid.files(got, decisions, SpecSettings(method="eagle3", k=3), mix, version)


def test_the_grid_puts_each_contexts_schedule_in_its_band() -> None:
    grid = json.loads(_grid()[context_grid.GRID_FILE])
    cells = grid["cells"]
    # bands cut halfway in log tokens: sqrt(512 x 4096) = 1449, sqrt(4096 x 16384) = 8192
    assert [c[2:4] for c in cells if c[4]] == [[0, 1448], [1449, 8191],
                                               [8192, context_grid.CTX_CEILING]]
    short, middle = [c for c in cells if c[2] == 0], [c for c in cells if c[2] == 1449]
    assert short[0][4] == 3 and short[-1][4] == 0 and short[0][1] < middle[0][1]
    assert [m["verdict"] for m in grid["measured"]] == ["crosses", "crosses", "always"]


def test_vllms_file_is_the_batch_size_schedule_of_the_mix_until_a_release_takes_the_grid(
        monkeypatch: pytest.MonkeyPatch) -> None:
    config = json.loads(_grid()[vllm.VLLM_FILE])
    ranges = config["num_speculative_tokens_per_batch_size"]
    assert all(len(r) == 3 for r in ranges) and "speculative_token_schedule" not in config
    # the short context alone stops speculating sooner than an even mix
    short = json.loads(_grid({"512": 1.0})[vllm.VLLM_FILE])
    assert short["num_speculative_tokens_per_batch_size"][0][1] < ranges[0][1]
    assert "in no release yet" in _grid(version="0.33.1")[context_grid.README_FILE]
    monkeypatch.setattr(vllm, "CONTEXT_GRID_SINCE", "0.40.0")
    assert "speculative_token_schedule" not in json.loads(_grid(version="0.39.2")[vllm.VLLM_FILE])
    grid = json.loads(_grid(version="0.40.1")[vllm.VLLM_FILE])
    assert grid["speculative_token_schedule"] == json.loads(
        _grid()[context_grid.GRID_FILE])["cells"]
    assert all(len(c) == 5 for c in grid["speculative_token_schedule"])


def test_routing_by_prompt_length_names_what_each_band_measured() -> None:
    readme = _grid({"512": 1.0})[context_grid.README_FILE]
    assert "prompts of 8k tokens and more: decides otherwise than the mix's schedule" in readme
