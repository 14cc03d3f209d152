"""Pure continuous-batching batch former, modelled on vLLM V1's scheduler.

Requests run in admission order. Each step every running request gets tokens from a
per-step budget: a decoding request 1 + k (its last token plus k drafts to verify), a
prefilling one a chunk of its remaining prompt. KV-cache slots are taken for the
scheduled tokens; when a running request cannot get them, the newest running request
is preempted: its KV is freed, it goes back to the front of the queue and later
recomputes its prompt and everything it had generated (vLLM's recompute preemption).
Waiting requests are admitted only in steps without preemption, while there is budget,
a free sequence slot and KV room for their first chunk.

With a prefix cache (`prefix_cache.py`), a request admitted from the queue first takes
the longest run of its prompt's blocks that is cached: those tokens count as computed
and are not prefilled, at most all but the prompt's last token (vLLM V1 recomputes
that one for its logits, `kv_cache_manager.get_computed_blocks`). The blocks a request
prefills join the cache as they fill. KV room is the private tokens of running
requests plus every cached block; cached blocks nobody uses are evicted before anyone
is preempted. No clock and no randomness here.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from specload.sim.cost_model import StepShape
from specload.sim.prefix_cache import PrefixCache


@dataclass(slots=True, eq=False)
class Seq:
    """One request inside the engine."""

    key: Any  # the owner's handle (HTTP request, virtual user, ...)
    prompt_tokens: int
    target_tokens: int  # output tokens to produce before finishing
    generated: int = 0
    computed: int = 0  # tokens whose KV is in the cache
    preemptions: int = 0
    finished: bool = False
    sched_tokens: int = 0  # tokens scheduled in the current step
    sched_k: int = 0  # drafts verified in the current step (decode only)
    # keys of full blocks (prefix_cache.py): the prompt's, then for a chat those of the
    # history the next turn will send (prompt and reply), cached when the request finishes
    blocks: tuple[int, ...] = ()
    held: int = 0  # leading blocks this request uses from the prefix cache
    cached_tokens: int = -1  # prompt tokens found cached on first admission (-1: not yet)
    # speculative decoding of this request: verification steps, draft tokens, accepted
    # drafts, and how many steps accepted exactly i drafts (`accept_hist[i]`)
    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    accept_hist: list[int] = field(default_factory=list)
    # drafts accepted and proposed at each verification step, in order (vLLM's `detailed`
    # per-request metrics), when the server keeps them
    step_accepted: list[int] | None = None
    step_drafted: list[int] | None = None
    category: str | None = None  # the prompt's, where known (`categories.py`)

    @property
    def context(self) -> int:
        return self.prompt_tokens + self.generated

    @property
    def decoding(self) -> bool:
        """Prefill done: only the last sampled token lacks KV."""
        return self.generated > 0 and self.computed == self.context - 1


@dataclass(slots=True)
class Batch:
    """One scheduled step."""

    k: int
    decode: list[Seq] = field(default_factory=list)
    prefill: list[Seq] = field(default_factory=list)
    preempted: list[Seq] = field(default_factory=list)
    admitted: list[Seq] = field(default_factory=list)  # taken from the queue this step
    shape: StepShape = field(default_factory=StepShape)

    def __bool__(self) -> bool:
        return bool(self.decode or self.prefill)


class BatchFormer:
    """Running set, waiting queue and KV accounting."""

    def __init__(self, max_num_seqs: int, max_num_batched_tokens: int, kv_capacity: int,
                 cache: PrefixCache | None = None, window: int = 0) -> None:
        self.max_num_seqs = max_num_seqs
        self.window = window  # the model's sliding window: its KV reads are counted apart
        self.token_budget = max_num_batched_tokens
        self.kv_capacity = kv_capacity
        self.cache = cache
        self.running: list[Seq] = []
        self.waiting: deque[Seq] = deque()
        self.kv_used = 0  # tokens running requests hold outside the prefix cache
        self.prefix_queries = 0  # prompt tokens of new requests looked up (vLLM's counters)
        self.prefix_hits = 0  # of them found cached
        self.admit_hit_rate = 0.0  # hits / prompt tokens of the last step that admitted any

    def add(self, seq: Seq) -> None:
        """Queue a new request."""
        self.waiting.append(seq)

    def abort(self, seq: Seq) -> None:
        """Drop a request wherever it is (client went away); frees its KV."""
        if seq in self.waiting:
            self.waiting.remove(seq)
        elif seq in self.running:
            self.running.remove(seq)
            self._free(seq)
        seq.finished = True

    @property
    def kv_total(self) -> int:
        """KV tokens taken: running requests' own and every cached block."""
        return self.kv_used + (self.cache.tokens if self.cache else 0)

    @property
    def kv_in_use(self) -> int:
        """KV tokens running requests use (cached blocks nobody uses are free to take)."""
        return self.kv_used + (self.cache.used_tokens if self.cache else 0)

    def _free(self, seq: Seq) -> None:
        """Give back a request's KV: its own tokens, and its cached blocks to the cache."""
        block = self.cache.block_tokens if self.cache else 0
        self.kv_used -= seq.computed - seq.held * block
        if self.cache and seq.held:
            self.cache.release(seq.blocks[:seq.held])
        seq.held = 0

    def _room(self, n: int) -> bool:
        """Whether n more tokens fit, evicting unused cached blocks as needed."""
        while self.kv_total + n > self.kv_capacity:
            if self.cache is None or not self.cache.evict():
                return False
        return True

    def has_work(self) -> bool:
        return bool(self.running or self.waiting)

    def batch_size_hint(self) -> int:
        """The batch size a step is about to have, for choosing k adaptively."""
        return min(self.max_num_seqs, len(self.running) + len(self.waiting))

    def _preempt_last(self, batch: Batch) -> Seq:
        victim = self.running.pop()
        self._free(victim)
        victim.computed = 0
        victim.preemptions += 1
        self.waiting.appendleft(victim)
        batch.preempted.append(victim)
        return victim

    def _take_kv(self, seq: Seq, n: int, batch: Batch) -> bool:
        """Reserve n slots for `seq`, preempting newer requests; False if `seq` itself went."""
        while not self._room(n):
            if self._preempt_last(batch) is seq:
                return False
        self.kv_used += n
        return True

    def _lookup(self, seq: Seq) -> None:
        """Take the cached blocks at the head of a queued request's prompt."""
        cache = self.cache
        if cache is None or not seq.blocks:
            return
        hit = cache.match(seq.blocks, (seq.prompt_tokens - 1) // cache.block_tokens)
        cache.acquire(seq.blocks[:hit])
        seq.held = hit
        seq.computed = hit * cache.block_tokens

    def _admit(self, budget: int) -> tuple[Seq, int] | None:
        """Move the head of the queue into the running set with its first chunk, if it fits."""
        seq = self.waiting[0]
        self._lookup(seq)
        n = min(seq.context - seq.computed, budget)
        if not self._room(n):
            self._free(seq)
            seq.computed = 0
            return None
        self.waiting.popleft()
        self.running.append(seq)
        self.kv_used += n
        if seq.cached_tokens < 0:  # vLLM counts a preempted request's lookups apart
            seq.cached_tokens = seq.computed
            self.prefix_queries += seq.prompt_tokens
            self.prefix_hits += seq.computed
        return seq, n

    def schedule(self, k_for_batch: Callable[[int], int]) -> Batch:
        """Form the next step; reserves KV for everything scheduled."""
        k = k_for_batch(self.batch_size_hint())
        batch = Batch(k=k)
        shape = batch.shape
        shape.window = self.window
        budget = self.token_budget
        i = 0
        while i < len(self.running) and budget > 0:
            seq = self.running[i]
            if seq.decoding:
                n = min(1 + k, budget)
                seq.sched_k = n - 1
            else:
                n = min(seq.context - seq.computed, budget)
                seq.sched_k = 0
            if not self._take_kv(seq, n, batch):
                break
            seq.sched_tokens = n
            budget -= n
            self._account(seq, n, batch)
            i += 1
        if not batch.preempted:
            queried = hits = 0
            while self.waiting and len(self.running) < self.max_num_seqs and budget > 0:
                admitted = self._admit(budget)
                if admitted is None:
                    break
                seq, n = admitted
                batch.admitted.append(seq)
                queried += seq.prompt_tokens
                hits += seq.computed
                seq.sched_tokens, seq.sched_k = n, 0
                budget -= n
                self._account(seq, n, batch)
            if queried:
                self.admit_hit_rate = hits / queried
        shape.num_seqs = len(batch.decode) + len(batch.prefill)
        shape.num_decode = len(batch.decode)
        shape.num_spec_seqs = len(batch.decode) if k else 0
        shape.k = k
        shape.drafts = sum(seq.sched_k for seq in batch.decode)
        shape.num_waiting = len(self.waiting)
        return batch

    @staticmethod
    def verify_only(batch: Batch, verified: list[int]) -> None:
        """Verify only the first `verified[i]` of `batch.decode[i]`'s drafts (a verify
        budget, vLLM's adaptive verification): the drafter still drafted all `k`, the
        target computes fewer tokens. The KV reserved for the rest is freed at commit."""
        shape = batch.shape
        for seq, keep in zip(batch.decode, verified, strict=True):
            _shape_add(shape, seq, 1 + seq.sched_k, -1)
            seq.sched_k = keep
            _shape_add(shape, seq, 1 + keep, 1)
        shape.drafts = sum(verified)

    @staticmethod
    def _account(seq: Seq, n: int, batch: Batch) -> None:
        (batch.decode if seq.decoding else batch.prefill).append(seq)
        _shape_add(batch.shape, seq, n, 1)

    def commit(self, batch: Batch, accepted: list[int]) -> list[tuple[Seq, int]]:
        """Apply a step's results; `accepted[i]` drafts were accepted for `batch.decode[i]`.

        Returns (request, tokens emitted) for every request that emitted tokens; finished
        requests are marked and leave the running set with their KV freed.
        """
        out: list[tuple[Seq, int]] = []
        for seq, acc in zip(batch.decode, accepted, strict=True):
            if seq.finished:
                continue
            n = min(1 + acc, seq.target_tokens - seq.generated)
            self.kv_used -= seq.sched_tokens - n
            seq.computed += n
            seq.generated += n
            out.append((seq, n))
        for seq in batch.prefill:
            if seq.finished:
                continue
            seq.computed += seq.sched_tokens
            self._publish(seq)
            if seq.computed == seq.context:
                seq.generated += 1
                out.append((seq, 1))
        for seq, _ in out:
            if seq.generated >= seq.target_tokens:
                seq.finished = True
                self.running.remove(seq)
                self._free(seq)
                self._keep_reply(seq)
        return out

    def _keep_reply(self, seq: Seq) -> None:
        """Cache a finished request's history blocks past its prompt, while there is room."""
        cache = self.cache
        if cache is None:
            return
        for key in seq.blocks[seq.prompt_tokens // cache.block_tokens:]:
            if key not in cache and not self._room(cache.block_tokens):
                return
            cache.keep(key)

    def _publish(self, seq: Seq) -> None:
        """Move the prompt blocks a request has filled from its own KV into the cache."""
        cache = self.cache
        if cache is None:
            return
        # only blocks with keys move (a request without any keeps its KV to itself)
        full = min(min(seq.computed, seq.prompt_tokens) // cache.block_tokens, len(seq.blocks))
        if full <= seq.held:
            return
        for key in seq.blocks[seq.held:full]:
            cache.insert(key)
        self.kv_used -= (full - seq.held) * cache.block_tokens
        seq.held = full


def _shape_add(shape: StepShape, seq: Seq, n: int, sign: int) -> None:
    """Add (`sign` 1) or take away (-1) `seq`'s `n` scheduled tokens in `shape`."""
    shape.tokens += sign * n
    ctx = seq.computed + n
    shape.kv_read_tokens += sign * ctx
    if shape.window:  # the window behind each of the n query tokens, as one span
        shape.kv_window_tokens += sign * min(ctx, shape.window + n - 1)
    if seq.decoding:
        shape.attn_token_ctx += sign * n * ctx
        shape.logit_tokens += sign * n
    else:
        shape.logit_tokens += sign * (ctx >= seq.context)
        shape.attn_token_ctx += sign * n * (seq.computed + n // 2)
