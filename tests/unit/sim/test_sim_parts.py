"""Profiles, text generation, fault parsing, lag meter."""

from __future__ import annotations

import json

import pytest
import yaml

from specload.runfiles.records import ERROR_KINDS
from specload.sim import SimConfigError
from specload.sim.faults import (
    CLIENT_ERROR_KINDS,
    DEFAULT_PARAMS,
    SILENT_FAULTS,
    FaultPicker,
    parse_fault,
)
from specload.sim.profile import PROFILES_DIR, builtin_names, load_profile
from specload.sim.step_loop import LAG_WINDOW_S, LagMeter
from specload.sim.textgen import TokenStream, digest, output_length, text_tokens


def test_builtin_profiles_load_and_have_documented_sources() -> None:
    assert builtin_names() == ["a100x8-llama8b-magicdec", "bench-20ms",
                               "cpu2-gemma3-270m-ngram", "h100-llama8b-eagle",
                               "h100-llama8b-eagle3", "h100-llama8b-eagle3-categories",
                               "h100nvl-gemma4-31b-mtp", "mi350x8-dsv4flash-dspark",
                               "seed-glm"]
    for name in builtin_names():
        load_profile(name)
        assert (PROFILES_DIR / f"{name}.yaml").read_text().startswith("#")


def test_profile_errors_are_one_line_with_key_path(tmp_path) -> None:
    data = yaml.safe_load((PROFILES_DIR / "seed-glm.yaml").read_text())
    data["scheduler"]["max_num_seqz"] = 3
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(SimConfigError, match=r"scheduler\.max_num_seqz"):
        load_profile(str(bad))
    data = yaml.safe_load((PROFILES_DIR / "seed-glm.yaml").read_text())
    data["speculative"]["k"] = 9
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(SimConfigError, match="acceptance"):
        load_profile(str(bad))
    with pytest.raises(SimConfigError, match="neither a built-in"):
        load_profile("nope")
    bad.write_text("- a list")
    with pytest.raises(SimConfigError, match="mapping"):
        load_profile(str(bad))


def test_drafter_takes_kv_and_caps_running_set() -> None:
    p = load_profile("seed-glm")
    assert p.kv_capacity(drafter=True) < p.kv_capacity(drafter=False)
    assert p.max_num_seqs(speculating=True) == 16 < p.max_num_seqs(speculating=False)


def test_generated_text_depends_on_seed_and_prompt_not_on_chunking() -> None:
    key = digest(0, "prompt")
    whole = TokenStream(key).take(40)
    stream = TokenStream(key)
    pieces = "".join(stream.take(n) for n in (1, 3, 1, 4, 2, 29))
    assert whole == pieces and len(whole.split()) == 40
    assert TokenStream(digest(1, "prompt")).take(40) != whole
    assert TokenStream(digest(0, "prompt!")).take(40) != whole
    assert json.loads(json.dumps(whole)) == whole and '"' not in whole and "\\" not in whole


def test_an_altered_token_changes_only_its_own_word_however_the_steps_chunk_it() -> None:
    key = digest(0, "prompt")
    whole = TokenStream(key).words(40)
    stream = TokenStream(key, alter_at=17)
    altered = [w for n in (5, 10, 3, 22) for w in stream.words(n)]
    assert [i for i, (a, b) in enumerate(zip(whole, altered, strict=True)) if a != b] == [17]


def test_output_length_bounds() -> None:
    assert output_length(5, 100, 0, True, 50) == (100, "length")
    lengths = [output_length(digest(0, str(i)), 300, 0, False, 100) for i in range(300)]
    assert all(1 <= n <= 300 for n, _ in lengths)
    mean = sum(n for n, _ in lengths) / len(lengths)
    assert 70 < mean < 130  # lognormal around the profile's mean
    assert all(r == "length" for n, r in lengths if n == 300)
    assert output_length(digest(0, "x"), 300, 250, False, 10)[0] >= 250
    assert text_tokens("abcdefgh") == 2 and text_tokens("abcdefghi") == 3


def test_every_fault_is_a_failure_kind_of_the_records() -> None:
    assert set(CLIENT_ERROR_KINDS) | set(SILENT_FAULTS) == set(DEFAULT_PARAMS)
    assert not set(CLIENT_ERROR_KINDS) & set(SILENT_FAULTS)
    assert set(CLIENT_ERROR_KINDS.values()) <= set(ERROR_KINDS)


def test_fault_parsing_and_seeded_picks() -> None:
    f = parse_fault("error429:0.25:3")
    assert (f.kind, f.fraction, f.param) == ("error429", 0.25, 3.0)
    assert parse_fault("cut:0.1").param == 8.0
    for bad in ("nope:0.1", "cut", "cut:1.5", "cut:x", "cut:0.1:-1"):
        with pytest.raises(SimConfigError, match="--fault"):
            parse_fault(bad)
    with pytest.raises(SimConfigError, match="add up"):
        FaultPicker([parse_fault("cut:0.6"), parse_fault("malformed:0.6")], 0)
    faults = [parse_fault("cut:0.2"), parse_fault("malformed:0.3")]
    picker, again, other = FaultPicker(faults, 1), FaultPicker(faults, 1), FaultPicker(faults, 2)
    picks = [picker.pick() for _ in range(4000)]
    assert picks == [again.pick() for _ in range(4000)]
    assert picks != [other.pick() for _ in range(4000)]
    assert picks.count(faults[0]) / 4000 == pytest.approx(0.2, abs=0.03)
    assert picks.count(faults[1]) / 4000 == pytest.approx(0.3, abs=0.03)
    assert FaultPicker([], 1).pick() is None


def test_lag_meter_ratio_and_windowed_warning() -> None:
    warnings: list[str] = []
    meter = LagMeter(warnings.append)
    meter.add(LAG_WINDOW_S, 0.0)
    assert meter.ratio == 0.0 and not warnings
    meter.add(LAG_WINDOW_S * 0.9, LAG_WINDOW_S * 0.1)
    assert meter.ratio == pytest.approx(0.05) and len(warnings) == 1
    assert "engine lag" in warnings[0]
    meter.add(LAG_WINDOW_S, LAG_WINDOW_S * 0.001)
    assert len(warnings) == 1
