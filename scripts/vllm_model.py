"""Build the real vLLM tier's model offline: a random-weight Llama and its tokenizer.

Nothing is downloaded. The tokenizer is a byte-level BPE trained on specload's shipped
prompts; the model is a `LlamaForCausalLM` of the given size with weights drawn from
`--seed`, saved with `save_pretrained` beside the tokenizer and a chat template, so
`vllm.entrypoints.openai.api_server --model DIR` serves it. The same arguments give the
same files. With `--draft-layers N` it also writes `DIR/draft`, a model of the target's
first N layers (same embeddings, norm and tokenizer) for vLLM's `draft_model` method;
`--tail-scale` scales what the target's later layers add to the residual stream, which
sets how often the draft's greedy guess is the target's (1: the plain random model; 0:
always). The folder defaults to the user's cache, keyed by the size and seed, and is
reused once built; the script prints its path. Run it with the Python of the vLLM venv
(`scripts/setup_vllm_cpu.sh` prints it): it needs torch, transformers and tokenizers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

PROMPTS = Path(__file__).resolve().parents[1] / "src" / "specload" / "data" / "prompts.jsonl"
# One user turn, one assistant turn; the generation prompt opens the assistant's.
CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}"
    "<|end|>\n{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}")
SPECIALS = ["<|pad|>", "<|bos|>", "<|eos|>", "<|end|>", "<|system|>", "<|user|>",
            "<|assistant|>"]


def cache_root() -> Path:
    """specload's per-user cache, where the engine scripts keep what they make once: the
    rule of specload/host/user_cache.py, written out here because this script runs in the
    vLLM venv, where specload is not installed."""
    given = os.environ.get("SPECLOAD_CACHE")
    if given:
        return Path(given)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "specload"


def build_tokenizer(folder: Path, vocab: int) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    rows = [json.loads(line) for line in PROMPTS.read_text().splitlines() if line]
    texts = [m["content"] for row in rows for m in row.get("messages", [])]
    texts += [row["prompt"] for row in rows if "prompt" in row]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|bos|>",
                                   eos_token="<|eos|>", pad_token="<|pad|>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(folder)
    (folder / "chat_template.jinja").write_text(CHAT_TEMPLATE)


def build_model(folder: Path, layers: int, hidden: int, seed: int, max_len: int,
                draft_layers: int = 0, tail_scale: float = 1.0) -> int:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast.from_pretrained(folder)
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=hidden * 4,
                         num_hidden_layers=layers, num_attention_heads=max(1, hidden // 64),
                         num_key_value_heads=max(1, hidden // 64),
                         max_position_embeddings=max_len, bos_token_id=tok.bos_token_id,
                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                         tie_word_embeddings=True, torch_dtype="float32")
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        for layer in model.model.layers[draft_layers or layers:]:
            layer.self_attn.o_proj.weight.mul_(tail_scale)
            layer.mlp.down_proj.weight.mul_(tail_scale)
    model.save_pretrained(folder)
    if draft_layers:
        _save_draft(model, folder, draft_layers)
    return sum(p.numel() for p in model.parameters())


def _save_draft(target, folder: Path, draft_layers: int) -> None:
    """The target's first `draft_layers` layers with its embeddings and norm, as a model."""
    import copy

    from transformers import LlamaForCausalLM, PreTrainedTokenizerFast

    config = copy.deepcopy(target.config)
    config.num_hidden_layers = draft_layers
    draft = LlamaForCausalLM(config)
    draft.load_state_dict({k: v for k, v in target.state_dict().items()
                           if k in draft.state_dict()})
    draft.save_pretrained(folder / "draft")
    PreTrainedTokenizerFast.from_pretrained(folder).save_pretrained(folder / "draft")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--vocab", type=int, default=4096)
    parser.add_argument("--max-len", type=int, default=2048)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--draft-layers", type=int, default=0,
                        help="also write DIR/draft: the target's first N layers (default: none)")
    parser.add_argument("--tail-scale", type=float, default=1.0,
                        help="scale of the residual added by the layers the draft lacks")
    parser.add_argument("--out", type=Path, default=None,
                        help="the folder (default: the user's cache, keyed by size and seed)")
    args = parser.parse_args(argv)
    if not 0 <= args.draft_layers < args.layers:
        parser.error(f"--draft-layers must be 0 to {args.layers - 1}")
    draft = f"-d{args.draft_layers}x{args.tail_scale:g}" if args.draft_layers else ""
    folder = args.out or cache_root() / (f"vllm-model-l{args.layers}-h{args.hidden}"
                                     f"-v{args.vocab}-s{args.seed}{draft}")
    if (folder / "config.json").is_file():
        print(folder)
        return 0
    partial = folder.with_name(folder.name + ".partial")
    partial.mkdir(parents=True, exist_ok=True)
    build_tokenizer(partial, args.vocab)
    params = build_model(partial, args.layers, args.hidden, args.seed, args.max_len,
                         args.draft_layers, args.tail_scale)
    partial.rename(folder)
    print(f"vllm_model: {params / 1e6:.1f}M parameters in {folder}", file=sys.stderr)
    print(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
