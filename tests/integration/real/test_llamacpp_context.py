"""The context check against a real llama-server: a slot's `n_ctx` as /v1/models lists
it, prompts counted by /v1/chat/completions/input_tokens, and what the server does with
a request that fits, one token over, and far over (`tests/support/context_probe.py`;
the default tier holds the simulator's llamacpp flavour to the same probe)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specload.runner.processes import free_port
from tests.support import context_probe, engine_process, llama_server

pytestmark = [pytest.mark.real, pytest.mark.untimed]  # shapes and counts, no speed
SLOT_CONTEXT = 512


def test_the_context_check_reads_and_counts_as_llama_server_does(tmp_path: Path) -> None:
    port = free_port()
    line = llama_server.server_command(port, 1, "", slot_context=SLOT_CONTEXT)
    with engine_process.running(line, f"http://127.0.0.1:{port}", tmp_path / "server.log",
                                "llama-server", ready_timeout_s=120) as url:
        seen = context_probe.check_engine(url, "llamacpp", SLOT_CONTEXT)
    print("llama-server context probe:", seen)
