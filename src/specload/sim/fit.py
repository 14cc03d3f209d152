"""Fit a profile's free parameters to a measured sweep: the math behind `specload sim-fit`.

The input is what a sweep of a real server gives per arm and concurrency: client output
tok/s and, where /metrics was sampled, the server's mean running requests and mean
acceptance length. Two things are read off the data directly: the acceptance rates
(scaled from the base profile's so that E[accepted + 1] at the arm's k matches the
measured acceptance length) and each arm's running-request cap (when the running count
stays flat below C at the top rungs). The remaining free parameters
(achieved bandwidth, host overheads, drafter costs by default) are fitted by
Nelder-Mead on the weighted L4 norm of the log errors of tok/s over every rung (the
criterion a twin is judged by is its worst rung; each rung weighted by how closely its
repeats agree, where the sweep repeated it), each candidate
priced by the same virtual-time closed loop that `sim-curve` runs, with a weak pull
towards the base profile's values so that parameters the data cannot see stay put.
Where the sweep's repeats give a range of speedups at a concurrency (each repeat's
spec-on over its own spec-off), the twin's speedup is charged for falling outside it
too: each arm inside its own range still leaves the ratio the product of both ranges'
play, and the side of 1 it falls on is the twin's C*. The twin's speedup at each
concurrency both arms measured is set beside the sweep's.
Each parameter moves log-uniformly inside physically plausible bounds. Pure: no files,
no clock, deterministic for a seed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from specload.sim import SimConfigError
from specload.sim.acceptance import expected_tokens_per_step
from specload.sim.core import SpecMode
from specload.sim.cost_model import CostModel, StepShape
from specload.sim.profile import Profile
from specload.sim.virtual import run_closed_loop

# Search bounds of every parameter sim-fit may move (log-uniform between them).
BOUNDS: dict[str, tuple[float, float]] = {
    "hardware.eta_mem": (0.2, 1.0),
    "hardware.eta_compute": (0.1, 1.0),
    "hardware.compute_ramp_tokens": (0.01, 64.0),
    "hardware.interconnect_gbs": (1.0, 1000.0),
    "hardware.allreduce_latency_s": (1e-6, 2e-4),
    "overheads.step_s": (1e-4, 0.05),
    "overheads.per_seq_s": (1e-7, 1e-2),
    "overheads.per_waiting_s": (1e-7, 1e-2),
    "unexplained.step_s": (1e-6, 0.1),
    "unexplained.per_seq_s": (1e-7, 0.05),
    "unexplained.per_spec_seq_s": (1e-7, 0.05),
    "unexplained.per_waiting_s": (1e-7, 0.01),
    "unexplained.waiting_share": (1e-4, 0.1),
    "speculative.draft_step_s": (1e-5, 0.02),
    "speculative.draft_per_seq_s": (1e-7, 1e-3),
    "speculative.cpu_per_seq_s": (1e-7, 1e-2),
}
HOST_PARAMS = ("hardware.eta_mem", "overheads.step_s", "overheads.per_seq_s")
COMPUTE_PARAMS = ("hardware.eta_compute", "hardware.compute_ramp_tokens")
SPEC_PARAMS = ("speculative.draft_step_s", "speculative.draft_per_seq_s",
               "speculative.cpu_per_seq_s")
WAITING_PARAM = "unexplained.waiting_share"
SCAN = (0.0, 0.25, 0.5, 0.75, 1.0)  # where a parameter the base lacks is tried first
PULL = 0.02  # weight of the pull towards the base profile, per parameter
# a rung counts in the fit by 1 / spread^2, its repeats' spread taken as at least this:
# a rung measured once, or whose repeats agree more closely
NOISE_FLOOR = 0.03
# the loss is the weighted L4 norm of the log errors: it leans towards the worst rung
# (least squares takes one rung 10% off and nine 2% off over all ten 5% off; this takes
# the latter) and, unlike the maximum, still averages noise over the rungs
NORM = 4
CAP_FLAT = 0.1  # top rungs' running counts within 10% of each other ...
CAP_BELOW = 0.9  # ... and below 90% of C: the server caps its running set
MATCH_ROUNDS = 3  # corrections of the acceptance lengths by batch (`_lengths_by_batch`)
LENGTH_MARGIN = 0.01  # a length stays this far inside (1, k + 1)


@dataclass(frozen=True, slots=True)
class Rung:
    """One measured arm x concurrency."""

    mode: SpecMode
    users: int
    output_tok_s: float
    running: float | None = None  # server's mean running requests
    accept_len: float | None = None  # server's mean E[accepted + 1] per verify step
    spread: float | None = None  # s.d. of log tok/s between repeats, where repeated
    # the repeats' lowest and highest tok/s: which one a busy moment slowed cannot be
    # told, so anywhere between them fits
    within: tuple[float, float] | None = None


def log_miss(predicted: float, observed: float,
             within: tuple[float, float] | None = None) -> float:
    """|log(predicted / observed)|, or for a rung measured as a range, how far outside it."""
    pr = max(predicted, 1e-9)
    if within is None:
        return abs(math.log(pr / observed))
    low, high = within
    return max(math.log(pr / high), math.log(low / pr), 0.0)


def fit_error(predicted: Sequence[float], observed: Sequence[float],
              weights: Sequence[float],
              within: Sequence[tuple[float, float] | None] | None = None) -> float:
    """The weighted `NORM`-norm of the log errors (`log_miss`), squared so that it is in
    the units of a mean squared log error (which it is for `NORM` = 2): the pull is added
    to it."""
    scaled = [w ** (NORM / 2) for w in weights]
    ranges = within or [None] * len(observed)
    total = sum(s * log_miss(pr, ob, rg) ** NORM
                for pr, ob, s, rg in zip(predicted, observed, scaled, ranges, strict=True))
    return (total / sum(scaled)) ** (2 / NORM)


@dataclass(frozen=True, slots=True)
class Observations:
    """A sweep, reduced to what the fit needs."""

    rungs: tuple[Rung, ...]
    prompt_tokens: int
    output_tokens: int
    k: int | None = None  # the spec-on arm's draft length (None: the profile's)
    # per concurrency, the lowest and highest speedup (spec-on / spec-off tok/s) of the
    # sweep's repeats, where it repeated both arms
    speedup_within: dict[int, tuple[float, float]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Residual:
    mode: SpecMode | None  # None: the speedup, spec-on over spec-off
    users: int
    observed: float
    predicted: float

    @property
    def rel(self) -> float:
        return self.predicted / self.observed - 1.0


@dataclass(slots=True)
class FitResult:
    profile: Profile
    origins: dict[str, str]
    residuals: list[Residual]
    evaluations: int
    notes: list[str] = field(default_factory=list)
    speedups: list[Residual] = field(default_factory=list)


def get_param(data: dict[str, Any], path: str) -> Any:
    section, key = path.split(".")
    return data[section][key]


def set_param(data: dict[str, Any], path: str, value: Any) -> None:
    section, key = path.split(".")
    data[section][key] = value


def predict_rungs(profile: Profile, obs: Observations, seed: int = 0) -> list[float]:
    """The profile's steady-state tok/s at every observed rung, with the run's workload."""
    return [run_closed_loop(profile, r.mode, obs.k if r.mode == "on" else None, r.users,
                            seed=seed, prompt_tokens=obs.prompt_tokens,
                            output_tokens=obs.output_tokens).output_tok_s
            for r in obs.rungs]


def speedup_pairs(obs: Observations) -> list[tuple[int, int, int]]:
    """(C, spec-on index, spec-off index) in `obs.rungs` wherever each arm has exactly one
    rung at C (a multi-k run's several spec-on arms have no one speedup)."""
    def index(mode: SpecMode, users: int) -> int | None:
        found = [i for i, r in enumerate(obs.rungs) if r.mode == mode and r.users == users]
        return found[0] if len(found) == 1 else None

    pairs = []
    for users in sorted({r.users for r in obs.rungs}):
        on, off = index("on", users), index("off", users)
        if on is not None and off is not None:
            pairs.append((users, on, off))
    return pairs


def scale_acceptance(rates: Sequence[float], k: int, target: float) -> list[float]:
    """The base rates times one factor, so that E[accepted + 1] at k equals `target`; a
    base with fewer positions than k repeats its last rate for the rest."""
    if not 1.0 < target < k + 1.0:
        raise SimConfigError(f"a mean acceptance length of {target:.2f} is impossible at k={k}")
    rates = [*rates, *[rates[-1]] * (k - len(rates))]
    lo, hi = 0.0, 1.0 / max(rates[:k])
    for _ in range(60):
        mid = (lo + hi) / 2
        if expected_tokens_per_step([min(r * mid, 0.999) for r in rates], k) < target:
            lo = mid
        else:
            hi = mid
    return [round(min(r * lo, 0.999), 4) for r in rates]


def running_cap(rungs: Sequence[Rung]) -> int | None:
    """A running-request cap the top two rungs show, or None."""
    seen = sorted((r for r in rungs if r.running is not None), key=lambda r: r.users)
    if len(seen) < 2:
        return None
    a, b = seen[-2], seen[-1]
    assert a.running is not None and b.running is not None
    flat = abs(b.running - a.running) <= CAP_FLAT * max(a.running, b.running)
    if flat and b.running < CAP_BELOW * b.users and a.running < CAP_BELOW * a.users:
        return max(1, round(b.running))
    return None


def nelder_mead(f: Callable[[list[float]], float], x0: list[float], step: float,
                max_evals: int, tol: float = 1e-6) -> tuple[list[float], float, int]:
    """Minimise f from x0 (standard coefficients); returns (x, f(x), evaluations)."""
    n = len(x0)
    simplex = [list(x0)] + [[x + (step if i == j else 0.0) for j, x in enumerate(x0)]
                            for i in range(n)]
    values = [f(x) for x in simplex]
    evals = n + 1

    def toward(a: list[float], b: list[float], t: float) -> list[float]:
        return [ai + t * (bi - ai) for ai, bi in zip(a, b, strict=True)]

    while evals < max_evals:
        order = sorted(range(n + 1), key=values.__getitem__)
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        if values[-1] - values[0] <= tol:
            break
        centroid = [sum(p[j] for p in simplex[:-1]) / n for j in range(n)]
        worst = simplex[-1]
        reflected = toward(worst, centroid, 2.0)
        fr = f(reflected)
        evals += 1
        if fr < values[0]:
            expanded = toward(worst, centroid, 3.0)
            fe = f(expanded)
            evals += 1
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            contracted = toward(worst, centroid, 0.5)
            fc = f(contracted)
            evals += 1
            if fc < values[-1]:
                simplex[-1], values[-1] = contracted, fc
            else:
                best = simplex[0]
                simplex = [best] + [toward(best, p, 0.5) for p in simplex[1:]]
                values = [values[0]] + [f(p) for p in simplex[1:]]
                evals += n
    i = min(range(n + 1), key=values.__getitem__)
    return simplex[i], values[i], evals


def _to_unit(path: str, value: float) -> float:
    lo, hi = BOUNDS[path]
    value = min(max(value, lo), hi)
    return math.log(value / lo) / math.log(hi / lo)


def _from_unit(path: str, u: float) -> float:
    lo, hi = BOUNDS[path]
    return lo * (hi / lo) ** min(max(u, 0.0), 1.0)


def default_free(base: Profile, obs: Observations) -> list[str]:
    """Host-side parameters always; the FLOP rate and its ramp where the base profile's
    verify step is compute-bound (a CPU); drafter costs when a speculating arm was
    measured; the cost of a waiting request where requests waited for a slot (the server
    ran fewer than 90% of C: only those rungs see it); queue-scan and unexplained time
    where the base profile has some."""
    free = list(HOST_PARAMS)
    if verify_is_compute_bound(base, obs.k or base.speculative.k, obs.prompt_tokens):
        free += COMPUTE_PARAMS
    if any(r.mode != "off" for r in obs.rungs):
        free += SPEC_PARAMS
    if any(r.running is not None and r.running < CAP_BELOW * r.users for r in obs.rungs):
        free.append(WAITING_PARAM)
    data = base.model_dump()
    free += [p for p in BOUNDS if p not in free and p.startswith(("overheads.", "unexplained."))
             and get_param(data, p)]
    return free


def verify_is_compute_bound(base: Profile, k: int, context: int) -> bool:
    """Whether one request's verify step of 1 + k tokens takes longer to compute than to
    read: a GPU reads, a CPU computes."""
    step = CostModel(base, "on").cost(StepShape(
        tokens=1 + k, kv_read_tokens=context, attn_token_ctx=(1 + k) * context, num_seqs=1,
        num_decode=1, num_spec_seqs=1, k=k, drafts=k, logit_tokens=1 + k))
    return step.compute > step.memory


class _FitJob(NamedTuple):
    base: Profile
    obs: Observations
    free: Sequence[str] | None
    seed: int
    max_evals: int


_Fitted = tuple[FitResult, float]  # a fit and its error (without the pull)
JobMap = Callable[[Callable[[_FitJob], _Fitted], Sequence[_FitJob]], list[_Fitted]]


def _in_turn(fn: Callable[[_FitJob], _Fitted], jobs: Sequence[_FitJob]) -> list[_Fitted]:
    return [fn(job) for job in jobs]


def fit(base: Profile, obs: Observations, free: Sequence[str] | None = None, *,
        seed: int = 0, max_evals: int = 400, map_jobs: JobMap = _in_turn) -> FitResult:
    """Fit `free` parameters of `base` (default: `default_free`) to the observations. A
    base whose kernels take tokens in tiles is also fitted without them, and the form
    that fits the sweep better is kept: whether a second pass over the weights costs a
    whole read is the machine's (a memory-bound CPU's, not a compute-bound one's). The
    two fits are independent: `map_jobs` runs them (one after the other by default;
    `specload.host.pools.map_jobs` spreads them over processes), and the answer is the same
    either way."""
    forms = [base]
    if base.hardware.compute_tile_tokens:
        hardware = base.hardware.model_copy(update={"compute_tile_tokens": 0})
        forms.append(base.model_copy(update={"hardware": hardware}))
    fits = map_jobs(_fit_one, [_FitJob(form, obs, free, seed, max_evals) for form in forms])
    if len(fits) == 1:
        return fits[0][0]
    (result, error), (untiled, untiled_error) = fits
    keep = result if error <= untiled_error else untiled
    keep.notes.append(
        f"kernels taking tokens in tiles of {base.hardware.compute_tile_tokens}: "
        + ("kept" if keep is result else "dropped")
        + f" (fit error {error:.4f} with them, {untiled_error:.4f} without)")
    keep.evaluations = result.evaluations + untiled.evaluations
    return keep


def _read_off(base: Profile, obs: Observations, data: dict[str, Any]
              ) -> tuple[dict[str, str], list[str]]:
    """Set in `data` what the sweep shows directly (its draft length, acceptance and
    running caps); returns their origins and notes."""
    origins: dict[str, str] = {}
    notes: list[str] = []
    on = [r for r in obs.rungs if r.mode == "on"]
    k = obs.k or base.speculative.k
    if k != base.speculative.k:
        data["speculative"]["k"] = k
        origins["speculative.k"] = "measured (the run's draft length)"
    lengths = [r.accept_len for r in on if r.accept_len is not None]
    if lengths:
        target = sum(lengths) / len(lengths)
        data["speculative"]["acceptance"] = scale_acceptance(base.speculative.acceptance, k,
                                                             target)
        origins["speculative.acceptance"] = "measured (server acceptance length)"
        notes.append(f"acceptance scaled to E[accepted+1] = {target:.2f} at k={k}")
    for mode, path in (("on", "speculative.max_num_seqs"), ("off", "scheduler.max_num_seqs")):
        cap = running_cap([r for r in obs.rungs if r.mode == mode])
        if cap is not None:
            set_param(data, path, cap)
            origins[path] = "measured (server running requests)"
            notes.append(f"spec-{mode} arm caps its running set at {cap}")
    # matched in the closed loop, so after the caps that shape its batches
    by_batch = _lengths_by_batch(base, obs, data, k) if lengths else {}
    if by_batch:
        origins["speculative.acceptance_by_batch"] = "measured (server acceptance length per rung)"
        notes.append("acceptance by batch: " + ", ".join(
            f"{length:.2f} at {batch}" for batch, length in by_batch.items()))
    return origins, notes


def _batch_of(rung: Rung) -> int:
    """The batch a rung's server ran: its mean running requests, else its users."""
    return max(1, round(rung.running)) if rung.running else rung.users


def _lengths_by_batch(base: Profile, obs: Observations, data: dict[str, Any], k: int
                      ) -> dict[int, float]:
    """Set `speculative.acceptance_by_batch` in `data` so that the closed loop at each
    spec-on rung yields the acceptance length its server counted (rungs at one batch
    share it); returns the lengths by batch, none where fewer than two batches were
    measured. A rung's steps do not all decode its batch (below the running cap a
    request is at times between two), so the lengths start at the rungs' own and are
    corrected by what the closed loop yields, `MATCH_ROUNDS` times."""
    on = [r for r in obs.rungs if r.mode == "on" and r.accept_len is not None
          and 1.0 < r.accept_len < k + 1.0]
    measured: dict[int, list[float]] = {}
    for rung in on:
        measured.setdefault(_batch_of(rung), []).append(rung.accept_len or 0.0)
    if len(measured) < 2:
        return {}
    lengths = {b: sum(v) / len(v) for b, v in sorted(measured.items())}
    spec = data["speculative"]
    for _ in range(MATCH_ROUNDS):
        spec["acceptance_by_batch"] = _rates_by_batch(base, k, lengths)
        profile = Profile.model_validate(data)
        ratios: dict[int, list[float]] = {}
        for rung in on:
            point = run_closed_loop(profile, "on", k, rung.users,
                                    prompt_tokens=obs.prompt_tokens,
                                    output_tokens=obs.output_tokens)
            if point.accept_len > 1.0:
                ratios.setdefault(_batch_of(rung), []).append(
                    (rung.accept_len or 0.0) / point.accept_len)
        for b, seen in ratios.items():
            lengths[b] = min(max(lengths[b] * sum(seen) / len(seen), 1.0 + LENGTH_MARGIN),
                             k + 1.0 - LENGTH_MARGIN)
    spec["acceptance_by_batch"] = _rates_by_batch(base, k, lengths)
    return lengths


def _rates_by_batch(base: Profile, k: int, lengths: dict[int, float]
                    ) -> dict[int, list[float]]:
    """The base's rates scaled to each batch's acceptance length."""
    return {b: scale_acceptance(base.speculative.acceptance, k, length)
            for b, length in lengths.items()}


def _fit_one(job: _FitJob) -> _Fitted:
    """`fit` of one base profile, with its fit error (without the pull)."""
    base, obs, free, seed, max_evals = job
    if not obs.rungs:
        raise SimConfigError("no measured rung to fit")
    free = list(default_free(base, obs) if free is None else free)
    unknown = [p for p in free if p not in BOUNDS]
    if unknown:
        raise SimConfigError(f"cannot fit {', '.join(unknown)}; fittable: "
                             f"{', '.join(BOUNDS)}")
    data = base.model_dump()
    origins, notes = _read_off(base, obs, data)
    observed = [r.output_tok_s for r in obs.rungs]
    weights = [1 / max(r.spread or 0.0, NOISE_FLOOR) ** 2 for r in obs.rungs]
    within = [r.within for r in obs.rungs]
    ranged = [(on, off, obs.speedup_within[users]) for users, on, off in speedup_pairs(obs)
              if users in obs.speedup_within]
    observed += [observed[on] / observed[off] for on, off, _ in ranged]
    weights += [1 / NOISE_FLOOR ** 2] * len(ranged)
    within += [span for _, _, span in ranged]

    def with_speedups(predicted: list[float]) -> list[float]:
        return predicted + [predicted[on] / max(predicted[off], 1e-9) for on, off, _ in ranged]
    start = [_to_unit(p, float(get_param(data, p) or BOUNDS[p][0])) for p in free]
    lacking = [i for i, p in enumerate(free) if not get_param(data, p)]

    def profile_at(u: Sequence[float]) -> Profile:
        for p, x in zip(free, u, strict=True):
            set_param(data, p, float(f"{_from_unit(p, x):.4g}"))
        return Profile.model_validate(data)

    def loss(u: list[float], pull: float = PULL) -> float:
        try:
            predicted = predict_rungs(profile_at(u), obs, seed)
        except (ValueError, SimConfigError):
            return math.inf
        err = fit_error(with_speedups(predicted), observed, weights, within)
        return err + pull * sum((x - s) ** 2 for x, s in zip(u, start, strict=True))

    for i in lacking:
        # the base profile has none of it, so no value to pull towards, and at its lower
        # bound neither the loss nor Nelder-Mead's first steps can feel it: it starts (and
        # is pulled towards) where a coarse scan along its range does best
        scores = [loss([*start[:i], u, *start[i + 1:]], 0.0) for u in SCAN]
        start[i] = SCAN[scores.index(min(scores))]
    scanned = len(SCAN) * len(lacking)
    best, _, evals = (nelder_mead(loss, start, 0.1, max(max_evals - scanned, 1)) if free
                      else (start, 0.0, 0))
    evals += scanned
    profile = profile_at(best)
    origins.update({p: "fitted" for p in free})
    predicted = predict_rungs(profile, obs, seed)
    residuals = [Residual(r.mode, r.users, r.output_tok_s, pr)
                 for r, pr in zip(obs.rungs, predicted, strict=True)]
    speedups = [Residual(None, users, observed[on] / observed[off],
                         predicted[on] / max(predicted[off], 1e-9))
                for users, on, off in speedup_pairs(obs)]
    return (FitResult(profile, origins, residuals, evals, notes, speedups),
            fit_error(with_speedups(predicted), observed, weights, within))
