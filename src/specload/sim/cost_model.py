"""Pure roofline model of one engine step's duration.

A step runs every scheduled token through the target model once: it reads the dense
weights, the routed experts its tokens hit (MoE) and the KV cache of every scheduled
request, and it performs 2·params FLOPs per token plus attention. Its GPU time is the
larger of bytes/bandwidth and FLOPs/compute (each derated by an achieved efficiency);
tensor-parallel all-reduce over a slow interconnect (PCIe), drafting, fixed
launch/sampling time and per-request host time are added on top because they do not
overlap with the target's forward pass. A draft tree verifies `verify_tokens_per_draft`
target tokens per draft position.
"""

from __future__ import annotations

from dataclasses import dataclass

from specload.sim.profile import Profile


@dataclass(slots=True)
class StepShape:
    """What a scheduled step contains, in the units the cost model needs."""

    tokens: int = 0  # query tokens: decode (1 + k each) plus prefill chunk tokens
    kv_read_tokens: int = 0  # context tokens whose KV is read
    attn_token_ctx: int = 0  # Σ query tokens × context length (attention FLOPs)
    num_seqs: int = 0  # requests in the step
    num_spec_seqs: int = 0  # decode requests speculating this step
    k: int = 0  # draft positions this step (0: no speculation)
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


class CostModel:
    """Step-time roofline for one profile; constants folded once, `cost` is cheap."""

    def __init__(self, profile: Profile) -> None:
        hw, m = profile.hardware, profile.model
        self._bw = hw.num_gpus * hw.mem_bandwidth_gbs * 1e9 * hw.eta_mem
        self._flops = hw.num_gpus * hw.tflops * 1e12 * hw.eta_compute
        self._dense_bytes = m.dense_weight_gb * 1e9
        self._expert_bytes = m.expert_weight_gb * 1e9
        self._miss = 1.0 - m.experts_active / m.experts_total if m.experts_total else 1.0
        self._kv_bytes = m.kv_bytes_per_token
        self._flops_per_token = 2.0 * m.active_params_b * 1e9
        self._attn = m.attn_flops_per_token_ctx
        self._comm = (m.allreduce_bytes_per_token / (hw.interconnect_gbs * 1e9)
                      if hw.interconnect_gbs else 0.0)
        s, o = profile.speculative, profile.overheads
        self._draft_step, self._draft_seq = s.draft_step_s, s.draft_per_seq_s
        self._tree_extra = s.verify_tokens_per_draft - 1.0
        self._spec_cpu = s.cpu_per_seq_s
        self._t0, self._per_seq, self._per_wait = o.step_s, o.per_seq_s, o.per_waiting_s

    def weight_bytes(self, tokens: int) -> float:
        """Weights read for `tokens` tokens: dense always, experts by expected hit share."""
        if not self._expert_bytes:
            return self._dense_bytes
        return self._dense_bytes + self._expert_bytes * (1.0 - self._miss**tokens)

    def cost(self, shape: StepShape) -> StepCost:
        """The duration of a step of this shape (zero for an empty step)."""
        if shape.num_seqs == 0:
            return StepCost(0.0, 0.0, 0.0, 0.0, 0.0)
        tokens = shape.tokens + self._tree_extra * shape.k * shape.num_spec_seqs
        memory = (self.weight_bytes(tokens) + self._kv_bytes * shape.kv_read_tokens) / self._bw
        compute = (self._flops_per_token * tokens + self._attn * shape.attn_token_ctx) / self._flops
        draft = 0.0
        if shape.k and shape.num_spec_seqs:
            draft = shape.k * (self._draft_step + self._draft_seq * shape.num_spec_seqs)
        host = (
            self._t0
            + self._per_seq * shape.num_seqs
            + self._spec_cpu * shape.num_spec_seqs
            + self._per_wait * shape.num_waiting
        )
        comm = self._comm * tokens
        return StepCost(max(memory, compute) + comm + draft + host, memory, compute, draft, host,
                        comm)
