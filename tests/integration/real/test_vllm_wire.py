"""vLLM's wire and metrics as the real engine sends them, against the simulator's flavour.

The same streamed chat request, as specload's users send it (usage per chunk asked
for), goes to a real vLLM server with n-gram drafts and to `specload sim --flavor
vllm`: the chunks' kinds must come in the same order and each kind carry the same
fields (`tests/support/wire_shape.py`); the /metrics series the engine registry reads
for vLLM must be exposed by both or by neither, with the same label names; /health and
/v1/models must answer alike. The real engine's shapes must also be the ones recorded in
tests/data/vllm-wire.json, which the default tier holds the flavour to without a real
engine (`SPECLOAD_RECORD_WIRE=1` rewrites the file from the real server).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import context_probe, vllm_server, wire_shape
from tests.support.sims import sim_in_thread
from tests.unit.sim.test_sim_vllm_wire import (  # the same checks, against a live vLLM
    test_health_and_models_answer_as_vllm,
    test_the_chunks_have_vllms_kinds_and_fields,
    test_the_series_specload_reads_have_vllms_names_and_labels,
)

pytestmark = [pytest.mark.real, pytest.mark.untimed]  # shapes and counts, no speed
__all__ = ["test_health_and_models_answer_as_vllm", "test_the_chunks_have_vllms_kinds_and_fields",
           "test_the_series_specload_reads_have_vllms_names_and_labels"]
SIZE = vllm_server.ModelSize(layers=4, hidden=256)  # the wire does not depend on the size
RECORDING = Path(__file__).resolve().parents[2] / "data" / "vllm-wire.json"
@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A real vLLM (its context 1024 tokens) and the simulator's flavour: their URLs."""
    log = tmp_path_factory.mktemp("vllm-wire") / "server.log"
    with vllm_server.running(log, SIZE, vllm_server.ngram_config(3)) as real, \
            sim_in_thread("--flavor", "vllm", "--spec", "on") as sim:
        wire_shape.stream(real)  # the first request also fills the histograms and counters
        yield real, sim


@pytest.fixture(scope="module")
def shapes(servers: tuple[str, str]) -> tuple[dict, dict]:
    real, sim = servers
    return wire_shape.shape_of(real, "vllm"), wire_shape.shape_of(sim, "vllm")


def test_the_recording_is_the_real_engine(shapes) -> None:
    if os.environ.get("SPECLOAD_RECORD_WIRE"):
        wire_shape.record(RECORDING, shapes[0])
    assert wire_shape.recorded(RECORDING) == json.loads(json.dumps(shapes[0]))


def test_the_context_check_reads_and_counts_as_vllm_does(servers) -> None:
    """`max_model_len` and /tokenize's count, as the runner's context check reads them,
    are what the real vLLM enforces and bills (the default tier holds the simulator's
    flavour to the same probe)."""
    seen = context_probe.check_engine(servers[0], "vllm", 1024)
    print("vLLM context probe:", seen)
