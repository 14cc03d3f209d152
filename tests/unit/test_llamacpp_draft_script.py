"""scripts/llamacpp_draft.py writes a narrow Gemma 3 with its target's tokenizer.

A target of 320 tokens stands in for Gemma 3 270M: the draft keeps every tokenizer key
and the target's other hyperparameters, takes its own width, depth and one head, and
holds each tensor a Gemma 3 block needs at that width (llama.cpp loads it as a
`-md` draft in the real tier, `tests/integration/real/test_llamacpp_draft_model.py`).
"""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np

from tests.support import script_module

VOCAB = 320


def _script():
    return script_module("llamacpp_draft")


def _target(path: Path) -> Path:
    writer = gguf.GGUFWriter(path, "gemma3")
    writer.add_name("tiny target")
    writer.add_uint32("gemma3.embedding_length", 96)
    writer.add_uint32("gemma3.block_count", 4)
    writer.add_uint32("gemma3.feed_forward_length", 192)
    writer.add_uint32("gemma3.attention.head_count", 4)
    writer.add_uint32("gemma3.attention.head_count_kv", 1)
    writer.add_uint32("gemma3.attention.key_length", 256)
    writer.add_uint32("gemma3.attention.value_length", 256)
    writer.add_uint32("gemma3.attention.sliding_window", 512)
    writer.add_tokenizer_model("llama")
    writer.add_token_list([f"t{i}" for i in range(VOCAB)])
    writer.add_token_scores([float(-i) for i in range(VOCAB)])
    writer.add_token_types([1] * VOCAB)
    writer.add_bos_token_id(2)
    writer.add_eos_token_id(1)
    writer.add_tensor("output_norm.weight", np.ones(96, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_the_draft_is_a_narrow_gemma3_with_the_targets_tokenizer(tmp_path: Path) -> None:
    target = _target(tmp_path / "target.gguf")
    out = _script().write_draft(target, tmp_path / "draft.gguf", hidden=32, layers=2, ffn=64)
    draft, source = gguf.GGUFReader(out), gguf.GGUFReader(target)
    fields = {name: f.contents() for name, f in draft.fields.items()}
    assert fields["general.architecture"] == "gemma3"
    assert {k: fields[f"gemma3.{k}"] for k in ("embedding_length", "block_count",
                                                "feed_forward_length", "attention.head_count",
                                                "attention.head_count_kv",
                                                "attention.key_length")} == {
        "embedding_length": 32, "block_count": 2, "feed_forward_length": 64,
        "attention.head_count": 1, "attention.head_count_kv": 1, "attention.key_length": 32}
    assert fields["gemma3.attention.sliding_window"] == 512
    for name in ("tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type",
                 "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"):
        assert fields[name] == source.fields[name].contents(), name
    tensors = {t.name: (t.tensor_type.name, [int(n) for n in t.shape]) for t in draft.tensors}
    assert tensors["token_embd.weight"] == ("Q8_0", [32, VOCAB])
    assert tensors["blk.1.attn_q.weight"] == ("F16", [32, 32])
    assert tensors["blk.1.ffn_down.weight"] == ("F16", [64, 32])
    assert tensors["blk.0.attn_k_norm.weight"] == ("F32", [32])
    assert len(tensors) == 2 + 2 * 13
    assert not out.with_suffix(".partial").exists()
