"""The draft `scripts/vllm_model.py` writes beside its target (`--draft-layers`).

Run with the vLLM venv's Python (it has torch and transformers), on a tiny target of
three layers: the draft folder is a model of the target's first layer with the same
embeddings and tokenizer; with `--tail-scale 0` the target's later layers add nothing,
so the draft's greedy choice is the target's at every position, and with the plain
random model's scale (1) it is not; the same arguments give the same files.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support import vllm_server

pytestmark = [pytest.mark.real, pytest.mark.untimed]  # shapes and counts, no speed

# Greedy choices of target and draft over one fixed token sequence, as "same of total".
AGREEMENT = """
import sys, torch
from transformers import LlamaForCausalLM
folder = sys.argv[1]
target = LlamaForCausalLM.from_pretrained(folder).eval()
draft = LlamaForCausalLM.from_pretrained(folder + "/draft").eval()
ids = torch.arange(10, 210).remainder(target.config.vocab_size - 10).add(10)[None]
with torch.no_grad():
    same = target(ids).logits.argmax(-1) == draft(ids).logits.argmax(-1)
print(draft.config.num_hidden_layers, int(same.sum()), same.numel())
"""


def _build(tmp_path: Path, scale: str) -> Path:
    out = tmp_path / f"scale-{scale}"
    done = subprocess.run([str(vllm_server.python()), str(vllm_server.MODEL_SCRIPT),
                           "--layers", "3", "--hidden", "64", "--draft-layers", "1",
                           "--tail-scale", scale, "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert Path(done.stdout.strip().splitlines()[-1]) == out
    return out


def _agreement(folder: Path) -> tuple[int, int, int]:
    done = subprocess.run([str(vllm_server.python()), "-c", AGREEMENT, str(folder)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    layers, same, total = map(int, done.stdout.split())
    return layers, same, total


def test_the_tail_scale_sets_how_often_the_draft_guesses_the_target(tmp_path: Path) -> None:
    exact, plain = _build(tmp_path, "0"), _build(tmp_path, "1")
    assert (exact / "draft" / "tokenizer.json").read_bytes() == (
        exact / "tokenizer.json").read_bytes()
    layers, same, total = _agreement(exact)
    assert (layers, same) == (1, total)
    _, same_plain, _ = _agreement(plain)
    assert same_plain < total
    again = _build(tmp_path / "again", "0")
    assert (again / "model.safetensors").read_bytes() == (
        exact / "model.safetensors").read_bytes()
