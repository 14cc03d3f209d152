"""One engine step without a clock: schedule, price, sample acceptance, commit.

`EngineCore` is shared by the real-time server (`engine.py`, which sleeps for each
step's duration) and the virtual-time predictor (`virtual.py`, which just adds it up),
so both run exactly the same model. It also keeps the vLLM-style counters /metrics
exports (tokens, drafts, accepted drafts, preemptions, prefilled prompt tokens) and
each request's own draft tallies, which llama.cpp reports per request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from specload.sim import SimConfigError, draft_control
from specload.sim.acceptance import AcceptanceSampler
from specload.sim.cost_model import CostModel, SpecMode, StepCost
from specload.sim.draft_control import DraftControl, Inputs
from specload.sim.ema_tiers import EmaTierControl
from specload.sim.prefix_cache import PrefixCache, block_keys
from specload.sim.profile import Profile
from specload.sim.scheduler import BatchFormer, Seq
from specload.sim.verify_budget import VerifyBudgetControl


@dataclass(slots=True)
class StepResult:
    """A step's duration and the tokens it emitted per request."""

    cost: StepCost
    emitted: list[tuple[Seq, int]]
    batch_size: int
    k: int
    admitted: list[Seq]  # taken from the queue in this step (their prefill starts)
    prefill_tokens: int = 0  # prompt tokens computed in this step


@dataclass(slots=True)
class Counters:
    """Monotonic engine counters (vLLM V1 metric semantics)."""

    steps: int = 0
    prompt_tokens: int = 0
    generation_tokens: int = 0
    drafts: int = 0
    draft_tokens: int = 0
    accepted_tokens: int = 0
    preemptions: int = 0
    prefill_tokens: int = 0  # prompt tokens computed (cached ones are not)
    prefill_s: float = 0.0  # modelled duration of the steps that computed any
    busy_seqs: int = 0  # running requests, summed over steps
    # verification steps whose draft was accepted up to each position (vLLM's
    # SpecDecodingStats.observe_draft: num_accepted_tokens_per_pos, per step)
    accepted_per_pos: list[int] = field(default_factory=list)


# a flavour's adaptive controller (`flavors.Flavor.adaptive`) -> its `DraftControl`
ADAPTIVE: dict[str, Callable[[Inputs], DraftControl]] = {
    "verify_budget": VerifyBudgetControl, "ema_tiers": EmaTierControl}


def resolve_k(profile: Profile, mode: SpecMode, k: int | None) -> int:
    """The draft length for `mode`: fixed, or an adaptive controller's own (its server's
    num_speculative_tokens); 0 when off or scheduled. SimConfigError if bad."""
    if mode == "schedule" and k is not None:
        raise SimConfigError("--num-speculative-tokens applies to --spec on or adaptive; "
                             "--spec schedule takes k by batch size from its schedule")
    if mode not in ("on", "adaptive"):
        return 0
    k = profile.speculative.k if k is None else k
    limit = len(profile.speculative.acceptance)
    if not 1 <= k <= limit:
        raise SimConfigError(f"--num-speculative-tokens must be 1..{limit} for this profile")
    return k


class EngineCore:
    """Scheduler + cost model + acceptance sampling for one simulated server."""

    def __init__(self, profile: Profile, mode: SpecMode, k: int | None, seed: int,
                 max_num_seqs: int | None = None, prefix_caching: bool | None = None,
                 adaptive: str | None = None) -> None:
        if mode == "schedule" and not profile.speculative.adaptive:
            raise SimConfigError("--spec schedule needs a schedule: --adaptive-schedule, or "
                                 "speculative.adaptive in the profile")
        if mode == "adaptive" and adaptive not in ADAPTIVE:
            raise SimConfigError("--spec adaptive runs the flavour's engine's own controller; "
                                 "this flavour's engine has none (vllm and sglang have)")
        self.profile = profile
        self.mode = mode
        self.k = resolve_k(profile, mode, k)
        drafter = mode != "off"  # adaptive keeps the drafter loaded even when k = 0
        sched = profile.scheduler
        caching = sched.prefix_caching if prefix_caching is None else prefix_caching
        speculating = mode in ("on", "adaptive")  # started with its speculative settings
        self.former = BatchFormer(max_num_seqs or profile.max_num_seqs(speculating),
                                  sched.max_num_batched_tokens, profile.kv_capacity(drafter),
                                  PrefixCache(sched.block_size) if caching else None,
                                  profile.model.sliding_window)
        self.cost_model = CostModel(profile, mode)
        spec = profile.speculative
        self.sampler = AcceptanceSampler(spec.acceptance, seed, spec.acceptance_by_category,
                                         spec.acceptance_by_batch)
        self.counters = Counters()
        self.control: DraftControl = (
            draft_control.schedule(profile.speculative.adaptive) if mode == "schedule"
            else ADAPTIVE[adaptive](Inputs(profile, self.k, self.cost_model, self.sampler))
            if mode == "adaptive" and adaptive else draft_control.fixed(self.k))
        too_long = self.control.max_k - len(spec.acceptance)
        if too_long > 0:
            raise SimConfigError(f"the {adaptive} controller drafts up to "
                                 f"{self.control.max_k} tokens; the profile has acceptance "
                                 f"rates for {len(spec.acceptance)}: give it more, or tiers "
                                 "that draft fewer (speculative.ema_tiers)")
        # the most tokens a step may draft: vLLM's num_speculative_tokens, a schedule's
        # largest k (one labelled per-position counter each)
        self.max_k = self.control.max_k

    def block_keys(self, token_text: str) -> tuple[int, ...]:
        """The prefix cache's keys of a prompt's full blocks (none when caching is off)."""
        cache = self.former.cache
        return block_keys(token_text, cache.block_tokens) if cache else ()

    def add(self, seq: Seq) -> None:
        self.former.add(seq)
        self.counters.prompt_tokens += seq.prompt_tokens

    def abort(self, seq: Seq) -> None:
        self.former.abort(seq)

    def has_work(self) -> bool:
        return self.former.has_work()

    @property
    def num_running(self) -> int:
        return len(self.former.running)

    @property
    def num_waiting(self) -> int:
        return len(self.former.waiting)

    @property
    def kv_usage(self) -> float:
        return self.former.kv_in_use / self.former.kv_capacity

    def step(self) -> StepResult | None:
        """Schedule and commit one step; None when there is nothing to run."""
        control = self.control
        batch = self.former.schedule(control.draft_k)
        c = self.counters
        c.preemptions += len(batch.preempted)
        if not batch:
            return None
        control.verify(batch)
        sample = self.sampler.sample
        decoding = len(batch.decode)
        accepted = [sample(s.sched_k, s.category, decoding) if s.sched_k else 0
                    for s in batch.decode]
        if batch.shape.k:
            control.observe(batch, accepted)
        for seq, acc in zip(batch.decode, accepted, strict=True):
            if seq.sched_k:
                c.drafts += 1
                c.draft_tokens += seq.sched_k
                c.accepted_tokens += acc
                _count_positions(c.accepted_per_pos, acc)
                _count_drafts(seq, acc)
        cost = self.cost_model.cost(batch.shape)
        prefill = sum(s.sched_tokens for s in batch.prefill)
        if prefill:
            c.prefill_tokens += prefill
            c.prefill_s += cost.total
        c.busy_seqs += self.num_running
        emitted = self.former.commit(batch, accepted)
        c.steps += 1
        c.generation_tokens += sum(n for _, n in emitted)
        return StepResult(cost, emitted, batch.shape.num_seqs, batch.k, batch.admitted,
                          prefill)


def _count_positions(per_pos: list[int], accepted: int) -> None:
    if len(per_pos) < accepted:
        per_pos.extend([0] * (accepted - len(per_pos)))
    for i in range(accepted):
        per_pos[i] += 1


def _count_drafts(seq: Seq, accepted: int) -> None:
    """One verification step of `seq`'s drafts in its own tallies (llama.cpp reports
    them per request)."""
    seq.drafts += 1
    seq.draft_tokens += seq.sched_k
    seq.accepted += accepted
    hist = seq.accept_hist
    if len(hist) <= seq.sched_k:
        hist.extend([0] * (seq.sched_k + 1 - len(hist)))
    hist[accepted] += 1
    if seq.step_accepted is not None and seq.step_drafted is not None:
        seq.step_accepted.append(accepted)
        seq.step_drafted.append(seq.sched_k)
