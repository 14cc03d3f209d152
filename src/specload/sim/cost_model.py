"""Pure roofline model of one engine step's duration.

A step runs every scheduled token through the target model once: it reads the dense
weights, the routed experts its tokens hit (MoE) and the KV cache of every scheduled
request, and it performs 2·params FLOPs per token plus attention (the output head's
share only for the tokens whose logits it computes: decode tokens and a prompt's last).
The KV of a model's sliding-window layers is read only for each request's last
`sliding_window` tokens, that of its full-attention layers for the whole context. Its
GPU time is the larger of bytes/bandwidth and FLOPs/compute (each derated by an achieved
efficiency; with `attention_apart`, the matmuls' roofline plus attention's: separate
kernels, one after the other; the FLOP rate may rise with the step's tokens, and a CPU's
kernels that take the tokens in tiles stream the weights once per tile and once per
token left over), plus tensor-parallel all-reduces (a fixed latency per call and bytes
over the interconnect; both stall the forward pass), the drafter's forwards and, for a
step larger than the largest captured CUDA graph, its kernels' launches one by one. A
draft tree verifies `verify_tokens_per_draft` target tokens per draft position. Host
time (scheduling, per-request bookkeeping, queue scans) either adds to the GPU time or,
for an engine that overlaps it with the GPU (SGLang's overlap scheduler, vLLM's async
scheduling), hides under it: the step then takes the larger of the two. A k = 0 step
with a drafter loaded (a batch-size schedule's "off" tier) still pays a draft forward
that keeps the drafter's KV in sync, as a fraction of the step; a step verifying under a
budget (vLLM's adaptive verification) pays the budget's sizing and its variable-length
verification. A profile's `unexplained` time (what a published measurement shows beyond
this model) is added last.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from specload.sim.profile import Profile

SpecMode = Literal["on", "off", "schedule", "adaptive"]


@dataclass(slots=True)
class StepShape:
    """What a scheduled step contains, in the units the cost model needs."""

    tokens: int = 0  # query tokens: decode (1 + k each) plus prefill chunk tokens
    kv_read_tokens: int = 0  # context tokens whose KV is read
    kv_window_tokens: int = 0  # of them, those inside the sliding window (`window` each)
    window: int = 0  # the model's sliding window (0: none), for the scheduler's sums
    attn_token_ctx: int = 0  # Σ query tokens × context length (attention FLOPs)
    logit_tokens: int = 0  # query tokens whose logits are computed: decode, prompts' last
    num_seqs: int = 0  # requests in the step
    num_decode: int = 0  # of which decoding (the rest prefill)
    num_spec_seqs: int = 0  # decode requests speculating this step
    k: int = 0  # draft positions this step (0: no speculation)
    drafts: int = 0  # draft tokens the target verifies, over every request
    varlen: bool = False  # verified under a budget: requests verify different counts
    num_waiting: int = 0  # requests left in the queue


@dataclass(frozen=True, slots=True)
class StepCost:
    """A step's duration and its parts, in seconds."""

    total: float
    memory: float
    compute: float
    draft: float
    host: float
    comm: float = 0.0
    sync: float = 0.0  # the k = 0 draft forward of a loaded drafter
    unexplained: float = 0.0


class CostModel:
    """Step-time roofline for one profile; constants folded once, `cost` is cheap.

    A step that speculates (k > 0) on a profile whose engine turns its overlap scheduler
    off for speculative decoding (SGLang's EAGLE worker) pays its host time on top of
    the GPU's. In the `schedule` and `adaptive` modes a k = 0 step behaves as with
    speculation off, plus the drafter's sync forward: the mode switches between the two
    arms' behaviours.
    """

    def __init__(self, profile: Profile, mode: SpecMode = "off") -> None:
        hw, m = profile.hardware, profile.model
        self._bw = hw.num_gpus * hw.mem_bandwidth_gbs * 1e9 * hw.eta_mem
        self._flops = hw.num_gpus * hw.tflops * 1e12 * hw.eta_compute
        self._ramp = hw.compute_ramp_tokens
        self._attention_apart = hw.attention_apart
        self._tile = hw.compute_tile_tokens
        self._dense_bytes = m.dense_weight_gb * 1e9
        self._expert_bytes = m.expert_weight_gb * 1e9
        self._miss = 1.0 - m.experts_active / m.experts_total if m.experts_total else 1.0
        self._kv_bytes = m.kv_bytes_per_token
        self._window_kv_bytes = m.window_kv_bytes_per_token
        self._flops_per_token = 2.0 * (m.active_params_b - m.head_params_b) * 1e9
        self._head_flops = 2.0 * m.head_params_b * 1e9
        self._attn = m.attn_flops_per_token_ctx
        self._comm = (m.allreduce_bytes_per_token / (hw.interconnect_gbs * 1e9)
                      if hw.interconnect_gbs else 0.0)
        self._comm_fixed = m.allreduces_per_forward * hw.allreduce_latency_s
        s, o = profile.speculative, profile.overheads
        self._draft_step, self._draft_seq = s.draft_step_s, s.draft_per_seq_s
        self._extra_forwards = s.extra_draft_forwards
        self._tree_extra = s.verify_tokens_per_draft - 1.0
        self._spec_cpu = s.cpu_per_seq_s
        self._sync = s.k0_overhead if mode in ("schedule", "adaptive") else 0.0
        self._varlen = s.verify_budget.step_s
        self._overlap = o.overlap
        self._spec_no_overlap = s.disables_overlap
        self._t0, self._per_seq, self._per_wait = o.step_s, o.per_seq_s, o.per_waiting_s
        self._graph_max, self._eager = o.graph_max_tokens, o.eager_step_s
        u = profile.unexplained
        self._u_step, self._u_seq = u.step_s, u.per_seq_s
        self._u_spec, self._u_wait = u.per_spec_seq_s, u.per_waiting_s
        self._u_token = u.per_decode_token_s
        self._u_wait_share = u.waiting_share

    def weight_bytes(self, tokens: float) -> float:
        """Weights read for `tokens` tokens: dense always, experts by expected hit share."""
        if not self._expert_bytes:
            return self._dense_bytes
        return self._dense_bytes + self._expert_bytes * (1.0 - self._miss**tokens)

    def weight_passes(self, tokens: float) -> float:
        """How many times a step of `tokens` tokens streams the weights: once, or with
        tiled kernels once per whole tile and once more per token left over."""
        if not self._tile or tokens <= 0:
            return 1.0
        tiles = tokens // self._tile
        return max(1.0, tiles + (tokens - tiles * self._tile))

    def cost(self, shape: StepShape) -> StepCost:
        """The duration of a step of this shape (zero for an empty step)."""
        if shape.num_seqs == 0:
            return StepCost(0.0, 0.0, 0.0, 0.0, 0.0)
        tokens = shape.tokens + self._tree_extra * shape.drafts
        ramp = 1.0 + self._ramp / tokens if tokens else 1.0
        weights = self.weight_bytes(tokens) * self.weight_passes(tokens) / self._bw
        kv = (self._kv_bytes * shape.kv_read_tokens
              + self._window_kv_bytes * shape.kv_window_tokens) / self._bw
        logits = shape.logit_tokens + (tokens - shape.tokens)  # a tree's extras are verified
        matmul = (self._flops_per_token * tokens + self._head_flops * logits) / self._flops * ramp
        attention = self._attn * shape.attn_token_ctx / self._flops * ramp
        memory, compute = weights + kv, matmul + attention
        comm = self._comm_fixed + self._comm * tokens
        draft = 0.0
        if shape.k and shape.num_spec_seqs:
            forwards = shape.k + self._extra_forwards
            draft = forwards * (self._draft_step + self._draft_seq * shape.num_spec_seqs)
        roofline = (max(weights, matmul) + max(kv, attention) if self._attention_apart
                    else max(memory, compute))
        gpu = roofline + comm + draft
        if self._graph_max and tokens > self._graph_max:
            gpu += self._eager
        host = (
            self._t0
            + self._per_seq * shape.num_seqs
            + self._spec_cpu * shape.num_spec_seqs
            + self._per_wait * shape.num_waiting
        )
        overlap = self._overlap and not (shape.k and self._spec_no_overlap)
        total = max(gpu, host) if overlap else gpu + host
        sync = self._sync * total if shape.k == 0 and shape.num_decode else 0.0
        step = total + sync + (self._varlen if shape.varlen else 0.0)
        unexplained = (self._u_step + self._u_seq * shape.num_seqs
                       + self._u_spec * shape.num_spec_seqs
                       + self._u_token * (shape.num_decode + shape.drafts)
                       + (self._u_wait + self._u_wait_share * step) * shape.num_waiting)
        return StepCost(step + unexplained, memory, compute, draft, host, comm, sync,
                        unexplained)
